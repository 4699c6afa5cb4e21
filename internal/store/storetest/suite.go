package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Run runs the contract against stores that open returns; each call must
// give a new, empty store, closed by the test's cleanup.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Programs", func(t *testing.T) { testPrograms(t, open(t)) })
	t.Run("Contents", func(t *testing.T) { testContents(t, open(t)) })
	t.Run("Evaluations", func(t *testing.T) { testEvaluations(t, open(t)) })
	t.Run("ResumeQueries", func(t *testing.T) { testResumeQueries(t, open(t)) })
	t.Run("Runs", func(t *testing.T) { testRuns(t, open(t)) })
	t.Run("Transactions", func(t *testing.T) { testTransactions(t, open(t)) })
	t.Run("Members", func(t *testing.T) { testMembers(t, open(t)) })
	t.Run("ChangedMembers", func(t *testing.T) { testChangedMembers(t, open(t)) })
	t.Run("Calls", func(t *testing.T) { testCalls(t, open(t)) })
	t.Run("Confirmations", func(t *testing.T) { testConfirmations(t, open(t)) })
	t.Run("Bench", func(t *testing.T) { testBench(t, open(t)) })
	t.Run("Calibrations", func(t *testing.T) { testCalibrations(t, open(t)) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, open(t)) })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testPrograms(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := []byte("print(1)\n"), []byte("print(1) \n")
	ha, err := s.PutProgram(ctx, a, "n")
	must(t, err)
	if ha != store.Hash(a) {
		t.Errorf("PutProgram returned %s, want the SHA-256 %s", ha, store.Hash(a))
	}
	if again, err := s.PutProgram(ctx, a, "n"); err != nil || again != ha {
		t.Errorf("storing a program twice: %s, %v", again, err)
	}
	time.Sleep(2 * time.Millisecond) // created_at orders ProgramsByNormHash
	hb, err := s.PutProgram(ctx, b, "n")
	must(t, err)
	got, err := s.Program(ctx, ha)
	if err != nil || string(got) != string(a) {
		t.Errorf("Program = %q, %v", got, err)
	}
	if hs, err := s.ProgramsByNormHash(ctx, "n"); err != nil || len(hs) != 2 || hs[0] != ha || hs[1] != hb {
		t.Errorf("ProgramsByNormHash = %v, %v; want [%s %s], oldest first", hs, err, ha, hb)
	}
	hc, err := s.PutProgram(ctx, []byte("x"), "")
	must(t, err)
	if hs, _ := s.ProgramsByNormHash(ctx, hc); len(hs) != 1 {
		t.Errorf("an empty normalized hash is the plain hash: %v", hs)
	}
	if _, err := s.Program(ctx, store.Hash([]byte("never stored"))); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing program: %v, want ErrNotFound", err)
	}
}

func newEvaluation(t *testing.T, s store.Store, src string, fastOnly bool) *store.Evaluation {
	t.Helper()
	h, err := s.PutProgram(context.Background(), []byte(src), "")
	must(t, err)
	e := &store.Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th", Seed: 3, FastOnly: fastOnly}
	must(t, s.CreateEvaluation(context.Background(), e))
	return e
}

func testEvaluations(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := newEvaluation(t, s, "a", false)
	if e.ID == 0 || e.State != store.StateRunning || e.StartedAt.IsZero() {
		t.Fatalf("created %+v: want an id, state running and a start time", e)
	}
	// A running evaluation is visible before it finishes.
	got, err := s.Evaluation(ctx, e.ID)
	if err != nil || got.State != store.StateRunning || !got.FinishedAt.IsZero() {
		t.Fatalf("running evaluation read back as %+v, %v", got, err)
	}
	e.Verdict, e.Reason, e.ValLoss, e.TrainTimeMs, e.Steps = "acceptable", "under the target", 3.25, 1200, 60
	e.Result = json.RawMessage(`{"verdict":"acceptable"}`)
	cond := &store.Conditions{LoadAvg: []float64{3.5, 2, 1}, LoadAvgEnd: []float64{4, 2.5, 1.25},
		CPU: &store.CPUUse{WallMs: 2000, OwnMs: 3900, OwnSource: "procs", OthersMs: 1500, StealMs: 20, CPUs: 2}}
	e.Conditions = cond
	must(t, s.FinishEvaluation(ctx, e, []byte("{\"type\":\"final\"}\n")))
	got, err = s.Evaluation(ctx, e.ID)
	if err != nil || got.State != store.StateDone || got.Verdict != "acceptable" || got.ValLoss != 3.25 || got.Steps != 60 ||
		got.StepAvgMs != 0 || got.FinishedAt.IsZero() || string(got.Result) != `{"verdict":"acceptable"}` {
		t.Errorf("finished evaluation read back as %+v, %v", got, err)
	}
	// The load behind its time is stored with it.
	if got != nil && (got.Conditions == nil || got.Conditions.CPU == nil || *got.Conditions.CPU != *cond.CPU ||
		len(got.Conditions.LoadAvgEnd) != 3 || got.Conditions.LoadAvgEnd[2] != 1.25) {
		t.Errorf("conditions read back as %+v, want %+v", got.Conditions, cond)
	}
	if tel, err := s.Telemetry(ctx, e.ID); err != nil || string(tel) != "{\"type\":\"final\"}\n" {
		t.Errorf("telemetry %q, %v", tel, err)
	}
	// Finishing an evaluation that does not exist stores nothing.
	ghost := &store.Evaluation{ID: e.ID + 1000, ProgramHash: e.ProgramHash}
	if err := s.FinishEvaluation(ctx, ghost, []byte("x")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finishing a missing evaluation: %v, want ErrNotFound", err)
	}
	if _, err := s.Telemetry(ctx, ghost.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("telemetry of a missing evaluation: %v, want ErrNotFound", err)
	}
	if _, err := s.Evaluation(ctx, ghost.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing evaluation: %v, want ErrNotFound", err)
	}
	// Lists are newest first, filtered, limited.
	f := newEvaluation(t, s, "b", true)
	g := newEvaluation(t, s, "a", false)
	all, err := s.Evaluations(ctx, store.Filter{})
	if err != nil || len(all) != 3 || all[0].ID != g.ID || all[2].ID != e.ID {
		t.Errorf("Evaluations: %v, want newest first", ids(all))
	}
	if l, _ := s.Evaluations(ctx, store.Filter{ProgramHash: e.ProgramHash}); len(l) != 2 {
		t.Errorf("by program: %v", ids(l))
	}
	if l, _ := s.Evaluations(ctx, store.Filter{Verdict: "acceptable"}); len(l) != 1 || l[0].ID != e.ID {
		t.Errorf("by verdict: %v", ids(l))
	}
	if l, _ := s.Evaluations(ctx, store.Filter{Track: "other"}); len(l) != 0 {
		t.Errorf("by track: %v", ids(l))
	}
	if l, _ := s.Evaluations(ctx, store.Filter{Limit: 1}); len(l) != 1 || l[0].ID != g.ID {
		t.Errorf("limit 1: %v", ids(l))
	}
	_ = f
}

func ids(es []*store.Evaluation) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// testResumeQueries checks the queries a resumed run relies on to redo
// nothing that finished and to lose nothing that did not.
func testResumeQueries(t *testing.T, s store.Store) {
	ctx := context.Background()
	before := newEvaluation(t, s, "p", false) // an older session's, still "running"
	time.Sleep(5 * time.Millisecond)
	since := time.Now()
	time.Sleep(2 * time.Millisecond)
	running := newEvaluation(t, s, "p", false)
	done := newEvaluation(t, s, "p", false)
	done.Verdict = "loss_too_high"
	must(t, s.FinishEvaluation(ctx, done, nil))
	fast := newEvaluation(t, s, "p", true)
	fast.Verdict = "fast_ok"
	must(t, s.FinishEvaluation(ctx, fast, nil))
	other := newEvaluation(t, s, "q", false)

	if rs, err := s.RunningEvaluations(ctx, done.ProgramHash, since); err != nil || len(rs) != 1 || rs[0].ID != running.ID {
		t.Errorf("RunningEvaluations = %v, %v; want only #%d (running, started since, this program)", ids(rs), err, running.ID)
	}
	got, err := s.LatestEvaluation(ctx, done.ProgramHash, false, since)
	if err != nil || got.ID != done.ID {
		t.Errorf("LatestEvaluation(full) = %v, %v; want #%d", got, err, done.ID)
	}
	if got, err := s.LatestEvaluation(ctx, done.ProgramHash, true, since); err != nil || got.ID != fast.ID {
		t.Errorf("LatestEvaluation(fast) = %v, %v; want #%d", got, err, fast.ID)
	}
	if _, err := s.LatestEvaluation(ctx, done.ProgramHash, false, time.Now().Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("nothing since: %v, want ErrNotFound", err)
	}
	must(t, s.InterruptEvaluations(ctx, done.ProgramHash, since))
	for _, c := range []struct {
		e     *store.Evaluation
		state string
	}{{before, store.StateRunning}, {running, store.StateInterrupted}, {done, store.StateDone}, {other, store.StateRunning}} {
		got, err := s.Evaluation(ctx, c.e.ID)
		if err != nil || got.State != c.state {
			t.Errorf("after InterruptEvaluations, #%d is %v (%v), want %s", c.e.ID, got.State, err, c.state)
		}
	}
}

func newRun(t *testing.T, s store.Store, name string) *store.Run {
	t.Helper()
	r := &store.Run{Name: name, Track: "tiny", TrackDir: "/tracks/tiny", TrackHash: "th", TargetValLoss: 4.2, Seed: 7,
		Config: json.RawMessage(`{"islands":2}`), RNG: []byte{1, 2, 3}}
	must(t, s.CreateRun(context.Background(), r))
	return r
}

func testRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newRun(t, s, "alpha")
	if a.ID == 0 || a.State != store.RunRunning || a.StartedAt.IsZero() {
		t.Fatalf("created %+v", a)
	}
	if err := s.CreateRun(ctx, &store.Run{Name: "alpha", Track: "tiny"}); err == nil {
		t.Error("a second run named alpha was created")
	}
	// A name that would break the tables it is printed in is refused.
	for _, name := range []string{"two\nlines", "esc\x1b[31mred", "tab\there"} {
		if err := s.CreateRun(ctx, &store.Run{Name: name, Track: "tiny"}); err == nil {
			t.Errorf("a run named %q was created", name)
		}
	}
	b := newRun(t, s, fmt.Sprint(a.ID)) // a name that reads as the other's id
	for ref, want := range map[string]int64{"alpha": a.ID, fmt.Sprint(a.ID): a.ID, "#" + fmt.Sprint(b.ID): b.ID, " alpha ": a.ID} {
		got, err := s.Run(ctx, ref)
		if err != nil || got.ID != want {
			t.Errorf("Run(%q) = %v, %v; want #%d", ref, got, err, want)
		}
	}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run(nope): %v, want ErrNotFound", err)
	}
	got, err := s.Run(ctx, "alpha")
	if err != nil || got.Seed != 7 || string(got.Config) != `{"islands":2}` || string(got.Models) != "[]" ||
		string(got.Bandit) != "{}" || string(got.RNG) != "\x01\x02\x03" || got.TargetValLoss != 4.2 || got.TrackDir != "/tracks/tiny" {
		t.Errorf("read back %+v, %v", got, err)
	}
	all, err := s.Runs(ctx)
	if err != nil || len(all) != 2 || all[0].ID != b.ID {
		t.Errorf("Runs: %v, want newest first", err)
	}
	// UpdateRun writes every mutable field.
	a.State, a.StopReason, a.StopDetail, a.Iterations, a.ActiveMs, a.Sessions = store.RunStopped, "iterations", "all done", 4, 1234, 2
	a.FinishedAt, a.Name, a.Bandit, a.TrackDir = time.Now(), "alpha2", json.RawMessage(`{"m":1}`), "/moved/tiny"
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error { return tx.UpdateRun(a) }))
	got, err = s.Run(ctx, "alpha2")
	if err != nil || got.State != store.RunStopped || got.StopReason != "iterations" || got.Iterations != 4 ||
		got.ActiveMs != 1234 || got.Sessions != 2 || got.FinishedAt.IsZero() || string(got.Bandit) != `{"m":1}` ||
		got.TrackDir != "/moved/tiny" {
		t.Errorf("updated run read back as %+v, %v", got, err)
	}
}

func testTransactions(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := newRun(t, s, "tx")
	// An error rolls back everything the transaction wrote.
	boom := errors.New("boom")
	err := s.RunInTx(ctx, func(tx store.RunTx) error {
		must(t, tx.InsertIteration(&store.Iteration{RunID: r.ID, Iteration: 1, Stage: "template"}))
		must(t, tx.InsertChild(&store.Child{RunID: r.ID, Iteration: 1, Origin: "mutate", State: "queued"}))
		r.Iterations = 1
		must(t, tx.UpdateRun(r))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("RunInTx returned %v, want the function's error", err)
	}
	kids, _ := s.Children(ctx, r.ID)
	its, _ := s.Iterations(ctx, r.ID)
	got, _ := s.Run(ctx, "tx")
	if len(kids) != 0 || len(its) != 0 || got.Iterations != 0 {
		t.Errorf("a failed transaction left %d children, %d iterations, iterations %d", len(kids), len(its), got.Iterations)
	}
	// A decision is recorded even while the caller is being canceled.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err = s.RunInTx(canceled, func(tx store.RunTx) error {
		return tx.InsertIteration(&store.Iteration{RunID: r.ID, Iteration: 1, Stage: "template"})
	})
	if its, _ := s.Iterations(ctx, r.ID); err != nil || len(its) != 1 {
		t.Errorf("a transaction under a canceled context: %v, %d iterations; want it committed", err, len(its))
	}
}

// testChangedMembers: a watcher's delta holds the members written at or
// after a time, in the order written, and only those of its run.
func testChangedMembers(t *testing.T, s store.Store) {
	ctx := context.Background()
	r, other := newRun(t, s, "watched"), newRun(t, s, "other")
	write := func(c *store.Child, insert bool) time.Time {
		t.Helper()
		time.Sleep(3 * time.Millisecond) // the writes' times are in milliseconds
		must(t, s.RunInTx(ctx, func(tx store.RunTx) error {
			if insert {
				return tx.InsertChild(c)
			}
			return tx.UpdateChild(c)
		}))
		return c.UpdatedAt
	}
	a := &store.Child{RunID: r.ID, Iteration: 1, Origin: "llm", State: "queued"}
	b := &store.Child{RunID: r.ID, Iteration: 1, Slot: 1, Origin: "llm", State: "queued"}
	write(a, true)
	since := write(b, true)
	write(&store.Child{RunID: other.ID, Iteration: 1, Origin: "llm", State: "queued"}, true)
	a.State, a.Verdict = "done", "acceptable"
	write(a, false)
	got, err := s.ChildrenSince(ctx, r.ID, since)
	if err != nil || len(got) != 2 || got[0].ID != b.ID || got[1].ID != a.ID || got[1].Verdict != "acceptable" {
		t.Fatalf("ChildrenSince(b's write) = %v, %v; want b, then a as updated", got, err)
	}
	got, err = s.ChildrenSince(ctx, r.ID, time.Now().Add(time.Hour))
	if err != nil || len(got) != 0 {
		t.Errorf("ChildrenSince(the future) = %v, %v; want none", got, err)
	}
}

func testMembers(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := newRun(t, s, "members")
	prog, err := s.PutProgram(ctx, []byte("p"), "")
	must(t, err)
	ev := newEvaluation(t, s, "p", false)
	var ref, kid *store.Child
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error {
		if err := tx.InsertIteration(&store.Iteration{RunID: r.ID, Iteration: 0, Stage: "reference"}); err != nil {
			return err
		}
		ref = &store.Child{RunID: r.ID, Origin: "reference", Stage: "reference", State: "fast", ProgramHash: prog}
		if err := tx.InsertChild(ref); err != nil {
			return err
		}
		if err := tx.InsertIteration(&store.Iteration{RunID: r.ID, Iteration: 1, Island: 1, ParentID: ref.ID, Stage: "template",
			TopIDs: []int64{ref.ID}}); err != nil {
			return err
		}
		kid = &store.Child{RunID: r.ID, Iteration: 1, Slot: 2, Island: 1, ParentID: ref.ID, Origin: "llm", Model: "m",
			Stage: "template", Template: "speed", Seed: 1 << 62, State: "queued"}
		return tx.InsertChild(kid)
	}))
	if ref.ID == 0 || kid.ID <= ref.ID {
		t.Fatalf("ids %d, %d: want them set, in creation order", ref.ID, kid.ID)
	}
	// UpdateChild writes every mutable field; zero numbers read back as 0.
	kid.State, kid.ProgramHash, kid.NormHash, kid.Description, kid.Idea = "done", prog, "n", "d", "i"
	kid.FixAttempts, kid.Verdict, kid.Reason, kid.Error = 2, "acceptable", "r", "e"
	kid.FastEvaluationID, kid.EvaluationID, kid.ValLoss, kid.TrainTimeMs, kid.Score = ev.ID, ev.ID, 3.5, 900, 0
	kid.Summary, kid.InputTokens, kid.OutputTokens, kid.CostUSD, kid.FinishedAt = "s", 10, 20, 0.5, time.Now()
	kid.Stage, kid.Template = "template", "combine" // a meta-prompted child that fell back
	var a1, a2 *store.Attempt
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error {
		if err := tx.UpdateChild(kid); err != nil {
			return err
		}
		a1 = &store.Attempt{ChildID: kid.ID, Kind: "propose", ProgramHash: prog}
		a2 = &store.Attempt{ChildID: kid.ID, Attempt: 1, Kind: "fix_run", Error: "x"}
		for _, a := range []*store.Attempt{a1, a2, {ChildID: ref.ID, Kind: "reference", ProgramHash: prog}} {
			if err := tx.InsertAttempt(a); err != nil {
				return err
			}
		}
		if err := tx.SetAttemptFast(a1.ID, ev.ID, "fast_ok", "ok"); err != nil {
			return err
		}
		if err := tx.FinishIteration(r.ID, 1); err != nil {
			return err
		}
		return tx.SetArchive(r.ID, []int64{kid.ID, ref.ID})
	}))
	got, err := s.Child(ctx, kid.ID)
	if err != nil || got.State != "done" || got.ProgramHash != prog || got.FixAttempts != 2 || got.Verdict != "acceptable" ||
		got.EvaluationID != ev.ID || got.ValLoss != 3.5 || got.Score != 0 || got.StepAvgMs != 0 || got.CostUSD != 0.5 ||
		got.Seed != 1<<62 || got.Slot != 2 || got.ParentID != ref.ID || got.Template != "combine" || got.Stage != "template" || got.FinishedAt.IsZero() {
		t.Errorf("child read back as %+v, %v", got, err)
	}
	// InsertChild writes every field too (a migrant copies a settled
	// member).
	if got == nil {
		t.FailNow()
	}
	cp := *got
	cp.Origin, cp.SourceID, cp.Island = "migrant", kid.ID, 0
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error { return tx.InsertChild(&cp) }))
	back, err := s.Child(ctx, cp.ID)
	if err == nil && cp.ID != got.ID && back.UpdatedAt.Sub(cp.UpdatedAt).Abs() < time.Millisecond {
		cp.UpdatedAt = back.UpdatedAt // read back in milliseconds
	}
	if err != nil || !reflect.DeepEqual(*back, cp) {
		t.Errorf("inserted child read back as %+v, %v; want %+v", back, err, cp)
	}
	if _, err := s.Child(ctx, cp.ID+100); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing child: %v, want ErrNotFound", err)
	}
	kids, err := s.Children(ctx, r.ID)
	if err != nil || len(kids) != 3 || kids[0].ID != ref.ID || kids[1].ID != kid.ID || kids[2].ID != cp.ID {
		t.Errorf("Children: %v, want creation order", err)
	}
	atts, err := s.Attempts(ctx, r.ID)
	if err != nil || len(atts) != 3 || atts[0].ChildID != ref.ID || atts[1].ID != a1.ID || atts[2].ID != a2.ID ||
		atts[1].FastVerdict != "fast_ok" || atts[1].FastEvaluationID != ev.ID || atts[2].ProgramHash != "" {
		t.Errorf("Attempts: %v, want by child, then order, with the fast check", err)
	}
	its, err := s.Iterations(ctx, r.ID)
	if err != nil || len(its) != 2 || its[0].Iteration != 0 || !its[0].DoneAt.IsZero() || its[1].DoneAt.IsZero() ||
		len(its[1].TopIDs) != 1 || its[1].TopIDs[0] != ref.ID || its[1].DiverseIDs == nil || its[1].ParentID != ref.ID {
		t.Errorf("Iterations: %v", err)
	}
	if arch, err := s.Archive(ctx, r.ID); err != nil || len(arch) != 2 || arch[0] != kid.ID {
		t.Errorf("Archive = %v, %v; want best first", arch, err)
	}
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error { return tx.SetArchive(r.ID, []int64{ref.ID}) }))
	if arch, _ := s.Archive(ctx, r.ID); len(arch) != 1 || arch[0] != ref.ID {
		t.Errorf("SetArchive does not replace: %v", arch)
	}
	// Keyed events happen once per run and kind.
	var first, second bool
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error {
		var err error
		first, err = tx.AddEvent(&store.RunEvent{RunID: r.ID, Kind: "migration", Key: "1", Detail: json.RawMessage(`{"n":1}`)})
		if err != nil {
			return err
		}
		second, err = tx.AddEvent(&store.RunEvent{RunID: r.ID, Kind: "migration", Key: "1"})
		return err
	}))
	must(t, s.AddRunEvent(ctx, &store.RunEvent{RunID: r.ID, Kind: "session_start"}))
	must(t, s.AddRunEvent(ctx, &store.RunEvent{RunID: r.ID, Kind: "session_start"}))
	if !first || second {
		t.Errorf("a keyed event added %v then %v; want true then false", first, second)
	}
	if evs, _ := s.RunEvents(ctx, r.ID, "migration"); len(evs) != 1 || string(evs[0].Detail) != `{"n":1}` {
		t.Errorf("migration events: %d", len(evs))
	}
	if evs, _ := s.RunEvents(ctx, r.ID, ""); len(evs) != 3 || evs[0].Kind != "migration" {
		t.Errorf("all events: %d, want 3 in order", len(evs))
	}
}

func testCalls(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := newRun(t, s, "calls")
	other := newRun(t, s, "other")
	done := &store.LLMCall{RunID: r.ID, ChildID: 5, Purpose: "template", Model: "m", Request: "req"}
	must(t, s.InsertLLMCall(ctx, done))
	if done.ID == 0 || done.State != store.CallPending {
		t.Fatalf("inserted %+v", done)
	}
	done.State, done.Answer, done.InputTokens, done.OutputTokens, done.CostUSD = store.CallDone, "ans", 100, 50, 0.25
	must(t, s.FinishLLMCall(ctx, done))
	lost := &store.LLMCall{RunID: r.ID, Purpose: "idea", Model: "m", Request: "req2"}
	must(t, s.InsertLLMCall(ctx, lost))
	elsewhere := &store.LLMCall{RunID: other.ID, Purpose: "idea", Model: "m", Request: "req3"}
	must(t, s.InsertLLMCall(ctx, elsewhere))

	if n, err := s.MarkLostCalls(ctx, r.ID); err != nil || n != 1 {
		t.Errorf("MarkLostCalls = %d, %v; want 1 (only this run's pending call)", n, err)
	}
	calls, err := s.LLMCalls(ctx, r.ID, false)
	if err != nil || len(calls) != 2 || calls[0].ID != done.ID || calls[1].State != store.CallLost || calls[0].Request != "" {
		t.Errorf("LLMCalls(text false): %v", err)
	}
	if calls, _ := s.LLMCalls(ctx, r.ID, true); len(calls) != 2 || calls[0].Request != "req" || calls[0].Answer != "ans" {
		t.Errorf("LLMCalls(text true) leaves out the text")
	}
	if req, ans, err := s.LLMCallText(ctx, done.ID); err != nil || req != "req" || ans != "ans" {
		t.Errorf("LLMCallText = %q, %q, %v", req, ans, err)
	}
	if _, _, err := s.LLMCallText(ctx, 999999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing call: %v, want ErrNotFound", err)
	}
	usd, tokens, n, err := s.RunSpend(ctx, r.ID)
	if err != nil || usd != 0.25 || tokens != 150 || n != 2 {
		t.Errorf("RunSpend = $%g, %d tokens, %d calls, %v; want $0.25, 150, 2 (lost calls count)", usd, tokens, n, err)
	}
	if got, _ := s.LLMCalls(ctx, other.ID, false); len(got) != 1 || got[0].State != store.CallPending {
		t.Errorf("another run's pending call was touched")
	}
}

// testConcurrentWriters: goroutines that write at once through one store
// lose nothing and get distinct ids.
func testConcurrentWriters(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := newRun(t, s, "concurrent")
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := s.RunInTx(ctx, func(tx store.RunTx) error {
					return tx.InsertChild(&store.Child{RunID: r.ID, Iteration: w, Slot: i, Origin: "mutate", State: "queued"})
				})
				if err == nil {
					err = s.InsertLLMCall(ctx, &store.LLMCall{RunID: r.ID, Purpose: "template", Model: "m", Request: "{}"})
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	kids, _ := s.Children(ctx, r.ID)
	if _, _, calls, _ := s.RunSpend(ctx, r.ID); len(kids) != workers*each || calls != workers*each {
		t.Errorf("%d children and %d calls, want %d of each", len(kids), calls, workers*each)
	}
}

// testConfirmations: claims are stored with every number, unknown numbers
// (NaN) read back as NaN, an update writes the outcome, and a run's claims
// come back in the order they were made.
func testConfirmations(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := newRun(t, s, "claims")
	other := newRun(t, s, "other")
	nan := math.NaN()
	c := &store.Confirmation{RunID: r.ID, Claim: runs.Claim{ChildID: 5, BaselineID: 1, Method: runs.MethodSeries,
		State: runs.ClaimQueued, Pairs: 5, Alpha: 0.01, SingleMs: 700, TimeMs: 900, BaselineMs: nan, TimeSD: nan, BaselineSD: nan,
		LossMean: nan, LossSD: nan, Speedup: 0.1, SpeedupLo: nan, SpeedupHi: nan, TimeP: nan, LossP: nan, NoiseCV: nan}}
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error { return tx.InsertConfirmation(c) }))
	second := &store.Confirmation{RunID: r.ID, Claim: runs.Claim{ChildID: 7, BaselineID: 5, Method: runs.MethodNoise,
		State: runs.ClaimConfirmed, Source: "cli", Pairs: 1, NoiseCV: 0.03, NoiseDF: 8, TimeP: 1e-4}}
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error {
		if err := tx.InsertConfirmation(second); err != nil {
			return err
		}
		return tx.InsertConfirmation(&store.Confirmation{RunID: other.ID, Claim: runs.Claim{ChildID: 9, Method: runs.MethodNoise, State: runs.ClaimSkipped}})
	}))
	if c.ID == 0 || second.ID <= c.ID {
		t.Fatalf("ids %d, %d", c.ID, second.ID)
	}
	got, err := s.Confirmations(ctx, r.ID)
	if err != nil || len(got) != 2 || got[0].ID != c.ID || got[1].ID != second.ID {
		t.Fatalf("Confirmations: %v, %d claims; want 2 in order", err, len(got))
	}
	g := got[0]
	if g.Source != "engine" || g.State != runs.ClaimQueued || g.Pairs != 5 || g.TimeMs != 900 || g.Speedup != 0.1 || g.SingleMs != 700 ||
		!math.IsNaN(g.TimeP) || !math.IsNaN(g.BaselineMs) || !g.FinishedAt.IsZero() || len(g.Evaluations) != 0 {
		t.Errorf("queued claim read back as %+v", g)
	}
	if g := got[1]; g.Source != "cli" || g.Method != runs.MethodNoise || g.NoiseDF != 8 || g.NoiseCV != 0.03 || g.TimeP != 1e-4 {
		t.Errorf("second claim read back as %+v", g)
	}
	c.State, c.BaselineMs, c.TimeP, c.LossP, c.Reason = runs.ClaimRejected, 950, 0.2, 0.001, "not significant"
	c.Evaluations, c.FinishedAt = []int64{11, 12, 13, 14}, time.Now()
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error { return tx.UpdateConfirmation(c) }))
	got, _ = s.Confirmations(ctx, r.ID)
	if g := got[0]; g.State != runs.ClaimRejected || g.BaselineMs != 950 || g.TimeP != 0.2 || g.Reason != "not significant" ||
		len(g.Evaluations) != 4 || g.Evaluations[3] != 14 || g.FinishedAt.IsZero() {
		t.Errorf("updated claim read back as %+v", g)
	}
}
