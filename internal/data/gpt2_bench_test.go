package data

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// proseText returns English-like prose: words drawn from GPT-2's own
// vocabulary with a Zipf law over their ids (BPE ids follow frequency
// roughly), one word in ten drawn (also by a Zipf law) from 50,000 words
// made up of two vocabulary words, which need merging, capitalized
// sentences, commas, quotes, numbers and paragraphs. It stands in for web
// text in benchmarks, which cannot download any.
func proseText(rng *rand.Rand, tok *GPT2, n int) []byte {
	var words []string
	for id := range uint16(50256) {
		w := string(tok.Decode([]uint16{id}))
		if len(w) >= 3 && w[0] == ' ' && isLowerASCII(w[1:]) {
			words = append(words, w[1:])
		}
	}
	rare := make([]string, 50000)
	for i := range rare {
		rare[i] = words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1))
	zipfRare := rand.NewZipf(rng, 1.05, 1, uint64(len(rare)-1))
	var b strings.Builder
	startSentence := true
	for b.Len() < n {
		w := words[zipf.Uint64()]
		if rng.IntN(10) == 0 {
			w = rare[zipfRare.Uint64()]
		}
		if startSentence {
			r, size := utf8.DecodeRuneInString(w)
			w = string(unicode.ToUpper(r)) + w[size:]
			startSentence = false
		}
		b.WriteString(w)
		switch k := rng.IntN(100); {
		case k < 7:
			b.WriteString(". ")
			startSentence = true
		case k < 8:
			b.WriteString(".\n\n")
			startSentence = true
		case k < 13:
			b.WriteString(", ")
		case k < 14:
			b.WriteString("'s ")
		case k < 15:
			b.WriteString(" \"")
		case k < 16:
			b.WriteString(" (")
			b.WriteString(strings.Repeat("1", 1+rng.IntN(4)))
			b.WriteString(") ")
		default:
			b.WriteByte(' ')
		}
	}
	return []byte(b.String())
}

func isLowerASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// benchText is the text benchmarks tokenize: the file named by
// $FRONTIER_BENCH_TEXT when set (to measure on real text), else n bytes of
// proseText.
func benchText(b *testing.B, n int) []byte {
	if path := os.Getenv("FRONTIER_BENCH_TEXT"); path != "" {
		text, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		return bytes.ToValidUTF8(text, []byte("\uFFFD"))
	}
	return proseText(rand.New(rand.NewPCG(7, 8)), mustGPT2(b), n)
}

// reportCPU reports throughput per second of CPU time used by the whole
// process, next to the wall-clock MB/s that SetBytes gives: on a shared
// machine the wall clock also counts time the neighbours took.
func reportCPU(b *testing.B, start time.Duration, bytes int64) {
	if used := cpuTime() - start; used > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/1e6/used.Seconds(), "MB/cpu-s")
	}
}

// BenchmarkGPT2Encode is one encoder on one core: the per-core speed of
// Prepare's workers.
func BenchmarkGPT2Encode(b *testing.B) {
	tok := mustGPT2(b)
	text := benchText(b, 4<<20)
	enc := tok.NewEncoder()
	dst := make([]uint16, 0, len(text))
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		dst = enc.Encode(dst[:0], text)
	}
	reportCPU(b, start, int64(len(text)))
	b.ReportMetric(float64(len(text))/float64(len(dst)), "bytes/token")
}

// BenchmarkTiktokenGo is the reference implementation on the same text,
// for comparison.
func BenchmarkTiktokenGo(b *testing.B) {
	tok := mustGPT2(b)
	ref := tiktokenGPT2(b)
	text := string(benchText(b, 1<<20))
	_ = tok
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		ref.EncodeOrdinary(text)
	}
	reportCPU(b, start, int64(len(text)))
}
