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

// BenchmarkInspectPathological measures inputs built to make a careless
// reader quadratic: deep brackets, a long attribute chain, many strings
// that look like module files, and a long f-string of fields.
func BenchmarkInspectPathological(b *testing.B) {
	var src bytes.Buffer
	src.WriteString("x = ")
	for range 20000 {
		src.WriteString("f(")
	}
	src.WriteString("1")
	for range 20000 {
		src.WriteString(")")
	}
	src.WriteString("\ny = a")
	for range 20000 {
		src.WriteString(".b")
	}
	src.WriteString("\n")
	for range 5000 {
		src.WriteString("open('m.py', 'w'); ")
	}
	src.WriteString("\nz = f'")
	for range 5000 {
		src.WriteString("{a:{b}}")
	}
	src.WriteString("'\n")
	prog := src.Bytes()
	b.SetBytes(int64(len(prog)))
	for b.Loop() {
		if _, err := Inspect(prog, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
