package main

import (
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
)

// The last demo's numbers: the reference (#1, 94.3 s) over seeds 1-5, and
// #8 (47.2 s, 3.365 on the search's seed) faster in the series but 3.67
// and 4.00 on two seeds.
func TestNextCandidate(t *testing.T) {
	child := func(id int64, ms, loss float64, v runs.Verdict) *store.Child {
		return &store.Child{ID: id, State: runs.Done, Verdict: v, TrainTimeMs: ms, ValLoss: loss, ProgramHash: string(rune('a' + id))}
	}
	ref := child(1, 94340, 3.3071, runs.Acceptable)
	fastest := child(8, 47170, 3.3646, runs.Acceptable)
	narrow := child(5, 56320, 3.4197, runs.Acceptable) // within the seeds' spread of the target
	shorter := child(9, 66000, 3.3800, runs.Acceptable)
	slower := child(6, 95000, 3.2866, runs.Acceptable) // not faster than the reference
	missed := child(4, 26820, 3.5348, runs.LossTooHigh)
	refuted := child(7, 60000, 3.30, runs.Acceptable)
	base := []eval.RepeatRun{{Verdict: eval.Acceptable, ValLoss: 3.2863}, {Verdict: eval.Acceptable, ValLoss: 3.3048},
		{Verdict: eval.Acceptable, ValLoss: 3.3067}, {Verdict: eval.Acceptable, ValLoss: 3.3079}, {Verdict: eval.Acceptable, ValLoss: 3.3554}}
	outcome := func(timeHeld, lossHeld bool, kids ...*store.Child) *confirmOutcome {
		state := runs.ClaimRejected
		if timeHeld && lossHeld {
			state = runs.ClaimConfirmed
		}
		return &confirmOutcome{
			cl: &store.Confirmation{Claim: runs.Claim{ChildID: fastest.ID, State: state, Alpha: 0.01}},
			res: &eval.Result{Track: eval.TrackInfo{Target: 3.45}, Repeats: &eval.Repeats{
				Baseline: &eval.BaselineComparison{Runs: base, Test: stats.TTest{Significant: timeHeld}},
				LossTest: &stats.TTest{Significant: lossHeld}}},
			cand: fastest, base: ref,
			s: &runview.Summary{Children: kids, RecordSingleMs: ref.TrainTimeMs,
				Claims: []*store.Confirmation{{Claim: runs.Claim{ChildID: refuted.ID, State: runs.ClaimRejected}}}},
		}
	}
	kids := []*store.Child{fastest, narrow, shorter, slower, missed, refuted}
	next, limit := nextCandidate(outcome(true, false, kids...))
	// sd 0.0251 over 5 seeds: t(0.99, 4) = 3.747, so 3.45 - 0.0421.
	if next != shorter || limit < 3.405 || limit > 3.410 {
		t.Errorf("next %v, limit %.4f: want #9 under about 3.408", next, limit)
	}
	for name, oc := range map[string]*confirmOutcome{
		"confirmed":         outcome(true, true, kids...),
		"time did not hold": outcome(false, false, kids...),
		"nothing qualifies": outcome(true, false, fastest, narrow, slower, missed, refuted),
	} {
		if next, _ := nextCandidate(oc); next != nil {
			t.Errorf("%s: next #%d, want none", name, next.ID)
		}
	}
}
