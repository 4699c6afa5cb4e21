package eval

import (
	"errors"
	"syscall"

	"github.com/frontier-bench/frontier/internal/store"
)

// CheckProgram refuses src, named name, when it is not a Python program
// at all (empty, binary, not a .py file): what Evaluate refuses first,
// for a caller to refuse before it spends seconds on Python.
func CheckProgram(src []byte, name string) error { return checkProgram(src, name) }

// unfinished is the state and reason an evaluation that could not finish
// is stored with: disk_full when the disk filled (the user's to free, not
// a failure of the program nor an interruption), else interrupted.
func unfinished(cause error) (state, reason string) {
	switch {
	case errors.Is(cause, syscall.ENOSPC), errors.Is(cause, syscall.EDQUOT), errors.Is(cause, store.ErrDiskFull):
		return store.StateDiskFull, "the disk is full: " + cause.Error()
	case cause != nil:
		return store.StateInterrupted, "interrupted: " + cause.Error()
	}
	return store.StateInterrupted, "interrupted"
}
