package evolve

import (
	"fmt"
	"strings"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// outcomes is what the run's children came to, as the status, the
// prompts and the fix loop read it: the tally of settled children
// (originals, not the reference), each parent's newest buggy child, and
// each child's newest attempt and newest attempt whose program failed its
// fast check (what the child's attempts did, whatever its fixes came to
// later). The record is tracked apart from the archive, which ranks by
// the run's objective and may drop the fastest program (one that trains
// fewer steps at the same step time scores no better).
type outcomes struct {
	tally       runs.Tally
	lastFail    map[int64]*store.Child // parent id -> its newest buggy child
	lastAttempt map[int64]*store.Attempt
	lastChecked map[int64]*store.Attempt
	// answers holds, by model call, the answer of a proposal whose edit
	// did not apply, until its fix starts: the fix prompt shows it back.
	// A fix that starts after a restart finds none and reads the store.
	answers map[int64]string
}

func newOutcomes() *outcomes {
	return &outcomes{lastFail: map[int64]*store.Child{}, lastAttempt: map[int64]*store.Attempt{}, lastChecked: map[int64]*store.Attempt{}, answers: map[int64]string{}}
}

// restore reads the attempts back, in the order they were made.
func (o *outcomes) restore(attempts []*store.Attempt) {
	for _, a := range attempts {
		o.lastAttempt[a.ChildID] = a
		if a.ProgramHash != "" && a.FastVerdict != "" && a.FastVerdict != runs.FastOK {
			o.lastChecked[a.ChildID] = a
		}
	}
}

// count adds a settled member to the tally, and forgets its newest
// attempt: only a child in flight reads it (its fast check, the fix of its
// answer), and a run of 100,000 children would keep one for each.
func (o *outcomes) count(c *store.Child) {
	delete(o.lastAttempt, c.ID)
	if c.Origin.IsCopy() || c.Origin == runs.OriginReference {
		return
	}
	o.tally.Add(c.Outcome())
	if runs.ClassOf(c.Verdict) == runs.Buggy && c.ParentID != 0 {
		if last := o.lastFail[c.ParentID]; last == nil || c.ID > last.ID {
			o.lastFail[c.ParentID] = c
		}
	}
}

// attempted records a child's newest attempt.
func (o *outcomes) attempted(a *store.Attempt) { o.lastAttempt[a.ChildID] = a }

// fastChecked records a fast check of the child's newest attempt a (nil
// when it has none recorded).
func (o *outcomes) fastChecked(a *store.Attempt, evaluationID int64, verdict runs.Verdict, reason string) {
	if a == nil {
		return
	}
	a.FastEvaluationID, a.FastVerdict, a.FastReason = evaluationID, verdict, reason
	if verdict != runs.FastOK {
		o.lastChecked[a.ChildID] = a
	}
}

// answered keeps the answer of model call id for the fix that follows it.
func (o *outcomes) answered(id int64, answer string) { o.answers[id] = answer }

// answer hands over the kept answer of model call id, once.
func (o *outcomes) answer(id int64) (string, bool) {
	a, ok := o.answers[id]
	delete(o.answers, id)
	return a, ok
}

// last is child id's newest attempt, or nil.
func (o *outcomes) last(id int64) *store.Attempt { return o.lastAttempt[id] }

// checked is child id's newest attempt whose program failed its fast
// check, or nil.
func (o *outcomes) checked(id int64) *store.Attempt { return o.lastChecked[id] }

// of is how many settled children are of class c.
func (o *outcomes) of(c runs.Class) int { return o.tally.Classes[c] }

// fastest is the settled child with the fastest single timing.
func (o *outcomes) fastest() runs.Outcome { return o.tally.Fastest }

// bestLoss is the lowest validation loss of a valid program, the
// reference's (ref) included; 0 when none.
func (o *outcomes) bestLoss(ref *store.Child) float64 {
	best := o.tally.Lowest.ValLoss
	if ref != nil && ref.State == runs.Done && ref.Verdict.Valid() && (best == 0 || ref.ValLoss < best) {
		best = ref.ValLoss
	}
	return best
}

// report shows the tally of settled children in the status; ref is the
// reference, whose loss counts for the best.
func (o *outcomes) report(st *Status, ref *store.Child) {
	st.Acceptable, st.LossTooHigh, st.Buggy = o.of(runs.ClassAcceptable), o.of(runs.TooHigh), o.of(runs.Buggy)
	st.Duplicates, st.NoProposal, st.BestLoss = o.of(runs.ClassDuplicate), o.of(runs.ClassNone), o.bestLoss(ref)
}

// lastFailure is what the prompt shows as a parent's last error: its own
// failure if it failed, else the newest failed child of it; clipped to n
// bytes.
func (o *outcomes) lastFailure(p *store.Child, n int) string {
	if p == nil {
		return ""
	}
	if !p.Verdict.Valid() && p.Reason != "" {
		return clip(p.Reason+"\n"+p.Error, n)
	}
	last := o.lastFail[p.ID]
	if last == nil {
		return ""
	}
	s := fmt.Sprintf("#%d (%s): %s", last.ID, last.Description, last.Reason)
	if last.Error != "" && !strings.Contains(last.Reason, last.Error) {
		s += "\n" + last.Error
	}
	return clip(s, n)
}
