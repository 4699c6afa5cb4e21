// Package runnertest is the contract test suite for runner.Runner
// implementations: the local runner, sandboxing wrappers around it and
// remote runners all run it, so that the evaluator can rely on the same
// behaviour from each.
//
// The jobs are small /bin/sh scripts (and a Python one when python3 is
// installed) written to a temporary folder, which must be visible to the
// processes the runner starts.
package runnertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runner"
)

// Env is the environment the suite gives its jobs.
var Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

// Run runs the contract suite against r.
func Run(t *testing.T, r runner.Runner) {
	t.Run("OK", func(t *testing.T) {
		res := run(t, r, job(t, "printf 'out1\\nout2\\n'; echo err >&2\n"))
		want(t, res, runner.StatusOK)
		if res.ExitCode != 0 || res.Stdout.String() != "out1\nout2\n" || res.Stderr.String() != "err\n" || res.Stdout.Total != 10 {
			t.Errorf("exit %d, stdout %q (total %d), stderr %q", res.ExitCode, res.Stdout.String(), res.Stdout.Total, res.Stderr.String())
		}
		if res.Wall <= 0 || res.Message == "" {
			t.Errorf("wall %v, message %q", res.Wall, res.Message)
		}
	})

	t.Run("ExitCode", func(t *testing.T) {
		res := run(t, r, job(t, "exit 3\n"))
		want(t, res, runner.StatusError)
		if res.ExitCode != 3 || !strings.Contains(res.Message, "3") {
			t.Errorf("exit code %d, message %q", res.ExitCode, res.Message)
		}
	})

	t.Run("DirAndExactEnv", func(t *testing.T) {
		t.Setenv("RUNNERTEST_SECRET", "leaked")
		j := job(t, `echo "$(pwd)|${A-unset}|${RUNNERTEST_SECRET-unset}|${HOME-unset}"`+"\n")
		j.Env = append([]string{"A=1"}, Env...)
		res := run(t, r, j)
		want(t, res, runner.StatusOK)
		dir, err := filepath.EvalSymlinks(j.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(res.Stdout.String()); got != dir+"|1|unset|unset" {
			t.Errorf("printed %q, want %q", got, dir+"|1|unset|unset")
		}
	})

	t.Run("Capped", func(t *testing.T) {
		j := job(t, "i=0; while [ $i -lt 1000 ]; do echo line$i; i=$((i+1)); done\n")
		j.HeadBytes, j.TailBytes = 100, 50
		res := run(t, r, j)
		want(t, res, runner.StatusOK)
		o := res.Stdout
		if len(o.Head) != 100 || len(o.Tail) != 50 || o.Total != 7890 || o.Dropped != 7890-150 {
			t.Errorf("head %d tail %d total %d dropped %d", len(o.Head), len(o.Tail), o.Total, o.Dropped)
		}
		if !strings.HasPrefix(o.Head, "line0\nline1\n") || !strings.HasSuffix(o.Tail, "line998\nline999\n") {
			t.Errorf("head %q tail %q", o.Head, o.Tail)
		}
	})

	t.Run("Timeout", func(t *testing.T) {
		j := job(t, "echo started; sleep 30\n")
		j.Timeout, j.Grace = 300*time.Millisecond, 300*time.Millisecond
		start := time.Now()
		res := run(t, r, j)
		want(t, res, runner.StatusTimeout)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Run took %v for a 300ms limit", d)
		}
		if res.Wall < j.Timeout || res.Stdout.String() != "started\n" {
			t.Errorf("wall %v, stdout %q", res.Wall, res.Stdout.String())
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		j := job(t, "sleep 30\n")
		j.Grace = 300 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		res, err := r.Run(ctx, j)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		want(t, res, runner.StatusCanceled)
	})

	t.Run("NotFound", func(t *testing.T) {
		j := job(t, "")
		j.Argv = []string{"runnertest-no-such-program"}
		res := run(t, r, j)
		want(t, res, runner.StatusNoStart)
		if !strings.Contains(res.Message, "runnertest-no-such-program") {
			t.Errorf("message %q does not name the program", res.Message)
		}
	})

	t.Run("MissingDir", func(t *testing.T) {
		j := job(t, "")
		j.Dir = filepath.Join(j.Dir, "missing")
		if _, err := r.Run(context.Background(), j); err == nil {
			t.Error("no error for a missing working directory")
		}
	})

	t.Run("PythonTraceback", func(t *testing.T) {
		j := job(t, "")
		j.Argv = []string{"python3"}
		py, err := runner.LookPath(j) // in the jobs' PATH, not the test's
		if err != nil {
			t.Skipf("no python3: %v", err)
		}
		if err := os.WriteFile(filepath.Join(j.Dir, "prog.py"), []byte("def f():\n    raise KeyError('lr')\nf()\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		j.Argv = []string{py, "prog.py"}
		res := run(t, r, j)
		want(t, res, runner.StatusError)
		if res.ErrorLine != "KeyError: 'lr'" || !strings.Contains(res.Traceback, "in f") {
			t.Errorf("error line %q, traceback:\n%s", res.ErrorLine, res.Traceback)
		}
	})
}

// job writes body as prog.sh in a fresh folder and returns a job for it.
func job(t *testing.T, body string) runner.Job {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prog.sh"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return runner.Job{Dir: dir, Argv: []string{"/bin/sh", "prog.sh"}, Env: Env}
}

func run(t *testing.T, r runner.Runner, j runner.Job) runner.Result {
	t.Helper()
	res, err := r.Run(context.Background(), j)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func want(t *testing.T, res runner.Result, s runner.Status) {
	t.Helper()
	if res.Status != s {
		t.Fatalf("status %s, want %s: %s\nstderr: %s", res.Status, s, res.Message, res.Stderr.String())
	}
}
