package edit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"
)

// Method says how a block's SEARCH text was found in the program.
type Method string

// Match methods, from the strictest rung of the ladder to the loosest, and
// the ways a block or answer can apply without a SEARCH text.
const (
	MatchExact       Method = "exact"
	MatchTrailingWS  Method = "trailing_whitespace"
	MatchIndentation Method = "indentation"
	MatchFuzzy       Method = "fuzzy"
	MatchAppend      Method = "append"  // empty SEARCH, added at the end
	MatchInsert      Method = "insert"  // empty SEARCH, before # frontier:insert-here
	MatchRewrite     Method = "rewrite" // a full rewrite replaced the program
)

// Match records how one block (or a rewrite) applied.
type Match struct {
	// Block is the 1-based block number; 0 for a rewrite.
	Block  int
	Method Method
	// Similarity of the matched lines to the SEARCH text: 1 for exact
	// matches, in [0.85, 1] for fuzzy ones.
	Similarity float64
	// Line is the 1-based first line that the block replaced (or inserted
	// before), counted in the program as it stood when the block applied.
	Line int
	// Lines is the number of program lines the block replaced.
	Lines int
}

// Result is a successfully applied edit.
type Result struct {
	Child   []byte
	Matches []Match
}

// Summary describes how the edit applied in a few words, for logs.
func (r *Result) Summary() string {
	if len(r.Matches) == 1 && r.Matches[0].Method == MatchRewrite {
		return "full rewrite"
	}
	parts := make([]string, len(r.Matches))
	for i, m := range r.Matches {
		parts[i] = string(m.Method)
		if m.Method == MatchFuzzy {
			parts[i] = fmt.Sprintf("fuzzy %.2f", m.Similarity)
		}
	}
	noun := "blocks"
	if len(parts) == 1 {
		noun = "block"
	}
	return fmt.Sprintf("%d %s: %s", len(parts), noun, strings.Join(parts, ", "))
}

// Apply applies e to program and returns the child program.
//
// Blocks apply in order, each to the program as the blocks before it left
// it. A non-empty SEARCH is looked for by a ladder of rungs, stopping at the
// first rung where it is found: exactly (whole lines); ignoring trailing
// white space; ignoring a uniform shift of indentation, or tabs written as
// spaces and the reverse (the REPLACE lines are re-indented to match); and
// as the one window of the program at least 85% similar to it. A SEARCH
// found in several places is never applied. An empty SEARCH appends its
// REPLACE text, or inserts it before the line "# frontier:insert-here" when
// the program has exactly one.
//
// A block that would touch a protected region fails, and so does an edit
// that leaves the program unchanged. Every failed block is reported: the
// error is an *ApplyError, or several joined with errors.Join (see
// ApplyErrors). An error in the program's own region markers is returned
// as a plain error.
//
// A program written with CRLF line endings keeps them.
func Apply(program []byte, e *Edit) (*Result, error) {
	res, err := apply(program, e)
	if err != nil {
		detach(err)
		return nil, err
	}
	return res, nil
}

// apply is Apply reading program through a string that shares its bytes:
// a copy of a 100 KB program was a third of what a proposal allocated
// (BenchmarkEngine), and the collector's work follows what is allocated.
// The string and its lines live only for the call: the child is built
// anew, and Apply detaches the lines an error quotes.
func apply(program []byte, e *Edit) (*Result, error) {
	if e == nil {
		return nil, &ApplyError{Kind: NoEdit, Reason: "there is no edit to apply.", Hint: blockFormat}
	}
	src := unsafe.String(unsafe.SliceData(program), len(program))
	crlf := strings.Count(src, "\r\n") > strings.Count(src, "\n")/2
	if crlf {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		program = []byte(src)
	}
	regions, err := Regions(program)
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	var res *Result
	if e.IsRewrite() {
		child := e.Rewrite
		if err := checkRewrite(splitProgram(src).lines, splitProgram(child).lines, e.RewriteLine); err != nil {
			return nil, err
		}
		if err := checkRegions(regions, []byte(child)); err != nil {
			err = protectedFailure(err, 0, 0, e.RewriteLine)
			if ae, ok := err.(*ApplyError); ok {
				ae.Reason = "the rewritten program breaks a protected region: " + ae.Reason
			}
			return nil, err
		}
		res = &Result{Child: []byte(child), Matches: []Match{{Method: MatchRewrite, Similarity: 1, Line: 1, Lines: len(splitProgram(src).lines)}}}
	} else {
		if len(e.Blocks) == 0 {
			return nil, &ApplyError{Kind: NoEdit, Reason: "the edit has no blocks.", Hint: blockFormat}
		}
		t := splitProgram(src)
		t.regions = regions
		var errs []error
		var matches []Match
		for _, b := range e.Blocks {
			m, err := t.apply(b, len(e.Blocks))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			matches = append(matches, m)
		}
		if len(errs) == 1 {
			return nil, errs[0]
		}
		if len(errs) > 1 {
			return nil, errors.Join(errs...)
		}
		child := t.Bytes()
		// Blocks cannot reach a region unnoticed, but check the whole
		// result anyway whenever markers are about.
		if len(regions) > 0 || bytes.Contains(child, []byte(markerWord)) {
			if err := checkRegions(regions, child); err != nil {
				return nil, protectedFailure(err, 0, 0, 0)
			}
		}
		res = &Result{Child: child, Matches: matches}
	}
	if string(res.Child) == src {
		return nil, &ApplyError{
			Kind:   NoChange,
			Reason: "the edit leaves the program exactly as it was.",
			Hint:   "Make the REPLACE text differ from the SEARCH text, and change something that matters.",
		}
	}
	if crlf {
		res.Child = []byte(strings.ReplaceAll(string(res.Child), "\n", "\r\n"))
	}
	return res, nil
}

// detach gives the program lines err quotes memory of their own: apply's
// lines share the caller's program, which may change after Apply returns.
func detach(err error) {
	for _, ae := range ApplyErrors(err) {
		for i := range ae.Nearest {
			ae.Nearest[i].Text = strings.Clone(ae.Nearest[i].Text)
		}
	}
}

// protectedFailure turns a CheckProtected error into an *ApplyError.
func protectedFailure(err error, block, blocks, answerLine int) error {
	var pe *ProtectedError
	if !errors.As(err, &pe) {
		return err
	}
	return &ApplyError{
		Kind: Protected, Block: block, Blocks: blocks, AnswerLine: answerLine,
		Region: pe.Region,
		Reason: pe.Error() + ".",
		Hint:   protectedHint(pe.Region),
	}
}

func protectedHint(name string) string {
	if name == "" {
		return "Do not write, move or delete \"# frontier:protected\" marker lines."
	}
	return fmt.Sprintf("Leave every line from \"# frontier:protected begin %s\" to \"# frontier:protected end %s\" exactly as it is, markers included; change code outside the region instead.", name, name)
}

// text is a program as lines, while blocks are applied to it.
type text struct {
	lines   []string
	finalNL bool
	// regions are the protected regions of lines, kept up to date as
	// blocks apply.
	regions []Region
}

func splitProgram(src string) *text {
	t := &text{finalNL: strings.HasSuffix(src, "\n")}
	src = strings.TrimSuffix(src, "\n")
	if src != "" || t.finalNL {
		// Room for the lines an edit adds: growing the slice of a long
		// program's lines copied all of them (a tenth of what a proposal
		// allocated, BenchmarkEngine).
		t.lines = make([]string, 0, strings.Count(src, "\n")+1+linesSpare)
		for l := range strings.SplitSeq(src, "\n") {
			t.lines = append(t.lines, l)
		}
	}
	return t
}

// linesSpare is the room splitProgram leaves for added lines.
const linesSpare = 64

// Bytes returns the program text.
func (t *text) Bytes() []byte {
	n := 0
	for _, l := range t.lines {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	for i, l := range t.lines {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, l...)
	}
	if t.finalNL && len(t.lines) > 0 {
		b = append(b, '\n')
	}
	return b
}

func (t *text) String() string {
	if len(t.lines) == 0 {
		return ""
	}
	s := strings.Join(t.lines, "\n")
	if t.finalNL {
		s += "\n"
	}
	return s
}

// splitText splits block text (every line ending in "\n") into lines.
func splitText(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// hit is a place where a SEARCH text matched.
type hit struct {
	window
	method Method
	sim    float64
	// fix adapts the REPLACE lines to the program (re-indenting them).
	fix func([]string) []string
}

// apply applies one block to t.
func (t *text) apply(b Block, total int) (Match, error) {
	fail := func(kind ErrorKind, reason, hint string) *ApplyError {
		return &ApplyError{Kind: kind, Block: b.Index, Blocks: total, AnswerLine: b.Line, Reason: reason, Hint: hint}
	}
	inSearch := map[string]bool{}
	for _, l := range splitText(b.Search) {
		inSearch[strings.TrimSpace(l)] = true
	}
	for _, l := range splitText(b.Replace) {
		if (isMarkerLine(l) || insertRe.MatchString(l)) && !inSearch[strings.TrimSpace(l)] {
			ae := fail(Protected, fmt.Sprintf("the REPLACE text contains the reserved marker line %q.", strings.TrimSpace(l)), protectedHint(""))
			if insertRe.MatchString(l) {
				ae.Hint = "Do not write \"# frontier:insert-here\" lines; they mark where the program accepts insertions."
			}
			return Match{}, ae
		}
	}
	regions := t.regions
	if strings.TrimSpace(b.Search) == "" {
		return t.insert(b, total, regions)
	}

	rs := readings(b)
	var ambiguous []hit
	for _, rung := range []Method{MatchExact, MatchTrailingWS, MatchIndentation, MatchFuzzy} {
		var (
			best     hit
			bestRepl []string
			bestLen  = -1
		)
		for ri, r := range rs {
			if rung == MatchFuzzy && ri > 1 {
				break // fuzzy matching only reads the block the first way
			}
			search := splitText(r.search)
			if len(search) == 0 {
				continue
			}
			hits := find(rung, t.lines, search)
			switch {
			case len(hits) == 1 && len(search) > bestLen:
				best, bestRepl, bestLen = hits[0], splitText(r.replace), len(search)
			case len(hits) > 1 && ambiguous == nil:
				ambiguous = hits
			}
		}
		if bestLen >= 0 {
			repl := bestRepl
			if best.fix != nil {
				repl = best.fix(repl)
			}
			for i := range regions {
				r := &regions[i]
				if overlapping(regions[i:i+1], best.window) == nil || keepsRegion(t.lines, best.window, repl, r) {
					continue
				}
				ae := fail(Protected, fmt.Sprintf("the SEARCH text matches lines %d-%d, which touch the protected region %q (lines %d-%d); that region must not change.", best.start+1, best.start+best.n, r.Name, r.StartLine, r.EndLine), protectedHint(r.Name))
				ae.Region = r.Name
				ae.Nearest = t.numbered(best.start, best.start+best.n, 12)
				return Match{}, ae
			}
			t.replace(best.window, repl)
			return Match{Block: b.Index, Method: best.method, Similarity: best.sim, Line: best.start + 1, Lines: best.n}, nil
		}
		if ambiguous != nil {
			return Match{}, t.ambiguousError(fail, ambiguous)
		}
	}
	ae := t.notFoundError(fail, splitText(b.Search), b.Index)
	if b.File != "" {
		ae.Hint += fmt.Sprintf(" The block is headed %q: every block applies to the one program you were given, whatever file name it carries.", b.File)
	}
	return Match{}, ae
}

// readings returns the ways to read a block: as written, then each other
// ======= split; each followed by the same with the blank lines at the ends
// of its SEARCH trimmed (models often add one that the program lacks). Only
// the first two readings are the block as written.
func readings(b Block) []reading {
	var out []reading
	for _, r := range append([]reading{{b.Search, b.Replace}}, b.alts...) {
		out = append(out, r)
		if tr, ok := trimBlankEdges(r); ok {
			out = append(out, tr)
		} else {
			out = append(out, reading{}) // keeps the first two slots for the block as written
		}
	}
	return out
}

// trimBlankEdges drops blank lines at the start and end of a reading's
// SEARCH, and as many at the same ends of its REPLACE.
func trimBlankEdges(r reading) (reading, bool) {
	s, rp := splitText(r.search), splitText(r.replace)
	lead, trail := 0, 0
	for lead < len(s) && strings.TrimSpace(s[lead]) == "" {
		lead++
	}
	for trail < len(s)-lead && strings.TrimSpace(s[len(s)-1-trail]) == "" {
		trail++
	}
	if lead+trail == 0 || lead == len(s) {
		return r, false
	}
	s = s[lead : len(s)-trail]
	for k := 0; k < lead && len(rp) > 0 && strings.TrimSpace(rp[0]) == ""; k++ {
		rp = rp[1:]
	}
	for k := 0; k < trail && len(rp) > 0 && strings.TrimSpace(rp[len(rp)-1]) == ""; k++ {
		rp = rp[:len(rp)-1]
	}
	return reading{joinText(s), joinText(rp)}, true
}

func joinText(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

// find returns the matches of search in lines at one rung of the ladder.
func find(rung Method, lines, search []string) []hit {
	n := len(search)
	if n == 0 || n > len(lines) {
		return nil
	}
	switch rung {
	case MatchExact:
		var hits []hit
		for i := 0; i+n <= len(lines); i++ {
			if lines[i] != search[0] {
				continue
			}
			if equalLines(lines[i:i+n], search, func(s string) string { return s }) {
				hits = append(hits, hit{window: window{i, n}, method: MatchExact, sim: 1})
			}
		}
		return hits
	case MatchTrailingWS:
		var hits []hit
		first := trimRight(search[0])
		for i := 0; i+n <= len(lines); i++ {
			if trimRight(lines[i]) != first {
				continue
			}
			if equalLines(lines[i:i+n], search, trimRight) {
				hits = append(hits, hit{window: window{i, n}, method: MatchTrailingWS, sim: 1})
			}
		}
		return hits
	case MatchIndentation:
		return findIndented(lines, search)
	case MatchFuzzy:
		if nonBlank(search) < 2 || len(strings.Join(search, "\n")) > fuzzyMaxChars {
			return nil
		}
		ws, sims := fuzzyWindows(lines, search, fuzzyThreshold)
		if len(ws) == 0 {
			return nil
		}
		// Keep the best window of each place: a window overlapping a better
		// one is the same place read slightly differently.
		var hits []hit
	next:
		for k, w := range ws {
			for _, h := range hits {
				if w.overlaps(h.window) {
					continue next
				}
			}
			hits = append(hits, hit{window: w, method: MatchFuzzy, sim: sims[k]})
		}
		hits[0].fix = reindent(commonIndent(search), commonIndent(lines[ws[0].start:ws[0].start+ws[0].n]))
		return hits
	}
	return nil
}

// trimRight strips trailing spaces and tabs.
func trimRight(s string) string {
	i := len(s)
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	return s[:i]
}

func equalLines(a, b []string, norm func(string) string) bool {
	for k := range b {
		if norm(a[k]) != norm(b[k]) {
			return false
		}
	}
	return true
}

// findIndented matches search against lines that hold the same text under
// a uniform extra (or missing) indentation, then tries again with the
// search's tabs and spaces converted to the program's indentation style.
func findIndented(lines, search []string) []hit {
	if hits := findShifted(lines, search, nil); len(hits) > 0 {
		return hits
	}
	progTabs, progUnit := indentStyle(lines)
	srchTabs, srchUnit := indentStyle(search)
	if progTabs == srchTabs {
		return nil
	}
	var conv func([]string) []string
	if progTabs {
		conv = func(ls []string) []string { return spacesToTabs(ls, srchUnit) }
	} else {
		conv = func(ls []string) []string { return tabsToSpaces(ls, progUnit) }
	}
	return findShifted(lines, conv(search), conv)
}

// findShifted finds windows where every non-blank line equals P + the
// search line without the search's common indentation, for one prefix P of
// white space.
func findShifted(lines, search []string, conv func([]string) []string) []hit {
	n := len(search)
	ind := commonIndent(search)
	rel := make([]string, n)
	firstK := -1
	for k, s := range search {
		rel[k] = strings.TrimPrefix(trimRight(s), ind)
		if firstK < 0 && strings.TrimSpace(s) != "" {
			firstK = k
		}
	}
	if firstK < 0 {
		return nil
	}
	firstTrim := strings.TrimSpace(search[firstK])
	var hits []hit
	for i := 0; i+n <= len(lines); i++ {
		if strings.TrimSpace(lines[i+firstK]) != firstTrim {
			continue
		}
		prefix, ok := "", true
		set := false
		for k := 0; k < n && ok; k++ {
			pl := trimRight(lines[i+k])
			if rel[k] == "" {
				ok = strings.TrimSpace(pl) == ""
				continue
			}
			if !strings.HasSuffix(pl, rel[k]) {
				ok = false
				break
			}
			pre := pl[:len(pl)-len(rel[k])]
			if strings.Trim(pre, " \t") != "" {
				ok = false
				break
			}
			if !set {
				prefix, set = pre, true
			} else if pre != prefix {
				ok = false
			}
		}
		if ok && set {
			fix := reindent(ind, prefix)
			if conv != nil {
				fix = func(ls []string) []string { return reindent(ind, prefix)(conv(ls)) }
			}
			hits = append(hits, hit{window: window{i, n}, method: MatchIndentation, sim: 1, fix: fix})
		}
	}
	return hits
}

// commonIndent returns the longest run of leading white space shared by
// all non-blank lines.
func commonIndent(ls []string) string {
	var ind string
	set := false
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if !set {
			ind, set = lead, true
			continue
		}
		k := 0
		for k < len(ind) && k < len(lead) && ind[k] == lead[k] {
			k++
		}
		ind = ind[:k]
	}
	return ind
}

// reindent returns a function that moves lines from indentation from to
// indentation to.
func reindent(from, to string) func([]string) []string {
	if from == to {
		return func(ls []string) []string { return ls }
	}
	return func(ls []string) []string {
		out := make([]string, len(ls))
		for k, l := range ls {
			if strings.TrimSpace(l) == "" {
				out[k] = l
				continue
			}
			if strings.HasPrefix(l, from) {
				out[k] = to + l[len(from):]
			} else {
				out[k] = to + strings.TrimLeft(l, " \t")
			}
		}
		return out
	}
}

// indentStyle reports whether lines are indented with tabs, and the
// indentation unit in spaces otherwise (the smallest indentation, 4 if
// none).
func indentStyle(ls []string) (tabs bool, unit int) {
	nt, ns := 0, 0
	unit = 0
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		switch {
		case strings.HasPrefix(l, "\t"):
			nt++
		case strings.HasPrefix(l, " "):
			ns++
			w := len(l) - len(strings.TrimLeft(l, " "))
			if unit == 0 || w < unit {
				unit = w
			}
		}
	}
	if unit < 2 || unit > 8 {
		unit = 4
	}
	return nt > ns, unit
}

func spacesToTabs(ls []string, unit int) []string {
	out := make([]string, len(ls))
	for k, l := range ls {
		w := len(l) - len(strings.TrimLeft(l, " "))
		out[k] = strings.Repeat("\t", w/unit) + strings.Repeat(" ", w%unit) + l[w:]
	}
	return out
}

func tabsToSpaces(ls []string, unit int) []string {
	out := make([]string, len(ls))
	for k, l := range ls {
		w := len(l) - len(strings.TrimLeft(l, "\t"))
		out[k] = strings.Repeat(" ", w*unit) + l[w:]
	}
	return out
}

// replace puts repl in place of the window's lines and moves the
// protected regions below it.
func (t *text) replace(w window, repl []string) {
	t.lines = slices.Replace(t.lines, w.start, w.start+w.n, repl...)
	if len(t.lines) == 0 {
		t.finalNL = false
	}
	if len(t.regions) == 0 {
		return
	}
	if overlapping(t.regions, w) != nil {
		// A region was kept as context inside the window: find it anew.
		t.regions, _ = Regions([]byte(t.String()))
		return
	}
	delta := len(repl) - w.n
	for i := range t.regions {
		if r := &t.regions[i]; r.StartLine > w.start {
			r.StartLine += delta
			r.EndLine += delta
		}
	}
}

// insert applies a block with an empty SEARCH.
func (t *text) insert(b Block, total int, regions []Region) (Match, error) {
	repl := splitText(b.Replace)
	var marks []int
	for i, l := range t.lines {
		if strings.Contains(l, insertWord) && insertRe.MatchString(l) {
			marks = append(marks, i)
		}
	}
	switch len(marks) {
	case 0:
		at := len(t.lines)
		t.lines = append(t.lines, repl...)
		t.finalNL = true
		return Match{Block: b.Index, Method: MatchAppend, Similarity: 1, Line: at + 1}, nil
	case 1:
		i := marks[0]
		if r := overlapping(regions, window{i, 1}); r != nil {
			return Match{}, &ApplyError{
				Kind: Protected, Block: b.Index, Blocks: total, AnswerLine: b.Line, Region: r.Name,
				Reason: fmt.Sprintf("the empty SEARCH inserts before line %d (# frontier:insert-here), which is inside the protected region %q.", i+1, r.Name),
				Hint:   "Give the block a SEARCH text that matches code outside the region.",
			}
		}
		t.replace(window{i, 0}, repl)
		return Match{Block: b.Index, Method: MatchInsert, Similarity: 1, Line: i + 1}, nil
	default:
		lines := make([]int, len(marks))
		for k, m := range marks {
			lines[k] = m + 1
		}
		return Match{}, &ApplyError{
			Kind: Ambiguous, Block: b.Index, Blocks: total, AnswerLine: b.Line, Matches: lines,
			Reason: fmt.Sprintf("the SEARCH text is empty, which means insert at the \"# frontier:insert-here\" line, but the program has %d of them (lines %s).", len(marks), listInts(lines)),
			Hint:   "Give the block a SEARCH text: a few lines of the program to replace.",
		}
	}
}

// keepsRegion reports whether replacing window w with repl leaves the
// lines of region r that w covers as they are: a SEARCH may take the first
// or last lines of a region as context if REPLACE repeats them unchanged.
func keepsRegion(lines []string, w window, repl []string, r *Region) bool {
	a, b := r.StartLine-1, r.EndLine-1
	s, e := w.start, w.start+w.n-1
	lo, hi := max(s, a), min(e, b)
	if lo > hi {
		return true
	}
	o := lines[lo : hi+1]
	switch {
	case s > a && e < b:
		return false // the whole window lies inside the region
	case s > a:
		return len(repl) >= len(o) && equalLines(repl[:len(o)], o, func(x string) string { return x })
	case e < b:
		return len(repl) >= len(o) && equalLines(repl[len(repl)-len(o):], o, func(x string) string { return x })
	}
	found := 0
	for k := 0; k+len(o) <= len(repl); k++ {
		if equalLines(repl[k:k+len(o)], o, func(x string) string { return x }) {
			found++
		}
	}
	return found == 1
}

// overlapping returns the region that shares a line with w, or nil.
func overlapping(regions []Region, w window) *Region {
	for i := range regions {
		r := &regions[i]
		if w.start < r.EndLine && r.StartLine-1 < w.start+max(w.n, 1) {
			return r
		}
	}
	return nil
}

// numbered returns lines [from, to) with their numbers, at most max of
// them.
func (t *text) numbered(from, to, most int) []Line {
	from, to = max(0, from), min(len(t.lines), to)
	if to-from > most {
		to = from + most
	}
	out := make([]Line, 0, max(0, to-from))
	for i := from; i < to; i++ {
		out = append(out, Line{Num: i + 1, Text: t.lines[i]})
	}
	return out
}

func listInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func (t *text) ambiguousError(fail func(ErrorKind, string, string) *ApplyError, hits []hit) error {
	hits = slices.Clone(hits)
	slices.SortFunc(hits, func(a, b hit) int { return a.start - b.start })
	lines := make([]int, len(hits))
	for k, h := range hits {
		lines[k] = h.start + 1
	}
	how := ""
	if hits[0].method != MatchExact {
		how = fmt.Sprintf(" (%s)", strings.ReplaceAll(string(hits[0].method), "_", " "))
	}
	ae := fail(Ambiguous,
		fmt.Sprintf("the SEARCH text is ambiguous: it matches %d places%s, at lines %s.", len(hits), how, listInts(lines)),
		"Add neighbouring lines to the SEARCH text (and the same lines to REPLACE) so that it matches exactly one place.")
	ae.Matches = lines
	for k, h := range hits {
		if k == 3 {
			break
		}
		ae.Nearest = append(ae.Nearest, t.numbered(h.start-1, h.start+min(h.n, 3), 4)...)
	}
	return ae
}

func (t *text) notFoundError(fail func(ErrorKind, string, string) *ApplyError, search []string, block int) *ApplyError {
	ae := fail(NotFound, "the SEARCH text was not found in the program.", "")
	hint := "Copy the SEARCH lines exactly from the program: same spelling, comments, blank lines and indentation. Use a few distinctive lines rather than many."
	if block > 1 {
		hint += " Blocks apply in order, so a SEARCH must match the program as the blocks before it left it."
	}
	ae.Hint = hint
	w, sim, ok := nearest(t.lines, search)
	if !ok {
		ae.Reason = "the SEARCH text was not found in the program, and no part of the program resembles it."
		return ae
	}
	ae.Similarity = sim
	ae.Reason = fmt.Sprintf("the SEARCH text was not found in the program. The most similar lines (%.0f%% similar) are lines %d-%d:", 100*sim, w.start+1, w.start+w.n)
	if w.n == 1 {
		ae.Reason = fmt.Sprintf("the SEARCH text was not found in the program. The most similar line (%.0f%% similar) is line %d:", 100*sim, w.start+1)
	}
	ae.Nearest = t.numbered(w.start, w.start+w.n, 20)
	return ae
}
