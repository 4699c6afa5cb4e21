package scaffold

import (
	"context"
	"errors"
	"testing"

	"github.com/frontier-bench/frontier/internal/bench/benchtest"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// failingStore fails the first update that settles a node after an
// evaluation: the evaluation is recorded, the node is not (a process
// killed between the two).
type failingStore struct {
	store.Store
	failed bool
}

var errCut = errors.New("cut off")

func (f *failingStore) UpdateBenchNode(ctx context.Context, n *store.BenchNode) error {
	if !f.failed && n.State == store.NodeDone && n.EvaluationID != 0 {
		f.failed = true
		return errCut
	}
	return f.Store.UpdateBenchNode(ctx, n)
}

// TestResume: a search cut off in an evaluation, or after an evaluation
// finished but before its node was recorded, resumes to the same end: the
// cut evaluation is run again and marked interrupted, the finished one is
// adopted, and no program is evaluated to the end twice.
func TestResume(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	attempt := newAttempt(t, st)
	start := benchtest.Program("start", 1000, 3.0)
	newSearch := func(s Store, ev Evaluator) *Search {
		return &Search{Store: s, Evaluator: ev, Model: Model{Name: "c", Client: coderClient(&benchtest.Coder{BreakEvery: 4})},
			Policy: pol(t, Tree), Budget: 7, Track: fakeTrack(t), ProgramName: "train.py", Seed: 3}
	}

	// Cut 1: the context ends while evaluation 3 runs.
	cctx, cancel := context.WithCancel(ctx)
	ev := benchtest.NewEvaluator(st)
	ev.Before = func(n int64) {
		if n == 3 {
			cancel()
		}
	}
	if _, err := newSearch(st, ev).Run(cctx, attempt, start, 1000); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut 1: %v, want the context's error", err)
	}
	// Cut 2: the next evaluation finishes but its node is not recorded.
	fs := &failingStore{Store: st}
	ev2 := benchtest.NewEvaluator(st)
	if _, err := newSearch(fs, ev2).Run(ctx, attempt, start, 1000); !errors.Is(err, errCut) {
		t.Fatalf("cut 2: %v, want the store's failure", err)
	}
	nodes, _ := st.BenchNodes(ctx, attempt)
	last := nodes[len(nodes)-1]
	if last.State != store.NodeEvaluating {
		t.Fatalf("after cut 2 the last node is %s, want evaluating", last.State)
	}
	// The resume adopts that evaluation and finishes the search.
	ev3 := benchtest.NewEvaluator(st)
	out, err := newSearch(st, ev3).Run(ctx, attempt, start, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Nodes) != 8 {
		t.Fatalf("%d nodes, want 8", len(out.Nodes))
	}
	for _, r := range ev3.Requests() {
		if store.Hash(r.Program) == last.ProgramHash {
			t.Error("the evaluation that finished before the restart was run again")
		}
	}
	finished := map[string]int{}
	evs, _ := st.Evaluations(ctx, store.Filter{Limit: 1000})
	interrupted := 0
	for _, e := range evs {
		switch e.State {
		case store.StateDone:
			finished[e.ProgramHash]++
		case store.StateInterrupted:
			interrupted++
		default:
			t.Errorf("evaluation %d left %s", e.ID, e.State)
		}
	}
	if interrupted != 1 {
		t.Errorf("%d interrupted evaluations, want 1 (cut 1's)", interrupted)
	}
	for h, k := range finished {
		if k > 1 {
			t.Errorf("program %.8s was evaluated to the end %d times", h, k)
		}
	}
	for _, n := range out.Nodes {
		if n.State != store.NodeDone {
			t.Errorf("node %d is %s", n.Seq, n.State)
		}
		if n.EvaluationID != 0 {
			e, err := st.Evaluation(ctx, n.EvaluationID)
			if err != nil || e.ProgramHash != n.ProgramHash || e.Verdict != string(n.Verdict) {
				t.Errorf("node %d's verdict %s is not its evaluation's (%v)", n.Seq, n.Verdict, err)
			}
		}
	}
}
