//go:build unix

package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
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

	// disk bounds the blocks used under dir, measured every
	// diskInterval (a walk of the folder).
	disk     int64
	dirs     []string
	full     []string // paths inside the job's mount namespace (Job.DiskFull)
	diskNext time.Time
}

// diskInterval is how often the job's folder is measured against
// Job.DiskBytes: a walk costs a stat per file, so less often than memory.
const diskInterval = time.Second

// maxDiskEntries bounds a walk of the job's folder; a job that makes more
// files than that is stopped too (each costs an inode and the walk).
const maxDiskEntries = 200_000

// newLimiter returns nil when the job has no limits.
func newLimiter(job Job, cg *jobCgroup, tr *tracker) *limiter {
	if job.MemoryBytes == 0 && job.MaxTasks == 0 && job.DiskBytes == 0 {
		return nil
	}
	dirs := []string{job.Dir}
	if job.Scratch != "" {
		dirs = append(dirs, job.Scratch)
	}
	return &limiter{memory: job.MemoryBytes, tasks: job.MaxTasks, cg: cg, tr: tr, disk: job.DiskBytes, dirs: dirs, full: job.DiskFull}
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
	if l.disk > 0 && len(l.full) > 0 && time.Now().After(l.diskNext) {
		l.diskNext = time.Now().Add(diskInterval)
		l.tr.follow()
		if path, ok := fullInside(l.tr.alive(), l.full); ok {
			return LimitDisk, fmt.Sprintf("%s, a file system of %s of its own, is full", path, fmtBytes(l.disk))
		}
	}
	if l.disk > 0 && len(l.full) == 0 && time.Now().After(l.diskNext) {
		l.diskNext = time.Now().Add(diskInterval)
		var used int64
		var files int
		var err error
		for _, d := range l.dirs {
			u, f, e := diskUsage(d)
			used, files = used+u, files+f
			if e != nil {
				err = e
			}
		}
		switch {
		case errors.Is(err, errTooManyFiles):
			return LimitDisk, fmt.Sprintf("it made more than %d files in its folder", maxDiskEntries)
		case used > l.disk:
			return LimitDisk, fmt.Sprintf("its folders hold %s in %d files, over the limit of %s", fmtBytes(used), files, fmtBytes(l.disk))
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

// final measures the job's folders once more after it ended (the folders
// the runner can measure: a sandbox's own file system is gone by then and
// looked at by the sandbox).
func (l *limiter) final() (name, detail string) {
	if l == nil || l.disk <= 0 || len(l.full) > 0 {
		return "", ""
	}
	l.diskNext = time.Time{}
	name, detail = l.check()
	if name != LimitDisk {
		return "", ""
	}
	return name, detail
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

var errTooManyFiles = errors.New("too many files")

// diskUsage is the space the files under dir take (allocated blocks, so a
// sparse or preallocated file counts for what it holds on disk), without
// following links.
func diskUsage(dir string) (used int64, files int, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or unreadable: a job's own business
		}
		files++
		if files > maxDiskEntries {
			return errTooManyFiles
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			used += st.Blocks * 512
		} else {
			used += info.Size()
		}
		return nil
	})
	return used, files, err
}
