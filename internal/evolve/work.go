package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/search"
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

// proposalWork is what a proposal worker gets: copies of everything it
// reads, so that it never touches the coordinator's state.
type proposalWork struct {
	child     store.Child
	kind      string
	model     *Model
	iteration int
	parent    *store.Child
	top       []store.Child
	diverse   []store.Child
	// parents are the parents of the top and diverse programs, whose
	// changes the prompt shows against them.
	parents   map[int64]store.Child
	reference *store.Child
	record    string
	refuted   []string
	lastError string
	// baseHash is the program the edit applies to: the parent for a first
	// proposal, the child's current candidate for a fix (when it has one).
	baseHash     string
	fixError     string
	previousCall int64
	// fallback is the template a meta-prompted child falls back to when
	// its model gives no idea.
	fallback string
}

type proposalResult struct {
	work     *proposalWork
	prop     *propose.Proposal
	hash     string
	norm     string
	editJSON string
	idea     string
	// ideaFallback says why a meta-prompted child fell back to a
	// templated prompt: its model's answers were not ideas.
	ideaFallback string
	calls        []*store.LLMCall
	err          error
	storeErr     error
}

func (r *proposalResult) settle(ctx context.Context, e *Engine) {
	e.sched.proposalDone()
	e.onProposal(ctx, r)
}

// Purposes of model calls.
const (
	PurposeTemplate  = "template"
	PurposeIdea      = "idea"
	PurposeImplement = "implement"
	PurposeFix       = "fix"
)

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
		if a := e.seen.last(c.ID); a != nil {
			w.previousCall = a.LLMCallID
		}
	}
	if w.baseHash == "" {
		w.baseHash = w.parent.ProgramHash
	}
	e.sched.proposalStarted()
	e.work.startPropose(ctx, w)
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

// startPropose runs w in a worker.
func (ws *workers) startPropose(ctx context.Context, w *proposalWork) {
	go func() {
		var r *proposalResult
		defer func() {
			// A proposer's bug fails the child, not the run.
			if p := recover(); p != nil {
				ws.log.Error("evolve: proposer panicked", "child", w.child.ID, "panic", p, "stack", string(debug.Stack()))
				r = &proposalResult{work: w, err: fmt.Errorf("the proposer panicked: %v", p)}
			}
			ws.done <- r
		}()
		a, err := ws.prompter.assemble(ctx, w)
		if err != nil {
			r = &proposalResult{work: w, storeErr: err}
			return
		}
		r = ws.propose(ctx, w, a)
	}()
}

// propose asks w's model (or proposer) for a program, as a says, and
// stores the program.
func (ws *workers) propose(ctx context.Context, w *proposalWork, a *ask) (r *proposalResult) {
	r = &proposalResult{work: w}
	defer func() {
		var se *search.StoreError
		if errors.As(r.err, &se) {
			r.storeErr, r.err = se.Err, nil
		}
	}()
	req := propose.Request{Parent: propose.Program{Name: ws.name, Source: a.base}, Seed: w.child.Seed + uint64(w.child.FixAttempts)}
	m := w.model
	if m.Kind == propose.KindMutate {
		r.prop, r.err = m.Proposer.Propose(ctx, req)
		return ws.keep(ctx, r)
	}
	name, purpose := a.name, a.purpose
	if a.meta {
		ideaReq, err := a.request(promptIdea)
		if err != nil {
			r.err = err
			return r
		}
		rec := ws.recorder(m.Client, w.child, PurposeIdea)
		r.idea, r.err = propose.NewLLM(rec).Idea(ctx, ideaReq)
		r.calls = append(r.calls, rec.Calls...)
		if pe := propose.AsError(r.err); pe != nil && pe.Kind == propose.FailNotIdea {
			// Asked twice for an idea, the model gave code or nothing:
			// ask for a change directly, with a templated prompt.
			r.ideaFallback, r.err = pe.Error(), nil
			w.child.Stage, w.child.Template = runs.StageTemplate, w.fallback
			name = w.fallback
		} else if r.err != nil {
			return r
		} else {
			a.data.Idea = clip(r.idea, 8000)
			name, purpose = promptImplement, PurposeImplement
		}
	}
	prompt, err := a.request(name)
	if err != nil {
		r.err = err
		return r
	}
	req.Prompt = prompt
	rec := ws.recorder(m.Client, w.child, purpose)
	if m.Kind == propose.KindLLM {
		r.prop, r.err = propose.NewLLM(rec).Propose(ctx, req)
	} else {
		// Replay: its answers were recorded before; record them here too.
		r.prop, r.err = m.Proposer.Propose(ctx, req)
		var resp *llm.Response
		if r.prop != nil {
			resp = r.prop.Response
		} else if pe := propose.AsError(r.err); pe != nil {
			resp = pe.Response
		}
		if resp != nil {
			if err := rec.Replayed(ctx, prompt, resp); err != nil {
				r.storeErr = rec.Err
				return r
			}
		}
	}
	r.calls = append(r.calls, rec.Calls...)
	return ws.keep(ctx, r)
}

// childCalls records the model calls of one child of the run.
type childCalls struct {
	j     *journal
	child int64
}

func (c childCalls) CallStarted(ctx context.Context, call *store.LLMCall) error {
	call.ChildID = c.child
	return c.j.callStarted(ctx, call)
}

func (c childCalls) CallFinished(ctx context.Context, call *store.LLMCall) error {
	return c.j.callFinished(ctx, call)
}

// recorder records the calls of child for purpose.
func (ws *workers) recorder(c llm.Client, child store.Child, purpose string) *search.Recorder {
	return &search.Recorder{Inner: c, Log: childCalls{ws.j, child.ID}, Redact: ws.redact, Purpose: purpose}
}

// keep stores the proposed program (before the coordinator acts on it).
func (ws *workers) keep(ctx context.Context, r *proposalResult) *proposalResult {
	if r.err != nil || r.prop == nil {
		return r
	}
	child := r.prop.Child()
	r.norm = edit.NormalizedHash(child)
	h, err := ws.texts.keep(ctx, child, r.norm)
	if err != nil {
		r.storeErr = err
		return r
	}
	r.hash = h
	doc := map[string]any{"description": r.prop.Description, "matches": r.prop.Result.Matches}
	if ed := r.prop.Edit; ed != nil {
		doc["blocks"], doc["rewrite"] = len(ed.Blocks), ed.IsRewrite()
	}
	b, _ := json.Marshal(doc)
	r.editJSON = string(b)
	return r
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
		// The same after a restart: a cluster's executor finds the phase
		// still in flight by it.
		Key: fmt.Sprintf("run%d-child%d-fix%d-%s-seed%d", w.child.RunID, w.child.ID, w.child.FixAttempts, w.kind, ws.evalSeed),
	})
	if r.err == nil && r.res == nil {
		r.err = errors.New("the evaluator returned no result")
	}
	return r
}
