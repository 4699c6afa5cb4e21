package scaffold

import (
	"context"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/bench/benchtest"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
)

const specYAML = `name: fake
reference: train.py
data: {train: "t_*.bin", val: v.bin, vocab_size: 256, bos_id: 255, val_tokens: 1024, val_seq_len: 128}
target_val_loss: 3.1
limits: {full_run: 1m}
hardware: {device: cpu, threads: 2}
`

func fakeTrack(t testing.TB) *track.Spec {
	t.Helper()
	s, err := track.Parse("track.yaml", []byte(specYAML))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newAttempt records a bench run with one attempt and returns the attempt's id.
func newAttempt(t testing.TB, st store.Store) int64 {
	t.Helper()
	ctx := context.Background()
	r := &store.BenchRun{Suite: "s", SuiteHash: "h", Scaffold: "aide", Model: "m", Hints: "1"}
	if err := st.CreateBenchRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	as := []*store.BenchAttempt{{RunID: r.ID, Task: "t"}}
	if err := st.InsertBenchAttempts(ctx, as); err != nil {
		t.Fatal(err)
	}
	return as[0].ID
}

func coderClient(c *benchtest.Coder) *llmtest.Fake {
	f := llmtest.New()
	f.Respond = func(req llm.Request) llmtest.Reply {
		return llmtest.Reply{Text: c.Answer(req.Messages[len(req.Messages)-1].Content), Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}, CostUSD: 0.01}
	}
	return f
}

// TestSearchAIDE runs an AIDE search with a model that sometimes breaks
// the program and sometimes answers with an edit that does not apply: the
// hints reach every prompt and the ground truth none, buggy nodes get
// debugged, answers that miss are asked again, and every call is
// recorded with its node.
func TestSearchAIDE(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	ev := benchtest.NewEvaluator(st)
	coder := &benchtest.Coder{BreakEvery: 3, MissEvery: 5}
	client := coderClient(coder)
	s := &Search{Store: st, Evaluator: ev, Model: Model{Name: "fake-coder", Client: client}, Policy: pol(t, AIDE),
		Budget: 12, Track: fakeTrack(t), ProgramName: "train.py", Seed: 5, EvalSeed: 1, ApplyFixes: 1,
		Hints: []Hint{{Level: 1, Name: "pseudocode", Text: "HINT-ONE: lower TIME"}, {Level: 3, Name: "paper", Text: "HINT-THREE"}}}
	attempt := newAttempt(t, st)
	out, err := s.Run(ctx, attempt, benchtest.Program("start", 1000, 3.0), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if out.Stopped != "" || len(out.Nodes) != 13 {
		t.Fatalf("stopped %q with %d nodes, want 13", out.Stopped, len(out.Nodes))
	}
	if out.Best == nil || out.Best.Seq == 0 || !(out.Best.TrainTimeMs < 1000) {
		t.Errorf("best %+v: want a node faster than the start", out.Best)
	}
	kinds := map[string]int{}
	verdicts := map[runs.Verdict]int{}
	for _, n := range out.Nodes[1:] {
		kinds[n.Kind]++
		verdicts[n.Verdict]++
		if n.State != store.NodeDone {
			t.Errorf("node %d is %s", n.Seq, n.State)
		}
		if n.Kind == KindDebug {
			if p := byID(out.Nodes, n.ParentID); p.Verdict != runs.Error {
				t.Errorf("node %d debugs node %d, which is %s", n.Seq, p.Seq, p.Verdict)
			}
		}
	}
	if kinds[KindDraft] != 3 || kinds[KindDebug] == 0 || verdicts[runs.Error] == 0 {
		t.Errorf("kinds %v, verdicts %v: want 3 drafts, some buggy nodes and some debugging", kinds, verdicts)
	}
	reqs := client.Requests()
	fixes := 0
	for _, r := range reqs {
		text := r.System + r.Messages[0].Content
		if strings.Contains(text, "could not be applied") {
			fixes++
			continue
		}
		if !strings.Contains(text, "HINT-ONE: lower TIME") || !strings.Contains(text, "HINT-THREE") {
			t.Errorf("a prompt without the hints:\n%s", text)
		}
	}
	if fixes == 0 {
		t.Error("no answer that missed was asked again")
	}
	calls, err := st.BenchCalls(ctx, attempt, true)
	if err != nil || len(calls) != len(reqs) {
		t.Fatalf("%d calls recorded for %d requests (%v)", len(calls), len(reqs), err)
	}
	var cost float64
	for _, n := range out.Nodes {
		cost += n.CostUSD
	}
	if want := 0.01 * float64(len(reqs)); cost < want-1e-9 || cost > want+1e-9 {
		t.Errorf("the nodes' cost %v, want %v", cost, want)
	}
	for _, c := range calls {
		if c.State != store.CallDone || c.BenchNodeID == 0 || !strings.Contains(c.Request, "fake-coder") {
			t.Errorf("call %+v", c)
		}
	}
}

// TestSearchFlatMutate: best-of-N with the mutate baseline, which needs no
// prompt; a program proposed twice is a duplicate and is not evaluated
// again.
func TestSearchFlatMutate(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	ev := benchtest.NewEvaluator(st)
	start := []byte("import frontier_harness as fh\nlr = 0.001\nTIME = 500\n")
	s := &Search{Store: st, Evaluator: ev, Model: Model{Name: "mutate", Proposer: propose.NewMutate()}, Policy: pol(t, Flat),
		Budget: 6, Track: fakeTrack(t), ProgramName: "train.py", Seed: 1}
	out, err := s.Run(ctx, newAttempt(t, st), start, 500)
	if err != nil {
		t.Fatal(err)
	}
	evaluated := 0
	for _, n := range out.Nodes[1:] {
		if n.Kind != KindDraft || n.ParentID != out.Nodes[0].ID {
			t.Errorf("node %d: %s of %d, want a draft of the start", n.Seq, n.Kind, n.ParentID)
		}
		switch n.Verdict {
		case runs.Duplicate:
			if n.DuplicateOf == 0 || n.EvaluationID != 0 {
				t.Errorf("duplicate node %+v", n)
			}
		case runs.Acceptable:
			evaluated++
		default:
			t.Errorf("node %d: %s (%s)", n.Seq, n.Verdict, n.Error)
		}
	}
	if evaluated != len(ev.Requests()) || evaluated == 0 {
		t.Errorf("%d nodes evaluated, %d evaluations", evaluated, len(ev.Requests()))
	}
}

// TestSearchDebugsLossMiss: a node that runs but misses the target is
// debugged with a prompt that says so, with its loss and the target.
func TestSearchDebugsLossMiss(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	coder := &benchtest.Coder{}
	client := coderClient(coder)
	s := &Search{Store: st, Evaluator: benchtest.NewEvaluator(st), Model: Model{Name: "fake-coder", Client: client},
		Policy: pol(t, AIDE), Budget: 10, Track: fakeTrack(t), ProgramName: "train.py", Seed: 5}
	// The start program misses the target (3.2 > 3.1), and so does every
	// change the fake model makes to it.
	out, err := s.Run(ctx, newAttempt(t, st), benchtest.Program("start", 1000, 3.2), 1000)
	if err != nil {
		t.Fatal(err)
	}
	debugs := 0
	for _, n := range out.Nodes[1:] {
		if n.Kind == KindDebug {
			debugs++
		}
	}
	if debugs == 0 {
		t.Fatal("no node that missed the target was debugged")
	}
	seen := false
	for _, r := range client.Requests() {
		text := r.Messages[0].Content
		if strings.Contains(text, "This program runs, but its validation loss is 3.2000, above the target 3.1") {
			seen = true
			if strings.Contains(text, "This program fails") {
				t.Errorf("a loss miss is described as a failure:\n%s", text)
			}
		}
	}
	if !seen {
		t.Error("no debug prompt said the loss missed the target")
	}
}

// The prompts of a log-contract track (an imported speedrun script)
// describe that contract and the hardware the records ran on, not the
// harness API of frontier's own tracks, which such a script does not use.
func TestLogContractPrompts(t *testing.T) {
	spec, err := track.Parse("track.yaml", []byte(`name: speedrun-record-1
reference: train_gpt.py
contract: log
launcher: {kind: torchrun, nproc_per_node: 8}
data: {train: "fineweb_train_*.bin", val: fineweb_val_000000.bin, vocab_size: 50257, bos_id: 50256, val_tokens: 10485760, val_seq_len: 1024}
target_val_loss: 3.28
limits: {full_run: 1h}
hardware: {device: cuda, gpus: 8}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	client := coderClient(&benchtest.Coder{})
	s := &Search{Store: st, Evaluator: benchtest.NewEvaluator(st), Model: Model{Name: "fake-coder", Client: client},
		Policy: pol(t, Flat), Budget: 2, Track: spec, Hardware: "one node of 8 x H100 GPUs", ProgramName: "train_gpt.py", Seed: 5}
	if _, err := s.Run(ctx, newAttempt(t, st), benchtest.Program("start", 1000, 3.2), 1000); err != nil {
		t.Fatal(err)
	}
	reqs := client.Requests()
	if len(reqs) == 0 {
		t.Fatal("no prompt")
	}
	text, _, _ := strings.Cut(reqs[0].Messages[0].Content, "## The program") // the fake program imports the harness
	for _, want := range []string{"log contract", "`torchrun --nproc_per_node=8 train_gpt.py` on one node of 8 x H100 GPUs",
		"`val_tokens` are set by the environment", "keep those prints as they are", "at or under 3.28"} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, text)
		}
	}
	for _, not := range []string{"frontier_harness", "fh.config", "fh.train_begin", "fh.steps"} {
		if strings.Contains(text, not) {
			t.Errorf("the prompt of a log-contract track names the harness API (%s):\n%s", not, text)
		}
	}
}
