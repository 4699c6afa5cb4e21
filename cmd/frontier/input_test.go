package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileSetup is a home whose frontier.yaml names a Python that leaves a
// mark when it is run: an input refused before the Python probe leaves
// none.
type hostileSetup struct {
	dir, config, probed string
	fifo, big, binary   string
	good, answer        string
}

func newHostileSetup(t *testing.T) *hostileSetup {
	t.Helper()
	dir := t.TempDir()
	h := &hostileSetup{dir: dir, probed: filepath.Join(dir, "probed")}
	python := writeTemp(t, dir, "python", "#!/bin/sh\ntouch "+h.probed+"\nexit 1\n")
	os.Chmod(python, 0o755)
	h.config = writeTemp(t, dir, "frontier.yaml", fmt.Sprintf("home: %s\npython: %s\n", filepath.Join(dir, "home"), python))
	h.fifo = filepath.Join(dir, "fifo.py")
	if err := syscall.Mkfifo(h.fifo, 0o600); err != nil {
		t.Fatal("mkfifo:", err)
	}
	// 50 MB, sparse: made at once, and refused by its size alone.
	h.big = filepath.Join(dir, "big.py")
	f, err := os.Create(h.big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(50_000_000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A compiled program named .py: an ELF header and NUL bytes.
	h.binary = writeTemp(t, dir, "binary.py", "\x7fELF\x02\x01\x01\x00"+strings.Repeat("\x00", 4096)+"import torch\n")
	h.good = writeTemp(t, dir, "good.py", "import torch\nprint('hello')\n")
	h.answer = writeTemp(t, dir, "answer.md", "<<<<<<< SEARCH\nprint('hello')\n=======\nprint('hi')\n>>>>>>> REPLACE\n")
	return h
}

// frontier starts this test binary as frontier with args; stdin is the
// process's stdin (nil: none).
func (h *hostileSetup) frontier(stdin *os.File, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FRONTIER_TEST_MAIN=1", "FRONTIER_CONFIG="+h.config)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	return cmd
}

// runFrontier runs cmd and returns its exit code, stderr and how long it
// took; a process still running after 20 s is killed and the test fails:
// it waits on its input, which is the bug.
func runFrontier(t *testing.T, cmd *exec.Cmd) (int, string, time.Duration) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		took := time.Since(start)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stderr.String(), took
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%q still runs after 20 s (it waits on its input):\n%s", cmd.Args[1:], stderr.String())
		return 0, "", 0
	}
}

// Every input a user names is refused at once when it is a named pipe, a
// device, a folder, larger than max_program_size, or (a program) not a
// Python program: exit 2, a message that says what and where, and no
// Python probed. The timings are logged (go test -v); the note of the
// change that added this test has them.
func TestHostileInputsRefused(t *testing.T) {
	h := newHostileSetup(t)
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	bigIn, _ := os.Open(h.big)
	defer bigIn.Close()
	dirIn, _ := os.Open(h.dir)
	defer dirIn.Close()

	cases := []struct {
		name  string
		stdin *os.File
		args  []string
		want  string
	}{
		{"eval a named pipe", nil, []string{"eval", h.fifo}, "program: " + h.fifo + " is a named pipe, not a regular file"},
		{"eval /dev/zero", nil, []string{"eval", "/dev/zero"}, "program: /dev/zero is a character device, not a regular file"},
		{"eval a 50 MB file", nil, []string{"eval", h.big}, "program: " + h.big + " holds 47 MiB, more than the 4 MiB frontier reads from such a file"},
		{"eval a folder", nil, []string{"eval", h.dir}, "program: " + h.dir + " is a folder, not a regular file"},
		{"eval a binary program", nil, []string{"eval", h.binary}, h.binary + " is not a text file (it contains NUL bytes)"},
		{"eval - < /dev/zero", zero, []string{"eval", "-"}, "program: stdin gives more than the 4 MiB frontier reads from it"},
		{"eval - < a 50 MB file", bigIn, []string{"eval", "-"}, "program: stdin holds 47 MiB, more than the 4 MiB"},
		{"eval - < a folder", dirIn, []string{"eval", "-"}, "program: stdin is a folder, not a regular file"},
		{"eval --baseline a named pipe", nil, []string{"eval", h.good, "--repeats", "2", "--interleave", "--baseline", h.fifo},
			"baseline: " + h.fifo + " is a named pipe"},
		{"eval --baseline /dev/zero", nil, []string{"eval", h.good, "--repeats", "2", "--interleave", "--baseline", "/dev/zero"},
			"baseline: /dev/zero is a character device"},
		{"edit apply a named pipe", nil, []string{"edit", "apply", h.fifo, h.answer}, "program: " + h.fifo + " is a named pipe"},
		{"edit apply an answer of /dev/zero", nil, []string{"edit", "apply", h.good, "/dev/zero"}, "answer: /dev/zero is a character device"},
		{"edit apply a 50 MB answer", nil, []string{"edit", "apply", h.good, h.big}, "answer: " + h.big + " holds 47 MiB"},
		{"edit apply - < /dev/zero", zero, []string{"edit", "apply", "-", h.answer}, "program: stdin gives more than the 4 MiB"},
		{"track import a named pipe", nil, []string{"track", "import", "--from", h.fifo}, "the record: " + h.fifo + " is a named pipe"},
		{"track import /dev/zero", nil, []string{"track", "import", "--from", "/dev/zero"}, "the record: /dev/zero is a character device"},
		{"track import a 50 MB file", nil, []string{"track", "import", "--from", h.big}, "the record: " + h.big + " holds 47 MiB"},
		{"track import a folder", nil, []string{"track", "import", "--from", h.dir}, "is a folder, not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.stdin != nil {
				c.stdin.Seek(0, io.SeekStart)
			}
			code, stderr, took := runFrontier(t, h.frontier(c.stdin, c.args...))
			t.Logf("refused in %v", took.Round(time.Millisecond))
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, exitUsage, c.want)
			}
			if _, err := os.Stat(h.probed); err == nil {
				os.Remove(h.probed)
				t.Error("Python was probed before the input was refused")
			}
		})
	}

	// The mark works: a program that is fine gets as far as the probe.
	code, stderr, _ := runFrontier(t, h.frontier(nil, "eval", h.good))
	if _, err := os.Stat(h.probed); err != nil || code == 0 {
		t.Errorf("a good program: exit %d, probed: %v\n%s", code, err, stderr)
	}
}

// A program read from a pipe whose writer never closes it leaves the
// wait to Ctrl-C and SIGTERM: the command ends with exit 130.
func TestStdinWaitEndsOnSignal(t *testing.T) {
	h := newHostileSetup(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd := h.frontier(r, "--log-level", "debug", "eval", "-")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			// Signal once it reads (it says so at debug level): before its
			// handler is set, the signal would end it by its default
			// action, which proves nothing. One that never says so is
			// signaled after 5 s.
			var said syncBuffer
			reading := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				lines, seen := bufio.NewScanner(stderr), false
				for lines.Scan() {
					said.Write([]byte(lines.Text() + "\n"))
					if !seen && strings.Contains(lines.Text(), "reading from stdin") {
						seen = true
						close(reading)
					}
				}
				// Wait only once stderr is read to its end (exec's rule).
				done <- cmd.Wait()
			}()
			select {
			case <-reading:
			case <-time.After(5 * time.Second):
			}
			start := time.Now()
			cmd.Process.Signal(sig)
			select {
			case <-done:
				t.Logf("ended %v after the signal", time.Since(start).Round(time.Millisecond))
				if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
					t.Errorf("exit %d after %v, want %d:\n%s", code, sig, exitInterrupted, said.String())
				}
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still waiting on stdin 20 s after %v:\n%s", sig, said.String())
			}
		})
	}
}
