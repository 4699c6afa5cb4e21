package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
)

// Repeats is the statistics of one program run with several seeds.
type Repeats struct {
	N    int         `json:"n"`
	Runs []RepeatRun `json:"runs"`
	// ValLoss and TrainTimeMs summarize the runs with 95% intervals.
	ValLoss     stats.Summary `json:"val_loss"`
	TrainTimeMs stats.Summary `json:"train_time_ms"`
	// LossTest is the one-sided one-sample t-test that the mean val loss
	// is below the target (the speedrun's acceptance rule).
	LossTest *stats.TTest `json:"loss_test,omitempty"`
	// Baseline compares train times with the baseline's runs: its stored
	// ones, or those of this series when Interleaved.
	Baseline *BaselineComparison `json:"baseline,omitempty"`
	// Interleaved is true when the baseline ran in this series, in
	// alternation with the program (baseline, program, program,
	// baseline, ...), so that a machine that speeds up or slows down
	// during the series affects both alike.
	Interleaved bool `json:"interleaved,omitempty"`
	// Together is true when the two runs of each pair ran at once.
	Together bool `json:"together,omitempty"`
	// Record is true when the loss is significantly under the target and
	// the time significantly under the baseline's: a record claim.
	Record       bool   `json:"record"`
	RecordReason string `json:"record_reason"`
}

// RepeatRun is one of the repeated runs.
type RepeatRun struct {
	Seed         int     `json:"seed"`
	EvaluationID int64   `json:"evaluation_id,omitempty"`
	Verdict      Verdict `json:"verdict"`
	ValLoss      float64 `json:"val_loss,omitempty"`
	TrainTimeMs  float64 `json:"train_time_ms,omitempty"`
	StepAvgMs    float64 `json:"step_avg_ms,omitempty"`
}

func repeatRun(r *Result) RepeatRun {
	return RepeatRun{Seed: r.Seed, EvaluationID: r.EvaluationID, Verdict: r.Verdict,
		ValLoss: r.Metrics.ValLoss, TrainTimeMs: r.Metrics.TrainTimeMs, StepAvgMs: r.Metrics.StepAvgMs}
}

// BaselineComparison is Welch's one-sided t-test that the program's train
// time is below the baseline's.
type BaselineComparison struct {
	ProgramHash string        `json:"program_hash"`
	TrainTimeMs stats.Summary `json:"train_time_ms"`
	Test        stats.TTest   `json:"test"`
	// SpeedupPct is how much shorter the mean train time is, in percent
	// of the baseline's mean.
	SpeedupPct float64 `json:"speedup_pct"`
	// Runs are the baseline's runs of an interleaved series.
	Runs []RepeatRun `json:"runs,omitempty"`
}

// RepeatRequest is a program to run n times with seeds Seed, Seed+1, ...
type RepeatRequest struct {
	Request
	N int
	// BaselineHash names the program to compare times with; its acceptable
	// full runs on the same track version and machine class are read from
	// the store. Empty means no comparison.
	BaselineHash string
	// Baseline, when set, is the baseline program itself, run N times in
	// this series in alternation with the program (the same seeds), and
	// compared with those runs only: stored runs measured under other
	// conditions do not count. BaselineHash is then its hash.
	Baseline []byte
	// Prior are runs of this interleaved series that finished before it
	// was cut off (a resumed series): a run of the same program and seed
	// is taken from here instead of being run again.
	Prior []*Result
	// Together runs the two programs of each pair of an interleaved
	// series at once instead of one after the other: both see the same
	// neighbour, the other, so its cost falls on both alike. For a CPU
	// track on a machine with room for two runs, it halves the series.
	Together bool
}

// FinishedPairs reads back, from stored evaluations evs, the runs of an
// interleaved series of programs (the program's hash and the baseline's)
// with seeds seed..seed+n-1 that finished at or after since: what a series
// cut off by a kill had done, for RepeatRequest.Prior. A seed counts only
// when both programs finished it: a pair cut in the middle runs again
// whole, so that its two runs are taken together.
func FinishedPairs(evs []*store.Evaluation, programs [2]string, seed, n int, since time.Time) []*Result {
	found := map[[2]int]*Result{} // (program 0 or 1, seed) -> its run
	for _, ev := range evs {
		k := slices.Index(programs[:], ev.ProgramHash)
		if k < 0 || ev.FastOnly || ev.State != store.StateDone || ev.Seed < seed || ev.Seed >= seed+n || ev.StartedAt.Before(since) {
			continue
		}
		var r Result
		if err := json.Unmarshal(ev.Result, &r); err != nil || r.Verdict == "" {
			continue // an unreadable result: run it again
		}
		r.EvaluationID, r.Seed, r.Program.Hash = ev.ID, ev.Seed, ev.ProgramHash
		if old := found[[2]int{k, ev.Seed}]; old == nil || old.EvaluationID < r.EvaluationID {
			found[[2]int{k, ev.Seed}] = &r
		}
	}
	var out []*Result
	for i := seed; i < seed+n; i++ {
		a, b := found[[2]int{0, i}], found[[2]int{1, i}]
		if a != nil && b != nil {
			out = append(out, a, b)
		}
	}
	return out
}

// prior returns the run of program hash with seed among rr.Prior, or nil.
func (rr RepeatRequest) prior(hash string, seed int) *Result {
	for _, r := range rr.Prior {
		if r != nil && r.Program.Hash == hash && r.Seed == seed {
			return r
		}
	}
	return nil
}

// EvaluateRepeats runs the fast check once, then n full runs with
// consecutive seeds, each stored as its own evaluation, and returns a result
// whose verdict follows the statistics: acceptable only when the mean val
// loss is significantly under the target (p < the track's alpha). A failing
// run ends the series: a program must work with every seed.
func (e *Evaluator) EvaluateRepeats(ctx context.Context, rr RepeatRequest) (*Result, error) {
	if rr.N < 1 {
		return nil, fmt.Errorf("repeats must be at least 1, got %d", rr.N)
	}
	if rr.Baseline != nil {
		return e.interleaved(ctx, rr)
	}
	first, err := e.Evaluate(ctx, rr.Request)
	if err != nil || rr.N == 1 {
		return first, err
	}
	results := []*Result{first}
	for i := 1; i < rr.N && ok(first.Verdict); i++ {
		req := rr.Request
		req.Seed = rr.Seed + i
		req.SkipFast = true
		req.Keep = ""
		if e.Progress != nil {
			e.Progress(fmt.Sprintf("repeat %d of %d (seed %d)", i+1, rr.N, req.Seed))
		}
		r, err := e.Evaluate(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("repeat %d of %d: %w", i+1, rr.N, err)
		}
		results = append(results, r)
		if !ok(r.Verdict) {
			break
		}
	}
	return e.aggregate(ctx, rr, results, nil)
}

// interleaved runs the baseline and the program in alternation, in the
// order ABBA ABBA... (baseline first in even pairs, the program first in
// odd ones), so that a drift of the machine's speed during the series
// cancels out instead of favouring whichever ran later. Both get the same
// seeds. A baseline that fails is an error: there is nothing to compare.
func (e *Evaluator) interleaved(ctx context.Context, rr RepeatRequest) (*Result, error) {
	if rr.N < 2 {
		return nil, fmt.Errorf("an interleaved comparison needs at least 2 runs of each program, got %d", rr.N)
	}
	rr.BaselineHash = store.Hash(rr.Baseline)
	if rr.BaselineHash == store.Hash(rr.Program) {
		return nil, fmt.Errorf("the program is the baseline: nothing to compare")
	}
	mine, theirs, err := rr.pairs(ctx, e.Evaluate, e.Progress)
	if err != nil {
		return nil, err
	}
	return e.aggregate(ctx, rr, mine, theirs)
}

// pairs runs the series of an interleaved request with run, pair by pair:
// one after the other in ABBA order, or, when rr.Together, the two runs of
// a pair at once. It returns the program's runs and the baseline's; a
// program run that measured nothing ends the series.
func (rr RepeatRequest) pairs(ctx context.Context, run func(context.Context, Request) (*Result, error), progress func(string)) (mine, theirs []*Result, err error) {
	base := rr.Request
	base.Program, base.Name, base.Keep = rr.Baseline, "baseline.py", ""
	for i := 0; i < rr.N; i++ {
		order := []bool{false, true} // false: the baseline
		if i%2 == 1 {
			order = []bool{true, false}
		}
		var reqs [2]Request
		var got [2]*Result
		todo := 0
		for k, program := range order {
			req := rr.Request
			if !program {
				req = base
			}
			req.Seed = rr.Seed + i
			if i > 0 {
				req.SkipFast, req.Keep = true, ""
			}
			reqs[k] = req
			if got[k] = rr.prior(store.Hash(req.Program), req.Seed); got[k] == nil {
				todo++
			}
		}
		who := func(k int) string {
			if order[k] {
				return "program"
			}
			return "baseline"
		}
		if progress != nil {
			for k := range order {
				if got[k] != nil {
					progress(fmt.Sprintf("pair %d of %d: %s (seed %d) finished before the series was cut off", i+1, rr.N, who(k), reqs[k].Seed))
				}
			}
		}
		if rr.Together && todo == 2 {
			if progress != nil {
				progress(fmt.Sprintf("pair %d of %d: baseline and program at once (seed %d)", i+1, rr.N, reqs[0].Seed))
			}
			if err := runBoth(ctx, run, reqs, &got); err != nil {
				return nil, nil, fmt.Errorf("pair %d of %d: %w", i+1, rr.N, err)
			}
		}
		for k, program := range order {
			if got[k] == nil {
				if progress != nil {
					progress(fmt.Sprintf("pair %d of %d: %s (seed %d)", i+1, rr.N, who(k), reqs[k].Seed))
				}
				if got[k], err = run(ctx, reqs[k]); err != nil {
					return nil, nil, fmt.Errorf("pair %d of %d: %w", i+1, rr.N, err)
				}
			}
			r := got[k]
			if !program {
				if r.Verdict != Acceptable {
					return nil, nil, fmt.Errorf("the baseline's run with seed %d is %s (%s): an interleaved comparison needs a baseline that works", reqs[k].Seed, r.Verdict, r.Reason)
				}
				theirs = append(theirs, r)
				continue
			}
			mine = append(mine, r)
			if !ok(r.Verdict) {
				return mine, theirs, nil
			}
		}
	}
	return mine, theirs, nil
}

// runBoth runs the two requests of a pair at once and puts their results
// in got. When one fails the other is cancelled: the pair runs again whole
// on resume (FinishedPairs), so half of it is worth nothing.
func runBoth(ctx context.Context, run func(context.Context, Request) (*Result, error), reqs [2]Request, got *[2]*Result) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	for k := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got[k], errs[k] = run(ctx, reqs[k]); errs[k] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The error that caused the other's cancellation, not its echo.
	for k := range errs {
		if errs[k] != nil && !errors.Is(errs[k], context.Canceled) {
			return errs[k]
		}
	}
	return errors.Join(errs[0], errs[1])
}

// ok reports whether a run measured something: its loss counts in the
// statistics even when it is above the target.
func ok(v Verdict) bool { return v == Acceptable || v == LossTooHigh }

// RuleSeed: runs with different seeds that are bit-identical. Different
// seeds change the initialization and the harness's seeded state, so an
// honest program's val losses differ in their last digits at least; a
// program that pins its own seed makes N repeats one run, and a t-test over
// zero spread reports certainty (p = 0).
const RuleSeed = "seed"

// sameLossEverySeed reports the common loss when at least two runs with
// distinct seeds all have the same val loss, bit for bit.
func sameLossEverySeed(results []*Result) (float64, bool) {
	if len(results) < 2 {
		return 0, false
	}
	seeds := map[int]bool{}
	first := results[0].Metrics.ValLoss
	for _, r := range results {
		if r.Metrics.ValLoss != first {
			return 0, false
		}
		seeds[r.Seed] = true
	}
	return first, len(seeds) > 1
}

// aggregate summarizes the program's runs; baseline, when not nil, holds
// the baseline's runs of an interleaved series.
func (e *Evaluator) aggregate(ctx context.Context, rr RepeatRequest, results, baseline []*Result) (*Result, error) {
	spec := rr.Track
	out := *results[0] // telemetry tables of the first run
	rep := &Repeats{N: rr.N, Interleaved: rr.Baseline != nil, Together: rr.Baseline != nil && rr.Together}
	var losses, times []float64
	for _, r := range results {
		rep.Runs = append(rep.Runs, repeatRun(r))
		if ok(r.Verdict) {
			losses = append(losses, r.Metrics.ValLoss)
			times = append(times, r.Metrics.TrainTimeMs)
		}
	}
	rep.ValLoss = stats.Summarize(losses, 0.95)
	rep.TrainTimeMs = stats.Summarize(times, 0.95)
	out.Repeats = rep
	out.Metrics.ValLoss = rep.ValLoss.Mean
	out.Metrics.TrainTimeMs = rep.TrainTimeMs.Mean

	last := results[len(results)-1]
	if !ok(last.Verdict) {
		out.Verdict, out.Rule, out.Traceback = last.Verdict, last.Rule, last.Traceback
		out.Reason = fmt.Sprintf("run %d of %d (seed %d) failed: %s", len(results), rr.N, last.Seed, last.Reason)
		rep.RecordReason = "a run failed"
		return &out, nil
	}
	if same, ok := sameLossEverySeed(results); ok {
		out.Verdict, out.Rule = Invalid, RuleSeed
		out.Reason = fmt.Sprintf("%s: %d runs with seeds %d to %d all reached val loss %.17g exactly: the program ignores the injected seed, so its runs are one run repeated and the statistics would claim a certainty they do not have",
			RuleSeed, len(results), results[0].Seed, last.Seed, same)
		rep.RecordReason = "the runs do not depend on the seed"
		return &out, nil
	}
	t, err := stats.MeanBelow(losses, spec.TargetValLoss, spec.Verification.Alpha)
	if err != nil {
		return nil, err
	}
	rep.LossTest = &t
	if t.Significant {
		out.Verdict = Acceptable
		out.Reason = fmt.Sprintf("mean val loss %.4f over %d runs is significantly under the target %.4g (one-sided t-test: %s)", rep.ValLoss.Mean, len(losses), spec.TargetValLoss, t)
	} else {
		out.Verdict = LossTooHigh
		out.Reason = fmt.Sprintf("mean val loss %.4f over %d runs is not significantly under the target %.4g (one-sided t-test: %s)", rep.ValLoss.Mean, len(losses), spec.TargetValLoss, t)
	}

	isBaseline := rr.BaselineHash == out.Program.Hash
	if isBaseline {
		// The baseline itself: its runs are the baseline, nothing to compare.
		rr.BaselineHash = ""
	}
	if baseline != nil {
		cmp, err := compareTimes(rr, times, baseline)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("no comparison with the baseline: %v", err))
		}
		rep.Baseline = cmp
	} else if rr.BaselineHash != "" && e.Store != nil {
		mine := map[int64]bool{}
		for _, r := range results {
			mine[r.EvaluationID] = true
		}
		cmp, err := e.compareBaseline(ctx, rr, out.FingerprintClass, times, mine)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("no comparison with the baseline: %v", err))
		}
		rep.Baseline = cmp
	}
	switch {
	case !t.Significant:
		rep.RecordReason = "the loss is not significantly under the target"
		if rep.Baseline != nil && !rep.Baseline.Test.Significant {
			rep.RecordReason += fmt.Sprintf(", nor the time under the baseline's (Welch: %s)", rep.Baseline.Test)
		}
	case isBaseline:
		rep.RecordReason = "this program is the baseline"
	case rep.Baseline == nil:
		rep.RecordReason = "no baseline runs to compare times with"
	case !rep.Baseline.Test.Significant:
		rep.RecordReason = fmt.Sprintf("the time is not significantly under the baseline's (Welch: %s)", rep.Baseline.Test)
	default:
		rep.Record = true
		rep.RecordReason = fmt.Sprintf("loss significantly under the target and time %.2f%% under the baseline's (Welch: %s)", rep.Baseline.SpeedupPct, rep.Baseline.Test)
	}
	return &out, nil
}

// compareBaseline reads the baseline's acceptable full runs on the same
// track version and machine class and runs Welch's test.
// Runs of this series (mine) are not part of the baseline.
func (e *Evaluator) compareBaseline(ctx context.Context, rr RepeatRequest, class string, times []float64, mine map[int64]bool) (*BaselineComparison, error) {
	evs, err := e.Store.Evaluations(ctx, store.Filter{Track: rr.Track.Name, ProgramHash: rr.BaselineHash, Verdict: string(Acceptable), Limit: 1000})
	if err != nil {
		return nil, err
	}
	var base []float64
	version := map[string]bool{} // stored hash -> names this version
	for _, ev := range evs {
		same, ok := version[ev.TrackHash]
		if !ok {
			same = SpecMatches(rr.Track, ev.TrackHash, rr.Track.Dir)
			version[ev.TrackHash] = same
		}
		if same && ev.FingerprintClass == class && !ev.FastOnly && ev.TrainTimeMs > 0 && !mine[ev.ID] {
			base = append(base, ev.TrainTimeMs)
		}
	}
	if len(base) < 2 {
		return nil, fmt.Errorf("the baseline %s has %d acceptable runs on this track version and machine class (%s); run it with --repeats first", short(rr.BaselineHash), len(base), class)
	}
	return welch(rr, times, base)
}

// compareTimes compares with the baseline's runs of an interleaved series.
func compareTimes(rr RepeatRequest, times []float64, baseline []*Result) (*BaselineComparison, error) {
	var base []float64
	var runs []RepeatRun
	for _, r := range baseline {
		base = append(base, r.Metrics.TrainTimeMs)
		runs = append(runs, repeatRun(r))
	}
	cmp, err := welch(rr, times, base)
	if cmp != nil {
		cmp.Runs = runs
	}
	return cmp, err
}

// welch is Welch's one-sided test that times are below base.
func welch(rr RepeatRequest, times, base []float64) (*BaselineComparison, error) {
	t, err := stats.WelchLess(times, base, rr.Track.Verification.Alpha)
	if err != nil {
		return nil, err
	}
	bs := stats.Summarize(base, 0.95)
	mean := stats.Summarize(times, 0.95).Mean
	return &BaselineComparison{ProgramHash: rr.BaselineHash, TrainTimeMs: bs, Test: t, SpeedupPct: 100 * (bs.Mean - mean) / bs.Mean}, nil
}
