package evolve

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// Evaluator evaluates programs; *eval.Evaluator is one. Evaluate's error
// means the evaluation could not happen; a failing program is a Result.
type Evaluator interface {
	Evaluate(ctx context.Context, req eval.Request) (*eval.Result, error)
}

// Model is one member of the ensemble.
type Model struct {
	// Name is recorded with every child the model proposes; for language
	// models it is also the Request.Model sent to Client.
	Name string
	// Kind is propose.KindLLM (Client answers prompts), KindMutate or
	// KindReplay (Proposer proposes).
	Kind     propose.Kind
	Client   llm.Client
	Proposer propose.Proposer
	// Weight is the model's share of children under fixed weights.
	Weight float64
	// Spec is the model's spec, for the record.
	Spec string
}

// fixes reports whether the model can be asked to fix a failure.
func (m *Model) fixes() bool {
	return (m.Kind == propose.KindLLM && m.Client != nil) || m.Kind == propose.KindReplay
}

// ideas reports whether the model can answer free-text idea prompts.
func (m *Model) ideas() bool { return m.Kind == propose.KindLLM && m.Client != nil }

// Options are what an engine works with.
type Options struct {
	Store     Store
	Track     *track.Spec
	Evaluator Evaluator
	Models    []Model
	// Redact removes secrets from prompts and answers before they are
	// stored; nil means llm.Redact.
	Redact func(string) string
	// Budget is the run's model budget (see NewBudget), the one authority
	// on spending: the engine stops the run when it is spent, and the
	// models' clients must draw from it (provider.Options.Budget). nil: the
	// engine makes one from the run's budget and wraps the clients of its
	// language models with it.
	Budget *llm.Budget
	// MachineGPUs is the number of GPUs of the machine, for the default
	// number of slots of CUDA tracks.
	MachineGPUs int
	// ExecutorSlots, when set, is how many evaluations the executor runs
	// at once (a cluster's jobs in flight): the default number of slots,
	// decoupled from the machine frontier runs on and from the model pool.
	ExecutorSlots int
	// RunsDir is the evaluator's folder of run folders
	// (eval.Evaluator.RunsDir): a resumed run removes there what the
	// evaluations cut off with the last session left. Empty: nothing is
	// removed.
	RunsDir string
	// LossFloor is the floor of the track's data on this installation
	// when the spec does not state it (built-in data is drawn per
	// installation; eval.DataFiles.LossFloor). 0: the spec's.
	LossFloor float64
	Log       *slog.Logger
	// OnStatus, when set, is called from the engine's goroutine after every
	// change; it must return quickly.
	OnStatus func(Status)
}

// Status is a snapshot of a running engine, for progress displays.
type Status struct {
	RunID             int64
	RunName           string
	Iteration         int // iterations sampled
	MaxIterations     int // 0: no limit
	IterationsDone    int
	SlotsBusy, Slots  int
	ProposalsInFlight int
	Queued            int // children waiting for a proposal, a fix or an evaluation
	// Evaluations counts the search's full evaluations started (the
	// reference's included); SeriesRuns the runs of confirmation series,
	// apart. budget.max_evaluations counts both.
	Evaluations int
	SeriesRuns  int
	Acceptable  int
	LossTooHigh int
	Buggy       int
	Duplicates  int
	NoProposal  int
	// ReferenceTimeMs and ReferenceLoss are the reference's measurements.
	ReferenceTimeMs float64
	ReferenceLoss   float64
	// BestTimeMs and BestTimeID are the run's record (the reference until
	// a claim is confirmed; see docs/evolve.md, "The record rule"): its
	// best time estimate (a series' mean when one measured it), and
	// RecordEvidence what it rests on. RecordSingleMs is its single timing
	// in the search, which candidates are compared with. RecordSpeedup is
	// its speedup over the reference from its claims (NaN for the
	// reference), RecordBasis what that rests on. BestLoss is the lowest
	// validation loss of any valid program.
	BestTimeMs     float64
	BestTimeID     int64
	RecordSingleMs float64
	RecordSpeedup  float64
	RecordBasis    string
	RecordEvidence string
	// RecordBrief is the evidence in a few words ("confirmed n=5
	// p=0.002"), "reference" for the reference.
	RecordBrief string
	BestLoss    float64
	// FastestID and FastestMs are the candidate record: the fastest
	// single timing of an acceptable child whose claim was not refuted,
	// when it is faster than the record; FastestClaim is where its claim
	// stands ("" when it has none).
	FastestID    int64
	FastestMs    float64
	FastestClaim string
	// Confirming names the series running, if any ("#12 vs #1, 5 pairs").
	Confirming string
	// Running lists the evaluations in the slots.
	Running    []RunningEval
	USD        float64
	Tokens     int64
	Elapsed    time.Duration // active time, all sessions
	Draining   bool
	StopReason string
}

// RunningEval is an evaluation in a slot.
type RunningEval struct {
	ChildID int64
	Kind    string // fast, full or confirm
	Since   time.Time
}

// Stop reasons.
const (
	StopIterations     = "iterations"       // budget.max_iterations reached and every child finished
	StopEvaluations    = "evaluations"      // budget.max_evaluations reached
	StopDuration       = "duration"         // budget.max_duration reached
	StopUSD            = "usd"              // the dollar budget is spent
	StopTokens         = "tokens"           // the token budget is spent
	StopCalls          = "calls"            // llm.budget.max_calls reached
	StopInterrupted    = "interrupted"      // drained on request (Ctrl-C once)
	StopAborted        = "aborted"          // canceled (Ctrl-C twice); in-flight work is re-queued on resume
	StopLLMFailures    = "llm_failures"     // too many model calls failed in a row
	StopReferenceFails = "reference_failed" // the reference program does not run
	StopError          = "error"            // the engine could not continue (see the detail)
	StopDiskFull       = "disk_full"        // a disk filled: free space, then resume
)

// Engine runs one evolution run. Create one with New or Resume, then call
// Run once.
//
// The engine coordinates parts that each own their state: the population
// (members, islands, archive), the sampler (every random choice), the
// scheduler (queues, slots, what runs), the claim book (candidate records
// and their series), the outcomes (what the children came to), the
// session (stopping, why, the active time), the spend (the model budget)
// and the workers (proposals and evaluations in goroutines, which report
// back on one channel). Only the coordinator goroutine, Run's, touches
// them; each restores itself on resume from what the journal wrote.
type Engine struct {
	opts Options
	cfg  Config
	run  *store.Run
	j    *journal
	log  *slog.Logger

	pop    *population
	draw   *sampler
	sched  *scheduler
	claims *claimBook
	seen   *outcomes
	sess   *session
	spend  *spend
	work   *workers

	statusMu sync.Mutex
	status   Status
}

func (o *Options) check() error {
	switch {
	case o.Store == nil:
		return errors.New("evolve: no store")
	case o.Track == nil:
		return errors.New("evolve: no track")
	case o.Evaluator == nil:
		return errors.New("evolve: no evaluator")
	case len(o.Models) == 0:
		return errors.New("evolve: no model or proposer: configure llm.models, or use the mutate proposer")
	}
	seen := map[string]bool{}
	for _, m := range o.Models {
		if m.Name == "" {
			return errors.New("evolve: a model has no name")
		}
		if seen[m.Name] {
			return fmt.Errorf("evolve: model %q is in the ensemble twice", m.Name)
		}
		seen[m.Name] = true
		switch m.Kind {
		case propose.KindLLM:
			if m.Client == nil {
				return fmt.Errorf("evolve: model %s has no client", m.Name)
			}
		case propose.KindMutate, propose.KindReplay:
			if m.Proposer == nil {
				return fmt.Errorf("evolve: model %s has no proposer", m.Name)
			}
		default:
			return fmt.Errorf("evolve: model %s has unknown kind %q", m.Name, m.Kind)
		}
	}
	return nil
}

func newEngine(opts Options, cfg Config) (*Engine, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.Resolved()
	pr, err := loadPrompts(cfg.Prompt.TemplateDir, cfg.Prompt.Templates)
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Redact == nil {
		opts.Redact = llm.Redact
	}
	name := filepath.Base(opts.Track.Reference) // the program's file name
	if name == "." || name == "" {
		name = "train.py"
	}
	// The effective slots and prefetch are recorded with the run.
	cfg.Slots = cfg.slotsFor(opts.Track.Hardware.Device, opts.MachineGPUs, opts.Track.Hardware.GPUs, opts.ExecutorSlots)
	if cfg.Prefetch == 0 {
		cfg.Prefetch = max(2*cfg.Slots, cfg.LLMConcurrency)
	}
	e := &Engine{
		opts: opts, cfg: cfg, log: opts.Log,
		pop:    newPopulation(cfg.Objective, cfg.Islands, cfg.ArchiveSize),
		draw:   newSampler(cfg, opts.Models, pr),
		sched:  newScheduler(cfg),
		claims: newClaimBook(),
		seen:   newOutcomes(),
		sess:   newSession(opts.Log),
		spend:  &spend{},
	}
	e.j = &journal{st: opts.Store, snapshot: e.snapshotRun}
	tx := newTexts(opts.Store, e.j)
	e.work = &workers{
		st: opts.Store, texts: tx, j: e.j, eval: opts.Evaluator, redact: opts.Redact, spec: opts.Track,
		name: name, evalSeed: cfg.EvalSeed, log: opts.Log, done: make(chan settler),
		prompter: &prompter{prompts: pr, texts: tx, spec: opts.Track, cfg: cfg, floor: e.lossFloor(), name: name},
	}
	return e, nil
}

// useBudget makes b the run's model budget. A budget the engine made
// itself wraps the clients of the language models, so that every call
// draws from it as the command's clients draw from theirs.
func (e *Engine) useBudget(ctx context.Context, runID int64) error {
	if e.opts.Budget != nil {
		e.spend.use(e.opts.Budget)
		return nil
	}
	b, err := NewBudget(ctx, e.opts.Store, runID, e.cfg.Budget, llm.BudgetConfig{})
	if err != nil {
		return err
	}
	e.spend.use(b)
	e.draw.useBudget(b)
	return nil
}

// ModelsRecord is how a run records its ensemble.
type ModelsRecord = store.RunModel

// New records a new run named name (empty: "run-<id>") and returns its
// engine. The reference program is the run's first member; Run evaluates
// it first.
func New(ctx context.Context, opts Options, cfg Config, name string) (*Engine, error) {
	e, err := newEngine(opts, cfg)
	if err != nil {
		return nil, err
	}
	seed := e.cfg.Seed
	if seed == 0 {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return nil, err
		}
		seed = binary.LittleEndian.Uint64(b[:]) >> 1
		if seed == 0 {
			seed = 1
		}
		e.cfg.Seed = seed
	}
	if err := e.useBudget(ctx, 0); err != nil {
		return nil, err
	}
	e.draw.seed(seed)

	spec := opts.Track
	src, err := spec.ReferenceSource()
	if err != nil {
		return nil, err
	}
	specHash, err := eval.SpecHash(spec)
	if err != nil {
		return nil, err
	}
	cfgJSON, err := json.Marshal(e.cfg)
	if err != nil {
		return nil, err
	}
	var models []ModelsRecord
	for _, m := range opts.Models {
		models = append(models, ModelsRecord{Name: m.Name, Kind: string(m.Kind), Spec: m.Spec, Weight: m.Weight})
	}
	modelsJSON, _ := json.Marshal(models)
	rngState, bandit := e.draw.save()
	tmpName := name
	if tmpName == "" {
		tmpName = fmt.Sprintf("run-pending-%d", time.Now().UnixNano())
	}
	run := &store.Run{
		Name: tmpName, Track: spec.Name, TrackDir: trackDir(spec), TrackHash: specHash, TargetValLoss: spec.TargetValLoss,
		LossFloor: e.lossFloor(), Config: cfgJSON, Models: modelsJSON, Seed: seed, RNG: rngState,
		Bandit: bandit, Objective: e.cfg.Objective, MetaStart: e.cfg.plannedMetaStart(opts.Models),
	}
	hash, err := e.j.program(ctx, src, edit.NormalizedHash(src))
	if err != nil {
		return nil, err
	}
	ref := &store.Child{Iteration: 0, Island: 0, Origin: runs.OriginReference, Stage: runs.StageReference,
		State: runs.Fast, ProgramHash: hash, NormHash: edit.NormalizedHash(src), Description: "the track's reference program"}
	a := &store.Attempt{Kind: kindReference, ProgramHash: hash}
	if err := e.j.begin(ctx, run, name, ref, a); err != nil {
		return nil, err
	}
	e.run = run
	e.seen.attempted(a)
	e.pop.add(ref)
	e.pop.claim(ref.NormHash, ref.ID)
	e.sched.open(&iterState{it: &store.Iteration{RunID: run.ID, Iteration: 0, Stage: runs.StageReference}, pending: 1})
	e.sched.check(ref)
	return e, nil
}

// trackDir is where a track that is not built in was read from, as an
// absolute path, for a resume to find it again; "" for built-in tracks.
func trackDir(s *track.Spec) string {
	if s.Builtin || s.Dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(s.Dir); err == nil {
		return abs
	}
	return s.Dir
}

// RunID returns the run's id.
func (e *Engine) RunID() int64 { return e.run.ID }

// RunName returns the run's name.
func (e *Engine) RunName() string { return e.run.Name }

// Config returns the run's resolved configuration.
func (e *Engine) Config() Config { return e.cfg }

// Drain asks the engine to stop taking new work: in-flight proposals and
// evaluations finish and are recorded, then Run returns. Safe to call from
// any goroutine, any number of times.
func (e *Engine) Drain(reason string) { e.sess.drain(reason) }

// Status returns the latest snapshot.
func (e *Engine) Status() Status {
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	return e.status
}

// Summary is how a Run call ended.
type Summary struct {
	RunID      int64
	RunName    string
	StopReason string
	StopDetail string
	Status     Status
}

// lossFloor is the floor of the track's data: the spec's, else this
// installation's.
func (e *Engine) lossFloor() float64 {
	if d := e.opts.Track.Data; d.LossFloor > 0 {
		return d.LossFloor
	}
	return e.opts.LossFloor
}
