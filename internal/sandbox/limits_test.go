//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runner"
)

// running lists the processes whose command line contains marker.
func running(marker string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(d, "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie is dead
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		pids = append(pids, pid)
	}
	return pids
}

// TestForkBomb: a program that forks without end is stopped at the task
// limit in every mode, and none of its processes is left. The loop stops
// by itself at 200 processes, so a limit that failed could not hurt the
// machine.
func TestForkBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("forks for seconds; skipped with -short")
	}
	for i, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			marker := fmt.Sprintf("47.%d%d", os.Getpid(), i) // a unique sleep length
			dir := t.TempDir()
			body := "i=0\nwhile [ $i -lt 200 ]; do sleep " + marker + " & i=$((i+1)); done\nwait\n"
			if err := os.WriteFile(filepath.Join(dir, "bomb.sh"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			job := runner.Job{Dir: dir, Argv: []string{"sh", "bomb.sh"}, Env: testEnv, Timeout: 30 * time.Second, MaxTasks: 40}
			res, err := r.Run(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Message)
			if res.Status != runner.StatusLimit || res.Limit != runner.LimitTasks || res.Sandbox != string(mode) {
				t.Fatalf("got %s (limit %q, sandbox %q): %s", res.Status, res.Limit, res.Sandbox, res.Message)
			}
			if left := running(marker); len(left) > 0 {
				t.Errorf("%d processes of the bomb still run: %v", len(left), left)
				for _, pid := range left {
					_ = syscallKill(pid)
				}
			}
		})
	}
}

// TestMemoryBomb: a program that fills memory fast is stopped at the
// memory limit in every mode. It stops by itself at 512 MiB; the limit is
// small because touching fresh memory is slow on small virtual machines.
func TestMemoryBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates memory for seconds; skipped with -short")
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			r := wrap(t, mode)
			dir := t.TempDir()
			body := "chunks = []\nfor i in range(64):\n    chunks.append(b'\\x01' * (8 << 20))\n    print(len(chunks) * 8, 'MiB', flush=True)\nimport time\ntime.sleep(30)\n"
			if err := os.WriteFile(filepath.Join(dir, "bomb.py"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			job := runner.Job{Dir: dir, Argv: []string{"python3", "bomb.py"}, Env: testEnv, Timeout: 60 * time.Second, MemoryBytes: 64 << 20}
			res, err := r.Run(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Message)
			if res.Status != runner.StatusLimit || res.Limit != runner.LimitMemory || res.Sandbox != string(mode) {
				t.Fatalf("got %s (limit %q, sandbox %q): %s\n%s", res.Status, res.Limit, res.Sandbox, res.Message, res.Stderr.String())
			}
			if !strings.Contains(res.Message, "over the limit of 64 MiB") || strings.Contains(res.Stdout.String(), "512 MiB") {
				t.Errorf("message %q, stdout tail %q", res.Message, res.Stdout.Tail)
			}
		})
	}
}

// TestGracePeriod: when the job is stopped, the program gets SIGTERM and
// its grace period in every mode. Under bwrap this needs the helpers'
// SIGTERM handling, since bwrap itself dies of SIGTERM.
func TestGracePeriod(t *testing.T) {
	for _, mode := range append(modes, "bwrap-helper") {
		t.Run(string(mode), func(t *testing.T) {
			var r *Runner
			if mode == "bwrap-helper" {
				// Without a suitable env, the helper sets SIGTERM.
				c := caps()
				c.Env = ""
				r = wrapWith(t, ModeBwrap, c)
			} else {
				r = wrap(t, mode)
			}
			dir := t.TempDir()
			body := `import os, signal, time
def on_term(signum, frame):
    time.sleep(0.2)
    os.write(1, b"handled\n")  # print could be interrupted inside print
    os._exit(3)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
time.sleep(30)
`
			if err := os.WriteFile(filepath.Join(dir, "prog.py"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			// Stop it once it is ready rather than after a fixed time,
			// which a loaded machine may not be able to keep to.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			job := runner.Job{Dir: dir, Argv: []string{"python3", "prog.py"}, Env: testEnv, Timeout: time.Minute, Grace: 10 * time.Second,
				OnLine: func(stream, line string) {
					if line == "ready" {
						cancel()
					}
				}}
			res, err := r.Run(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != runner.StatusCanceled || !strings.Contains(res.Stdout.String(), "handled") || !strings.Contains(res.Message, "exited within the") {
				t.Errorf("got %s, stdout %q: %s\n%s", res.Status, res.Stdout.String(), res.Message, res.Stderr.String())
			}
		})
	}
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
