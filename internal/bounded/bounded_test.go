package bounded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test when it has not returned in 5 s: a
// refusal that waits is the bug these readers exist to prevent.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still waiting after 5 s", what)
		return nil
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "p.py")
	os.WriteFile(good, []byte("print(1)\n"), 0o600)
	if b, err := ReadFile(good, 100); err != nil || string(b) != "print(1)\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	big := filepath.Join(dir, "big.py")
	os.WriteFile(big, make([]byte, 4<<20+1), 0o600)
	var tl *TooLargeError
	if _, err := ReadFile(big, 4<<20); !errors.As(err, &tl) || !strings.Contains(err.Error(), "big.py holds 4.0 MiB, more than the 4 MiB") {
		t.Errorf("a file over the limit: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.py")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal("mkfifo:", err)
	}
	var nr *NotRegularError
	for _, c := range []struct{ path, want string }{
		{fifo, "fifo.py is a named pipe, not a regular file"},
		{"/dev/zero", "/dev/zero is a character device, not a regular file"},
		{dir, "is a folder, not a regular file"},
	} {
		err := within(t, c.path, func() error { _, err := ReadFile(c.path, 1<<20); return err })
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.py"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	// Open, for a reader that streams: the same refusals, no limit.
	if f, err := Open(big); err != nil {
		t.Errorf("Open a large file: %v", err)
	} else {
		f.Close()
	}
	for _, path := range []string{fifo, "/dev/zero", dir} {
		err := within(t, path, func() error {
			f, err := Open(path)
			if err == nil {
				f.Close()
			}
			return err
		})
		if !errors.As(err, &nr) {
			t.Errorf("Open %s: %v", path, err)
		}
	}
}

func TestReadInput(t *testing.T) {
	ctx := context.Background()
	// A pipe is read to its end, up to the limit.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write([]byte("print(2)\n")); w.Close() }()
	if b, err := ReadInput(ctx, r, "stdin", 100); err != nil || string(b) != "print(2)\n" {
		t.Errorf("a pipe: %q, %v", b, err)
	}
	r.Close()

	// An endless stream is refused once it passes the limit.
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	var tl *TooLargeError
	err = within(t, "/dev/zero as stdin", func() error { _, err := ReadInput(ctx, zero, "stdin", 4<<20); return err })
	if !errors.As(err, &tl) || !tl.Stream || !strings.Contains(err.Error(), "stdin gives more than the 4 MiB") {
		t.Errorf("/dev/zero as stdin: %v", err)
	}

	// A regular file is checked by its size before it is read.
	dir := t.TempDir()
	big := filepath.Join(dir, "big.py")
	if err := os.WriteFile(big, nil, 0o600); err != nil || os.Truncate(big, 50<<20) != nil {
		t.Fatal("a sparse file of 50 MiB:", err)
	}
	f, _ := os.Open(big)
	defer f.Close()
	if _, err := ReadInput(ctx, f, "stdin", 4<<20); !errors.As(err, &tl) || tl.Stream || tl.Size != 50<<20 {
		t.Errorf("a large file as stdin: %v", err)
	}
	d, _ := os.Open(dir)
	defer d.Close()
	var nr *NotRegularError
	if _, err := ReadInput(ctx, d, "stdin", 10); !errors.As(err, &nr) {
		t.Errorf("a folder as stdin: %v", err)
	}

	// A pipe whose writer never closes it gives way to the context.
	r, w, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	err = within(t, "an open pipe", func() error { _, err := ReadInput(cctx, r, "stdin", 10); return err })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("an open pipe, canceled: %v", err)
	}
}

func TestReadInside(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.py"), []byte("x"), 0o600)
	if b, err := ReadInside(dir, "a.py", 10); err != nil || string(b) != "x" {
		t.Errorf("ReadInside = %q, %v", b, err)
	}
	os.Symlink("/etc/hostname", filepath.Join(dir, "out.py"))
	if _, err := ReadInside(dir, "out.py", 10); err == nil || !strings.Contains(err.Error(), "must lie inside the folder") {
		t.Errorf("a link out of the folder: %v", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{
		812: "812 bytes", 1024: "1 KiB", 1536: "1536 bytes", 256 << 10: "256 KiB", 1 << 20: "1 MiB",
		4 << 20: "4 MiB", 4<<20 + 1: "4.0 MiB", 3 << 19: "1.5 MiB", 50_000_000: "47 MiB", 5 << 30: "5 GiB",
	} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
