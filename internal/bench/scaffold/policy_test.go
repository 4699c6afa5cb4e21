package scaffold

import (
	"fmt"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// grow runs a policy to the end of its budget, settling each node with
// verdict(seq) and train time ms(seq), and returns the nodes.
func grow(t *testing.T, p Policy, budget int, seed uint64, verdict func(seq int) (runs.Verdict, float64)) []*store.BenchNode {
	t.Helper()
	nodes := []*store.BenchNode{{ID: 1, Seq: 0, Kind: KindStart, Verdict: runs.Acceptable, TrainTimeMs: 100, ProgramHash: "h0"}}
	for {
		pl, ok := p.next(nodes, budget, seed)
		if !ok {
			return nodes
		}
		seq := len(nodes)
		v, ms := verdict(seq)
		nodes = append(nodes, &store.BenchNode{ID: int64(seq + 1), Seq: seq, Step: pl.step, ParentID: pl.parent.ID, Kind: pl.kind,
			DebugDepth: pl.debugDepth, Verdict: v, TrainTimeMs: ms, ProgramHash: fmt.Sprint("h", seq)})
		if len(nodes) > 100 {
			t.Fatal("the policy does not stop")
		}
	}
}

// shape writes each node as seq:kind<parent seq.
func shape(nodes []*store.BenchNode) string {
	var b strings.Builder
	for _, n := range nodes[1:] {
		fmt.Fprintf(&b, "%d:%s<%d/%d ", n.Seq, n.Kind[:1], n.ParentID-1, n.Step)
	}
	return strings.TrimSpace(b.String())
}

func pol(t *testing.T, name string) Policy {
	p, err := PolicyFor(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicies(t *testing.T) {
	// Node 3 is the fastest; everything else is slower than the start.
	faster3 := func(seq int) (runs.Verdict, float64) {
		if seq == 3 {
			return runs.Acceptable, 50
		}
		return runs.Acceptable, 150
	}
	cases := []struct {
		name   string
		budget int
		want   string
	}{
		// best-of-N: every node a draft of the start program.
		{Flat, 4, "1:d<0/0 2:d<0/0 3:d<0/0 4:d<0/0"},
		// one draft, then steps of three children of the best node so far
		// (the start until node 3 beats it).
		{Tree, 8, "1:d<0/0 2:i<0/1 3:i<0/1 4:i<0/1 5:i<3/2 6:i<3/2 7:i<3/2 8:i<3/3"},
		{Forest, 7, "1:d<0/0 2:d<0/0 3:d<0/0 4:i<3/1 5:i<3/1 6:i<3/1 7:i<3/2"},
		{AIDE, 5, "1:d<0/0 2:d<0/0 3:d<0/0 4:i<3/1 5:i<3/2"}, // no buggy node: always improve
	}
	for _, c := range cases {
		if got := shape(grow(t, pol(t, c.name), c.budget, 1, faster3)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if _, err := PolicyFor("greedy"); err == nil {
		t.Error("an unknown scaffold was accepted")
	}
}

// TestAIDEDebugs: with every program failing, AIDE debugs buggy leaves
// about half of the steps, never deeper than 5, never a node twice.
func TestAIDEDebugs(t *testing.T) {
	failing := func(int) (runs.Verdict, float64) { return runs.Error, 0 }
	nodes := grow(t, pol(t, AIDE), 60, 7, failing)
	debugs, debugged := 0, map[int64]int{}
	for _, n := range nodes[1:] {
		if n.Kind != KindDebug {
			if n.DebugDepth != 0 {
				t.Errorf("node %d (%s) has debug depth %d", n.Seq, n.Kind, n.DebugDepth)
			}
			continue
		}
		debugs++
		debugged[n.ParentID]++
		parent := nodes[n.ParentID-1]
		if parent.Verdict != runs.Error || n.DebugDepth != parent.DebugDepth+1 || n.DebugDepth > 5 {
			t.Errorf("node %d debugs node %d (%s, depth %d) at depth %d", n.Seq, parent.Seq, parent.Verdict, parent.DebugDepth, n.DebugDepth)
		}
	}
	for id, k := range debugged {
		if k > 1 {
			t.Errorf("node %d was debugged %d times", id-1, k)
		}
	}
	if debugs < 15 || debugs > 45 {
		t.Errorf("%d debug steps of 57: want about half", debugs)
	}
	// The same seed makes the same choices (a resumed search), another
	// seed others.
	if a, b := shape(nodes), shape(grow(t, pol(t, AIDE), 60, 7, failing)); a != b {
		t.Error("the same seed gave two searches")
	}
	if a, b := shape(nodes), shape(grow(t, pol(t, AIDE), 60, 8, failing)); a == b {
		t.Error("two seeds gave the same search")
	}
}

// TestMultiAIDE: a step's three children share their parent and kind.
func TestMultiAIDE(t *testing.T) {
	nodes := grow(t, pol(t, MultiAIDE), 30, 3, func(seq int) (runs.Verdict, float64) {
		if seq%2 == 0 {
			return runs.Timeout, 0
		}
		return runs.Acceptable, float64(200 - seq)
	})
	bySteps := map[int][]*store.BenchNode{}
	for _, n := range nodes[1:] {
		bySteps[n.Step] = append(bySteps[n.Step], n)
	}
	for step, ns := range bySteps {
		if step == 0 {
			if len(ns) != 3 {
				t.Errorf("%d drafts, want 3", len(ns))
			}
			continue
		}
		for _, n := range ns[1:] {
			if n.ParentID != ns[0].ParentID || n.Kind != ns[0].Kind {
				t.Errorf("step %d mixes parents or kinds: %s", step, shape(nodes))
			}
		}
	}
}

func TestBest(t *testing.T) {
	nodes := []*store.BenchNode{
		{Seq: 0, Verdict: "acceptable", TrainTimeMs: 100},
		{Seq: 1, Verdict: "loss_too_high", TrainTimeMs: 10},
		{Seq: 2, Verdict: "acceptable", TrainTimeMs: 90},
		{Seq: 3, Verdict: "acceptable", TrainTimeMs: 90}, // a tie: the earlier wins
		{Seq: 4, Verdict: "error"},
	}
	if b := Best(nodes); b.Seq != 2 {
		t.Errorf("Best = node %d, want 2", b.Seq)
	}
	if b := Best(nodes[:2]); b.Seq != 0 {
		t.Errorf("Best without a faster acceptable node = %d, want the start", b.Seq)
	}
}

// TestAIDEDebugsLossMisses: a program that runs but misses the target loss
// is debugged like one that fails, as the published benchmark's AIDE does
// (a run whose val_loss misses the threshold is a buggy node there).
func TestAIDEDebugsLossMisses(t *testing.T) {
	missing := func(int) (runs.Verdict, float64) { return runs.LossTooHigh, 80 }
	nodes := grow(t, pol(t, AIDE), 40, 7, missing)
	debugs := 0
	for _, n := range nodes[1:] {
		if n.Kind == KindDebug {
			debugs++
			if p := nodes[n.ParentID-1]; p.Verdict != runs.LossTooHigh {
				t.Errorf("node %d debugs node %d (%s)", n.Seq, p.Seq, p.Verdict)
			}
		}
	}
	if debugs < 8 {
		t.Errorf("%d debug steps of 37 with every program missing the target: want about half (%s)", debugs, shape(nodes))
	}
}
