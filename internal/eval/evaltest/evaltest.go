// Package evaltest gives the tests of the packages above eval their
// evaluators: a real one (New), the harness, a runner and each track's
// data on the local disk put together as the CLI puts them together
// (cmd/frontier/app.go), with the interpreter found once per test binary;
// and a scripted one (Scripted) that runs nothing and gives each program
// the outcome the test wrote for it, recording it as the real one does.
// The evaluator's own tests cannot use it (it imports eval) and keep
// their constructor.
package evaltest

import (
	"context"
	"sync"
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/sandbox"
	"github.com/frontier-bench/frontier/internal/testdeps"
	"github.com/frontier-bench/frontier/internal/verify"
)

var python struct {
	once sync.Once
	info *pyenv.Info
	err  error
}

// Python returns the interpreter with PyTorch that programs run under,
// found once per test binary. On a machine without one the test ends
// through testdeps.Missing.
func Python(t testing.TB) *pyenv.Info {
	t.Helper()
	python.once.Do(func() { python.info, python.err = pyenv.Find(context.Background(), "") })
	if python.err != nil {
		testdeps.Missing(t, "torch", "no Python with PyTorch: %v", python.err)
	}
	return python.info
}

// Options are what a test's evaluator differs in.
type Options struct {
	// Python runs the programs; nil is Python(t).
	Python *pyenv.Info
	// Store records the evaluations; nil records nothing.
	Store eval.Store
	// Data is each track's data folder, by track name.
	Data map[string]string
	// Sandbox, when set, confines the programs, as the CLI's sandbox
	// setting does; nil runs them with the plain local runner.
	Sandbox *sandbox.Runner
	// Hidden are paths no program may read.
	Hidden []string
	// Checks runs the checks the CLI registers (verify.Checks) on every
	// program before it starts.
	Checks bool
}

// New returns a real evaluator with o, its run folders in a temporary
// folder of the test.
func New(t testing.TB, o Options) *eval.Evaluator {
	t.Helper()
	py := o.Python
	if py == nil {
		py = Python(t)
	}
	local := &eval.Local{Runner: runner.NewLocal(nil), Python: py.Path, Hidden: o.Hidden, Env: py.ProgramEnv(), BLAS: py.BLASName()}
	if o.Sandbox != nil {
		local.Runner, local.Sandbox, local.Visible = o.Sandbox, string(o.Sandbox.Mode()), py.Paths
	}
	ev := &eval.Evaluator{
		Executor: eval.NewNode(local),
		Store:    o.Store,
		Python:   py.Path,
		Torch:    py.Torch,
		Sandbox:  local.Sandbox,
		RunsDir:  t.TempDir(),
		Data:     &eval.LocalData{Dirs: o.Data},
	}
	if o.Checks {
		ev.Checks = verify.Checks()
	}
	return ev
}
