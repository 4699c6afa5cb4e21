package data

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/frontier-bench/frontier/internal/track"
)

// ShardReport is what verification found about one shard.
type ShardReport struct {
	// File is the shard's name inside the data folder.
	File string
	// Path is where it was looked for.
	Path string
	// Tokens is the count in the header (0 when the header is unreadable).
	Tokens int64
	// SHA256 is the hex SHA-256 of the whole file, header included, as
	// sha256sum prints it ("" when the file could not be read).
	SHA256 string
	// Err is every problem found, nil for a good shard.
	Err error
}

// Report is the outcome of verifying a set of shards.
type Report struct {
	Dir    string
	Shards []ShardReport
}

// OK reports whether every shard passed.
func (r Report) OK() bool {
	for _, s := range r.Shards {
		if s.Err != nil {
			return false
		}
	}
	return true
}

// String lists each shard with its status, one per line.
func (r Report) String() string {
	var b strings.Builder
	for _, s := range r.Shards {
		if s.Err == nil {
			fmt.Fprintf(&b, "ok      %s  %d tokens  sha256 %s\n", s.File, s.Tokens, s.SHA256)
			continue
		}
		// One line per problem: a shard can fail several checks.
		for _, line := range strings.Split(s.Err.Error(), "\n") {
			fmt.Fprintf(&b, "FAILED  %s\n", line)
		}
	}
	return b.String()
}

// CheckShardFile checks that path is a readable shard: its header is valid
// and its size matches the header's count. With vocab > 0 it also reads
// every token and checks it is below vocab; that is a full read, so pass 0
// for large shards whose hash Verify has already checked.
func CheckShardFile(path string, vocab int) error {
	r, err := OpenShard(path, vocab)
	if err != nil {
		return err
	}
	defer r.Close()
	if vocab <= 0 {
		return nil
	}
	buf := make([]uint16, chunkTokens)
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Verify checks every pinned shard in dir: the file exists, its header is
// valid and matches its size, its token count equals the pinned count, its
// SHA-256 equals the pinned hash and, with vocab > 0, every token id is
// below vocab. Files are streamed, never loaded whole. It reports every
// problem it finds (joined), not only the first.
func Verify(ctx context.Context, dir string, shards []track.Shard, vocab int) (Report, error) {
	rep := Report{Dir: dir}
	if len(shards) == 0 {
		return rep, fmt.Errorf("verify %s: no shards are pinned; the track spec must list its shards with their sha256", dir)
	}
	var errs []error
	for _, want := range shards {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		sr := verifyOne(ctx, dir, want, vocab)
		rep.Shards = append(rep.Shards, sr)
		if sr.Err != nil {
			errs = append(errs, sr.Err)
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, errors.Join(errs...)
}

func verifyOne(ctx context.Context, dir string, want track.Shard, vocab int) ShardReport {
	sr := ShardReport{File: want.File, Path: filepath.Join(dir, filepath.FromSlash(want.File))}
	if !filepath.IsLocal(filepath.FromSlash(want.File)) {
		sr.Err = &ShardError{File: want.File, Err: errors.New("pinned file name leaves the data folder"), Hint: "fix the track spec: shard files are names inside the data folder"}
		return sr
	}
	wantHash := strings.ToLower(strings.TrimSpace(want.SHA256))
	if _, err := hex.DecodeString(wantHash); err != nil || len(wantHash) != 2*sha256.Size {
		sr.Err = &ShardError{File: sr.Path, Err: fmt.Errorf("pinned sha256 %q is not 64 hex digits", want.SHA256), Hint: "fix the track spec"}
		return sr
	}
	h, sum, err := scanShard(ctx, sr.Path, vocab)
	sr.Tokens, sr.SHA256 = h.Tokens, sum
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if h.Magic == Magic && h.Version == Version && h.Tokens != want.Tokens {
		errs = append(errs, shardErr(sr.Path, ErrTokenCount, "pinned %d tokens, header counts %d", want.Tokens, h.Tokens))
	}
	if sum != "" && sum != wantHash {
		errs = append(errs, shardErr(sr.Path, ErrHashMismatch, "pinned %s, file has %s", wantHash, sum))
	}
	sr.Err = errors.Join(errs...)
	return sr
}

// scanShard reads path once: it checks the header against the file size,
// hashes every byte and, with vocab > 0, checks every token. It returns the
// header whenever it could be read, and the hash whenever the whole file
// could be read, even when a check failed, so one pass reports everything.
func scanShard(ctx context.Context, path string, vocab int) (Header, string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Header{}, "", shardErr(path, ErrMissing, "no such file")
		}
		return Header{}, "", &ShardError{File: path, Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Header{}, "", &ShardError{File: path, Err: err}
	}
	if st.IsDir() {
		return Header{}, "", &ShardError{File: path, Err: errors.New("is a directory"), Hint: "name a shard file"}
	}
	hash := sha256.New()
	buf := make([]byte, 1<<16)
	// The header is read first so that a bad one is reported as such.
	n, err := io.ReadFull(f, buf[:HeaderBytes])
	hash.Write(buf[:n])
	var hdr Header
	var errs []error
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		errs = append(errs, shardErr(path, ErrShortFile, "expected at least %d header bytes, found %d", HeaderBytes, n))
	case err != nil:
		return Header{}, "", &ShardError{File: path, Err: err}
	default:
		hdr, _ = DecodeHeader(buf)
		if err := hdr.Check(path, st.Size()); err != nil {
			errs = append(errs, err)
		}
	}
	// Token ids are checked only when the header is sound; otherwise the
	// bytes are not known to be tokens.
	checkTokens := vocab > 0 && len(errs) == 0
	var pos int64 // token index of buf[0]
	for {
		if err := ctx.Err(); err != nil {
			return hdr, "", err
		}
		// ReadFull keeps every chunk but the last a whole number of tokens.
		n, err := io.ReadFull(f, buf)
		hash.Write(buf[:n])
		if checkTokens {
			for i := 0; i+1 < n; i += 2 {
				if t := binary.LittleEndian.Uint16(buf[i:]); int(t) >= vocab {
					errs = append(errs, shardErr(path, ErrTokenRange, "token %d at position %d is not below the vocabulary size %d", t, pos+int64(i/2), vocab))
					checkTokens = false
					break
				}
			}
			pos += int64(n / 2)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return hdr, "", &ShardError{File: path, Err: err}
		}
	}
	return hdr, hex.EncodeToString(hash.Sum(nil)), errors.Join(errs...)
}

// Manifest hashes every file in dir whose name matches pattern (as in
// filepath.Match; "*.bin" when empty) and returns them as pins, sorted by
// name. With vocab > 0 every token id is checked too. Files that fail a
// check are left out and reported in the joined error; the good ones are
// still returned.
func Manifest(ctx context.Context, dir, pattern string, vocab int) ([]track.Shard, error) {
	if pattern == "" {
		pattern = "*.bin"
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("manifest of %s: bad pattern %q: %w", dir, pattern, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); ok && !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("manifest of %s: no files match %q", dir, pattern)
	}
	slices.Sort(names)
	var out []track.Shard
	var errs []error
	for _, name := range names {
		h, sum, err := scanShard(ctx, filepath.Join(dir, name), vocab)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return out, ctxErr
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, track.Shard{File: name, SHA256: sum, Tokens: h.Tokens})
	}
	return out, errors.Join(errs...)
}

// HashFile returns the hex SHA-256 of a file, streamed.
func HashFile(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
