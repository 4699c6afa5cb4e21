package edit

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
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
	edits := udiff.Lines(a, b)
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
