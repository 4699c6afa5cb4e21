//go:build unix && !linux

package runner

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"
)

// Without /proc and Pdeathsig, only the process group is tracked: the job
// is stopped by signalling its group, and processes that leave the group
// are not found.

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func maxRSSKB(state *os.ProcessState) int64 {
	ru, ok := state.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) / 1024 // bytes there
	}
	return int64(ru.Maxrss)
}

type tracker struct{}

func newTracker(int, *jobCgroup) *tracker          { return &tracker{} }
func (*tracker) scan()                             {}
func (*tracker) sampleCPU()                        {}
func (*tracker) cpuTotal() time.Duration           { return 0 }
func (*tracker) follow()                           {}
func (*tracker) usage() usage                      { return usage{} }
func (*tracker) alive() []int                      { return nil }
func (*tracker) signal(syscall.Signal)             {}
func (*tracker) adoptPipeHolders([]*os.File) []int { return nil }

type oomCounter struct{}

func newOOMCounter(int) oomCounter      { return oomCounter{} }
func (oomCounter) delta() (int64, bool) { return 0, false }

type jobCgroup struct{}

func newJobCgroup(parent string) (*jobCgroup, error) {
	if parent != "" {
		return nil, errors.New("job cgroup: Local.CgroupParent needs Linux (cgroup v2)")
	}
	return nil, nil
}

func (*jobCgroup) attach(*syscall.SysProcAttr)     {}
func (*jobCgroup) started()                        {}
func (*jobCgroup) remove() error                   { return nil }
func (*jobCgroup) setLimits(int64, int) []error    { return nil }
func (*jobCgroup) memoryLimited() bool             { return false }
func (*jobCgroup) tasksLimited() bool              { return false }
func (*jobCgroup) forksRefused() int64             { return 0 }
func (*jobCgroup) cpuUsage() (time.Duration, bool) { return 0, false }

// limitsSupported: without /proc, the job's usage cannot be measured.
func limitsSupported() error {
	return errors.New("Job.MemoryBytes and Job.MaxTasks need Linux")
}

// fullInside needs /proc: without it, no file system of a job's own is
// seen full.
func fullInside([]int, []string) (string, bool) { return "", false }

func treeCPU(procStat, bool) (time.Duration, bool) { return 0, false }

type procStat struct{}

func readProcStat(int) (procStat, error) { return procStat{}, errors.New("no /proc here") }
