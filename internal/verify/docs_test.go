package verify

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/track"
)

// The Python examples in docs/static-rules.md mean what they say: a line
// whose comment names a rule has that rule's finding, other lines none.
func TestDocExamples(t *testing.T) {
	b, err := os.ReadFile("../../docs/static-rules.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```python\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) < 7 {
		t.Fatalf("%d python examples", len(blocks))
	}
	ruleComment := regexp.MustCompile(`#\s*([a-z-]+)\s*$`)
	for _, m := range blocks {
		src := m[1]
		want := map[int]string{}
		for i, line := range strings.Split(src, "\n") {
			if c := ruleComment.FindStringSubmatch(line); c != nil && slices.Contains(track.StaticRuleIDs(), c[1]) {
				want[i+1] = c[1]
			}
		}
		fs, err := Inspect([]byte(src), Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]string{}
		for _, f := range fs {
			if want[f.Line] != f.Rule {
				t.Errorf("example %q: unexpected %s", firstLine(src), f)
			}
			got[f.Line] = f.Rule
		}
		for line, rule := range want {
			if got[line] != rule {
				t.Errorf("example %q: no %s finding on line %d", firstLine(src), rule, line)
			}
		}
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
