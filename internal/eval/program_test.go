package eval

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
)

// An evaluation that could not finish because the disk filled is stored
// as disk_full, with why; anything else that stopped it, as interrupted.
func TestUnfinished(t *testing.T) {
	cases := []struct {
		cause        error
		state, start string
	}{
		{fmt.Errorf("write program: %w", &os.PathError{Op: "write", Path: "/runs/x/train.py", Err: syscall.ENOSPC}), store.StateDiskFull,
			"the disk is full: write program: write /runs/x/train.py: no space left on device"},
		{fmt.Errorf("record: %w", store.ErrDiskFull), store.StateDiskFull, "the disk is full: record: the disk is full"},
		{&os.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}, store.StateDiskFull, "the disk is full: "},
		{fmt.Errorf("evaluation canceled: %w", context.Canceled), store.StateInterrupted, "interrupted: evaluation canceled"},
		{nil, store.StateInterrupted, "interrupted"},
	}
	for _, c := range cases {
		state, reason := unfinished(c.cause)
		if state != c.state || len(reason) < len(c.start) || reason[:len(c.start)] != c.start {
			t.Errorf("%v: %s, %q; want %s, %q...", c.cause, state, reason, c.state, c.start)
		}
	}
}
