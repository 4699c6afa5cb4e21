package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// jobCgroup is a cgroup v2 created for one job. The child is born in it
// (clone3 with CLONE_INTO_CGROUP, so not even its first instructions run
// outside), every process it forks stays in it whatever it does with
// sessions and process groups, and cgroup.kill ends them all at once. A
// nil *jobCgroup is no cgroup: its methods do nothing.
type jobCgroup struct {
	parent string
	dir    string
	fd     int // open until the child has started

	// Limits written to memory.max and pids.max, which the kernel
	// enforces.
	memLimit, tasksLimit bool
}

// newJobCgroup creates a fresh cgroup under parent, which must be a cgroup
// v2 directory this process may create children in (root, or a subtree
// delegated to its user, for example by systemd with Delegate=yes).
func newJobCgroup(parent string) (*jobCgroup, error) {
	if parent == "" {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
		return nil, fmt.Errorf("job cgroup: %s is not a cgroup v2 directory: %w", parent, err)
	}
	dir, err := os.MkdirTemp(parent, "job-")
	if err != nil {
		return nil, fmt.Errorf("job cgroup: create under %s (it must be delegated to this user): %w", parent, err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("job cgroup: open %s: %w", dir, err)
	}
	return &jobCgroup{parent: parent, dir: dir, fd: fd}, nil
}

// attach makes the child start inside the cgroup.
func (c *jobCgroup) attach(attr *syscall.SysProcAttr) {
	if c == nil {
		return
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = c.fd
}

// started releases what was only needed to start the child.
func (c *jobCgroup) started() {
	if c != nil && c.fd >= 0 {
		syscall.Close(c.fd)
		c.fd = -1
	}
}

// pids lists the processes in the cgroup.
func (c *jobCgroup) pids() []int {
	if c == nil {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cpuUsage is the CPU time the cgroup's processes took, from cpu.stat's
// usage_usec (present without the cpu controller since Linux 4.15).
func (c *jobCgroup) cpuUsage() (time.Duration, bool) {
	if c == nil {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "cpu.stat"))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, false
			}
			return time.Duration(n) * time.Microsecond, true
		}
	}
	return 0, false
}

// kill SIGKILLs every process in the cgroup: through cgroup.kill (Linux
// 5.14 and later), which also stops processes forking while it runs, or
// else one by one.
func (c *jobCgroup) kill() {
	if c == nil {
		return
	}
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0); err == nil {
		return
	}
	for _, pid := range c.pids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// remove kills what is left, waits for the cgroup to empty and deletes it.
func (c *jobCgroup) remove() error {
	if c == nil {
		return nil
	}
	c.started()
	deadline := time.Now().Add(2 * time.Second)
	for {
		c.kill()
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove job cgroup %s: %w", c.dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// setLimits writes the job's limits into its cgroup before the child
// starts: memory.max (with swap.max at 0, so that the limit is not turned
// into swapping, and oom.group, so that an OOM kill takes the whole job
// rather than one of its processes) and pids.max. The controllers are
// enabled in the parent first when they are not yet; that needs a parent
// without processes of its own, as a delegated subtree is. It returns one
// error per limit it could not set, which the runner then measures itself.
func (c *jobCgroup) setLimits(memory int64, tasks int) []error {
	if c == nil {
		return nil
	}
	var errs []error
	if memory > 0 {
		if err := c.enable("memory"); err != nil {
			errs = append(errs, err)
		} else if err := writeCgroupFile(c.dir, "memory.max", strconv.FormatInt(memory, 10)); err != nil {
			errs = append(errs, err)
		} else {
			c.memLimit = true
			// Best effort: swap accounting may be off, and oom.group
			// needs Linux 4.19.
			_ = writeCgroupFile(c.dir, "memory.swap.max", "0")
			_ = writeCgroupFile(c.dir, "memory.oom.group", "1")
		}
	}
	if tasks > 0 {
		if err := c.enable("pids"); err != nil {
			errs = append(errs, err)
		} else if err := writeCgroupFile(c.dir, "pids.max", strconv.Itoa(tasks)); err != nil {
			errs = append(errs, err)
		} else {
			c.tasksLimit = true
		}
	}
	return errs
}

// enable turns a controller on for the children of the parent cgroup.
func (c *jobCgroup) enable(controller string) error {
	b, err := os.ReadFile(filepath.Join(c.parent, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("job cgroup: %w", err)
	}
	if slices.Contains(strings.Fields(string(b)), controller) {
		return nil
	}
	if err := writeCgroupFile(c.parent, "cgroup.subtree_control", "+"+controller); err != nil {
		return fmt.Errorf("job cgroup: enable the %s controller (it must be listed in %s, and the parent must hold no processes itself): %w",
			controller, filepath.Join(c.parent, "cgroup.controllers"), err)
	}
	return nil
}

func (c *jobCgroup) memoryLimited() bool { return c != nil && c.memLimit }
func (c *jobCgroup) tasksLimited() bool  { return c != nil && c.tasksLimit }

// forksRefused returns how many forks pids.max refused so far.
func (c *jobCgroup) forksRefused() int64 {
	if c == nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.events"))
	if err != nil {
		return 0
	}
	return eventCount(b, "max")
}

// eventCount reads one "key value" line of a cgroup events file.
func eventCount(b []byte, key string) int64 {
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+" "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// writeCgroupFile writes an existing interface file; cgroupfs does not
// let files be created, so a missing controller shows as ENOENT.
func writeCgroupFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("job cgroup: %w", err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("job cgroup: write %q to %s: %w", value, filepath.Join(dir, name), err)
	}
	return nil
}
