package bench

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/bench/benchtest"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/store"
)

// scaled is benchtest's evaluator with its train times a factor: a
// machine that is slower (or luckier) than when the records were timed.
// factor gets the request.
func scaled(st store.Store, factor func(req eval.Request) float64) *evaltest.Scripted {
	ev := benchtest.NewEvaluator(st)
	ev.Else = func(req eval.Request, hash string) evaltest.Outcome {
		o := benchtest.Outcome(req, hash)
		o.TrainTimeMs *= factor(req)
		return o
	}
	return ev
}

// --retime K re-times each attempt's best node K times in alternation with
// its start and scores FSR from that series: a best that measured half its
// true time once (a lucky moment) scores what the series measures, and
// the single timing's FSR is kept beside it.
// near says whether two figures agree to rounding.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRetime(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "")
	// Single timings of the search (seeds below 1000) are lucky: half the
	// true time. The re-timing's seeds are 1000 and up.
	ev := scaled(fx.st, func(req eval.Request) float64 {
		if req.Seed < 1000 {
			return 0.5
		}
		return 1
	})
	fx.env.Evaluator = ev
	m, _ := coder(&benchtest.Coder{Speedup: 0.8})
	cfg := Config{Scaffold: "flat", Model: modelRecord(m), Nodes: 2, Tasks: []string{"r0-r1"}, Retime: 4}
	b, err := New(ctx, fx.env, fx.suite, cfg, "retimed", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pairs int
	fx.env.Progress = func(line string) {
		if strings.Contains(line, "re-timing pair 2 of 4: the best node") && pairs == 0 {
			pairs++
			b.Drain("a test stops the run in the middle of the re-timing")
		}
	}
	b.env.Progress = fx.env.Progress
	sum, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := sum.Attempts[0]
	// The drain lets the pair in progress finish: two pairs are recorded.
	if sum.StopReason != StopInterrupted || a.State != store.AttemptRunning || len(a.RetimeEvaluations) != 4 {
		t.Fatalf("stopped %s: attempt %s with %d re-timing runs recorded, want two pairs", sum.StopReason, a.State, len(a.RetimeEvaluations))
	}
	run, _ := fx.st.BenchRun(ctx, "retimed")
	b2, err := Resume(ctx, fx.env, fx.suite, run, Budget{}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err = b2.Run(ctx); err != nil {
		t.Fatal(err)
	}
	a = sum.Attempts[0]
	if sum.StopReason != StopDone || a.State != store.AttemptDone {
		t.Fatalf("resumed: %s, attempt %s", sum.StopReason, a.State)
	}
	// The search's best measured 400 ms once (FSR 3 against 1000 -> 800);
	// in alternation with the start it takes 0.8 of the start's time.
	if a.RetimeN != 4 || len(a.RetimeEvaluations) != 8 || !(a.RetimeP < 0.01) || !near(a.SingleFSR, 3.0) || math.Abs(a.FSR-1) > 0.01 ||
		math.Abs(a.BestMs-800) > 1 {
		t.Errorf("re-timed attempt: n %d, %d evaluations, p %g, single FSR %g, FSR %g, best %g ms", a.RetimeN, len(a.RetimeEvaluations),
			a.RetimeP, a.SingleFSR, a.FSR, a.BestMs)
	}
	// Each pair ran once, in ABBA order, both programs with the pair's
	// seed: the pairs finished before the stop were not run again.
	var order []string
	for _, r := range ev.Requests() {
		if r.Seed >= 1000 {
			who := "B"
			if strings.Contains(string(r.Program), "TIME = 1000\n") { // the start; the best node is a change of its TIME
				who = "S"
			}
			order = append(order, who+strconv.Itoa(r.Seed-1000))
		}
	}
	if got := strings.Join(order, " "); got != "S0 B0 B1 S1 S2 B2 B3 S3" {
		t.Errorf("re-timing runs %s, want S0 B0 B1 S1 S2 B2 B3 S3", got)
	}
}

// A calibration records when and under what load it was taken, and an
// attempt whose nodes all ran far slower than the calibrated start warns
// that the machine drifted from it; without a calibration, nodes far
// slower than a published start warn that the search can only expand the
// start, and the search says so as soon as its first nodes show it.
func TestTimeNotes(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "")
	load := []float64{0.5, 0.4, 0.3}
	fx.env.LoadAvg = func() []float64 { return load }
	rep, err := Calibrate(ctx, fx.env, fx.suite, CalibrateOptions{Repeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.At.IsZero() || len(rep.Conditions.LoadAvg) != 3 || len(rep.Conditions.LoadAvgEnd) != 3 {
		t.Fatalf("calibration report %+v", rep)
	}
	cals, _ := fx.st.Calibrations(ctx, "mini", benchtest.Class)
	if len(cals) != 3 || cals[0].Conditions.LoadAvg[0] != 0.5 || !strings.Contains(ConditionsText(cals[0].CreatedAt, cals[0].Conditions), "load average (1/5/15 min) 0.50/0.40/0.30") {
		t.Fatalf("stored calibrations %+v", cals)
	}
	// The machine is now twice as slow and loaded.
	load = []float64{14, 12, 9}
	fx.env.Evaluator = scaled(fx.st, func(eval.Request) float64 { return 2 })
	m := mutate()
	var warned []string
	fx.env.Progress = func(line string) {
		if strings.Contains(line, "warning:") {
			warned = append(warned, line)
		}
	}
	sum := runNew(t, fx.env, fx.suite, Config{Model: modelRecord(m), Nodes: 4, Tasks: []string{"r0-r1"}}, "drift", m)
	a := sum.Attempts[0]
	if a.TimeSource != TimesCalibrated || !strings.Contains(a.Notes, "slower now than when it was calibrated") ||
		!strings.Contains(a.Notes, "0.50/0.40/0.30") || !strings.Contains(a.Notes, "load average now 14.00/12.00/9.00") {
		t.Errorf("drift: %s times, notes %q", a.TimeSource, a.Notes)
	}
	// Another suite name: no calibration, published times.
	fx2 := newFixture(t, "")
	fx2.env.Evaluator = scaled(fx2.st, func(eval.Request) float64 { return 2 })
	fx2.env.Progress = fx.env.Progress
	warned = nil
	sum = runNew(t, fx2.env, fx2.suite, Config{Model: modelRecord(m), Nodes: 4, Tasks: []string{"r0-r1"}}, "slow", m)
	a = sum.Attempts[0]
	if a.TimeSource != TimesPublished || !strings.Contains(a.Notes, "only ever expand the start") || !strings.Contains(a.Notes, "frontier bench calibrate mini") {
		t.Errorf("slow against published times: notes %q", a.Notes)
	}
	live := 0
	for _, w := range warned {
		if strings.Contains(w, "only ever expand the start") && strings.HasPrefix(strings.TrimSpace(w), "warning") {
			live++
		}
	}
	if live < 2 { // once while the search ran, once at its end
		t.Errorf("warnings %q: want one while the search runs and one at its end", warned)
	}
}
