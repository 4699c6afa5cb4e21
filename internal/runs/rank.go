package runs

// Rank orders verdicts, lower is better: the evaluator's order (a failed
// run never outranks a valid one), then the members that never ran (no
// program, a duplicate, an edit that never applied, no verdict yet).
func (v Verdict) Rank() int {
	switch v {
	case Acceptable:
		return 0
	case LossTooHigh:
		return 1
	case FastOK, NoResult:
		return 2
	case Timeout:
		return 3
	case Error:
		return 4
	case Invalid:
		return 5
	case ApplyFailed, Duplicate, NoProposal, "":
		return 10
	}
	return 6
}

// Ranks reports whether a ranks before b in a run's ranking under
// objective: the better verdict first, then the lower objective value,
// then the older member (the lower id). Every reader that lists a run's
// best programs ranks with it.
func Ranks(objective string, a, b Outcome) bool {
	if ra, rb := a.Verdict.Rank(), b.Verdict.Rank(); ra != rb {
		return ra < rb
	}
	if va, vb := ObjectiveValue(objective, a), ObjectiveValue(objective, b); va != vb {
		return va < vb
	}
	return a.ID < b.ID
}

// Improves reports whether child improves on parent: a better verdict, or
// the same valid verdict and a better objective value.
func Improves(objective string, child, parent Outcome) bool {
	if rc, rp := child.Verdict.Rank(), parent.Verdict.Rank(); rc != rp {
		return rc < rp
	}
	return child.Verdict.Valid() && ObjectiveValue(objective, child) < ObjectiveValue(objective, parent)
}
