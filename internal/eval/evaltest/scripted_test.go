package evaltest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
)

// The first rule that matches a program decides its outcome, by hash or
// by its source; the others get Else's, and a full run's verdict follows
// its loss against the target unless the rule names one.
func TestScriptedRules(t *testing.T) {
	ctx := context.Background()
	spec := &track.Spec{Name: "t", TargetValLoss: 4}
	fast := []byte("x = 1  # fast\n")
	s := &evaltest.Scripted{
		Rules: []evaltest.Rule{
			{Hash: store.Hash(fast), Outcome: evaltest.Outcome{ValLoss: 3.5, TrainTimeMs: 300, Steps: 10}},
			{Source: evaltest.Contains("boom"), Outcome: evaltest.Outcome{Crash: "NameError: boom", Traceback: "tb"}},
			{Source: evaltest.Contains("high"), Outcome: evaltest.Outcome{ValLoss: 3, TrainTimeMs: 100, Verdict: eval.LossTooHigh}},
		},
		Else: func(req eval.Request, hash string) evaltest.Outcome {
			return evaltest.Outcome{ValLoss: 4.5, TrainTimeMs: 2000, Reason: "else " + hash[:4]}
		},
	}
	for _, c := range []struct {
		src      string
		fastOnly bool
		verdict  eval.Verdict
		ms       float64
		reason   string
	}{
		{string(fast), false, eval.Acceptable, 300, "val loss at or under the target"},
		{string(fast), true, eval.FastOK, 0, "fast check passed"},
		{"boom()\n", true, eval.Error, 0, "the program raised NameError: boom"},
		{"boom()\n", false, eval.Error, 0, "the program raised NameError: boom"},
		{"high = 1\n", false, eval.LossTooHigh, 100, "loss_too_high"},
		{"other = 1\n", false, eval.LossTooHigh, 2000, "else " + store.Hash([]byte("other = 1\n"))[:4]},
	} {
		res, err := s.Evaluate(ctx, eval.Request{Track: spec, Program: []byte(c.src), FastOnly: c.fastOnly, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != c.verdict || res.Metrics.TrainTimeMs != c.ms || res.Reason != c.reason || res.Seed != 2 || res.Program.Hash != store.Hash([]byte(c.src)) {
			t.Errorf("%q (fast only %v): %s in %g ms (%q), want %s in %g ms (%q)", c.src, c.fastOnly, res.Verdict, res.Metrics.TrainTimeMs, res.Reason, c.verdict, c.ms, c.reason)
		}
	}
	if res, _ := s.Evaluate(ctx, eval.Request{Track: spec, Program: fast}); res.Metrics.Steps != 10 || res.Metrics.StepAvgMs != 30 {
		t.Errorf("metrics %+v: want 10 steps of 30 ms", res.Metrics)
	}
	if s.FastChecks() != 2 || s.FullRuns() != 5 || len(s.Requests()) != 0 {
		t.Errorf("%d fast checks, %d full runs, %d requests kept (Keep is off): want 2, 5, 0", s.FastChecks(), s.FullRuns(), len(s.Requests()))
	}
	// Without rules, a program is acceptable at the target in a second.
	var plain evaltest.Scripted
	if res, _ := plain.Evaluate(ctx, eval.Request{Track: spec, Program: fast}); res.Verdict != eval.Acceptable || res.Metrics.TrainTimeMs != 1000 {
		t.Errorf("no script: %s in %g ms", res.Verdict, res.Metrics.TrainTimeMs)
	}
}

// Key replaces the hash Rules match, Else receives and the result reports,
// but not with a store: its records carry the true hash.
func TestScriptedKey(t *testing.T) {
	ctx := context.Background()
	spec := &track.Spec{Name: "t", TargetValLoss: 4}
	key := func(src []byte) string { return fmt.Sprintf("len%d", len(src)) }
	s := &evaltest.Scripted{Key: key,
		Rules: []evaltest.Rule{{Hash: "len3", Outcome: evaltest.Outcome{ValLoss: 3, TrainTimeMs: 300}}},
		Else: func(req eval.Request, hash string) evaltest.Outcome {
			return evaltest.Outcome{ValLoss: 4, TrainTimeMs: 2000, Reason: hash}
		},
	}
	for _, c := range []struct {
		src    string
		ms     float64
		reason string
	}{{"abc", 300, "val loss at or under the target"}, {"abcd", 2000, "len4"}} {
		res, err := s.Evaluate(ctx, eval.Request{Track: spec, Program: []byte(c.src)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Metrics.TrainTimeMs != c.ms || res.Reason != c.reason || res.Program.Hash != key([]byte(c.src)) {
			t.Errorf("%q: %g ms (%q), hash %q: want %g ms (%q), hash %q", c.src, res.Metrics.TrainTimeMs, res.Reason, res.Program.Hash, c.ms, c.reason, key([]byte(c.src)))
		}
	}
	s.Store = storetest.SQLite(t, "")
	res, err := s.Evaluate(ctx, eval.Request{Track: spec, Program: []byte("abc")})
	if err != nil {
		t.Fatal(err)
	}
	if want := store.Hash([]byte("abc")); res.Program.Hash != want || res.Metrics.TrainTimeMs != 2000 {
		t.Errorf("with a store: hash %q, %g ms: want the true hash %q (no rule matches it), 2000 ms", res.Program.Hash, res.Metrics.TrainTimeMs, want)
	}
}

// With a store, an evaluation is recorded as running before it is judged,
// then finished with its figures; one whose context ends first is
// recorded interrupted. An evaluator failure records nothing.
func TestScriptedRecords(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	spec := &track.Spec{Name: "t", TargetValLoss: 4}
	gate := make(chan struct{})
	broken := errors.New("the node is gone")
	var before atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &evaltest.Scripted{Store: st, Class: "cpu|test", Keep: true,
		Conditions: &store.Conditions{LoadAvg: []float64{1, 2, 3}},
		Rules: []evaltest.Rule{
			{Source: evaltest.Contains("held"), Outcome: evaltest.Outcome{Gate: gate, ValLoss: 3, TrainTimeMs: 500}},
			{Source: evaltest.Contains("slow"), Outcome: evaltest.Outcome{FullDelay: time.Hour}},
			{Source: evaltest.Contains("broken"), Outcome: evaltest.Outcome{Err: broken}},
		},
		Before: func(n int64) {
			before.Add(1)
			if evs, _ := st.Evaluations(ctx, store.Filter{}); evs[0].State != store.StateRunning {
				t.Errorf("evaluation %d is %s before it is judged", n, evs[0].State)
			}
			if n == 4 { // the slow one: its caller gives up
				cancel()
			}
		},
	}
	res, err := s.Evaluate(ctx, eval.Request{Track: spec, Program: []byte("fine = 1\n"), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Evaluation(ctx, res.EvaluationID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != store.StateDone || rec.Verdict != string(eval.Acceptable) || rec.TrainTimeMs != 1000 || rec.Seed != 3 ||
		rec.FingerprintClass != "cpu|test" || rec.Conditions == nil || len(rec.Result) == 0 {
		t.Errorf("recorded %+v", rec)
	}
	// A held full run waits for its gate; its fast check does not.
	done := make(chan *eval.Result)
	go func() {
		res, _ := s.Evaluate(ctx, eval.Request{Track: spec, Program: []byte("held = 1\n")})
		done <- res
	}()
	if res, err := s.Evaluate(ctx, eval.Request{Track: spec, Program: []byte("held = 1\n"), FastOnly: true}); err != nil || res.Verdict != eval.FastOK {
		t.Fatalf("the fast check of a held program: %v %v", res, err)
	}
	select {
	case <-done:
		t.Fatal("a held full run ended before its gate opened")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	if res := <-done; res == nil || res.Verdict != eval.Acceptable {
		t.Fatalf("the held run after its gate: %+v", res)
	}
	if _, err := s.Evaluate(cctx, eval.Request{Track: spec, Program: []byte("slow = 1\n")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("an evaluation past its context: %v", err)
	}
	if _, err := s.Evaluate(ctx, eval.Request{Track: spec, Program: []byte("broken = 1\n")}); !errors.Is(err, broken) {
		t.Fatalf("a failing evaluator: %v", err)
	}
	evs, _ := st.Evaluations(ctx, store.Filter{})
	if len(evs) != 4 {
		t.Fatalf("%d evaluations recorded, want 4", len(evs))
	}
	for _, e := range evs {
		want := store.StateDone
		if e.TrainTimeMs == 0 && !e.FastOnly {
			want = store.StateInterrupted
		}
		if e.State != want {
			t.Errorf("evaluation %d is %s, want %s", e.ID, e.State, want)
		}
	}
	if len(s.Requests()) != 5 || s.FastChecks() != 1 || s.FullRuns() != 4 || before.Load() != 4 {
		t.Errorf("%d requests kept, %d fast checks, %d full runs, Before called %d times", len(s.Requests()), s.FastChecks(), s.FullRuns(), before.Load())
	}
}

// BenchmarkScripted times one full run of a 100 KB program without a
// store: what the scripted evaluator adds to a benchmark of a search.
func BenchmarkScripted(b *testing.B) {
	spec := &track.Spec{Name: "t", TargetValLoss: 4}
	src := bytes.Repeat([]byte("# a line of a large training program, padded out to a hundred bytes or so .............\n"), 1150)
	s := &evaltest.Scripted{}
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Evaluate(ctx, eval.Request{Track: spec, Program: src}); err != nil {
			b.Fatal(err)
		}
	}
}
