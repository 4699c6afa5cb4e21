package evolve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Engine behaviours with instant fakes: budgets, draining, aborting,
// resume state, failures.

func fakeOptions(t *testing.T, st store.Store, models ...Model) Options {
	t.Helper()
	if len(models) == 0 {
		models = []Model{{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate()}}
	}
	return Options{Store: st, Track: quickTrack(t), Evaluator: fakeEvaluator(st), Models: models, Log: testLog(t)}
}

func smallConfig() Config {
	return Config{Islands: 2, BranchingFactor: 3, Slots: 2, Seed: 9, Budget: BudgetConfig{MaxIterations: 4}}
}

func runEngine(t *testing.T, opts Options, cfg Config) (*Engine, *Summary) {
	t.Helper()
	e, err := New(context.Background(), opts, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return e, sum
}

func TestBudgetIterations(t *testing.T) {
	st := openStore(t, "")
	e, sum := runEngine(t, fakeOptions(t, st), smallConfig())
	if sum.StopReason != StopIterations || sum.Status.Iteration != 4 || sum.Status.IterationsDone != 4 {
		t.Fatalf("summary %+v", sum)
	}
	kids, _ := st.Children(context.Background(), e.RunID())
	n := 0
	for _, c := range kids {
		if c.Origin == runs.OriginMutate {
			n++
		}
	}
	if n != 12 {
		t.Errorf("%d children, want 12", n)
	}
}

func TestBudgetEvaluations(t *testing.T) {
	st := openStore(t, "")
	cfg := smallConfig()
	cfg.Budget.MaxEvaluations = 5
	e, sum := runEngine(t, fakeOptions(t, st), cfg)
	if sum.StopReason != StopEvaluations || sum.Status.Evaluations != 5 {
		t.Fatalf("stop %s (%s), %d evaluations", sum.StopReason, sum.StopDetail, sum.Status.Evaluations)
	}
	run, _ := st.Run(context.Background(), fmt.Sprint(e.RunID()))
	if run.StopReason != StopEvaluations || !strings.Contains(run.StopDetail, "max_evaluations = 5") {
		t.Errorf("stored %s: %s", run.StopReason, run.StopDetail)
	}
}

func TestBudgetDuration(t *testing.T) {
	st := openStore(t, "")
	opts := fakeOptions(t, st)
	opts.Evaluator = &evaltest.Scripted{Store: st, Else: delayed(50*time.Millisecond, 400*time.Millisecond)}
	cfg := smallConfig()
	cfg.Budget = BudgetConfig{MaxIterations: 1000, MaxDuration: llm.Duration(1500 * time.Millisecond)}
	start := time.Now()
	_, sum := runEngine(t, opts, cfg)
	if sum.StopReason != StopDuration {
		t.Fatalf("stop %s: %s", sum.StopReason, sum.StopDetail)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a 1.5 s budget took %s", d)
	}
}

func TestBudgetUSD(t *testing.T) {
	st := openStore(t, "")
	opts := fakeOptions(t, st, Model{Name: "fake", Kind: propose.KindLLM, Client: fakeModel(0)})
	cfg := smallConfig()
	cfg.Budget = BudgetConfig{MaxIterations: 100, MaxUSD: 0.0045}
	e, sum := runEngine(t, opts, cfg)
	if sum.StopReason != StopUSD {
		t.Fatalf("stop %s: %s", sum.StopReason, sum.StopDetail)
	}
	usd, _, calls, _ := st.RunSpend(context.Background(), e.RunID())
	// Calls in flight when the limit is reached finish: at most
	// llm_concurrency of them over.
	if usd < 0.0045 || calls > 5+4 {
		t.Errorf("spent $%g in %d calls", usd, calls)
	}
}

// A budget enforced by the model client (llm.budget) stops the run
// cleanly, and the child whose call was refused waits for a resume.
func TestBudgetFromClient(t *testing.T) {
	st := openStore(t, "")
	b := llm.NewBudget(llm.BudgetConfig{MaxCalls: 4}, llm.Spend{})
	opts := fakeOptions(t, st, Model{Name: "fake", Kind: propose.KindLLM, Client: b.Wrap(fakeModel(0))})
	cfg := smallConfig()
	cfg.LLMConcurrency = 1
	cfg.FastFixes = ptr(0)
	e, sum := runEngine(t, opts, cfg)
	if sum.StopReason != StopCalls {
		t.Fatalf("stop %s: %s", sum.StopReason, sum.StopDetail)
	}
	kids, _ := st.Children(context.Background(), e.RunID())
	queued := 0
	for _, c := range kids {
		if c.State == runs.Queued {
			queued++
		}
		if c.Verdict == runs.NoProposal {
			t.Errorf("child %d was failed for a budget: %s", c.ID, c.Reason)
		}
	}
	if queued == 0 {
		t.Error("no child waits for a larger budget")
	}
}

func TestLLMFailuresStop(t *testing.T) {
	st := openStore(t, "")
	down := llmtest.Always(llmtest.Reply{Err: &llm.Error{Kind: llm.ErrAuth, Provider: "fake", Message: "bad key"}})
	opts := fakeOptions(t, st, Model{Name: "down", Kind: propose.KindLLM, Client: down})
	cfg := smallConfig()
	cfg.MaxConsecutiveFailures = 5
	cfg.Budget.MaxIterations = 50
	_, sum := runEngine(t, opts, cfg)
	if sum.StopReason != StopLLMFailures || !strings.Contains(sum.StopDetail, "bad key") {
		t.Fatalf("stop %s: %s", sum.StopReason, sum.StopDetail)
	}
	if sum.Status.NoProposal < 5 || sum.Status.NoProposal > 5+cfg.Resolved().LLMConcurrency {
		t.Errorf("%d failed proposals", sum.Status.NoProposal)
	}
}

func TestReferenceFails(t *testing.T) {
	st := openStore(t, "")
	opts := fakeOptions(t, st)
	// Every program's fast check fails.
	opts.Evaluator = &evaltest.Scripted{Else: func(eval.Request, string) evaltest.Outcome {
		return evaltest.Outcome{Crash: "SyntaxError: invalid syntax", Reason: "fast check: SyntaxError: invalid syntax", Traceback: "SyntaxError"}
	}}
	e, err := New(context.Background(), opts, smallConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.StopReason != StopReferenceFails || !strings.Contains(sum.StopDetail, "SyntaxError") || sum.Status.Iteration != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if _, err := Resume(context.Background(), opts, mustRun(t, st, e.RunID()), Overrides{}); err == nil || !strings.Contains(err.Error(), "nothing to evolve") {
		t.Errorf("resume of a run whose reference failed: %v", err)
	}
}

func mustRun(t *testing.T, st store.Store, id int64) *store.Run {
	t.Helper()
	r, err := st.Run(context.Background(), fmt.Sprint(id))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Drain: no new work starts, running evaluations finish and are recorded.
func TestDrain(t *testing.T) {
	st := openStore(t, "")
	release := make(chan struct{})
	ev := gated(st, release)
	opts := fakeOptions(t, st)
	opts.Evaluator = ev
	e, err := New(context.Background(), opts, smallConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Summary)
	go func() {
		sum, err := e.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	release <- struct{}{} // the reference
	waitFor(t, "two full evaluations in flight", func() bool { return ev.FullRuns() == 3 })
	e.Drain("test")
	time.Sleep(100 * time.Millisecond)
	close(release)
	sum := <-done
	if sum.StopReason != StopInterrupted || ev.FullRuns() != 3 {
		t.Fatalf("stop %s, %d full evaluations started", sum.StopReason, ev.FullRuns())
	}
	kids, _ := st.Children(context.Background(), e.RunID())
	doneKids := 0
	for _, c := range kids {
		if c.Origin == runs.OriginMutate && c.State == runs.Done && c.EvaluationID != 0 {
			doneKids++
		}
	}
	if doneKids != 2 {
		t.Errorf("%d children finished their evaluation, want the 2 in flight", doneKids)
	}
}

// Abort: canceling kills what runs; on resume those children are
// evaluated again and the run completes with the same totals.
func TestAbortAndResume(t *testing.T) {
	st := openStore(t, "")
	release := make(chan struct{})
	ev := gated(st, release)
	opts := fakeOptions(t, st)
	opts.Evaluator = ev
	cfg := smallConfig()
	e, err := New(context.Background(), opts, cfg, "abort")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Summary)
	go func() {
		sum, _ := e.Run(ctx)
		done <- sum
	}()
	release <- struct{}{}
	waitFor(t, "full evaluations in flight", func() bool { return ev.FullRuns() == 3 })
	cancel()
	sum := <-done
	if sum.StopReason != StopAborted {
		t.Fatalf("stop %s", sum.StopReason)
	}
	kids, _ := st.Children(context.Background(), e.RunID())
	evaluating := 0
	for _, c := range kids {
		if c.State == runs.Evaluating {
			evaluating++
		}
	}
	if evaluating != 2 {
		for _, c := range kids {
			t.Logf("child %d %s %s %s", c.ID, c.Origin, c.State, c.Verdict)
		}
		t.Fatalf("%d children left evaluating, want 2", evaluating)
	}
	evals, _ := st.Evaluations(context.Background(), store.Filter{})
	for _, ev := range evals {
		if ev.State == store.StateRunning {
			t.Errorf("evaluation %d left running after the abort", ev.ID)
		}
	}

	run := mustRun(t, st, e.RunID())
	opts.Evaluator = fakeEvaluator(st)
	e2, err := Resume(context.Background(), opts, run, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if e2.draw.pcg == nil || e2.Status().RunID != 0 {
		t.Fatal("resume did not restore the generator")
	}
	want, _ := e.draw.pcg.MarshalBinary()
	got, _ := e2.draw.pcg.MarshalBinary()
	if string(want) != string(got) {
		t.Error("the resumed generator's state differs from the one recorded")
	}
	sum2, err := e2.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum2.StopReason != StopIterations || sum2.Status.Iteration != cfg.Budget.MaxIterations {
		t.Fatalf("resumed: %+v", sum2)
	}
	kids, _ = st.Children(context.Background(), e.RunID())
	n := 0
	for _, c := range kids {
		if c.State != runs.Done {
			t.Errorf("child %d is %s", c.ID, c.State)
		}
		if c.Origin == runs.OriginMutate {
			n++
		}
	}
	if n != 12 {
		t.Errorf("%d children after resume, want 12", n)
	}
}

// A resumed run may raise its budget; one that stopped on its iterations
// stops again at once without one.
func TestResumeRaisesBudget(t *testing.T) {
	st := openStore(t, "")
	opts := fakeOptions(t, st)
	e, _ := runEngine(t, opts, smallConfig())
	run := mustRun(t, st, e.RunID())
	e2, err := Resume(context.Background(), opts, run, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e2.Run(context.Background())
	if err != nil || sum.StopReason != StopIterations || sum.Status.Iteration != 4 {
		t.Fatalf("resume without a larger budget: %+v %v", sum, err)
	}
	run = mustRun(t, st, e.RunID())
	e3, err := Resume(context.Background(), opts, run, Overrides{Budget: BudgetConfig{MaxIterations: 6}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err = e3.Run(context.Background())
	if err != nil || sum.Status.Iteration != 6 {
		t.Fatalf("resume with 6 iterations: %+v %v", sum, err)
	}
	if r := mustRun(t, st, e.RunID()); r.Sessions != 3 || r.Iterations != 6 {
		t.Errorf("sessions %d iterations %d", r.Sessions, r.Iterations)
	}
}

// A run whose model is gone from the config resumes with the others.
func TestResumeWithoutAModel(t *testing.T) {
	st := openStore(t, "")
	release := make(chan struct{})
	ev := gated(st, release)
	a := Model{Name: "a", Kind: propose.KindLLM, Client: fakeModel(0)}
	b := Model{Name: "b", Kind: propose.KindLLM, Client: fakeModel(0)}
	opts := fakeOptions(t, st, a, b)
	opts.Evaluator = ev
	e, err := New(context.Background(), opts, smallConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		release <- struct{}{}
		waitFor(t, "evaluations", func() bool { return ev.FullRuns() >= 2 })
		cancel()
	}()
	if _, err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	opts = fakeOptions(t, st, a)
	resumed := time.Now()
	e2, err := Resume(context.Background(), opts, mustRun(t, st, e.RunID()), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	kids, _ := st.Children(context.Background(), e.RunID())
	proposedAfter := 0
	for _, c := range kids {
		if c.State != runs.Done {
			t.Errorf("child %d is %s", c.ID, c.State)
		}
		if c.Origin == runs.OriginLLM && c.CreatedAt.After(resumed) {
			proposedAfter++
			if c.Model != "a" {
				t.Errorf("child %d, sampled after the resume, has model %s", c.ID, c.Model)
			}
		}
		if c.Origin == runs.OriginLLM && c.Model == "b" && c.InputTokens == 0 && c.Verdict != runs.Duplicate {
			t.Errorf("child %d kept model b but was never proposed by it", c.ID)
		}
	}
	if proposedAfter == 0 {
		t.Error("no child was sampled after the resume")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	st := openStore(t, "")
	opts := fakeOptions(t, st)
	for name, mod := range map[string]func(o *Options){
		"no store":    func(o *Options) { o.Store = nil },
		"no models":   func(o *Options) { o.Models = nil },
		"no client":   func(o *Options) { o.Models = []Model{{Name: "x", Kind: propose.KindLLM}} },
		"twice":       func(o *Options) { o.Models = append(o.Models, o.Models[0]) },
		"no proposer": func(o *Options) { o.Models = []Model{{Name: "x", Kind: propose.KindMutate}} },
	} {
		o := opts
		mod(&o)
		if _, err := New(context.Background(), o, smallConfig(), ""); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	bad := smallConfig()
	bad.Objective = "speed"
	if _, err := New(context.Background(), opts, bad, ""); err == nil || !strings.Contains(err.Error(), "evolve.objective") {
		t.Errorf("bad objective: %v", err)
	}
	if _, err := New(context.Background(), opts, smallConfig(), "same"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), opts, smallConfig(), "same"); err == nil || !errors.Is(err, err) || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a second run with the same name: %v", err)
	}
}

// A child whose fix cannot be obtained keeps the verdict of its failed
// fast check; one whose answers never apply is apply_failed.
func TestFixLoopEnds(t *testing.T) {
	var n atomic.Int64
	model := llm.ClientFunc(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		user := req.Messages[0].Content
		k := n.Add(1)
		switch {
		case strings.Contains(user, "fails when it runs"):
			return nil, &llm.Error{Kind: llm.ErrServer, Provider: "fake", Message: "overloaded"}
		case strings.Contains(user, "attempt 1 of"), strings.Contains(user, "could not be applied"):
			return &llm.Response{Text: "<<<<<<< SEARCH\nNO SUCH LINE\n=======\nx\n>>>>>>> REPLACE\n"}, nil
		}
		return &llm.Response{Text: fmt.Sprintf("<<<<<<< SEARCH\n=======\n# CRASH %d\n>>>>>>> REPLACE\n", k)}, nil
	})
	st := openStore(t, "")
	opts := fakeOptions(t, st, Model{Name: "m", Kind: propose.KindLLM, Client: model})
	// The fast check of a program that contains CRASH fails.
	opts.Evaluator = &evaltest.Scripted{Store: st, Else: hashOutcome, Rules: []evaltest.Rule{{Source: evaltest.Contains("CRASH"),
		Outcome: evaltest.Outcome{Crash: "RuntimeError: CRASH", Reason: "fast check: RuntimeError: CRASH", Traceback: "RuntimeError: CRASH"}}}}
	cfg := Config{Islands: 1, BranchingFactor: 2, Seed: 1, FastFixes: ptr(2), Budget: BudgetConfig{MaxIterations: 1}}
	e, sum := runEngine(t, opts, cfg)
	if sum.StopReason != StopIterations {
		t.Fatalf("stop %s: %s", sum.StopReason, sum.StopDetail)
	}
	kids, _ := st.Children(context.Background(), e.RunID())
	attempts, _ := st.Attempts(context.Background(), e.RunID())
	per := map[int64]int{}
	for _, a := range attempts {
		per[a.ChildID]++
	}
	for _, c := range kids {
		switch c.Slot {
		case 0:
			if c.Origin == runs.OriginReference {
				continue
			}
			if c.Verdict != runs.ApplyFailed || c.FixAttempts != 2 || per[c.ID] != 3 || !strings.Contains(c.Error, "was not found") {
				t.Errorf("child %d: %s after %d fixes (%d attempts): %s", c.ID, c.Verdict, c.FixAttempts, per[c.ID], c.Reason)
			}
		case 1:
			if c.Verdict != "error" || !strings.Contains(c.Reason, "CRASH") || !strings.Contains(c.Reason, "overloaded") || c.ProgramHash == "" {
				t.Errorf("child %d: %s: %s", c.ID, c.Verdict, c.Reason)
			}
		}
	}
}

// panicky panics on every proposal.
type panicky struct{}

func (panicky) Propose(ctx context.Context, req propose.Request) (*propose.Proposal, error) {
	panic("a proposer bug")
}

func TestProposerPanicFailsTheChild(t *testing.T) {
	st := openStore(t, "")
	opts := fakeOptions(t, st, Model{Name: "bug", Kind: propose.KindMutate, Proposer: panicky{}})
	cfg := smallConfig()
	cfg.MaxConsecutiveFailures = 3
	_, sum := runEngine(t, opts, cfg)
	if sum.StopReason != StopLLMFailures || !strings.Contains(sum.StopDetail, "panicked: a proposer bug") || sum.Status.NoProposal < 3 {
		t.Fatalf("summary %s: %s (%d without a proposal)", sum.StopReason, sum.StopDetail, sum.Status.NoProposal)
	}
}
