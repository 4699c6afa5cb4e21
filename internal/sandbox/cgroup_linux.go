package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// detectCgroup reads this process's cgroup v2 directory and whether child
// cgroups with the memory and pids controllers can be made there.
func detectCgroup() CgroupInfo {
	var c CgroupInfo
	var fs unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &fs); err != nil || fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return c
	}
	c.V2 = true
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return c
	}
	for line := range strings.Lines(string(b)) {
		if rel, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			c.Dir = filepath.Join("/sys/fs/cgroup", rel)
		}
	}
	if c.Dir == "" {
		return c
	}
	c.Writable = unix.Access(c.Dir, unix.W_OK) == nil
	if b, err := os.ReadFile(filepath.Join(c.Dir, "cgroup.controllers")); err == nil {
		c.Controllers = strings.Fields(string(b))
	}
	return c
}
