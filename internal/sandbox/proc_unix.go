//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// newGroupAttr starts a process in a group of its own, so that killGroup
// reaches whatever it leaves behind.
func newGroupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// hardLinks returns the link count of a file, 1 when unknown.
func hardLinks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
