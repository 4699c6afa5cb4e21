package store

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// bootID is the kernel's id of this boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// processStart is the start time of process pid, in clock ticks since
// boot (field 22 of /proc/PID/stat), or "".
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (the state); field 22 is fields[19].
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// processAlive says whether a process pid exists (a zombie counts: it has
// not been reaped, so its pid is not reused yet).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
