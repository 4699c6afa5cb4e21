package data

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/track"
)

func smallBuild(secret TinySecret) TinyOptions {
	p := DefaultTinyParams()
	p.ValShardTokens, p.TrainShardTokens, p.TrainShards = 4096, 8192, 2
	return TinyOptions{Params: p, Secret: &secret, ValTokens: 2048, ValSeqLen: 128}
}

// setOld gives every file in dir an old modification time, so that a
// rewrite shows.
func setOld(t *testing.T, dir string) time.Time {
	t.Helper()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Chtimes(filepath.Join(dir, e.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
	return old
}

func rewritten(t *testing.T, path string, old time.Time) bool {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return !st.ModTime().Equal(old)
}

func TestBuildTiny(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "tiny")
	opt := smallBuild(testSecret(1))
	man, err := BuildTiny(ctx, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{TinyValFile, "tiny_train_000001.bin", "tiny_train_000002.bin"}
	if len(man.Shards) != len(names) {
		t.Fatalf("built %d shards, want %d", len(man.Shards), len(names))
	}
	for i, s := range man.Shards {
		if s.File != names[i] {
			t.Errorf("shard %d is %s, want %s", i, s.File, names[i])
		}
	}
	if man.Shards[0].Tokens != 4096 || man.Shards[1].Tokens != 8192 || man.Shards[1].Bytes != HeaderBytes+2*8192 {
		t.Errorf("shards %+v", man.Shards)
	}
	ti := man.Tiny
	if ti == nil || ti.SecretFingerprint != testSecret(1).Fingerprint() || ti.Generator != tinyVersion || ti.Params != opt.Params {
		t.Fatalf("tiny section %+v", ti)
	}
	f := ti.Floor
	if !(f.Floor > 0 && f.Floor < f.Bigram) || f.ValTokens != 2048 || f.SeqLen != 128 {
		t.Errorf("floor %+v", f)
	}
	if ng := ti.NGram; ng == nil || len(ng.Orders) != tinyNGramOrder || !(ng.Best.Loss > f.Floor) || ng.TrainTokens != 2*8192 {
		t.Errorf("n-gram baseline %+v", ng)
	}

	// The secret is stored for its owner's eyes only, and the manifest
	// read back is the one returned.
	st, err := os.Stat(filepath.Join(dir, TinySecretFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v, mode %v", err, st.Mode())
	}
	if s, err := ReadTinySecret(dir); err != nil || s != testSecret(1) {
		t.Errorf("ReadTinySecret: %v", err)
	}
	back, err := ReadManifest(dir)
	if err != nil || back.Tiny == nil || back.Tiny.Floor.Floor != f.Floor || !slices.Equal(back.Shards, man.Shards) {
		t.Fatalf("manifest read back: %v, %+v", err, back)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	s1 := testSecret(1)
	if bytes.Contains(b, []byte(hex.EncodeToString(s1[:]))) {
		t.Error("the manifest holds the secret")
	}

	// What the manifest pins is what is on disk.
	got, err := Manifest(ctx, dir, "", opt.Params.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	pins := man.Pins()
	slices.SortFunc(pins, func(a, b track.Shard) int { return strings.Compare(a.File, b.File) })
	if !slices.Equal(got, pins) {
		t.Errorf("on disk %+v, manifest %+v", got, man.Pins())
	}

	// Building again leaves good files alone and repairs a corrupt one.
	old := setOld(t, dir)
	corrupt := filepath.Join(dir, names[1])
	if err := os.WriteFile(corrupt, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(corrupt, old, old); err != nil {
		t.Fatal(err)
	}
	again, err := BuildTiny(ctx, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if again.Tiny.Floor.Floor != f.Floor || !slices.Equal(again.Shards, man.Shards) {
		t.Errorf("second build differs from the first: %+v", again)
	}
	for _, name := range names {
		if rewritten(t, filepath.Join(dir, name), old) != (name == names[1]) {
			t.Errorf("%s: rewritten = %v", name, !(name == names[1]))
		}
	}
	if _, err := Verify(ctx, dir, man.Pins(), opt.Params.Vocab); err != nil {
		t.Errorf("after repair: %v", err)
	}
	// No temporary files are left.
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(names)+2 {
		t.Errorf("folder holds %d entries, want %d shards, the manifest and the secret", len(entries), len(names))
	}
}

func TestEnsureTiny(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opt := smallBuild(TinySecret{})
	opt.Secret = nil // the folder's own, drawn on first use
	var logs bytes.Buffer
	opt.Log = slog.New(slog.NewTextHandler(&logs, nil))
	opt.Cache = &ShardCache{}

	// First use: a secret is drawn and the corpus built.
	man, err := EnsureTiny(ctx, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := ReadTinySecret(dir)
	if err != nil || man.Tiny.SecretFingerprint != secret.Fingerprint() {
		t.Fatalf("secret %v, manifest fingerprint %s", err, man.Tiny.SecretFingerprint)
	}
	if man.Tiny.NGram != nil {
		t.Error("a first use counted the n-gram baseline")
	}
	if secret == (TinySecret{}) || secret == testSecret(1) {
		t.Fatal("the drawn secret is not random")
	}

	// Present and good: nothing is written.
	old := setOld(t, dir)
	again, err := EnsureTiny(ctx, dir, opt)
	if err != nil || !slices.Equal(again.Shards, man.Shards) {
		t.Fatalf("second EnsureTiny: %v", err)
	}
	for _, e := range man.Shards {
		if rewritten(t, filepath.Join(dir, e.File), old) {
			t.Errorf("%s rewritten", e.File)
		}
	}

	// A corrupt shard is rebuilt from the same secret: the same bytes.
	path := filepath.Join(dir, man.Shards[1].File)
	good, _ := os.ReadFile(path)
	bad := slices.Clone(good)
	bad[HeaderBytes+10] ^= 1
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if _, err := EnsureTiny(ctx, dir, opt); err != nil {
		t.Fatalf("EnsureTiny with a corrupt shard: %v", err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, good) {
		t.Error("the corrupt shard was not restored to its bytes")
	}
	if !strings.Contains(logs.String(), "repaired a tiny shard") {
		t.Errorf("no warning of the repair in the log:\n%s", logs.String())
	}

	// A manifest whose pins the secret does not reproduce: an error,
	// and the shard is left alone.
	edited := *man
	edited.Shards = slices.Clone(man.Shards)
	edited.Shards[2].SHA256 = strings.Repeat("0", 64)
	if _, err := WriteManifest(dir, &edited); err != nil {
		t.Fatal(err)
	}
	_, err = EnsureTiny(ctx, dir, opt)
	if !errors.Is(err, ErrHashMismatch) || !strings.Contains(err.Error(), "does not match its manifest") || !strings.Contains(err.Error(), man.Shards[2].File) {
		t.Errorf("edited manifest: %v", err)
	}

	// No manifest: rebuilt from the folder's secret, the same corpus.
	if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := EnsureTiny(ctx, dir, opt)
	if err != nil || !slices.Equal(rebuilt.Shards, man.Shards) || rebuilt.Tiny.Floor.Floor != man.Tiny.Floor.Floor {
		t.Fatalf("rebuilt without a manifest: %v", err)
	}

	// Another evaluation than the manifest's gets its own floor.
	other := opt
	other.ValTokens, other.ValSeqLen = 1024, 64
	o, err := EnsureTiny(ctx, dir, other)
	if err != nil || o.Tiny.Floor.ValTokens != 1024 || o.Tiny.Floor.SeqLen != 64 || o.Tiny.Floor.Floor == man.Tiny.Floor.Floor {
		t.Errorf("floor at other settings: %v, %+v", err, o.Tiny.Floor)
	}

	// A given secret must be the folder's.
	given := opt
	s1 := testSecret(1)
	given.Secret = &s1
	if _, err := EnsureTiny(ctx, dir, given); err == nil || !strings.Contains(err.Error(), "--reseed") {
		t.Errorf("a given secret other than the folder's: %v", err)
	}

	// Reseeding draws another corpus.
	reseed := opt
	reseed.Reseed = true
	re, err := BuildTiny(ctx, dir, reseed)
	if err != nil {
		t.Fatal(err)
	}
	if re.Tiny.SecretFingerprint == man.Tiny.SecretFingerprint || re.Shards[0].SHA256 == man.Shards[0].SHA256 {
		t.Error("reseeding kept the corpus")
	}
	if ens, err := EnsureTiny(ctx, dir, opt); err != nil || !slices.Equal(ens.Shards, re.Shards) {
		t.Errorf("EnsureTiny after reseeding: %v", err)
	}

	// A secret others can read is refused by ReadTinySecret; EnsureTiny
	// makes it private again, with a warning.
	path = filepath.Join(dir, TinySecretFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTinySecret(dir); !errors.Is(err, ErrTinySecretExposed) {
		t.Errorf("ReadTinySecret of a secret readable by others: %v", err)
	}
	logs.Reset()
	if _, err := EnsureTiny(ctx, dir, opt); err != nil || !strings.Contains(logs.String(), "readable by others") {
		t.Errorf("EnsureTiny with a secret readable by others: %v\n%s", err, logs.String())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("secret file after EnsureTiny: %v, mode %v", err, st.Mode())
	}
}

// TestEnsureTinySecretRace starts several first uses at once: they must
// agree on one secret and one corpus.
func TestEnsureTinySecretRace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opt := smallBuild(TinySecret{})
	opt.Secret = nil
	const n = 4
	got := make(chan string, n)
	for range n {
		go func() {
			man, err := EnsureTiny(ctx, dir, opt)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- man.Tiny.SecretFingerprint + " " + man.Shards[0].SHA256
		}()
	}
	first := <-got
	for range n - 1 {
		if g := <-got; g != first {
			t.Errorf("concurrent first uses disagree: %q and %q", first, g)
		}
	}
}

// TestBuildTinyDefault builds the full tiny corpus of the test secret once
// and checks that its validation shard and floor are the pinned ones and
// that a verified corpus is checked again in a few stats.
func TestBuildTinyDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the full tiny corpus (17 MB) and counts its n-grams")
	}
	ctx := context.Background()
	dir := t.TempDir()
	s := testSecret(1)
	man, err := BuildTiny(ctx, dir, TinyOptions{Secret: &s})
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Shards) != 9 || man.Shards[0].SHA256 != pinnedTinyValSHA256 || man.Shards[0].Tokens != 1<<18 || man.Shards[8].Tokens != 1<<20 {
		t.Fatalf("shards %+v", man.Shards)
	}
	if math.Abs(man.Tiny.Floor.Floor-pinnedFloor) > 1e-6 {
		t.Errorf("floor %.7f, pinned %.7f", man.Tiny.Floor.Floor, pinnedFloor)
	}
	cache := &ShardCache{}
	for i, what := range []string{"first check (hashes)", "second check (stamps)"} {
		start := time.Now()
		if _, err := EnsureTiny(ctx, dir, TinyOptions{Cache: cache}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s of %d shards: %v", what, len(man.Shards), time.Since(start))
		if i == 1 && time.Since(start) > time.Second {
			t.Errorf("a check of verified shards took %v", time.Since(start))
		}
	}
}
