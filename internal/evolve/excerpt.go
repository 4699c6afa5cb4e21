package evolve

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What a fix prompt shows of the program. A fix needs the lines the error
// points at and the lines the change touched, copied exactly (SEARCH must
// match them), not the whole program every time: the fix prompts
// re-sent 10.8k characters each, and fix calls were 55% of a run's calls.
// A short program is still shown whole.

// wholeProgramChars is the size under which a fix prompt shows the whole
// program: excerpts would save little and lose the overview.
const wholeProgramChars = 4000

// excerptContext is how many lines around each anchor an excerpt keeps.
const excerptContext = 12

// excerptView is one window of the program, shown in its own code block.
type excerptView struct {
	From, To int // 1-based, inclusive
	Text     string
}

var (
	// nearestLineRe finds the program lines an edit error quotes
	// ("  123 | code").
	nearestLineRe = regexp.MustCompile(`(?m)^\s*(\d+) \| `)
	// hunkRe finds the new side of a unified diff's hunks.
	hunkRe = regexp.MustCompile(`(?m)^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)
)

// errorAnchors are the lines of the program named name that an error text
// points at: a traceback's `File "name", line N` and an edit error's
// quoted lines.
func errorAnchors(text, name string) []int {
	var out []int
	re := regexp.MustCompile(`File "[^"]*` + regexp.QuoteMeta(name) + `", line (\d+)`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, n)
		}
	}
	for _, m := range nearestLineRe.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// diffAnchors are the lines of the new program a unified diff changed.
func diffAnchors(diff string) []int {
	var out []int
	for _, m := range hunkRe.FindAllStringSubmatch(diff, -1) {
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		for i := 0; i < max(n, 1); i++ {
			out = append(out, start+i)
		}
	}
	return out
}

// excerpts cuts src into the windows around anchors (context lines each
// side, overlapping windows merged). It returns nil, meaning "show the
// whole program", when the program is short, when there is nothing to
// anchor on, or when the windows would hold most of it anyway.
func excerpts(src []byte, anchors []int, context int) []excerptView {
	if len(src) <= wholeProgramChars || len(anchors) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	anchors = slices.Clone(anchors)
	slices.Sort(anchors)
	var out []excerptView
	shown := 0
	for _, a := range anchors {
		if a < 1 || a > len(lines) {
			continue
		}
		from, to := max(1, a-context), min(len(lines), a+context)
		if n := len(out); n > 0 && from <= out[n-1].To+1 {
			out[n-1].To = max(out[n-1].To, to)
			continue
		}
		out = append(out, excerptView{From: from, To: to})
	}
	for i := range out {
		out[i].Text = strings.Join(lines[out[i].From-1:out[i].To], "")
		shown += len(out[i].Text)
	}
	if len(out) == 0 || shown > len(src)*3/4 {
		return nil
	}
	return out
}

// excerptSummary says in a line what part of the program the excerpts
// show.
func excerptSummary(src []byte, ex []excerptView) string {
	n := strings.Count(string(src), "\n")
	var parts []string
	for _, x := range ex {
		parts = append(parts, fmt.Sprintf("%d-%d", x.From, x.To))
	}
	return fmt.Sprintf("lines %s of %d; the rest is unchanged", strings.Join(parts, ", "), n)
}
