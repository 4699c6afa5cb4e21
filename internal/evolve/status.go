package evolve

import (
	"fmt"
	"math"
	"slices"
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
		Queued: len(e.proposalQ) + len(e.fastQ) + len(e.fullQ), Evaluations: e.fullStarted, SeriesRuns: e.seriesRuns,
		Acceptable: e.children.Classes[runs.ClassAcceptable], LossTooHigh: e.children.Classes[runs.TooHigh],
		Buggy: e.children.Classes[runs.Buggy], Duplicates: e.children.Classes[runs.ClassDuplicate],
		NoProposal: e.children.Classes[runs.ClassNone], BestLoss: e.bestLoss(),
		USD: e.spentUSD, Tokens: e.spentTokens, Elapsed: e.elapsed(), Draining: e.stopping, StopReason: e.stopReason,
	}
	if e.reference != nil && e.reference.Verdict.Valid() {
		s.ReferenceTimeMs, s.ReferenceLoss = e.reference.TrainTimeMs, e.reference.ValLoss
	}
	if base, rec := e.standing(); base != nil {
		s.BestTimeMs, s.BestTimeID, s.RecordSingleMs = rec.Ms, base.ID, rec.SingleMs
		s.RecordEvidence, s.RecordBrief = "single timing (the reference)", "reference"
		if rec.Claim != nil {
			s.RecordEvidence, s.RecordBrief = rec.Claim.Evidence(), rec.Claim.Brief()
			s.RecordSpeedup, s.RecordBasis = rec.VsReference(claimsOf(e.claims), e.reference.ID)
		}
		if f := e.fastestOpen(); f != nil && f.ID != base.ID && f.TrainTimeMs < rec.SingleMs {
			s.FastestID, s.FastestMs = f.ID, f.TrainTimeMs
			for _, cl := range e.claims {
				if cl.ChildID == f.ID {
					s.FastestClaim = string(cl.State)
				}
			}
		}
	}
	if cl := e.confirming; cl != nil {
		s.Confirming = fmt.Sprintf("#%d vs #%d, %d pairs", cl.ChildID, cl.BaselineID, cl.Pairs)
		s.Running = append(s.Running, RunningEval{ChildID: cl.ChildID, Kind: "confirm", Since: e.confirmStarted})
	}
	for _, r := range e.running {
		s.Running = append(s.Running, r)
	}
	slices.SortFunc(s.Running, func(a, b RunningEval) int { return a.Since.Compare(b.Since) })
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
