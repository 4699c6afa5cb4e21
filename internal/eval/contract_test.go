package eval_test

import (
	"context"
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/eval/executortest"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/sandbox"
)

// This machine's executor passes the executor contract, in its sandbox.
func TestExecutorContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training programs end to end")
	}
	py := evaltest.Python(t)
	sb, err := sandbox.Wrap(context.Background(), runner.NewLocal(nil), sandbox.ModeAuto, sandbox.Options{})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	local := &eval.Local{Runner: sb, Python: py.Path, Sandbox: string(sb.Mode()), Visible: py.Paths, Env: py.ProgramEnv(), BLAS: py.BLASName()}
	executortest.Run(t, eval.NewNode(local), executortest.Options{Sandbox: local.Sandbox})
}
