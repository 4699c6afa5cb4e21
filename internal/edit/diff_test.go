package edit

import (
	"math/rand/v2"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"
)

// diffWhole is Diff as it was written first: the library's own Lines.
func diffWhole(parentName, childName string, parent, child []byte) (string, Stat) {
	a, b := string(parent), string(child)
	if a == b {
		return "", Stat{}
	}
	return unified(parentName, childName, a, b, udiff.Lines(a, b))
}

// Diff splits the programs into lines itself; its diff must be the one
// the library's own Lines gives, on programs of few distinct lines (so
// that a change could be placed in several ways) changed in one place or
// several, with or without a final line feed, in ASCII or not.
func TestDiffSplitsAsTheLibrary(t *testing.T) {
	vocab := []string{"x = 1", "y = 2", "", "    return x", "def f():", "# note", "lr = 3e-3", "# η → 0", "\xff\xfe", "\r"}
	r := rand.New(rand.NewPCG(3, 4))
	line := func() string { return vocab[r.IntN(len(vocab))] }
	checked := 0
	for n := range 4000 {
		var lines []string
		for range r.IntN(40) {
			lines = append(lines, line())
		}
		child := append([]string(nil), lines...)
		for range 1 + r.IntN(3) {
			at := r.IntN(len(child) + 1)
			switch r.IntN(3) {
			case 0:
				child = append(child[:at], append([]string{line()}, child[at:]...)...)
			case 1:
				if at < len(child) {
					child = append(child[:at], child[at+1:]...)
				}
			default:
				if at < len(child) {
					child[at] = line()
				}
			}
		}
		a, b := strings.Join(lines, "\n"), strings.Join(child, "\n")
		if r.IntN(4) > 0 {
			a += "\n"
		}
		if r.IntN(4) > 0 {
			b += "\n"
		}
		got, gst := Diff("a", "b", []byte(a), []byte(b))
		want, wst := diffWhole("a", "b", []byte(a), []byte(b))
		if got != want || gst != wst {
			t.Fatalf("case %d: parent %q, child %q:\ngot (%+v)\n%s\nwant (%+v)\n%s", n, a, b, gst, got, wst, want)
		}
		if got != "" {
			checked++
		}
	}
	if checked < 3000 {
		t.Errorf("only %d of 4000 cases differ", checked)
	}
	for _, text := range []string{"", "\n", "a", "a\n", "a\nb", "a\n\nb\n", "\n\n"} {
		lines, offsets := splitLines(text)
		if got, want := strings.Join(lines, ""), text; got != want || len(offsets) != len(lines)+1 || offsets[len(lines)] != len(text) {
			t.Errorf("splitLines(%q) = %q, %v", text, lines, offsets)
		}
	}
}
