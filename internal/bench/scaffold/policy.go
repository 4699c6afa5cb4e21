package scaffold

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Node kinds: how a node's program came from its parent.
const (
	KindStart   = "start"   // the start program (node 0, not executed)
	KindDraft   = "draft"   // a first change to the start program
	KindImprove = "improve" // a change to the best program so far
	KindDebug   = "debug"   // a fix of a program that failed
)

// Policy is the shape of a search, as the published benchmark configures
// its scaffolds (launchers' set_agent_search_parameters): Initial drafts
// from the start program in step 0, then steps of PerStep children of one
// parent. In a step, with probability DebugProb (when a buggy leaf at
// debug depth under MaxDebugDepth exists) the parent is such a leaf and
// the children debug it; otherwise the parent is the best node so far (the
// fastest acceptable one, the start program included) and the children
// improve it.
type Policy struct {
	Name          string  `json:"name"`
	Initial       int     `json:"initial"` // 0: the whole node budget (flat)
	PerStep       int     `json:"per_step"`
	DebugProb     float64 `json:"debug_prob,omitempty"`
	MaxDebugDepth int     `json:"max_debug_depth,omitempty"`
}

// Scaffold names.
const (
	Flat      = "flat"
	Tree      = "tree"
	Forest    = "forest"
	AIDE      = "aide"
	MultiAIDE = "multi-aide"
)

// Names lists the scaffolds this package runs, in the paper's order.
var Names = []string{Flat, Tree, Forest, AIDE, MultiAIDE}

// PolicyFor returns a scaffold's policy.
func PolicyFor(name string) (Policy, error) {
	switch name {
	case Flat: // best-of-N: every node a draft from the start program
		return Policy{Name: Flat}, nil
	case Tree: // greedy: one draft, then expand the best node three ways
		return Policy{Name: Tree, Initial: 1, PerStep: 3}, nil
	case Forest: // several trees: three drafts, then the same greedy steps
		return Policy{Name: Forest, Initial: 3, PerStep: 3}, nil
	case AIDE:
		return Policy{Name: AIDE, Initial: 3, PerStep: 1, DebugProb: 0.5, MaxDebugDepth: 5}, nil
	case MultiAIDE:
		return Policy{Name: MultiAIDE, Initial: 3, PerStep: 3, DebugProb: 0.5, MaxDebugDepth: 5}, nil
	}
	return Policy{}, fmt.Errorf("scaffold %q: use %s", name, strings.Join(Names, ", "))
}

// plan is the next node to make.
type plan struct {
	parent     *store.BenchNode
	kind       string
	step       int
	debugDepth int
}

// next returns the next node of a search whose nodes (node 0 the start
// program) are all settled, or false when the budget of nodes (not
// counting node 0) is spent. Its random choices are drawn from a generator
// seeded by seed and the step, so a resumed search makes the same ones.
func (p Policy) next(nodes []*store.BenchNode, budget int, seed uint64) (plan, bool) {
	if len(nodes) == 0 || len(nodes)-1 >= budget {
		return plan{}, false
	}
	root := nodes[0]
	initial := p.Initial
	if initial <= 0 || p.PerStep <= 0 {
		initial = budget
	}
	last := nodes[len(nodes)-1]
	inStep := 0
	for _, n := range nodes[1:] {
		if n.Step == last.Step {
			inStep++
		}
	}
	switch {
	case len(nodes) == 1 || (last.Step == 0 && inStep < initial):
		return plan{parent: root, kind: KindDraft}, true
	case last.Step > 0 && inStep < p.PerStep:
		// The step goes on from the parent its first node had.
		first := nodes[len(nodes)-inStep]
		return plan{parent: byID(nodes, first.ParentID), kind: first.Kind, step: last.Step, debugDepth: first.DebugDepth}, true
	}
	step := last.Step + 1
	rng := rand.New(rand.NewPCG(seed, uint64(step)))
	if p.DebugProb > 0 {
		draw := rng.Float64()
		if cands := p.debuggable(nodes); len(cands) > 0 && draw < p.DebugProb {
			n := cands[rng.IntN(len(cands))]
			return plan{parent: n, kind: KindDebug, step: step, debugDepth: n.DebugDepth + 1}, true
		}
	}
	return plan{parent: Best(nodes), kind: KindImprove, step: step}, true
}

// debuggable returns the nodes a debug step may pick: buggy programs
// (they ran and failed, or ran and missed the target loss, as the
// published benchmark counts a run whose metrics miss its threshold) that
// no node was made from yet, at a debug depth under the limit.
func (p Policy) debuggable(nodes []*store.BenchNode) []*store.BenchNode {
	parents := map[int64]bool{}
	for _, n := range nodes {
		parents[n.ParentID] = true
	}
	var out []*store.BenchNode
	for _, n := range nodes[1:] {
		if n.ProgramHash != "" && toDebug(n.Verdict) && !parents[n.ID] && n.DebugDepth < p.MaxDebugDepth {
			out = append(out, n)
		}
	}
	return out
}

// toDebug reports whether a node's program ran and needs a fix: it
// failed, or its loss missed the target.
func toDebug(v runs.Verdict) bool {
	switch v {
	case runs.Error, runs.Timeout, runs.Invalid, runs.NoResult, runs.LossTooHigh:
		return true
	}
	return false
}

// Best returns the fastest acceptable node, the start program (node 0)
// included; the earliest among ties.
func Best(nodes []*store.BenchNode) *store.BenchNode {
	var best *store.BenchNode
	for _, n := range nodes {
		if n.Verdict != runs.Acceptable || !(n.TrainTimeMs > 0) {
			continue
		}
		if best == nil || n.TrainTimeMs < best.TrainTimeMs {
			best = n
		}
	}
	if best == nil && len(nodes) > 0 {
		return nodes[0]
	}
	return best
}

func byID(nodes []*store.BenchNode, id int64) *store.BenchNode {
	i := slices.IndexFunc(nodes, func(n *store.BenchNode) bool { return n.ID == id })
	if i < 0 {
		return nodes[0]
	}
	return nodes[i]
}
