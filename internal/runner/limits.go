//go:build unix

package runner

import (
	"fmt"
	"strconv"
)

// limiter enforces Job.MemoryBytes and Job.MaxTasks while the job runs.
// Each limit is enforced by the kernel when the job's cgroup could take it
// (memory.max, pids.max), and otherwise by measuring the job's processes
// every limitInterval.
type limiter struct {
	memory int64
	tasks  int
	cg     *jobCgroup // nil without a job cgroup
	tr     *tracker
}

// newLimiter returns nil when the job has no limits.
func newLimiter(job Job, cg *jobCgroup, tr *tracker) *limiter {
	if job.MemoryBytes == 0 && job.MaxTasks == 0 {
		return nil
	}
	return &limiter{memory: job.MemoryBytes, tasks: job.MaxTasks, cg: cg, tr: tr}
}

// kernelMemory reports whether the kernel enforces the memory limit, so
// that an OOM kill in the job's cgroup is the limit at work.
func (l *limiter) kernelMemory() bool {
	return l != nil && l.memory > 0 && l.cg.memoryLimited()
}

// check returns the name of a limit the job has passed and what was
// measured, or "" while it is within its limits.
func (l *limiter) check() (name, detail string) {
	if l.tasks > 0 && l.cg.tasksLimited() {
		if n := l.cg.forksRefused(); n > 0 {
			return LimitTasks, fmt.Sprintf("it tried to run more than %d tasks (processes and threads): its cgroup's pids.max refused %s",
				l.tasks, plural(n, "fork"))
		}
	}
	watchMemory := l.memory > 0 && !l.cg.memoryLimited()
	watchTasks := l.tasks > 0 && !l.cg.tasksLimited()
	if !watchMemory && !watchTasks {
		return "", ""
	}
	l.tr.follow()
	u := l.tr.usage()
	switch {
	case watchTasks && u.tasks > l.tasks:
		return LimitTasks, fmt.Sprintf("its processes ran %d tasks (processes and threads), over the limit of %d", u.tasks, l.tasks)
	case watchMemory && u.memory > l.memory:
		return LimitMemory, fmt.Sprintf("its processes used %s of memory (anonymous and shared resident memory of %s), over the limit of %s",
			fmtBytes(u.memory), plural(int64(u.procs), "process"), fmtBytes(l.memory))
	}
	return "", ""
}

// usage is what the job's processes use at one moment.
type usage struct {
	memory int64 // bytes of RssAnon+RssShmem, summed over the processes
	tasks  int   // processes and their threads
	procs  int
}

// fmtBytes prints a size in binary units: "512 MiB", "9.1 GiB".
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	prec := 1
	if v == float64(int64(v)) || v >= 100 {
		prec = 0
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + string("KMGTPE"[exp]) + "iB"
}
