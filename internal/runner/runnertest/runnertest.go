// Package runnertest is the contract test suite for runner.Runner
// implementations, so that the evaluator's executors can rely on the same
// behaviour from each: the local runner and a runner.Func wrapper run it
// (internal/runner), and so does each mode of the sandbox that wraps the
// local runner (internal/sandbox). Run checks exit statuses, the exact
// environment, capped output, time limits, cancels, a missing program or
// folder, and Python tracebacks; it ends with RunJobFeatures, what a job
// needs from its runner beyond a command (descriptors it inherits, memory
// and process limits, output lines as they come, the streams written to
// files), which a runner that cannot confine nor limit may call case by
// case.
//
// The jobs are small /bin/sh scripts written to a temporary folder, which
// must be visible to the processes the runner starts; the traceback and
// memory-limit cases run python3 and skip where there is none.
package runnertest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

	RunJobFeatures(t, r)
}

// RunJobFeatures runs the cases of what the evaluator asks of a runner
// beyond a command: inherited descriptors (the judge's sockets), a memory
// and a process limit, output lines as they come (live progress), and the
// capped streams written to files. Run calls it; a runner that cannot
// confine nor limit (a fake) may call the cases it supports.
func RunJobFeatures(t *testing.T, r runner.Runner) {
	t.Run("ExtraFiles", func(t *testing.T) {
		j := job(t, "cat <&3; echo ok >&4\n")
		in, err := os.CreateTemp(t.TempDir(), "in")
		if err != nil {
			t.Fatal(err)
		}
		in.WriteString("from descriptor 3\n")
		in.Seek(0, 0)
		defer in.Close()
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		j.ExtraFiles = []*os.File{in, pw}
		res := run(t, r, j)
		pw.Close()
		want(t, res, runner.StatusOK)
		got, _ := io.ReadAll(pr)
		if res.Stdout.String() != "from descriptor 3\n" || string(got) != "ok\n" {
			t.Errorf("stdout %q (want what descriptor 3 held), descriptor 4 got %q", res.Stdout.String(), got)
		}
	})

	t.Run("MemoryLimit", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			t.Skip("no /usr/bin/python3")
		}
		j := job(t, "")
		os.WriteFile(filepath.Join(j.Dir, "eat.py"), []byte("import time\nb = []\nwhile True:\n    b.append(bytearray(64 << 20))\n    time.sleep(0.02)\n"), 0o644)
		j.Argv = []string{"/usr/bin/python3", "eat.py"}
		j.MemoryBytes, j.Timeout = 256<<20, time.Minute
		res := run(t, r, j)
		if res.Status != runner.StatusLimit || res.Limit != runner.LimitMemory {
			t.Errorf("status %s, limit %q: %s", res.Status, res.Limit, res.Message)
		}
	})

	t.Run("TaskLimit", func(t *testing.T) {
		j := job(t, "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; wait\n")
		j.MaxTasks, j.Timeout = 32, time.Minute
		res := run(t, r, j)
		if res.Status != runner.StatusLimit || res.Limit != runner.LimitTasks {
			t.Errorf("status %s, limit %q: %s", res.Status, res.Limit, res.Message)
		}
	})

	t.Run("OnLine", func(t *testing.T) {
		j := job(t, "echo one; echo two >&2; printf 'three\\n'\n")
		var mu sync.Mutex
		var lines []string
		j.OnLine = func(stream, line string) {
			mu.Lock()
			lines = append(lines, stream+":"+line)
			mu.Unlock()
		}
		res := run(t, r, j)
		want(t, res, runner.StatusOK)
		mu.Lock()
		defer mu.Unlock()
		got := strings.Join(lines, ",")
		for _, w := range []string{runner.StreamStdout + ":one", runner.StreamStderr + ":two", runner.StreamStdout + ":three"} {
			if !strings.Contains(got, w) {
				t.Errorf("lines %v lack %q", lines, w)
			}
		}
	})

	t.Run("StdoutFile", func(t *testing.T) {
		j := job(t, "echo to-out; echo to-err >&2\n")
		files := t.TempDir()
		j.StdoutFile, j.StderrFile = filepath.Join(files, "out.log"), filepath.Join(files, "err.log")
		res := run(t, r, j)
		want(t, res, runner.StatusOK)
		out, _ := os.ReadFile(j.StdoutFile)
		errb, _ := os.ReadFile(j.StderrFile)
		if string(out) != "to-out\n" || string(errb) != "to-err\n" {
			t.Errorf("stdout file %q, stderr file %q", out, errb)
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
