package eval

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/track"
)

// Runs with different seeds and bit-identical losses are one run repeated:
// the series is invalid, not a certain pass. Honest series differ.
func TestAggregateSeedPinning(t *testing.T) {
	spec := &track.Spec{Name: "t", TargetValLoss: 3.1, Verification: track.Verification{Alpha: 0.01}}
	series := func(losses ...float64) []*Result {
		var rs []*Result
		for i, l := range losses {
			rs = append(rs, &Result{Verdict: Acceptable, Seed: i, Metrics: Metrics{ValLoss: l, TrainTimeMs: 1000}})
		}
		return rs
	}
	e := &Evaluator{}
	rr := RepeatRequest{Request: Request{Track: spec}, N: 3}
	out, err := e.aggregate(context.Background(), rr, series(3.0, 3.0, 3.0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != Invalid || out.Rule != RuleSeed || !strings.Contains(out.Reason, "ignores the injected seed") {
		t.Fatalf("pinned seed: %s %s: %s", out.Verdict, out.Rule, out.Reason)
	}
	out, err = e.aggregate(context.Background(), rr, series(3.0, 3.0000001, 2.99), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != Acceptable || out.Rule != "" {
		t.Fatalf("honest series: %s %s: %s", out.Verdict, out.Rule, out.Reason)
	}
	// One seed run twice (a rerun, not a series) is not a finding.
	same := series(3.0, 3.0)
	same[1].Seed = 0
	if _, pinned := sameLossEverySeed(same); pinned {
		t.Error("a rerun of one seed was taken for a pinned seed")
	}
}

// An interleaved series is compared with its own baseline runs only, and
// claims a record when both tests pass.
func TestAggregateInterleaved(t *testing.T) {
	spec := &track.Spec{TargetValLoss: 3.28, Verification: track.Verification{Alpha: 0.01}}
	run := func(seed int, loss, ms float64) *Result {
		return &Result{Verdict: Acceptable, Seed: seed, EvaluationID: int64(100 + seed), Metrics: Metrics{ValLoss: loss, TrainTimeMs: ms}}
	}
	mine := []*Result{run(0, 3.270, 800), run(1, 3.272, 812), run(2, 3.268, 795), run(3, 3.271, 805)}
	theirs := []*Result{run(0, 3.271, 1000), run(1, 3.269, 1012), run(2, 3.272, 991), run(3, 3.270, 1003)}
	rr := RepeatRequest{Request: Request{Track: spec}, N: 4, Baseline: []byte("baseline"), BaselineHash: "b"}
	out, err := (&Evaluator{}).aggregate(context.Background(), rr, mine, theirs)
	if err != nil {
		t.Fatal(err)
	}
	rp := out.Repeats
	if out.Verdict != Acceptable || !rp.Interleaved || rp.Baseline == nil || len(rp.Baseline.Runs) != 4 || rp.Baseline.TrainTimeMs.N != 4 {
		t.Fatalf("verdict %s, repeats %+v", out.Verdict, rp)
	}
	if !rp.Record || math.Abs(rp.Baseline.SpeedupPct-20.0) > 0.5 || !rp.Baseline.Test.Significant {
		t.Fatalf("record %v (%s), comparison %+v", rp.Record, rp.RecordReason, rp.Baseline)
	}
	// Times within each other's noise: no claim.
	theirs = []*Result{run(0, 3.271, 810), run(1, 3.269, 790), run(2, 3.272, 806), run(3, 3.270, 801)}
	out, err = (&Evaluator{}).aggregate(context.Background(), rr, mine, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if out.Repeats.Record || !strings.Contains(out.Repeats.RecordReason, "not significantly under the baseline") {
		t.Fatalf("record %v (%s)", out.Repeats.Record, out.Repeats.RecordReason)
	}
}
