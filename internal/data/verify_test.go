package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/track"
)

func writeTestShard(t *testing.T, dir, name string, tokens []uint16) track.Shard {
	t.Helper()
	b, err := EncodeShard(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return track.Shard{File: name, SHA256: hex.EncodeToString(sum[:]), Tokens: int64(len(tokens))}
}

func TestVerifyGood(t *testing.T) {
	dir := t.TempDir()
	pins := []track.Shard{
		writeTestShard(t, dir, "a_val_000000.bin", []uint16{1, 2, 3}),
		writeTestShard(t, dir, "a_train_000001.bin", make([]uint16, 100000)),
	}
	rep, err := Verify(context.Background(), dir, pins, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Shards) != 2 || rep.Shards[0].SHA256 != pins[0].SHA256 || rep.Shards[1].Tokens != 100000 {
		t.Errorf("report %+v", rep)
	}
	// Upper-case pins are fine: sha256sum users paste either.
	pins[0].SHA256 = strings.ToUpper(pins[0].SHA256)
	if _, err := Verify(context.Background(), dir, pins, 0); err != nil {
		t.Errorf("upper-case pin: %v", err)
	}
}

func TestVerifyReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	var pins []track.Shard
	wants := map[string]error{}
	for name, c := range corruptions(t, dir) {
		// Pin the good shard's hash and count, so every corruption also
		// shows up as a hash mismatch.
		pins = append(pins, track.Shard{File: name, SHA256: strings.Repeat("ab", 32), Tokens: 4})
		wants[c.path] = c.want
	}
	good := writeTestShard(t, dir, "good.bin", []uint16{1, 2})
	pins = append(pins, good)
	bad := good
	bad.File = "good_copy.bin"
	writeTestShard(t, dir, bad.File, []uint16{1, 3})
	wants[filepath.Join(dir, bad.File)] = ErrHashMismatch
	count := good
	count.File = "count.bin"
	count.Tokens = 3
	writeTestShard(t, dir, count.File, []uint16{1, 2})
	wants[filepath.Join(dir, count.File)] = ErrTokenCount
	pins = append(pins, bad, count, track.Shard{File: "missing.bin", SHA256: good.SHA256, Tokens: 2})
	wants[filepath.Join(dir, "missing.bin")] = ErrMissing

	rep, err := Verify(context.Background(), dir, pins, 100)
	if err == nil {
		t.Fatal("Verify of corrupt shards succeeded")
	}
	if rep.OK() || len(rep.Shards) != len(pins) {
		t.Fatalf("report has %d shards, OK=%v", len(rep.Shards), rep.OK())
	}
	for _, s := range rep.Shards {
		want, isBad := wants[s.Path]
		if !isBad {
			if s.Err != nil {
				t.Errorf("%s: unexpected error %v", s.File, s.Err)
			}
			continue
		}
		if !errors.Is(s.Err, want) {
			t.Errorf("%s: error %v, want %v", s.File, s.Err, want)
		}
		if !errors.Is(err, want) {
			t.Errorf("joined error lacks %v for %s", want, s.File)
		}
		if !strings.Contains(s.Err.Error(), s.Path) {
			t.Errorf("%s: error %q does not name the file", s.File, s.Err)
		}
		// Every corrupted file also fails its hash, and says so (count.bin
		// holds the pinned bytes; only its pinned count is wrong).
		if s.File != "missing.bin" && s.File != "count.bin" && !errors.Is(s.Err, ErrHashMismatch) {
			t.Errorf("%s: hash mismatch not reported alongside %v", s.File, want)
		}
	}
}

func TestVerifyRejectsBadPins(t *testing.T) {
	dir := t.TempDir()
	good := writeTestShard(t, dir, "g.bin", []uint16{1})
	for name, pin := range map[string]track.Shard{
		"escape":  {File: "../g.bin", SHA256: good.SHA256, Tokens: 1},
		"badhash": {File: "g.bin", SHA256: "xyz", Tokens: 1},
	} {
		if _, err := Verify(context.Background(), dir, []track.Shard{pin}, 0); err == nil {
			t.Errorf("%s: Verify accepted pin %+v", name, pin)
		}
	}
	if _, err := Verify(context.Background(), dir, nil, 0); err == nil {
		t.Error("Verify with no pins succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(ctx, dir, []track.Shard{good}, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify with a cancelled context: %v", err)
	}
}

func TestManifest(t *testing.T) {
	dir := t.TempDir()
	b := writeTestShard(t, dir, "b.bin", []uint16{1, 2})
	a := writeTestShard(t, dir, "a.bin", []uint16{3})
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Manifest(context.Background(), dir, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("manifest %+v, want [%+v %+v]", got, a, b)
	}
	// The manifest verifies against itself.
	if _, err := Verify(context.Background(), dir, got, 0); err != nil {
		t.Error(err)
	}
	// A bad file is reported, the good ones still listed.
	if err := os.WriteFile(filepath.Join(dir, "c.bin"), []byte("not a shard"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = Manifest(context.Background(), dir, "*.bin", 0)
	if !errors.Is(err, ErrShortFile) || len(got) != 2 {
		t.Errorf("manifest with a bad file: %d shards, error %v", len(got), err)
	}
	if _, err := Manifest(context.Background(), dir, "*.nothing", 0); err == nil {
		t.Error("manifest of no files succeeded")
	}
	if _, err := Manifest(context.Background(), dir, "[", 0); err == nil {
		t.Error("manifest with a bad pattern succeeded")
	}
}

func TestCheckShardFile(t *testing.T) {
	dir := t.TempDir()
	good := writeTestShard(t, dir, "g.bin", make([]uint16, 3*chunkTokens))
	if err := CheckShardFile(filepath.Join(dir, good.File), 1); err != nil {
		t.Fatal(err)
	}
	for name, c := range corruptions(t, dir) {
		err := CheckShardFile(c.path, 100)
		checkShardErr(t, err, c.want, c.path)
		if c.want == ErrTokenRange {
			if err := CheckShardFile(c.path, 0); err != nil {
				t.Errorf("%s without a vocabulary: %v", name, err)
			}
		}
	}
}

func TestReportString(t *testing.T) {
	dir := t.TempDir()
	good := writeTestShard(t, dir, "g.bin", []uint16{1})
	bad := writeTestShard(t, dir, "b.bin", []uint16{1})
	bad.SHA256 = strings.Repeat("0", 64)
	bad.Tokens = 2
	rep, _ := Verify(context.Background(), dir, []track.Shard{good, bad}, 0)
	s := rep.String()
	if !strings.Contains(s, "ok      g.bin") || strings.Count(s, "FAILED") != 2 || !strings.Contains(s, "b.bin") {
		t.Errorf("report:\n%s", s)
	}
}
