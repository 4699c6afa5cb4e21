package runs

import (
	"math"
	"testing"
)

func TestClassOf(t *testing.T) {
	for v, want := range map[Verdict]Class{
		"": Pending, FastOK: Pending, NoProposal: ClassNone, Duplicate: ClassDuplicate, Acceptable: ClassAcceptable,
		LossTooHigh: TooHigh, Error: Buggy, Timeout: Buggy, Invalid: Buggy, NoResult: Buggy, ApplyFailed: Buggy, "weird": Buggy,
	} {
		if got := ClassOf(v); got != want {
			t.Errorf("ClassOf(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestTally(t *testing.T) {
	var tl Tally
	for _, o := range []Outcome{
		{ID: 1, Verdict: Acceptable, TrainTimeMs: 900, ValLoss: 3.2, CostUSD: 0.5, InputTokens: 10},
		{ID: 2, Verdict: Acceptable, TrainTimeMs: 800, ValLoss: 3.3},
		{ID: 3, Verdict: Acceptable, TrainTimeMs: 800, ValLoss: 3.1}, // as fast as #2: #2 stays the fastest
		{ID: 4, Verdict: LossTooHigh, TrainTimeMs: 100, ValLoss: 3.0, CostUSD: math.NaN()},
		{ID: 5, Verdict: Acceptable}, // no time: no record
		{ID: 6, Verdict: Duplicate},
		{ID: 7, Verdict: Error, OutputTokens: 5},
	} {
		tl.Add(o)
	}
	if tl.Fastest.ID != 2 || tl.Lowest.ID != 4 || tl.Members != 7 || tl.Classes[ClassAcceptable] != 4 ||
		tl.Judged() != 6 || tl.Ran() != 6 || tl.CostUSD != 0.5 || tl.InputTokens != 10 || tl.OutputTokens != 5 || tl.Verdicts[Duplicate] != 1 {
		t.Errorf("tally %+v", tl)
	}
	tl.Add(Outcome{ID: 8, Verdict: ApplyFailed})
	if tl.Judged() != 7 || tl.Ran() != 6 {
		t.Errorf("an edit that never applied is judged (buggy) but did not run: judged %d, ran %d", tl.Judged(), tl.Ran())
	}
	if r := tl.AcceptableRate(); r != 4.0/7 {
		t.Errorf("rate %g", r)
	}
}
