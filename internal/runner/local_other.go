//go:build !unix

package runner

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Local runs jobs as child processes. It needs process groups and POSIX
// signals, so on this system Run always fails.
type Local struct {
	Log          *slog.Logger
	ScanInterval time.Duration
}

// NewLocal returns a Local runner.
func NewLocal(log *slog.Logger) *Local { return &Local{Log: log} }

// Run reports that the local runner is not supported here.
func (l *Local) Run(ctx context.Context, job Job) (Result, error) {
	return Result{}, errors.New("run job: the local runner needs a Unix system (Linux or macOS)")
}
