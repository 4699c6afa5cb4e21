//go:build unix

package data

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, user and system: on a
// shared machine it measures the work itself where wall time measures the
// neighbours too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
