package edit

import (
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"
)

const (
	// fuzzyThreshold is the least similarity at which a window of the program
	// is taken as a block's SEARCH text.
	fuzzyThreshold = 0.85
	// fuzzyMaxChars bounds the SEARCH size tried at the fuzzy rung.
	fuzzyMaxChars = 20000
	// maxCandidates bounds the windows examined per block.
	maxCandidates = 64
	// longLine is the length above which two different lines are counted as
	// wholly different rather than compared character by character.
	longLine = 500
	// workBudget bounds the character comparisons one search may make, so
	// that a pathological program or answer cannot stall Apply.
	workBudget = 50_000_000
)

// editDistance returns the Levenshtein distance of a and b in bytes, or
// k+1 when it exceeds k. It only fills the band |i-j| <= k of the table.
func editDistance(a, b string, k int) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a)-len(b) > k {
		return k + 1
	}
	inf := k + 1
	prev := make([]int, len(b)+2)
	cur := make([]int, len(b)+2)
	for j := range prev {
		prev[j] = inf
		if j <= k && j <= len(b) {
			prev[j] = j
		}
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-k), min(len(b), i+k)
		if lo-1 == 0 {
			cur[0] = i
			if i > k {
				cur[0] = inf
			}
		} else {
			cur[lo-1] = inf
		}
		rowMin := cur[lo-1]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := prev[j-1] + cost
			if d := prev[j] + 1; d < v {
				v = d
			}
			if d := cur[j-1] + 1; d < v {
				v = d
			}
			if v > inf {
				v = inf
			}
			cur[j] = v
			if v < rowMin {
				rowMin = v
			}
		}
		if hi+1 <= len(b) {
			cur[hi+1] = inf
		}
		if rowMin > k {
			return inf
		}
		prev, cur = cur, prev
	}
	if prev[len(b)] > k {
		return inf
	}
	return prev[len(b)]
}

// similarity returns 1 - distance/longer length, or ok=false when it is
// below minSim.
func similarity(a, b string, minSim float64) (float64, bool) {
	m := max(len(a), len(b))
	if m == 0 {
		return 1, true
	}
	k := int((1 - minSim) * float64(m))
	d := editDistance(a, b, k)
	if d > k {
		return 0, false
	}
	s := 1 - float64(d)/float64(m)
	return s, s >= minSim
}

// matcher compares runs of lines within a budget of work.
type matcher struct{ budget int }

// lineDistance is the edit distance of two lines, capped at k+1, counting
// long lines that differ as wholly different.
func (mt *matcher) lineDistance(a, b string, k int) int {
	if a == b {
		return 0
	}
	n := max(len(a), len(b))
	if n > longLine || mt.budget <= 0 {
		return min(n, k+1)
	}
	k = min(k, n)
	mt.budget -= n * (2*k + 1)
	return editDistance(a, b, k)
}

// linesSimilarity is the similarity of two runs of lines (compared without
// their common indentation and trailing white space), as 1 - an edit
// distance over the longer text's length. The distance comes from a line
// diff with changed lines compared character by character, so it is an
// upper bound of the character edit distance and the similarity is on the
// safe side. ok is false when it is below minSim.
func (mt *matcher) linesSimilarity(a, b []string, minSim float64) (float64, bool) {
	ta, tb := dedentLines(a), dedentLines(b)
	la, lb := textLen(ta), textLen(tb)
	m := max(la, lb)
	if m == 0 {
		return 1, true
	}
	allowed := int((1 - minSim) * float64(m))
	if abs(la-lb) > allowed || mt.budget <= 0 {
		return 0, false
	}
	mt.budget -= len(ta) + len(tb)
	dist := 0
	for _, d := range lcs.DiffLines(ta, tb) {
		x, y := ta[d.Start:d.End], tb[d.ReplStart:d.ReplEnd]
		pairs := min(len(x), len(y))
		for i := range pairs {
			dist += mt.lineDistance(x[i], y[i], allowed-dist)
			if dist > allowed {
				return 0, false
			}
		}
		for _, l := range x[pairs:] {
			dist += len(l) + 1
		}
		for _, l := range y[pairs:] {
			dist += len(l) + 1
		}
		if dist > allowed {
			return 0, false
		}
	}
	s := 1 - float64(dist)/float64(m)
	return s, s >= minSim
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func textLen(ls []string) int {
	n := len(ls)
	for _, l := range ls {
		n += len(l)
	}
	return n
}

// normLine is the form of a line used to anchor fuzzy windows: without
// its indentation and trailing white space (this does not allocate).
func normLine(s string) string { return strings.TrimSpace(s) }

// dedentLines strips the common indentation of the non-blank lines and
// the trailing white space of every line.
func dedentLines(ls []string) []string {
	ind := commonIndent(ls)
	out := make([]string, len(ls))
	for k, l := range ls {
		out[k] = strings.TrimPrefix(trimRight(l), ind)
	}
	return out
}

// window is a run of program lines.
type window struct{ start, n int }

func (w window) overlaps(o window) bool {
	return w.start < o.start+o.n && o.start < w.start+w.n
}

// fuzzyWindows returns the windows of lines whose similarity to search is
// at least minSim, best first. Candidate windows are anchored on lines equal
// up to white space to a search line, so the cost stays proportional to
// the number of plausible places rather than to the program size.
func fuzzyWindows(lines, search []string, minSim float64) ([]window, []float64) {
	n := len(search)
	nb := nonBlank(search)
	if nb == 0 {
		return nil, nil
	}
	idx := map[string][]int{}
	want := map[string]bool{}
	for _, s := range search {
		if t := normLine(s); t != "" {
			want[t] = true
		}
	}
	for i, l := range lines {
		if t := normLine(l); want[t] {
			idx[t] = append(idx[t], i)
		}
	}
	votes := map[int]int{}
	for j, s := range search {
		t := normLine(s)
		if t == "" {
			continue
		}
		for _, i := range idx[t] {
			votes[i-j]++
		}
	}
	need := max(1, (nb+1)/2)
	var starts []int
	for s, v := range votes {
		if v >= need {
			starts = append(starts, s)
		}
	}
	sort.Slice(starts, func(a, b int) bool {
		if votes[starts[a]] != votes[starts[b]] {
			return votes[starts[a]] > votes[starts[b]]
		}
		return starts[a] < starts[b]
	})
	if len(starts) > maxCandidates {
		starts = starts[:maxCandidates]
	}
	mt := &matcher{budget: workBudget}
	seen := map[window]bool{}
	var ws []window
	var sims []float64
	for _, s := range starts {
		for _, st := range []int{s, s - 1, s + 1} {
			for _, ln := range []int{n, n - 1, n + 1} {
				w := window{st, ln}
				if ln < 1 || st < 0 || st+ln > len(lines) || seen[w] {
					continue
				}
				seen[w] = true
				if sim, ok := mt.linesSimilarity(lines[st:st+ln], search, minSim); ok {
					ws = append(ws, w)
					sims = append(sims, sim)
				}
			}
		}
	}
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		if sims[order[a]] != sims[order[b]] {
			return sims[order[a]] > sims[order[b]]
		}
		return ws[order[a]].start < ws[order[b]].start
	})
	ows, osims := make([]window, len(ws)), make([]float64, len(ws))
	for i, o := range order {
		ows[i], osims[i] = ws[o], sims[o]
	}
	return ows, osims
}

// nearest returns the window of the program most like search, for error
// reports, or ok=false when nothing resembles it.
func nearest(lines, search []string) (w window, sim float64, ok bool) {
	if len(strings.Join(search, "\n")) <= fuzzyMaxChars {
		if ws, sims := fuzzyWindows(lines, search, 0.5); len(ws) > 0 {
			return ws[0], sims[0], true
		}
	}
	// No anchored window: find the program line most like one of the first
	// search lines and line the search up on it.
	mt := &matcher{budget: workBudget}
	bestSim, bestI, bestJ := 0.0, -1, 0
	tried := 0
	for j, s := range search {
		t := strings.TrimSpace(s)
		if t == "" || len(t) > longLine {
			continue
		}
		for i, l := range lines {
			lt := strings.TrimSpace(l)
			if lt == "" || len(lt) > longLine || mt.budget <= 0 {
				continue
			}
			floor := max(0.4, bestSim)
			if float64(min(len(lt), len(t))) < floor*float64(max(len(lt), len(t))) {
				continue // the lengths alone rule it out
			}
			k := int((1 - floor) * float64(max(len(lt), len(t))))
			mt.budget -= max(len(lt), len(t)) * (2*k + 1)
			if sim, ok := similarity(lt, t, floor); ok && sim > bestSim {
				bestSim, bestI, bestJ = sim, i, j
			}
		}
		if tried++; tried == 3 {
			break
		}
	}
	if bestI < 0 {
		return window{}, 0, false
	}
	start := max(0, bestI-bestJ)
	n := min(len(search), len(lines)-start)
	sim, _ = mt.linesSimilarity(lines[start:start+n], search, 0)
	return window{start, n}, sim, true
}
