package storetest

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
)

// testBench: a bench run, its attempts, nodes and their model calls are
// read back as written; a run without a name gets bench-<id>; pending
// calls of one run are marked lost without touching another's; spending
// sums a run's node calls only.
func testBench(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := &store.BenchRun{Suite: "tiny-ladder", SuiteHash: "sh", Scaffold: "aide", Model: "m", Hints: "1+2", Config: []byte(`{"nodes":20}`)}
	must(t, s.CreateBenchRun(ctx, r))
	if r.ID == 0 || r.Name != "bench-"+itoa(r.ID) || r.State != store.RunRunning {
		t.Fatalf("created %+v: want an id, the name bench-<id> and state running", r)
	}
	named := &store.BenchRun{Name: "named", Suite: "x", SuiteHash: "h", Scaffold: "flat", Model: "mutate", Hints: "none"}
	must(t, s.CreateBenchRun(ctx, named))
	if err := s.CreateBenchRun(ctx, &store.BenchRun{Name: "named", Suite: "x"}); err == nil {
		t.Error("two bench runs with one name were accepted")
	}
	r.State, r.StopReason, r.StopDetail, r.ActiveMs, r.Sessions = store.RunStopped, "done", "every attempt finished", 1234, 2
	r.FinishedAt = r.StartedAt
	must(t, s.UpdateBenchRun(ctx, r))
	for _, ref := range []string{r.Name, itoa(r.ID)} {
		got, err := s.BenchRun(ctx, ref)
		if err != nil || got.ID != r.ID || got.State != store.RunStopped || got.StopReason != "done" || got.ActiveMs != 1234 ||
			got.Sessions != 2 || got.Hints != "1+2" || string(got.Config) != `{"nodes":20}` || got.FinishedAt.IsZero() {
			t.Errorf("BenchRun(%q) = %+v, %v", ref, got, err)
		}
	}
	if _, err := s.BenchRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing bench run: %v, want ErrNotFound", err)
	}
	if all, err := s.BenchRuns(ctx); err != nil || len(all) != 2 || all[0].ID != r.ID {
		t.Errorf("BenchRuns = %d runs, %v; want 2, oldest first", len(all), err)
	}

	start, err := s.PutProgram(ctx, []byte("start"), "")
	must(t, err)
	as := []*store.BenchAttempt{
		{RunID: r.ID, Position: 1, Task: "t2", Seed: 0},
		{RunID: r.ID, Position: 0, Task: "t1", Seed: 0, StartHash: start},
	}
	must(t, s.InsertBenchAttempts(ctx, as))
	if err := s.InsertBenchAttempts(ctx, []*store.BenchAttempt{{RunID: r.ID, Position: 0, Task: "dup"}}); err == nil {
		t.Error("two attempts at one position were accepted")
	}
	a := as[1]
	a.State, a.StartMs, a.GoalMs, a.TimeSource, a.StartedAt = store.AttemptRunning, 50000, 40000, "published", r.StartedAt
	must(t, s.UpdateBenchAttempt(ctx, a))

	root := &store.BenchNode{AttemptID: a.ID, Seq: 0, Kind: "start", State: store.NodeDone, ProgramHash: start, Verdict: "acceptable", TrainTimeMs: 50000}
	must(t, s.InsertBenchNode(ctx, root))
	child := &store.BenchNode{AttemptID: a.ID, Seq: 1, Step: 1, ParentID: root.ID, Kind: "improve", State: store.NodeProposing}
	must(t, s.InsertBenchNode(ctx, child))
	if err := s.InsertBenchNode(ctx, &store.BenchNode{AttemptID: a.ID, Seq: 1, Kind: "draft", State: store.NodeProposing}); err == nil {
		t.Error("two nodes with one sequence number were accepted")
	}
	call := &store.LLMCall{Purpose: "improve", Model: "m", Request: "req"}
	must(t, s.InsertBenchCall(ctx, child.ID, call))
	if call.ID == 0 || call.State != store.CallPending || call.BenchNodeID != child.ID {
		t.Fatalf("inserted call %+v", call)
	}
	if err := s.InsertBenchCall(ctx, child.ID, &store.LLMCall{RunID: 7, Purpose: "x", Model: "m"}); err == nil {
		t.Error("a bench call naming an evolution run was accepted")
	}
	call.State, call.Answer, call.InputTokens, call.OutputTokens, call.CostUSD = store.CallDone, "ans", 100, 20, 0.5
	must(t, s.FinishLLMCall(ctx, call))
	pending := &store.LLMCall{Purpose: "debug", Model: "m", Request: "req2"}
	must(t, s.InsertBenchCall(ctx, child.ID, pending))

	// Another run's pending call stays pending.
	oa := []*store.BenchAttempt{{RunID: named.ID, Position: 0, Task: "t1"}}
	must(t, s.InsertBenchAttempts(ctx, oa))
	on := &store.BenchNode{AttemptID: oa[0].ID, Seq: 1, Kind: "draft", State: store.NodeProposing}
	must(t, s.InsertBenchNode(ctx, on))
	must(t, s.InsertBenchCall(ctx, on.ID, &store.LLMCall{Purpose: "draft", Model: "m", Request: "r"}))

	prog, err := s.PutProgram(ctx, []byte("child"), "norm")
	must(t, err)
	ev := newEvaluation(t, s, "child", false)
	child.State, child.ProgramHash, child.NormHash, child.EvaluationID = store.NodeDone, prog, "norm", ev.ID
	child.Verdict, child.ValLoss, child.TrainTimeMs, child.InputTokens, child.CostUSD = "acceptable", 3.05, 42000, 100, 0.5
	child.Description = "lr up"
	must(t, s.UpdateBenchNode(ctx, child))
	nodes, err := s.BenchNodes(ctx, a.ID)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("BenchNodes = %d nodes, %v; want 2", len(nodes), err)
	}
	if n := nodes[1]; n.ID != child.ID || n.ParentID != root.ID || n.State != store.NodeDone || n.ProgramHash != prog ||
		n.EvaluationID != ev.ID || n.TrainTimeMs != 42000 || n.ValLoss != 3.05 || n.Description != "lr up" || n.Step != 1 {
		t.Errorf("node read back as %+v", n)
	}
	if nodes[0].ParentID != 0 || nodes[0].Kind != "start" {
		t.Errorf("root read back as %+v", nodes[0])
	}

	if n, err := s.MarkLostBenchCalls(ctx, r.ID); err != nil || n != 1 {
		t.Errorf("MarkLostBenchCalls = %d, %v; want 1", n, err)
	}
	calls, err := s.BenchCalls(ctx, a.ID, true)
	if err != nil || len(calls) != 2 || calls[0].Answer != "ans" || calls[0].Request != "req" || calls[1].State != store.CallLost ||
		calls[0].BenchNodeID != child.ID {
		t.Errorf("BenchCalls = %+v, %v", calls, err)
	}
	if calls, _ := s.BenchCalls(ctx, a.ID, false); len(calls) != 2 || calls[0].Request != "" {
		t.Error("BenchCalls(text false) returns the text")
	}
	if calls, _ := s.BenchCalls(ctx, oa[0].ID, false); len(calls) != 1 || calls[0].State != store.CallPending {
		t.Error("another bench run's pending call was touched")
	}
	usd, tokens, n, err := s.BenchSpend(ctx, r.ID)
	if err != nil || usd != 0.5 || tokens != 120 || n != 2 {
		t.Errorf("BenchSpend = $%g, %d tokens, %d calls, %v; want $0.5, 120, 2", usd, tokens, n, err)
	}

	a.State, a.BestNodeID, a.BestMs, a.FSR, a.Nodes, a.Acceptable, a.Buggy = store.AttemptDone, child.ID, 42000, 0.8, 1, 1, 0
	a.CostUSD, a.Tokens, a.FinishedAt = 0.5, 120, r.StartedAt
	a.RetimeN, a.RetimeStartMs, a.RetimeBestMs, a.RetimeP, a.RetimeEvaluations = 3, 50500, 43000, 0.002, []int64{ev.ID}
	a.SingleFSR, a.Notes = 0.8, "a warning"
	must(t, s.UpdateBenchAttempt(ctx, a))
	got, err := s.BenchAttempts(ctx, r.ID)
	if err != nil || len(got) != 2 || got[0].ID != a.ID || got[1].Task != "t2" {
		t.Fatalf("BenchAttempts = %+v, %v; want 2 in position order", got, err)
	}
	if g := got[0]; g.State != store.AttemptDone || g.StartHash != start || g.BestNodeID != child.ID || g.FSR != 0.8 ||
		g.StartMs != 50000 || g.GoalMs != 40000 || g.TimeSource != "published" || g.FinishedAt.IsZero() || g.Tokens != 120 {
		t.Errorf("attempt read back as %+v", g)
	}
	if g := got[0]; g.RetimeN != 3 || g.RetimeStartMs != 50500 || g.RetimeBestMs != 43000 || g.RetimeP != 0.002 ||
		len(g.RetimeEvaluations) != 1 || g.SingleFSR != 0.8 || g.Notes != "a warning" {
		t.Errorf("the attempt's re-timing read back as %+v", g)
	}
	if g := got[1]; g.State != store.AttemptPending || g.StartHash != "" || !g.StartedAt.IsZero() {
		t.Errorf("a pending attempt read back as %+v", g)
	}
}

// testCalibrations: the newest calibration of each record and machine
// class is the one returned.
func testCalibrations(t *testing.T, s store.Store) {
	ctx := context.Background()
	h, err := s.PutProgram(ctx, []byte("r0"), "")
	must(t, err)
	put := func(record, class string, mean float64) {
		t.Helper()
		c := &store.Calibration{Suite: "s", Record: record, ProgramHash: h, Track: "tiny", TrackHash: "th",
			FingerprintClass: class, N: 3, MeanMs: mean, SDMs: 1, LoMs: mean - 2, HiMs: mean + 2, ValLoss: 3, EvaluationIDs: []int64{1, 2, 3},
			Conditions: store.Conditions{LoadAvg: []float64{mean / 100, 1, 0.5}, LoadAvgEnd: []float64{2, 1.5, 0.75}}}
		must(t, s.PutCalibration(ctx, c))
	}
	put("r0", "cpu-a", 100)
	put("r0", "cpu-a", 110) // newer
	put("r1", "cpu-a", 80)
	put("r0", "cpu-b", 50)
	got, err := s.Calibrations(ctx, "s", "cpu-a")
	if err != nil || len(got) != 2 || got[0].Record != "r0" || got[0].MeanMs != 110 || got[1].MeanMs != 80 ||
		len(got[0].EvaluationIDs) != 3 {
		t.Errorf("Calibrations(cpu-a) = %+v, %v; want r0 at 110 (the newest) and r1 at 80", got, err)
	}
	// When and under what load each was taken reads back.
	if len(got) > 0 && (got[0].CreatedAt.IsZero() || len(got[0].Conditions.LoadAvg) != 3 || got[0].Conditions.LoadAvg[0] != 1.1 ||
		len(got[0].Conditions.LoadAvgEnd) != 3) {
		t.Errorf("calibration conditions %+v at %v: want the load averages it was stored with", got[0].Conditions, got[0].CreatedAt)
	}
	if all, _ := s.Calibrations(ctx, "s", ""); len(all) != 3 {
		t.Errorf("Calibrations of every class: %d, want 3", len(all))
	}
	if none, err := s.Calibrations(ctx, "other", ""); err != nil || len(none) != 0 {
		t.Errorf("another suite: %v, %v", none, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
