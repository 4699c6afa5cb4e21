package runner

import (
	"errors"
	"sync"
	"time"
)

// A CPUMeter reads, while a job runs, the CPU time its processes have
// taken so far. A judge that times a window of the run (a track whose
// clock is CPU time) reads it at the window's edges; the difference is
// the work done in between, whatever the machine's load made the wall
// time.
//
// With a job cgroup the reading is the cgroup's usage, exact. Without
// one it is the sum, over every process now in the job's tree (the main
// process and its descendants, zombies included), of its own user and
// system time and of the children it reaped: a process that ended was
// reaped by a process of the tree (the sandbox's helper is a child
// subreaper, bubblewrap's init reaps its namespace), so its time is in
// its reaper's. A process that exits while the tree is read may be
// counted twice or not at all; [CPUMeter.Upper] errs only one way and
// [CPUMeter.Lower] only the other, so that a window read from Lower at
// its start and Upper at its end is never shorter than the work in it.
//
// The zero value is ready to use; Job.CPU hands it to the runner, which
// makes it read that job until the job ends.
type CPUMeter struct {
	mu     sync.Mutex
	read   func(upper bool) (time.Duration, bool)
	source string
}

// ErrNotRunning is the reading of a meter whose job has not started or
// has ended.
var ErrNotRunning = errors.New("the job is not running")

// Upper reads the job's CPU time so far; a process that exits during the
// reading may be counted twice, never missed.
func (m *CPUMeter) Upper() (time.Duration, error) { return m.get(true) }

// Lower reads the job's CPU time so far; a process that exits during the
// reading may be missed, never counted twice.
func (m *CPUMeter) Lower() (time.Duration, error) { return m.get(false) }

// Source says what the meter reads: "cgroup" (the job cgroup's
// cpu.stat) or "procs" (the job's process tree in /proc); "" before the
// job started.
func (m *CPUMeter) Source() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.source
}

func (m *CPUMeter) get(upper bool) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read == nil {
		return 0, ErrNotRunning
	}
	d, ok := m.read(upper)
	if !ok {
		return 0, errors.New("the job's CPU time could not be read")
	}
	return d, nil
}

// attach makes the meter read a job that just started: through its
// cgroup when it has one, else through the tree of processes under pid.
func (m *CPUMeter) attach(cg *jobCgroup, pid int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cg != nil {
		m.source = "cgroup"
		m.read = func(bool) (time.Duration, bool) { return cg.cpuUsage() }
		return
	}
	root, err := readProcStat(pid)
	if err != nil {
		return // the job is already gone: there is nothing to read
	}
	m.source = "procs"
	m.read = func(upper bool) (time.Duration, bool) { return treeCPU(root, upper) }
}

// detach ends the readings: the job ended.
func (m *CPUMeter) detach() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read = nil
}
