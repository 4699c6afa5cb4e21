package eval

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
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

// A series run together starts the two runs of each pair at once and
// keeps the ABBA bookkeeping; one run alone in order otherwise. A failed
// run cancels its partner, and a program that measured nothing ends the
// series without the pair's baseline being lost.
func TestPairsTogether(t *testing.T) {
	spec := &track.Spec{Name: "t", TargetValLoss: 3.1}
	base, prog := []byte("base"), []byte("prog")
	type call struct {
		program bool
		seed    int
	}
	fake := func(overlap *int, calls *[]call, failProgramSeed int) func(context.Context, Request) (*Result, error) {
		var mu sync.Mutex
		running := 0
		return func(ctx context.Context, req Request) (*Result, error) {
			isProg := string(req.Program) == "prog"
			mu.Lock()
			running++
			if running == 2 {
				*overlap++
			}
			*calls = append(*calls, call{isProg, req.Seed})
			mu.Unlock()
			// Long enough for a partner started at once to be running too.
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				mu.Lock()
				running--
				mu.Unlock()
				return nil, ctx.Err()
			}
			mu.Lock()
			running--
			mu.Unlock()
			v := Acceptable
			if isProg && req.Seed == failProgramSeed {
				v = Error
			}
			return &Result{Verdict: v, Seed: req.Seed, Program: ProgramInfo{Hash: store.Hash(req.Program)}}, nil
		}
	}
	rr := RepeatRequest{Request: Request{Track: spec, Program: prog, Seed: 1}, N: 3, Baseline: base}
	for _, together := range []bool{false, true} {
		rr.Together = together
		var overlap int
		var calls []call
		mine, theirs, err := rr.pairs(context.Background(), fake(&overlap, &calls, -1), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(mine) != 3 || len(theirs) != 3 || len(calls) != 6 {
			t.Fatalf("together %v: %d program runs, %d baseline runs, %d calls", together, len(mine), len(theirs), len(calls))
		}
		if want := map[bool]int{false: 0, true: 3}[together]; overlap != want {
			t.Errorf("together %v: %d pairs ran at once, want %d", together, overlap, want)
		}
		for i := range 3 {
			if mine[i].Seed != 1+i || theirs[i].Seed != 1+i {
				t.Errorf("together %v: pair %d: seeds %d and %d", together, i, mine[i].Seed, theirs[i].Seed)
			}
		}
		if !together && (calls[0] != call{false, 1} || calls[2] != call{true, 2} || calls[3] != call{false, 2}) {
			t.Errorf("one at a time: calls %v, want ABBA", calls)
		}
	}

	// A program run that crashes ends the series after its pair.
	var overlap int
	var calls []call
	mine, theirs, err := rr.pairs(context.Background(), fake(&overlap, &calls, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mine) != 2 || mine[1].Verdict != Error || len(theirs) != 1 || len(calls) != 4 {
		t.Errorf("crash in pair 2: %d program runs, %d baseline runs, %d calls", len(mine), len(theirs), len(calls))
	}

	// An error in one run cancels the other and is the pair's error.
	boom := errors.New("the executor is gone")
	failing := func(ctx context.Context, req Request) (*Result, error) {
		if string(req.Program) == "prog" {
			return nil, boom
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("the partner was not cancelled")
		}
	}
	if _, _, err := rr.pairs(context.Background(), failing, nil); !errors.Is(err, boom) || !strings.Contains(err.Error(), "pair 1 of 3") {
		t.Errorf("failed pair: %v", err)
	}
}
