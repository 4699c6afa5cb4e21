package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// proposalWork is what a proposal worker gets: copies of everything it
// reads, so that it never touches the coordinator's state.
type proposalWork struct {
	child     store.Child
	kind      string
	model     *Model
	name      string
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

// storeFailure marks errors of the store inside a model call, which end
// the run rather than the child.
type storeFailure struct{ err error }

func (s *storeFailure) Error() string { return "store: " + s.err.Error() }
func (s *storeFailure) Unwrap() error { return s.err }

// doProposal runs in a proposal worker.
func (e *Engine) doProposal(ctx context.Context, w *proposalWork) (r *proposalResult) {
	r = &proposalResult{work: w}
	defer func() {
		var sf *storeFailure
		if errors.As(r.err, &sf) {
			r.storeErr, r.err = sf.err, nil
		}
	}()
	base, err := e.st.Program(ctx, w.baseHash)
	if err != nil {
		r.storeErr = err
		return r
	}
	seed := w.child.Seed + uint64(w.child.FixAttempts)
	req := propose.Request{Parent: propose.Program{Name: w.name, Source: base}, Seed: seed}
	m := w.model
	if m.Kind == propose.KindMutate {
		r.prop, r.err = m.Proposer.Propose(ctx, req)
		return e.keep(ctx, r)
	}
	d, err := e.promptData(ctx, w, base)
	if err != nil {
		r.storeErr = err
		return r
	}
	name, purpose := w.child.Template, PurposeTemplate
	switch {
	case w.kind == kindFixRun:
		name, purpose = promptFixRun, PurposeFix
	case w.kind == kindFixApply:
		name, purpose = promptFixApply, PurposeFix
		if w.previousCall != 0 {
			if _, answer, err := e.st.LLMCallText(ctx, w.previousCall); err == nil {
				d.PreviousAnswer = clip(answer, 4*e.cfg.Prompt.MaxDiffChars)
			}
		}
	case w.child.Stage == runs.StageMeta && m.ideas():
		ideaReq, err := e.prompts.request(promptIdea, m.Name, d, e.cfg.Prompt)
		if err != nil {
			r.err = err
			return r
		}
		rec := e.recorder(m.Client, w.child, PurposeIdea)
		r.idea, r.err = propose.NewLLM(rec).Idea(ctx, ideaReq)
		r.calls = append(r.calls, rec.calls...)
		if pe := propose.AsError(r.err); pe != nil && pe.Kind == propose.FailNotIdea {
			// Asked twice for an idea, the model gave code or nothing:
			// ask for a change directly, with a templated prompt.
			r.ideaFallback, r.err = pe.Error(), nil
			w.child.Stage, w.child.Template = runs.StageTemplate, w.fallback
			name = w.fallback
			break
		}
		if r.err != nil {
			return r
		}
		d.Idea = clip(r.idea, 8000)
		name, purpose = promptImplement, PurposeImplement
	}
	prompt, err := e.prompts.request(name, m.Name, d, e.cfg.Prompt)
	if err != nil {
		r.err = err
		return r
	}
	req.Prompt = prompt
	switch m.Kind {
	case propose.KindLLM:
		rec := e.recorder(m.Client, w.child, purpose)
		r.prop, r.err = propose.NewLLM(rec).Propose(ctx, req)
		r.calls = append(r.calls, rec.calls...)
	default: // replay: its answers were recorded before; record them here too
		r.prop, r.err = m.Proposer.Propose(ctx, req)
		var resp *llm.Response
		if r.prop != nil {
			resp = r.prop.Response
		} else if pe := propose.AsError(r.err); pe != nil {
			resp = pe.Response
		}
		if resp != nil {
			call, err := e.recordAfter(ctx, w.child, purpose, prompt, resp)
			if err != nil {
				r.storeErr = err
				return r
			}
			r.calls = append(r.calls, call)
		}
	}
	return e.keep(ctx, r)
}

// keep stores the proposed program (before the coordinator acts on it).
func (e *Engine) keep(ctx context.Context, r *proposalResult) *proposalResult {
	if r.err != nil || r.prop == nil {
		return r
	}
	child := r.prop.Child()
	r.norm = edit.NormalizedHash(child)
	h, err := e.j.program(ctx, child, r.norm)
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

// Purposes of model calls.
const (
	PurposeTemplate  = "template"
	PurposeIdea      = "idea"
	PurposeImplement = "implement"
	PurposeFix       = "fix"
)

// recorder is an llm.Client that records every call of one child: the
// redacted request before it is sent, then the answer, usage and cost.
type recorder struct {
	e       *Engine
	inner   llm.Client
	child   store.Child
	purpose string
	calls   []*store.LLMCall
}

func (e *Engine) recorder(c llm.Client, child store.Child, purpose string) *recorder {
	return &recorder{e: e, inner: c, child: child, purpose: purpose}
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	reqJSON, _ := json.Marshal(req)
	call := &store.LLMCall{ChildID: r.child.ID, Purpose: r.purpose, Model: req.Model, Request: r.e.redact(string(reqJSON))}
	if err := r.e.j.callStarted(ctx, call); err != nil {
		return nil, &storeFailure{err}
	}
	r.calls = append(r.calls, call)
	resp, err := r.inner.Complete(ctx, req)
	fillCall(call, resp, r.e.redact)
	call.State = store.CallDone
	if err != nil {
		call.State, call.Error = store.CallFailed, r.e.redact(err.Error())
	}
	if ferr := r.e.j.callFinished(ctx, call); ferr != nil {
		return nil, &storeFailure{ferr}
	}
	return resp, err
}

func fillCall(call *store.LLMCall, resp *llm.Response, redact func(string) string) {
	if resp == nil {
		return
	}
	u := resp.Usage
	call.Answer = redact(resp.Text)
	call.ServerModel, call.Provider, call.FinishReason = resp.Model, resp.Provider, resp.FinishReason
	call.InputTokens, call.OutputTokens, call.ReasoningTokens, call.CachedTokens = u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CachedTokens
	call.Estimated, call.CostUSD, call.PriceUnknown = u.Estimated, resp.CostUSD, resp.PriceUnknown
	call.LatencyMs, call.Attempts, call.RequestID = float64(resp.Latency)/1e6, resp.Attempts, resp.RequestID
}

// recordAfter records a call whose answer came from a recording.
func (e *Engine) recordAfter(ctx context.Context, child store.Child, purpose string, req llm.Request, resp *llm.Response) (*store.LLMCall, error) {
	reqJSON, _ := json.Marshal(req)
	call := &store.LLMCall{ChildID: child.ID, Purpose: purpose, Model: req.Model, Request: e.redact(string(reqJSON))}
	if err := e.j.callStarted(ctx, call); err != nil {
		return nil, err
	}
	fillCall(call, resp, e.redact)
	call.State = store.CallDone
	return call, e.j.callFinished(ctx, call)
}

// promptData assembles what the templates see. Programs other than the
// base are read from the store and shown as diffs against it.
func (e *Engine) promptData(ctx context.Context, w *proposalWork, base []byte) (*promptData, error) {
	s := e.spec
	d := &promptData{
		Track: trackView{Name: s.Name, Device: s.Hardware.Device, FullRun: s.Limits.FullRun.D().String(),
			CompileBudget: s.Limits.CompileBudget.D().String(), Target: s.TargetValLoss, Floor: e.lossFloor(),
			Threads: s.Hardware.Threads},
		Objective: objectiveText(e.cfg.Objective), ProgramName: w.name, Program: string(base),
		Parent: e.view(w.parent), Record: w.record, Refuted: w.refuted, LastError: w.lastError,
		Attempt: w.child.Slot + 1, Branching: e.cfg.BranchingFactor, Iteration: w.iteration,
		Error: w.fixError, Description: w.child.Description, Idea: clip(w.child.Idea, 8000),
	}
	if d.Track.CompileBudget == "0s" {
		d.Track.CompileBudget = "the track's limit"
	}
	if w.reference != nil && w.reference.ID != w.parent.ID {
		d.Reference = e.view(w.reference)
	}
	if w.kind == kindFixRun || w.kind == kindFixApply {
		return d, e.fixContext(ctx, w, base, d)
	}
	if w.kind != kindPropose {
		return d, nil
	}
	for _, group := range []struct {
		in  []store.Child
		out *[]programView
	}{{w.top, &d.Top}, {w.diverse, &d.Diverse}} {
		for i := range group.in {
			c := &group.in[i]
			v := e.view(c)
			// What it tried: its change to its own parent, not the
			// difference to this iteration's parent, which would show
			// the parent's own changes as its.
			if par, ok := w.parents[c.ParentID]; ok && par.ProgramHash != "" {
				pv := e.view(&par)
				v.ParentID, v.ParentMetrics, v.ParentDescription = par.ID, pv.Metrics, pv.Description
				diff, err := e.diff(ctx, &par, c)
				if err != nil {
					return nil, err
				}
				v.Diff = diff
			}
			*group.out = append(*group.out, v)
		}
	}
	return d, nil
}

// fixContext fills what a fix prompt shows: for a run that failed, the
// change the child made to its parent; and the program as excerpts around
// the lines the error points at and the change touched (the whole program
// when it is short).
func (e *Engine) fixContext(ctx context.Context, w *proposalWork, base []byte, d *promptData) error {
	anchors := errorAnchors(w.fixError, w.name)
	if w.kind == kindFixRun && w.parent != nil && w.parent.ProgramHash != "" && w.parent.ProgramHash != w.baseHash {
		parent, err := e.st.Program(ctx, w.parent.ProgramHash)
		if err != nil {
			return err
		}
		change, _ := edit.Diff(w.name+" (the working parent)", w.name+" (the change)", parent, base)
		d.Change = clip(change, e.cfg.Prompt.MaxDiffChars)
		anchors = append(anchors, diffAnchors(change)...)
	}
	d.Excerpts = excerpts(base, anchors, excerptContext)
	if d.Excerpts != nil {
		d.ExcerptNote = excerptSummary(base, d.Excerpts)
	}
	return nil
}

// diff returns the (clipped) diff from parent's program to c's, computed
// once per pair: the children of an iteration share their inspirations.
func (e *Engine) diff(ctx context.Context, parent, c *store.Child) (string, error) {
	key := parent.ProgramHash + ":" + c.ProgramHash
	e.diffMu.Lock()
	d, ok := e.diffs[key]
	e.diffMu.Unlock()
	if ok {
		return d, nil
	}
	base, err := e.st.Program(ctx, parent.ProgramHash)
	if err != nil {
		return "", err
	}
	src, err := e.st.Program(ctx, c.ProgramHash)
	if err != nil {
		return "", err
	}
	d, _ = edit.Diff(fmt.Sprintf("%s (#%d, its parent)", e.name, parent.ID), fmt.Sprintf("%s (#%d)", e.name, c.ID), base, src)
	if d == "" {
		d = "(no difference)\n"
	}
	d = clip(d, e.cfg.Prompt.MaxDiffChars)
	e.diffMu.Lock()
	if len(e.diffs) >= 256 {
		clear(e.diffs)
	}
	e.diffs[key] = d
	e.diffMu.Unlock()
	return d, nil
}

// view describes a program in one line of metrics. Times are single
// timings, and say so.
func (e *Engine) view(c *store.Child) programView {
	v := programView{ID: c.ID, Summary: c.Summary, Description: clip(c.Description, 300)}
	switch {
	case c.Origin == runs.OriginReference:
		v.Description = "the track's reference program"
	case c.Origin == runs.OriginSeed:
		// An island's seed is a copy of the reference.
		v.Description = fmt.Sprintf("the track's reference program (this island's copy of #%d)", c.SourceID)
	case c.Origin == runs.OriginMigrant:
		v.Description = fmt.Sprintf("a copy of #%d from another island: %s", c.SourceID, v.Description)
	}
	if c.Verdict.Valid() {
		v.Metrics = fmt.Sprintf("%s: val loss %.4f (target %.4g), train time %s (one timing), %.2f ms/step, score %.1f",
			strings.ReplaceAll(string(c.Verdict), "_", " "), c.ValLoss, e.spec.TargetValLoss, fmtMs(c.TrainTimeMs), c.StepAvgMs, c.Score)
	} else if c.Verdict != "" {
		v.Metrics = fmt.Sprintf("%s: %s", c.Verdict, clip(firstLine(c.Reason), 300))
	} else {
		v.Metrics = "not evaluated yet"
	}
	return v
}

// untrackedSection is the judge's name for step time outside every
// section.
const untrackedSection = "(untracked)"

// telemetrySummary says in one line where a run's time went: the largest
// sections and the most expensive operators.
func telemetrySummary(res *eval.Result) string {
	var parts []string
	secs := slices.Clone(res.Sections)
	slices.SortFunc(secs, func(a, b harness.Section) int {
		switch {
		case a.Pct > b.Pct:
			return -1
		case a.Pct < b.Pct:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	var s []string
	var untracked *harness.Section
	for i := range secs {
		x := &secs[i]
		if x.Name == untrackedSection {
			untracked = x // time outside every section: said apart, not a slot
			continue
		}
		if len(s) < 4 {
			s = append(s, fmt.Sprintf("%s %.0f%% (%.2f ms/step)", x.Name, x.Pct, x.AvgMs))
		}
	}
	if untracked != nil {
		s = append(s, fmt.Sprintf("outside any section %.0f%%", untracked.Pct))
	}
	if len(s) > 0 {
		parts = append(parts, "share of step time: "+strings.Join(s, ", "))
	}
	if res.TopOps != nil && len(res.TopOps.Ops) > 0 {
		// The profiler lists its top operators only: shares are of their
		// summed time, not of the step's.
		total := 0.0
		for _, op := range res.TopOps.Ops {
			total += op.TotalMs
		}
		var o []string
		for i, op := range res.TopOps.Ops {
			if i == 4 {
				break
			}
			o = append(o, fmt.Sprintf("%s %.0f%%", op.Name, 100*op.TotalMs/max(total, 1e-9)))
		}
		parts = append(parts, fmt.Sprintf("top %s ops (share of the %d listed ops' time): %s", res.TopOps.Kind, len(res.TopOps.Ops), strings.Join(o, ", ")))
	}
	return strings.Join(parts, "; ")
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

// doEval runs in an evaluation worker.
func (e *Engine) doEval(ctx context.Context, w *evalWork) *evalResult {
	r := &evalResult{work: w}
	src, err := e.st.Program(ctx, w.child.ProgramHash)
	if err != nil {
		r.err = err
		return r
	}
	r.res, r.err = e.opts.Evaluator.Evaluate(ctx, eval.Request{
		Track: e.spec, Program: src, Name: e.name, Seed: e.cfg.EvalSeed,
		FastOnly: w.kind == kindFast, SkipFast: w.kind == kindFull,
		// The same after a restart: a cluster's executor finds the phase
		// still in flight by it.
		Key: fmt.Sprintf("run%d-child%d-fix%d-%s-seed%d", w.child.RunID, w.child.ID, w.child.FixAttempts, w.kind, e.cfg.EvalSeed),
	})
	if r.err == nil && r.res == nil {
		r.err = errors.New("the evaluator returned no result")
	}
	return r
}
