package importer

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/frontier-bench/frontier/internal/edit"
)

// Region names the importer gives. The injected fields each get their own
// region because speedrun scripts do not keep them on adjacent lines.
const (
	RegionTrainFiles = "train-files"
	RegionValFiles   = "val-files"
	RegionValTokens  = "val-tokens"
	RegionValLog     = "val-log" // -2, -3, ... for further prints
	RegionVal        = "val"     // -1, -2, ...: code using val settings
	RegionTiming     = "timing"  // -1, -2, ...: the train clock
)

var roleRegion = map[Role]string{
	RoleTrainFiles: RegionTrainFiles,
	RoleValFiles:   RegionValFiles,
	RoleValTokens:  RegionValTokens,
}

// Protected is one region Prepare marked.
type Protected struct {
	Name string
	Span Span // lines of the protected code in the prepared program, markers excluded
	What string
}

// Prepare marks the parts of a speedrun script that candidates must not
// change with "# frontier:protected begin/end NAME" comments: the injected
// Hyperparameters fields, the validation-loss print, the statements that use
// the validation settings, and the train clock. It returns the marked
// program and the regions. A program that already has protected regions is
// refused: it was prepared before.
func Prepare(src []byte) ([]byte, []Protected, error) {
	if rs, err := edit.Regions(src); err != nil || len(rs) > 0 {
		if err != nil {
			return nil, nil, fmt.Errorf("the script has broken protected-region markers: %w", err)
		}
		return nil, nil, fmt.Errorf("the script already has %d protected regions (the first, %q, on line %d): it was prepared before; import the original record instead", len(rs), rs[0].Name, rs[0].StartLine)
	}
	s, err := Analyze(src)
	if err != nil {
		return nil, nil, err
	}

	var marks []mark
	for _, role := range Roles {
		f := s.Field(role)
		marks = append(marks, mark{Span{f.start + 1, f.end}, roleRegion[role], "the injected " + string(role) + " field (" + f.Name + ")"})
		k := 1
		for _, o := range s.Shadowed {
			if o.Name == f.Name {
				k++
				marks = append(marks, mark{Span{o.start + 1, o.end}, fmt.Sprintf("%s-%d", roleRegion[role], k),
					"an earlier assignment of the injected " + string(role) + " field (" + f.Name + "), which the last one overrides"})
			}
		}
	}
	for i, sp := range sortedSpans(s.ValLog) {
		name := RegionValLog
		if i > 0 {
			name = fmt.Sprintf("%s-%d", RegionValLog, i+1)
		}
		marks = append(marks, mark{sp, name, "the validation-loss print"})
	}
	for i, sp := range sortedSpans(s.ValUses) {
		marks = append(marks, mark{sp, fmt.Sprintf("%s-%d", RegionVal, i+1), "code using the validation settings"})
	}
	for i, sp := range sortedSpans(s.Timing) {
		marks = append(marks, mark{sp, fmt.Sprintf("%s-%d", RegionTiming, i+1), "the train clock"})
	}
	// Order by position; an overlap (one statement matching two kinds)
	// keeps the first mark, widened.
	var merged []mark
	slices.SortStableFunc(marks, func(a, b mark) int { return a.span.Start - b.span.Start })
	for _, m := range marks {
		if n := len(merged); n > 0 && m.span.Start <= merged[n-1].span.End {
			merged[n-1].span.End = max(merged[n-1].span.End, m.span.End)
			continue
		}
		merged = append(merged, m)
	}

	var b bytes.Buffer
	var out []Protected
	next := 0 // next mark
	added := 0
	for i, l := range s.lines {
		lineNo := i + 1
		if next < len(merged) && merged[next].span.Start == lineNo {
			m := merged[next]
			fmt.Fprintf(&b, "%s# frontier:protected begin %s%s", l.indent, m.name, s.nl)
			added++
			out = append(out, Protected{Name: m.name, What: m.what,
				Span: Span{Start: m.span.Start + added, End: m.span.End + added}})
		}
		b.WriteString(l.text)
		b.WriteString(s.nl)
		if next < len(merged) && merged[next].span.End == lineNo {
			fmt.Fprintf(&b, "%s# frontier:protected end %s%s", s.lines[merged[next].span.Start-1].indent, merged[next].name, s.nl)
			added++
			next++
		}
	}
	// The marked program must read back as the same regions.
	rs, err := edit.Regions(b.Bytes())
	if err != nil || len(rs) != len(out) {
		return nil, nil, fmt.Errorf("internal error: the marked program does not parse back (%v, %d of %d regions)", err, len(rs), len(out))
	}
	return b.Bytes(), out, nil
}

// mark is a region Prepare is about to insert.
type mark struct {
	span Span
	name string
	what string
}

// describe lists the regions for a README.
func describe(ps []Protected) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "- `%s` (lines %d-%d): %s\n", p.Name, p.Span.Start, p.Span.End, p.What)
	}
	return b.String()
}
