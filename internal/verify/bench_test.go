package verify

import (
	"bytes"
	"os"
	"testing"

	"github.com/frontier-bench/frontier/internal/track"
)

// BenchmarkInspect3000 measures the harness contract's default rules on a
// 3,000-line program (the nanogpt reference repeated), with the reference
// allowance as the evaluator runs them.
func BenchmarkInspect3000(b *testing.B) {
	ref, err := os.ReadFile("../../tracks/nanogpt/train_gpt.py")
	if err != nil {
		b.Fatal(err)
	}
	var prog []byte
	for bytes.Count(prog, []byte("\n")) < 3000 {
		prog = append(prog, ref...)
	}
	prog = bytes.Join(bytes.SplitAfter(prog, []byte("\n"))[:3000], nil)
	st := NewStatic()
	opts := Options{Rules: track.DefaultStaticRules("harness"), ValFile: "fineweb_val_000000.bin"}
	base := st.baseline(ref, opts)
	b.SetBytes(int64(len(prog)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := inspect(prog, opts, base); err != nil {
			b.Fatal(err)
		}
	}
}
