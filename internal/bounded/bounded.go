// Package bounded reads the files and streams a user hands frontier (a
// program, a baseline, a model's answer, a record, a config or track
// file, stdin) with a size limit, and refuses a path that is not a
// regular file before it reads a byte: a named pipe would block the open
// until a writer came, a device like /dev/zero would be read without end,
// and neither would leave the process to Ctrl-C. Opening never waits (the
// file is opened with O_NONBLOCK and its type checked with fstat), and a
// stream is read under a context, so that a signal ends the wait.
package bounded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is a path that names something other than a regular
// file: a folder, a named pipe, a device, a socket.
type NotRegularError struct {
	Name string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Name, Kind(e.Mode))
}

// TooLargeError is an input larger than the limit it is read under.
// Stream is true when the input is a stream whose size is known only to
// pass the limit (Size is then the bytes read, limit+1).
type TooLargeError struct {
	Name        string
	Size, Limit int64
	Stream      bool
}

func (e *TooLargeError) Error() string {
	if e.Stream {
		return fmt.Sprintf("%s gives more than the %s frontier reads from it: is it the right input?", e.Name, Size(e.Limit))
	}
	return fmt.Sprintf("%s holds %s, more than the %s frontier reads from such a file: is it the right file?", e.Name, Size(e.Size), Size(e.Limit))
}

// ReadFile reads the file at path, which must be a regular file of at
// most limit bytes (symbolic links are followed). A named pipe, a device
// or a folder is refused without waiting and without reading.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadRegular(f, path, limit)
}

// Open opens the regular file at path for a reader that streams it (a
// file read line by line, of no fixed limit); like ReadFile, it never
// waits, and refuses a named pipe, a device or a folder.
func Open(path string) (*os.File, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Name: path, Mode: fi.Mode()}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// open opens path for reading without waiting: O_NONBLOCK makes the open
// of a named pipe return at once (without it, it blocks until a writer
// opens the pipe, and no signal handler of Go's can end that wait).
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// ReadRegular reads f, which must be a regular file of at most limit
// bytes; name names it in errors. Open f with O_NONBLOCK, so that opening
// a named pipe does not wait for a writer before this refuses it.
func ReadRegular(f *os.File, name string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Name: name, Mode: fi.Mode()}
	}
	if fi.Size() > limit {
		return nil, &TooLargeError{Name: name, Size: fi.Size(), Limit: limit}
	}
	// The file may grow between Stat and the read: read at most one byte
	// more than allowed.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Name: name, Size: int64(len(b)), Limit: limit}
	}
	return b, nil
}

// ReadInside reads name, a regular file of at most limit bytes that lies
// inside dir (symbolic links are followed only while they stay inside).
// Opening never waits: a named pipe is refused, not read.
func ReadInside(dir, name string, limit int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			// os.Root's refusal of a path that leaves the folder (through
			// "..", an absolute symbolic link, ...) says only "path
			// escapes from parent".
			return nil, fmt.Errorf("%w (files must lie inside the folder %s)", err, dir)
		}
		return nil, err
	}
	defer f.Close()
	return ReadRegular(f, name, limit)
}

// ReadInput reads f, an input that is already open (stdin): a regular
// file as ReadRegular does; a pipe, a terminal or another stream up to
// limit bytes, refused as soon as it gives one byte more; a folder is
// refused. A stream is read while ctx lasts: a writer that never ends the
// stream leaves the read to ctx, which a signal cancels. The read that ctx
// gave up on stays blocked in the background until the stream ends or the
// process exits, which follows at once in a command.
func ReadInput(ctx context.Context, f *os.File, name string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case fi.Mode().IsRegular():
		return ReadRegular(f, name, limit)
	case fi.IsDir():
		return nil, &NotRegularError{Name: name, Mode: fi.Mode()}
	}
	return ReadStream(ctx, f, name, limit)
}

// ReadStream reads r to its end, at most limit bytes, and gives up when
// ctx is done (see ReadInput).
func ReadStream(ctx context.Context, r io.Reader, name string, limit int64) ([]byte, error) {
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, limit+1))
		done <- read{b, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("read %s: %w", name, context.Cause(ctx))
	case got := <-done:
		if got.err != nil {
			return nil, fmt.Errorf("read %s: %w", name, got.err)
		}
		if int64(len(got.b)) > limit {
			return nil, &TooLargeError{Name: name, Size: int64(len(got.b)), Limit: limit, Stream: true}
		}
		return got.b, nil
	}
}

// Size writes n bytes for people: "4 MiB", "256 KiB", "1.5 MiB",
// "812 bytes".
func Size(n int64) string {
	const kib, mib, gib = 1 << 10, 1 << 20, 1 << 30
	unit := func(u int64, name string) string {
		if n%u == 0 || n >= 10*u {
			return fmt.Sprintf("%d %s", n/u, name)
		}
		return fmt.Sprintf("%.1f %s", float64(n)/float64(u), name)
	}
	switch {
	case n >= gib:
		return unit(gib, "GiB")
	case n >= mib:
		return unit(mib, "MiB")
	case n >= 10*kib || n >= kib && n%kib == 0:
		return unit(kib, "KiB")
	}
	return fmt.Sprintf("%d bytes", n)
}

// Kind names a file's type for people: "a folder", "a named pipe".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
