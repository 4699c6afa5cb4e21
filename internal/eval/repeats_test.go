package eval

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
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

// A series cut off by a kill resumes with the pairs it finished: their
// runs are read back and not run again; a pair cut in the middle, a run
// before the series started, a fast check and a run still going are not
// taken.
func TestFinishedPairs(t *testing.T) {
	start := time.Unix(1000, 0)
	ev := func(id int64, h string, seed int, at time.Time, state string, fast bool) *store.Evaluation {
		return &store.Evaluation{ID: id, ProgramHash: h, Seed: seed, StartedAt: at, State: state, FastOnly: fast,
			Result: json.RawMessage(`{"verdict":"acceptable","metrics":{"val_loss":3.2,"train_time_ms":900}}`)}
	}
	later := start.Add(time.Minute)
	evs := []*store.Evaluation{
		ev(1, "b", 1, later, store.StateDone, false), ev(2, "p", 1, later, store.StateDone, false), // pair 1
		ev(3, "b", 2, later, store.StateDone, false), // pair 2 cut in the middle
		ev(4, "p", 2, later, store.StateRunning, false),
		ev(5, "b", 3, start.Add(-time.Hour), store.StateDone, false), ev(6, "p", 3, later, store.StateDone, false), // b's run is older
		ev(7, "b", 4, later, store.StateDone, true), ev(8, "p", 4, later, store.StateDone, false), // a fast check
		ev(9, "b", 9, later, store.StateDone, false), ev(10, "p", 9, later, store.StateDone, false), // outside the seeds
	}
	got := FinishedPairs(evs, [2]string{"p", "b"}, 1, 5, start)
	if len(got) != 2 || got[0].EvaluationID != 2 || got[1].EvaluationID != 1 || got[0].Seed != 1 || got[0].Program.Hash != "p" {
		t.Fatalf("finished pairs %+v, want seed 1's two runs", got)
	}
	// A series whose every pair finished runs nothing again.
	spec := &track.Spec{Name: "t", TargetValLoss: 3.28, Verification: track.Verification{Alpha: 0.01}}
	var prior []*Result
	for i := range 3 {
		for k, h := range []string{"prog", "base"} {
			prior = append(prior, &Result{Verdict: Acceptable, Seed: 5 + i, EvaluationID: int64(10*i + k), Program: ProgramInfo{Hash: store.Hash([]byte(h))},
				Metrics: Metrics{ValLoss: 3.2 + 0.001*float64(i), TrainTimeMs: 900 + 100*float64(k) + float64(i)}})
		}
	}
	e := &Evaluator{} // it has no runner: evaluating anything would fail
	out, err := e.EvaluateRepeats(context.Background(), RepeatRequest{Request: Request{Track: spec, Program: []byte("prog"), Seed: 5},
		N: 3, Baseline: []byte("base"), Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	if out.Repeats == nil || len(out.Repeats.Runs) != 3 || out.Repeats.Baseline == nil || len(out.Repeats.Baseline.Runs) != 3 {
		t.Fatalf("series from finished runs: %+v", out.Repeats)
	}
}
