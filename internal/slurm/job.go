package slurm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"
)

// State is a job's state as Slurm names it (squeue's %T, sacct's State).
type State string

// The states a job passes through, and those it ends in.
const (
	Pending     State = "PENDING"
	Configuring State = "CONFIGURING"
	Running     State = "RUNNING"
	Completing  State = "COMPLETING"
	Suspended   State = "SUSPENDED"
	Requeued    State = "REQUEUED"
	Resizing    State = "RESIZING"

	Completed   State = "COMPLETED"     // the command exited 0
	Failed      State = "FAILED"        // non-zero exit, a signal, or a launch failure
	Timeout     State = "TIMEOUT"       // killed at its time limit
	OutOfMemory State = "OUT_OF_MEMORY" // killed by the memory limit of its cgroup
	Cancelled   State = "CANCELLED"     // scancel, by frontier, the user or an administrator
	NodeFail    State = "NODE_FAIL"     // its node failed (or was set DOWN) while it ran
	Preempted   State = "PREEMPTED"     // a job of higher priority took its node
	BootFail    State = "BOOT_FAIL"     // its node did not boot
	Deadline    State = "DEADLINE"      // it could not end before its --deadline
	Revoked     State = "REVOKED"       // a sibling of a federated job started elsewhere
	SpecialExit State = "SPECIAL_EXIT"  // requeued in a held state by an epilog's exit code
)

// Ended reports whether a job in state s has ended for good: it will not
// run (again) unless someone requeues it.
func (s State) Ended() bool {
	switch s {
	case Completed, Failed, Timeout, OutOfMemory, Cancelled, NodeFail, Preempted, BootFail, Deadline, Revoked, SpecialExit:
		return true
	}
	return false
}

// nodeFault reports whether a job that ended in state s ended because of
// its node or the scheduler, not its command: it may succeed elsewhere.
func (s State) nodeFault() bool { return s == Preempted || s == NodeFail || s == BootFail }

// parseState reads a state as squeue, scontrol and sacct write it:
// "CANCELLED by 1000" and "RUNNING+" come down to their first word.
func parseState(s string) State {
	s = strings.TrimSpace(s)
	s, _, _ = strings.Cut(s, " ")
	return State(strings.TrimRight(s, "+"))
}

// Info is what Slurm says about one job.
type Info struct {
	ID      string
	Name    string
	Comment string
	State   State
	// Reason is why the job waits or why it ended ("Resources",
	// "NonZeroExitCode", "TimeLimit"; "None" when there is none).
	Reason string
	// ExitCode and Signal are those of the batch script, which execs the
	// command: the exit status, or the signal that ended it (0 for none).
	ExitCode int
	Signal   int
	// Node is the node the job ran on ("" before it started).
	Node      string
	Partition string
	TimeLimit string // as Slurm writes it: "UNLIMITED", "1:00", "2-00:00:00"

	Submit, Start, End time.Time
	// Source says which command told: "squeue", or "sacct" once slurmctld
	// has forgotten the job.
	Source string
}

// squeueFields are the fields Info reads from squeue (-O), each ended by
// '|'; Comment comes last, so that a '|' in it does no harm.
const squeueFields = "JobID:0|,Name:0|,State:0|,Reason:0|,exit_code:0|,BatchHost:0|,NodeList:0|,Partition:0|,TimeLimit:0|,SubmitTime:0|,StartTime:0|,EndTime:0|,Comment:0"

// parseSqueue reads the lines squeue writes for squeueFields.
func parseSqueue(out []byte) ([]Info, error) {
	var infos []Info
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 13)
		if len(f) != 13 {
			return nil, fmt.Errorf("squeue wrote %q: want 13 fields separated by '|'", line)
		}
		in := Info{ID: f[0], Name: f[1], State: parseState(f[2]), Reason: f[3], Partition: f[7],
			TimeLimit: f[8], Comment: f[12], Source: "squeue"}
		if in.Comment == "(null)" {
			in.Comment = ""
		}
		// squeue's exit code is the wait status: exit code << 8 | signal.
		if st, err := strconv.Atoi(f[4]); err == nil {
			in.ExitCode, in.Signal = st>>8&0xff, st&0x7f
		}
		in.Node = f[5]
		if in.Node == "" || in.Node == "(null)" || in.Node == "n/a" {
			in.Node = f[6]
		}
		if in.Node == "(null)" || in.Node == "n/a" {
			in.Node = ""
		}
		in.Submit, in.Start, in.End = slurmTime(f[9]), slurmTime(f[10]), slurmTime(f[11])
		if in.State == Pending || in.State == Configuring {
			// A pending job's start is the scheduler's estimate, not a start.
			in.Start, in.End = time.Time{}, time.Time{}
		}
		infos = append(infos, in)
	}
	return infos, nil
}

// sacctFields are the fields Info reads from sacct (-o, with -P); Comment
// comes last, so that a '|' in it does no harm. (sacct has a job's comment
// where the cluster keeps them: AccountingStoreFlags=job_comment.)
const sacctFields = "JobIDRaw,JobName,State,ExitCode,NodeList,Partition,Timelimit,Submit,Start,End,Comment"

// parseSacct reads the lines sacct -P -n -X writes for sacctFields. (For a
// second or so after a job's end, the accounting database may hold it as
// "allocation", without partition or time limit, until slurmctld's record
// of its start arrives; Info asks sacct only after slurmctld has forgotten
// the job, long after.)
func parseSacct(out []byte) ([]Info, error) {
	var infos []Info
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 11)
		if len(f) != 11 {
			return nil, fmt.Errorf("sacct wrote %q: want 11 fields separated by '|'", line)
		}
		in := Info{ID: f[0], Name: f[1], State: parseState(f[2]), Node: f[4], Partition: f[5],
			TimeLimit: f[6], Submit: slurmTime(f[7]), Start: slurmTime(f[8]), End: slurmTime(f[9]),
			Comment: f[10], Source: "sacct"}
		if e, s, ok := strings.Cut(f[3], ":"); ok {
			in.ExitCode, _ = strconv.Atoi(e)
			in.Signal, _ = strconv.Atoi(s)
		}
		if in.Node == "None assigned" || in.Node == "(null)" {
			in.Node = ""
		}
		infos = append(infos, in)
	}
	return infos, nil
}

// slurmTime reads a time as Slurm writes it (local time, to the second);
// "Unknown", "N/A" and "None" are the zero time.
func slurmTime(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(s), time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

// ErrUnknownJob is the error of Info for a job that neither slurmctld nor
// the accounting database knows: a wrong ID, or a finished job slurmctld
// has forgotten (MinJobAge) on a cluster without accounting.
var ErrUnknownJob = errors.New("no such job in Slurm")

// Info returns what Slurm says of the job: squeue while slurmctld knows
// it, else sacct. A job that neither knows is ErrUnknownJob.
func (c *Client) Info(ctx context.Context, id string) (Info, error) {
	out, err := c.command(ctx, nil, "squeue", "--noheader", "--states=all", "--jobs="+id, "--Format="+squeueFields)
	if err == nil {
		infos, err := parseSqueue(out)
		if err != nil {
			return Info{}, err
		}
		for _, in := range infos {
			if in.ID == id {
				return in, nil
			}
		}
	} else if !invalidJob(err) {
		return Info{}, err
	}
	infos, err := c.sacct(ctx, "--jobs="+id)
	if err != nil {
		return Info{}, fmt.Errorf("job %s: slurmctld no longer knows it (it forgets a job MinJobAge after its end) and %w", id, err)
	}
	for _, in := range infos {
		if in.ID == id {
			return in, nil
		}
	}
	return Info{}, fmt.Errorf("job %s: %w", id, ErrUnknownJob)
}

// invalidJob reports whether a squeue of one job failed because slurmctld
// does not know the job.
func invalidJob(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && strings.Contains(ce.Stderr, "Invalid job id")
}

// sacct asks the accounting database about the user's jobs matching args.
func (c *Client) sacct(ctx context.Context, args ...string) ([]Info, error) {
	out, err := c.command(ctx, nil, "sacct", append([]string{"--noheader", "--parsable2", "--allocations",
		"--format=" + sacctFields}, args...)...)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && strings.Contains(ce.Stderr, "accounting storage is disabled") {
			return nil, fmt.Errorf("the cluster keeps no accounting (sacct: accounting storage is disabled): %w", ErrUnknownJob)
		}
		return nil, err
	}
	return parseSacct(out)
}

// Find returns the jobs of the current user whose name is name.1 or name.2
// (the attempts Run submits for a spec of that name), in the order of
// their attempts, first to last. It asks squeue, and sacct for
// the jobs of the last since that slurmctld has forgotten; since 0 asks
// squeue only.
func (c *Client) Find(ctx context.Context, name string, since time.Duration) ([]Info, error) {
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("find jobs %s.*: who am I: %w", name, err)
	}
	// Run submits two attempts at most.
	names := attemptName(name, 1) + "," + attemptName(name, 2)
	out, err := c.command(ctx, nil, "squeue", "--noheader", "--states=all", "--user="+u.Username, "--name="+names, "--Format="+squeueFields)
	if err != nil {
		return nil, fmt.Errorf("find jobs %s.*: %w", name, err)
	}
	all, err := parseSqueue(out)
	if err != nil {
		return nil, fmt.Errorf("find jobs %s.*: %w", name, err)
	}
	byAttempt := map[int]Info{}
	for _, in := range all {
		if n := attemptOf(name, in.Name); n > 0 {
			// Two jobs of one attempt: a submission whose answer was
			// lost, then made again. The later one is followed.
			if prev, ok := byAttempt[n]; !ok || jobNumber(in.ID) > jobNumber(prev.ID) {
				byAttempt[n] = in
			}
		}
	}
	if since > 0 {
		start := time.Now().Add(-since).Format("2006-01-02T15:04:05")
		old, err := c.sacct(ctx, "--user="+u.Username, "--name="+names, "--starttime="+start)
		if err != nil && !errors.Is(err, ErrUnknownJob) {
			return nil, fmt.Errorf("find jobs %s.*: %w", name, err)
		}
		for _, in := range old {
			n := attemptOf(name, in.Name)
			if _, known := byAttempt[n]; n > 0 && !known {
				byAttempt[n] = in
			}
		}
	}
	var jobs []Info
	for _, n := range slices.Sorted(maps.Keys(byAttempt)) {
		jobs = append(jobs, byAttempt[n])
	}
	return jobs, nil
}

// List returns the jobs of the current user whose name starts with
// prefix that slurmctld still knows (running, pending, or ended within
// MinJobAge).
func (c *Client) List(ctx context.Context, prefix string) ([]Info, error) {
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("list jobs %s*: who am I: %w", prefix, err)
	}
	out, err := c.command(ctx, nil, "squeue", "--noheader", "--states=all", "--user="+u.Username, "--Format="+squeueFields)
	if err != nil {
		return nil, fmt.Errorf("list jobs %s*: %w", prefix, err)
	}
	all, err := parseSqueue(out)
	if err != nil {
		return nil, fmt.Errorf("list jobs %s*: %w", prefix, err)
	}
	return slices.DeleteFunc(all, func(in Info) bool { return !strings.HasPrefix(in.Name, prefix) }), nil
}

// jobNumber is the number of a job ID, for ordering; 0 when it is not one.
func jobNumber(id string) int64 {
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}
