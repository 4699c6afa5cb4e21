package data

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// The speedrun's shard format: a header of 256 little-endian int32 values,
// then header[2] little-endian uint16 tokens.
const (
	// Magic is header[0] of every shard.
	Magic = 20240520
	// Version is header[1] of every shard.
	Version = 1
	// HeaderInts is the number of int32 values in the header.
	HeaderInts = 256
	// HeaderBytes is the size of the header in bytes.
	HeaderBytes = HeaderInts * 4
	// TokenBytes is the size of one token in bytes.
	TokenBytes = 2
	// MaxTokens is the most tokens a header can count.
	MaxTokens = math.MaxInt32
)

// chunkTokens is how many tokens the readers and writers move at a time;
// it bounds their buffers whatever the shard's size.
const chunkTokens = 1 << 15

// Header is the decoded part of a shard header that carries meaning; the
// other 253 values are zero in files we write and ignored in files we read.
type Header struct {
	Magic   int32
	Version int32
	Tokens  int64
}

// Size is the exact file size a shard with this header has.
func (h Header) Size() int64 { return HeaderBytes + TokenBytes*h.Tokens }

// DecodeHeader decodes the first HeaderBytes of b without validating them.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderBytes {
		return Header{}, fmt.Errorf("%w: need %d bytes, have %d", ErrShortFile, HeaderBytes, len(b))
	}
	return Header{
		Magic:   int32(binary.LittleEndian.Uint32(b[0:4])),
		Version: int32(binary.LittleEndian.Uint32(b[4:8])),
		Tokens:  int64(int32(binary.LittleEndian.Uint32(b[8:12]))),
	}, nil
}

// EncodeHeader returns the HeaderBytes header for a shard of n tokens.
func EncodeHeader(n int) ([]byte, error) {
	if n < 0 || n > MaxTokens {
		return nil, fmt.Errorf("shard of %d tokens: the header counts 0 to %d tokens", n, MaxTokens)
	}
	b := make([]byte, HeaderBytes)
	binary.LittleEndian.PutUint32(b[0:4], Magic)
	binary.LittleEndian.PutUint32(b[4:8], Version)
	binary.LittleEndian.PutUint32(b[8:12], uint32(n))
	return b, nil
}

// Check validates the header of file against the file's size in bytes; a
// negative size skips the size check.
func (h Header) Check(file string, size int64) error {
	switch {
	case h.Magic != Magic:
		return shardErr(file, ErrBadMagic, "expected %d in header[0], found %d (not a shard in the speedrun format, or corrupt)", Magic, h.Magic)
	case h.Version != Version:
		return shardErr(file, ErrBadVersion, "expected version %d in header[1], found %d", Version, h.Version)
	case h.Tokens < 0:
		return shardErr(file, ErrBadCount, "header[2] is %d", h.Tokens)
	case size >= 0 && size < h.Size():
		have := (size - HeaderBytes) / TokenBytes
		return shardErr(file, ErrTruncated, "header counts %d tokens (%d bytes), file has %d bytes (%d tokens)", h.Tokens, h.Size(), size, have)
	case size > h.Size():
		return shardErr(file, ErrTrailingBytes, "header counts %d tokens (%d bytes), file has %d bytes, %d too many", h.Tokens, h.Size(), size, size-h.Size())
	}
	return nil
}

// WriteShard writes tokens to w as one shard.
func WriteShard(w io.Writer, tokens []uint16) error {
	hdr, err := EncodeHeader(len(tokens))
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("write shard header: %w", err)
	}
	buf := make([]byte, TokenBytes*min(len(tokens), chunkTokens))
	for len(tokens) > 0 {
		n := min(len(tokens), chunkTokens)
		for i, t := range tokens[:n] {
			binary.LittleEndian.PutUint16(buf[TokenBytes*i:], t)
		}
		if _, err := w.Write(buf[:TokenBytes*n]); err != nil {
			return fmt.Errorf("write shard tokens: %w", err)
		}
		tokens = tokens[n:]
	}
	return nil
}

// EncodeShard returns the bytes of a shard holding tokens.
func EncodeShard(tokens []uint16) ([]byte, error) {
	b := make([]byte, 0, HeaderBytes+TokenBytes*len(tokens))
	w := sliceWriter{&b}
	if err := WriteShard(w, tokens); err != nil {
		return nil, err
	}
	return b, nil
}

type sliceWriter struct{ b *[]byte }

func (w sliceWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

// WriteShardFile writes tokens as a shard at path. The file appears whole
// or not at all: it is written to a temporary file in the same folder,
// synced, and renamed over path.
func WriteShardFile(path string, tokens []uint16) error {
	return writeFileAtomic(path, func(w io.Writer) error { return WriteShard(w, tokens) })
}

// writeFileAtomic writes path through a temporary file and a rename, so a
// reader never sees a partial file and a crash leaves the old one intact.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	// Sync the folder so the rename itself survives a crash; some file
	// systems refuse to sync a directory, which is no reason to fail.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// ShardReader streams the tokens of one shard file with a bounded buffer,
// so a 100M-token shard is never held in memory by the reader itself.
type ShardReader struct {
	file  string
	f     *os.File
	br    *bufio.Reader
	hdr   Header
	vocab int
	pos   int64 // tokens returned so far
	buf   []byte
}

// OpenShard opens a shard, reads and checks its header against the file's
// size. With vocab > 0, Read also checks that every token is below vocab.
func OpenShard(path string, vocab int) (*ShardReader, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, shardErr(path, ErrMissing, "no such file")
		}
		return nil, &ShardError{File: path, Err: err}
	}
	r, err := newShardReader(path, f, vocab)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func newShardReader(path string, f *os.File, vocab int) (*ShardReader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, &ShardError{File: path, Err: err}
	}
	if st.IsDir() {
		return nil, &ShardError{File: path, Err: errors.New("is a directory"), Hint: "name a shard file"}
	}
	br := bufio.NewReaderSize(f, 1<<16)
	hb := make([]byte, HeaderBytes)
	if n, err := io.ReadFull(br, hb); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, shardErr(path, ErrShortFile, "expected at least %d header bytes, found %d", HeaderBytes, n)
		}
		return nil, &ShardError{File: path, Err: err}
	}
	h, _ := DecodeHeader(hb)
	if err := h.Check(path, st.Size()); err != nil {
		return nil, err
	}
	return &ShardReader{file: path, f: f, br: br, hdr: h, vocab: vocab}, nil
}

// Header returns the shard's header.
func (r *ShardReader) Header() Header { return r.hdr }

// Tokens returns the token count from the header.
func (r *ShardReader) Tokens() int64 { return r.hdr.Tokens }

// Read fills dst with the next tokens and returns how many it read; at the
// end of the shard it returns 0, io.EOF.
func (r *ShardReader) Read(dst []uint16) (int, error) {
	left := r.hdr.Tokens - r.pos
	if left == 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(dst)), left, chunkTokens))
	if cap(r.buf) < TokenBytes*n {
		r.buf = make([]byte, TokenBytes*min(left, chunkTokens))
	}
	b := r.buf[:TokenBytes*n]
	if _, err := io.ReadFull(r.br, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// The file shrank after it was opened.
			return 0, shardErr(r.file, ErrTruncated, "file ended after about %d of %d tokens", r.pos, r.hdr.Tokens)
		}
		return 0, &ShardError{File: r.file, Err: err}
	}
	for i := range n {
		t := binary.LittleEndian.Uint16(b[TokenBytes*i:])
		if r.vocab > 0 && int(t) >= r.vocab {
			return 0, shardErr(r.file, ErrTokenRange, "token %d at position %d is not below the vocabulary size %d", t, r.pos+int64(i), r.vocab)
		}
		dst[i] = t
	}
	r.pos += int64(n)
	return n, nil
}

// Close closes the file.
func (r *ShardReader) Close() error { return r.f.Close() }

// ReadShard reads a whole shard into memory, checking its header, its size
// and, with vocab > 0, every token id.
func ReadShard(path string, vocab int) ([]uint16, error) {
	return ReadShardPrefix(path, -1, vocab)
}

// ReadShardPrefix reads the first n tokens of a shard (all of them when n
// is negative). Only the tokens are held in memory, never the file bytes.
func ReadShardPrefix(path string, n int64, vocab int) ([]uint16, error) {
	r, err := OpenShard(path, vocab)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if n < 0 {
		n = r.Tokens()
	}
	if n > r.Tokens() {
		return nil, fmt.Errorf("shard %s holds %d tokens, %d are needed: use a longer shard or evaluate fewer tokens", path, r.Tokens(), n)
	}
	out := make([]uint16, n)
	for done := 0; done < len(out); {
		k, err := r.Read(out[done:])
		if err != nil {
			return nil, err
		}
		done += k
	}
	return out, nil
}
