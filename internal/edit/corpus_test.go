package edit

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/want")

// corpusCase is one realistic model answer and what must come of it: the
// match method of every block when it applies (the child is compared with
// testdata/want/NAME.py), or the kinds of its failures (the message is
// compared with testdata/want/NAME.err).
type corpusCase struct {
	answer  string // file under testdata/answers
	program string // file under testdata/programs
	finish  string // the model's finish reason
	methods []Method
	kinds   []ErrorKind
	file    string // Block.File of the first block, when the answer names one
}

func ok(ms ...Method) []Method          { return ms }
func fails(ks ...ErrorKind) []ErrorKind { return ks }

const (
	gpt  = "train_gpt.py"
	tiny = "tiny.py"
	tabs = "tabs.py"
)

var corpus = []corpusCase{
	{answer: "001-plain-block", program: gpt, methods: ok(MatchExact)},
	{answer: "002-prose-fenced", program: gpt, methods: ok(MatchExact)},
	{answer: "003-filename-line", program: gpt, methods: ok(MatchExact), file: "train_gpt.py"},
	{answer: "004-filename-bold", program: gpt, methods: ok(MatchExact), file: "train_gpt.py"},
	{answer: "005-fence-info-filename", program: gpt, methods: ok(MatchExact), file: "train_gpt.py"},
	{answer: "006-multiple-blocks", program: gpt, methods: ok(MatchExact, MatchExact, MatchExact)},
	{answer: "007-multiple-blocks-one-fence", program: gpt, methods: ok(MatchExact, MatchExact), file: "train_gpt.py"},
	{answer: "008-crlf-answer", program: gpt, methods: ok(MatchExact)},
	{answer: "009-no-final-newline", program: gpt, methods: ok(MatchExact)},
	{answer: "010-unicode", program: gpt, methods: ok(MatchExact)},
	{answer: "011-trailing-whitespace", program: gpt, methods: ok(MatchTrailingWS)},
	{answer: "012-indentation-dedented", program: gpt, methods: ok(MatchIndentation)},
	{answer: "013-indentation-extra", program: gpt, methods: ok(MatchIndentation)},
	{answer: "014-tabs-program", program: tabs, methods: ok(MatchIndentation)},
	{answer: "015-tabs-answer", program: tiny, methods: ok(MatchIndentation)},
	{answer: "016-fuzzy-comment-drift", program: gpt, methods: ok(MatchFuzzy)},
	{answer: "017-fuzzy-missing-line", program: gpt, methods: ok(MatchFuzzy)},
	{answer: "018-block-in-outer-fence", program: gpt, methods: ok(MatchExact)},
	{answer: "019-docstring-divider", program: gpt, methods: ok(MatchExact)},
	{answer: "020-divider-in-replace", program: gpt, methods: ok(MatchExact)},
	{answer: "021-conflict-like-in-code", program: gpt, methods: ok(MatchExact)},
	{answer: "022-empty-search-insert", program: gpt, methods: ok(MatchInsert)},
	{answer: "023-empty-search-append", program: tiny, methods: ok(MatchAppend)},
	{answer: "024-full-rewrite-good", program: tiny, methods: ok(MatchRewrite)},
	{answer: "025-rewrite-largest-fence", program: tiny, methods: ok(MatchRewrite)},
	{answer: "026-leading-blank-line", program: gpt, methods: ok(MatchExact)},
	{answer: "027-line-numbers-copied", program: gpt, methods: ok(MatchExact)},
	{answer: "028-fenced-sections", program: gpt, methods: ok(MatchExact)},
	{answer: "029-marker-variants", program: gpt, methods: ok(MatchExact)},
	{answer: "030-indented-markers-list", program: gpt, methods: ok(MatchExact, MatchExact)},
	{answer: "031-sequential-blocks", program: gpt, methods: ok(MatchExact, MatchExact, MatchExact)},
	{answer: "032-protected-adjacent", program: gpt, methods: ok(MatchExact)},
	{answer: "033-rewrite-bare-python", program: tiny, methods: ok(MatchRewrite)},
	{answer: "034-truncated-in-search", program: gpt, kinds: fails(Truncated)},
	{answer: "035-truncated-in-replace", program: gpt, kinds: fails(Truncated)},
	{answer: "036-finish-length", program: gpt, finish: "length", kinds: fails(Truncated)},
	{answer: "037-missing-divider", program: gpt, kinds: fails(Malformed)},
	{answer: "038-missing-replace-marker", program: gpt, kinds: fails(Malformed)},
	{answer: "039-not-found", program: gpt, kinds: fails(NotFound)},
	{answer: "040-ambiguous", program: gpt, kinds: fails(Ambiguous)},
	{answer: "041-protected-search", program: gpt, kinds: fails(Protected)},
	{answer: "042-protected-import", program: gpt, kinds: fails(Protected)},
	{answer: "043-marker-in-replace", program: gpt, kinds: fails(Protected)},
	{answer: "044-no-edit-prose", program: gpt, kinds: fails(NoEdit)},
	{answer: "045-unified-diff", program: gpt, kinds: fails(NoEdit)},
	{answer: "046-git-conflict-style", program: gpt, kinds: fails(Malformed)},
	{answer: "047-rewrite-unclosed-fence", program: tiny, kinds: fails(Truncated)},
	{answer: "048-rewrite-open-bracket", program: tiny, kinds: fails(Truncated)},
	{answer: "049-rewrite-placeholders", program: tiny, kinds: fails(Elided)},
	{answer: "050-rewrite-snippet", program: gpt, kinds: fails(Elided)},
	{answer: "051-no-change", program: gpt, kinds: fails(NoChange)},
	{answer: "052-several-failures", program: gpt, kinds: fails(NotFound, Ambiguous)},
	{answer: "053-rewrite-touches-protected", program: gpt, kinds: fails(Protected)},
	{answer: "054-echoed-template", program: gpt, kinds: fails(NotFound)},
	{answer: "055-wrong-file", program: gpt, kinds: fails(NotFound), file: "data.py"},
	{answer: "056-empty-block", program: gpt, kinds: fails(Malformed)},
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/want/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "want", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readFile(t, path)
	if string(got) != string(want) {
		d, _ := Diff("want/"+name, "got", want, got)
		t.Errorf("%s differs from the golden file (run go test -run TestCorpus -update to accept):\n%s", name, d)
	}
}

func TestCorpus(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "answers"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(corpus) {
		t.Errorf("testdata/answers has %d files but the table has %d cases", len(entries), len(corpus))
	}
	for _, c := range corpus {
		t.Run(c.answer, func(t *testing.T) {
			answer := readFile(t, filepath.Join("testdata", "answers", c.answer+".md"))
			parent := readFile(t, filepath.Join("testdata", "programs", c.program))
			e, err := Parse(string(answer), c.finish)
			var res *Result
			if err == nil {
				if c.file != "" && (len(e.Blocks) == 0 || e.Blocks[0].File != c.file) {
					t.Errorf("first block file = %q, want %q", firstFile(e), c.file)
				}
				res, err = Apply(parent, e)
			}
			if c.kinds != nil {
				if err == nil {
					t.Fatalf("applied (%s), want failure %v", res.Summary(), c.kinds)
				}
				var got []ErrorKind
				if aes := ApplyErrors(err); len(aes) > 0 {
					for _, ae := range aes {
						got = append(got, ae.Kind)
					}
				} else {
					got = append(got, KindOf(err))
				}
				if !slices.Equal(got, c.kinds) {
					t.Errorf("failure kinds = %v, want %v; error:\n%v", got, c.kinds, err)
				}
				golden(t, c.answer+".err", []byte(err.Error()+"\n"))
				return
			}
			if err != nil {
				t.Fatalf("want success, got %v error:\n%v", KindOf(err), err)
			}
			var got []Method
			for _, m := range res.Matches {
				got = append(got, m.Method)
			}
			if !slices.Equal(got, c.methods) {
				t.Errorf("methods = %v, want %v", got, c.methods)
			}
			if err := CheckProtected(parent, res.Child); err != nil {
				t.Errorf("child changes a protected region: %v", err)
			}
			if d, st := Diff("a", "b", parent, res.Child); d == "" || st.Added+st.Removed == 0 {
				t.Errorf("empty diff for a successful edit")
			}
			golden(t, c.answer+".py", res.Child)
		})
	}
}

func firstFile(e *Edit) string {
	if len(e.Blocks) == 0 {
		return ""
	}
	return e.Blocks[0].File
}

// TestCorpusErrorsReadWell checks the shape every failure message must
// have to be handed back to a model: it names the block (when there is
// one) and says what to do.
func TestCorpusErrorsReadWell(t *testing.T) {
	for _, c := range corpus {
		if c.kinds == nil {
			continue
		}
		answer := readFile(t, filepath.Join("testdata", "answers", c.answer+".md"))
		parent := readFile(t, filepath.Join("testdata", "programs", c.program))
		e, err := Parse(string(answer), c.finish)
		if err == nil {
			_, err = Apply(parent, e)
		}
		for _, ae := range ApplyErrors(err) {
			if ae.Block > 0 && !strings.Contains(ae.Error(), "SEARCH/REPLACE block ") {
				t.Errorf("%s: message does not name the block:\n%s", c.answer, ae)
			}
			if ae.Hint == "" {
				t.Errorf("%s: %s failure has no hint", c.answer, ae.Kind)
			}
			if ae.Kind == NotFound && len(ae.Nearest) == 0 && !strings.Contains(ae.Reason, "no part") {
				t.Errorf("%s: not-found message shows no program lines:\n%s", c.answer, ae)
			}
		}
	}
}
