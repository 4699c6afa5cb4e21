package evolve

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
)

// seriesFake is a fakeEvaluator that also runs series. A program's true
// time is trueMs of its hash; a single timing of a child is its true time
// times luck (a loaded machine that happened to be fast), while a series
// measures the true time with 1% noise per seed. The series are its own:
// the scripted evaluator times single runs only.
type seriesFake struct {
	*evaltest.Scripted
	trueMs func(h string) float64
	luck   float64
	// luckFn, when set, replaces luck per program.
	luckFn func(h string) float64
	// full is how long each full run takes.
	full   time.Duration
	ref    string // the reference's hash: its single timing is true
	series atomic.Int64
	// prior records, per series, how many runs it was given as finished.
	prior []int
}

func newSeriesFake(trueMs func(h string) float64, luck float64) *seriesFake {
	f := &seriesFake{trueMs: trueMs, luck: luck}
	f.Scripted = &evaltest.Scripted{Else: f.outcome}
	return f
}

// outcome is hashOutcome with an acceptable program's time its true time,
// times its luck.
func (f *seriesFake) outcome(req eval.Request, h string) evaltest.Outcome {
	o := hashOutcome(req, h)
	o.FullDelay = f.full
	if req.FastOnly || o.ValLoss > req.Track.TargetValLoss {
		return o
	}
	ms := f.trueMs(h)
	if h != f.ref && f.luck > 0 {
		ms *= f.luck
	}
	if f.luckFn != nil {
		ms *= f.luckFn(h)
	}
	o.TrainTimeMs = ms
	return o
}

// EvaluateRepeats runs n "runs" of each program, as the real evaluator's
// interleaved series would, and decides with the same tests.
func (f *seriesFake) EvaluateRepeats(ctx context.Context, rr eval.RepeatRequest) (*eval.Result, error) {
	f.series.Add(1)
	f.prior = append(f.prior, len(rr.Prior))
	alpha := rr.Track.Verification.Alpha
	measure := func(src []byte) ([]float64, []float64, []eval.RepeatRun) {
		h := store.Hash(src)
		var ts, ls []float64
		var rs []eval.RepeatRun
		for i := range rr.N {
			// Over 5 runs the jitter takes each of -1%..+1% once, so that
			// two programs of the same true time have the same mean: a
			// jitter drawn from the hash's characters made one of them
			// 1% faster with a small spread, now and then a confirmed
			// claim.
			jitter := float64((int(h[0])+7*i)%5-2) / 200
			ts = append(ts, f.trueMs(h)*(1+jitter))
			ls = append(ls, 3.9+float64(int(h[1])%20)/100+jitter/10)
			rs = append(rs, eval.RepeatRun{Seed: rr.Seed + i, EvaluationID: int64(1000 + i), Verdict: eval.Acceptable, ValLoss: ls[i], TrainTimeMs: ts[i]})
		}
		return ts, ls, rs
	}
	ts, ls, rs := measure(rr.Program)
	bts, _, brs := measure(rr.Baseline)
	rep := &eval.Repeats{N: rr.N, Runs: rs, Interleaved: true, ValLoss: stats.Summarize(ls, 0.95), TrainTimeMs: stats.Summarize(ts, 0.95)}
	lt, _ := stats.MeanBelow(ls, rr.Track.TargetValLoss, alpha)
	rep.LossTest = &lt
	wt, _ := stats.WelchLess(ts, bts, alpha)
	bs := stats.Summarize(bts, 0.95)
	rep.Baseline = &eval.BaselineComparison{TrainTimeMs: bs, Test: wt, Runs: brs, SpeedupPct: 100 * runs.Speedup(bs.Mean, rep.TrainTimeMs.Mean)}
	rep.Record = lt.Significant && wt.Significant
	rep.RecordReason = fmt.Sprintf("loss %v, time %v", lt, wt)
	res := &eval.Result{Verdict: eval.Acceptable, Repeats: rep}
	if !lt.Significant {
		res.Verdict = eval.LossTooHigh
	}
	return res, nil
}

func confirmRun(t *testing.T, f *seriesFake, cfg Config) (*Engine, *runview.Summary) {
	t.Helper()
	st := openStore(t, "")
	f.Store = st
	opts := fakeOptions(t, st)
	opts.Evaluator = f
	src, err := opts.Track.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	f.ref = store.Hash(src)
	e, _ := runEngine(t, opts, cfg)
	run, err := st.Run(context.Background(), fmt.Sprint(e.RunID()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := runview.Summarize(context.Background(), st, run)
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}

// A child that measured far faster once, on a machine that was fast for a
// moment, is a candidate, not a record: its series shows the same time as
// the reference's, the claim is rejected and stored, and the record stays
// the reference wherever it is read.
func TestCandidateRecordRejected(t *testing.T) {
	f := newSeriesFake(func(string) float64 { return 1000 }, 0.775)
	cfg := smallConfig()
	cfg.Confirm.Pairs = 5
	e, s := confirmRun(t, f, cfg)
	if f.series.Load() == 0 {
		t.Fatal("no series ran")
	}
	if s.Record == nil || s.Record.ID != s.Reference.ID || s.RecordClaim != nil {
		t.Errorf("record %v, want the reference: no candidate was confirmed", s.Record)
	}
	if s.Fastest == nil || s.Fastest.TrainTimeMs >= s.Reference.TrainTimeMs {
		t.Fatalf("fastest single timing %v: want a lucky child", s.Fastest)
	}
	rejected := 0
	for _, c := range s.Claims {
		if c.State == runs.ClaimRejected {
			rejected++
			if c.Pairs != 5 || len(c.Evaluations) != 10 || math.IsNaN(c.TimeP) || c.TimeP < 0.01 || !strings.Contains(c.Evidence(), "rejected") {
				t.Errorf("rejected claim %+v: evidence %q", c.Claim, c.Evidence())
			}
		}
		if c.State == runs.ClaimQueued || c.State == runs.ClaimRunning {
			t.Errorf("claim of #%d left %s", c.ChildID, c.State)
		}
	}
	if rejected == 0 {
		t.Errorf("no rejected claim stored: %d claims", len(s.Claims))
	}
	// Every child was lucky once and is as slow as the reference: each
	// claim, opened in turn as the one before was refuted, is rejected,
	// and no candidate is left.
	st := e.Status()
	if st.BestTimeID != s.Reference.ID || st.FastestID != 0 || s.Candidate != nil || rejected < 2 {
		t.Errorf("status record #%d, candidate #%d (%s); summary candidate %v; %d rejected", st.BestTimeID, st.FastestID, st.FastestClaim, s.Candidate, rejected)
	}
	if txt := e.recordText(); !strings.Contains(txt, "reference") || !strings.Contains(txt, "did not confirm") {
		t.Errorf("the prompt's record line %q", txt)
	}
	// "Full evaluations" is one number wherever it is read: the search's
	// own, the reference's included; the series' runs are counted apart.
	if st.Evaluations != s.Evaluations || st.SeriesRuns != s.SeriesRuns || s.SeriesRuns != 10*rejected {
		t.Errorf("full evaluations: status %d, summary %d; series runs: status %d, summary %d, want %d",
			st.Evaluations, s.Evaluations, st.SeriesRuns, s.SeriesRuns, 10*rejected)
	}
}

// A child that is truly faster is confirmed by its series and becomes the
// record; once the run has measured its noise, a later candidate far beyond
// it is confirmed on its single timing, without another series.
func TestCandidateRecordConfirmed(t *testing.T) {
	f := newSeriesFake(func(h string) float64 { return 1000 + float64(h[2])*4 }, 0)
	cfg := smallConfig()
	cfg.Budget.MaxIterations = 8
	cfg.Confirm.Pairs = 5
	_, s := confirmRun(t, f, cfg)
	if s.RecordClaim == nil || s.Record == nil || s.Record.ID == s.Reference.ID {
		t.Fatalf("record %v (claim %v): want a confirmed child; claims %d", s.Record, s.RecordClaim, len(s.Claims))
	}
	if s.RecordClaim.State != runs.ClaimConfirmed || !(s.RecordMs < s.Reference.TrainTimeMs) {
		t.Errorf("record claim %+v, %.0f ms vs the reference's %.0f", s.RecordClaim, s.RecordMs, s.Reference.TrainTimeMs)
	}
	for _, c := range s.Claims {
		if c.State == runs.ClaimConfirmed && c.Method == runs.MethodSeries && (c.TimeP >= c.Alpha || !(c.SpeedupLo > 0) || !(c.SpeedupHi > c.Speedup)) {
			t.Errorf("confirmed claim without its evidence: %+v", c.Claim)
		}
	}
	if n := f.series.Load(); int(n) != countMethod(s.Claims, runs.MethodSeries) {
		t.Errorf("%d series ran, %d series claims stored", n, countMethod(s.Claims, runs.MethodSeries))
	}
}

func countMethod(cs []*store.Confirmation, m runs.Method) int {
	n := 0
	for _, c := range cs {
		if c.Method == m && c.State.Done() && c.State != runs.ClaimSkipped && c.State != runs.ClaimSuperseded {
			n++
		}
	}
	return n
}

// measuredEngine is a new engine whose reference measured 1000 ms at
// loss 3.9, and that reference.
func measuredEngine(t *testing.T) (*Engine, *store.Child) {
	t.Helper()
	e, err := New(context.Background(), fakeOptions(t, openStore(t, "")), smallConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	ref := e.pop.reference()
	ref.State, ref.Verdict, ref.TrainTimeMs, ref.ValLoss = runs.Done, runs.Acceptable, 1000, 3.9
	return e, ref
}

// Beyond the measured noise a single timing is enough: a claim judged
// against two series' noise, with its p-value and interval.
func TestClaimBeyondNoise(t *testing.T) {
	e, ref := measuredEngine(t)
	e.claims.reset([]*store.Confirmation{{Claim: runs.Claim{ChildID: 50, BaselineID: ref.ID, Method: runs.MethodSeries, State: runs.ClaimRejected,
		Pairs: 5, TimeMs: 990, TimeSD: 10, BaselineMs: 1000, BaselineSD: 12, LossSD: 0.002}}}, e.pop.settledPrograms())
	fast := &store.Child{ID: 60, Origin: runs.OriginMutate, State: runs.Done, Verdict: runs.Acceptable, TrainTimeMs: 400, ValLoss: 3.9}
	fast.ProgramHash = "f"
	e.admit(fast)
	cl := e.newClaim(fast)
	if cl == nil || cl.Method != runs.MethodNoise || cl.State != runs.ClaimConfirmed || cl.NoiseDF != 8 || !(cl.TimeP < 0.01) ||
		!(cl.SpeedupLo < 0.6 && cl.SpeedupHi > 0.6) {
		t.Fatalf("claim %+v", cl)
	}
	slightly := &store.Child{ID: 61, Origin: runs.OriginMutate, State: runs.Done, Verdict: runs.Acceptable, TrainTimeMs: 390, ValLoss: 3.9}
	slightly.ProgramHash = "s"
	e.admit(slightly)
	e.claims.add(cl)
	if cl2 := e.newClaim(slightly); cl2 == nil || cl2.Method != runs.MethodSeries || cl2.State != runs.ClaimSkipped ||
		!strings.Contains(cl2.Reason, "inside the measured noise") {
		t.Errorf("a candidate 2.5%% faster than a record, inside the noise: %+v", cl2)
	}
	// A run whose earlier candidate measured 60% faster once than in its
	// series has learned how far its single timings can be off: the same
	// margin now needs a series.
	e.claims.list()[0].SingleMs = 400
	e.claims.reset(e.claims.list()[:1], e.pop.settledPrograms())
	if cl3 := e.newClaim(slightly); cl3 == nil || cl3.Method != runs.MethodSeries || !strings.Contains(cl3.Reason, "inside the measured noise") {
		t.Errorf("after a single timing 60%% off its series, a 61%% margin: %+v", cl3)
	}
}

// A series the budget cannot hold is not started: the candidate stays a
// single timing, and its claim says which budget.
func TestClaimSkippedOnBudget(t *testing.T) {
	for _, c := range []struct {
		budget BudgetConfig
		pairs  int
		full   time.Duration
		want   string
	}{
		{BudgetConfig{MaxIterations: 4, MaxEvaluations: 6}, 5, 0, "max_evaluations"},
		// 20 runs of 100 ms: more than what is left of 2 s.
		{BudgetConfig{MaxIterations: 2, MaxDuration: llm.Duration(2 * time.Second)}, 10, 100 * time.Millisecond, "max_duration"},
	} {
		f := newSeriesFake(func(string) float64 { return 1000 }, 0.7)
		f.full = c.full
		cfg := smallConfig()
		cfg.Budget, cfg.Confirm.Pairs = c.budget, c.pairs
		_, s := confirmRun(t, f, cfg)
		if f.series.Load() != 0 {
			t.Errorf("%s: %d series ran beyond the budget", c.want, f.series.Load())
		}
		skipped := false
		for _, cl := range s.Claims {
			skipped = skipped || (cl.State == runs.ClaimSkipped && strings.Contains(cl.Reason, c.want))
		}
		if !skipped {
			t.Errorf("%s: no claim skipped for it among %d", c.want, len(s.Claims))
		}
	}
}

// A single timing a series showed to be noise does not keep the next
// fastest child from being tested: in the end-to-end run, a child timed at
// 0.6 s once (4.7 s in its series) hid every child at 4.5 s, which were
// never tested, and the record stayed the reference.
func TestRefutedCandidateOpensNext(t *testing.T) {
	var first atomic.Value
	f := newSeriesFake(nil, 0)
	f.trueMs = func(h string) float64 {
		if h == f.ref {
			return 1000
		}
		if first.CompareAndSwap(nil, h) || first.Load() == h {
			return 1000 // as slow as the reference, but it measured 300 ms once
		}
		return 700
	}
	f.luckFn = func(h string) float64 {
		if first.Load() == h {
			return 0.3
		}
		return 1
	}
	cfg := smallConfig()
	cfg.Confirm.Pairs = 5
	// One slot: the lucky program, the first whose full run starts, is
	// the first to settle. With two, a program started after it could end
	// first, have its series measure the noise, and the lucky timing then
	// stand beyond that noise with no series of its own (4 runs in 30).
	cfg.Slots = 1
	_, s := confirmRun(t, f, cfg)
	var rejected, confirmed bool
	for _, c := range s.Claims {
		rejected = rejected || (c.State == runs.ClaimRejected && c.ChildID == s.Fastest.ID)
		confirmed = confirmed || c.State == runs.ClaimConfirmed
	}
	if !rejected || !confirmed || s.RecordClaim == nil || s.Record.ID == s.Fastest.ID {
		t.Errorf("fastest #%d rejected %v; another confirmed %v; record %v", s.Fastest.ID, rejected, confirmed, s.Record)
	}
}

// A claim compares timings taken together. The run: the record's
// time became the mean of a series taken under heavy load, and a child
// 12% slower than the reference, timed once at a quieter moment, was
// faster than that mean and became a candidate. A single timing is
// compared with the record's own single timing.
func TestCandidateAgainstSingleTiming(t *testing.T) {
	e, ref := measuredEngine(t)
	// A series under load measured the reference at 1500 ms on average.
	e.claims.reset([]*store.Confirmation{{Claim: runs.Claim{ChildID: 50, BaselineID: ref.ID, Method: runs.MethodSeries, State: runs.ClaimRejected,
		Pairs: 5, SingleMs: 900, TimeMs: 1490, TimeSD: 40, BaselineMs: 1500, BaselineSD: 45, LossSD: 0.002, TimeP: 0.4}}}, e.pop.settledPrograms())
	if _, rec := e.standing(); rec.Ms != 1500 || rec.SingleMs != 1000 {
		t.Fatalf("record %+v: want the series' 1500 ms and the single timing 1000 ms", rec)
	}
	slower := &store.Child{ID: 60, Origin: runs.OriginMutate, State: runs.Done, Verdict: runs.Acceptable, TrainTimeMs: 1120, ValLoss: 3.9, ProgramHash: "s"}
	e.admit(slower)
	if cl := e.newClaim(slower); cl != nil {
		t.Errorf("a child 12%% slower than the reference's single timing became a candidate: %+v", cl.Claim)
	}
	e.publish()
	if st := e.Status(); st.FastestID != 0 || st.RecordSingleMs != 1000 || st.BestTimeMs != 1500 {
		t.Errorf("the status shows #%d as a candidate against %g ms (record %g ms)", st.FastestID, st.RecordSingleMs, st.BestTimeMs)
	}
	faster := &store.Child{ID: 61, Origin: runs.OriginMutate, State: runs.Done, Verdict: runs.Acceptable, TrainTimeMs: 950, ValLoss: 3.9, ProgramHash: "f"}
	e.admit(faster)
	cl := e.newClaim(faster)
	if cl == nil || cl.BaselineMs != 1000 || runs.FormatSpeedup(cl.Speedup) != "+5.0%" || cl.Basis() != "single timings" {
		t.Fatalf("a child faster than the reference's single timing: %+v", cl)
	}
}

// A refuted claim is in the prompts: the model is told that a candidate's
// single timing did not hold up, with its series' figures, so that it
// does not build on noise.
func TestRefutedClaimInPrompts(t *testing.T) {
	f := newSeriesFake(func(string) float64 { return 1000 }, 0.775)
	st := openStore(t, "")
	f.Store = st
	opts := fakeOptions(t, st, Model{Name: "fake", Kind: propose.KindLLM, Client: fakeModel(0)})
	opts.Evaluator = f
	src, err := opts.Track.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	f.ref = store.Hash(src)
	cfg := smallConfig()
	cfg.Confirm.Pairs = 5
	cfg.Budget.MaxIterations = 6
	cfg.MaxOpenIterations = 1
	e, _ := runEngine(t, opts, cfg)
	ctx := context.Background()
	claims, _ := st.Confirmations(ctx, e.RunID())
	// A prompt lists the newest refuted claims, so any of them may be
	// the one it names.
	var wants []string
	var first time.Time
	for _, c := range claims {
		if c.State == runs.ClaimRejected {
			wants = append(wants, fmt.Sprintf("#%d measured %s once, but its series of 5 runs each in alternation with #%d measured", c.ChildID, fmtMs(c.SingleMs), c.BaselineID))
			if first.IsZero() || c.FinishedAt.Before(first) {
				first = c.FinishedAt
			}
		}
	}
	if len(wants) == 0 {
		t.Fatal("no claim was refuted")
	}
	calls, err := st.LLMCalls(ctx, e.RunID(), true)
	if err != nil {
		t.Fatal(err)
	}
	seen, after := 0, 0
	for _, c := range calls {
		if !c.CreatedAt.After(first) {
			continue
		}
		after++
		if !strings.Contains(c.Request, "refuted") || !strings.Contains(c.Request, "Welch p") {
			continue
		}
		for _, w := range wants {
			if strings.Contains(c.Request, w) {
				seen++
				break
			}
		}
	}
	if after == 0 {
		t.Fatal("no prompt was made after the first refutation")
	}
	// Prompts built before the refutation (and fix prompts, which show no
	// record) may be sent after it: at least one must name it.
	if seen == 0 {
		t.Errorf("none of %d prompts after the first refutation names a refuted claim with its series' figures (%q...)", after, wants[0])
	}
}

// A confirmation series cut off by a kill resumes with the pairs it
// finished: they are not run again. A pair cut in the middle runs again
// whole, so that its two runs are taken together.
func TestSeriesResumesWithFinishedPairs(t *testing.T) {
	f := newSeriesFake(func(string) float64 { return 1000 }, 0.775)
	cfg := smallConfig()
	cfg.Confirm.Pairs = 5
	e, s := confirmRun(t, f, cfg)
	ctx := context.Background()
	st := f.Store.(store.Store)
	var cl *store.Confirmation
	for _, c := range s.Claims {
		if c.State == runs.ClaimRejected && c.Method == runs.MethodSeries {
			cl = c
			break
		}
	}
	if cl == nil {
		t.Fatal("no series ran")
	}
	// The last series is cut off: its claim is left running, two pairs and
	// half of a third finished since it started.
	cand, base := e.pop.member(cl.ChildID), e.pop.member(cl.BaselineID)
	cl.State, cl.StartedAt, cl.FinishedAt = runs.ClaimRunning, time.Now().Add(-time.Minute), time.Time{}
	if err := st.RunInTx(ctx, func(tx store.RunTx) error { return tx.UpdateConfirmation(cl) }); err != nil {
		t.Fatal(err)
	}
	seed := cfg.EvalSeed + 1
	finish := func(h string, seed int) {
		ev := &store.Evaluation{ProgramHash: h, Track: "quick", TrackHash: "t", Seed: seed}
		if err := st.CreateEvaluation(ctx, ev); err != nil {
			t.Fatal(err)
		}
		ev.Verdict, ev.TrainTimeMs, ev.ValLoss = "acceptable", 1000, 3.9
		ev.Result = []byte(`{"verdict":"acceptable","metrics":{"val_loss":3.9,"train_time_ms":1000}}`)
		if err := st.FinishEvaluation(ctx, ev, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, sd := range []int{seed, seed + 1} {
		finish(base.ProgramHash, sd)
		finish(cand.ProgramHash, sd)
	}
	finish(base.ProgramHash, seed+2)
	run, _ := st.Run(ctx, e.RunName())
	opts := fakeOptions(t, st)
	opts.Evaluator = f
	f.prior = nil
	r, err := Resume(ctx, opts, run, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(f.prior) == 0 || f.prior[0] != 4 {
		t.Errorf("the resumed series was given %v finished runs, want the 4 runs of its 2 finished pairs", f.prior)
	}
}
