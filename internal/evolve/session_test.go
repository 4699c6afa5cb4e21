package evolve

import (
	"fmt"
	"log/slog"
	"syscall"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
)

// A run stopped by a full disk says so (the user frees space and resumes);
// other failures are errors.
func TestSessionDiskFull(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("write child: %w", syscall.ENOSPC), StopDiskFull},
		{fmt.Errorf("store: %w", store.ErrDiskFull), StopDiskFull},
		{fmt.Errorf("quota: %w", syscall.EDQUOT), StopDiskFull},
		{fmt.Errorf("store: %w", syscall.EIO), StopError},
	} {
		s := &session{log: slog.New(slog.DiscardHandler)}
		s.fail(c.err)
		if s.reason != c.want || s.detail != c.err.Error() {
			t.Errorf("%v: stopped as %q (%q), want %q", c.err, s.reason, s.detail, c.want)
		}
	}
}
