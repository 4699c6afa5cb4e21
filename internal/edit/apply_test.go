package edit

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func mustParse(t *testing.T, answer string) *Edit {
	t.Helper()
	e, err := Parse(answer, "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return e
}

func block(search, replace string) string {
	return "<<<<<<< SEARCH\n" + search + "=======\n" + replace + ">>>>>>> REPLACE\n"
}

func TestApplyKeepsCRLF(t *testing.T) {
	prog := "a = 1\r\nb = 2\r\nc = 3\r\n"
	res, err := Apply([]byte(prog), mustParse(t, block("b = 2\n", "b = 20\nb2 = 5\n")))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a = 1\r\nb = 20\r\nb2 = 5\r\nc = 3\r\n"; string(res.Child) != want {
		t.Errorf("child = %q, want %q", res.Child, want)
	}
}

func TestApplyNoFinalNewline(t *testing.T) {
	prog := "a = 1\nb = 2"
	res, err := Apply([]byte(prog), mustParse(t, block("b = 2\n", "b = 3\n")))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Child) != "a = 1\nb = 3" {
		t.Errorf("child = %q", res.Child)
	}
	res, err = Apply([]byte(prog), mustParse(t, block("", "c = 4\n")))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Child) != "a = 1\nb = 2\nc = 4\n" {
		t.Errorf("append child = %q", res.Child)
	}
}

func TestApplyMatchLines(t *testing.T) {
	prog := "x = 1\ny = 2\nz = 3\n"
	res, err := Apply([]byte(prog), mustParse(t, block("y = 2\nz = 3\n", "y = 5\n")+block("x = 1\n", "x = 0\n")))
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Matches[0]; m.Block != 1 || m.Line != 2 || m.Lines != 2 || m.Method != MatchExact || m.Similarity != 1 {
		t.Errorf("match 1 = %+v", m)
	}
	if m := res.Matches[1]; m.Block != 2 || m.Line != 1 || m.Lines != 1 {
		t.Errorf("match 2 = %+v", m)
	}
	if got := res.Summary(); got != "2 blocks: exact, exact" {
		t.Errorf("Summary = %q", got)
	}
}

func TestApplyFuzzyAmbiguous(t *testing.T) {
	// Two near-copies of the same loop: a SEARCH close to both must not
	// be applied to either.
	unit := "for i in range(%s):\n    total += weights[i] * values[i]\n    count += 1\n    seen.add(i)\n"
	prog := strings.ReplaceAll(unit, "%s", "n") + "\n" + strings.ReplaceAll(unit, "%s", "m") + "\n"
	search := strings.ReplaceAll(unit, "%s", "k")
	search = strings.Replace(search, "seen.add(i)", "seen.add(i)  # mark", 1)
	_, err := Apply([]byte(prog), mustParse(t, block(search, "pass\n")))
	ae := ApplyErrors(err)
	if len(ae) != 1 || ae[0].Kind != Ambiguous || len(ae[0].Matches) != 2 {
		t.Fatalf("err = %v, want one fuzzy ambiguity with 2 matches", err)
	}
	if !strings.Contains(ae[0].Reason, "(fuzzy)") {
		t.Errorf("reason does not say the match was fuzzy: %s", ae[0].Reason)
	}
}

func TestApplyFuzzyNeedsTwoLines(t *testing.T) {
	prog := "learning_rate = 0.1\nother = 2\n"
	_, err := Apply([]byte(prog), mustParse(t, block("learning_rate = 0.2\n", "learning_rate = 0.3\n")))
	if KindOf(err) != NotFound {
		t.Fatalf("err = %v, want not_found (no fuzzy match on a single line)", err)
	}
}

func TestApplyInsertMarkers(t *testing.T) {
	one := "a = 1\n    # frontier:insert-here\nb = 2\n"
	res, err := Apply([]byte(one), mustParse(t, block("", "c = 3\n")))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Child) != "a = 1\nc = 3\n    # frontier:insert-here\nb = 2\n" || res.Matches[0].Method != MatchInsert {
		t.Errorf("child = %q (%s)", res.Child, res.Matches[0].Method)
	}
	two := one + "# frontier:insert-here\n"
	_, err = Apply([]byte(two), mustParse(t, block("", "c = 3\n")))
	if ae := ApplyErrors(err); len(ae) != 1 || ae[0].Kind != Ambiguous || len(ae[0].Matches) != 2 {
		t.Errorf("two markers: err = %v", err)
	}
	inRegion := "# frontier:protected begin r\n# frontier:insert-here\n# frontier:protected end r\n"
	_, err = Apply([]byte(inRegion), mustParse(t, block("", "c = 3\n")))
	if ae := ApplyErrors(err); len(ae) != 1 || ae[0].Kind != Protected || ae[0].Region != "r" {
		t.Errorf("marker in region: err = %v", err)
	}
}

func TestApplyRegionAsContext(t *testing.T) {
	prog := "x = 1\n# frontier:protected begin r\nv = 2\n# frontier:protected end r\ny = 3\n"
	// The whole region as context, kept as it is: allowed.
	whole := "x = 1\n# frontier:protected begin r\nv = 2\n# frontier:protected end r\ny = 3\n"
	res, err := Apply([]byte(prog), mustParse(t, block(whole, strings.Replace(whole, "x = 1", "x = 10", 1))))
	if err != nil {
		t.Fatalf("whole region kept: %v", err)
	}
	if !strings.HasPrefix(string(res.Child), "x = 10\n") {
		t.Errorf("child = %q", res.Child)
	}
	// The start of the region as context, but REPLACE drops it: refused.
	_, err = Apply([]byte(prog), mustParse(t, block("x = 1\n# frontier:protected begin r\n", "x = 10\n")))
	if KindOf(err) != Protected {
		t.Errorf("dropped marker: err = %v", err)
	}
	// Only the end marker as context, kept: allowed.
	if _, err := Apply([]byte(prog), mustParse(t, block("# frontier:protected end r\ny = 3\n", "# frontier:protected end r\ny = 4\n"))); err != nil {
		t.Errorf("end marker kept: %v", err)
	}
}

func TestApplyTrailingBlankLineInSearch(t *testing.T) {
	prog := "a = 1\nb = 2\nc = 3\n"
	res, err := Apply([]byte(prog), mustParse(t, block("b = 2\n\n", "b = 4\n\n")))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Child) != "a = 1\nb = 4\nc = 3\n" {
		t.Errorf("child = %q", res.Child)
	}
}

func TestApplyIndentationReindentsNestedLines(t *testing.T) {
	prog := "class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n"
	search := "def f(self):\n    if x:\n        return 1\n"
	repl := "def f(self):\n    if x:\n        y = 1\n        return y\n"
	res, err := Apply([]byte(prog), mustParse(t, block(search, repl)))
	if err != nil {
		t.Fatal(err)
	}
	want := "class A:\n    def f(self):\n        if x:\n            y = 1\n            return y\n        return 2\n"
	if string(res.Child) != want || res.Matches[0].Method != MatchIndentation {
		t.Errorf("child = %q (%s)", res.Child, res.Matches[0].Method)
	}
}

func TestApplyRewriteKeepsProtected(t *testing.T) {
	prog := "# frontier:protected begin r\nimport fh\n# frontier:protected end r\nx = 1\ny = 2\n"
	answer := "```python\n# frontier:protected begin r\nimport fh\n# frontier:protected end r\nx = 5\ny = 2\n```\n"
	res, err := Apply([]byte(prog), mustParse(t, answer))
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary() != "full rewrite" {
		t.Errorf("Summary = %q", res.Summary())
	}
}

func TestApplyBadProgramMarkers(t *testing.T) {
	_, err := Apply([]byte("# frontier:protected begin r\nx = 1\n"), mustParse(t, block("x = 1\n", "x = 2\n")))
	if err == nil || KindOf(err) != "" || !strings.Contains(err.Error(), "no end marker") {
		t.Errorf("err = %v, want a plain error about the program's markers", err)
	}
}

func TestParseDetails(t *testing.T) {
	answer := "utils/train.py\n```python\n" + block("a\n", "b\n") + "```\n\nAnd:\n\n```python\n" + block("c\n", "d\n") + "```\n"
	e := mustParse(t, answer)
	if len(e.Blocks) != 2 || e.Blocks[0].File != "utils/train.py" || e.Blocks[1].File != "utils/train.py" {
		t.Fatalf("blocks = %+v", e.Blocks)
	}
	if e.Blocks[0].Line != 3 || e.Blocks[1].Line != 13 || e.Blocks[1].Index != 2 {
		t.Errorf("lines/index = %d %d %d", e.Blocks[0].Line, e.Blocks[1].Line, e.Blocks[1].Index)
	}
	if e.IsRewrite() {
		t.Error("blocks answer reported as rewrite")
	}
	for _, r := range []string{"length", "MAX_TOKENS", "max_tokens"} {
		if !IsTruncatedFinish(r) {
			t.Errorf("IsTruncatedFinish(%q) = false", r)
		}
	}
	for _, r := range []string{"", "stop", "end_turn", "STOP"} {
		if IsTruncatedFinish(r) {
			t.Errorf("IsTruncatedFinish(%q) = true", r)
		}
	}
}

func TestParseEmptyAnswer(t *testing.T) {
	for _, a := range []string{"", "\n\n", "   "} {
		if _, err := Parse(a, ""); KindOf(err) != NoEdit {
			t.Errorf("Parse(%q) = %v, want no_edit", a, err)
		}
	}
}

// TestEditDistance checks the banded distance against the plain dynamic
// program on random strings.
func TestEditDistance(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randStr := func() string {
		b := make([]byte, r.IntN(30))
		for i := range b {
			b[i] = "abc d"[r.IntN(5)]
		}
		return string(b)
	}
	full := func(a, b string) int {
		prev := make([]int, len(b)+1)
		for j := range prev {
			prev[j] = j
		}
		for i := 1; i <= len(a); i++ {
			cur := make([]int, len(b)+1)
			cur[0] = i
			for j := 1; j <= len(b); j++ {
				c := 1
				if a[i-1] == b[j-1] {
					c = 0
				}
				cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
			}
			prev = cur
		}
		return prev[len(b)]
	}
	for range 2000 {
		a, b := randStr(), randStr()
		k := r.IntN(20)
		want := full(a, b)
		got := editDistance(a, b, k)
		if want <= k && got != want || want > k && got != k+1 {
			t.Fatalf("editDistance(%q, %q, %d) = %d, true distance %d", a, b, k, got, want)
		}
	}
}

func TestDiffAndHashes(t *testing.T) {
	a := []byte("x = 1\ny = 2\nz = 3\n")
	b := []byte("x = 1\ny = 5\ny2 = 6\nz = 3\n")
	d, st := Diff("parent.py", "child.py", a, b)
	if st != (Stat{Added: 2, Removed: 1}) {
		t.Errorf("stat = %+v", st)
	}
	for _, want := range []string{"--- parent.py", "+++ child.py", "-y = 2", "+y = 5", "+y2 = 6", "@@ -1,3 +1,4 @@"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if d, st := Diff("a", "b", a, a); d != "" || st != (Stat{}) {
		t.Errorf("equal programs: %q %+v", d, st)
	}

	if got := Hash(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("Hash(nil) = %s, want the SHA-256 of nothing", got)
	}
	same := []string{
		"x = 1\ny = 2\n",
		"x = 1   \r\ny = 2\r\n",
		"\n\nx = 1\n\n\n\ny = 2\n\n",
		"x = 1\t\n\ny = 2",
	}
	// Runs of blank lines collapse to one, so the first differs from the
	// others only by a blank line, which is kept.
	if NormalizedHash([]byte(same[2])) != NormalizedHash([]byte(same[3])) {
		t.Errorf("blank-run and tab variants hash differently:\n%q\n%q", Normalize([]byte(same[2])), Normalize([]byte(same[3])))
	}
	if NormalizedHash([]byte(same[0])) != NormalizedHash([]byte(same[1])) {
		t.Errorf("CRLF/trailing-space variants hash differently")
	}
	if NormalizedHash([]byte("x = 1\n# note\n")) == NormalizedHash([]byte("x = 1\n")) {
		t.Error("a comment must change the normalized hash")
	}
	if NormalizedHash([]byte("if a:\n    b\n")) == NormalizedHash([]byte("if a:\nb\n")) {
		t.Error("indentation must change the normalized hash")
	}
	if Hash(a) == Hash(b) || NormalizedHash(a) == NormalizedHash(b) {
		t.Error("different programs share a hash")
	}
}

// Apply reads the program without copying it, so nothing it returns may
// share the program's bytes: a caller that reuses its buffer afterwards
// must not change a child or the lines an error quotes.
func TestApplyKeepsNothingOfTheProgram(t *testing.T) {
	prog := []byte("import torch\nlr = 0.1\nsteps = 100\nprint(lr, steps)\n")
	res, err := Apply(prog, mustParse(t, block("lr = 0.1\n", "lr = 0.2\n")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(prog, mustParse(t, block("lr_schedule = cosine(0.3)\nsteps = 100\n", "lr = 0.2\n")))
	aes := ApplyErrors(err)
	if len(aes) != 1 || len(aes[0].Nearest) == 0 {
		t.Fatalf("a SEARCH close to lines 2-3: %v, want an error quoting the nearest lines", err)
	}
	want, quoted := string(res.Child), aes[0].Error()
	for i := range prog {
		prog[i] = 'x'
	}
	if string(res.Child) != want {
		t.Errorf("child after the program's buffer changed: %q, want %q", res.Child, want)
	}
	if got := aes[0].Error(); got != quoted {
		t.Errorf("error after the program's buffer changed:\n%s\nwant\n%s", got, quoted)
	}
}
