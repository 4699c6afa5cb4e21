package edit

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// normalizeByLines is Normalize written the plain way, line by line, the
// reference the one-pass version must match byte for byte: NormalizedHash
// values are stored, and a change would let old programs and new ones
// deduplicate differently.
func normalizeByLines(src []byte) []byte {
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	src = bytes.ReplaceAll(src, []byte("\r"), []byte("\n"))
	var out bytes.Buffer
	blank := false
	started := false
	for _, l := range bytes.Split(src, []byte("\n")) {
		l = bytes.TrimRight(l, " \t\f\v")
		if len(l) == 0 {
			blank = started
			continue
		}
		if blank {
			out.WriteByte('\n')
			blank = false
		}
		out.Write(l)
		out.WriteByte('\n')
		started = true
	}
	return out.Bytes()
}

func checkNormalize(t *testing.T, src []byte) {
	t.Helper()
	want := normalizeByLines(src)
	if got := Normalize(src); !bytes.Equal(got, want) {
		t.Fatalf("Normalize(%q) = %q, want %q", src, got, want)
	}
	if got, want := NormalizedHash(src), Hash(want); got != want {
		t.Fatalf("NormalizedHash(%q) = %s, want the hash of %q, %s", src, got, normalizeByLines(src), want)
	}
}

func TestNormalizeMatchesLineByLine(t *testing.T) {
	for _, s := range []string{"", "\n", "\n\n", "a", "a\n", "a\n\n", "\na", "\n\na\n\nb", "a\n\n\nb\n", "a \t\n\v\fb",
		"a\r\nb\rc\r\r\nd", "\r", "\r\n\r\n", " \n \n", "a\n \nb", "a\n\n \n\nb \n", "a  ", "\r\r\n\n\rx\r"} {
		checkNormalize(t, []byte(s))
	}
	prog, err := os.ReadFile(filepath.Join("testdata", "programs", "train_gpt.py"))
	if err != nil {
		t.Fatal(err)
	}
	checkNormalize(t, prog)
	checkNormalize(t, bytes.ReplaceAll(prog, []byte("\n"), []byte("\r\n")))
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab \t\f\v\r\n\n\n"
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkNormalize(t, b)
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add([]byte("a \n\n\n\tb\r\n\rc  "))
	f.Fuzz(func(t *testing.T, src []byte) { checkNormalize(t, src) })
}

func BenchmarkNormalizedHash(b *testing.B) {
	prog, err := os.ReadFile(filepath.Join("testdata", "programs", "train_gpt.py"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(prog)))
	for b.Loop() {
		NormalizedHash(prog)
	}
}
