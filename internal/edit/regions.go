package edit

import (
	"bytes"
	"fmt"
	"iter"
	"regexp"
	"sort"
	"strings"
)

// Region is a protected region of a program: the lines from a
// "# frontier:protected begin NAME" comment through the matching
// "# frontier:protected end NAME" comment, both markers included.
type Region struct {
	Name string
	// StartLine and EndLine are the 1-based lines of the begin and end
	// markers.
	StartLine, EndLine int
	// Start and End delimit the region's bytes in the source, src[Start:End]:
	// from the first byte of the begin marker's line through the newline
	// that ends the end marker's line (if there is one).
	Start, End int
	// Content is src[Start:End].
	Content []byte
}

const (
	markerWord = "frontier:protected"
	insertWord = "frontier:insert-here"
)

var (
	markerRe = regexp.MustCompile(`^[ \t]*#[ \t]*frontier:protected[ \t]+(begin|end)[ \t]+([A-Za-z0-9][A-Za-z0-9_.-]*)[ \t]*$`)
	insertRe = regexp.MustCompile(`^[ \t]*#[ \t]*frontier:insert-here[ \t]*$`)
)

// isMarkerLine reports whether a line is a comment that mentions the
// protected-region marker word, well formed or not.
func isMarkerLine(l string) bool {
	t := strings.TrimLeft(l, " \t")
	return strings.HasPrefix(t, "#") && strings.Contains(t, markerWord)
}

// Regions returns the protected regions of a Python program in order.
// Marker lines may be indented and may end in "\r\n". Regions do not nest,
// names are unique, and every begin has its end; a program that breaks
// these rules, or has a comment mentioning frontier:protected that is not a
// well-formed marker, gets an error naming the line.
func Regions(src []byte) ([]Region, error) {
	if !bytes.Contains(src, []byte(markerWord)) {
		return nil, nil
	}
	return regionsIn(src, wordLines(src))
}

// srcLine is a line of a program: src[start:end], without its line feed;
// next is where the line after it starts; num counts from 1.
type srcLine struct{ num, start, end, next int }

// wordLines yields the lines of src that hold the marker word, the only
// ones that can be markers: it goes from one mention to the next,
// counting the lines in between, rather than look at every line of a long
// program.
func wordLines(src []byte) iter.Seq[srcLine] {
	return func(yield func(srcLine) bool) {
		// counted is where the lines were counted to: num is 1 plus the
		// line feeds before it.
		counted, num := 0, 1
		for from := 0; from < len(src); {
			at := bytes.Index(src[from:], []byte(markerWord))
			if at < 0 {
				return
			}
			at += from
			l := srcLine{start: bytes.LastIndexByte(src[:at], '\n') + 1, end: len(src), next: len(src)}
			num += bytes.Count(src[counted:l.start], []byte{'\n'})
			counted, l.num = l.start, num
			if end := bytes.IndexByte(src[at:], '\n'); end >= 0 {
				l.end, l.next = at+end, at+end+1
			}
			if !yield(l) {
				return
			}
			from = l.next
		}
	}
}

// regionsIn is Regions over the lines of src that lines yields, in order,
// which include every line that mentions the marker word.
func regionsIn(src []byte, lines iter.Seq[srcLine]) ([]Region, error) {
	var (
		out  []Region
		open *Region
		seen = map[string]int{}
	)
	for l := range lines {
		raw := src[l.start:l.end]
		if !isMarkerLine(string(raw)) {
			continue
		}
		num := l.num
		line := strings.TrimSuffix(string(raw), "\r")
		m := markerRe.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: malformed protected-region marker %q: write \"# frontier:protected begin NAME\" or \"# frontier:protected end NAME\" (NAME: letters, digits, _ . -)", num, strings.TrimSpace(line))
		}
		verb, name := m[1], m[2]
		switch {
		case verb == "begin" && open != nil:
			return nil, fmt.Errorf("line %d: protected region %q begins inside region %q (begun on line %d); regions do not nest, so end %q first", num, name, open.Name, open.StartLine, open.Name)
		case verb == "begin":
			if first, dup := seen[name]; dup {
				return nil, fmt.Errorf("line %d: protected region %q is defined twice (first on line %d); give each region its own name", num, name, first)
			}
			seen[name] = num
			open = &Region{Name: name, StartLine: num, Start: l.start}
		case open == nil:
			return nil, fmt.Errorf("line %d: \"# frontier:protected end %s\" has no matching begin marker above it", num, name)
		case name != open.Name:
			return nil, fmt.Errorf("line %d: end marker for region %q, but the open region is %q (begun on line %d)", num, name, open.Name, open.StartLine)
		default:
			open.EndLine = num
			open.End = l.next
			open.Content = src[open.Start:l.next]
			out = append(out, *open)
			open = nil
		}
	}
	if open != nil {
		return nil, fmt.Errorf("line %d: protected region %q has no end marker; add \"# frontier:protected end %s\" after its last line", open.StartLine, open.Name, open.Name)
	}
	return out, nil
}

// ProtectedError says how an edit changed a protected region.
type ProtectedError struct {
	// Region is the name of the region, or "" when the child's markers are
	// broken.
	Region string
	// Change is "changed", "removed", "added" or "markers".
	Change string
	// Line is a 1-based line: in the child for "changed", "added" and
	// "markers", in the parent for "removed".
	Line int
	// Detail says more, for "markers".
	Detail string
}

func (e *ProtectedError) Error() string {
	switch e.Change {
	case "removed":
		return fmt.Sprintf("protected region %q (line %d of the parent) is missing or its markers were removed", e.Region, e.Line)
	case "added":
		return fmt.Sprintf("line %d: the edit adds a protected region %q that the parent does not have; frontier:protected markers are reserved", e.Line, e.Region)
	case "markers":
		return "the edit breaks the protected-region markers: " + e.Detail
	default:
		return fmt.Sprintf("protected region %q was changed (line %d)", e.Region, e.Line)
	}
}

// sameContent compares region contents, ignoring only whether the end
// marker's line is followed by a newline.
func sameContent(a, b []byte) bool {
	return bytes.Equal(bytes.TrimSuffix(a, []byte("\n")), bytes.TrimSuffix(b, []byte("\n")))
}

// CheckProtected reports, as a *ProtectedError, the first protected region
// of parent that child does not hold byte for byte (markers included), or a
// region child adds. A region may move; its content may not change. An error
// in parent's own markers is returned as it is.
func CheckProtected(parent, child []byte) error {
	pr, err := Regions(parent)
	if err != nil {
		return fmt.Errorf("parent program: %w", err)
	}
	return checkRegions(pr, child)
}

// checkRegions is CheckProtected given the parent's regions, which Apply
// has found already: finding them takes a scan of the whole program.
func checkRegions(pr []Region, child []byte) error {
	cr, err := Regions(child)
	if err != nil {
		return &ProtectedError{Change: "markers", Detail: err.Error()}
	}
	byName := make(map[string]Region, len(cr))
	for _, r := range cr {
		byName[r.Name] = r
	}
	for _, p := range pr {
		c, ok := byName[p.Name]
		if !ok {
			return &ProtectedError{Region: p.Name, Change: "removed", Line: p.StartLine}
		}
		if !sameContent(p.Content, c.Content) {
			return &ProtectedError{Region: p.Name, Change: "changed", Line: c.StartLine + FirstDiffLine(p.Content, c.Content)}
		}
		delete(byName, p.Name)
	}
	for _, c := range cr {
		if _, extra := byName[c.Name]; extra {
			return &ProtectedError{Region: c.Name, Change: "added", Line: c.StartLine}
		}
	}
	return nil
}

// FirstDiffLine returns the 0-based line where a and b first differ: where
// in a region a change begins.
func FirstDiffLine(a, b []byte) int {
	n := 0
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return n
		}
		if a[i] == '\n' {
			n++
		}
	}
	return n
}

// RestoreProtected copies every protected region of reference, byte for
// byte, over the region of the same name in candidate, and returns the
// result with the names of the regions that had differed (in reference
// order). It fails, naming the region, when candidate lacks a region of
// reference, has one reference lacks, or has broken markers.
func RestoreProtected(reference, candidate []byte) (restored []byte, changed []string, err error) {
	rr, err := Regions(reference)
	if err != nil {
		return nil, nil, fmt.Errorf("reference program: %w", err)
	}
	cr, err := Regions(candidate)
	if err != nil {
		return nil, nil, fmt.Errorf("candidate program: %w", err)
	}
	byName := make(map[string]Region, len(cr))
	for _, r := range cr {
		byName[r.Name] = r
	}
	type swap struct {
		at   Region
		with []byte
	}
	var swaps []swap
	for _, r := range rr {
		c, ok := byName[r.Name]
		if !ok {
			return nil, nil, fmt.Errorf("candidate program has no protected region %q (line %d of the reference); it cannot be restored", r.Name, r.StartLine)
		}
		delete(byName, r.Name)
		if sameContent(r.Content, c.Content) {
			continue
		}
		changed = append(changed, r.Name)
		with := r.Content
		if bytes.HasSuffix(c.Content, []byte("\n")) && !bytes.HasSuffix(with, []byte("\n")) {
			with = append(append([]byte(nil), with...), '\n')
		}
		swaps = append(swaps, swap{at: c, with: with})
	}
	for _, c := range cr {
		if _, extra := byName[c.Name]; extra {
			return nil, nil, fmt.Errorf("candidate program line %d: protected region %q is not in the reference", c.StartLine, c.Name)
		}
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i].at.Start > swaps[j].at.Start })
	out := append([]byte(nil), candidate...)
	for _, s := range swaps {
		out = append(out[:s.at.Start], append(append([]byte(nil), s.with...), out[s.at.End:]...)...)
	}
	return out, changed, nil
}
