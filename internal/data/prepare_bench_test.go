package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// BenchmarkPrepare runs the whole pipeline (read, parse JSONL, tokenize
// with GPT-2 on GOMAXPROCS workers, write and hash shards) on 16 MB of
// prose in documents of 1-8 KB. Run with -cpu 1,2 to see the scaling;
// MB/s counts text bytes.
func BenchmarkPrepare(b *testing.B) {
	tok := mustGPT2(b)
	text := benchText(b, 16<<20)
	rng := rand.New(rand.NewPCG(9, 10))
	var docs []string
	for p := text; len(p) > 0; {
		n := min(len(p), 1024+rng.IntN(7*1024))
		for n < len(p) && !utf8.RuneStart(p[n]) {
			n++
		}
		docs = append(docs, string(p[:n]))
		p = p[n:]
	}
	dir := b.TempDir()
	in := writeFile(b, filepath.Join(dir, "in.jsonl"), jsonlOf(b, docs...))
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	start := cpuTime()
	for i := 0; b.Loop(); i++ {
		res, err := Prepare(context.Background(), PrepareOptions{Inputs: []string{in}, Out: filepath.Join(dir, fmt.Sprint("out", i)), Tokenizer: tok, ValTokens: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		if res.TextBytes != int64(len(text)) {
			b.Fatalf("tokenized %d bytes of %d", res.TextBytes, len(text))
		}
	}
	reportCPU(b, start, int64(len(text)))
}
