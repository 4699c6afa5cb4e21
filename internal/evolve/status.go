package evolve

import (
	"fmt"
	"math"
	"strings"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// What the run shows of itself: the status snapshot, the counters it is
// made of, the record and the log lines.

func (e *Engine) logChild(c *store.Child) {
	args := []any{"child", c.ID, "iteration", c.Iteration, "island", c.Island, "model", c.Model, "stage", c.Stage,
		"verdict", c.Verdict}
	if c.FixAttempts > 0 {
		args = append(args, "fixes", c.FixAttempts)
	}
	if c.Verdict.Valid() {
		args = append(args, "val_loss", round4(c.ValLoss), "train_time", fmtMs(c.TrainTimeMs))
	} else if c.Reason != "" {
		args = append(args, "reason", clip(c.Reason, 200))
	}
	e.log.Info("evolve: child done", args...)
}

// publish updates the status snapshot and calls OnStatus.
func (e *Engine) publish() {
	s := Status{
		RunID: e.run.ID, RunName: e.run.Name, Iteration: e.run.Iterations, MaxIterations: max(0, e.cfg.Budget.MaxIterations),
		IterationsDone: e.completed, SlotsBusy: e.evaluating, Slots: e.slots, ProposalsInFlight: e.proposing,
		Queued: len(e.proposalQ) + len(e.fastQ) + len(e.fullQ), Evaluations: e.fullStarted,
		Acceptable: e.children.Classes[runs.ClassAcceptable], LossTooHigh: e.children.Classes[runs.TooHigh],
		Buggy: e.children.Classes[runs.Buggy], Duplicates: e.children.Classes[runs.ClassDuplicate],
		NoProposal: e.children.Classes[runs.ClassNone], BestLoss: e.bestLoss(),
		USD: e.spentUSD, Tokens: e.spentTokens, Elapsed: e.elapsed(), Draining: e.stopping, StopReason: e.stopReason,
	}
	if e.reference != nil && e.reference.Verdict.Valid() {
		s.ReferenceTimeMs, s.ReferenceLoss = e.reference.TrainTimeMs, e.reference.ValLoss
	}
	if b := e.record(); b.ID != 0 {
		s.BestTimeMs, s.BestTimeID = b.TrainTimeMs, b.ID
	}
	e.statusMu.Lock()
	e.status = s
	e.statusMu.Unlock()
	if e.opts.OnStatus != nil {
		e.opts.OnStatus(s)
	}
}

// admit takes a member with its final verdict into the in-memory state:
// its island and the archive, and the counters. The loop admits each child
// as it settles; a resumed run admits every settled member it reads back,
// through this same function, so the two cannot disagree. It reports
// whether the archive changed.
func (e *Engine) admit(c *store.Child) bool {
	changed := e.pop.settle(c)
	e.count(c)
	return changed
}

// count adds a settled member to the counters that the status shows and
// the prompts use.
func (e *Engine) count(c *store.Child) {
	if c.Origin.IsCopy() || c.Origin == runs.OriginReference {
		return
	}
	e.children.Add(c.Outcome())
	if runs.ClassOf(c.Verdict) == runs.Buggy && c.ParentID != 0 {
		if last := e.lastFail[c.ParentID]; last == nil || c.ID > last.ID {
			e.lastFail[c.ParentID] = c
		}
	}
}

// record is the run's record (see recordOf).
func (e *Engine) record() runs.Outcome { return recordOf(e.reference, e.children) }

// recordOf is a run's record: the fastest acceptable program among the
// reference and the settled children tallied in children; the reference,
// which settles first, keeps a tie. ID 0 when there is none.
func recordOf(reference *store.Child, children runs.Tally) runs.Outcome {
	var rec runs.Outcome
	if reference != nil && reference.State == runs.Done && reference.Outcome().Timed() {
		rec = reference.Outcome()
	}
	if children.Fastest.Faster(rec) {
		rec = children.Fastest
	}
	return rec
}

// bestLoss is the lowest validation loss of a valid program, the
// reference's included; 0 when none.
func (e *Engine) bestLoss() float64 {
	best := e.children.Lowest.ValLoss
	if ref := e.reference; ref != nil && ref.State == runs.Done && ref.Verdict.Valid() && (best == 0 || ref.ValLoss < best) {
		best = ref.ValLoss
	}
	return best
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// fmtMs writes milliseconds as seconds or milliseconds.
func fmtMs(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
