package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 12345, MaxTokens} {
		b, err := EncodeHeader(n)
		if err != nil {
			t.Fatalf("EncodeHeader(%d): %v", n, err)
		}
		if len(b) != HeaderBytes {
			t.Fatalf("header is %d bytes, want %d", len(b), HeaderBytes)
		}
		h, err := DecodeHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		want := Header{Magic: Magic, Version: Version, Tokens: int64(n)}
		if h != want {
			t.Errorf("round trip of %d tokens: got %+v, want %+v", n, h, want)
		}
		if err := h.Check("x.bin", h.Size()); err != nil {
			t.Errorf("Check of a good header: %v", err)
		}
		// The speedrun leaves the other 253 values zero.
		if !bytes.Equal(b[12:], make([]byte, HeaderBytes-12)) {
			t.Error("header values 3..255 are not zero")
		}
	}
	if _, err := EncodeHeader(-1); err == nil {
		t.Error("EncodeHeader(-1) succeeded")
	}
	if _, err := DecodeHeader(make([]byte, 10)); !errors.Is(err, ErrShortFile) {
		t.Errorf("DecodeHeader of 10 bytes: %v, want ErrShortFile", err)
	}
}

// The layout must match the speedrun's numpy reader byte for byte.
func TestShardLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteShard(&buf, []uint16{1, 0x0203, 65535}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if len(b) != HeaderBytes+6 {
		t.Fatalf("shard of 3 tokens is %d bytes, want %d", len(b), HeaderBytes+6)
	}
	for i, want := range []uint32{20240520, 1, 3} {
		if got := binary.LittleEndian.Uint32(b[4*i:]); got != want {
			t.Errorf("header[%d] = %d, want %d", i, got, want)
		}
	}
	if got := b[HeaderBytes:]; !bytes.Equal(got, []byte{1, 0, 3, 2, 255, 255}) {
		t.Errorf("tokens encoded as % x", got)
	}
}

func TestShardFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.bin")
	// More than one chunk, and not a multiple of it.
	tokens := make([]uint16, 3*chunkTokens+17)
	for i := range tokens {
		tokens[i] = uint16(i * 7919)
	}
	if err := WriteShardFile(path, tokens); err != nil {
		t.Fatal(err)
	}
	got, err := ReadShard(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, tokens) {
		t.Fatal("ReadShard returned other tokens than were written")
	}
	prefix, err := ReadShardPrefix(path, 100, 0)
	if err != nil || !slices.Equal(prefix, tokens[:100]) {
		t.Fatalf("ReadShardPrefix(100): %v", err)
	}
	if _, err := ReadShardPrefix(path, int64(len(tokens)+1), 0); err == nil {
		t.Error("ReadShardPrefix beyond the end succeeded")
	}
	// Streaming with a small buffer.
	r, err := OpenShard(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var streamed []uint16
	buf := make([]uint16, 1000)
	for {
		n, err := r.Read(buf)
		streamed = append(streamed, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(streamed, tokens) {
		t.Fatal("streamed tokens differ")
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries after an atomic write, want 1", len(entries))
	}
}

// corruptions returns shard files that are each broken in one way.
func corruptions(t *testing.T, dir string) map[string]struct {
	path string
	want error
} {
	t.Helper()
	good, err := EncodeShard([]uint16{5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	cases := map[string]struct {
		data []byte
		want error
	}{
		"short.bin":     {good[:100], ErrShortFile},
		"empty.bin":     {nil, ErrShortFile},
		"magic.bin":     {mutate(func(b []byte) []byte { b[0] ^= 1; return b }), ErrBadMagic},
		"version.bin":   {mutate(func(b []byte) []byte { b[4] = 7; return b }), ErrBadVersion},
		"negative.bin":  {mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0xffffffff); return b }), ErrBadCount},
		"truncated.bin": {good[:len(good)-3], ErrTruncated},
		"trailing.bin":  {append(slices.Clone(good), 0, 0), ErrTrailingBytes},
		"range.bin":     {mutate(func(b []byte) []byte { b[HeaderBytes+4] = 200; return b }), ErrTokenRange},
	}
	out := map[string]struct {
		path string
		want error
	}{}
	for name, c := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = struct {
			path string
			want error
		}{p, c.want}
	}
	return out
}

func TestReadShardCorruptions(t *testing.T) {
	dir := t.TempDir()
	for name, c := range corruptions(t, dir) {
		t.Run(name, func(t *testing.T) {
			_, err := ReadShard(c.path, 100)
			checkShardErr(t, err, c.want, c.path)
		})
	}
	_, err := ReadShard(filepath.Join(dir, "nope.bin"), 0)
	checkShardErr(t, err, ErrMissing, "nope.bin")
}

// checkShardErr asserts that err is a *ShardError of kind want that names
// file and says what to do.
func checkShardErr(t *testing.T, err, want error, file string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	var se *ShardError
	if !errors.As(err, &se) {
		t.Fatalf("error %T is not a *ShardError", err)
	}
	if !strings.Contains(se.File, file) || !strings.Contains(err.Error(), file) {
		t.Errorf("error %q does not name the file %s", err, file)
	}
	if se.Hint == "" {
		t.Errorf("error %q says nothing about what to do", err)
	}
}

func TestHintForTinyShards(t *testing.T) {
	err := shardErr(filepath.Join("d", TinyValFile), ErrBadMagic, "x")
	if !strings.Contains(err.Error(), "frontier data build tiny --out d") {
		t.Errorf("tiny shard error %q does not say how to rebuild", err)
	}
	err = shardErr(filepath.Join("d", "fineweb_val_000000.bin"), ErrBadMagic, "x")
	if !strings.Contains(err.Error(), "re-download") {
		t.Errorf("other shard error %q does not say to re-download", err)
	}
}
