package report

import (
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runs"
)

func TestClassify(t *testing.T) {
	for v, want := range map[string]runs.Class{
		"acceptable": runs.ClassAcceptable, "ACCEPTABLE ": runs.ClassAcceptable, "loss_too_high": runs.TooHigh,
		"error": runs.Buggy, "timeout": runs.Buggy, "invalid": runs.Buggy, "invalid: protected_region": runs.Buggy, "no_result": runs.Buggy,
		"apply_failed": runs.Buggy, "something new": runs.Buggy, "": runs.Pending, "running": runs.Pending, "fast_ok": runs.Pending,
		"duplicate": runs.ClassDuplicate, "no_proposal": runs.ClassNone,
	} {
		if got := Classify(v); got != want {
			t.Errorf("Classify(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestLeastSquares(t *testing.T) {
	f := leastSquares([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7})
	if !f.ok || math.Abs(f.a-1) > 1e-12 || math.Abs(f.b-2) > 1e-12 {
		t.Errorf("fit = %+v, want a=1 b=2", f)
	}
	// y = 10 - x with noise that cancels: the slope is exact.
	f = leastSquares([]float64{0, 0, 2, 2}, []float64{11, 9, 9, 7})
	if !f.ok || math.Abs(f.b+1) > 1e-12 || math.Abs(f.a-10) > 1e-12 {
		t.Errorf("fit = %+v, want a=10 b=-1", f)
	}
	for _, xs := range [][]float64{nil, {1}, {2, 2, 2}} {
		ys := make([]float64, len(xs))
		if f := leastSquares(xs, ys); f.ok {
			t.Errorf("leastSquares(%v) = %+v, want no fit", xs, f)
		}
	}
}

// A small run whose every derived number is worked out by hand.
func TestAnalyze(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := func(id int64, iter int, model, stage, verdict string, loss, ms, cost float64) Program {
		return Program{ID: id, Iteration: iter, Model: model, Stage: stage, Verdict: verdict, ValLoss: loss, TrainTimeMs: ms,
			CostUSD: cost, InputTokens: 10, OutputTokens: 1, CreatedAt: t0.Add(time.Duration(id) * time.Second)}
	}
	d := &Data{
		Run:       Run{TargetValLoss: 3.28, MetaPromptFrom: 2, Models: []string{"a", "b", "unused"}},
		Reference: Point{ValLoss: 3.279, TrainTimeMs: 1000},
		Programs: []Program{
			// Deliberately out of order.
			p(6, 2, "a", "meta", "acceptable", 3.27, 900, 0.3),
			p(1, 0, "a", "template", "acceptable", 3.27, 990, 0.1),
			p(2, 0, "b", "template", "error", 0, 0, 0.1),
			p(3, 0, "b", "template", "loss_too_high", 3.29, 800, 0.1),
			p(4, 1, "a", "template", "acceptable", 3.265, 950, 0.1),
			p(5, 1, "b", "fix", "acceptable", 3.28, 980, 0.2),
			p(7, 2, "b", "meta", "timeout", 0, 0, 0.3),
			p(8, 2, "b", "meta", "", 0, 0, 0.3),
			p(9, 3, "a", "meta", "acceptable", 3.26, 850, 0.3),
		},
	}
	dup := p(10, 3, "a", "meta", "acceptable", 3.2, 100, 0.05)
	dup.Duplicate = true
	d.Programs = append(d.Programs, dup)

	a := analyze(d)
	if a.total != 10 {
		t.Errorf("total %d", a.total)
	}
	if want := (classCounts{runs.Pending: 1, runs.ClassDuplicate: 1, runs.Buggy: 2, runs.TooHigh: 1, runs.ClassAcceptable: 5}); !maps.Equal(a.counts, want) {
		t.Errorf("counts = %v, want %v", a.counts, want)
	}
	if a.minIter != 0 || a.maxIter != 3 || a.iters != 4 || len(a.perIter) != 4 {
		t.Fatalf("iterations %d..%d (%d)", a.minIter, a.maxIter, a.iters)
	}
	if a.fastest == nil || a.fastest.ID != 9 {
		t.Errorf("fastest = %+v, want #9 (the duplicate's 100 ms does not count)", a.fastest)
	}
	if a.lowest == nil || a.lowest.ID != 9 {
		t.Errorf("lowest = %+v, want #9 (the duplicate's 3.2 does not count)", a.lowest)
	}
	var recs []int64
	for _, r := range a.records {
		recs = append(recs, r.ID)
	}
	if want := []int64{1, 4, 6, 9}; !slices.Equal(recs, want) {
		t.Errorf("records = %v, want %v", recs, want)
	}
	wantFrontier := []struct{ t, l float64 }{{990, 3.27}, {950, 3.265}, {900, 3.265}, {850, 3.26}}
	for i, w := range wantFrontier {
		if it := a.perIter[i]; it.bestTimeMs != w.t || it.bestLoss != w.l {
			t.Errorf("iteration %d frontier = %v / %v, want %v / %v", i, it.bestTimeMs, it.bestLoss, w.t, w.l)
		}
	}
	if c := a.perIter[2].counts; !maps.Equal(c, classCounts{runs.Pending: 1, runs.Buggy: 1, runs.ClassAcceptable: 1}) {
		t.Errorf("iteration 2 counts = %v", c)
	}
	if c := a.perIter[3].counts; !maps.Equal(c, classCounts{runs.ClassDuplicate: 1, runs.ClassAcceptable: 1}) {
		t.Errorf("iteration 3 counts = %v", c)
	}

	// Models: configured order first, an unused model stays with zeros.
	if len(a.byModel) != 3 || a.byModel[0].name != "a" || a.byModel[1].name != "b" || a.byModel[2].name != "unused" {
		t.Fatalf("models = %+v", a.byModel)
	}
	ma, mb := a.byModel[0], a.byModel[1]
	if ma.programs != 5 || ma.counts[runs.ClassDuplicate] != 1 || ma.counts[runs.ClassAcceptable] != 4 || ma.bestTimeMs != 850 {
		t.Errorf("model a = %+v", ma)
	}
	if math.Abs(ma.cost-0.85) > 1e-9 || ma.tokensIn != 50 || ma.tokensOut != 5 {
		t.Errorf("model a cost %v tokens %d/%d", ma.cost, ma.tokensIn, ma.tokensOut)
	}
	if mb.programs != 5 || mb.evaluated() != 4 || mb.counts[runs.Buggy] != 2 || mb.bestTimeMs != 980 || mb.bestLoss != 3.28 {
		t.Errorf("model b = %+v", mb)
	}
	// Model a's acceptable points: (0,990) (1,950) (2,900) (3,850):
	// Sxy = -235, Sxx = 5, slope -47.
	if !ma.trend.ok || math.Abs(ma.trend.b+47) > 1e-9 {
		t.Errorf("model a trend = %+v, want slope -47", ma.trend)
	}
	if mb.trend.ok {
		t.Errorf("model b has one acceptable program, yet a trend %+v", mb.trend)
	}
	if a.byModel[2].programs != 0 {
		t.Errorf("unused model = %+v", a.byModel[2])
	}

	// Phases split at iteration 2.
	if len(a.byPhase) != 2 || a.byPhase[0].programs != 5 || a.byPhase[1].programs != 5 {
		t.Errorf("phases = %+v", a.byPhase)
	}
	if got := a.byPhase[1].counts[runs.ClassAcceptable]; got != 2 {
		t.Errorf("acceptable with meta-prompting = %d, want 2", got)
	}

	top := a.top(3)
	if len(top) != 3 || top[0].ID != 9 || top[1].ID != 6 || top[2].ID != 4 {
		t.Errorf("top = %v", ids(top))
	}
}

func TestAnalyzeNoMetaPrompting(t *testing.T) {
	a := analyze(&Data{Run: Run{MetaPromptFrom: -1}, Programs: []Program{{ID: 1, Iteration: 3, Verdict: "acceptable", ValLoss: 1, TrainTimeMs: 5}}})
	if a.hasPhase || len(a.byPhase) != 0 {
		t.Errorf("phases without meta-prompting: %+v", a.byPhase)
	}
	if a.minIter != 3 || a.iters != 1 {
		t.Errorf("iterations %d (%d)", a.minIter, a.iters)
	}
	if a.byModel[0].name != "(none)" {
		t.Errorf("empty model named %q", a.byModel[0].name)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{speedup(172_680, 176_700), "+2.3%"}, // (176.70 - 172.68) / 176.70
		{speedup(180_000, 176_700), "-1.9%"},
		{speedup(0, 176_700), dash},
		{speedup(1000, math.NaN()), dash},
		{secs(172_680), "172.68"},
		{secs(9_876.5), "9.877"},
		{secs(math.Inf(1)), dash},
		{delta(172_680, 176_700), "-4.020"},
		{loss(3.28), "3.2800"},
		{loss(math.NaN()), dash},
		{usd(0), "$0"},
		{usd(0.004), "$0.0040"},
		{usd(14.876), "$14.88"},
		{usd(math.NaN()), dash},
		{count(1234567), "1,234,567"},
		{count(-1234), "-1,234"},
		{count(12), "12"},
		{compact(950), "950"},
		{compact(12_345), "12.3k"},
		{compact(4_560_000), "4.56M"},
		{millis(61_020), "61,020"},
		{millis(0.4375), "0.438"},
		{percent(0.481), "48.1%"},
		{percent(math.NaN()), dash},
		{clip("a\n  b   c", 10), "a b c"},
		{clip("abcdefghijkl", 5), "abcd…"},
		{tickLabel(-1e-17, 2), "0.00"},
		{withUnit(dash, "s"), dash},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestTicks(t *testing.T) {
	labels := func(ticks []plot.Tick) []string {
		var out []string
		for _, t := range ticks {
			if t.Label != "" {
				out = append(out, t.Label)
			}
		}
		return out
	}
	if got := labels(integerTicks(-0.5, 29.5)); !slices.Equal(got, []string{"0", "5", "10", "15", "20", "25"}) {
		t.Errorf("integer ticks 0..29 = %v", got)
	}
	if got := labels(integerTicks(-0.5, 0.5)); !slices.Equal(got, []string{"0"}) {
		t.Errorf("integer ticks of one iteration = %v", got)
	}
	if got := labels(integerTicks(0, 900)); len(got) < 4 || len(got) > 11 {
		t.Errorf("integer ticks 0..900 = %v", got)
	}
	got := labels(preciseTicks(3.2701, 3.2800))
	seen := map[string]bool{}
	for _, l := range got {
		if seen[l] {
			t.Errorf("loss ticks repeat %q: %v", l, got)
		}
		seen[l] = true
	}
}

func ids(ps []*Program) []int64 {
	var out []int64
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func TestValTime(t *testing.T) {
	b := &Best{Program: Program{TrainTimeMs: 7_000}, Curve: []harness.Step{
		{Step: 10, TrainTimeMs: 1_000, StepAvgMs: 100}, {Step: 30, TrainTimeMs: 3_000, StepAvgMs: 100}, {Step: 50, TrainTimeMs: 5_000, StepAvgMs: 100},
	}}
	for _, c := range []struct {
		v    harness.Val
		want float64
		ok   bool
	}{
		{harness.Val{Step: 30}, 3_000, true},
		{harness.Val{Step: 20}, 2_000, true},              // interpolated
		{harness.Val{Step: 60}, 6_000, true},              // past the last designated step
		{harness.Val{Step: 70, Final: true}, 7_000, true}, // the final pass sits at the program's time
		{harness.Val{Step: 5}, 0, false},                  // before any designated step
	} {
		got, ok := valTime(b, c.v)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("valTime(%+v) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}
