package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/bench/fsr"
	"github.com/frontier-bench/frontier/internal/bench/scaffold"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/search"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// Store is what a bench run records into and reads; store.Store is one.
// The evolve scaffold needs the whole evolve.Store as well.
type Store interface {
	scaffold.Store
	evolve.Store
	CreateBenchRun(ctx context.Context, r *store.BenchRun) error
	UpdateBenchRun(ctx context.Context, r *store.BenchRun) error
	BenchRun(ctx context.Context, ref string) (*store.BenchRun, error)
	BenchRuns(ctx context.Context) ([]*store.BenchRun, error)
	InsertBenchAttempts(ctx context.Context, as []*store.BenchAttempt) error
	UpdateBenchAttempt(ctx context.Context, a *store.BenchAttempt) error
	BenchAttempts(ctx context.Context, runID int64) ([]*store.BenchAttempt, error)
	MarkLostBenchCalls(ctx context.Context, runID int64) (int64, error)
	BenchSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error)
	Evaluation(ctx context.Context, id int64) (*store.Evaluation, error)
	Evaluations(ctx context.Context, f store.Filter) ([]*store.Evaluation, error)
	Calibrations(ctx context.Context, suite, class string) ([]*store.Calibration, error)
	PutCalibration(ctx context.Context, c *store.Calibration) error
}

var _ Store = store.Store(nil)

// Tracks finds a track by name or folder; *track.Registry is one.
type Tracks interface {
	Get(name string) (*track.Spec, error)
}

// Env is what a bench run works with.
type Env struct {
	Store     Store
	Evaluator scaffold.Evaluator
	Tracks    Tracks
	// WorkDir holds what the evolve scaffold writes: each attempt's copy of
	// its track with the start program as the reference, and its prompt
	// template.
	WorkDir string
	// Redact removes secrets from prompts and answers before they are
	// stored; nil means llm.Redact.
	Redact func(string) string
	Log    *slog.Logger
	// Progress, when set, gets a line for each node and attempt.
	Progress func(line string)
	// LoadAvg, when set, reads the load average (1, 5 and 15 minutes);
	// nil reads /proc/loadavg.
	LoadAvg func() []float64
}

// Stop reasons of a bench run.
const (
	StopDone        = "done"        // every attempt finished
	StopUSD         = "usd"         // the dollar budget is spent
	StopTokens      = "tokens"      // the token budget is spent
	StopCalls       = "calls"       // the model budget's call limit
	StopDuration    = "duration"    // the run's active time
	StopInterrupted = "interrupted" // drained (Ctrl-C once), or canceled
	StopError       = "error"       // the run could not go on
)

// Bench runs one bench run. Create it with New or Resume, then call Run
// once.
type Bench struct {
	env    Env
	suite  *Suite
	cfg    Config
	run    *store.BenchRun
	model  evolve.Model
	budget *llm.Budget
	hints  HintLevels

	sessionStart time.Time
	activeBase   int64
	drain        *search.Drain
}

// New records a new bench run: its settings (resolved) and one attempt
// per task and seed. model is the one model that proposes (see
// evolve.OpenModels); budget is the run's model budget, whose limits the
// models' clients draw from (nil: one from cfg.Budget).
func New(ctx context.Context, env Env, s *Suite, cfg Config, name string, model evolve.Model, budget *llm.Budget) (*Bench, error) {
	if err := cfg.Resolve(s); err != nil {
		return nil, err
	}
	hash, err := s.Hash()
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	run := &store.BenchRun{Name: name, Suite: s.Name, SuiteHash: hash, Scaffold: cfg.Scaffold, Model: cfg.Model.Name,
		Hints: cfg.Hints, Config: doc}
	if err := env.Store.CreateBenchRun(ctx, run); err != nil {
		return nil, err
	}
	var as []*store.BenchAttempt
	for seed := 0; seed < cfg.Seeds; seed++ {
		for _, t := range cfg.Tasks {
			as = append(as, &store.BenchAttempt{RunID: run.ID, Position: len(as), Task: t, Seed: seed})
		}
	}
	if err := env.Store.InsertBenchAttempts(ctx, as); err != nil {
		return nil, err
	}
	return newBench(env, s, cfg, run, model, budget)
}

// Resume continues a bench run where it stood, with its own settings;
// only the budget may be raised (ov). The suite must be the one it
// started with, file for file.
func Resume(ctx context.Context, env Env, s *Suite, run *store.BenchRun, ov Budget, model evolve.Model, budget *llm.Budget) (*Bench, error) {
	cfg, err := ParseConfig(run.Config)
	if err != nil {
		return nil, err
	}
	hash, err := s.Hash()
	if err != nil {
		return nil, err
	}
	if hash != run.SuiteHash {
		return nil, fmt.Errorf("bench run %s: suite %s changed since the run started (its files differ): its scores would mix two suites; start a new run", run.Name, s.Name)
	}
	cfg.Budget = cfg.Budget.With(ov)
	if n, err := env.Store.MarkLostBenchCalls(ctx, run.ID); err != nil {
		return nil, err
	} else if n > 0 && env.Log != nil {
		env.Log.Info("bench: model calls cut off by the last session are marked lost", "run", run.Name, "calls", n)
	}
	return newBench(env, s, cfg, run, model, budget)
}

func newBench(env Env, s *Suite, cfg Config, run *store.BenchRun, model evolve.Model, budget *llm.Budget) (*Bench, error) {
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	if env.Redact == nil {
		env.Redact = llm.Redact
	}
	hints, err := ParseHints(cfg.Hints)
	if err != nil {
		return nil, err
	}
	if budget == nil {
		budget = llm.NewBudget(cfg.Budget.LLM(), llm.Spend{})
		if model.Kind == propose.KindLLM && model.Client != nil {
			model.Client = budget.Wrap(model.Client)
		}
	}
	return &Bench{env: env, suite: s, cfg: cfg, run: run, model: model, budget: budget, hints: hints, drain: search.NewDrain()}, nil
}

// Name is the run's name.
func (b *Bench) Name() string { return b.run.Name }

// Config is the run's resolved settings.
func (b *Bench) Config() Config { return b.cfg }

// Drain asks the run to stop after the node (or the evolve scaffold's
// running work) in progress. Safe from any goroutine.
func (b *Bench) Drain(reason string) { b.drain.Request(reason) }

// Summary is how a Run call ended.
type Summary struct {
	Run        *store.BenchRun
	Attempts   []*store.BenchAttempt
	StopReason string
	StopDetail string
}

// Run works through the run's attempts until every one is done or a
// budget, a drain or the context stops it; then records how it ended.
func (b *Bench) Run(ctx context.Context) (*Summary, error) {
	st := b.env.Store
	b.sessionStart, b.activeBase = time.Now(), b.run.ActiveMs
	b.run.Sessions++
	b.run.State, b.run.StopReason, b.run.StopDetail, b.run.FinishedAt = store.RunRunning, "", "", time.Time{}
	if err := st.UpdateBenchRun(ctx, b.run); err != nil {
		return nil, err
	}
	reason, detail, runErr := b.loop(ctx)
	b.run.ActiveMs = b.active()
	b.run.State, b.run.StopReason, b.run.StopDetail = store.RunStopped, reason, detail
	if runErr != nil {
		b.run.State, b.run.StopReason, b.run.StopDetail = store.RunFailed, StopError, runErr.Error()
	}
	b.run.FinishedAt = time.Now()
	if err := st.UpdateBenchRun(context.WithoutCancel(ctx), b.run); err != nil {
		return nil, errors.Join(runErr, err)
	}
	as, err := st.BenchAttempts(context.WithoutCancel(ctx), b.run.ID)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	return &Summary{Run: b.run, Attempts: as, StopReason: b.run.StopReason, StopDetail: b.run.StopDetail}, runErr
}

func (b *Bench) active() int64 { return b.activeBase + time.Since(b.sessionStart).Milliseconds() }

// loop runs attempts until none is left or something stops the run.
func (b *Bench) loop(ctx context.Context) (reason, detail string, err error) {
	for {
		if reason, detail := b.stopReason(ctx); reason != "" {
			return reason, detail, nil
		}
		as, err := b.env.Store.BenchAttempts(ctx, b.run.ID)
		if err != nil {
			return "", "", err
		}
		a, err := b.nextAttempt(ctx, as)
		if err != nil {
			return "", "", err
		}
		if a == nil {
			return StopDone, fmt.Sprintf("every attempt finished (%d)", len(as)), nil
		}
		stopped, err := b.attempt(ctx, a, as)
		if err != nil {
			if ctx.Err() != nil {
				return StopInterrupted, "canceled: the attempt in progress resumes where it stood", nil
			}
			return "", "", fmt.Errorf("task %s seed %d: %w", a.Task, a.Seed, err)
		}
		b.run.ActiveMs = b.active()
		if err := b.env.Store.UpdateBenchRun(ctx, b.run); err != nil {
			return "", "", err
		}
		if stopped != "" {
			r, d := b.stopReason(ctx)
			if r == "" {
				r, d = StopInterrupted, stopped
			}
			return r, d, nil
		}
	}
}

// stopReason says why the run must stop now, or "".
func (b *Bench) stopReason(ctx context.Context) (string, string) {
	switch r := b.drain.Reason(); {
	case r != "":
		return StopInterrupted, r
	case ctx.Err() != nil:
		return StopInterrupted, "canceled"
	}
	if err := b.budget.Err(); err != nil {
		var be *llm.BudgetError
		if errors.As(err, &be) {
			switch be.Budget {
			case "usd":
				return StopUSD, err.Error()
			case "tokens":
				return StopTokens, err.Error()
			}
		}
		return StopCalls, err.Error()
	}
	if d := b.cfg.Budget.MaxDuration; d > 0 && b.active() >= time.Duration(d).Milliseconds() {
		return StopDuration, fmt.Sprintf("the run was active for %s, its limit", time.Duration(d))
	}
	return "", ""
}

// nextAttempt is the attempt to work on: one left running by a past
// session first, then the next pending one in the run's order.
func (b *Bench) nextAttempt(ctx context.Context, as []*store.BenchAttempt) (*store.BenchAttempt, error) {
	var pending []*store.BenchAttempt
	for _, a := range as {
		switch a.State {
		case store.AttemptRunning:
			return a, nil
		case store.AttemptPending:
			pending = append(pending, a)
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	if b.cfg.Order != OrderLearnable {
		return pending[0], nil
	}
	hist, err := b.history(ctx)
	if err != nil {
		return nil, err
	}
	return pickLearnable(pending, hist), nil
}

// attempt runs (or resumes) one attempt to its end, and returns a reason
// when it stopped before.
func (b *Bench) attempt(ctx context.Context, a *store.BenchAttempt, all []*store.BenchAttempt) (string, error) {
	st := b.env.Store
	task, err := b.suite.Task(a.Task)
	if err != nil {
		return "", err
	}
	spec, err := b.trackOf(task)
	if err != nil {
		return "", err
	}
	rootMs := a.StartMs
	if a.State == store.AttemptPending {
		if rootMs, err = b.begin(ctx, a, task, all); err != nil {
			return "", err
		}
	} else if b.cfg.Cumulative {
		if prev := previousInChain(a, all); prev != nil {
			rootMs = prev.BestMs
		}
	}
	start, err := st.Program(ctx, a.StartHash)
	if err != nil {
		return "", err
	}
	hints, err := b.suite.HintsFor(task, b.hints)
	if err != nil {
		return "", err
	}
	b.progress("task %s seed %d: %s from %s (%s), goal %s", a.Task, a.Seed, b.cfg.Scaffold, task.Start, seconds(rootMs), seconds(a.GoalMs))
	k, err := kindOf(b.cfg.Scaffold)
	if err != nil {
		return "", err
	}
	res, err := k.search(ctx, b, attemptStart{a: a, spec: spec, start: start, rootMs: rootMs, hints: hints})
	if err != nil || res.stopped != "" {
		if res != nil {
			return res.stopped, err
		}
		return "", err
	}
	return b.finish(ctx, a, all, res, rootMs)
}

// trackOf is the track a task runs on: its start record's.
func (b *Bench) trackOf(task *Task) (*track.Spec, error) {
	r, err := b.suite.Record(task.Start)
	if err != nil {
		return nil, err
	}
	spec, err := b.env.Tracks.Get(b.suite.TrackOf(r))
	if err != nil {
		return nil, fmt.Errorf("the track of record %s: %w", r.ID, err)
	}
	return spec, nil
}

// scoreTimes are the times attempt a is scored with on machine class: its
// task's, except that a cumulative chain is scored against its first
// record's start.
func (b *Bench) scoreTimes(ctx context.Context, a *store.BenchAttempt, all []*store.BenchAttempt, class string) (taskTimes, error) {
	task, err := b.suite.Task(a.Task)
	if err != nil {
		return taskTimes{}, err
	}
	spec, err := b.trackOf(task)
	if err != nil {
		return taskTimes{}, err
	}
	tm, err := b.times(ctx, task, spec, class)
	if err != nil || !b.cfg.Cumulative {
		return tm, err
	}
	first, err := b.suite.Task(firstInChain(a, all).Task)
	if err != nil {
		return taskTimes{}, err
	}
	fspec, err := b.trackOf(first)
	if err != nil {
		return taskTimes{}, err
	}
	ft, err := b.times(ctx, first, fspec, class)
	if err != nil {
		return taskTimes{}, err
	}
	if ft.source != tm.source {
		// Never mix a calibrated and a published time in one score.
		fr, _ := b.suite.Record(first.Start)
		gr, _ := b.suite.Record(task.Goal)
		return taskTimes{start: fr.TimeMs, goal: gr.TimeMs, source: TimesPublished}, nil
	}
	tm.start = ft.start
	return tm, nil
}

// begin fixes what an attempt starts from: its start program (the task's
// record, or in a cumulative run the best program of the task before) and
// the times that score it.
func (b *Bench) begin(ctx context.Context, a *store.BenchAttempt, task *Task, all []*store.BenchAttempt) (float64, error) {
	st := b.env.Store
	tm, err := b.scoreTimes(ctx, a, all, "")
	if err != nil {
		return 0, err
	}
	a.StartMs, a.GoalMs, a.TimeSource = tm.start, tm.goal, tm.source
	rootMs := tm.start
	src, err := b.suite.Program(task.Start)
	if err != nil {
		return 0, err
	}
	if prev := previousInChain(a, all); b.cfg.Cumulative && prev != nil {
		if prev.State != store.AttemptDone {
			return 0, fmt.Errorf("cumulative: the task before (%s) has not finished", prev.Task)
		}
		// The best program of the task before, which may be its own
		// start (itself inherited).
		nodes, err := st.BenchNodes(ctx, prev.ID)
		if err != nil {
			return 0, err
		}
		best := bestProgram(nodes, prev.BestNodeID)
		if best == "" {
			best = prev.StartHash
		}
		if src, err = st.Program(ctx, best); err != nil {
			return 0, err
		}
		rootMs = prev.BestMs
	}
	if a.StartHash, err = st.PutProgram(ctx, src, ""); err != nil {
		return 0, err
	}
	a.State, a.StartedAt = store.AttemptRunning, time.Now()
	return rootMs, st.UpdateBenchAttempt(ctx, a)
}

// result is what a scaffold found in one attempt.
type result struct {
	stopped  string
	bestMs   float64 // 0: nothing acceptable beat the start
	bestNode int64
	bestHash string // the best program, "" when the start stayed the best
	// fastestMs is the fastest acceptable node's time, faster than the
	// start or not, of timed acceptable nodes.
	fastestMs  float64
	timed      int
	nodes      int
	acceptable int
	buggy      int
	costUSD    float64
	tokens     int64
	// evaluations are ids of the attempt's evaluations, for the machine's
	// fingerprint class.
	evaluations []int64
}

// tally counts one node of a search: its class, its time when it is
// acceptable and timed, and its evaluation. It says whether the node is
// the fastest acceptable one so far.
func (r *result) tally(v runs.Verdict, trainMs float64, evaluation int64) (fastest bool) {
	r.nodes++
	switch runs.ClassOf(v) {
	case runs.ClassAcceptable:
		r.acceptable++
		if trainMs > 0 {
			r.timed++
			if r.fastestMs == 0 || trainMs < r.fastestMs {
				r.fastestMs, fastest = trainMs, true
			}
		}
	case runs.Buggy:
		r.buggy++
	}
	if evaluation != 0 {
		r.evaluations = append(r.evaluations, evaluation)
	}
	return fastest
}

// startTimes are the times attempt a is scored with, as they stand (for a
// warning while its search runs; errors leave them empty).
func (b *Bench) startTimes(ctx context.Context, a *store.BenchAttempt) taskTimes {
	all, err := b.env.Store.BenchAttempts(ctx, b.run.ID)
	if err != nil {
		return taskTimes{source: a.TimeSource}
	}
	tm, err := b.scoreTimes(ctx, a, all, "")
	if err != nil {
		return taskTimes{source: a.TimeSource}
	}
	return tm
}

// finish scores an attempt and records it as done; it returns a reason
// when the run must stop before (a budget or a drain during a re-timing):
// the attempt then resumes where it stood.
func (b *Bench) finish(ctx context.Context, a *store.BenchAttempt, all []*store.BenchAttempt, res *result, rootMs float64) (string, error) {
	st := b.env.Store
	// The times of this machine's class, now that the attempt's own
	// evaluations say what it is.
	for _, id := range res.evaluations {
		ev, err := st.Evaluation(ctx, id)
		if err != nil || ev.FingerprintClass == "" {
			continue
		}
		tm, err := b.scoreTimes(ctx, a, all, ev.FingerprintClass)
		if err != nil {
			return "", err
		}
		a.StartMs, a.GoalMs, a.TimeSource = tm.start, tm.goal, tm.source
		break
	}
	if !b.cfg.Cumulative {
		// The start program is the record, whose time is the start's.
		rootMs = a.StartMs
	}
	best := rootMs
	a.BestNodeID, a.BestMs = 0, rootMs
	if res.bestMs > 0 && res.bestMs < best {
		best, a.BestNodeID, a.BestMs = res.bestMs, res.bestNode, res.bestMs
	}
	a.FSR = fsr.Of(a.StartMs, a.GoalMs, best)
	a.Nodes, a.Acceptable, a.Buggy, a.CostUSD, a.Tokens = res.nodes, res.acceptable, res.buggy, res.costUSD, res.tokens
	var notes []string
	bestText := seconds(best)
	if best < rootMs {
		bestText += ", a single timing"
	}
	if tm, err := b.scoreTimes(ctx, a, all, classOf(ctx, st, res.evaluations)); err == nil {
		if note := slowNote(b.suite.Name, tm, rootMs, res.fastestMs, res.timed, b.env.loadAvg()); note != "" {
			notes = append(notes, note)
			b.progress("  warning: %s", note)
			b.env.Log.Warn("bench: " + note)
		}
	}
	if b.cfg.Retime > 0 && res.bestHash != "" && best < rootMs {
		rt, err := b.retime(ctx, a, res.bestHash, rootMs)
		if err != nil || rt.stopped != "" {
			return rt.stopped, err
		}
		a.SingleFSR = a.FSR
		if rt.note != "" {
			notes = append(notes, rt.note)
		}
		if rt.ok {
			a.BestMs = rt.bestMs
			a.FSR = fsr.Of(a.StartMs, a.GoalMs, rt.bestMs)
			bestText = fmt.Sprintf("%s from %d runs of each in alternation with the start (%s once)", seconds(rt.bestMs), a.RetimeN, seconds(best))
		}
	}
	a.Notes = strings.Join(notes, "\n")
	a.State, a.FinishedAt = store.AttemptDone, time.Now()
	b.progress("task %s seed %d: FSR %.3f (best %s, start %s, goal %s, %s times)", a.Task, a.Seed, a.FSR, bestText,
		seconds(a.StartMs), seconds(a.GoalMs), a.TimeSource)
	return "", st.UpdateBenchAttempt(ctx, a)
}

// classOf is the machine class of the first of evaluations that has one;
// "" when none does.
func classOf(ctx context.Context, st Store, evaluations []int64) string {
	for _, id := range evaluations {
		if ev, err := st.Evaluation(ctx, id); err == nil && ev.FingerprintClass != "" {
			return ev.FingerprintClass
		}
	}
	return ""
}

func (b *Bench) progress(format string, args ...any) {
	if b.env.Progress != nil {
		b.env.Progress(fmt.Sprintf(format, args...))
	}
}

// previousInChain is the attempt of the same seed just before a, in a
// cumulative run; nil for the first of a chain.
func previousInChain(a *store.BenchAttempt, all []*store.BenchAttempt) *store.BenchAttempt {
	var prev *store.BenchAttempt
	for _, o := range all {
		if o.Seed == a.Seed && o.Position < a.Position && (prev == nil || o.Position > prev.Position) {
			prev = o
		}
	}
	return prev
}

func firstInChain(a *store.BenchAttempt, all []*store.BenchAttempt) *store.BenchAttempt {
	first := a
	for _, o := range all {
		if o.Seed == a.Seed && o.Position < first.Position {
			first = o
		}
	}
	return first
}

// bestProgram is the program of an attempt's best node, "" when the start
// stayed the best.
func bestProgram(nodes []*store.BenchNode, id int64) string {
	for _, n := range nodes {
		if n.ID == id && id != 0 {
			return n.ProgramHash
		}
	}
	return ""
}

func programName(spec *track.Spec) string {
	if spec.Reference == "" {
		return "train.py"
	}
	return spec.Reference
}

func joinReason(r, d string) string {
	if r == "" {
		return ""
	}
	return r + ": " + d
}

func nodeText(n *store.BenchNode) string {
	switch n.Verdict {
	case runs.Acceptable:
		return fmt.Sprintf("acceptable, %s, val loss %.4f", seconds(n.TrainTimeMs), n.ValLoss)
	case runs.LossTooHigh:
		return fmt.Sprintf("loss too high (%.4f)", n.ValLoss)
	}
	if n.Reason != "" {
		return string(n.Verdict) + ": " + firstLine(n.Reason)
	}
	if n.Error != "" {
		return string(n.Verdict) + ": " + firstLine(n.Error)
	}
	return string(n.Verdict)
}

func seconds(ms float64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	if len(s) > 160 {
		return s[:157] + "..."
	}
	return s
}

var _ scaffold.Evaluator = (*eval.Evaluator)(nil)

// Spent sums what a bench run spent on models: the calls of its nodes and
// those of its evolve scaffold's runs. A resumed run's budget starts from
// it.
func Spent(ctx context.Context, st Store, runID int64) (usd float64, tokens, calls int64, err error) {
	usd, tokens, calls, err = st.BenchSpend(ctx, runID)
	if err != nil {
		return 0, 0, 0, err
	}
	as, err := st.BenchAttempts(ctx, runID)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, a := range as {
		if a.EvolveRun == "" {
			continue
		}
		r, err := st.Run(ctx, a.EvolveRun)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return 0, 0, 0, err
		}
		u, t, c, err := st.RunSpend(ctx, r.ID)
		if err != nil {
			return 0, 0, 0, err
		}
		usd, tokens, calls = usd+u, tokens+t, calls+c
	}
	return usd, tokens, calls, nil
}

// NewBudget returns a bench run's model budget: the frontier.yaml llm
// budget with the run's own limits in its place, having spent what the
// run (runID; 0 for a new one) spent already.
func NewBudget(ctx context.Context, st Store, runID int64, b Budget, llmBudget llm.BudgetConfig) (*llm.Budget, error) {
	var spent llm.Spend
	if runID != 0 {
		usd, tokens, calls, err := Spent(ctx, st, runID)
		if err != nil {
			return nil, err
		}
		spent = llm.Spend{USD: usd, Tokens: tokens, Calls: calls}
	}
	return llm.NewBudget(llmBudget.Limited(b.MaxUSD, b.MaxTokens), spent), nil
}
