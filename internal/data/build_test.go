package data

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func smallBuild() TinyOptions {
	p := DefaultTinyParams()
	p.ValShardTokens, p.TrainShardTokens, p.TrainShards = 4096, 8192, 2
	return TinyOptions{Params: p, ValTokens: 2048, ValSeqLen: 128}
}

func TestBuildTiny(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "tiny")
	opt := smallBuild()
	shards, f, err := BuildTiny(ctx, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{TinyValFile, "tiny_train_000001.bin", "tiny_train_000002.bin"}
	if len(shards) != len(names) {
		t.Fatalf("built %d shards, want %d", len(shards), len(names))
	}
	for i, s := range shards {
		if s.File != names[i] {
			t.Errorf("shard %d is %s, want %s", i, s.File, names[i])
		}
	}
	if shards[0].Tokens != 4096 || shards[1].Tokens != 8192 {
		t.Errorf("token counts %d, %d", shards[0].Tokens, shards[1].Tokens)
	}
	if !(f.Floor > 0 && f.Floor < f.Bigram) || f.ValTokens != 2048 || f.SeqLen != 128 {
		t.Errorf("floor %+v", f)
	}
	// What was returned is what is on disk.
	got, err := Manifest(ctx, dir, "", opt.Params.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(shards) {
		t.Fatalf("%d shards on disk, %d returned", len(got), len(shards))
	}
	for _, s := range got {
		if !slices.Contains(shards, s) {
			t.Errorf("on disk %+v, not among those returned", s)
		}
	}

	// Building again leaves good files alone.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, s := range shards {
		if err := os.Chtimes(filepath.Join(dir, s.File), old, old); err != nil {
			t.Fatal(err)
		}
	}
	// ...and repairs a corrupt one.
	corrupt := filepath.Join(dir, names[1])
	if err := os.WriteFile(corrupt, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, g, err := BuildTiny(ctx, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if g.Floor != f.Floor {
		t.Errorf("second build's floor %v differs from the first's %v", g.Floor, f.Floor)
	}
	for i, s := range again {
		if s != shards[i] {
			t.Errorf("second build returned %+v, first %+v", s, shards[i])
		}
		st, err := os.Stat(filepath.Join(dir, s.File))
		if err != nil {
			t.Fatal(err)
		}
		rewritten := !st.ModTime().Equal(old)
		if rewritten != (s.File == names[1]) {
			t.Errorf("%s: rewritten = %v", s.File, rewritten)
		}
	}
	if _, err := Verify(ctx, dir, shards, opt.Params.Vocab); err != nil {
		t.Errorf("after repair: %v", err)
	}
	// No temporary files are left.
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(names) {
		t.Errorf("folder holds %d entries, want %d", len(entries), len(names))
	}
}

func TestEnsureTiny(t *testing.T) {
	ctx := context.Background()
	opt := smallBuild()
	pins, _, err := BuildTiny(ctx, t.TempDir(), opt)
	if err != nil {
		t.Fatal(err)
	}

	// Missing files are built, then verified.
	dir := t.TempDir()
	rep, err := ensureTiny(ctx, dir, pins, opt)
	if err != nil || !rep.OK() || len(rep.Shards) != len(pins) {
		t.Fatalf("EnsureTiny on an empty folder: %v, %+v", err, rep)
	}
	// Present and good: nothing to do.
	if _, err := ensureTiny(ctx, dir, pins, opt); err != nil {
		t.Fatal(err)
	}

	// A present but corrupt file is an error, never silently replaced.
	path := filepath.Join(dir, pins[0].File)
	b, _ := os.ReadFile(path)
	b[HeaderBytes+10] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ensureTiny(ctx, dir, pins, opt)
	if !errors.Is(err, ErrHashMismatch) || !strings.Contains(err.Error(), "does not match the track's pins") || !strings.Contains(err.Error(), pins[0].File) {
		t.Errorf("corrupt shard: %v", err)
	}

	// Pins that this generator does not produce: built, then refused.
	other := t.TempDir()
	wrong := append(pins[:0:0], pins...)
	wrong[1].SHA256 = strings.Repeat("0", 64)
	_, err = ensureTiny(ctx, other, wrong, opt)
	if !errors.Is(err, ErrHashMismatch) || !strings.Contains(err.Error(), "generator and the track spec disagree") {
		t.Errorf("foreign pins: %v", err)
	}

	if _, err := ensureTiny(ctx, t.TempDir(), nil, opt); err == nil {
		t.Error("EnsureTiny with no pins succeeded")
	}
}

// TestBuildTinyDefault builds the real tiny corpus once and checks that
// its validation shard is the pinned one and that it verifies quickly.
func TestBuildTinyDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the full tiny corpus (17 MB)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	shards, f, err := BuildTiny(ctx, dir, TinyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 9 || shards[0].SHA256 != pinnedTinyValSHA256 || shards[0].Tokens != 1<<18 || shards[8].Tokens != 1<<20 {
		t.Fatalf("shards %+v", shards)
	}
	if math.Abs(f.Floor-pinnedFloor) > 1e-6 {
		t.Errorf("floor %.7f, pinned %.7f", f.Floor, pinnedFloor)
	}
	start := time.Now()
	if err := EnsureTiny(ctx, dir, shards); err != nil {
		t.Fatal(err)
	}
	t.Logf("verified %d shards in %v", len(shards), time.Since(start))
}
