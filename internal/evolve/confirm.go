package evolve

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
)

// The record rule (docs/evolve.md). The run's record starts as the
// reference. A settled child whose single timing is the fastest of the run
// and faster than the record's is a candidate, and gets a claim
// (runs.Claim). When the run has measured its noise (earlier series) and
// the candidate's margin, in time and in loss, is beyond it at the
// track's alpha, the claim is confirmed on that one timing. Otherwise the
// engine queues an interleaved series: the candidate and the standing
// record in alternation with the same seeds, Welch's test on the times and
// the one-sample test on the loss. Only confirmed claims make records;
// rejected and failed ones are kept and shown. Series run in an
// evaluation slot and count as full evaluations of the run's budget.

// SeriesEvaluator runs an interleaved series (eval.RepeatRequest with a
// Baseline); *eval.Evaluator is one. An engine whose Evaluator is not one
// cannot run series: its candidates stay single timings (claims skipped).
type SeriesEvaluator interface {
	EvaluateRepeats(ctx context.Context, rr eval.RepeatRequest) (*eval.Result, error)
}

type confirmResult struct {
	claim   *store.Confirmation
	started time.Time
	hashes  [2]string
	res     *eval.Result
	err     error
}

func (r *confirmResult) settle(ctx context.Context, e *Engine) { e.onConfirm(ctx, r) }

// newClaim returns a claim for c, a child that just settled, when it is a
// candidate record: the fastest single timing of the run among children
// whose claim was not refuted, faster than the standing record's time. The
// claim is confirmed already when its margin is beyond the measured noise;
// it is queued for a series otherwise, or skipped when no series can run.
// nil when c is no candidate.
func (e *Engine) newClaim(c *store.Child) *store.Confirmation {
	if c.Origin.IsCopy() || c.Origin == runs.OriginReference || !c.Outcome().Timed() || !e.claims.isFastest(c.ID) || e.claims.of(c.ID) != nil {
		return nil
	}
	// A single timing is compared with the record's own single timing,
	// taken the same way: the mean of a series ran under that series'
	// load, and a timing taken at a quieter moment would beat it without
	// being faster.
	base, rec := e.standing()
	baseMs := rec.SingleMs
	if base == nil || !(c.TrainTimeMs < baseMs) {
		return nil
	}
	alpha := e.opts.Track.Verification.Alpha
	nan := math.NaN()
	cl := &store.Confirmation{RunID: e.run.ID, Claim: runs.Claim{ChildID: c.ID, BaselineID: base.ID, Method: runs.MethodSeries,
		Source: "engine", Alpha: alpha, Pairs: e.cfg.ConfirmPairs(alpha), SingleMs: c.TrainTimeMs, TimeMs: c.TrainTimeMs, BaselineMs: baseMs,
		TimeSD: nan, BaselineSD: nan, LossMean: c.ValLoss, LossSD: nan, Speedup: runs.Speedup(baseMs, c.TrainTimeMs),
		SpeedupLo: nan, SpeedupHi: nan, TimeP: nan, LossP: nan, NoiseCV: nan}}
	if !*e.cfg.Confirm.Enabled {
		cl.State, cl.Reason = runs.ClaimSkipped, "evolve.confirm.enabled is off: the candidate stays a single timing (test it with frontier runs confirm)"
		cl.FinishedAt = time.Now()
		return cl
	}
	nz := noiseOf(e.claims.list())
	if need := e.cfg.Confirm.NoiseDF; need >= 0 && nz.known(need) {
		se := nz.cv * baseMs * math.Sqrt2 // the difference of two single timings
		margin := baseMs - c.TrainTimeMs
		p := stats.Upper(margin/se, float64(nz.df))
		lossP := stats.Upper((e.opts.Track.TargetValLoss-c.ValLoss)/nz.lossSD, float64(nz.lossDF))
		// The candidate is the fastest of k timed acceptable children:
		// picked for its low timing, so its test is corrected for the
		// selection (Bonferroni over the k it was picked from).
		k := max(1, e.seen.of(runs.ClassAcceptable))
		if p < alpha/float64(k) && lossP < alpha/float64(k) {
			q := stats.Quantile(0.975, float64(nz.df))
			cl.Method, cl.State, cl.Pairs = runs.MethodNoise, runs.ClaimConfirmed, 1
			cl.TimeP, cl.LossP, cl.NoiseCV, cl.NoiseDF = p, lossP, nz.cv, nz.df
			cl.SpeedupLo, cl.SpeedupHi = (margin-q*se)/baseMs, (margin+q*se)/baseMs
			cl.Reason = fmt.Sprintf("the margin is beyond the noise measured in %d series (time p = %.2g, loss p = %.2g, alpha %g over %d acceptable timings): no series needed",
				nz.series, p, lossP, alpha, k)
			cl.FinishedAt = time.Now()
			return cl
		}
		cl.Reason = fmt.Sprintf("the margin is inside the measured noise (time p = %.2g, loss p = %.2g against one timing's noise; alpha %g over %d acceptable timings)", p, lossP, alpha, k)
	}
	if _, ok := e.opts.Evaluator.(SeriesEvaluator); !ok {
		cl.State, cl.FinishedAt = runs.ClaimSkipped, time.Now()
		cl.Reason = strings.TrimPrefix(cl.Reason+"; the evaluator cannot run series: the candidate stays a single timing", "; ")
		return cl
	}
	cl.State = runs.ClaimQueued
	if cl.Reason == "" {
		cl.Reason = "no noise measured yet: a series decides"
	}
	return cl
}

// openNext makes a claim for the next candidate, if any, after one was
// refuted: the fastest child whose timing is still open, when it is faster
// than the record.
func (e *Engine) openNext(ctx context.Context) {
	c := e.claims.fastestOpen()
	if c == nil {
		return
	}
	cl := e.newClaim(c)
	if cl == nil {
		return
	}
	if err := e.j.claimsChanged(ctx, cl); err != nil {
		e.sess.fail(err)
		return
	}
	e.claims.add(cl)
	e.log.Info("evolve: candidate record", "child", c.ID, "time", fmtMs(c.TrainTimeMs), "claim", cl.State, "reason", cl.Reason)
}

// standing returns the run's record (see store.Standing).
func (e *Engine) standing() (*store.Child, runs.Record) { return e.pop.record(e.claims.list()) }

// noise is the run-to-run variation the run measured in its series: the
// relative standard deviation of one timing and the standard deviation of
// one validation loss, each pooled over the series' arms with its degrees
// of freedom. The timing's also pools, with one degree of freedom each,
// how far every tested candidate's single timing was from its series'
// mean: a machine whose load comes and goes makes single timings taken
// minutes apart vary more than runs in alternation, and the fastest of
// many is picked for being low.
type noise struct {
	cv, lossSD  float64
	df, lossDF  int
	series      int
	sumCV, sumL float64
}

func noiseOf(claims []*store.Confirmation) noise {
	var n noise
	for _, c := range claims {
		if c.Method != runs.MethodSeries || !c.State.Done() || c.Pairs < 2 {
			continue
		}
		df := c.Pairs - 1
		used := false
		for _, arm := range [][2]float64{{c.TimeSD, c.TimeMs}, {c.BaselineSD, c.BaselineMs}} {
			if runs.Measured(arm[1]) && !math.IsNaN(arm[0]) && arm[0] >= 0 {
				cv := arm[0] / arm[1]
				n.sumCV += float64(df) * cv * cv
				n.df += df
				used = true
			}
		}
		if runs.Measured(c.SingleMs) && runs.Measured(c.TimeMs) && c.State != runs.ClaimFailed {
			d := (c.SingleMs - c.TimeMs) / c.TimeMs
			n.sumCV += d * d
			n.df++
		}
		if !math.IsNaN(c.LossSD) && c.LossSD >= 0 {
			n.sumL += float64(df) * c.LossSD * c.LossSD
			n.lossDF += df
		}
		if used {
			n.series++
		}
	}
	if n.df > 0 {
		n.cv = math.Sqrt(n.sumCV / float64(n.df))
	}
	if n.lossDF > 0 {
		n.lossSD = math.Sqrt(n.sumL / float64(n.lossDF))
	}
	return n
}

// known reports whether enough noise was measured to judge a single
// timing against it.
func (n noise) known(df int) bool {
	return n.df >= max(df, 1) && n.lossDF >= max(df, 1) && n.cv > 0 && n.lossSD > 0
}

// startConfirm starts the series of the fastest queued candidate, after
// settling those that no longer need one (superseded by the record) or
// cannot have one (the evaluation budget cannot hold it). It reports
// whether a series started.
func (e *Engine) startConfirm(ctx context.Context) bool {
	timeOf := func(id int64) float64 { return e.pop.member(id).TrainTimeMs }
	for cl := e.claims.next(timeOf); cl != nil; cl = e.claims.next(timeOf) {
		cand := e.pop.member(cl.ChildID)
		base, rec := e.standing()
		baseMs := rec.SingleMs
		evals := e.sched.evaluations()
		switch max := e.cfg.Budget.MaxEvaluations; {
		case cand == nil || base == nil:
			e.settleClaim(ctx, cl, runs.ClaimFailed, "the candidate or the record is not a member of the run")
			continue
		case !(cand.TrainTimeMs < baseMs) || base.ID == cand.ID:
			e.settleClaim(ctx, cl, runs.ClaimSuperseded, fmt.Sprintf("#%d became the record first (its single timing %s)", base.ID, fmtMs(baseMs)))
			continue
		case base.ProgramHash == cand.ProgramHash:
			e.settleClaim(ctx, cl, runs.ClaimSkipped, fmt.Sprintf("the candidate's program is #%d's", base.ID))
			continue
		case max > 0 && evals+2*cl.Pairs > max:
			e.settleClaim(ctx, cl, runs.ClaimSkipped, fmt.Sprintf("budget.max_evaluations = %d leaves %d runs (it counts full evaluations and series runs); a series of %d pairs needs %d",
				max, max-evals, cl.Pairs, 2*cl.Pairs))
			continue
		case !e.seriesFits(cl.Pairs):
			d := e.cfg.Budget.MaxDuration.D()
			e.settleClaim(ctx, cl, runs.ClaimSkipped, fmt.Sprintf("budget.max_duration = %s leaves %s; a series of %d pairs takes about %s here",
				d, (d-e.sess.elapsed()).Round(time.Second), cl.Pairs, e.sched.seriesEstimate(cl.Pairs).Round(time.Second)))
			continue
		}
		if cl.StartedAt.IsZero() || cl.BaselineID != base.ID {
			// A series cut off earlier against this same record keeps its
			// start, so that it resumes with the pairs it finished.
			cl.StartedAt = time.Now()
		}
		cl.BaselineID, cl.BaselineMs, cl.State = base.ID, baseMs, runs.ClaimRunning
		cl.Speedup = runs.Speedup(baseMs, cand.TrainTimeMs)
		if err := e.j.claimsChanged(ctx, cl); err != nil {
			e.sess.fail(err)
			return false
		}
		e.sched.seriesStarted(cl.Pairs)
		e.claims.start(cl)
		e.log.Info("evolve: confirming a candidate record", "candidate", cand.ID, "time", fmtMs(cand.TrainTimeMs),
			"record", base.ID, "record_time", fmtMs(baseMs), "pairs", cl.Pairs)
		e.work.startSeries(ctx, &confirmResult{claim: cl, started: time.Now(), hashes: [2]string{cand.ProgramHash, base.ProgramHash}},
			cl.Pairs, cl.StartedAt)
		return true
	}
	return false
}

// seriesFits reports whether a series fits in what is left of the
// duration budget (always, without one).
func (e *Engine) seriesFits(pairs int) bool {
	d := e.cfg.Budget.MaxDuration.D()
	return d <= 0 || e.sess.elapsed()+e.sched.seriesEstimate(pairs) <= d
}

// startSeries runs a series in a worker (see series).
func (ws *workers) startSeries(ctx context.Context, r *confirmResult, pairs int, startedAt time.Time) {
	go func() {
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("the evaluator panicked: %v\n%s", p, debug.Stack())
			}
			ws.done <- r
		}()
		r.res, r.err = ws.series(ctx, r.hashes, pairs, startedAt)
	}()
}

// series runs in an evaluation worker: the candidate and the record in
// alternation, with seeds other than the search's. The pairs of this
// series that finished before a kill (evaluations since its start) are
// taken as they are, not run again.
func (ws *workers) series(ctx context.Context, hashes [2]string, pairs int, startedAt time.Time) (*eval.Result, error) {
	cand, err := ws.texts.program(ctx, hashes[0])
	if err != nil {
		return nil, err
	}
	base, err := ws.texts.program(ctx, hashes[1])
	if err != nil {
		return nil, err
	}
	seed := ws.evalSeed + 1
	var evs []*store.Evaluation
	for _, h := range hashes {
		got, err := ws.st.Evaluations(ctx, store.Filter{Track: ws.spec.Name, ProgramHash: h, Limit: 1000})
		if err != nil {
			return nil, err
		}
		evs = append(evs, got...)
	}
	prior := eval.FinishedPairs(evs, hashes, seed, pairs, startedAt)
	if len(prior) > 0 {
		ws.log.Info("evolve: resuming a confirmation series with the pairs it finished", "pairs_done", len(prior)/2, "pairs", pairs)
	}
	se := ws.eval.(SeriesEvaluator)
	return se.EvaluateRepeats(ctx, eval.RepeatRequest{
		Request: eval.Request{Track: ws.spec, Program: cand, Name: ws.name, Seed: seed},
		N:       pairs, Baseline: base, Prior: prior,
	})
}

// onConfirm takes a series' result: the claim's numbers and outcome.
func (e *Engine) onConfirm(ctx context.Context, r *confirmResult) {
	e.sched.seriesDone()
	e.claims.done()
	cl := r.claim
	if r.err != nil && ctx.Err() != nil {
		// Aborted: the series runs again on resume.
		cl.State = runs.ClaimQueued
		wctx := context.WithoutCancel(ctx)
		for _, h := range r.hashes {
			if err := e.j.evaluationsInterrupted(wctx, h, r.started.Add(-time.Second)); err != nil {
				e.log.Warn("evolve: could not mark an interrupted evaluation", "err", err)
			}
		}
		if err := e.j.claimsChanged(wctx, cl); err != nil {
			e.log.Warn("evolve: could not record an interrupted series", "err", err)
		}
		return
	}
	state, reason := FillClaim(cl, r.res, r.err)
	cl.Reason = reason
	e.settleClaim(ctx, cl, state, reason)
	if state == runs.ClaimConfirmed {
		e.log.Info("evolve: new record", "child", cl.ChildID, "time", fmtMs(cl.TimeMs), "evidence", cl.Evidence())
	} else {
		e.log.Info("evolve: candidate record not confirmed", "child", cl.ChildID, "state", state, "reason", reason)
	}
}

// settleClaim records a claim's outcome; a confirmed one supersedes the
// queued claims it is faster than.
func (e *Engine) settleClaim(ctx context.Context, cl *store.Confirmation, state runs.ClaimState, reason string) {
	cl.State, cl.Reason, cl.FinishedAt = state, reason, time.Now()
	changed := []*store.Confirmation{cl}
	if state == runs.ClaimConfirmed {
		_, rec := e.standing()
		changed = append(changed, e.claims.supersede(cl.ChildID, rec.SingleMs, func(id int64) (float64, bool) {
			if c := e.pop.member(id); c != nil {
				return c.TrainTimeMs, true
			}
			return 0, false
		})...)
	}
	if err := e.j.claimsChanged(ctx, changed...); err != nil {
		e.sess.fail(err)
		return
	}
	e.claims.settled(cl, e.pop.settledPrograms)
	if refutes(state) {
		e.openNext(ctx)
	}
}

// FillClaim copies a series' statistics into the claim and returns its
// outcome and the reason.
func FillClaim(cl *store.Confirmation, res *eval.Result, err error) (runs.ClaimState, string) {
	if err != nil {
		return runs.ClaimFailed, "the series could not run: " + err.Error()
	}
	rp := res.Repeats
	if rp == nil {
		return runs.ClaimFailed, "the series returned no statistics: " + res.Reason
	}
	cl.TimeMs, cl.TimeSD = rp.TrainTimeMs.Mean, rp.TrainTimeMs.SD
	cl.LossMean, cl.LossSD = rp.ValLoss.Mean, rp.ValLoss.SD
	if rp.TrainTimeMs.N < 2 {
		cl.TimeSD = math.NaN()
	}
	if rp.ValLoss.N < 2 {
		cl.LossSD = math.NaN()
	}
	if rp.LossTest != nil {
		cl.LossP = rp.LossTest.P
	}
	var mine, theirs []float64
	cl.Evaluations = cl.Evaluations[:0]
	for _, x := range rp.Runs {
		cl.Evaluations = append(cl.Evaluations, x.EvaluationID)
		if x.Verdict == eval.Acceptable || x.Verdict == eval.LossTooHigh {
			mine = append(mine, x.TrainTimeMs)
		}
	}
	if b := rp.Baseline; b != nil {
		cl.BaselineMs, cl.BaselineSD, cl.TimeP = b.TrainTimeMs.Mean, b.TrainTimeMs.SD, b.Test.P
		for _, x := range b.Runs {
			cl.Evaluations = append(cl.Evaluations, x.EvaluationID)
			theirs = append(theirs, x.TrainTimeMs)
		}
		cl.Speedup = runs.Speedup(cl.BaselineMs, cl.TimeMs)
		if lo, hi, err := stats.DiffInterval(mine, theirs, 0.95); err == nil && runs.Measured(cl.BaselineMs) {
			// A program cannot save more than all of the time: the
			// interval of a noisy series can reach past it.
			cl.SpeedupLo, cl.SpeedupHi = min(lo/cl.BaselineMs, 1), min(hi/cl.BaselineMs, 1)
		}
	}
	switch {
	case res.Verdict != eval.Acceptable && res.Verdict != eval.LossTooHigh:
		return runs.ClaimFailed, fmt.Sprintf("%s: %s", res.Verdict, res.Reason)
	case rp.Record:
		return runs.ClaimConfirmed, rp.RecordReason
	}
	return runs.ClaimRejected, rp.RecordReason
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// recordText is the run's record for a prompt, with its evidence; and the
// candidate being confirmed, if any.
func (e *Engine) recordText() string {
	base, rec := e.standing()
	if base == nil {
		return ""
	}
	var s string
	if base.Origin == runs.OriginReference {
		s = fmt.Sprintf("the reference (#%d) is still the record: %s (single timing)", base.ID, fmtMs(rec.SingleMs))
	} else {
		sp, basis := rec.VsReference(store.Claims(e.claims.list()), e.pop.reference().ID)
		s = fmt.Sprintf("#%d trains to the target in %s (one timing in the search), %s vs the reference (%s; evidence: %s)",
			base.ID, fmtMs(rec.SingleMs), runs.FormatSpeedup(sp), basis, rec.Claim.Evidence())
	}
	if f := e.seen.fastest(); f.ID != 0 && f.ID != base.ID && f.TrainTimeMs < rec.SingleMs {
		if cl := e.claims.of(f.ID); cl != nil {
			s += fmt.Sprintf("; #%d measured %s once, %s", f.ID, fmtMs(f.TrainTimeMs), claimWord(cl.State))
		}
	}
	return s
}

// maxRefuted bounds the refuted claims a prompt lists.
const maxRefuted = 3

// refutedText describes the newest claims (at most n) that a series
// refuted, with the series' figures, for the prompts: a model told only
// that a child measured fast once would build on noise.
func refutedText(claims []*store.Confirmation, n int) []string {
	var out []string
	for _, cl := range slices.Backward(claims) {
		if len(out) == n {
			break
		}
		if cl.State != runs.ClaimRejected && cl.State != runs.ClaimFailed {
			continue
		}
		once := ":"
		if runs.Measured(cl.SingleMs) {
			once = fmt.Sprintf(" measured %s once, but", fmtMs(cl.SingleMs))
		}
		switch {
		case cl.State == runs.ClaimRejected && cl.Basis() == "series":
			t := fmt.Sprintf("#%d%s its series of %d runs each in alternation with #%d measured %s against %s (%s, Welch p = %.2g",
				cl.ChildID, once, cl.Pairs, cl.BaselineID, fmtMs(cl.TimeMs), fmtMs(cl.BaselineMs), runs.FormatSpeedup(cl.Speedup), cl.TimeP)
			if !math.IsNaN(cl.LossP) {
				t += fmt.Sprintf("; mean loss %.4f, p = %.2g that it is under the target", cl.LossMean, cl.LossP)
			}
			out = append(out, t+"): refuted")
		case cl.State == runs.ClaimRejected:
			out = append(out, fmt.Sprintf("#%d%s its claim was rejected: %s", cl.ChildID, once, clip(cl.Reason, 200)))
		default:
			out = append(out, fmt.Sprintf("#%d%s a run of its series failed: %s", cl.ChildID, once, clip(cl.Reason, 200)))
		}
	}
	return out
}

// claimWord says where a candidate's claim stands, for people.
func claimWord(s runs.ClaimState) string {
	switch s {
	case runs.ClaimQueued, runs.ClaimRunning:
		return "which is being confirmed"
	case runs.ClaimRejected:
		return "which a series did not confirm (noise)"
	case runs.ClaimFailed:
		return "which failed its confirmation series"
	}
	return "not confirmed (" + string(s) + ")"
}

// SeriesWarning says, when the run's confirmation series are too short to
// ever reach the track's alpha without resting on normality alone, why and
// what would; "" otherwise.
func (e *Engine) SeriesWarning() string {
	if !*e.cfg.Confirm.Enabled {
		return ""
	}
	alpha := e.opts.Track.Verification.Alpha
	return ShortSeries(e.cfg.ConfirmPairs(alpha), alpha)
}

// ShortSeries is the warning for a series of n runs of each program at
// alpha (see stats.MinPairs), or "" when n is enough.
func ShortSeries(n int, alpha float64) string {
	need := stats.MinPairs(alpha)
	if n >= need {
		return ""
	}
	return fmt.Sprintf("a series of %d runs of each program cannot show a speedup at alpha %g: even if every run of one beat every run of the other, a rank test's p would be %.3g; Welch's test would only claim it from its assumption of normal noise with %d degree(s) of freedom. Use at least %d.",
		n, alpha, stats.RankFloor(n), max(1, 2*n-2), need)
}
