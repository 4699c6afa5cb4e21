package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	dir string
	fd  int // open until the child has started
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
	return &jobCgroup{dir: dir, fd: fd}, nil
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
