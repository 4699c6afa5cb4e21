package evolve

import (
	"fmt"
	"slices"

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
	ref := e.pop.reference()
	s := Status{
		RunID: e.run.ID, RunName: e.run.Name, Iteration: e.run.Iterations, MaxIterations: max(0, e.cfg.Budget.MaxIterations),
	}
	// Each part shows its own books.
	e.sched.report(&s)
	e.seen.report(&s, ref)
	e.spend.report(&s)
	e.sess.report(&s)
	if ref != nil && ref.Verdict.Valid() {
		s.ReferenceTimeMs, s.ReferenceLoss = ref.TrainTimeMs, ref.ValLoss
	}
	if base, rec := e.standing(); base != nil {
		s.BestTimeMs, s.BestTimeID, s.RecordSingleMs = rec.Ms, base.ID, rec.SingleMs
		s.RecordEvidence, s.RecordBrief = "single timing (the reference)", "reference"
		if rec.Claim != nil {
			s.RecordEvidence, s.RecordBrief = rec.Claim.Evidence(), rec.Claim.Brief()
			s.RecordSpeedup, s.RecordBasis = rec.VsReference(store.Claims(e.claims.list()), ref.ID)
		}
		if f := e.claims.fastestOpen(); f != nil && f.ID != base.ID && f.TrainTimeMs < rec.SingleMs {
			s.FastestID, s.FastestMs = f.ID, f.TrainTimeMs
			if cl := e.claims.of(f.ID); cl != nil {
				s.FastestClaim = string(cl.State)
			}
		}
	}
	if cl, since := e.claims.current(); cl != nil {
		s.Confirming = fmt.Sprintf("#%d vs #%d, %d pairs", cl.ChildID, cl.BaselineID, cl.Pairs)
		s.Running = append(s.Running, RunningEval{ChildID: cl.ChildID, Kind: "confirm", Since: since})
	}
	slices.SortFunc(s.Running, func(a, b RunningEval) int { return a.Since.Compare(b.Since) })
	e.statusMu.Lock()
	e.status = s
	e.statusMu.Unlock()
	if e.opts.OnStatus != nil {
		e.opts.OnStatus(s)
	}
}
