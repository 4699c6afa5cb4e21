package edit

import (
	"bytes"
	"iter"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// everyLine yields every line of src, the plain way: the reference for
// wordLines, which jumps from one mention of the marker word to the next.
func everyLine(src []byte) iter.Seq[srcLine] {
	return func(yield func(srcLine) bool) {
		for start, num := 0, 1; start < len(src); num++ {
			l := srcLine{num: num, start: start, end: len(src), next: len(src)}
			if end := bytes.IndexByte(src[start:], '\n'); end >= 0 {
				l.end, l.next = start+end, start+end+1
			}
			if !yield(l) {
				return
			}
			start = l.next
		}
	}
}

func TestRegionsMatchesEveryLine(t *testing.T) {
	lines := []string{"x = 1", "", "# frontier:protected begin a", "# frontier:protected end a", "  # frontier:protected begin b\r",
		"\t# frontier:protected end b", "# frontier:protected bogus", "s = 'frontier:protected'", "# frontier:protected begin a # frontier:protected",
		"# note", "frontier:protected", "#frontier:protected end a"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(lines[rng.IntN(len(lines))])
			b.WriteByte('\n')
		}
		src := []byte(b.String())
		if rng.IntN(3) == 0 && len(src) > 0 {
			src = src[:len(src)-1]
		}
		want, wantErr := regionsIn(src, everyLine(src))
		got, err := Regions(src)
		if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("Regions(%q) = %+v, %v; want %+v, %v", src, got, err, want, wantErr)
		}
	}
}
