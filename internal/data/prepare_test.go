package data

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/track"
)

func writeFile(t testing.TB, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jsonlOf(t testing.TB, docs ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for i, d := range docs {
		rec, err := json.Marshal(map[string]any{"id": i, "text": d, "meta": map[string]int{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(rec)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// expectStream is what Prepare must write for docs: BOS and the tokens of
// each document, one after the other.
func expectStream(tok Tokenizer, docs ...string) []uint16 {
	enc := tok.NewEncoder()
	var out []uint16
	for _, d := range docs {
		out = append(out, tok.BOS())
		out = enc.Encode(out, []byte(d))
	}
	return out
}

// readStream reads back a prepared set: the concatenated tokens of its
// shards in order, and each shard's size. It checks that the manifest
// lists exactly the files, with their hashes, and that the names follow
// the val-first layout.
func readStream(t *testing.T, res *PrepareResult, dir, prefix string) ([]uint16, []int) {
	t.Helper()
	var all []uint16
	var sizes []int
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != len(res.Manifest.Shards) {
		t.Fatalf("manifest on disk lists %d shards, result %d", len(m.Shards), len(res.Manifest.Shards))
	}
	onDisk, err := Manifest(context.Background(), dir, prefix+"_*.bin", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != len(m.Shards) {
		t.Fatalf("%d shard files on disk, manifest lists %d", len(onDisk), len(m.Shards))
	}
	for i, s := range m.Shards {
		if s.File != ShardName(prefix, i) {
			t.Errorf("shard %d is %s, want %s", i, s.File, ShardName(prefix, i))
		}
		// Manifest sorts by name, so train files come before val there.
		j := slices.IndexFunc(onDisk, func(p track.Shard) bool { return p.File == s.File })
		if j < 0 || onDisk[j].SHA256 != s.SHA256 || onDisk[j].Tokens != s.Tokens {
			t.Errorf("manifest entry %+v does not match the file", s)
		}
		toks, err := ReadShard(filepath.Join(dir, s.File), 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, toks...)
		sizes = append(sizes, len(toks))
	}
	return all, sizes
}

func TestPrepareTxtValFirstAndShardSplit(t *testing.T) {
	ctx := context.Background()
	tok := mustGPT2(t)
	in := t.TempDir()
	docs := []string{
		"Hello world. This is the first document, with some words in it.\n",
		"Second document: numbers 1234 and caf\u00e9, and <|endoftext|> as plain text.",
		"Third.\n\nWith a blank line inside, kept: a .txt file is one document.",
	}
	var paths []string
	for i, d := range docs {
		paths = append(paths, writeFile(t, filepath.Join(in, fmt.Sprintf("doc%d.txt", i)), []byte(d)))
	}
	want := expectStream(tok, docs...)
	out := filepath.Join(t.TempDir(), "out")
	res, err := Prepare(ctx, PrepareOptions{Inputs: paths, Out: out, Prefix: "mine", Tokenizer: tok, ValTokens: 10, ShardTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	got, sizes := readStream(t, res, out, "mine")
	if !slices.Equal(got, want) {
		t.Fatalf("stream\n got %v\nwant %v", got, want)
	}
	// 10 to val, then shards of 16, the last holding the rest.
	wantSizes := []int{10}
	for left := len(want) - 10; left > 0; left -= 16 {
		wantSizes = append(wantSizes, min(left, 16))
	}
	if !slices.Equal(sizes, wantSizes) {
		t.Errorf("shard sizes %v, want %v", sizes, wantSizes)
	}
	if res.Docs != 3 || res.Tokens != int64(len(want)) || res.Manifest.Tokenizer != "gpt2" || res.Manifest.VocabSize != 50257 || res.Manifest.BOS != 50256 {
		t.Errorf("result %+v", res)
	}
	if got[0] != GPT2BOS || slices.Index(got[1:], GPT2BOS) < 0 {
		t.Error("documents do not start with BOS")
	}
	// "<|endoftext|>" in the text is seven ordinary tokens, not 50256.
	if n := strings.Count(fmt.Sprint(got), "50256"); n != 3 {
		t.Errorf("%d BOS tokens, want one per document", n)
	}
	y := res.Manifest.YAML()
	for _, s := range []string{"train: mine_train_*.bin", "val: mine_val_000000.bin", "vocab_size: 50257", "bos_id: 50256", "file: mine_val_000000.bin, tokens: 10, sha256: \""} {
		if !strings.Contains(y, s) {
			t.Errorf("YAML lacks %q:\n%s", s, y)
		}
	}
	// Every file verifies against the manifest's pins.
	if _, err := Verify(ctx, out, res.Manifest.Pins(), 50257); err != nil {
		t.Error(err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(out, ".*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestPrepareFormatsAgree(t *testing.T) {
	ctx := context.Background()
	tok := mustGPT2(t)
	in := t.TempDir()
	docs := []string{"First document.\nIt has two lines.", "Second one, \u65e5\u672c\u8a9e and emoji \U0001f600.", "Third\twith\ttabs"}
	jsonl := jsonlOf(t, docs...)
	blank := []byte(strings.Join(docs, "\n\n\n") + "\n")
	want := expectStream(tok, docs...)
	for _, c := range []struct {
		name  string
		data  []byte
		split TextSplit
	}{
		{"a.jsonl", jsonl, ""},
		{"a.jsonl.gz", gzipBytes(t, jsonl), ""},
		{"A.JSONL", jsonl, ""},
		{"b.txt", blank, SplitBlank},
		{"b.txt.gz", gzipBytes(t, blank), SplitBlank},
	} {
		path := writeFile(t, filepath.Join(in, c.name), c.data)
		out := t.TempDir()
		res, err := Prepare(ctx, PrepareOptions{Inputs: []string{path}, Out: out, Tokenizer: tok, Split: c.split, ValTokens: 5, ShardTokens: 1000})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, _ := readStream(t, res, out, DefaultPrefix); !slices.Equal(got, want) {
			t.Errorf("%s: stream\n got %v\nwant %v", c.name, got, want)
		}
		if res.Docs != 3 {
			t.Errorf("%s: %d docs", c.name, res.Docs)
		}
	}
}

func TestPrepareTxtSplits(t *testing.T) {
	ctx := context.Background()
	tok := ByteTokenizer{}
	text := "\n  \nfirst line\r\nsecond line\n \t\nthird\n\n\n  indented fourth\nfifth\n\n"
	for _, c := range []struct {
		split TextSplit
		docs  []string
	}{
		{SplitFile, []string{text}},
		{SplitBlank, []string{"first line\r\nsecond line", "third", "  indented fourth\nfifth"}},
		{SplitLine, []string{"  ", "first line", "second line", " \t", "third", "  indented fourth", "fifth"}},
	} {
		path := writeFile(t, filepath.Join(t.TempDir(), "in.txt"), []byte(text))
		out := t.TempDir()
		res, err := Prepare(ctx, PrepareOptions{Inputs: []string{path}, Out: out, Tokenizer: tok, Split: c.split, ValTokens: 3, ShardTokens: 7})
		if err != nil {
			t.Fatalf("%s: %v", c.split, err)
		}
		got, _ := readStream(t, res, out, DefaultPrefix)
		if want := expectStream(tok, c.docs...); !slices.Equal(got, want) {
			t.Errorf("%s: got %q\nwant %q", c.split, decodeBytes(got), decodeBytes(want))
		}
	}
}

// decodeBytes shows a byte-tokenizer stream with BOS as '|'.
func decodeBytes(toks []uint16) string {
	var b strings.Builder
	for _, t := range toks {
		if t == ByteBOS {
			b.WriteByte('|')
		} else {
			b.WriteByte(byte(t))
		}
	}
	return b.String()
}

func TestPrepareByteTokenizer(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "x.jsonl"), jsonlOf(t, "ab", "\u00e9"))
	out := t.TempDir()
	res, err := Prepare(context.Background(), PrepareOptions{Inputs: []string{path}, Out: out, Tokenizer: ByteTokenizer{}, ValTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, sizes := readStream(t, res, out, DefaultPrefix)
	if want := []uint16{256, 'a', 'b', 256, 0xc3, 0xa9}; !slices.Equal(got, want) || !slices.Equal(sizes, []int{2, 4}) {
		t.Errorf("got %v sizes %v", got, sizes)
	}
	if res.Manifest.VocabSize != 257 || res.Manifest.BOS != 256 || res.Manifest.Tokenizer != "byte" {
		t.Errorf("manifest %+v", res.Manifest)
	}
}

// A corpus cut into many batches, with long documents cut inside, gives
// the same bytes with any number of workers, and the same tokens as
// encoding each document whole.
func TestPrepareDeterministicAcrossWorkers(t *testing.T) {
	ctx := context.Background()
	tok := mustGPT2(t)
	rng := rand.New(rand.NewPCG(11, 12))
	in := t.TempDir()
	var docs []string
	var files []string
	for f := range 4 {
		var fileDocs []string
		for range 30 {
			n := 50 + rng.IntN(400)
			if rng.IntN(10) == 0 {
				n = 5000 + rng.IntN(5000) // longer than maxSegment: cut inside
			}
			fileDocs = append(fileDocs, randomText(rng, tok, n))
		}
		// An empty document is skipped, not written as a lone BOS.
		fileDocs = append(fileDocs, "")
		docs = append(docs, fileDocs[:len(fileDocs)-1]...)
		name := filepath.Join(in, fmt.Sprintf("part%d.jsonl", f))
		data := jsonlOf(t, fileDocs...)
		if f%2 == 1 {
			name += ".gz"
			data = gzipBytes(t, data)
		}
		files = append(files, writeFile(t, name, data))
	}
	want := expectStream(tok, docs...)
	var first *DataManifest
	for _, workers := range []int{1, 2, 5} {
		out := t.TempDir()
		res, err := Prepare(ctx, PrepareOptions{Inputs: files, Out: out, Tokenizer: tok, Workers: workers, ValTokens: 3000, ShardTokens: 20000, batchBytes: 2000, maxSegment: 1500})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := readStream(t, res, out, DefaultPrefix)
		if !slices.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("workers=%d: stream differs at token %d of %d/%d", workers, i, len(got), len(want))
		}
		if res.EmptyDocs != 4 || res.Docs != int64(len(docs)) {
			t.Errorf("workers=%d: %d docs, %d empty", workers, res.Docs, res.EmptyDocs)
		}
		if first == nil {
			first = res.Manifest
			continue
		}
		if !slices.Equal(first.Shards, res.Manifest.Shards) {
			t.Errorf("workers=%d: shards differ from workers=1:\n%v\n%v", workers, res.Manifest.Shards, first.Shards)
		}
	}
}

// A document with no white space for more than hardCut bytes would be
// held whole; it is cut at a character boundary instead and counted.
func TestPrepareLongDocumentWithoutSpaces(t *testing.T) {
	doc := strings.Repeat("\u00e9a", 1_000_000) + " " + strings.Repeat("b", 1000)
	path := writeFile(t, filepath.Join(t.TempDir(), "long.txt"), []byte(doc))
	out := t.TempDir()
	res, err := Prepare(context.Background(), PrepareOptions{Inputs: []string{path}, Out: out, Tokenizer: ByteTokenizer{}, ValTokens: 1 << 10, maxSegment: 1 << 16, hardCut: 1 << 18})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readStream(t, res, out, DefaultPrefix)
	// The reader hands on 1 MiB at a time: each of the first two is cut
	// by force; the last piece ends at the space.
	if res.ForcedCuts != 2 || !slices.Equal(got, expectStream(ByteTokenizer{}, doc)) {
		t.Errorf("%d forced cuts; stream equal: %v", res.ForcedCuts, slices.Equal(got, expectStream(ByteTokenizer{}, doc)))
	}
}

func TestPrepareBadInput(t *testing.T) {
	ctx := context.Background()
	tok := ByteTokenizer{}
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.jsonl"), jsonlOf(t, "some text here", "more text"))
	for _, c := range []struct {
		name    string
		file    string
		data    []byte
		opts    func(*PrepareOptions)
		want    []string
		wantErr error
	}{
		{name: "missing", want: []string{"missing.txt", "no such file"}},
		{name: "unknown ext", file: "data.csv", data: []byte("a,b"), want: []string{"data.csv", "unknown format", ".jsonl"}},
		{name: "malformed jsonl", file: "bad.jsonl", data: []byte("{\"text\": \"ok\"}\n\n{\"text\": \"broken\n"), want: []string{"bad.jsonl:3:", "invalid JSON"}},
		{name: "no text field", file: "nofield.jsonl", data: []byte("{\"text\": \"ok\"}\n{\"content\": \"x\", \"id\": 1}\n"), want: []string{"nofield.jsonl:2:", `no "text" field`, `"content", "id"`, "--text-field"}},
		{name: "text not a string", file: "num.jsonl", data: []byte("{\"text\": 12}\n"), want: []string{"num.jsonl:1:", `field "text" is a number, not a string`}},
		{name: "null text", file: "null.jsonl", data: []byte("{\"text\": null}\n"), want: []string{"null.jsonl:1:", "null"}},
		{name: "not an object", file: "arr.jsonl", data: []byte("[1, 2]\n"), want: []string{"arr.jsonl:1:", "JSON object per line"}},
		{name: "strict utf8", file: "latin1.txt", data: []byte("line one\nline two\ncaf\xe9\n"), opts: func(o *PrepareOptions) { o.StrictUTF8 = true }, want: []string{"latin1.txt:3:", "invalid UTF-8", "0xe9"}, wantErr: ErrInvalidUTF8},
		{name: "strict utf8 split by lines", file: "latin1b.txt", data: []byte("line one\n\ncaf\xe9\n"), opts: func(o *PrepareOptions) { o.StrictUTF8, o.Split = true, SplitBlank }, want: []string{"latin1b.txt:3:", "invalid UTF-8"}, wantErr: ErrInvalidUTF8},
		{name: "corrupt gzip", file: "c.txt.gz", data: []byte("not gzip at all"), want: []string{"c.txt.gz", "not a valid gzip file"}},
		{name: "truncated gzip", file: "t.jsonl.gz", data: truncatedGzip(t), want: []string{"t.jsonl.gz", "gzip", "corrupt or truncated"}},
		{name: "all validation", file: "small.txt", data: []byte("tiny"), want: []string{"5 tokens", "none are left for training", "--val-tokens"}},
		{name: "no text", file: "empty.jsonl", data: []byte("{\"text\": \"\"}\n"), want: []string{"no text", "1 empty"}},
		{name: "bad prefix", file: "p.txt", data: []byte("x"), opts: func(o *PrepareOptions) { o.Prefix = "a_b" }, want: []string{"prefix", "underscores"}},
		{name: "bad split", file: "s.txt", data: []byte("x"), opts: func(o *PrepareOptions) { o.Split = "para" }, want: []string{"para", "blank"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "missing.txt")
			if c.file != "" {
				path = writeFile(t, filepath.Join(dir, c.file), c.data)
			}
			out := filepath.Join(t.TempDir(), "out")
			o := PrepareOptions{Inputs: []string{good, path}, Out: out, Tokenizer: tok, ValTokens: 1}
			if c.name == "all validation" || c.name == "no text" {
				o.Inputs, o.ValTokens = []string{path}, 100
			}
			if c.opts != nil {
				c.opts(&o)
			}
			_, err := Prepare(ctx, o)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("error is not %v: %v", c.wantErr, err)
			}
			// Nothing is left behind, not even the folder it made.
			if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the output folder it made is left behind: %v", err)
			}
			if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if left, _ := filepath.Glob(filepath.Join(out, ".*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// truncatedGzip is the first half of a compressed JSONL file.
func truncatedGzip(t *testing.T) []byte {
	rng := rand.New(rand.NewPCG(1, 1))
	var b strings.Builder
	for range 3000 {
		b.WriteByte(byte('a' + rng.IntN(26)))
	}
	z := gzipBytes(t, jsonlOf(t, b.String()))
	return z[:len(z)/2]
}

func TestPrepareReplacesInvalidUTF8(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "l.txt"), []byte("caf\xe9 and \xff\xfe end"))
	out := t.TempDir()
	res, err := Prepare(context.Background(), PrepareOptions{Inputs: []string{path}, Out: out, Tokenizer: ByteTokenizer{}, ValTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readStream(t, res, out, DefaultPrefix)
	if want := expectStream(ByteTokenizer{}, "caf\uFFFD and \uFFFD end"); !slices.Equal(got, want) {
		t.Errorf("got %q", decodeBytes(got))
	}
	if res.InvalidUTF8 != 2 {
		t.Errorf("%d replacements, want 2", res.InvalidUTF8)
	}
}

func TestUTF8FixerAcrossChunks(t *testing.T) {
	text := []byte("a\u00e9b\u65e5c\U0001f600d")
	for cut := range len(text) + 1 {
		fx := utf8Fixer{}
		var got []byte
		p, err := fx.fix(text[:cut], false)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p...)
		p, err = fx.fix(text[cut:], true)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p...)
		if !bytes.Equal(got, text) || fx.replaced != 0 {
			t.Errorf("cut at %d: %q, %d replaced", cut, got, fx.replaced)
		}
	}
}

func TestPrepareExistingOutput(t *testing.T) {
	ctx := context.Background()
	path := writeFile(t, filepath.Join(t.TempDir(), "a.txt"), []byte("some text to prepare"))
	out := t.TempDir()
	o := PrepareOptions{Inputs: []string{path}, Out: out, Tokenizer: ByteTokenizer{}, ValTokens: 4, ShardTokens: 4}
	if _, err := Prepare(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(ctx, o); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second run without force: %v", err)
	}
	// With force, and fewer shards this time: no stale shard survives.
	o.Force, o.ShardTokens = true, 100
	res, err := Prepare(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(out, "corpus_*.bin")); len(files) != 2 || len(res.Manifest.Shards) != 2 {
		t.Errorf("files %v", files)
	}
}

func TestPrepareCancelled(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "a.txt"), bytes.Repeat([]byte("words and more words "), 250000))
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the first shard is being written, as Ctrl-C would.
	_, err := Prepare(ctx, PrepareOptions{Inputs: []string{path}, Out: out, Tokenizer: ByteTokenizer{}, ValTokens: 1000, ShardTokens: 100000, batchBytes: 1000, maxSegment: 1000,
		ProgressEvery: time.Millisecond,
		Progress: func(p Progress) {
			if p.Tokens > 0 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cancelled run: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(out, ".*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestExpandInputs(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "b", "a.txt"), []byte("x"))
	b := writeFile(t, filepath.Join(dir, "b", "sub", "b.jsonl.gz"), []byte("x"))
	writeFile(t, filepath.Join(dir, "b", "notes.md"), []byte("x"))
	c := writeFile(t, filepath.Join(dir, "c1.txt"), []byte("x"))
	d := writeFile(t, filepath.Join(dir, "c2.txt"), []byte("x"))
	got, err := ExpandInputs([]string{filepath.Join(dir, "b"), filepath.Join(dir, "c*.txt"), a})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a, b, c, d}; !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{filepath.Join(dir, "nope.txt")}, {filepath.Join(dir, "z*.txt")}, {}, {filepath.Join(dir, "empty")}} {
		if _, err := ExpandInputs(bad); err == nil {
			t.Errorf("ExpandInputs(%v): no error", bad)
		}
	}
}

// A long document is handed on in pieces cut at safe places; only the
// first piece starts with BOS.
func TestBatcherCutsLongDocuments(t *testing.T) {
	out := make(chan *batch, 100)
	b := &batcher{ctx: context.Background(), out: out, slots: make(chan struct{}, 100), target: 1 << 20, maxSegment: 1500, cur: &batch{}}
	doc := []byte(randomText(rand.New(rand.NewPCG(1, 2)), mustGPT2(t), 20000))
	if err := b.begin(); err != nil {
		t.Fatal(err)
	}
	for p := doc; len(p) > 0; {
		n := min(len(p), 700)
		if err := b.write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := b.end(); err != nil {
		t.Fatal(err)
	}
	if err := b.flush(); err != nil {
		t.Fatal(err)
	}
	close(out)
	var joined []byte
	n := 0
	for bt := range out {
		if len(bt.segs) != 1 || bt.segs[0].bos != (n == 0) || bt.seq != int64(n) {
			t.Errorf("batch %d: segments %+v", n, bt.segs)
		}
		if n > 0 && !safeSplit(append(joined, bt.text...), len(joined)) {
			t.Errorf("batch %d starts at an unsafe place", n)
		}
		joined = append(joined, bt.text...)
		n++
	}
	if n < 8 || !bytes.Equal(joined, doc) {
		t.Errorf("%d batches; joined text equal: %v", n, bytes.Equal(joined, doc))
	}
}

func TestJSONTextField(t *testing.T) {
	for _, c := range []struct {
		rec, field, want, err string
	}{
		{`{"text": "a"}`, "text", "a", ""},
		{`{"id": 1, "text": "a\nb \u00e9 \ud83d\ude00", "x": [1, {"text": 2}]}`, "text", "a\nb \u00e9 \U0001f600", ""},
		{`{"Text": "upper"}`, "text", "", `no "text" field (the object has "Text")`},
		{`{"text": "lower", "TEXT": "upper"}`, "text", "lower", ""},
		{`{"TEXT": "upper", "text": "lower"}`, "text", "lower", ""},
		{`{"content": "c", "text": "t"}`, "content", "c", ""},
		{`{"te\"xt": "q", "te\"xt2": 1}`, `te"xt`, "q", ""},
		{`{"text": "\ud800 lone"}`, "text", "\uFFFD lone", ""},
		{`{"text": ["a"]}`, "text", "", "is an array"},
		{`{"text": true}`, "text", "", "is a boolean"},
		{`"just a string"`, "text", "", "JSON object per line"},
		{`{"text": "a"} trailing`, "text", "", "invalid JSON"},
	} {
		got, err := newTextDecoder(c.field).text([]byte(c.rec))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.rec, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %q, %v; want %q", c.rec, got, err, c.want)
		}
	}
}
