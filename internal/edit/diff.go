package edit

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/aymanbagabas/go-udiff/lcs"
)

// Stat counts the lines a diff adds and removes.
type Stat struct {
	Added, Removed int
}

// Diff returns a unified diff from parent to child with three lines of
// context, labelled with the given names, and its line counts. Equal
// programs give "" and a zero Stat.
func Diff(parentName, childName string, parent, child []byte) (string, Stat) {
	a, b := string(parent), string(child)
	if a == b {
		return "", Stat{}
	}
	return unified(parentName, childName, a, b, lineEdits(a, b))
}

// unified renders edits from a to b as a unified diff and counts its lines.
func unified(parentName, childName, a, b string, edits []udiff.Edit) (string, Stat) {
	u, err := udiff.ToUnifiedDiff(parentName, childName, a, edits, udiff.DefaultContextLines)
	if err != nil {
		// The edits come from the same two strings, so they are consistent;
		// fall back to counting whole lines rather than failing a display.
		return "", lineStat(a, b)
	}
	var st Stat
	for _, h := range u.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Insert:
				st.Added++
			case udiff.Delete:
				st.Removed++
			}
		}
	}
	return u.String(), st
}

// lineStat is a coarse count used only if the diff cannot be rendered.
func lineStat(a, b string) Stat {
	return Stat{Added: strings.Count(b, "\n"), Removed: strings.Count(a, "\n")}
}

// lineEdits is udiff.Lines with the lines split by splitLines: the
// library splits both programs rune by rune, growing its slices, which
// was most of what a prompt of 100 KB programs cost to build
// (BenchmarkEngine/llm). The edits are the same: the same lines go to
// the same algorithm.
func lineEdits(a, b string) []udiff.Edit {
	al, offsets := splitLines(a)
	bl, _ := splitLines(b)
	ds := lcs.DiffLines(al, bl)
	edits := make([]udiff.Edit, len(ds))
	for i, d := range ds {
		edits[i] = udiff.Edit{Start: offsets[d.Start], End: offsets[d.End], New: strings.Join(bl[d.ReplStart:d.ReplEnd], "")}
	}
	return edits
}

// splitLines splits text after each line feed, the last line with or
// without one, and returns the lines with the offsets where each starts
// and, last, where the text ends.
func splitLines(text string) (lines []string, offsets []int) {
	n := strings.Count(text, "\n") + 1
	lines, offsets = make([]string, 0, n), make([]int, 1, n+1)
	for start := 0; start < len(text); {
		end := len(text)
		if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
			end = start + i + 1
		}
		lines = append(lines, text[start:end])
		offsets = append(offsets, end)
		start = end
	}
	return lines, offsets
}
