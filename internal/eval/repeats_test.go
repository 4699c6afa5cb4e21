package eval

import (
	"context"
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
	out, err := e.aggregate(context.Background(), rr, series(3.0, 3.0, 3.0))
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != Invalid || out.Rule != RuleSeed || !strings.Contains(out.Reason, "ignores the injected seed") {
		t.Fatalf("pinned seed: %s %s: %s", out.Verdict, out.Rule, out.Reason)
	}
	out, err = e.aggregate(context.Background(), rr, series(3.0, 3.0000001, 2.99))
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
