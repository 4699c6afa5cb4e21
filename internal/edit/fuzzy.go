package edit

import (
	"sort"
	"strings"
)

const (
	// fuzzyThreshold is the least similarity at which a window of the program
	// is taken as a block's SEARCH text.
	fuzzyThreshold = 0.85
	// fuzzyMaxChars bounds the SEARCH size tried at the fuzzy rung, which costs
	// O(chars x allowed edits) per window.
	fuzzyMaxChars = 20000
	// maxCandidates bounds the windows examined per block.
	maxCandidates = 64
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

// normLine collapses all runs of white space, for anchoring.
func normLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// dedentText strips the common indentation of the non-blank lines and the
// trailing white space of every line, and joins them.
func dedentText(ls []string) string {
	ind := commonIndent(ls)
	var b strings.Builder
	for k, l := range ls {
		if k > 0 {
			b.WriteByte('\n')
		}
		l = strings.TrimRight(l, " \t")
		b.WriteString(strings.TrimPrefix(l, ind))
	}
	return b.String()
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
	target := dedentText(search)
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
				if sim, ok := similarity(dedentText(lines[st:st+ln]), target, minSim); ok {
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
	bestSim, bestI, bestJ := 0.0, -1, 0
	tried := 0
	for j, s := range search {
		t := strings.TrimSpace(s)
		if t == "" || len(t) > 500 {
			continue
		}
		for i, l := range lines {
			lt := strings.TrimSpace(l)
			if lt == "" || len(lt) > 500 {
				continue
			}
			if sim, ok := similarity(lt, t, max(0.4, bestSim)); ok && sim > bestSim {
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
	sim, _ = similarity(dedentText(lines[start:start+n]), dedentText(search), 0)
	return window{start, n}, sim, true
}
