package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/data"
)

func TestDataBuildAndVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the full tiny corpus (17 MB)")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "tiny")
	var out bytes.Buffer
	o := dataBuildOptions{out: dir, valTokens: 65536, valSeqLen: 128}
	if err := runDataBuildTiny(ctx, &out, slog.New(slog.DiscardHandler), o); err != nil {
		t.Fatal(err)
	}
	secret, err := data.ReadTinySecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	man, err := data.ReadManifest(dir)
	if err != nil || man.Tiny == nil {
		t.Fatalf("manifest: %v", err)
	}
	for _, want := range []string{
		data.TinyValFile, "tiny_train_000008.bin", "1048576", man.Shards[0].SHA256,
		"fingerprint " + secret.Fingerprint(),
		fmt.Sprintf("loss floor (Bayes-optimal, window context)  %.4f", man.Tiny.Floor.Floor),
		fmt.Sprintf("n-gram baseline (Kneser-Ney, order %d, counted from 8388608 training tokens)  %.4f", man.Tiny.NGram.Best.Order, man.Tiny.NGram.Best.Loss),
		"bigram reference", "unigram reference", "full-context entropy",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("build output lacks %q:\n%s", want, out.String())
		}
	}

	// The manifest pins the shards; verify reads them from the folder.
	out.Reset()
	if err := runDataVerify(ctx, &out, dir, man.Pins(), 256, "", false); err != nil || !strings.Contains(out.String(), "all 9 pinned shards") {
		t.Fatalf("verify against the manifest: %v\n%s", err, out.String())
	}

	out.Reset()
	if err := runDataVerify(ctx, &out, dir, nil, 256, "*.bin", false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "9 shards, 8650752 tokens") {
		t.Errorf("verify output:\n%s", out.String())
	}
	pins, err := data.Manifest(ctx, dir, "*.bin", 0)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runDataVerify(ctx, &out, dir, pins, 256, "", false); err != nil {
		t.Fatalf("verify against pins: %v\n%s", err, out.String())
	}

	// A corrupt shard fails both ways, naming the file.
	path := filepath.Join(dir, "tiny_train_000003.bin")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-2], 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = runDataVerify(ctx, &out, dir, pins, 256, "", false)
	if exitCode(err) != exitFailure || !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "tiny_train_000003.bin: shard truncated") {
		t.Errorf("pinned verify of a truncated shard: %v\n%s", err, out.String())
	}
	err = runDataVerify(ctx, &out, dir, nil, 0, "*.bin", false)
	if !errors.Is(err, data.ErrTruncated) || !strings.Contains(err.Error(), "tiny_train_000003.bin") {
		t.Errorf("manifest verify of a truncated shard: %v", err)
	}
}

func TestDataCommandBadInput(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"data", "build", "fineweb"}, exitUsage, "only the synthetic corpus"},
		{[]string{"data", "build", "tiny", "--val-tokens", "100"}, exitUsage, "multiple of --val-seq-len"},
		{[]string{"data", "build", "tiny", "--val-tokens", "262144"}, exitUsage, "val shard holds"},
		{[]string{"data", "verify", filepath.Join(home, "nowhere")}, exitUsage, "nowhere is not a folder of shards"},
		{[]string{"data", "verify"}, exitUsage, "name the folder to verify, or a track with --track"},
		{[]string{"data", "verify", "a", "b"}, exitUsage, "accepts between 0 and 1 arg"},
		{[]string{"data", "verify", home, "--track", "no-such-track"}, exitUsage, "no-such-track"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append([]string{"--home", home}, c.args...), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// data verify --track NAME finds the track's data folder itself; --json
// prints every shard in snake_case.
func TestDataVerifyTrackByName(t *testing.T) {
	home := t.TempDir()
	code, out, stderr := runCLI(t, "--home", home, "data", "build", "tiny", "--json")
	var built dataBuildJSON
	if err := json.Unmarshal([]byte(out), &built); err != nil || code != 0 || len(built.Shards) != 9 || built.Loss.Floor <= 0 {
		t.Fatalf("data build tiny --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	code, out, stderr = runCLI(t, "--home", home, "data", "verify", "--track", "tiny", "--json")
	var got dataVerifyJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || !got.OK || !got.Pinned || len(got.Shards) != 9 ||
		got.Dir != filepath.Join(home, "data", "tiny") || got.Shards[0].SHA256 == "" {
		t.Fatalf("verify --track tiny --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if !strings.Contains(out, `"sha256": "`) || strings.Contains(out, `"SHA256"`) {
		t.Errorf("keys are not snake_case:\n%s", out)
	}
}
