package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/frontier-bench/frontier/internal/runs"
)

// analysis holds what the report derives from Data before it draws or
// formats anything. Every figure and table reads from it, so the numbers
// in the text and in the figures cannot disagree.
type analysis struct {
	d *Data

	// progs are the programs sorted by iteration, then creation, then ID.
	progs []*Program

	total int
	// totals are the whole run's.
	totals

	// minIter and maxIter bound the iterations seen; iters counts the
	// iterations in between (empty ones included). iters is 0 with no
	// programs.
	minIter, maxIter, iters int
	perIter                 []iterStats

	// accTimed are acceptable, evaluated programs with a train time.
	accTimed []*Program
	// accUntimed counts acceptable programs without a train time.
	accUntimed int

	fastest *Program // acceptable with the lowest train time, the first on a tie
	lowest  *Program // valid (acceptable or too high) with the lowest loss, the first on a tie
	// records are the programs that were the fastest when they came, in
	// order.
	records []*Program
	// claims maps a program to its newest claim to be a record.
	claims   map[int64]*Claim
	trend    fit
	byModel  []group
	byStage  []group
	byPhase  []group // before and after meta-prompting; empty when never
	hasPhase bool
}

// iterStats is one iteration's breakdown and the frontier after it.
type iterStats struct {
	iter   int
	counts classCounts
	// bestTimeMs and bestLoss are the frontier after this iteration: the
	// lowest acceptable time and the lowest valid loss so far; 0 if none.
	bestTimeMs float64
	bestLoss   float64
}

// evaluated is the number of programs with a final verdict of the
// breakdown (buggy, too high, acceptable): the ones judged, whether a
// process ran them or their edit never applied.
func (s iterStats) evaluated() int { return judged(s.counts) }

// judged is the number of programs with a final verdict of the breakdown.
func judged(counts classCounts) int {
	return counts[runs.Buggy] + counts[runs.TooHigh] + counts[runs.ClassAcceptable]
}

// totals are what the report shows of a set of programs. All but
// neverRan are read off the set's runs.Tally, the one aggregate of a
// run's members (see tally.totals).
type totals struct {
	programs int // every child
	counts   classCounts
	// neverRan counts buggy children no process ran (apply_failed).
	neverRan int
	// bestTimeMs is the lowest acceptable train time and bestLoss the
	// lowest valid loss; 0 if none.
	bestTimeMs float64
	bestLoss   float64
	tokensIn   int64
	tokensOut  int64
	cost       float64
}

func (f *totals) evaluated() int { return judged(f.counts) }

// ran is the number of judged programs a process ran.
func (f *totals) ran() int { return f.evaluated() - f.neverRan }

// tally aggregates programs as they come in the report's order.
type tally struct {
	runs.Tally
	neverRan int
}

// add counts the program, seq-th in the report's order (see
// Program.outcome).
func (t *tally) add(p *Program, seq int) {
	t.Add(p.outcome(seq))
	if p.NeverRan() {
		t.neverRan++
	}
}

// totals reads the totals off the tally.
func (t *tally) totals() totals {
	f := totals{
		programs: t.Members, neverRan: t.neverRan, counts: classCounts{},
		bestTimeMs: t.Fastest.TrainTimeMs, bestLoss: t.Lowest.ValLoss,
		tokensIn: t.InputTokens, tokensOut: t.OutputTokens, cost: t.CostUSD,
	}
	for c, n := range t.Classes {
		f.counts[c] += n
	}
	return f
}

// group aggregates the programs of one model, stage or phase.
type group struct {
	name string
	totals
	tally  tally
	trend  fit
	points []*Program // acceptable with a time, for the trend
}

// settle fills the group's totals and trend once every program is added.
func (g *group) settle() {
	g.totals = g.tally.totals()
	g.trend = trendOf(g.points)
}

// rate returns part/whole, or NaN when whole is 0 (shown as "–").
func rate(part, whole int) float64 {
	if whole == 0 {
		return math.NaN()
	}
	return float64(part) / float64(whole)
}

// fit is a least-squares line y = a + b·x through n points at iters
// distinct x values.
type fit struct {
	ok    bool
	a, b  float64
	n     int
	iters int
}

// Minimum support of a trend worth reading: below it the line is drawn
// and quoted with a caveat (the run printed a slope through two
// points as if it meant something).
const (
	trendMinPoints = 5
	trendMinIters  = 3
)

// weak reports whether the fit rests on too few programs or iterations to
// say whether the search is improving.
func (f fit) weak() bool { return f.n < trendMinPoints || f.iters < trendMinIters }

// caveat says why a weak fit is weak, "" for a sound one.
func (f fit) caveat() string {
	if !f.ok || !f.weak() {
		return ""
	}
	return fmt.Sprintf("only %s over %s: too few to read as a trend", plural(f.n, "program", "programs"), plural(f.iters, "iteration", "iterations"))
}

// at returns the line's value at x.
func (f fit) at(x float64) float64 { return f.a + f.b*x }

// leastSquares fits y = a + b·x. It needs two points with different x.
func leastSquares(xs, ys []float64) fit {
	n := len(xs)
	if n < 2 || len(ys) != n {
		return fit{n: n}
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy float64
	for i := range xs {
		dx := xs[i] - mx
		sxx += dx * dx
		sxy += dx * (ys[i] - my)
	}
	if sxx == 0 {
		return fit{n: n}
	}
	b := sxy / sxx
	return fit{ok: true, a: my - b*mx, b: b, n: n}
}

// trendOf fits train time against iteration.
func trendOf(ps []*Program) fit {
	xs := make([]float64, len(ps))
	ys := make([]float64, len(ps))
	iters := map[int]bool{}
	for i, p := range ps {
		xs[i] = float64(p.Iteration)
		ys[i] = p.TrainTimeMs
		iters[p.Iteration] = true
	}
	f := leastSquares(xs, ys)
	f.iters = len(iters)
	return f
}

// analyze derives the report's numbers from d. It never fails: whatever
// is missing shows up as empty tables and notes, not as errors.
func analyze(d *Data) *analysis {
	a := &analysis{d: d, total: len(d.Programs), claims: map[int64]*Claim{}}
	for i := range d.Claims {
		a.claims[d.Claims[i].ChildID] = &d.Claims[i]
	}
	a.progs = make([]*Program, len(d.Programs))
	for i := range d.Programs {
		a.progs[i] = &d.Programs[i]
	}
	slices.SortStableFunc(a.progs, func(x, y *Program) int {
		if c := cmp.Compare(x.Iteration, y.Iteration); c != 0 {
			return c
		}
		if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})

	models := map[string]*group{}
	stages := map[string]*group{}
	var modelOrder, stageOrder []string
	groupFor := func(m map[string]*group, order *[]string, name string) *group {
		g, ok := m[name]
		if !ok {
			g = &group{name: name}
			m[name] = g
			*order = append(*order, name)
		}
		return g
	}
	// Configured models come first, in their configured order, so that a
	// model that produced nothing still shows up with zeros.
	for _, m := range d.Run.Models {
		groupFor(models, &modelOrder, m)
	}
	a.hasPhase = d.Run.MetaPromptFrom >= 0
	phases := []*group{{name: "before meta-prompting"}, {name: "with meta-prompting"}}

	if len(a.progs) > 0 {
		a.minIter = a.progs[0].Iteration
		a.maxIter = a.progs[len(a.progs)-1].Iteration
		a.iters = a.maxIter - a.minIter + 1
		a.perIter = make([]iterStats, a.iters)
		for i := range a.perIter {
			a.perIter[i].iter, a.perIter[i].counts = a.minIter+i, classCounts{}
		}
	}

	var all tally
	for i, p := range a.progs {
		gs := []*group{
			groupFor(models, &modelOrder, displayName(p.Model)),
			groupFor(stages, &stageOrder, displayName(p.Stage)),
		}
		if a.hasPhase {
			if p.Iteration < d.Run.MetaPromptFrom {
				gs = append(gs, phases[0])
			} else {
				gs = append(gs, phases[1])
			}
		}
		seq := i + 1
		fastest := all.Fastest.ID
		all.add(p, seq)
		for _, g := range gs {
			g.tally.add(p, seq)
		}
		if all.Fastest.ID != fastest {
			a.records = append(a.records, p)
		}
		// The frontier after this iteration, so far.
		it := &a.perIter[p.Iteration-a.minIter]
		c := p.Class()
		it.counts[c]++
		it.bestTimeMs, it.bestLoss = all.Fastest.TrainTimeMs, all.Lowest.ValLoss
		if c != runs.ClassAcceptable {
			continue
		}
		if !measured(p.TrainTimeMs) {
			a.accUntimed++
			continue
		}
		a.accTimed = append(a.accTimed, p)
		for _, g := range gs {
			g.points = append(g.points, p)
		}
	}
	a.totals = all.totals()
	if id := all.Fastest.ID; id != 0 {
		a.fastest = a.progs[id-1]
	}
	if id := all.Lowest.ID; id != 0 {
		a.lowest = a.progs[id-1]
	}
	// An iteration without programs keeps the frontier of the one before.
	for i := 1; i < len(a.perIter); i++ {
		if it := &a.perIter[i]; len(it.counts) == 0 {
			it.bestTimeMs, it.bestLoss = a.perIter[i-1].bestTimeMs, a.perIter[i-1].bestLoss
		}
	}

	a.trend = trendOf(a.accTimed)
	for _, name := range modelOrder {
		g := models[name]
		g.settle()
		a.byModel = append(a.byModel, *g)
	}
	for _, name := range stageOrder {
		g := stages[name]
		g.settle()
		a.byStage = append(a.byStage, *g)
	}
	if a.hasPhase {
		for _, g := range phases {
			g.settle()
			a.byPhase = append(a.byPhase, *g)
		}
	}
	return a
}

// top returns up to n acceptable programs, fastest first; ties go to the
// lower loss, then the earlier program.
func (a *analysis) top(n int) []*Program {
	ps := slices.Clone(a.accTimed)
	slices.SortStableFunc(ps, func(x, y *Program) int {
		if c := cmp.Compare(x.TrainTimeMs, y.TrainTimeMs); c != 0 {
			return c
		}
		return cmp.Compare(lossKey(x.ValLoss), lossKey(y.ValLoss))
	})
	if len(ps) > n {
		ps = ps[:n]
	}
	return ps
}

// lossKey sorts unmeasured losses last.
func lossKey(x float64) float64 {
	if measured(x) {
		return x
	}
	return math.Inf(1)
}

// displayName names an empty model or stage.
func displayName(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
