package edit

import (
	"fmt"
	"regexp"
	"strings"
)

// Block is one SEARCH/REPLACE block of an answer.
type Block struct {
	// Index is the 1-based position of the block in the answer.
	Index int
	// File is the file name written before the block (or carried over from
	// an earlier block), if any. It is informational: an edit applies to one
	// program.
	File string
	// Search is the text to find and Replace the text to put in its place.
	// Each line ends with "\n". An empty Search appends (see Apply).
	Search, Replace string
	// Line is the 1-based line of the answer holding the block's SEARCH
	// marker.
	Line int

	// alts holds other readings of a block whose body has several lines that
	// look like the ======= divider (for example a reStructuredText heading
	// in a docstring). Apply tries them when the first reading's SEARCH is
	// not found exactly.
	alts []reading
}

// reading is one way to split a block's body into SEARCH and REPLACE.
type reading struct{ search, replace string }

// Edit is a parsed answer: either a list of blocks or a full rewrite.
type Edit struct {
	Blocks []Block
	// Rewrite is the whole new program when the answer is a full rewrite
	// rather than blocks; "" otherwise.
	Rewrite string
	// RewriteLine is the 1-based answer line where the rewrite began.
	RewriteLine int
}

// IsRewrite reports whether e replaces the whole program.
func (e *Edit) IsRewrite() bool { return len(e.Blocks) == 0 && e.Rewrite != "" }

var (
	searchRe  = regexp.MustCompile(`^([ \t]*)<{5,9}[ \t]*(?i:search)[ \t]*:?[ \t]*$`)
	dividerRe = regexp.MustCompile(`^([ \t]*)={5,9}[ \t]*$`)
	replaceRe = regexp.MustCompile(`^[ \t]*>{5,9}[ \t]*(?i:replace)[ \t]*:?[ \t]*$`)
	// conflictRe matches git-style conflict markers that are not SEARCH/REPLACE
	// markers, to explain answers written in the wrong format.
	conflictRe = regexp.MustCompile(`^[ \t]*(<{7}|>{7})( |$)`)
	fenceRe    = regexp.MustCompile("^([ \t]*)(`{3,}|~{3,})[ \t]*([^`\\s]*)([^`]*)$")
	fileNameRe = regexp.MustCompile(`^[\w.][\w./\\-]*\.[A-Za-z0-9]{1,8}$`)
	lineNumRe  = regexp.MustCompile(`^ *\d+ \| ?`)
)

// truncatedFinish holds the finish reasons providers use for an answer cut
// at the output token limit.
var truncatedFinish = map[string]bool{"length": true, "max_tokens": true, "max_output_tokens": true}

// IsTruncatedFinish reports whether a model's finish reason means the answer
// was cut at the output token limit ("length", "max_tokens", "MAX_TOKENS").
func IsTruncatedFinish(reason string) bool {
	return truncatedFinish[strings.ToLower(strings.TrimSpace(reason))]
}

const blockFormat = "Write each block as:\n<<<<<<< SEARCH\nexact lines copied from the program\n=======\nthe lines to put in their place\n>>>>>>> REPLACE"

// Parse reads an edit out of a model's answer. finishReason is the model's
// finish reason, or ""; when it says the answer hit the output limit the
// answer is refused as Truncated, because a cut answer may miss blocks.
//
// Blocks win over code fences: a full rewrite is read only from an answer
// without SEARCH/REPLACE markers. Errors are *ParseError.
func Parse(answer, finishReason string) (*Edit, error) {
	lines := splitAnswer(answer)
	e, err := parseBlocks(lines)
	if err != nil {
		return nil, err
	}
	if len(e.Blocks) == 0 {
		e, err = parseRewrite(lines)
		if err != nil {
			return nil, err
		}
	}
	if IsTruncatedFinish(finishReason) {
		return nil, &ParseError{
			Kind:   Truncated,
			Reason: fmt.Sprintf("the answer was cut at the model's output token limit (finish reason %q), so it may be incomplete.", finishReason),
			Hint:   "Answer again with fewer or shorter SEARCH/REPLACE blocks; keep prose short.",
		}
	}
	return e, nil
}

// splitAnswer normalizes line endings and splits the answer into lines.
func splitAnswer(answer string) []string {
	if strings.IndexByte(answer, '\r') >= 0 {
		answer = strings.ReplaceAll(answer, "\r\n", "\n")
		answer = strings.ReplaceAll(answer, "\r", "\n")
	}
	answer = strings.TrimSuffix(answer, "\n")
	if answer == "" {
		return nil
	}
	return strings.Split(answer, "\n")
}

func isSearchMarker(l string) (indent string, ok bool) {
	if !strings.Contains(l, "<<<<<") {
		return "", false
	}
	m := searchRe.FindStringSubmatch(l)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func isDivider(l, indent string) bool {
	if !strings.Contains(l, "=====") {
		return false
	}
	m := dividerRe.FindStringSubmatch(l)
	return m != nil && m[1] == indent
}

func isReplaceMarker(l string) bool {
	return strings.Contains(l, ">>>>>") && replaceRe.MatchString(l)
}

func parseBlocks(lines []string) (*Edit, error) {
	e := &Edit{}
	file := ""
	for i := 0; i < len(lines); i++ {
		indent, ok := isSearchMarker(lines[i])
		if !ok {
			continue
		}
		n := len(e.Blocks) + 1
		start := i
		var dividers []int
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if isReplaceMarker(lines[j]) {
				end = j
				break
			}
			if _, ok := isSearchMarker(lines[j]); ok {
				return nil, &ParseError{
					Kind: Malformed, Block: n, Line: start + 1,
					Reason: fmt.Sprintf("the block has no >>>>>>> REPLACE line before the next <<<<<<< SEARCH at answer line %d.", j+1),
					Hint:   "End every block with a >>>>>>> REPLACE line. " + blockFormat,
				}
			}
			if isDivider(lines[j], indent) {
				dividers = append(dividers, j)
			}
		}
		if end < 0 {
			part := "SEARCH"
			if len(dividers) > 0 {
				part = "REPLACE"
			}
			return nil, &ParseError{
				Kind: Truncated, Block: n, Line: start + 1,
				Reason: fmt.Sprintf("the answer ends inside the %s part of the block: there is no >>>>>>> REPLACE line, so the answer looks cut off.", part),
				Hint:   "Answer again with complete blocks; keep prose short so the answer fits.",
			}
		}
		if len(dividers) == 0 {
			return nil, &ParseError{
				Kind: Malformed, Block: n, Line: start + 1,
				Reason: "the block has no ======= line between its SEARCH and REPLACE parts.",
				Hint:   blockFormat,
			}
		}
		if f := fileNameBefore(lines, start); f != "" {
			file = f
		}
		body := lines[start+1 : end]
		var rs []reading
		for _, d := range dividers {
			rs = append(rs, reading{
				search:  sectionText(body[:d-start-1], indent),
				replace: sectionText(body[d-start:], indent),
			})
		}
		if rs[0].search == "" && rs[0].replace == "" && len(rs) == 1 {
			return nil, &ParseError{
				Kind: Malformed, Block: n, Line: start + 1,
				Reason: "the block is empty: both its SEARCH and REPLACE parts have no lines.",
				Hint:   "Leave the block out, or put the lines to find in SEARCH and their replacement in REPLACE.",
			}
		}
		e.Blocks = append(e.Blocks, Block{
			Index: n, File: file, Line: start + 1,
			Search: rs[0].search, Replace: rs[0].replace, alts: rs[1:],
		})
		i = end
	}
	return e, nil
}

// sectionText turns the lines of a SEARCH or REPLACE part into text: it
// strips the indentation the markers had, a code fence wrapped around the
// part, and line numbers copied from an error report.
func sectionText(ls []string, indent string) string {
	if len(ls) == 0 {
		return ""
	}
	if indent != "" {
		out := make([]string, len(ls))
		for k, l := range ls {
			out[k] = strings.TrimPrefix(l, indent)
		}
		ls = out
	}
	if len(ls) >= 2 && isFenceOpen(ls[0]) && isBareFence(ls[len(ls)-1]) {
		ls = ls[1 : len(ls)-1]
	}
	if numbered(ls) {
		out := make([]string, len(ls))
		for k, l := range ls {
			out[k] = lineNumRe.ReplaceAllString(l, "")
		}
		ls = out
	}
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

// numbered reports whether every non-blank line starts with "NN | ", the
// format of the program excerpts in ApplyError messages.
func numbered(ls []string) bool {
	seen := false
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if !lineNumRe.MatchString(l) {
			return false
		}
		seen = true
	}
	return seen
}

func isFenceOpen(l string) bool {
	return fenceRe.MatchString(l)
}

func isBareFence(l string) bool {
	t := strings.TrimSpace(l)
	return len(t) >= 3 && (strings.Trim(t, "`") == "" || strings.Trim(t, "~") == "")
}

// fileNameBefore returns the file name written on the line before a block,
// or on the opening line of the code fence the block starts in.
func fileNameBefore(lines []string, marker int) string {
	k := marker - 1
	for k >= 0 && strings.TrimSpace(lines[k]) == "" && marker-k <= 2 {
		k--
	}
	if k < 0 {
		return ""
	}
	if m := fenceRe.FindStringSubmatch(lines[k]); m != nil {
		// ```python train_gpt.py  or  ```train_gpt.py
		for _, w := range append([]string{m[3]}, strings.Fields(m[4])...) {
			if f := asFileName(w); f != "" && !isLanguage(w) {
				return f
			}
		}
		k--
		for k >= 0 && strings.TrimSpace(lines[k]) == "" && marker-k <= 3 {
			k--
		}
		if k < 0 {
			return ""
		}
	}
	return asFileName(lines[k])
}

// asFileName returns the file name on a line like "train_gpt.py",
// "**train_gpt.py**", "`src/train.py`:" or "File: train.py", or "".
func asFileName(l string) string {
	t := strings.TrimSpace(l)
	t = strings.TrimLeft(t, "#>-* ")
	for _, p := range []string{"File:", "file:", "Filename:", "filename:", "Path:", "path:", "In "} {
		t = strings.TrimSpace(strings.TrimPrefix(t, p))
	}
	t = strings.Trim(t, "*`'\":")
	t = strings.TrimSpace(t)
	if fileNameRe.MatchString(t) {
		return t
	}
	return ""
}

func isLanguage(w string) bool {
	switch strings.ToLower(w) {
	case "python", "py", "python3", "diff", "text", "txt", "bash", "sh":
		return true
	}
	return false
}
