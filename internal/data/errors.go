package data

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Errors a shard can fail with. A *ShardError wraps exactly one of them (or
// an I/O error), so callers test with errors.Is and read the file name with
// errors.As.
var (
	// ErrMissing: the file does not exist.
	ErrMissing = errors.New("shard file missing")
	// ErrShortFile: the file is shorter than the 1024-byte header.
	ErrShortFile = errors.New("file too short for a shard header")
	// ErrBadMagic: header[0] is not 20240520.
	ErrBadMagic = errors.New("bad magic number")
	// ErrBadVersion: header[1] is not 1.
	ErrBadVersion = errors.New("unsupported shard version")
	// ErrBadCount: header[2] is negative.
	ErrBadCount = errors.New("negative token count in header")
	// ErrTruncated: the file holds fewer tokens than its header says.
	ErrTruncated = errors.New("shard truncated")
	// ErrTrailingBytes: the file holds more bytes than its header accounts for.
	ErrTrailingBytes = errors.New("trailing bytes after the last token")
	// ErrTokenRange: a token id is not below the vocabulary size.
	ErrTokenRange = errors.New("token id out of vocabulary")
	// ErrTokenCount: the header's token count differs from the pinned count.
	ErrTokenCount = errors.New("token count differs from the pinned count")
	// ErrHashMismatch: the file's SHA-256 differs from the pinned hash.
	ErrHashMismatch = errors.New("SHA-256 differs from the pinned hash")
)

// ShardError says which shard failed, how, and what to do about it.
type ShardError struct {
	// File is the shard's path (or name, when it came from a reader).
	File string
	// Err is one of the Err* values above, or an I/O error.
	Err error
	// Detail says what was expected and what was found.
	Detail string
	// Hint says what to do.
	Hint string
}

func (e *ShardError) Error() string {
	var b strings.Builder
	b.WriteString("shard ")
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("(unnamed)")
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *ShardError) Unwrap() error { return e.Err }

// shardErr builds a *ShardError with the hint that fits the file.
func shardErr(file string, kind error, format string, args ...any) *ShardError {
	return &ShardError{File: file, Err: kind, Detail: fmt.Sprintf(format, args...), Hint: hintFor(file)}
}

// hintFor says how to get a good copy of file: tiny shards are rebuilt by
// our own generator, anything else came from elsewhere.
func hintFor(file string) string {
	if file == "" {
		return "re-create or re-download the shard"
	}
	if strings.HasPrefix(filepath.Base(file), tinyPrefix) {
		return fmt.Sprintf("rebuild it with `frontier data build tiny --out %s`", filepath.Dir(file))
	}
	return "re-download or re-prepare this shard"
}
