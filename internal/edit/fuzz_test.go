package edit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func addCorpusSeeds(f *testing.F, withProgram bool) {
	f.Helper()
	prog, err := os.ReadFile(filepath.Join("testdata", "programs", "train_gpt.py"))
	if err != nil {
		f.Fatal(err)
	}
	answers, err := filepath.Glob(filepath.Join("testdata", "answers", "*.md"))
	if err != nil {
		f.Fatal(err)
	}
	for _, a := range answers {
		b, err := os.ReadFile(a)
		if err != nil {
			f.Fatal(err)
		}
		if withProgram {
			f.Add(string(prog), string(b))
		} else {
			f.Add(string(b))
		}
	}
}

// FuzzParse checks that Parse never panics and that what it returns is
// well formed: numbered blocks with answer lines in range, or a non-empty
// rewrite, or a *ParseError.
func FuzzParse(f *testing.F) {
	addCorpusSeeds(f, false)
	f.Add("<<<<<<< SEARCH\n=======\n=======\n>>>>>>> REPLACE")
	f.Add("```python\n(\n```")
	f.Add("\r<<<<<<< SEARCH\r=======\r>>>>>>> REPLACE\r")
	f.Fuzz(func(t *testing.T, answer string) {
		e, err := Parse(answer, "")
		if err != nil {
			if KindOf(err) == "" {
				t.Fatalf("error is not a *ParseError: %v", err)
			}
			return
		}
		n := len(splitAnswer(answer))
		if len(e.Blocks) == 0 && e.Rewrite == "" {
			t.Fatal("no blocks and no rewrite without an error")
		}
		for i, b := range e.Blocks {
			if b.Index != i+1 || b.Line < 1 || b.Line > n {
				t.Fatalf("block %d: index %d line %d (answer has %d lines)", i, b.Index, b.Line, n)
			}
			if (b.Search != "" && !strings.HasSuffix(b.Search, "\n")) || (b.Replace != "" && !strings.HasSuffix(b.Replace, "\n")) {
				t.Fatalf("block %d: text without a final newline: %q / %q", i, b.Search, b.Replace)
			}
		}
	})
}

// FuzzApply checks that parsing and applying any answer to any program
// never panics, and that a successful edit changes the program without
// touching its protected regions.
func FuzzApply(f *testing.F) {
	addCorpusSeeds(f, true)
	f.Add("a = 1\n# frontier:protected begin r\nb = 2\n# frontier:protected end r\n", block("b = 2\n", "b = 3\n"))
	f.Add("\tx\n  y\n", block("x\n y\n", "z\n"))
	f.Fuzz(func(t *testing.T, program, answer string) {
		e, err := Parse(answer, "")
		if err != nil {
			return
		}
		res, err := Apply([]byte(program), e)
		if err != nil {
			if len(ApplyErrors(err)) == 0 && KindOf(err) == "" && !strings.HasPrefix(err.Error(), "program: ") {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if string(res.Child) == program {
			t.Fatal("successful edit left the program unchanged")
		}
		if _, rerr := Regions([]byte(program)); rerr == nil {
			if err := CheckProtected([]byte(program), res.Child); err != nil {
				t.Fatalf("successful edit changed a protected region: %v", err)
			}
		}
		if !e.IsRewrite() && len(res.Matches) != len(e.Blocks) {
			t.Fatalf("%d matches for %d blocks", len(res.Matches), len(e.Blocks))
		}
	})
}
