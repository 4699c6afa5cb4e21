package evolve

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// The scheduler: what work starts when. Evaluations first (fast checks
// before full runs), then proposals up to the prefetch depth, then new
// iterations when the open ones run out of proposals to make. Workers run
// in goroutines and report back to the coordinator on channels.

// idle reports whether nothing can start: the run is over once nothing is
// in flight either.
func (e *Engine) idle() bool {
	if e.stopping {
		return true
	}
	return len(e.proposalQ) == 0 && len(e.fastQ) == 0 && len(e.fullQ) == 0 && len(e.confirmQ) == 0 && !e.canSample()
}

// schedule starts whatever work can start: evaluations first (fast checks
// before confirmation series before full runs, since they unblock more
// work), then proposals up to
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
			// A candidate record's series comes before full runs: the
			// record is what the search is for, and prompts quote it.
			if e.confirming == nil && len(e.confirmQ) > 0 {
				if e.startConfirm(ctx) {
					progress = true
					continue
				}
				progress = true
			}
			if len(e.fullQ) == 0 {
				break
			}
			if max := e.cfg.Budget.MaxEvaluations; max > 0 && e.fullStarted+e.seriesRuns >= max {
				e.stop(StopEvaluations, fmt.Sprintf("%d full evaluations and %d confirmation series runs were started (budget.max_evaluations = %d counts both)", e.fullStarted, e.seriesRuns, max))
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

// spendLimit reports the budget that is spent, if any: the run's model
// budget is the one authority, the same the model clients draw from.
func (e *Engine) spendLimit() (string, string) {
	var be *llm.BudgetError
	if !errors.As(e.budget.Err(), &be) {
		return "", ""
	}
	switch reason := budgetStop(be); reason {
	case StopUSD:
		return reason, fmt.Sprintf("the run spent $%.4f of budget.max_usd = $%.2f", be.Spent, be.Limit)
	case StopTokens:
		return reason, fmt.Sprintf("the run used %.0f tokens of budget.max_tokens = %.0f", be.Spent, be.Limit)
	default:
		return reason, be.Error()
	}
}

// budgetStop is the stop reason of a spent budget.
func budgetStop(be *llm.BudgetError) string {
	switch be.Budget {
	case "tokens":
		return StopTokens
	case "calls":
		return StopCalls
	}
	return StopUSD
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
	top := e.pop.sampleTop(e.rng, *e.cfg.TopPrograms, parent, *e.cfg.DiversePrograms > 0)
	div := e.pop.sampleDiverse(e.rng, *e.cfg.DiversePrograms, parent, top)
	stage := runs.StageTemplate
	if ms := e.cfg.metaStart(); ms >= 0 && n >= ms && e.rng.Float64() < *e.cfg.MetaPrompting.Probability {
		stage = runs.StageMeta
	}
	it := &store.Iteration{RunID: e.run.ID, Iteration: n, Island: island, ParentID: parent.ID, Stage: stage,
		TopIDs: ids(top), DiverseIDs: ids(div)}
	var kids []*store.Child
	pool := e.prompts.drawable(map[string]bool{NeedTop: len(top) > 0, NeedDiverse: len(div) > 0, NeedProfile: parent.Summary != ""})
	for slot := 0; slot < e.cfg.BranchingFactor; slot++ {
		m := e.models[e.ens.choose(e.rng)]
		c := &store.Child{RunID: e.run.ID, Iteration: n, Slot: slot, Island: island, ParentID: parent.ID,
			Origin: runs.Origin(m.Kind), Model: m.Name, State: runs.Queued, Seed: e.rng.Uint64() >> 1}
		c.Template = pool[e.rng.IntN(len(pool))]
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
			c.Stage, c.Template = runs.StageTemplate, e.fallbackTemplate(c)
		}
	}
	w := &proposalWork{child: *c, kind: j.kind, model: m, name: e.name, fallback: e.fallbackTemplate(c)}
	if it := e.iters[c.Iteration]; it != nil {
		w.iteration = it.it.Iteration
		w.parent = snapshot(it.parent)
		w.parents = map[int64]store.Child{}
		for _, group := range []struct {
			in  []*store.Child
			out *[]store.Child
		}{{it.top, &w.top}, {it.diverse, &w.diverse}} {
			for _, c := range group.in {
				*group.out = append(*group.out, e.shownAs(c))
				if p := e.pop.members[c.ParentID]; p != nil {
					w.parents[p.ID] = *p
				}
			}
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
	w.record = e.recordText()
	w.refuted = refutedText(e.claims, maxRefuted)
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
	e.running[c.ID] = RunningEval{ChildID: c.ID, Kind: j.kind, Since: w.started}
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

// fallbackTemplate is the templated prompt a child gets when its stage
// cannot be what it was drawn as (its model writes no ideas, or no idea
// came): one its iteration has what it needs for, chosen by the child's
// seed.
func (e *Engine) fallbackTemplate(c *store.Child) string {
	have := map[string]bool{}
	if it := e.iters[c.Iteration]; it != nil {
		have[NeedTop], have[NeedDiverse] = len(it.top) > 0, len(it.diverse) > 0
		have[NeedProfile] = it.parent != nil && it.parent.Summary != ""
	}
	pool := e.prompts.drawable(have)
	return pool[c.Seed%uint64(len(pool))]
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

// shownAs is the copy of c that a prompt shows among the top or diverse
// programs: a child whose own program failed its fast check and whose fix
// then came back to a known program (its parent's, often) is shown with
// the program that failed, what it tried; its last program would show an
// empty change next to its failure.
func (e *Engine) shownAs(c *store.Child) store.Child {
	v := *c
	if c.SourceID != 0 && c.Verdict != runs.Duplicate && !c.Origin.IsCopy() {
		if a := e.lastChecked[c.ID]; a != nil && a.ProgramHash != "" {
			v.ProgramHash = a.ProgramHash
		}
	}
	return v
}
