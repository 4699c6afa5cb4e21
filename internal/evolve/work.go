package evolve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// workers run proposals and evaluations in goroutines. Each is handed a
// copy of what it reads (a proposalWork, an evalWork) and reports back on
// done, so that only the coordinator touches the engine's state.
type workers struct {
	st       Store
	texts    *texts
	prompter *prompter
	j        *journal
	eval     Evaluator
	redact   func(string) string
	spec     *track.Spec
	name     string
	evalSeed int
	log      *slog.Logger
	done     chan settler
	// refWall is the reference's full run's wall time in nanoseconds, once
	// measured in this session: the first deadline of every later full run
	// is at least twice it (eval.Request.ReferenceWall).
	refWall atomic.Int64
}

// results is where the workers report, one settler each.
func (ws *workers) results() <-chan settler { return ws.done }

// program reads a program by its hash, through the texts the prompts
// read too.
func (ws *workers) program(ctx context.Context, h string) ([]byte, error) {
	return ws.texts.program(ctx, h)
}

// settler is a worker's report: what the coordinator does with it.
type settler interface {
	settle(ctx context.Context, e *Engine)
}

func (r *proposalResult) settle(ctx context.Context, e *Engine) {
	e.sched.proposalDone()
	e.onProposal(ctx, r)
}

// startProposal hands a child to a proposal worker, with a copy of what
// its prompts show.
func (e *Engine) startProposal(ctx context.Context, j *job) {
	c := j.child
	it := e.sched.iteration(c.Iteration)
	m := e.draw.model(c.Model)
	if m == nil {
		// The model left the ensemble since the child was sampled (a
		// resumed run with another config): give the child to another.
		from := c.Model
		m = e.draw.reassign(c, it)
		e.log.Warn("evolve: model no longer configured; child reassigned", "child", c.ID, "from", from, "to", m.Name)
	}
	w := &proposalWork{child: *c, kind: j.kind, model: m, fallback: e.draw.fallbackTemplate(c, it)}
	if it != nil {
		w.iteration = it.it.Iteration
		w.parent = snapshot(it.parent)
		w.parents = map[int64]store.Child{}
		for _, group := range []struct {
			in  []*store.Child
			out *[]store.Child
		}{{it.top, &w.top}, {it.diverse, &w.diverse}} {
			for _, c := range group.in {
				*group.out = append(*group.out, e.shownAs(c))
				if p := e.pop.member(c.ParentID); p != nil {
					w.parents[p.ID] = *p
				}
			}
		}
	} else {
		w.parent = snapshot(e.pop.member(c.ParentID))
	}
	if w.parent == nil {
		e.sess.fail(fmt.Errorf("child %d has no parent to propose from", c.ID))
		return
	}
	w.reference = snapshot(e.pop.reference())
	w.record = e.recordText()
	w.refuted = refutedText(e.claims.list(), maxRefuted)
	w.lastError = e.seen.lastFailure(e.pop.member(w.parent.ID), e.cfg.Prompt.MaxErrorChars)
	switch j.kind {
	case kindFixRun:
		w.baseHash, w.fixError = c.ProgramHash, c.Error
	case kindFixApply:
		w.baseHash, w.fixError = c.ProgramHash, c.Error
		if a := e.seen.last(c.ID); a != nil && a.LLMCallID != 0 {
			w.previousAnswer = e.previousAnswer(ctx, a.LLMCallID)
		}
	}
	if w.baseHash == "" {
		w.baseHash = w.parent.ProgramHash
	}
	e.sched.proposalStarted()
	e.work.startPropose(ctx, w)
}

// previousAnswer is the recorded answer of model call id: kept since it
// came, or read back after a restart. A call that cannot be read back
// shows none.
func (e *Engine) previousAnswer(ctx context.Context, id int64) string {
	if a, ok := e.seen.answer(id); ok {
		return a
	}
	if _, answer, err := e.opts.Store.LLMCallText(ctx, id); err == nil {
		return answer
	}
	return ""
}

func snapshot(c *store.Child) *store.Child {
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

// shownAs is the copy of c that a prompt shows among the top or diverse
// programs: a child whose own program failed its fast check and whose fix
// then came back to a known program (its parent's, often) is shown with
// the program that failed, what it tried; its last program would show an
// empty change next to its failure.
func (e *Engine) shownAs(c *store.Child) store.Child {
	v := *c
	if c.SourceID != 0 && c.Verdict != runs.Duplicate && !c.Origin.IsCopy() {
		if a := e.seen.checked(c.ID); a != nil && a.ProgramHash != "" {
			v.ProgramHash = a.ProgramHash
		}
	}
	return v
}

// evalWork is what an evaluation worker gets.
type evalWork struct {
	child   store.Child
	kind    string
	started time.Time
}

type evalResult struct {
	work *evalWork
	res  *eval.Result
	err  error
}

func (r *evalResult) settle(ctx context.Context, e *Engine) {
	e.sched.evalDone(r.work.child.ID)
	e.onEval(ctx, r)
}

// startEval hands a child to an evaluation worker; a full evaluation is
// recorded as started first.
func (e *Engine) startEval(ctx context.Context, j *job) {
	c := j.child
	if j.kind == kindFull {
		c.State = runs.Evaluating
		if err := e.j.childChanged(ctx, c, nil); err != nil {
			e.sess.fail(err)
			return
		}
	}
	w := &evalWork{child: *c, kind: j.kind, started: time.Now()}
	e.sched.evalStarted(c, j.kind, w.started)
	e.work.startEvaluate(ctx, w)
}

// startEvaluate runs w in a worker.
func (ws *workers) startEvaluate(ctx context.Context, w *evalWork) {
	go func() {
		var r *evalResult
		defer func() {
			if p := recover(); p != nil {
				r = &evalResult{work: w, err: fmt.Errorf("the evaluator panicked: %v\n%s", p, debug.Stack())}
			}
			ws.done <- r
		}()
		r = ws.evaluate(ctx, w)
	}()
}

// evaluate runs a fast check or a full run of w's program.
func (ws *workers) evaluate(ctx context.Context, w *evalWork) *evalResult {
	r := &evalResult{work: w}
	src, err := ws.texts.program(ctx, w.child.ProgramHash)
	if err != nil {
		r.err = err
		return r
	}
	r.res, r.err = ws.eval.Evaluate(ctx, eval.Request{
		Track: ws.spec, Program: src, Name: ws.name, Seed: ws.evalSeed,
		FastOnly: w.kind == kindFast, SkipFast: w.kind == kindFull,
		ReferenceWall: time.Duration(ws.refWall.Load()),
		// The same after a restart: a cluster's executor finds the phase
		// still in flight by it.
		Key: fmt.Sprintf("run%d-child%d-fix%d-%s-seed%d", w.child.RunID, w.child.ID, w.child.FixAttempts, w.kind, ws.evalSeed),
	})
	if r.err == nil && r.res == nil {
		r.err = errors.New("the evaluator returned no result")
	}
	return r
}
