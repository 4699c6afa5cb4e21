//go:build linux

package runner

import (
	"context"
	"errors"
	"github.com/frontier-bench/frontier/internal/testdeps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const python = "/usr/bin/python3"

// testEnv is a minimal environment for the test programs.
var testEnv = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}

// script writes an executable file into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// shJob runs a /bin/sh script in a fresh folder with short limits.
func shJob(t *testing.T, body string) Job {
	t.Helper()
	dir := t.TempDir()
	script(t, dir, "prog.sh", body)
	return Job{Dir: dir, Argv: []string{"/bin/sh", "prog.sh"}, Env: testEnv, Grace: 300 * time.Millisecond}
}

func pyJob(t *testing.T, body string) Job {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		testdeps.Missing(t, "python3", "no %s: %v", python, err)
	}
	dir := t.TempDir()
	script(t, dir, "prog.py", body)
	return Job{Dir: dir, Argv: []string{python, "prog.py"}, Env: testEnv, Grace: 300 * time.Millisecond}
}

func run1(t *testing.T, job Job) Result {
	t.Helper()
	return runCtx(t, context.Background(), job)
}

func runCtx(t *testing.T, ctx context.Context, job Job) Result {
	t.Helper()
	res, err := NewLocal(nil).Run(ctx, job)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// readPids reads the pids a test program wrote, one per line.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %v", path, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("pid file %s is empty", path)
	}
	return pids
}

// assertGone fails if any pid is still a live process (zombies waiting for
// init to reap them count as gone).
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if p, err := readProcStat(pid); err == nil && p.state != 'Z' {
			syscall.Kill(pid, syscall.SIGKILL) // do not leak it past the test
			t.Errorf("process %d is still alive (state %c) after Run returned", pid, p.state)
		}
	}
}

func TestLocalSuccess(t *testing.T) {
	job := shJob(t, "echo hello; echo warning >&2; echo done\n")
	job.StdoutFile = filepath.Join(job.Dir, "stdout.txt")
	res := run1(t, job)
	if res.Status != StatusOK || res.ExitCode != 0 || res.Signal != "" {
		t.Fatalf("got %s code %d signal %q: %s", res.Status, res.ExitCode, res.Signal, res.Message)
	}
	if res.Stdout.Head != "hello\ndone\n" || res.Stdout.Total != 11 || res.Stdout.Dropped != 0 {
		t.Errorf("stdout = %+v", res.Stdout)
	}
	if res.Stderr.String() != "warning\n" {
		t.Errorf("stderr = %q", res.Stderr.String())
	}
	if res.Wall <= 0 || res.MaxRSSKB <= 0 {
		t.Errorf("wall %v, max RSS %d KiB: want both > 0", res.Wall, res.MaxRSSKB)
	}
	if !strings.HasPrefix(res.Message, "exited normally after ") || res.Traceback != "" {
		t.Errorf("message %q, traceback %q", res.Message, res.Traceback)
	}
	if b, err := os.ReadFile(job.StdoutFile); err != nil || string(b) != "hello\ndone\n" {
		t.Errorf("stdout file = %q, %v", b, err)
	}
}

func TestLocalExitCode(t *testing.T) {
	res := run1(t, shJob(t, "echo failing >&2; exit 3\n"))
	if res.Status != StatusError || res.ExitCode != 3 {
		t.Fatalf("got %s code %d: %s", res.Status, res.ExitCode, res.Message)
	}
	if !strings.Contains(res.Message, "exited with code 3") {
		t.Errorf("message %q", res.Message)
	}

	res = run1(t, shJob(t, "exit 137\n"))
	if res.Status != StatusError || !strings.Contains(res.Message, "128+9") || !strings.Contains(res.Message, "SIGKILL") {
		t.Errorf("exit 137: %s: %s", res.Status, res.Message)
	}
}

func TestLocalPythonTraceback(t *testing.T) {
	res := run1(t, pyJob(t, `import sys
print("step 1 loss 4.0", flush=True)
def step(lr):
    raise ValueError(f"bad learning rate {lr}")
step(3.0)
`))
	if res.Status != StatusError || res.ExitCode != 1 {
		t.Fatalf("got %s code %d: %s", res.Status, res.ExitCode, res.Message)
	}
	if res.ErrorLine != "ValueError: bad learning rate 3.0" {
		t.Errorf("error line %q", res.ErrorLine)
	}
	if !strings.HasPrefix(res.Traceback, tracebackHeader) || !strings.Contains(res.Traceback, `prog.py", line 4, in step`) {
		t.Errorf("traceback:\n%s", res.Traceback)
	}
	if !strings.HasSuffix(res.Message, ": ValueError: bad learning rate 3.0.") {
		t.Errorf("message %q", res.Message)
	}
	if res.Stdout.Head != "step 1 loss 4.0\n" {
		t.Errorf("stdout %q", res.Stdout.Head)
	}
}

func TestLocalPythonSyntaxError(t *testing.T) {
	res := run1(t, pyJob(t, "x = 1\ndef f(:\n    pass\n"))
	if res.Status != StatusError {
		t.Fatalf("got %s: %s", res.Status, res.Message)
	}
	if !strings.HasPrefix(res.ErrorLine, "SyntaxError: ") {
		t.Errorf("error line %q", res.ErrorLine)
	}
	if !strings.Contains(res.Traceback, `prog.py", line 2`) || !strings.Contains(res.Traceback, "def f(:") {
		t.Errorf("traceback:\n%s", res.Traceback)
	}
}

func TestLocalPythonMissingFile(t *testing.T) {
	job := pyJob(t, "")
	job.Argv = []string{python, "missing.py"}
	res := run1(t, job)
	if res.Status != StatusError || !strings.Contains(res.ErrorLine, "can't open file") || !strings.Contains(res.ErrorLine, "missing.py") {
		t.Errorf("got %s, error line %q", res.Status, res.ErrorLine)
	}
}

// TestLocalTimeoutKillsGroup: a hang is killed at the limit with every
// process of its group.
func TestLocalTimeoutKillsGroup(t *testing.T) {
	job := shJob(t, "sleep 1000 & echo $! > pids\nsleep 1000 & echo $! >> pids\necho $$ >> pids\necho started\nwait\n")
	job.Timeout = 300 * time.Millisecond
	res := run1(t, job)
	if res.Status != StatusTimeout {
		t.Fatalf("got %s: %s", res.Status, res.Message)
	}
	if res.Wall < job.Timeout || res.Wall > job.Timeout+job.Grace+2*time.Second {
		t.Errorf("wall %v for a %v limit", res.Wall, job.Timeout)
	}
	if !strings.Contains(res.Message, "wall-clock limit of 300ms") || res.Stdout.Head != "started\n" {
		t.Errorf("message %q, stdout %q", res.Message, res.Stdout.Head)
	}
	assertGone(t, readPids(t, filepath.Join(job.Dir, "pids")))
}

// TestLocalGrandchildOutlivesParent: the main process exits 0 while a
// background child keeps running and holds stdout open. Run must neither
// hang on the pipe nor leave the child behind.
func TestLocalGrandchildOutlivesParent(t *testing.T) {
	job := shJob(t, "(sleep 1000; echo late) & echo $! > pids\necho parent done\n")
	start := time.Now()
	res := run1(t, job)
	if res.Status != StatusOK || res.Stdout.Head != "parent done\n" {
		t.Fatalf("got %s, stdout %q: %s", res.Status, res.Stdout.Head, res.Message)
	}
	if res.Leftover < 1 || !strings.Contains(res.Message, "leftover process") {
		t.Errorf("leftover %d, message %q", res.Leftover, res.Message)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Run took %v", d)
	}
	assertGone(t, readPids(t, filepath.Join(job.Dir, "pids")))
}

// TestLocalIgnoresSIGTERM: the main process ignores SIGTERM and is killed
// when the grace period ends; a grandchild that ignores it dies too.
func TestLocalIgnoresSIGTERM(t *testing.T) {
	job := pyJob(t, `import signal, subprocess, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "1000"])  # inherits the ignored SIGTERM
open("pids", "w").write(f"{child.pid}\n")
print("ready", flush=True)
time.sleep(1000)
`)
	job.Timeout = 500 * time.Millisecond
	res := run1(t, job)
	if res.Status != StatusTimeout || res.Signal != "SIGKILL" {
		t.Fatalf("got %s signal %q: %s", res.Status, res.Signal, res.Message)
	}
	if !strings.Contains(res.Message, "then SIGKILL after the 300ms grace period") {
		t.Errorf("message %q", res.Message)
	}
	if res.Wall < job.Timeout+job.Grace {
		t.Errorf("wall %v: killed before the grace period ended", res.Wall)
	}
	assertGone(t, readPids(t, filepath.Join(job.Dir, "pids")))
}

// TestLocalEscapedSession: a child that leaves the process group with
// setsid and redirects its output is still found by the /proc scan, since
// its parent lives long enough to be seen.
func TestLocalEscapedSession(t *testing.T) {
	job := shJob(t, "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > pids\nsleep 0.3\necho bye\n")
	res := run1(t, job)
	if res.Status != StatusOK {
		t.Fatalf("got %s: %s", res.Status, res.Message)
	}
	pids := readPids(t, filepath.Join(job.Dir, "pids"))
	assertGone(t, pids)
	if res.Leftover < 1 {
		t.Errorf("leftover %d, want the escaped sleep counted", res.Leftover)
	}
}

// TestLocalEscapedPipeHolder: a daemon that leaves the group at once, its
// parent exiting immediately, is found because it holds the output pipe.
func TestLocalEscapedPipeHolder(t *testing.T) {
	job := shJob(t, "setsid sh -c 'echo $$ > pids; echo daemon; exec sleep 1000' &\nwhile [ ! -s pids ]; do :; done\n")
	start := time.Now()
	res := run1(t, job)
	if res.Status != StatusOK {
		t.Fatalf("got %s: %s", res.Status, res.Message)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Run took %v", d)
	}
	if res.Stdout.Head != "daemon\n" {
		t.Errorf("stdout %q", res.Stdout.Head)
	}
	assertGone(t, readPids(t, filepath.Join(job.Dir, "pids")))
}

// TestLocalGiantStdout: 200 MB of output costs a bounded amount of memory,
// keeps the right head and tail and counts everything.
func TestLocalGiantStdout(t *testing.T) {
	const n = 200_000_000
	job := shJob(t, "printf 'HEAD\\n'; head -c "+strconv.Itoa(n)+" /dev/zero | tr '\\0' 'x'; printf '\\nTAIL\\n'\n")
	var lines []string
	var mu sync.Mutex
	job.OnLine = func(stream, line string) {
		mu.Lock()
		lines = append(lines, stream+":"+line[:min(len(line), 10)]+"|"+strconv.Itoa(len(line)))
		mu.Unlock()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run1(t, job)
	runtime.ReadMemStats(&after)
	if res.Status != StatusOK {
		t.Fatalf("got %s: %s", res.Status, res.Message)
	}
	o := res.Stdout
	if o.Total != n+11 || int64(len(o.Head))+o.Dropped+int64(len(o.Tail)) != o.Total {
		t.Errorf("total %d dropped %d head %d tail %d", o.Total, o.Dropped, len(o.Head), len(o.Tail))
	}
	if len(o.Head) != 64<<10 || len(o.Tail) != 64<<10 || !strings.HasPrefix(o.Head, "HEAD\nxxx") || !strings.HasSuffix(o.Tail, "xxx\nTAIL\n") {
		t.Errorf("head %.10q (%d bytes), tail ...%q (%d bytes)", o.Head, len(o.Head), o.Tail[max(0, len(o.Tail)-10):], len(o.Tail))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d MB while capturing %d MB", alloc>>20, n>>20)
	}
	// The 200 MB line reaches OnLine cut to 4 KiB.
	want := []string{"stdout:HEAD|4", "stdout:xxxxxxxxxx|" + strconv.Itoa(4096+len(" [... 199995904 more bytes in this line]")), "stdout:TAIL|4"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
}

// TestLocalExactEnvironment: nothing of the runner's environment leaks.
func TestLocalExactEnvironment(t *testing.T) {
	t.Setenv("FRONTIER_TEST_SECRET_KEY", "must-not-leak")
	dir := t.TempDir()
	res := run1(t, Job{Dir: dir, Argv: []string{"/usr/bin/env"}, Env: []string{"A=1", "PATH=/usr/bin"}})
	if res.Stdout.Head != "A=1\nPATH=/usr/bin\n" {
		t.Errorf("env with A and PATH printed %q", res.Stdout.Head)
	}
	res = run1(t, Job{Dir: dir, Argv: []string{"/usr/bin/env"}})
	if res.Status != StatusOK || res.Stdout.Total != 0 {
		t.Errorf("empty env: %s, printed %q", res.Status, res.Stdout.Head)
	}
}

func TestLocalPathLookup(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script(t, dir, "bin/mytool", "#!/bin/sh\necho tool $1\n")
	// A relative PATH entry is relative to the job's folder.
	res := run1(t, Job{Dir: dir, Argv: []string{"mytool", "x"}, Env: []string{"PATH=/nonexistent:bin"}})
	if res.Status != StatusOK || res.Stdout.Head != "tool x\n" {
		t.Errorf("job PATH: %s %q: %s", res.Status, res.Stdout.Head, res.Message)
	}
	// The job's PATH wins over the runner's: sh is not in /nonexistent.
	res = run1(t, Job{Dir: dir, Argv: []string{"sh", "-c", "echo hi"}, Env: []string{"PATH=/nonexistent"}})
	if res.Status != StatusNoStart || !strings.Contains(res.Message, `"sh" not found in the job's PATH "/nonexistent"`) {
		t.Errorf("job PATH without sh: %s: %s", res.Status, res.Message)
	}
	// Without PATH in the job's environment, the runner's PATH is used.
	res = run1(t, Job{Dir: dir, Argv: []string{"sh", "-c", "echo hi"}, Env: []string{}})
	if res.Status != StatusOK || res.Stdout.Head != "hi\n" {
		t.Errorf("no job PATH: %s %q: %s", res.Status, res.Stdout.Head, res.Message)
	}
}

func TestLocalCancel(t *testing.T) {
	job := shJob(t, "sleep 1000 & echo $! > pids\necho $$ >> pids\nwait\n")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res := runCtx(t, ctx, job)
	if res.Status != StatusCanceled || !strings.HasPrefix(res.Message, "canceled after ") {
		t.Fatalf("got %s: %s", res.Status, res.Message)
	}
	assertGone(t, readPids(t, filepath.Join(job.Dir, "pids")))

	ctx2, cancel2 := context.WithCancelCause(context.Background())
	time.AfterFunc(100*time.Millisecond, func() { cancel2(errors.New("search budget spent")) })
	res = runCtx(t, ctx2, job)
	if res.Status != StatusCanceled || !strings.Contains(res.Message, "(search budget spent)") {
		t.Errorf("canceled with a cause: %s: %s", res.Status, res.Message)
	}

	res = runCtx(t, ctx, job) // already canceled: never starts
	if res.Status != StatusCanceled || res.Wall != 0 {
		t.Errorf("pre-canceled: %s after %v: %s", res.Status, res.Wall, res.Message)
	}
}

func TestLocalCannotStart(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "noexec.sh", "echo hi\n")
	if err := os.Chmod(filepath.Join(dir, "noexec.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	script(t, dir, "badshebang.sh", "#!/nonexistent/interpreter\n")
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"no-such-program-xyz"}, `executable "no-such-program-xyz" not found in the job's PATH "/usr/bin:/bin"`},
		{[]string{"./missing.py"}, filepath.Join(dir, "missing.py") + " does not exist"},
		{[]string{"./noexec.sh"}, "is not executable (mode -rw-r--r--)"},
		{[]string{"./badshebang.sh"}, "interpreter named on the #! line is probably missing"},
	}
	for _, tt := range tests {
		res := run1(t, Job{Dir: dir, Argv: tt.argv, Env: testEnv})
		if res.Status != StatusNoStart || res.ExitCode != -1 || !strings.Contains(res.Message, tt.want) {
			t.Errorf("%q: got %s (code %d): %s\nwant message containing %q", tt.argv, res.Status, res.ExitCode, res.Message, tt.want)
		}
	}
}

// TestLocalKilledFromInside: a SIGKILL the runner did not send is reported
// as signaled with a word about memory, or as OOM when the cgroup says so.
func TestLocalKilledFromInside(t *testing.T) {
	res := run1(t, shJob(t, "echo about to die\nkill -KILL $$\n"))
	if res.Signal != "SIGKILL" || res.ExitCode != -1 {
		t.Fatalf("signal %q code %d: %s", res.Signal, res.ExitCode, res.Message)
	}
	switch res.Status {
	case StatusSignaled:
		if !strings.Contains(res.Message, "which the runner did not send") {
			t.Errorf("message %q", res.Message)
		}
	case StatusOOM: // another test's process hit the OOM killer meanwhile
	default:
		t.Errorf("got %s: %s", res.Status, res.Message)
	}

	res = run1(t, pyJob(t, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"))
	if res.Status != StatusSignaled || res.Signal != "SIGSEGV" || !strings.Contains(res.Message, "segmentation fault") {
		t.Errorf("SIGSEGV: %s %q: %s", res.Status, res.Signal, res.Message)
	}
}

// TestClassifyOOM checks the OOM branch against a counter file, since a
// real OOM kill cannot be provoked safely in a test.
func TestClassifyOOM(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "memory.events")
	if err := os.WriteFile(counter, []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	killed := shJob(t, "kill -KILL $$\n")
	res := run1(t, killed) // a real SIGKILL exit status to classify
	if res.Signal != "SIGKILL" {
		t.Fatalf("setup: %s", res.Message)
	}
	state := exitState(t, killed)
	s := supervisor{oom: oomCounter{path: counter, before: 3}}
	s.readOOM()
	var got Result
	s.classify(&got, state, killed)
	if got.Status != StatusOOM || !strings.Contains(got.Message, "out-of-memory killer") || !strings.Contains(got.Message, "rose by 1") {
		t.Errorf("got %s: %s", got.Status, got.Message)
	}
	s = supervisor{oom: oomCounter{path: counter, before: 4}}
	s.readOOM()
	got = Result{}
	s.classify(&got, state, killed)
	if got.Status != StatusSignaled || !strings.Contains(got.Message, "recorded no OOM kill") {
		t.Errorf("got %s: %s", got.Status, got.Message)
	}
}

// exitState runs job directly to get an *os.ProcessState to classify.
func exitState(t *testing.T, job Job) *os.ProcessState {
	t.Helper()
	p, err := os.StartProcess("/bin/sh", job.Argv, &os.ProcAttr{Dir: job.Dir, Env: job.Env})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLocalOutputFilesAndCaps(t *testing.T) {
	job := shJob(t, "i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done; echo err >&2\n")
	job.HeadBytes, job.TailBytes = 12, 8
	job.StdoutFile = filepath.Join(job.Dir, "out.log")
	job.StderrFile = filepath.Join(job.Dir, "err.log")
	res := run1(t, job)
	if res.Stdout.Head != "line0\nline1\n" || res.Stdout.Tail != "\nline99\n" {
		t.Errorf("head %q tail %q", res.Stdout.Head, res.Stdout.Tail)
	}
	b, err := os.ReadFile(job.StdoutFile)
	want := "line0\nline1\n\n[... " + strconv.FormatInt(res.Stdout.Dropped, 10) + " bytes dropped ...]\n\nline99\n"
	if err != nil || string(b) != want {
		t.Errorf("stdout file %q (%v), want %q", b, err, want)
	}
	if b, err := os.ReadFile(job.StderrFile); err != nil || string(b) != "err\n" {
		t.Errorf("stderr file %q, %v", b, err)
	}
}

func TestLocalOnLine(t *testing.T) {
	job := pyJob(t, `import sys
print("step 1", flush=True)
print("warn", file=sys.stderr, flush=True)
sys.stdout.write("x" * 10000 + "\n")
sys.stdout.write("progress 10%\rprogress 20%\r\n")
sys.stdout.write("no newline at the end")
`)
	var got []string
	job.OnLine = func(stream, line string) {
		got = append(got, strings.TrimPrefix(stream, "std")+":"+line[:min(len(line), 12)]+"/"+strconv.Itoa(len(line)))
	}
	res := run1(t, job)
	if res.Status != StatusOK {
		t.Fatalf("%s: %s", res.Status, res.Message)
	}
	long := 4096 + len(" [... 5904 more bytes in this line]")
	want := []string{"out:step 1/6", "err:warn/4", "out:xxxxxxxxxxxx/" + strconv.Itoa(long), "out:progress 10%/12", "out:progress 20%/12", "out:no newline a/21"}
	// The two streams are read concurrently: compare each stream's order.
	for _, prefix := range []string{"out:", "err:"} {
		if g, w := filterPrefix(got, prefix), filterPrefix(want, prefix); !slices.Equal(g, w) {
			t.Errorf("%s lines %q, want %q", prefix, g, w)
		}
	}
}

func filterPrefix(ss []string, prefix string) []string {
	var out []string
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func TestLocalBadJob(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"no argv", Job{Dir: dir}, "empty command line"},
		{"no dir", Job{Argv: []string{"/bin/true"}}, "no working directory"},
		{"missing dir", Job{Dir: filepath.Join(dir, "nope"), Argv: []string{"/bin/true"}}, "no such file or directory"},
		{"bad env", Job{Dir: dir, Argv: []string{"/bin/true"}, Env: []string{"A=1", "oops"}}, `Job.Env[1] = "oops"`},
		{"huge cap", Job{Dir: dir, Argv: []string{"/bin/true"}, TailBytes: 1 << 40}, "Job.TailBytes = 1099511627776: want 0 (the default) to 268435456"},
		{"negative timeout", Job{Dir: dir, Argv: []string{"/bin/true"}, Timeout: -1}, "negative Timeout"},
		{"same files", Job{Dir: dir, Argv: []string{"/bin/true"}, StdoutFile: "x", StderrFile: "x"}, "same file"},
		{"bad output file", Job{Dir: dir, Argv: []string{"/bin/true"}, StdoutFile: filepath.Join(dir, "no/such/dir/out")}, "stdout file"},
	}
	for _, tt := range tests {
		_, err := NewLocal(nil).Run(context.Background(), tt.job)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

// TestLocalConcurrent runs jobs side by side: their results must not mix.
func TestLocalConcurrent(t *testing.T) {
	r := NewLocal(nil)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			job := shJob(t, "echo job"+strconv.Itoa(i)+"; exit "+strconv.Itoa(i)+"\n")
			res, err := r.Run(context.Background(), job)
			if err != nil || res.ExitCode != i || res.Stdout.Head != "job"+strconv.Itoa(i)+"\n" {
				t.Errorf("job %d: %v code %d stdout %q", i, err, res.ExitCode, res.Stdout.Head)
			}
		})
	}
	wg.Wait()
}

// TestLocalDiesWithRunner: if the runner's process is killed outright, the
// job's main process dies with it (Pdeathsig) instead of running on.
func TestLocalDiesWithRunner(t *testing.T) {
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperRunner$", "-test.count=1")
	helper.Env = append(os.Environ(), "RUNNER_TEST_HELPER_DIR="+dir)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pid")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			helper.Process.Kill()
			helper.Wait()
			t.Fatal("helper did not start the job")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pids := readPids(t, pidFile)
	helper.Process.Kill()
	helper.Wait()
	deadline = time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if p, err := readProcStat(pids[0]); err != nil || p.state == 'Z' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	assertGone(t, pids)
}

// TestHelperRunner is the runner process killed by TestLocalDiesWithRunner.
func TestHelperRunner(t *testing.T) {
	dir := os.Getenv("RUNNER_TEST_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process for TestLocalDiesWithRunner")
	}
	NewLocal(nil).Run(context.Background(), Job{
		Dir:  dir,
		Argv: []string{"/bin/sh", "-c", "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 1000"},
		Env:  testEnv,
	})
}

// daemonScript starts a daemon the /proc scan cannot attribute: it leaves
// the session, closes its output, and its parent exits at once.
const daemonScript = "(setsid sh -c 'echo $$ > pids; exec sleep 1000' >/dev/null 2>&1 </dev/null &)\nwhile [ ! -s pids ]; do :; done\n"

// TestLocalCgroupKillsDaemon: with a job cgroup, even that daemon dies.
func TestLocalCgroupKillsDaemon(t *testing.T) {
	parent := testCgroupParent(t)
	job := shJob(t, daemonScript)
	r := &Local{CgroupParent: parent, ScanInterval: -1}
	res, err := r.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusOK || res.Leftover != 1 {
		t.Errorf("got %s, leftover %d: %s", res.Status, res.Leftover, res.Message)
	}
	assertGone(t, readPids(t, filepath.Join(job.Dir, "pids")))
	if left, _ := filepath.Glob(filepath.Join(parent, "job-*")); len(left) > 0 {
		t.Errorf("job cgroups not removed: %q", left)
	}

	// A timeout through the cgroup path: SIGTERM reaches the daemon too.
	job = shJob(t, daemonScript+"sleep 1000\n")
	job.Timeout = 200 * time.Millisecond
	res, err = r.Run(context.Background(), job)
	if err != nil || res.Status != StatusTimeout {
		t.Fatalf("got %s, %v: %s", res.Status, err, res.Message)
	}
	assertGone(t, readPids(t, filepath.Join(job.Dir, "pids")))

	if _, err := (&Local{CgroupParent: t.TempDir()}).Run(context.Background(), job); err == nil || !strings.Contains(err.Error(), "not a cgroup v2 directory") {
		t.Errorf("bad CgroupParent: %v", err)
	}
}

// testCgroupParent makes a cgroup v2 directory for the test below this
// process's own cgroup, or skips when that is not allowed (not root and
// nothing delegated).
func testCgroupParent(t *testing.T) string {
	t.Helper()
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	for _, f := range oomCounterFiles(string(cg), string(mi)) {
		if filepath.Base(f) != "memory.events" {
			continue
		}
		dir, err := os.MkdirTemp(filepath.Dir(f), "runnertest-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.Remove(dir) })
		return dir
	}
	t.Skip("no writable cgroup v2 directory")
	return ""
}

// The job's own CPU time is counted beside its wall time, also when its
// main process does not wait for the process that did the work (as a
// sandbox's wrapper exits without waiting for its init).
func TestLocalCPUTime(t *testing.T) {
	burn := `
import time
end = time.process_time() + 0.6
while time.process_time() < end:
    pass
`
	cases := map[string]string{
		"alone": burn,
		"in a child it does not wait for": `
import os, time
pid = os.fork()
if pid == 0:` + strings.ReplaceAll(burn, "\n", "\n    ") + `
    os._exit(0)
# The child is done when its pipe closes; then end without reaping it.
while True:
    try:
        os.kill(pid, 0)
        st = open("/proc/%d/stat" % pid).read()
    except OSError:
        break
    if ") Z " in st:
        break
    time.sleep(0.05)
os._exit(0)
`,
	}
	for name, body := range cases {
		res := run1(t, pyJob(t, body))
		if res.Status != StatusOK {
			t.Fatalf("%s: %s: %s", name, res.Status, res.Message)
		}
		if res.CPU < 500*time.Millisecond || res.CPUSource == "" {
			t.Errorf("%s: CPU %v from %q after %v of wall time: want at least the 0.6s it burned", name, res.CPU, res.CPUSource, res.Wall)
		}
	}
}

// A meter read while the job runs counts the work of a child that already
// ended and was reaped, and of one still running, and nothing once the
// job is over.
func TestCPUMeter(t *testing.T) {
	body := `
import os, sys, time
def burn(s):
    end = time.process_time() + s
    while time.process_time() < end:
        pass
pid = os.fork()
if pid == 0:
    burn(0.4)
    os._exit(0)
os.waitpid(pid, 0)  # reaped: its time is now in ours
burn(0.2)
print("burned", flush=True)
sys.stdin.close()
time.sleep(1.5)
`
	job := pyJob(t, body)
	var meter CPUMeter
	if _, err := meter.Upper(); err == nil {
		t.Error("a meter read before its job started gave a reading")
	}
	type reading struct {
		lower, upper time.Duration
		errL, errU   error
	}
	got := make(chan reading, 1)
	job.CPU = &meter
	job.OnLine = func(_, line string) {
		if strings.HasPrefix(line, "burned") {
			var r reading
			r.lower, r.errL = meter.Lower()
			r.upper, r.errU = meter.Upper()
			got <- r
		}
	}
	res := run1(t, job)
	if res.Status != StatusOK {
		t.Fatalf("%s: %s", res.Status, res.Message)
	}
	var r reading
	select {
	case r = <-got:
	default:
		t.Fatal("the program's line never came")
	}
	if r.errL != nil || r.errU != nil {
		t.Fatalf("readings failed: %v, %v", r.errL, r.errU)
	}
	if r.lower < 550*time.Millisecond || r.upper < r.lower {
		t.Errorf("lower %v, upper %v: want at least the 0.6s the child and the program burned, upper >= lower", r.lower, r.upper)
	}
	if r.upper > res.CPU+200*time.Millisecond {
		t.Errorf("reading %v while it ran is more than the job's CPU time %v at its end", r.upper, res.CPU)
	}
	if meter.Source() == "" {
		t.Error("no source")
	}
	if _, err := meter.Lower(); err == nil {
		t.Error("a meter read after its job ended gave a reading")
	}
}
