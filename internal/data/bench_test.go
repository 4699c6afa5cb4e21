package data

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkTinyGenerate measures generation of one training shard
// (1,048,576 tokens).
func BenchmarkTinyGenerate(b *testing.B) {
	p := DefaultTinyParams()
	m, err := NewTinyModel(p, testSecret(1))
	if err != nil {
		b.Fatal(err)
	}
	out := make([]uint16, p.TrainShardTokens)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		m.generateInto(1+i%p.TrainShards, out)
	}
	b.ReportMetric(float64(b.N)*float64(len(out))/b.Elapsed().Seconds()/1e6, "Mtokens/s")
}

// BenchmarkTinyModel measures building the generator's tables.
func BenchmarkTinyModel(b *testing.B) {
	p := DefaultTinyParams()
	for b.Loop() {
		if _, err := NewTinyModel(p, testSecret(1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTinyFloor measures the floor and its references at the tiny
// track's evaluation (65,536 tokens in windows of 128).
func BenchmarkTinyFloor(b *testing.B) {
	p := DefaultTinyParams()
	m, err := NewTinyModel(p, testSecret(1))
	if err != nil {
		b.Fatal(err)
	}
	val := m.Generate(0, p.ValShardTokens)
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Floor(val, DefaultTinyValTokens, DefaultTinyValSeqLen); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyTiny measures verifying the whole tiny corpus (9 shards,
// 8.65M tokens, 17 MB) with token-range checks.
func BenchmarkVerifyTiny(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s := testSecret(1)
	man, err := BuildTiny(ctx, dir, TinyOptions{Secret: &s})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Verify(ctx, dir, man.Pins(), 256); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadShard measures streaming a 1M-token shard into memory.
func BenchmarkReadShard(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	p := DefaultTinyParams()
	p.TrainShards = 1
	s := testSecret(1)
	man, err := BuildTiny(ctx, dir, TinyOptions{Params: p, Secret: &s})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, man.Shards[1].File)
	b.SetBytes(man.Shards[1].Tokens * TokenBytes)
	b.ResetTimer()
	for b.Loop() {
		if _, err := ReadShard(path, 256); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTinyNGram measures counting the n-gram baseline over the eight
// training shards (8.4M tokens) and scoring it on the validation slice.
func BenchmarkTinyNGram(b *testing.B) {
	ctx := context.Background()
	p := DefaultTinyParams()
	m, err := NewTinyModel(p, testSecret(1))
	if err != nil {
		b.Fatal(err)
	}
	val := m.Generate(0, p.ValShardTokens)
	var train [][]uint16
	for i := 1; i <= p.TrainShards; i++ {
		train = append(train, m.Generate(i, p.TrainShardTokens))
	}
	b.ResetTimer()
	for b.Loop() {
		lm, err := CountNGrams(ctx, train, p.Vocab, tinyNGramOrder)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := lm.Evaluate(ctx, val, DefaultTinyValTokens, DefaultTinyValSeqLen); err != nil {
			b.Fatal(err)
		}
	}
}
