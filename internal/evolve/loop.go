package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Run runs the search until a budget is reached, Drain is called or ctx
// is canceled, and records how it ended. Canceling ctx aborts: running
// evaluations are killed and their children are re-queued when the run
// resumes. The returned error is set only when the engine could not go on
// (a store failure, an evaluation that could not happen); budgets and
// interruptions are normal ends, reported in the Summary.
//
// The coordinator (this goroutine) owns every piece of state; proposal and
// evaluation workers are goroutines that report back on channels, bounded
// by llm_concurrency and slots.
func (e *Engine) Run(ctx context.Context) (*Summary, error) {
	if e.ran {
		return nil, errors.New("evolve: Run called twice")
	}
	e.ran = true
	e.sessionStart = time.Now()
	e.activeBase = e.run.ActiveMs
	e.run.Sessions++
	e.run.State, e.run.StopReason, e.run.StopDetail, e.run.FinishedAt = store.RunRunning, "", "", time.Time{}
	if err := e.j.sessionStarted(ctx); err != nil {
		return nil, err
	}
	e.log.Info("evolve: run started", "run", e.run.Name, "id", e.run.ID, "track", e.spec.Name,
		"iteration", e.run.Iterations, "slots", e.slots, "llm_concurrency", e.cfg.LLMConcurrency, "models", e.ens.names)
	for _, r := range e.adopted {
		if r.work.kind == kindFull {
			e.fullStarted++
		}
		e.onEval(ctx, r)
	}
	e.adopted = nil
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	lastPersist := time.Now()
	aborted := false
	for {
		if !aborted {
			e.schedule(ctx)
		}
		e.publish()
		if e.proposing == 0 && e.evaluating == 0 && (aborted || e.idle()) {
			break
		}
		select {
		case r := <-e.propDone:
			e.proposing--
			e.onProposal(ctx, r)
		case r := <-e.evalDone:
			e.evaluating--
			e.onEval(ctx, r)
		case reason := <-e.drainCh:
			e.stop(StopInterrupted, reason)
		case <-ticker.C:
			if d := e.cfg.Budget.MaxDuration.D(); d > 0 && e.elapsed() >= d {
				e.stop(StopDuration, fmt.Sprintf("the run has been active for %s (budget.max_duration = %s)", e.elapsed().Round(time.Second), d))
			}
			if time.Since(lastPersist) > 10*time.Second {
				lastPersist = time.Now()
				if err := e.j.checkpoint(ctx); err != nil {
					e.fail(err)
				}
			}
		case <-ctx.Done():
			if !aborted {
				aborted = true
				e.abort()
			}
		}
		if aborted {
			continue
		}
		if ctx.Err() != nil {
			aborted = true
			e.abort()
		}
	}
	return e.finish(ctx)
}

// finish records how the session ended.
func (e *Engine) finish(ctx context.Context) (*Summary, error) {
	if e.stopReason == "" {
		e.stopReason = StopIterations
		e.stopDetail = fmt.Sprintf("all %d iterations are done (budget.max_iterations = %d)", e.run.Iterations, e.cfg.Budget.MaxIterations)
	}
	e.run.State = store.RunStopped
	if e.fatal != nil {
		e.run.State = store.RunFailed
	}
	e.run.StopReason, e.run.StopDetail, e.run.FinishedAt = e.stopReason, e.stopDetail, time.Now()
	err := e.j.sessionEnded(ctx)
	e.publish()
	e.log.Info("evolve: run stopped", "run", e.run.Name, "reason", e.stopReason, "detail", e.stopDetail)
	sum := &Summary{RunID: e.run.ID, RunName: e.run.Name, StopReason: e.stopReason, StopDetail: e.stopDetail, Status: e.Status()}
	if e.fatal != nil {
		return sum, e.fatal
	}
	return sum, err
}

// stop ends the run cleanly: no new work starts; what runs finishes. The
// first reason given is the one recorded.
func (e *Engine) stop(reason, detail string) {
	if e.stopReason == "" {
		e.stopReason, e.stopDetail = reason, detail
		e.log.Info("evolve: stopping", "reason", reason, "detail", detail)
	}
	e.stopping = true
}

// abort records a cancellation. It outranks a drain already under way
// (Ctrl-C twice): running evaluations were killed, not finished, and the
// record must say so.
func (e *Engine) abort() {
	if e.stopReason == StopInterrupted {
		e.stopReason = ""
	}
	e.stop(StopAborted, "canceled: running evaluations were stopped and their children will be evaluated again on resume")
}

// fail stops the run on an error the engine cannot work around.
func (e *Engine) fail(err error) {
	if e.fatal == nil {
		e.fatal = err
		e.log.Error("evolve: cannot continue", "err", err)
	}
	e.stop(StopError, err.Error())
}

func (e *Engine) elapsed() time.Duration {
	return time.Duration(e.activeBase)*time.Millisecond + time.Since(e.sessionStart)
}

// snapshotRun copies the engine's mutable state into the run row.
func (e *Engine) snapshotRun() {
	e.run.RNG, _ = e.pcg.MarshalBinary()
	e.run.Bandit = e.ens.save()
	e.run.ActiveMs = e.elapsed().Milliseconds()
}

// idle reports whether nothing can start: the run is over once nothing is
// in flight either.
func (e *Engine) idle() bool {
	if e.stopping {
		return true
	}
	return len(e.proposalQ) == 0 && len(e.fastQ) == 0 && len(e.fullQ) == 0 && !e.canSample()
}

// schedule starts whatever work can start: evaluations first (fast checks
// before full runs, since they unblock more work), then proposals up to
// the prefetch depth, then new iterations when the open ones have no
// proposals left to make.
func (e *Engine) schedule(ctx context.Context) {
	for !e.stopping {
		progress := false
		for e.evaluating < e.slots && !e.stopping {
			if j := pop(&e.fastQ); j != nil {
				e.startEval(ctx, j)
				progress = true
				continue
			}
			if len(e.fullQ) == 0 {
				break
			}
			if max := e.cfg.Budget.MaxEvaluations; max > 0 && e.fullStarted >= max {
				e.stop(StopEvaluations, fmt.Sprintf("%d full evaluations were started (budget.max_evaluations = %d)", e.fullStarted, max))
				break
			}
			e.startEval(ctx, pop(&e.fullQ))
			progress = true
		}
		for e.proposing < e.cfg.LLMConcurrency && len(e.proposalQ) > 0 && !e.stopping &&
			e.proposing+len(e.fastQ)+len(e.fullQ) < e.prefetch {
			if reason, detail := e.spendLimit(); reason != "" {
				e.stop(reason, detail)
				break
			}
			e.startProposal(ctx, pop(&e.proposalQ))
			progress = true
		}
		if !e.stopping && e.canSample() {
			if err := e.sampleIteration(ctx); err != nil {
				e.fail(err)
			}
			progress = true
		}
		if !progress {
			return
		}
	}
}

// spendLimit reports the dollar or token budget that is spent, if any.
func (e *Engine) spendLimit() (string, string) {
	b := e.cfg.Budget
	if b.MaxUSD > 0 && e.spentUSD >= b.MaxUSD {
		return StopUSD, fmt.Sprintf("the run spent $%.4f of budget.max_usd = $%.2f", e.spentUSD, b.MaxUSD)
	}
	if b.MaxTokens > 0 && e.spentTokens >= b.MaxTokens {
		return StopTokens, fmt.Sprintf("the run used %d tokens of budget.max_tokens = %d", e.spentTokens, b.MaxTokens)
	}
	return "", ""
}

// canSample reports whether a new iteration may be sampled now: when the
// open iterations have no proposal left to make and fewer children wait
// for an evaluation than there are slots, so that slots are about to run
// dry. Sampling later than that would leave slots idle while a model
// answers; sampling earlier would draw parents from an older state.
func (e *Engine) canSample() bool {
	if e.stopping || e.noMoreIterations || len(e.proposalQ) > 0 {
		return false
	}
	if e.proposing+len(e.fastQ)+len(e.fullQ) >= e.slots {
		return false
	}
	if e.reference != nil && e.reference.State != runs.Done {
		return false
	}
	if max := e.cfg.Budget.MaxIterations; max > 0 && e.run.Iterations >= max {
		e.noMoreIterations = true
		return false
	}
	open := 0
	for n := range e.iters {
		if n > 0 {
			open++
		}
	}
	return open < e.cfg.MaxOpenIterations
}

func pop(q *[]*job) *job {
	if len(*q) == 0 {
		return nil
	}
	j := (*q)[0]
	*q = (*q)[1:]
	return j
}

// sampleIteration samples the shared state of a new iteration (island,
// parent, top and diverse sets, stage) and its children's models,
// templates and seeds, records it all with the generator's state, and
// queues the children for proposals.
func (e *Engine) sampleIteration(ctx context.Context) error {
	n := e.run.Iterations + 1
	island := (n - 1) % e.cfg.Islands
	parent := e.pop.sampleParent(e.rng, island, e.cfg.Selection)
	if parent == nil {
		return errors.New("no program to sample a parent from")
	}
	top := e.pop.sampleTop(e.rng, *e.cfg.TopPrograms, parent)
	div := e.pop.sampleDiverse(e.rng, *e.cfg.DiversePrograms, parent)
	stage := runs.StageTemplate
	if ms := e.cfg.metaStart(); ms >= 0 && n >= ms && e.rng.Float64() < *e.cfg.MetaPrompting.Probability {
		stage = runs.StageMeta
	}
	it := &store.Iteration{RunID: e.run.ID, Iteration: n, Island: island, ParentID: parent.ID, Stage: stage,
		TopIDs: ids(top), DiverseIDs: ids(div)}
	var kids []*store.Child
	for slot := 0; slot < e.cfg.BranchingFactor; slot++ {
		m := e.models[e.ens.choose(e.rng)]
		c := &store.Child{RunID: e.run.ID, Iteration: n, Slot: slot, Island: island, ParentID: parent.ID,
			Origin: runs.Origin(m.Kind), Model: m.Name, State: runs.Queued, Seed: e.rng.Uint64() >> 1}
		c.Template = e.prompts.pool[e.rng.IntN(len(e.prompts.pool))]
		switch {
		case m.Kind == propose.KindMutate:
			c.Stage, c.Template = runs.StageMutate, ""
		case stage == runs.StageMeta && m.ideas():
			c.Stage, c.Template = runs.StageMeta, promptIdea
		default:
			c.Stage = runs.StageTemplate
		}
		kids = append(kids, c)
	}
	e.run.Iterations = n
	if err := e.j.iterationSampled(ctx, it, kids); err != nil {
		e.run.Iterations--
		return fmt.Errorf("record iteration %d: %w", n, err)
	}
	e.pop.expanded[parent.ID]++
	e.iters[n] = &iterState{it: it, parent: parent, top: top, diverse: div, pending: len(kids)}
	for _, c := range kids {
		e.pop.add(c)
		e.proposalQ = append(e.proposalQ, &job{child: c, kind: kindPropose})
	}
	e.log.Info("evolve: iteration", "iteration", n, "island", island, "parent", parent.ID, "stage", stage,
		"top", it.TopIDs, "diverse", it.DiverseIDs)
	if e.cfg.Budget.MaxIterations > 0 && n >= e.cfg.Budget.MaxIterations {
		e.noMoreIterations = true
	}
	return nil
}

func ids(cs []*store.Child) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// startProposal hands a child to a proposal worker.
func (e *Engine) startProposal(ctx context.Context, j *job) {
	c := j.child
	m, ok := e.models[c.Model]
	if !ok {
		// The model left the ensemble since the child was sampled (a
		// resumed run with another config): give the child to another.
		m = e.models[e.ens.choose(e.rng)]
		e.log.Warn("evolve: model no longer configured; child reassigned", "child", c.ID, "from", c.Model, "to", m.Name)
		c.Model = m.Name
		if m.Kind == propose.KindMutate {
			c.Stage, c.Template = runs.StageMutate, ""
		} else if c.Stage == runs.StageMutate || (c.Stage == runs.StageMeta && !m.ideas()) {
			c.Stage, c.Template = runs.StageTemplate, e.prompts.pool[e.rng.IntN(len(e.prompts.pool))]
		}
	}
	w := &proposalWork{child: *c, kind: j.kind, model: m, name: e.name}
	if it := e.iters[c.Iteration]; it != nil {
		w.iteration = it.it.Iteration
		w.parent = snapshot(it.parent)
		for _, t := range it.top {
			w.top = append(w.top, *t)
		}
		for _, d := range it.diverse {
			w.diverse = append(w.diverse, *d)
		}
	} else if p := e.pop.members[c.ParentID]; p != nil {
		w.parent = snapshot(p)
	}
	if w.parent == nil {
		e.fail(fmt.Errorf("child %d has no parent to propose from", c.ID))
		return
	}
	if e.reference != nil {
		w.reference = snapshot(e.reference)
	}
	if b := e.record(); b.ID != 0 {
		w.record = fmt.Sprintf("#%d trains to the target in %s", b.ID, fmtMs(b.TrainTimeMs))
	}
	w.lastError = e.lastFailure(w.parent.ID)
	switch j.kind {
	case kindFixRun:
		w.baseHash, w.fixError = c.ProgramHash, c.Error
	case kindFixApply:
		w.baseHash, w.fixError = c.ProgramHash, c.Error
		if a := e.lastAttempt[c.ID]; a != nil {
			w.previousCall = a.LLMCallID
		}
	}
	if w.baseHash == "" {
		w.baseHash = w.parent.ProgramHash
	}
	e.proposing++
	go func() {
		var r *proposalResult
		defer func() {
			// A proposer's bug fails the child, not the run.
			if p := recover(); p != nil {
				e.log.Error("evolve: proposer panicked", "child", w.child.ID, "panic", p, "stack", string(debug.Stack()))
				r = &proposalResult{work: w, err: fmt.Errorf("the proposer panicked: %v", p)}
			}
			e.propDone <- r
		}()
		r = e.doProposal(ctx, w)
	}()
}

func snapshot(c *store.Child) *store.Child {
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

// startEval hands a child to an evaluation worker; a full evaluation is
// recorded as started first.
func (e *Engine) startEval(ctx context.Context, j *job) {
	c := j.child
	if j.kind == kindFull {
		c.State = runs.Evaluating
		if err := e.j.childChanged(ctx, c, nil); err != nil {
			e.fail(err)
			return
		}
		e.fullStarted++
	}
	w := &evalWork{child: *c, kind: j.kind, started: time.Now()}
	e.evaluating++
	go func() {
		var r *evalResult
		defer func() {
			if p := recover(); p != nil {
				r = &evalResult{work: w, err: fmt.Errorf("the evaluator panicked: %v\n%s", p, debug.Stack())}
			}
			e.evalDone <- r
		}()
		r = e.doEval(ctx, w)
	}()
}

// onProposal takes a proposal worker's result.
func (e *Engine) onProposal(ctx context.Context, r *proposalResult) {
	c := e.pop.members[r.work.child.ID]
	if c == nil {
		e.fail(fmt.Errorf("proposal for unknown child %d", r.work.child.ID))
		return
	}
	c.Model, c.Stage, c.Template = r.work.child.Model, r.work.child.Stage, r.work.child.Template
	for _, call := range r.calls {
		c.InputTokens += call.InputTokens
		c.OutputTokens += call.OutputTokens
		c.CostUSD += call.CostUSD
		e.spentUSD += call.CostUSD
		e.spentTokens += call.InputTokens + call.OutputTokens
	}
	if r.storeErr != nil {
		if ctx.Err() != nil {
			return // aborting: the child is proposed again on resume
		}
		e.fail(r.storeErr)
		return
	}
	if r.idea != "" {
		c.Idea = r.idea
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
	m := e.models[c.Model]
	prev := e.lastAttempt[c.ID]

	if r.err != nil {
		var be *llm.BudgetError
		pe := propose.AsError(r.err)
		switch {
		case errors.As(r.err, &be):
			// Not the child's fault: it waits for a larger budget.
			if fixing {
				c.FixAttempts--
			}
			e.proposalQ = slices.Insert(e.proposalQ, 0, &job{child: c, kind: r.work.kind})
			reason := map[string]string{"usd": StopUSD, "tokens": StopTokens, "calls": StopCalls}[be.Budget]
			if reason == "" {
				reason = StopUSD
			}
			e.persistChild(ctx, c, nil)
			e.stop(reason, be.Error())
			return
		case ctx.Err() != nil:
			// Aborting: the child keeps its state and is proposed again on resume.
			if fixing {
				c.FixAttempts--
			}
			e.persistChild(ctx, c, nil)
			return
		case pe != nil && pe.Feedback() != "" && m != nil && m.fixes() && c.FixAttempts < *e.cfg.FastFixes:
			e.failStreak = 0
			attempt.Error = pe.Feedback()
			c.State, c.Error = runs.Fix, clip(pe.Feedback(), e.cfg.Prompt.MaxErrorChars)
			e.persistChild(ctx, c, attempt)
			e.proposalQ = slices.Insert(e.proposalQ, e.fixInsertPos(), &job{child: c, kind: kindFixApply})
			return
		case pe != nil && pe.Feedback() != "":
			e.failStreak = 0
			attempt.Error = pe.Feedback()
			e.persistAttemptOnly(ctx, c, attempt)
			e.endFailed(ctx, c, prev, firstLine(pe.Feedback()), pe.Feedback())
			return
		default:
			attempt.Error = r.err.Error()
			if pe == nil || pe.Kind == propose.FailCall || pe.Kind == propose.FailExhausted {
				e.failStreak++
			}
			e.persistAttemptOnly(ctx, c, attempt)
			e.endFailed(ctx, c, prev, r.err.Error(), "")
			if e.failStreak >= e.cfg.MaxConsecutiveFailures {
				e.stop(StopLLMFailures, fmt.Sprintf("%d proposals in a row failed; the last: %v", e.failStreak, r.err))
			}
			return
		}
	}
	e.failStreak = 0
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
		orig := e.pop.members[first]
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
		e.persistAttemptOnly(ctx, c, attempt)
		e.finishChild(ctx, c)
		return
	}
	c.State, c.Error = runs.Fast, ""
	e.persistChild(ctx, c, attempt)
	e.fastQ = append(e.fastQ, &job{child: c, kind: kindFast})
}

// fixInsertPos puts fixes after earlier fixes but ahead of first
// proposals: a child in its fix loop is closer to an evaluation.
func (e *Engine) fixInsertPos() int {
	i := 0
	for i < len(e.proposalQ) && e.proposalQ[i].kind != kindPropose {
		i++
	}
	return i
}

// endFailed ends a child that produced no program it could run, after its
// fixes (if any): with the verdict of its last fast check when it had a
// program (prev, the attempt before the one that just failed), else
// apply_failed or no_proposal.
func (e *Engine) endFailed(ctx context.Context, c *store.Child, prev *store.Attempt, reason, detail string) {
	a := prev
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
	c := e.pop.members[r.work.child.ID]
	if c == nil {
		e.fail(fmt.Errorf("evaluation of unknown child %d", r.work.child.ID))
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
			e.fail(fmt.Errorf("evaluate child %d: %w", c.ID, r.err))
			return
		}
		r.res = &eval.Result{Verdict: eval.Error, Reason: r.err.Error()}
	}
	res := r.res
	if r.work.kind == kindFast {
		e.onFast(ctx, c, res)
		return
	}
	c.EvaluationID = res.EvaluationID
	c.Verdict, c.Reason = runs.Verdict(res.Verdict), res.Reason
	if res.Traceback != "" {
		c.Error = clipTail(res.Traceback, e.cfg.Prompt.MaxErrorChars)
	}
	m := res.Metrics
	c.ValLoss, c.TrainTimeMs, c.StepAvgMs, c.Score = m.ValLoss, m.TrainTimeMs, m.StepAvgMs, m.Score
	c.Summary = telemetrySummary(res)
	if c.Origin == runs.OriginReference && !c.Verdict.Valid() {
		e.finishChild(ctx, c)
		e.stop(StopReferenceFails, fmt.Sprintf("the reference program's full run failed: %s: %s", res.Verdict, res.Reason))
		return
	}
	e.finishChild(ctx, c)
}

// onFast takes a fast check's result.
func (e *Engine) onFast(ctx context.Context, c *store.Child, res *eval.Result) {
	c.FastEvaluationID = res.EvaluationID
	a := e.lastAttempt[c.ID]
	if a != nil {
		a.FastEvaluationID, a.FastVerdict, a.FastReason = res.EvaluationID, runs.Verdict(res.Verdict), res.Reason
	}
	if res.Verdict == eval.FastOK {
		c.State = runs.Ready
		e.persistFast(ctx, c, a)
		e.fullQ = append(e.fullQ, &job{child: c, kind: kindFull})
		return
	}
	text := res.Reason
	if res.Traceback != "" {
		text += "\n\n" + clipTail(res.Traceback, e.cfg.Prompt.MaxErrorChars)
	}
	text = clipTail(text, e.cfg.Prompt.MaxErrorChars+500)
	if c.Origin == runs.OriginReference {
		c.Verdict, c.Reason, c.Error = runs.Verdict(res.Verdict), res.Reason, text
		e.persistFast(ctx, c, a)
		e.finishChild(ctx, c)
		e.stop(StopReferenceFails, fmt.Sprintf("the reference program fails its fast check: %s: %s", res.Verdict, res.Reason))
		return
	}
	if m := e.models[c.Model]; m != nil && m.fixes() && c.FixAttempts < *e.cfg.FastFixes {
		c.State, c.Error = runs.Fix, text
		e.persistFast(ctx, c, a)
		e.proposalQ = slices.Insert(e.proposalQ, e.fixInsertPos(), &job{child: c, kind: kindFixRun})
		return
	}
	c.Verdict, c.Reason, c.Error = runs.Verdict(res.Verdict), res.Reason, text
	e.persistFast(ctx, c, a)
	e.finishChild(ctx, c)
}

// persistChild records c and, when set, a new attempt.
func (e *Engine) persistChild(ctx context.Context, c *store.Child, a *store.Attempt) {
	if err := e.j.childChanged(ctx, c, a); err != nil {
		e.fail(err)
		return
	}
	if a != nil {
		e.lastAttempt[c.ID] = a
	}
}

// persistAttemptOnly records an attempt of a child that finishChild will
// record next.
func (e *Engine) persistAttemptOnly(ctx context.Context, c *store.Child, a *store.Attempt) {
	if err := e.j.attemptRecorded(ctx, a); err != nil {
		e.fail(err)
		return
	}
	e.lastAttempt[c.ID] = a
}

func (e *Engine) persistFast(ctx context.Context, c *store.Child, a *store.Attempt) {
	if err := e.j.fastChecked(ctx, c, a); err != nil {
		e.fail(err)
	}
}

// finishChild records a child's final verdict, with everything it changes
// in one transaction: the archive, the bandit, its iteration, migrations
// and the seed copies of the reference.
func (e *Engine) finishChild(ctx context.Context, c *store.Child) {
	now := time.Now()
	c.State, c.FinishedAt = runs.Done, now
	archiveChanged := e.pop.settle(c)
	e.count(c)
	if parent := e.pop.members[c.ParentID]; parent != nil && c.Origin != runs.OriginReference && e.ens.has(c.Model) {
		e.ens.record(c.Model, beats(e.cfg.Objective, c, parent), c.CostUSD)
	}
	var copies []*store.Child
	var migration *store.RunEvent
	it := e.iters[c.Iteration]
	iterDone := false
	if it != nil {
		it.pending--
		iterDone = it.pending <= 0
	}
	if c.Origin == runs.OriginReference && c.Verdict.Valid() {
		for island := 1; island < e.cfg.Islands; island++ {
			copies = append(copies, copyOf(c, runs.OriginSeed, island, 0))
		}
	}
	if iterDone && c.Iteration > 0 {
		e.completed++
		if iv := e.cfg.Migration.Interval; iv > 0 && e.cfg.Islands > 1 && e.completed%iv == 0 {
			migration, copies = e.migrate(c.Iteration, copies)
		}
	}
	err := e.j.childSettled(ctx, c, c.Iteration, settlement{migration: migration, copies: copies, iterationDone: iterDone,
		settleCopies: func(copies []*store.Child) ([]int64, bool) {
			for _, cp := range copies {
				if e.pop.settle(cp) {
					archiveChanged = true
				}
			}
			return e.pop.archive, archiveChanged
		}})
	if err != nil {
		e.fail(err)
		return
	}
	if iterDone {
		delete(e.iters, c.Iteration)
	}
	e.logChild(c)
}

// migrate copies each island's best programs to the next island in the
// ring, after the completed-th iteration.
func (e *Engine) migrate(iteration int, copies []*store.Child) (*store.RunEvent, []*store.Child) {
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
	detail, _ := json.Marshal(map[string]any{"after_iterations": e.completed, "moves": moves})
	e.log.Info("evolve: migration", "after_iterations", e.completed, "moved", len(moves))
	return &store.RunEvent{RunID: e.run.ID, Kind: "migration", Key: fmt.Sprint(e.completed), Iteration: iteration, Detail: detail},
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

// lastFailure is what the prompt shows as the parent's last error: its
// own failure if it failed, else the newest failed child of it.
func (e *Engine) lastFailure(parentID int64) string {
	p := e.pop.members[parentID]
	if p == nil {
		return ""
	}
	if !p.Verdict.Valid() && p.Reason != "" {
		return clip(p.Reason+"\n"+p.Error, e.cfg.Prompt.MaxErrorChars)
	}
	last := e.lastFail[parentID]
	if last == nil {
		return ""
	}
	s := fmt.Sprintf("#%d (%s): %s", last.ID, last.Description, last.Reason)
	if last.Error != "" && !strings.Contains(last.Reason, last.Error) {
		s += "\n" + last.Error
	}
	return clip(s, e.cfg.Prompt.MaxErrorChars)
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
	if children.Record.Faster(rec) {
		rec = children.Record
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
