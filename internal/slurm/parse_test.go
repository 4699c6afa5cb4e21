package slurm

import (
	"strings"
	"testing"
	"time"
)

// Lines as squeue and sacct of Slurm 22.05 wrote them for squeueFields and
// sacctFields: a job that exited 3 (with a '|' in its comment), a held job
// without a comment, a job killed by signal 9.
const (
	squeueOut = "50|p.1|FAILED|NonZeroExitCode|768|vm|vm|frontier|UNLIMITED|2026-12-06T07:03:12|2026-12-06T07:03:13|2026-12-06T07:03:14|run=1 | eval=2\n" +
		"51|p.2|PENDING|JobHeldUser|0|n/a||frontier|UNLIMITED|2026-12-06T07:03:12|N/A|N/A|(null)\n" +
		"52|p.3|FAILED|JobLaunchFailure|9|vm|vm|frontier|5:00|2026-12-06T07:03:12|2026-12-06T07:03:13|2026-12-06T07:03:14|x\n"
	sacctOut = "50|p.1|FAILED|3:0|vm|frontier|UNLIMITED|2026-12-06T07:03:12|2026-12-06T07:03:13|2026-12-06T07:03:14|run=1 | eval=2\n" +
		"51|p.2|CANCELLED by 0|0:0|None assigned|frontier|Partition_Limit|2026-12-06T07:03:12|2026-12-06T07:03:15|2026-12-06T07:03:15|\n"
)

func TestParseSqueue(t *testing.T) {
	infos, err := parseSqueue([]byte(squeueOut))
	if err != nil || len(infos) != 3 {
		t.Fatalf("%d jobs, %v", len(infos), err)
	}
	failed, held, killed := infos[0], infos[1], infos[2]
	if failed.ID != "50" || failed.Name != "p.1" || failed.State != Failed || failed.ExitCode != 3 || failed.Signal != 0 ||
		failed.Node != "vm" || failed.Comment != "run=1 | eval=2" || failed.Reason != "NonZeroExitCode" {
		t.Errorf("failed job %+v", failed)
	}
	if want := time.Date(2026, 12, 6, 7, 3, 13, 0, time.Local); !failed.Start.Equal(want) || failed.End.Sub(failed.Start) != time.Second {
		t.Errorf("failed job's times %v, %v", failed.Start, failed.End)
	}
	if held.State != Pending || held.Node != "" || held.Comment != "" || !held.Start.IsZero() || held.Reason != "JobHeldUser" {
		t.Errorf("held job %+v", held)
	}
	if killed.Signal != 9 || killed.ExitCode != 0 || killed.TimeLimit != "5:00" {
		t.Errorf("killed job %+v", killed)
	}
	if _, err := parseSqueue([]byte("50|p.1|FAILED\n")); err == nil {
		t.Error("a short line parsed")
	}
}

func TestParseSacct(t *testing.T) {
	infos, err := parseSacct([]byte(sacctOut))
	if err != nil || len(infos) != 2 {
		t.Fatalf("%d jobs, %v", len(infos), err)
	}
	if in := infos[0]; in.State != Failed || in.ExitCode != 3 || in.Node != "vm" || in.Comment != "run=1 | eval=2" || in.Source != "sacct" {
		t.Errorf("failed job %+v", in)
	}
	if in := infos[1]; in.State != Cancelled || in.Node != "" {
		t.Errorf("cancelled job %+v", in)
	}
}

// The end states a one-node cluster cannot produce still read well.
func TestDescribe(t *testing.T) {
	base := Info{ID: "7", Name: "e.1", Node: "gpu3", TimeLimit: "45:00",
		Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 1, 0, 2, 5, 0, time.UTC)}
	cases := []struct {
		state State
		edit  func(*Result)
		want  string
	}{
		{BootFail, nil, "job 7 did not start: its node gpu3 failed to boot (Slurm BOOT_FAIL)"},
		{OutOfMemory, nil, "job 7 was killed on node gpu3 after 2m5s for using more memory than it asked for (its cgroup's limit) (Slurm OUT_OF_MEMORY)"},
		{Revoked, nil, "revoked"},
		{SpecialExit, nil, "requeued and held by the cluster"},
		{Cancelled, nil, "job 7 was cancelled on node gpu3 after 2m5s by scancel of a user or an administrator"},
		{Failed, func(r *Result) { r.Signal = 15 }, "killed by signal 15 (SIGTERM)"},
		{Running, func(r *Result) { r.Cancelled = true }, "frontier cancelled job 7; Slurm has not confirmed its end yet"},
		{Completed, func(r *Result) {
			r.Attempts = append([]Info{{ID: "6", State: NodeFail, Node: "gpu1"}}, r.Attempts...)
		}, "job 7 completed on node gpu3 after 2m5s (Slurm COMPLETED); it is the second attempt: job 6 before it ended NODE_FAIL on node gpu1"},
	}
	for _, c := range cases {
		in := base
		in.State = c.state
		r := Result{Info: in, Attempts: []Info{in}}
		if c.edit != nil {
			c.edit(&r)
		}
		if got := describe(r); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.state, got, c.want)
		}
	}
}
