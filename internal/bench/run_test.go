package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/bench/benchtest"
	"github.com/frontier-bench/frontier/internal/bench/fsr"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
)

// fixture is a bench environment over the mini suite, the fake track and
// benchtest's evaluator.
type fixture struct {
	st    store.Store
	ev    *evaltest.Scripted
	env   Env
	suite *Suite
}

func newFixture(t testing.TB, dbPath string) *fixture {
	t.Helper()
	st := storetest.SQLite(t, dbPath)
	s, err := LoadDir("testdata/mini")
	if err != nil {
		t.Fatal(err)
	}
	ev := benchtest.NewEvaluator(st)
	env := Env{Store: st, Evaluator: ev, Tracks: fakeTracks(), WorkDir: t.TempDir()}
	return &fixture{st: st, ev: ev, env: env, suite: s}
}

func fakeTracks() Tracks { return track.NewRegistry(nil, "testdata/tracks") }

// coder is a language model (a fake client) that edits benchtest programs.
func coder(c *benchtest.Coder) (evolve.Model, *llmtest.Fake) {
	f := llmtest.New()
	f.Respond = func(req llm.Request) llmtest.Reply {
		return llmtest.Reply{Text: c.Answer(req.Messages[len(req.Messages)-1].Content),
			Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}, CostUSD: 0.01}
	}
	return evolve.Model{Name: "coder", Kind: propose.KindLLM, Client: f}, f
}

func mutate() evolve.Model {
	return evolve.Model{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate()}
}

func modelRecord(m evolve.Model) evolve.ModelsRecord {
	return evolve.ModelsRecord{Name: m.Name, Kind: string(m.Kind)}
}

// TestRunAIDE runs the mini suite with AIDE and a model that reproduces
// each record's speedup: every attempt finishes with a positive FSR, the
// hints are in every first prompt and the ground-truth diff in none.
func TestRunAIDE(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "")
	m, client := coder(&benchtest.Coder{Speedup: 0.8, BreakEvery: 4})
	var done []string
	fx.env.Progress = func(line string) {
		if strings.Contains(line, ": FSR ") {
			done = append(done, line)
		}
	}
	b, err := New(ctx, fx.env, fx.suite, Config{Scaffold: "aide", Model: modelRecord(m), Hints: "1+2+3", Seeds: 2, Nodes: 6}, "", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.StopReason != StopDone || len(sum.Attempts) != 4 {
		t.Fatalf("stopped %s (%s) with %d attempts", sum.StopReason, sum.StopDetail, len(sum.Attempts))
	}
	for _, a := range sum.Attempts {
		if a.State != store.AttemptDone || a.Nodes != 6 || a.TimeSource != TimesPublished || a.CostUSD <= 0 {
			t.Errorf("attempt %+v", a)
		}
		// Each answer trains in 80% of the time: the goal is reached.
		if a.FSR < 1 {
			t.Errorf("task %s seed %d: FSR %.3f, want at least 1", a.Task, a.Seed, a.FSR)
		}
	}
	if sum.Attempts[0].Seed != 0 || sum.Attempts[1].Seed != 0 || sum.Attempts[2].Seed != 1 {
		t.Error("attempts are not ordered seed by seed")
	}
	// A best time the search found is one run of its program, and says so.
	if len(done) != 4 {
		t.Errorf("%d attempt lines: %q", len(done), done)
	}
	for _, line := range done {
		if !strings.Contains(line, "a single timing") {
			t.Errorf("the best time does not say it is a single timing: %s", line)
		}
	}
	for _, r := range client.Requests() {
		text := r.System + r.Messages[0].Content
		if strings.Contains(text, "GROUND-TRUTH-DIFF") {
			t.Fatalf("a prompt shows the ground-truth diff:\n%s", text)
		}
		if strings.Contains(text, "could not be applied") {
			continue
		}
		task := "r1"
		if strings.Contains(text, "# record r1") || strings.Contains(text, "PSEUDO-r2") {
			task = "r2"
		}
		for _, h := range []string{"PSEUDO-", "DESCRIPTION-", "PAPER-"} {
			if !strings.Contains(text, h+task) {
				t.Errorf("a prompt of task %s lacks hint %s", task, h)
			}
		}
	}
}

// TestRunFlatMutate: the done criterion's command, on fakes: flat with the
// mutate baseline runs every task and scores it.
func TestRunFlatMutate(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "")
	m := mutate()
	b, err := New(ctx, fx.env, fx.suite, Config{Scaffold: "flat", Model: modelRecord(m), Nodes: 4}, "flat-run", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.StopReason != StopDone || len(sum.Attempts) != 2 || sum.Run.Name != "flat-run" {
		t.Fatalf("%s: %+v", sum.StopReason, sum.Attempts)
	}
	for _, a := range sum.Attempts {
		// Mutations of lr do not change TIME: nothing is recovered.
		if a.FSR != 0 || a.Nodes != 4 || a.BestMs != a.StartMs {
			t.Errorf("attempt %+v", a)
		}
	}
}

// TestCumulative: the best program of task 1 starts task 2, and the chain
// is scored against its first record.
func TestCumulative(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "")
	m, _ := coder(&benchtest.Coder{Speedup: 0.9})
	b, err := New(ctx, fx.env, fx.suite, Config{Scaffold: "tree", Model: modelRecord(m), Nodes: 4, Cumulative: true}, "", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a1, a2 := sum.Attempts[0], sum.Attempts[1]
	nodes, _ := fx.st.BenchNodes(ctx, a1.ID)
	if a2.StartHash != bestProgram(nodes, a1.BestNodeID) || a2.StartHash == "" {
		t.Error("task 2 did not start from task 1's best program")
	}
	if a2.StartMs != 1000 || a2.GoalMs != 600 {
		t.Errorf("task 2 is scored from %v to %v, want the chain's 1000 to 600", a2.StartMs, a2.GoalMs)
	}
	if want := fsr.Of(1000, 600, a2.BestMs); a2.FSR != want || a2.BestMs >= a1.BestMs {
		t.Errorf("task 2: best %v (task 1's %v), FSR %v want %v", a2.BestMs, a1.BestMs, a2.FSR, want)
	}
	if _, err := New(ctx, fx.env, fx.suite, Config{Model: modelRecord(m), Cumulative: true, Tasks: []string{"r1-r2", "r0-r1"}}, "", m, nil); err == nil {
		t.Error("a cumulative run of tasks that do not chain was accepted")
	}
}

// TestBudgetAndResume: a run stops on its dollar budget with its attempt
// unfinished, and resumes with a larger one to the same end.
func TestBudgetAndResume(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "")
	m, _ := coder(&benchtest.Coder{Speedup: 0.9})
	cfg := Config{Scaffold: "tree", Model: modelRecord(m), Nodes: 5, Budget: Budget{MaxUSD: 0.025}}
	budget := llm.NewBudget(cfg.Budget.LLM(), llm.Spend{})
	m.Client = budget.Wrap(m.Client)
	b, err := New(ctx, fx.env, fx.suite, cfg, "budget", m, budget)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.StopReason != StopUSD || sum.Attempts[0].State != store.AttemptRunning {
		t.Fatalf("stopped %s (%s); attempt 1 %s", sum.StopReason, sum.StopDetail, sum.Attempts[0].State)
	}
	usd, _, _, err := Spent(ctx, fx.st, sum.Run.ID)
	if err != nil || usd < 0.025 {
		t.Errorf("spent $%v (%v), want the budget reached", usd, err)
	}
	run, err := fx.st.BenchRun(ctx, "budget")
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := coder(&benchtest.Coder{Speedup: 0.9})
	ov := Budget{MaxUSD: 1}
	budget2 := llm.NewBudget(ov.LLM(), llm.Spend{USD: usd})
	m2.Client = budget2.Wrap(m2.Client)
	b2, err := Resume(ctx, fx.env, fx.suite, run, ov, m2, budget2)
	if err != nil {
		t.Fatal(err)
	}
	sum, err = b2.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.StopReason != StopDone || sum.Run.Sessions != 2 {
		t.Fatalf("resumed run stopped %s after %d sessions", sum.StopReason, sum.Run.Sessions)
	}
	for _, a := range sum.Attempts {
		nodes, _ := fx.st.BenchNodes(ctx, a.ID)
		if a.State != store.AttemptDone || len(nodes) != 6 {
			t.Errorf("attempt %s: %s with %d nodes", a.Task, a.State, len(nodes))
		}
	}
}

// TestCalibrate: records re-timed here replace the published times.
func TestCalibrate(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "")
	rep, err := Calibrate(ctx, fx.env, fx.suite, CalibrateOptions{Repeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Class != benchtest.Class || len(rep.Records) != 3 || len(rep.Gaps) != 2 {
		t.Fatalf("report %+v", rep)
	}
	// benchtest times a run at TIME x (1 + seed/1000): rounds 0, 1, 2.
	if r := rep.Records[0]; r.TrainTimeMs.N != 3 || r.TrainTimeMs.Mean != 1001 || r.Failed != "" {
		t.Errorf("r0: %+v", r)
	}
	if g := rep.Gaps[0]; g.Test == nil || !g.Test.Significant || g.SpeedupPct < 19 {
		t.Errorf("gap r0-r1: %+v", g)
	}
	// The evaluator ran the records in alternation: r0 r1 r2, r2 r1 r0, ...
	var order []string
	for _, r := range fx.ev.Requests() {
		order = append(order, strings.Fields(string(r.Program))[2])
	}
	if got := strings.Join(order, " "); got != "r0 r1 r2 r2 r1 r0 r0 r1 r2" {
		t.Errorf("calibration order %s", got)
	}
	m := mutate()
	b, err := New(ctx, fx.env, fx.suite, Config{Model: modelRecord(m), Nodes: 1}, "", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := sum.Attempts[0]; a.TimeSource != TimesCalibrated || a.StartMs != 1001 || !near(a.GoalMs, 800.8) {
		t.Errorf("attempt scored with %s times %v -> %v, want calibrated 1001 -> 800.8", a.TimeSource, a.StartMs, a.GoalMs)
	}
}

// TestLearnableOrder: with a task always solved and one never solved in
// the history, an untried task goes first, then the others by p(1-p).
func TestLearnable(t *testing.T) {
	if l := Learnability(0, 0); l != 0.25 {
		t.Errorf("untried: %v, want 0.25", l)
	}
	if a, b := Learnability(5, 10), Learnability(10, 10); !(a > b) {
		t.Errorf("half solved %v should beat always solved %v", a, b)
	}
	pending := []*store.BenchAttempt{{Task: "solved", Position: 0}, {Task: "half", Position: 1}, {Task: "new", Position: 2}}
	hist := map[string]taskRecord{"solved": {10, 10}, "half": {4, 8}}
	if got := pickLearnable(pending, hist); got.Task != "new" {
		t.Errorf("picked %s, want the untried task", got.Task)
	}
	if got := pickLearnable(pending[:2], hist); got.Task != "half" {
		t.Errorf("picked %s, want the half-solved task", got.Task)
	}
}

// TestEvolveScaffold: the evolve scaffold runs frontier's engine from the
// start program, with the hints in its prompts.
func TestEvolveScaffold(t *testing.T) {
	fx := newFixture(t, "")
	m, client := coder(&benchtest.Coder{Speedup: 0.8})
	cfg := Config{Scaffold: Evolve, Model: modelRecord(m), Hints: "2", Nodes: 4, Tasks: []string{"r1-r2"},
		Evolve: &evolve.Config{Islands: 1, BranchingFactor: 2, Slots: 1, LLMConcurrency: 1}}
	sum := runNew(t, fx.env, fx.suite, cfg, "evo", m)
	a := sum.Attempts[0]
	if sum.StopReason != StopDone || a.State != store.AttemptDone || a.EvolveRun != "evo-a1" || a.Nodes < 4 || a.FSR < 1 {
		t.Fatalf("stopped %s; attempt %+v", sum.StopReason, a)
	}
	// The engine's reference was the start program, r1.
	first := fx.ev.Requests()[0]
	if !strings.Contains(string(first.Program), "# record r1") {
		t.Errorf("the engine started from\n%s", first.Program)
	}
	for _, r := range client.Requests() {
		text := r.Messages[0].Content
		if strings.Contains(text, "GROUND-TRUTH") {
			t.Fatal("a prompt shows the ground-truth diff")
		}
		if !strings.Contains(text, "DESCRIPTION-r2") && !strings.Contains(text, "fails when it runs") {
			t.Errorf("an evolve prompt without the hint:\n%s", text)
		}
	}
	if _, err := os.Stat(filepath.Join(fx.env.WorkDir, "evo", "a1", "track", "track.yaml")); err != nil {
		t.Error(err)
	}
}

// runNew records a new bench run and runs it to its end.
func runNew(t *testing.T, env Env, s *Suite, cfg Config, name string, m evolve.Model) *Summary {
	t.Helper()
	b, err := New(context.Background(), env, s, cfg, name, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := b.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
