package edit

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/frontier-bench/frontier/internal/edit/pysrc"
)

// fence is one fenced code block of an answer.
type fence struct {
	lang   string
	info   string
	start  int // index of the opening line
	body   []string
	closed bool
}

// fences returns the top-level code fences of an answer. A fence closes at
// a line of the same fence character at least as long as its opener, so a
// ```` fence can hold ``` lines.
func fences(lines []string) []fence {
	var out []fence
	for i := 0; i < len(lines); i++ {
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, marker := m[1], m[2]
		f := fence{lang: strings.ToLower(m[3]), info: strings.TrimSpace(m[4]), start: i}
		j := i + 1
		for ; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			if len(t) >= len(marker) && t[0] == marker[0] && strings.Trim(t, marker[:1]) == "" {
				f.closed = true
				break
			}
			f.body = append(f.body, strings.TrimPrefix(lines[j], indent))
		}
		out = append(out, f)
		i = j
	}
	return out
}

func (f fence) isPython() bool {
	switch f.lang {
	case "python", "py", "python3", "py3", "python2":
		return true
	}
	return strings.HasSuffix(f.lang, ".py") || strings.HasSuffix(f.info, ".py")
}

func (f fence) isDiff() bool {
	if f.lang == "diff" || f.lang == "patch" || f.lang == "udiff" {
		return true
	}
	for _, l := range f.body {
		if strings.HasPrefix(l, "@@ ") || strings.HasPrefix(l, "--- a/") || strings.HasPrefix(l, "+++ b/") {
			return true
		}
	}
	return false
}

// parseRewrite reads a full program out of an answer without blocks: the
// largest Python code fence (the last one when two are as large), or the
// whole answer when it is bare Python source.
func parseRewrite(lines []string) (*Edit, error) {
	for i, l := range lines {
		if conflictRe.MatchString(l) {
			return nil, &ParseError{
				Kind: Malformed, Line: i + 1,
				Reason: "the answer has conflict markers but no <<<<<<< SEARCH / >>>>>>> REPLACE block.",
				Hint:   blockFormat,
			}
		}
	}
	fs := fences(lines)
	var python, untagged []fence
	diff := false
	for _, f := range fs {
		switch {
		case f.isDiff():
			diff = true
		case f.isPython():
			python = append(python, f)
		case f.lang == "":
			untagged = append(untagged, f)
		}
	}
	cands := python
	if len(cands) == 0 {
		cands = untagged
	}
	if len(cands) == 0 {
		if len(fs) == 0 && looksLikeBarePython(lines) {
			return &Edit{Rewrite: strings.Join(lines, "\n") + "\n", RewriteLine: 1}, nil
		}
		pe := &ParseError{
			Kind:   NoEdit,
			Reason: "the answer has no SEARCH/REPLACE block and no Python code fence holding a whole program.",
			Hint:   "Answer with SEARCH/REPLACE blocks that change the program. " + blockFormat,
		}
		if diff {
			pe.Reason = "the answer looks like a unified diff, which is not accepted."
		}
		return nil, pe
	}
	for _, f := range cands {
		if !f.closed {
			return nil, &ParseError{
				Kind: Truncated, Line: f.start + 1,
				Reason: "the code fence that starts here is never closed, so the answer looks cut off.",
				Hint:   "Answer again with the complete program, or better, with SEARCH/REPLACE blocks for just the lines that change.",
			}
		}
	}
	best := cands[0]
	for _, f := range cands[1:] {
		if len(f.body) >= len(best.body) {
			best = f
		}
	}
	if strings.TrimSpace(strings.Join(best.body, "\n")) == "" {
		return nil, &ParseError{
			Kind: NoEdit, Line: best.start + 1,
			Reason: "the code fence is empty.",
			Hint:   "Answer with SEARCH/REPLACE blocks that change the program. " + blockFormat,
		}
	}
	prog := strings.Join(best.body, "\n") + "\n"
	if _, sum := pysrc.Mask([]byte(prog)); sum.OpenString || sum.Depth > 0 {
		what := fmt.Sprintf("inside a string that begins on its line %d", sum.OpenStringLine)
		if !sum.OpenString {
			what = fmt.Sprintf("inside a bracket opened on its line %d", sum.OpenBracketLine)
		}
		return nil, &ParseError{
			Kind: Truncated, Line: best.start + 1,
			Reason: "the program in this code fence ends " + what + ", so it looks cut off.",
			Hint:   "Answer again with SEARCH/REPLACE blocks for just the lines that change.",
		}
	}
	return &Edit{Rewrite: prog, RewriteLine: best.start + 1}, nil
}

// looksLikeBarePython reports whether an answer without fences is a program
// rather than prose: its first non-blank line opens the way programs do.
func looksLikeBarePython(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		for _, p := range []string{"import ", "from ", "#!", `"""`, "'''", "# -*-"} {
			if strings.HasPrefix(t, p) {
				return true
			}
		}
		return false
	}
	return false
}

// placeholderRe matches lines that stand in for code a model left out.
var placeholderRe = regexp.MustCompile(`(?i)^\s*(\.\.\.|#\s*\.\.\..*|#.*\b(rest of|remaining code|unchanged|same as (before|above|original|the original)|existing code|as before|omitted|for brevity)\b.*)$`)

// checkRewrite refuses a full rewrite that is visibly incomplete next to the
// parent: placeholders where code was left out, or a fraction of the size.
func checkRewrite(parent []string, child []string, answerLine int) error {
	pn, cn := nonBlank(parent), nonBlank(child)
	var holders []Line
	for i, l := range child {
		if placeholderRe.MatchString(l) {
			holders = append(holders, Line{Num: i + 1, Text: l})
		}
	}
	if len(holders) > 0 && float64(cn) < 0.9*float64(pn) {
		if len(holders) > 5 {
			holders = holders[:5]
		}
		return &ApplyError{
			Kind:       Elided,
			AnswerLine: answerLine,
			Reason:     fmt.Sprintf("the rewritten program (%s) is shorter than the current one (%s) and has placeholders where code was left out:", plural(cn, "non-blank line"), plural(pn, "non-blank line")),
			Nearest:    holders,
			Hint:       "A full rewrite must contain the whole program. To change part of it, answer with SEARCH/REPLACE blocks instead.",
		}
	}
	if pn >= 20 && float64(cn) < 0.5*float64(pn) {
		return &ApplyError{
			Kind:       Elided,
			AnswerLine: answerLine,
			Reason:     fmt.Sprintf("the code fence holds %s but the current program has %d, so it is not the whole program.", plural(cn, "non-blank line"), pn),
			Hint:       "To change part of the program, answer with SEARCH/REPLACE blocks; a code fence without blocks is taken as the whole new program.",
		}
	}
	return nil
}

func nonBlank(ls []string) int {
	n := 0
	for _, l := range ls {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
