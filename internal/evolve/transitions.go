package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// The state machine: what a child's proposal or evaluation result does
// to it and to the run (queued -> fast -> [fix ->] ready -> evaluating ->
// done), each transition recorded by the journal before the coordinator
// acts on it.

// onProposal takes a proposal worker's result.
func (e *Engine) onProposal(ctx context.Context, r *proposalResult) {
	c := e.pop.inFlight(r.work.child.ID)
	if c == nil {
		e.sess.fail(fmt.Errorf("proposal for a child not in flight, %d", r.work.child.ID))
		return
	}
	c.Model, c.Stage, c.Template = r.work.child.Model, r.work.child.Stage, r.work.child.Template
	for _, call := range r.calls {
		c.InputTokens += call.InputTokens
		c.OutputTokens += call.OutputTokens
		c.CostUSD += call.CostUSD
	}
	e.spend.add(r.calls, r.work.model.Kind == propose.KindReplay)
	if r.storeErr != nil {
		if ctx.Err() != nil {
			return // aborting: the child is proposed again on resume
		}
		e.sess.fail(r.storeErr)
		return
	}
	if r.idea != "" {
		c.Idea = r.idea
	}
	if r.ideaFallback != "" {
		e.log.Info("evolve: no idea from the model; the child falls back to a templated prompt", "child", c.ID,
			"template", c.Template, "reason", r.ideaFallback)
		if err := e.j.ideaFellBack(ctx, c, r.ideaFallback); err != nil {
			e.sess.fail(err)
			return
		}
	}
	var callID int64
	if n := len(r.calls); n > 0 {
		callID = r.calls[n-1].ID
	}
	fixing := r.work.kind == kindFixApply || r.work.kind == kindFixRun
	attempt := &store.Attempt{ChildID: c.ID, Attempt: c.FixAttempts, Kind: r.work.kind, LLMCallID: callID}
	if fixing {
		c.FixAttempts++
		attempt.Attempt = c.FixAttempts
	}
	m := e.draw.model(c.Model)

	if r.err != nil {
		var be *llm.BudgetError
		pe := propose.AsError(r.err)
		switch {
		case errors.As(r.err, &be):
			// Not the child's fault: it waits for a larger budget.
			if fixing {
				c.FixAttempts--
			}
			e.sched.retry(c, r.work.kind)
			e.persistChild(ctx, c, nil)
			e.sess.stop(budgetStop(be), be.Error())
			return
		case ctx.Err() != nil:
			// Aborting: the child keeps its state and is proposed again on resume.
			if fixing {
				c.FixAttempts--
			}
			e.persistChild(ctx, c, nil)
			return
		case pe != nil && pe.Feedback() != "" && m != nil && m.fixes() && c.FixAttempts < *e.cfg.FastFixes:
			e.spend.answered()
			attempt.Error = pe.Feedback()
			c.State, c.Error = runs.Fix, clip(pe.Feedback(), e.cfg.Prompt.MaxErrorChars)
			e.persistChild(ctx, c, attempt)
			if n := len(r.calls); n > 0 {
				e.seen.answered(callID, r.calls[n-1].Answer)
			}
			e.sched.fix(c, kindFixApply)
			return
		case pe != nil && pe.Feedback() != "":
			e.spend.answered()
			attempt.Error = pe.Feedback()
			e.persistAttemptOnly(ctx, c, attempt)
			e.endFailed(ctx, c, firstLine(pe.Feedback()), pe.Feedback())
			return
		default:
			attempt.Error = r.err.Error()
			streak := e.spend.failed(pe == nil || pe.Kind == propose.FailCall || pe.Kind == propose.FailExhausted)
			e.persistAttemptOnly(ctx, c, attempt)
			e.endFailed(ctx, c, r.err.Error(), "")
			if streak >= e.cfg.MaxConsecutiveFailures {
				e.sess.stop(StopLLMFailures, fmt.Sprintf("%d proposals in a row failed; the last: %v", streak, r.err))
			}
			return
		}
	}
	e.spend.answered()
	attempt.ProgramHash, attempt.Edit = r.hash, r.editJSON
	c.ProgramHash, c.NormHash = r.hash, r.norm
	if fixing {
		if c.Description == "" {
			c.Description = r.prop.Description
		}
	} else {
		c.Description = r.prop.Description
	}
	if first := e.pop.claim(r.norm, c.ID); first != 0 {
		orig := e.pop.member(first)
		c.SourceID = first
		c.Verdict = runs.Duplicate
		switch {
		case orig != nil && orig.NormHash != r.norm:
			c.Reason = fmt.Sprintf("the same program as an earlier candidate of #%d, which failed its fast check; not evaluated again", first)
		case orig != nil && orig.State == runs.Done:
			c.Reason = fmt.Sprintf("the same program as #%d (after normalizing whitespace), which is %s; not evaluated again", first, orig.Verdict)
		default:
			c.Reason = fmt.Sprintf("the same program as #%d (after normalizing whitespace); not evaluated again", first)
		}
		if chk := e.seen.checked(c.ID); chk != nil {
			// The child ran a program of its own that failed, and its fix
			// came back to a known one (its parent's, a sibling's): what
			// its attempts did is that failure.
			c.Verdict = chk.FastVerdict
			c.Reason = fmt.Sprintf("%s (its fix then gave #%d's program, which is not evaluated again)", chk.FastReason, first)
		}
		e.persistAttemptOnly(ctx, c, attempt)
		e.finishChild(ctx, c)
		return
	}
	c.State, c.Error = runs.Fast, ""
	e.persistChild(ctx, c, attempt)
	e.sched.check(c)
}

// endFailed ends a child that produced no program it could run, after its
// fixes (if any): with the verdict of its last fast check when one of its
// programs ran, else apply_failed (no answer applied: nothing ran) or
// no_proposal.
func (e *Engine) endFailed(ctx context.Context, c *store.Child, reason, detail string) {
	a := e.seen.checked(c.ID)
	switch {
	case a != nil && a.ProgramHash != "" && a.FastVerdict != "":
		c.Verdict = a.FastVerdict
		c.Reason = a.FastReason + " (the fix that followed failed: " + clip(reason, 300) + ")"
	case reason != "" && detail != "":
		c.Verdict, c.Reason, c.Error = runs.ApplyFailed, reason, clip(detail, e.cfg.Prompt.MaxErrorChars)
	default:
		c.Verdict, c.Reason = runs.NoProposal, reason
	}
	e.finishChild(ctx, c)
}

// onEval takes an evaluation worker's result.
func (e *Engine) onEval(ctx context.Context, r *evalResult) {
	c := e.pop.inFlight(r.work.child.ID)
	if c == nil {
		e.sess.fail(fmt.Errorf("evaluation of a child not in flight, %d", r.work.child.ID))
		return
	}
	if r.err != nil {
		if ctx.Err() != nil {
			// Aborted: the child keeps its state (fast or evaluating) and is
			// evaluated again on resume; the evaluation row says so.
			if err := e.j.evaluationsInterrupted(context.WithoutCancel(ctx), c.ProgramHash, r.work.started.Add(-time.Second)); err != nil {
				e.log.Warn("evolve: could not mark an interrupted evaluation", "child", c.ID, "err", err)
			}
			return
		}
		if !errors.Is(r.err, eval.ErrBadProgram) {
			e.sess.fail(fmt.Errorf("evaluate child %d: %w", c.ID, r.err))
			return
		}
		r.res = &eval.Result{Verdict: eval.Error, Reason: r.err.Error()}
	}
	res := r.res
	if r.work.kind == kindFast {
		e.onFast(ctx, c, res)
		return
	}
	e.sched.fullEnded(r.work.started)
	if c.Origin == runs.OriginReference && res.Metrics.WallMs > 0 {
		e.work.refWall.Store(int64(res.Metrics.WallMs * float64(time.Millisecond)))
	}
	c.EvaluationID = res.EvaluationID
	c.Verdict, c.Reason = res.Verdict, res.Reason
	if res.Traceback != "" {
		c.Error = clipTail(res.Traceback, e.cfg.Prompt.MaxErrorChars)
	}
	m := res.Metrics
	c.ValLoss, c.TrainTimeMs, c.StepAvgMs, c.Score = m.ValLoss, m.TrainTimeMs, m.StepAvgMs, m.Score
	c.Summary = telemetrySummary(res)
	if c.Origin == runs.OriginReference && !c.Verdict.Valid() {
		e.finishChild(ctx, c)
		e.sess.stop(StopReferenceFails, fmt.Sprintf("the reference program's full run failed: %s: %s", res.Verdict, res.Reason))
		return
	}
	e.finishChild(ctx, c)
}

// onFast takes a fast check's result.
func (e *Engine) onFast(ctx context.Context, c *store.Child, res *eval.Result) {
	c.FastEvaluationID = res.EvaluationID
	a := e.seen.last(c.ID)
	e.seen.fastChecked(a, res.EvaluationID, res.Verdict, res.Reason)
	if res.Verdict == eval.FastOK {
		c.State = runs.Ready
		e.persistFast(ctx, c, a)
		e.sched.measure(c)
		return
	}
	text := res.Reason
	if res.Traceback != "" {
		text += "\n\n" + clipTail(res.Traceback, e.cfg.Prompt.MaxErrorChars)
	}
	text = clipTail(text, e.cfg.Prompt.MaxErrorChars+500)
	if c.Origin == runs.OriginReference {
		c.Verdict, c.Reason, c.Error = res.Verdict, res.Reason, text
		e.persistFast(ctx, c, a)
		e.finishChild(ctx, c)
		e.sess.stop(StopReferenceFails, fmt.Sprintf("the reference program fails its fast check: %s: %s", res.Verdict, res.Reason))
		return
	}
	if m := e.draw.model(c.Model); m != nil && m.fixes() && c.FixAttempts < *e.cfg.FastFixes {
		c.State, c.Error = runs.Fix, text
		e.persistFast(ctx, c, a)
		e.sched.fix(c, kindFixRun)
		return
	}
	c.Verdict, c.Reason, c.Error = res.Verdict, res.Reason, text
	e.persistFast(ctx, c, a)
	e.finishChild(ctx, c)
}

// persistChild records c and, when set, a new attempt.
func (e *Engine) persistChild(ctx context.Context, c *store.Child, a *store.Attempt) {
	if err := e.j.childChanged(ctx, c, a); err != nil {
		e.sess.fail(err)
		return
	}
	if a != nil {
		e.seen.attempted(a)
	}
}

// persistAttemptOnly records an attempt of a child that finishChild will
// record next.
func (e *Engine) persistAttemptOnly(ctx context.Context, c *store.Child, a *store.Attempt) {
	if err := e.j.attemptRecorded(ctx, a); err != nil {
		e.sess.fail(err)
		return
	}
	e.seen.attempted(a)
}

func (e *Engine) persistFast(ctx context.Context, c *store.Child, a *store.Attempt) {
	if err := e.j.fastChecked(ctx, c, a); err != nil {
		e.sess.fail(err)
	}
}

// finishChild records a child's final verdict, with everything it changes
// in one transaction: the archive, the bandit, its iteration, migrations
// and the seed copies of the reference.
func (e *Engine) finishChild(ctx context.Context, c *store.Child) {
	now := time.Now()
	c.State, c.FinishedAt = runs.Done, now
	archiveChanged := e.admit(c)
	e.draw.credit(c, e.pop.member(c.ParentID))
	var copies []*store.Child
	var migration *store.RunEvent
	iterDone := e.sched.settle(c.Iteration)
	if c.Origin == runs.OriginReference && c.Verdict.Valid() {
		for island := 1; island < e.cfg.Islands; island++ {
			copies = append(copies, copyOf(c, runs.OriginSeed, island, 0))
		}
	}
	if iterDone && c.Iteration > 0 {
		completed := e.sched.completedIterations() + 1
		if iv := e.cfg.Migration.Interval; iv > 0 && e.cfg.Islands > 1 && completed%iv == 0 {
			migration, copies = e.migrate(c.Iteration, completed, copies)
		}
	}
	claim := e.newClaim(c)
	err := e.j.childSettled(ctx, c, c.Iteration, settlement{migration: migration, copies: copies, iterationDone: iterDone, claim: claim,
		settleCopies: func(copies []*store.Child) ([]int64, bool) {
			for _, cp := range copies {
				if e.pop.settle(cp) {
					archiveChanged = true
				}
			}
			return e.pop.elite(), archiveChanged
		}})
	// The store wrote c's row after c settled: the population takes its
	// update time.
	e.pop.restamp(c)
	if err != nil {
		e.sess.fail(err)
		return
	}
	if iterDone {
		e.sched.close(c.Iteration)
	}
	if claim != nil {
		e.claims.add(claim)
		e.log.Info("evolve: candidate record", "child", c.ID, "time", fmtMs(c.TrainTimeMs), "claim", claim.State, "reason", claim.Reason)
	}
	e.logChild(c)
}

// admit takes a member with its final verdict into the in-memory state:
// its island and the archive, the outcomes and the search for the
// fastest open candidate. The loop admits each child as it settles; a
// resumed run admits every settled member it reads back, through this
// same function, so the two cannot disagree. It reports whether the
// archive changed.
func (e *Engine) admit(c *store.Child) bool {
	changed := e.pop.settle(c)
	e.seen.count(c)
	e.claims.observe(c)
	return changed
}

// migrate copies each island's best programs to the next island in the
// ring, after the completed-th iteration.
func (e *Engine) migrate(iteration, completed int, copies []*store.Child) (*store.RunEvent, []*store.Child) {
	type move struct {
		From, To int
		Source   int64
	}
	var moves []move
	n := e.cfg.Islands
	var out []*store.Child
	for from := 0; from < n; from++ {
		to := (from + 1) % n
		for _, src := range e.pop.emigrants(from, to, e.cfg.Migration.Count) {
			out = append(out, copyOf(src, runs.OriginMigrant, to, iteration))
			moves = append(moves, move{From: from, To: to, Source: src.ID})
		}
	}
	detail, _ := json.Marshal(map[string]any{"after_iterations": completed, "moves": moves})
	e.log.Info("evolve: migration", "after_iterations", completed, "moved", len(moves))
	return &store.RunEvent{RunID: e.run.ID, Kind: "migration", Key: fmt.Sprint(completed), Iteration: iteration, Detail: detail},
		append(copies, out...)
}

// copyOf returns a settled copy of src on another island.
func copyOf(src *store.Child, origin runs.Origin, island, iteration int) *store.Child {
	return &store.Child{
		RunID: src.RunID, Iteration: iteration, Island: island, Origin: origin, SourceID: src.ID, ParentID: src.ParentID,
		Model: src.Model, Stage: src.Stage, State: runs.Done, ProgramHash: src.ProgramHash, NormHash: src.NormHash,
		Description: src.Description, Verdict: src.Verdict, Reason: src.Reason, EvaluationID: src.EvaluationID,
		FastEvaluationID: src.FastEvaluationID, ValLoss: src.ValLoss, TrainTimeMs: src.TrainTimeMs, StepAvgMs: src.StepAvgMs,
		Score: src.Score, Summary: src.Summary, FinishedAt: time.Now(),
	}
}
