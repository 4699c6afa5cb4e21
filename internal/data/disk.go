package data

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrDiskFull is wrapped by errors caused by a full disk.
var ErrDiskFull = errors.New("disk full")

// diskErr turns "no space left on device" into an error that wraps
// ErrDiskFull and says what to do; other errors pass through.
func diskErr(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w (%v): free some space or choose a folder on another disk", ErrDiskFull, err)
	}
	return err
}
