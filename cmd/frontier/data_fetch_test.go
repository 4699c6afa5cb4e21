package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/data"
)

// TestDataFetchCommand runs `frontier data fetch` against a local hub
// named by HF_ENDPOINT, with a token from HF_TOKEN.
func TestDataFetchCommand(t *testing.T) {
	files := map[string][]byte{}
	for i, name := range []string{"fineweb_val_000000.bin", "fineweb_train_000001.bin"} {
		toks := make([]uint16, 5000+i)
		for j := range toks {
			toks[j] = uint16((j * 7919) % 50257)
		}
		b, err := data.EncodeShard(toks)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		name, ok := strings.CutPrefix(r.URL.Path, "/datasets/kjj0/fineweb10B-gpt2/resolve/main/")
		b, found := files[name]
		if !ok || !found {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer hf_cli_secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	home := t.TempDir()
	ctx := context.Background()

	var stdout, stderr bytes.Buffer
	t.Setenv("HF_TOKEN", "")
	if code := run(ctx, []string{"--home", home, "data", "fetch", "fineweb10B", "--train-shards", "1"}, &stdout, &stderr); code != exitFailure || !strings.Contains(stderr.String(), "set HF_TOKEN") {
		t.Fatalf("without a token: exit %d\n%s", code, stderr.String())
	}

	t.Setenv("HF_TOKEN", "hf_cli_secret")
	stdout.Reset()
	stderr.Reset()
	if code := run(ctx, []string{"--home", home, "data", "fetch", "fineweb10B", "--train-shards", "1"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	dir := filepath.Join(home, "data", "fineweb10B")
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, want := range []string{"# fineweb10B: 2 files in " + dir, "2 downloaded", "data:\n  train: fineweb_train_*.bin\n  val: fineweb_val_000000.bin\n  vocab_size: 50257\n  bos_id: 50256\n  shards:\n", "- {file: fineweb_val_000000.bin, tokens: 5000, sha256: \"", "- {file: fineweb_train_000001.bin, tokens: 5001, sha256: \""} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String()+stderr.String(), "hf_cli_secret") {
		t.Error("the token was printed")
	}
	if !strings.Contains(stderr.String(), "progress") || !strings.Contains(stderr.String(), "files=2/2") {
		t.Errorf("no final progress line:\n%s", stderr.String())
	}
	// A request of the first fetch, abandoned by it after the other's
	// 401, may reach the server late: look for the token, not at the end.
	mu.Lock()
	if !slices.Contains(auths, "Bearer hf_cli_secret") {
		t.Errorf("Authorization headers %q: none carries the token", auths)
	}
	mu.Unlock()

	stdout.Reset()
	if code := run(ctx, []string{"--home", home, "data", "verify", dir, "--manifest", dir}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "all 2 pinned shards") {
		t.Errorf("verify --manifest: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

func TestDataPrepareCommand(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	in := filepath.Join(home, "in.jsonl")
	if err := os.WriteFile(in, []byte("{\"text\": \"hello world\"}\n{\"text\": \"second document\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(home, "out")
	var stdout, stderr bytes.Buffer
	args := []string{"--home", home, "data", "prepare", "--input", in, "--out", out, "--val-tokens", "5", "--shard-tokens", "10"}
	if code := run(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	// "hello world" is 2 GPT-2 tokens and "second document" 2: with BOS, 6.
	for _, want := range []string{"# 2 documents (0 empty skipped)", "6 tokens (gpt2), 2 shards", "MB/s of text", "val: corpus_val_000000.bin", "- {file: corpus_val_000000.bin, tokens: 5, sha256:", "- {file: corpus_train_000001.bin, tokens: 1, sha256:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	toks, err := data.ReadShard(filepath.Join(out, "corpus_val_000000.bin"), 50257)
	if err != nil || len(toks) != 5 || toks[0] != 50256 || toks[1] != 31373 || toks[2] != 995 || toks[3] != 50256 {
		t.Errorf("val shard %v, %v", toks, err)
	}
	stdout.Reset()
	if code := run(ctx, []string{"--home", home, "data", "verify", out, "--manifest", filepath.Join(out, data.ManifestFile)}, &stdout, &stderr); code != exitOK {
		t.Errorf("verify: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	// Again: refused without --force, done with it.
	stderr.Reset()
	if code := run(ctx, args, &stdout, &stderr); code != exitFailure || !strings.Contains(stderr.String(), "--force") {
		t.Errorf("second run: exit %d\n%s", code, stderr.String())
	}
	if code := run(ctx, append(args, "--force", "--tokenizer", "byte", "--txt-split", "line"), &stdout, &stderr); code != exitOK {
		t.Errorf("--force: exit %d\n%s", code, stderr.String())
	}
}

func TestDataFetchPrepareBadInput(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	bad := filepath.Join(home, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"text\": \"ok\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"data", "fetch", "fineweb1T"}, exitUsage, "unknown dataset"},
		{[]string{"data", "fetch", "fineweb10B", "--train-shards", "104"}, exitUsage, "0 to 103"},
		{[]string{"data", "fetch", "finewebedu10B", "--train-shards", "100"}, exitUsage, "0 to 99"},
		{[]string{"data", "fetch", "fineweb10B", "--jobs", "0"}, exitUsage, "--jobs"},
		{[]string{"data", "prepare"}, exitUsage, "no input"},
		{[]string{"data", "prepare", "--input", filepath.Join(home, "none.txt")}, exitUsage, "none.txt: no such file"},
		{[]string{"data", "prepare", "--input", bad, "--tokenizer", "llama"}, exitUsage, "unknown tokenizer"},
		{[]string{"data", "prepare", "--input", bad, "--txt-split", "para"}, exitUsage, "unknown .txt split"},
		{[]string{"data", "prepare", "--input", bad, "--val-tokens", "1"}, exitFailure, "bad.jsonl:2: invalid JSON"},
		{[]string{"data", "verify", home, "--manifest", home}, exitUsage, "manifest"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append([]string{"--home", home}, c.args...), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	p := data.Progress{Op: "fetch", Done: 1_500_000_000, Total: 3_000_000_000, Rate: 45_600_000, ETA: 33 * time.Second, Files: 10, FilesDone: 4}
	if got, want := progressLine(p), "fetch  1.5 GB of 3.0 GB (50%)  45.6 MB/s  ETA 33s  4/10 files"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 123_456_789: "123.5 MB", 2_000_000_000_000: "2.0 TB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	var buf bytes.Buffer
	pp := &progressPrinter{w: &buf, live: true}
	pp.show(p)
	p.Final = true
	pp.show(p)
	if !strings.HasPrefix(buf.String(), "\rfetch") || !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("live output %q", buf.String())
	}
}
