package evolve

import (
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// verdictRank orders verdicts, lower is better: the evaluator's order
// (failures never outrank valid programs), then programs that never ran.
func verdictRank(v runs.Verdict) int {
	switch v {
	case runs.ApplyFailed, runs.Duplicate, runs.NoProposal, "":
		return 10
	}
	return v.Rank()
}

// key is a program's position in the ranking: verdict first, then the
// objective (lower is better), then age.
type key struct {
	rank  int
	value float64
	id    int64
}

func (a key) less(b key) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.value != b.value {
		return a.value < b.value
	}
	return a.id < b.id
}

// objectiveValue is the figure the objective ranks by; +Inf when unknown.
func objectiveValue(objective string, c *store.Child) float64 {
	return runs.ObjectiveValue(objective, c.Outcome())
}

func rankKey(objective string, c *store.Child) key {
	return key{rank: verdictRank(c.Verdict), value: objectiveValue(objective, c), id: c.ID}
}

// beats reports whether child improves on parent: a better verdict, or the
// same valid verdict and a better objective.
func beats(objective string, child, parent *store.Child) bool {
	ck, pk := rankKey(objective, child), rankKey(objective, parent)
	if ck.rank != pk.rank {
		return ck.rank < pk.rank
	}
	return child.Verdict.Valid() && ck.value < pk.value
}
