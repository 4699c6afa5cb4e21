package evolve

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/search"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

//go:embed prompts/*.tmpl
var builtinPrompts embed.FS

// Prompts that are not in the templated pool: the two meta-prompting
// stages and the two fixes.
const (
	promptIdea      = "meta_idea"
	promptImplement = "meta_implement"
	promptFixRun    = "fix_run"
	promptFixApply  = "fix_apply"
	promptCommon    = "common"
)

// BuiltinTemplates lists the templated prompts of the pool.
func BuiltinTemplates() []string {
	return []string{"speed", "profile", "convergence", "combine", "explore"}
}

// prompts is a parsed set of prompt templates: the pool and the special
// prompts, each a template with "system" and "user" blocks, and what each
// template of the pool needs to make sense (see Needs).
type prompts struct {
	pool  []string
	byID  map[string]*template.Template
	needs map[string][]string
}

// Things a template may need, declared in it as {{/* needs: top */}}: a
// template is drawn only for an iteration that has them. "combine" asks
// the model to bring in an idea of the top programs, which an empty top
// set makes a prompt about programs that are not there.
const (
	NeedTop     = "top"     // a non-empty top set
	NeedDiverse = "diverse" // a non-empty diverse set
	NeedProfile = "profile" // the parent's profile (sections, operators)
)

var needsRe = regexp.MustCompile(`\{\{-?\s*/\*\s*needs:\s*([a-z_, ]*?)\s*\*/\s*-?\}\}`)

// parseNeeds reads a template's declared needs.
func parseNeeds(name, src string) ([]string, error) {
	m := needsRe.FindStringSubmatch(src)
	if m == nil {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(m[1], ",") {
		n = strings.TrimSpace(n)
		switch n {
		case "":
		case NeedTop, NeedDiverse, NeedProfile:
			out = append(out, n)
		default:
			return nil, fmt.Errorf("prompt template %s: unknown need %q (known: %s, %s, %s)", name, n, NeedTop, NeedDiverse, NeedProfile)
		}
	}
	return out, nil
}

// drawable returns the templates of the pool whose needs have holds, in
// the pool's order; when none qualifies, those that need nothing, and as a
// last resort the whole pool.
func (p *prompts) drawable(have map[string]bool) []string {
	var ok, free []string
	for _, name := range p.pool {
		all := true
		for _, n := range p.needs[name] {
			all = all && have[n]
		}
		if all {
			ok = append(ok, name)
		}
		if len(p.needs[name]) == 0 {
			free = append(free, name)
		}
	}
	switch {
	case len(ok) > 0:
		return ok
	case len(free) > 0:
		return free
	}
	return p.pool
}

// loadPrompts parses the built-in templates, then those of dir (which add
// to the pool or replace built-ins of the same name), and restricts the
// pool to names when given.
func loadPrompts(dir string, names []string) (*prompts, error) {
	sources := map[string]string{}
	read := func(fsys fs.FS, pattern, where string) error {
		files, err := fs.Glob(fsys, pattern)
		if err != nil {
			return err
		}
		for _, f := range files {
			b, err := fs.ReadFile(fsys, f)
			if err != nil {
				return fmt.Errorf("read prompt template %s: %w", filepath.Join(where, f), err)
			}
			sources[strings.TrimSuffix(filepath.Base(f), ".tmpl")] = string(b)
		}
		return nil
	}
	if err := read(builtinPrompts, "prompts/*.tmpl", ""); err != nil {
		return nil, err
	}
	pool := BuiltinTemplates()
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("evolve.prompt.template_dir %s: not a folder", dir)
		}
		extra, _ := fs.Glob(os.DirFS(dir), "*.tmpl")
		if err := read(os.DirFS(dir), "*.tmpl", dir); err != nil {
			return nil, err
		}
		for _, f := range extra {
			n := strings.TrimSuffix(f, ".tmpl")
			if n != promptCommon && n != promptIdea && n != promptImplement && n != promptFixRun && n != promptFixApply && !slices.Contains(pool, n) {
				pool = append(pool, n)
			}
		}
	}
	p := &prompts{byID: map[string]*template.Template{}, needs: map[string][]string{}}
	base, err := template.New(promptCommon).Option("missingkey=error").Parse(sources[promptCommon])
	if err != nil {
		return nil, fmt.Errorf("prompt template common: %w", err)
	}
	for name, src := range sources {
		if name == promptCommon {
			continue
		}
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.New(name).Parse(src); err != nil {
			return nil, fmt.Errorf("prompt template %s: %w", name, err)
		}
		if t.Lookup("user") == nil || t.Lookup("system") == nil {
			return nil, fmt.Errorf("prompt template %s: it must define a \"user\" block (and may redefine \"system\")", name)
		}
		needs, err := parseNeeds(name, src)
		if err != nil {
			return nil, err
		}
		p.byID[name], p.needs[name] = t, needs
	}
	for _, n := range []string{promptIdea, promptImplement, promptFixRun, promptFixApply} {
		if p.byID[n] == nil {
			return nil, fmt.Errorf("prompt template %s is missing", n)
		}
	}
	if len(names) > 0 {
		for _, n := range names {
			if !slices.Contains(pool, n) {
				return nil, fmt.Errorf("evolve.prompt.templates: no template %q (have: %s)", n, strings.Join(pool, ", "))
			}
		}
		pool = slices.Clone(names)
	}
	slices.Sort(pool)
	p.pool = pool
	return p, nil
}

// render fills template name with d and returns the system and user text.
func (p *prompts) render(name string, d *promptData) (system, user string, err error) {
	t := p.byID[name]
	if t == nil {
		return "", "", fmt.Errorf("no prompt template %q", name)
	}
	var sb, ub strings.Builder
	if err := t.ExecuteTemplate(&sb, "system", d); err != nil {
		return "", "", fmt.Errorf("prompt %s: %w", name, err)
	}
	if err := t.ExecuteTemplate(&ub, "user", d); err != nil {
		return "", "", fmt.Errorf("prompt %s: %w", name, err)
	}
	return strings.TrimSpace(sb.String()), strings.TrimSpace(ub.String()) + "\n", nil
}

// request builds the model request for a prompt.
func (p *prompts) request(name, model string, d *promptData, cfg PromptConfig) (llm.Request, error) {
	sys, user, err := p.render(name, d)
	if err != nil {
		return llm.Request{}, err
	}
	return search.Prompt(model, sys, user, cfg.MaxOutputTokens, cfg.Temperature), nil
}

// promptData is what templates see.
type promptData struct {
	Track       trackView
	Objective   string
	ProgramName string
	// Program is the source the answer's edit applies to: the parent, or
	// for fixes the child as it is now.
	Program   string
	Parent    programView
	Reference programView
	Record    string
	// Refuted are the newest claims a series did not confirm, with its
	// figures: speeds the model must not build on.
	Refuted   []string
	Top       []programView
	Diverse   []programView
	LastError string
	// Attempt is the child's 1-based position among the Branching
	// children of its iteration.
	Attempt, Branching, Iteration int
	Idea                          string
	// Error, Description and PreviousAnswer are for fixes.
	Error          string
	Description    string
	PreviousAnswer string
	// Change is, for a fix of a run that failed, the child's change to
	// its parent (a diff). Excerpts, when set, are the parts of Program a
	// fix prompt shows instead of all of it (ExcerptNote says which).
	Change      string
	Excerpts    []excerptView
	ExcerptNote string
}

type trackView struct {
	Name, Device, FullRun, CompileBudget string
	Target, Floor                        float64
	Threads                              int
}

type programView struct {
	ID          int64
	Metrics     string
	Summary     string
	Description string
	// Diff is the program's change to its own parent (ParentID), whose
	// measurements are ParentMetrics.
	Diff              string
	ParentID          int64
	ParentMetrics     string
	ParentDescription string
}

// objectiveText says what the search ranks acceptable programs by (which
// ones become parents and top programs) and what a record is, consistently
// with the configured objective: under the paper's score, cutting steps
// shortens the train time, which sets records, but does not raise a
// program's rank.
func objectiveText(objective string) string {
	const record = "A record is the shortest training time at the target, confirmed by repeated runs against the standing record."
	switch objective {
	case ObjectiveTime:
		return "among acceptable programs the search ranks by training time, lower is better: " +
			"fewer steps or faster steps both count. " + record
	case ObjectiveLoss:
		return "among acceptable programs the search ranks by validation loss, lower is better; " +
			"time does not change the rank. " + record
	}
	return "among acceptable programs the search ranks by step_avg_ms x val_loss, lower is better: " +
		"a faster step or a lower loss raises a program, while cutting the number of steps changes neither " +
		"(it shortens the training time, which is what a record is). " + record
}

// A proposal, from its prompt to its program, in one place: the worker
// (startPropose) has the prompter assemble what the prompt shows (from
// the snapshot the coordinator handed it and the programs and diffs texts
// reads once each), asks the model through a recorder, and keeps the
// program before it reports back. The templates the prompts render are
// above; the excerpts and the formatting helpers below.

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
	baseHash string
	fixError string
	// previousAnswer is the answer whose edit did not apply, for a fix
	// of it.
	previousAnswer string
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

// Purposes of model calls.
const (
	PurposeTemplate  = "template"
	PurposeIdea      = "idea"
	PurposeImplement = "implement"
	PurposeFix       = "fix"
)

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
	req := propose.Request{Parent: propose.Program{Name: ws.name, Source: a.base}, Seed: w.child.Seed + uint64(w.child.FixAttempts),
		Target: ws.spec.TargetValLoss, Attempt: w.child.Slot + 1}
	if p := w.parent; p != nil && p.Verdict == runs.Acceptable && w.baseHash == p.ProgramHash {
		req.Parent.ValLoss = p.ValLoss // the loss the edit's base was measured at
	}
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

// keep stores the proposed program (before the coordinator acts on it).
func (ws *workers) keep(ctx context.Context, r *proposalResult) *proposalResult {
	if r.err != nil || r.prop == nil {
		return r
	}
	child := r.prop.Result.Child
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

// recorder records the calls of child for purpose.
func (ws *workers) recorder(c llm.Client, child store.Child, purpose string) *search.Recorder {
	return &search.Recorder{Inner: c, Log: childCalls{ws.j, child.ID}, Redact: ws.redact, Purpose: purpose}
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

// prompter assembles what a proposal's prompts show: from the snapshot
// the coordinator took when it started the proposal (proposalWork) and
// the programs and diffs texts reads, the data the templates see, and the
// requests they render to.
type prompter struct {
	prompts *prompts
	texts   *texts
	spec    *track.Spec
	cfg     Config
	// floor is the track's loss floor on this installation; name the
	// program's file name.
	floor float64
	name  string
}

// texts reads and stores programs, and the diffs between them, once
// each: the parent an iteration's children share, the inspirations their
// prompts show, the program an evaluation runs right after its proposal
// stored it. Programs are kept for the last textsKept reads, so that the
// memory they take does not grow with the run.
type texts struct {
	st Store
	j  *journal

	mu    sync.Mutex
	progs map[string][]byte
	order []string // progs' keys, oldest first
	diffs map[string]string
	// reading are the reads in flight: the children of an iteration,
	// proposed at once, ask for their parent at once, and one read serves
	// them all.
	reading map[string]*read
}

// read is a read of a program that others may wait for: src and err are
// set before done is closed.
type read struct {
	done chan struct{}
	src  []byte
	err  error
}

// textsKept bounds the programs texts keeps.
const textsKept = 64

func newTexts(st Store, j *journal) *texts {
	return &texts{st: st, j: j, progs: map[string][]byte{}, diffs: map[string]string{}, reading: map[string]*read{}}
}

// program returns the source of the program with hash h. The caller must
// not change it.
func (t *texts) program(ctx context.Context, h string) ([]byte, error) {
	t.mu.Lock()
	if src, ok := t.progs[h]; ok {
		t.mu.Unlock()
		return src, nil
	}
	if r, ok := t.reading[h]; ok {
		t.mu.Unlock()
		select {
		case <-r.done:
			return r.src, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r := &read{done: make(chan struct{})}
	t.reading[h] = r
	t.mu.Unlock()

	r.src, r.err = t.st.Program(ctx, h)
	if r.err == nil {
		t.remember(h, r.src)
	}
	t.mu.Lock()
	delete(t.reading, h)
	t.mu.Unlock()
	close(r.done)
	return r.src, r.err
}

// keep stores a proposed program (once) and returns its hash.
func (t *texts) keep(ctx context.Context, src []byte, norm string) (string, error) {
	h, err := t.j.program(ctx, src, norm)
	if err != nil {
		return "", err
	}
	t.remember(h, src)
	return h, nil
}

func (t *texts) remember(h string, src []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.progs[h]; ok {
		return
	}
	if len(t.order) >= textsKept {
		delete(t.progs, t.order[0])
		t.order = t.order[1:]
	}
	t.progs[h] = src
	t.order = append(t.order, h)
}

// diff returns the diff from parent's program to c's, of the program
// called name, clipped to n bytes; computed once per pair: the children
// of an iteration share their inspirations.
func (t *texts) diff(ctx context.Context, name string, parent, c *store.Child, n int) (string, error) {
	key := parent.ProgramHash + ":" + c.ProgramHash
	t.mu.Lock()
	d, ok := t.diffs[key]
	t.mu.Unlock()
	if ok {
		return d, nil
	}
	base, err := t.program(ctx, parent.ProgramHash)
	if err != nil {
		return "", err
	}
	src, err := t.program(ctx, c.ProgramHash)
	if err != nil {
		return "", err
	}
	d, _ = edit.Diff(fmt.Sprintf("%s (#%d, its parent)", name, parent.ID), fmt.Sprintf("%s (#%d)", name, c.ID), base, src)
	if d == "" {
		d = "(no difference)\n"
	}
	d = clip(d, n)
	t.mu.Lock()
	if len(t.diffs) >= 256 {
		clear(t.diffs)
	}
	t.diffs[key] = d
	t.mu.Unlock()
	return d, nil
}

// ask is what a proposal sends: the program its edit applies to and, for
// a model, the data its prompts render, the template it starts with and
// what the call is for. meta: the child asks for an idea first
// (promptIdea), then for its implementation (promptImplement).
type ask struct {
	p       *prompter
	model   string
	base    []byte
	data    *promptData
	name    string
	purpose string
	meta    bool
}

// request renders template name into the model's request.
func (a *ask) request(name string) (llm.Request, error) { return a.p.request(name, a.model, a.data) }

// request renders template name with d into model's request, under the
// run's prompt settings.
func (p *prompter) request(name, model string, d *promptData) (llm.Request, error) {
	return p.prompts.request(name, model, d, p.cfg.Prompt)
}

// assemble reads what w's prompts show. A mutation needs its base program
// only. The error is the store's: the child is not to blame.
func (p *prompter) assemble(ctx context.Context, w *proposalWork) (*ask, error) {
	base, err := p.texts.program(ctx, w.baseHash)
	if err != nil {
		return nil, err
	}
	m := w.model
	a := &ask{p: p, model: m.Name, base: base, name: w.child.Template, purpose: PurposeTemplate}
	if m.Kind == propose.KindMutate {
		return a, nil
	}
	if a.data, err = p.data(ctx, w, base); err != nil {
		return nil, err
	}
	switch {
	case w.kind == kindFixRun:
		a.name, a.purpose = promptFixRun, PurposeFix
	case w.kind == kindFixApply:
		a.name, a.purpose = promptFixApply, PurposeFix
		a.data.PreviousAnswer = clip(w.previousAnswer, 4*p.cfg.Prompt.MaxDiffChars)
	case w.child.Stage == runs.StageMeta && m.ideas():
		a.meta = true
	}
	return a, nil
}

// data assembles what the templates see. Programs other than the base are
// shown as diffs against their parents.
func (p *prompter) data(ctx context.Context, w *proposalWork, base []byte) (*promptData, error) {
	s := p.spec
	d := &promptData{
		Track: trackView{Name: s.Name, Device: s.Hardware.Device, FullRun: s.Limits.FullRun.D().String(),
			CompileBudget: s.Limits.CompileBudget.D().String(), Target: s.TargetValLoss, Floor: p.floor,
			Threads: s.Hardware.Threads},
		Objective: objectiveText(p.cfg.Objective), ProgramName: p.name, Program: string(base),
		Parent: p.view(w.parent), Record: w.record, Refuted: w.refuted, LastError: w.lastError,
		Attempt: w.child.Slot + 1, Branching: p.cfg.BranchingFactor, Iteration: w.iteration,
		Error: w.fixError, Description: w.child.Description, Idea: clip(w.child.Idea, 8000),
	}
	if d.Track.CompileBudget == "0s" {
		d.Track.CompileBudget = "the track's limit"
	}
	if w.reference != nil && w.reference.ID != w.parent.ID {
		d.Reference = p.view(w.reference)
	}
	if w.kind == kindFixRun || w.kind == kindFixApply {
		return d, p.fixContext(ctx, w, base, d)
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
			v := p.view(c)
			// What it tried: its change to its own parent, not the
			// difference to this iteration's parent, which would show
			// the parent's own changes as its.
			if par, ok := w.parents[c.ParentID]; ok && par.ProgramHash != "" {
				pv := p.view(&par)
				v.ParentID, v.ParentMetrics, v.ParentDescription = par.ID, pv.Metrics, pv.Description
				diff, err := p.texts.diff(ctx, p.name, &par, c, p.cfg.Prompt.MaxDiffChars)
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
func (p *prompter) fixContext(ctx context.Context, w *proposalWork, base []byte, d *promptData) error {
	anchors := errorAnchors(w.fixError, p.name)
	if w.kind == kindFixRun && w.parent != nil && w.parent.ProgramHash != "" && w.parent.ProgramHash != w.baseHash {
		parent, err := p.texts.program(ctx, w.parent.ProgramHash)
		if err != nil {
			return err
		}
		change, _ := edit.Diff(p.name+" (the working parent)", p.name+" (the change)", parent, base)
		d.Change = clip(change, p.cfg.Prompt.MaxDiffChars)
		anchors = append(anchors, diffAnchors(change)...)
	}
	d.Excerpts = excerpts(base, anchors, excerptContext)
	if d.Excerpts != nil {
		d.ExcerptNote = excerptSummary(base, d.Excerpts)
	}
	return nil
}

// What a fix prompt shows of the program. A fix needs the lines the error
// points at and the lines the change touched, copied exactly (SEARCH must
// match them), not the whole program every time: the fix prompts
// re-sent 10.8k characters each, and fix calls were 55% of a run's calls.
// A short program is still shown whole.

// wholeProgramChars is the size under which a fix prompt shows the whole
// program: excerpts would save little and lose the overview.
const wholeProgramChars = 4000

// excerptContext is how many lines around each anchor an excerpt keeps.
const excerptContext = 12

// excerptView is one window of the program, shown in its own code block.
type excerptView struct {
	From, To int // 1-based, inclusive
	Text     string
}

var (
	// nearestLineRe finds the program lines an edit error quotes
	// ("  123 | code").
	nearestLineRe = regexp.MustCompile(`(?m)^\s*(\d+) \| `)
	// hunkRe finds the new side of a unified diff's hunks.
	hunkRe = regexp.MustCompile(`(?m)^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)
)

// errorAnchors are the lines of the program named name that an error text
// points at: a traceback's `File "name", line N` and an edit error's
// quoted lines.
func errorAnchors(text, name string) []int {
	var out []int
	re := regexp.MustCompile(`File "[^"]*` + regexp.QuoteMeta(name) + `", line (\d+)`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, n)
		}
	}
	for _, m := range nearestLineRe.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// diffAnchors are the lines of the new program a unified diff changed.
func diffAnchors(diff string) []int {
	var out []int
	for _, m := range hunkRe.FindAllStringSubmatch(diff, -1) {
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		for i := 0; i < max(n, 1); i++ {
			out = append(out, start+i)
		}
	}
	return out
}

// excerpts cuts src into the windows around anchors (context lines each
// side, overlapping windows merged). It returns nil, meaning "show the
// whole program", when the program is short, when there is nothing to
// anchor on, or when the windows would hold most of it anyway.
func excerpts(src []byte, anchors []int, context int) []excerptView {
	if len(src) <= wholeProgramChars || len(anchors) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	anchors = slices.Clone(anchors)
	slices.Sort(anchors)
	var out []excerptView
	shown := 0
	for _, a := range anchors {
		if a < 1 || a > len(lines) {
			continue
		}
		from, to := max(1, a-context), min(len(lines), a+context)
		if n := len(out); n > 0 && from <= out[n-1].To+1 {
			out[n-1].To = max(out[n-1].To, to)
			continue
		}
		out = append(out, excerptView{From: from, To: to})
	}
	for i := range out {
		out[i].Text = strings.Join(lines[out[i].From-1:out[i].To], "")
		shown += len(out[i].Text)
	}
	if len(out) == 0 || shown > len(src)*3/4 {
		return nil
	}
	return out
}

// excerptSummary says in a line what part of the program the excerpts
// show.
func excerptSummary(src []byte, ex []excerptView) string {
	n := strings.Count(string(src), "\n")
	var parts []string
	for _, x := range ex {
		parts = append(parts, fmt.Sprintf("%d-%d", x.From, x.To))
	}
	return fmt.Sprintf("lines %s of %d; the rest is unchanged", strings.Join(parts, ", "), n)
}

// view describes a program in one line of metrics. Times are single
// timings, and say so.
func (p *prompter) view(c *store.Child) programView {
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
			strings.ReplaceAll(string(c.Verdict), "_", " "), c.ValLoss, p.spec.TargetValLoss, fmtMs(c.TrainTimeMs), c.StepAvgMs, c.Score)
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
// sections and the most expensive operators. It is the profile a child's
// prompt shows of its parent.
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

// clip cuts s to at most n bytes, keeping its start and end.
func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	head := n * 2 / 3
	tail := n - head
	return s[:head] + fmt.Sprintf("\n[... %d bytes cut ...]\n", len(s)-n) + s[len(s)-tail:]
}

// clipTail keeps the last n bytes of s (tracebacks end with the error).
func clipTail(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	return fmt.Sprintf("[... %d bytes cut ...]\n", len(s)-n) + s[len(s)-n:]
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
