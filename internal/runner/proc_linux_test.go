package runner

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	line := "4242 (weird) name (x)) S 4000 4100 4200 0 -1 4194560 100 0 0 0 1 2 3 4 20 0 1 0 987654 1000 10 18446744073709551615\n"
	p, err := parseProcStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if p != (procStat{pid: 4242, ppid: 4000, pgrp: 4100, sid: 4200, start: 987654, state: 'S', cpu: 30 * time.Millisecond, reaped: 70 * time.Millisecond}) {
		t.Errorf("got %+v", p)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1 2"} {
		if _, err := parseProcStat(12, []byte(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
	self, err := readProcStat(os.Getpid())
	if err != nil || self.ppid != os.Getppid() || self.start == 0 {
		t.Errorf("own stat: %+v, %v", self, err)
	}
}

func TestOOMCounterFiles(t *testing.T) {
	cgroup := "12:memory:/jobs/a\n5:cpu,cpuacct:/jobs/a\n0::/user.slice/run-1.scope\n"
	mountinfo := `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
35 30 0:32 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct
40 30 0:37 /user.slice /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	got := oomCounterFiles(cgroup, mountinfo)
	want := []string{"/sys/fs/cgroup/unified/run-1.scope/memory.events", "/sys/fs/cgroup/memory/jobs/a/memory.oom_control"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := oomCounterFiles("0::/\n", "1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"); !slices.Equal(got, []string{"/sys/fs/cgroup/memory.events"}) {
		t.Errorf("pure v2: %q", got)
	}
	// On this machine: log what is readable, for the record.
	c := newOOMCounter(os.Getpid())
	_, ok := c.delta()
	t.Logf("OOM counter of this process: %q (readable: %v)", c.path, ok)
}

// BenchmarkTrackerScan measures one /proc scan, the periodic cost of
// following a job's descendants (one a second in a long run).
func BenchmarkTrackerScan(b *testing.B) {
	tr := newTracker(os.Getpid(), nil)
	for b.Loop() {
		tr.scan()
	}
	b.ReportMetric(float64(len(listProcs())), "procs")
}
