package evolve

import (
	"math"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/store"
)

// Verdicts of children that add to the evaluator's.
const (
	// VerdictDuplicate: the child's program is one the run knows already
	// (after normalizing whitespace); it is not evaluated again, and its
	// SourceID points at the original.
	VerdictDuplicate = "duplicate"
	// VerdictApplyFailed: the model's answers never applied to the
	// program, fixes included.
	VerdictApplyFailed = "apply_failed"
	// VerdictNoProposal: the proposer gave no program (the model call
	// failed, or a mutation found nothing to change).
	VerdictNoProposal = "no_proposal"
)

// Classes group verdicts as the paper's breakdown does.
const (
	ClassAcceptable  = "acceptable"
	ClassLossTooHigh = "loss_too_high"
	ClassBuggy       = "buggy"     // error, timeout, invalid, no_result, apply_failed
	ClassDuplicate   = "duplicate" // not evaluated: a known program
	ClassNone        = "none"      // no program: the proposal itself failed
)

// Class returns the class of a child's verdict.
func Class(verdict string) string {
	switch verdict {
	case string(eval.Acceptable):
		return ClassAcceptable
	case string(eval.LossTooHigh):
		return ClassLossTooHigh
	case VerdictDuplicate:
		return ClassDuplicate
	case VerdictNoProposal, "":
		return ClassNone
	}
	return ClassBuggy
}

// verdictRank orders verdicts, lower is better: the evaluator's order,
// then programs that never ran.
func verdictRank(v string) int {
	switch v {
	case VerdictApplyFailed, VerdictDuplicate, VerdictNoProposal, "":
		return 10
	}
	return eval.Verdict(v).Rank()
}

// valid reports whether a verdict says the program ran to its end and was
// measured (acceptable or loss too high).
func valid(v string) bool {
	return v == string(eval.Acceptable) || v == string(eval.LossTooHigh)
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
	var v float64
	switch objective {
	case ObjectiveTime:
		v = c.TrainTimeMs
	case ObjectiveLoss:
		v = c.ValLoss
	default:
		v = c.Score
	}
	if v <= 0 || math.IsNaN(v) {
		return math.Inf(1)
	}
	return v
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
	return valid(child.Verdict) && ck.value < pk.value
}
