//go:build unix

package runner_test

import (
	"context"
	"testing"

	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/runner/runnertest"
)

func TestLocalContract(t *testing.T) {
	runnertest.Run(t, runner.NewLocal(nil))
}

// TestWrapperContract checks that a wrapper built with runner.Func, which
// rewrites Argv the way a sandbox would, keeps the contract.
func TestWrapperContract(t *testing.T) {
	inner := runner.NewLocal(nil)
	runnertest.Run(t, runner.Func(func(ctx context.Context, j runner.Job) (runner.Result, error) {
		path, err := runner.LookPath(j)
		if err != nil {
			return runner.Result{Status: runner.StatusNoStart, ExitCode: -1, Message: "could not start: " + err.Error() + "."}, nil
		}
		j.Argv = append([]string{"env", "--", path}, j.Argv[1:]...)
		return inner.Run(ctx, j)
	}))
}
