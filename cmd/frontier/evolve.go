package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/provider"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// evolveOptions are the inputs of "frontier evolve".
type evolveOptions struct {
	track          string
	name           string
	resume         string
	proposer       string
	models         []string
	replay         string
	iterations     int
	evaluations    int
	duration       time.Duration
	maxUSD         float64
	maxTokens      int64
	slots          int
	llmConcurrency int
	seed           uint64
	quiet          bool
	confirm        int

	// signals, when set, replaces the process's SIGINT/SIGTERM (tests).
	signals <-chan os.Signal
	// onStatus, when set, also receives every status (tests).
	onStatus func(evolve.Status)
}

func newEvolveCmd(g *globals) *cobra.Command {
	var o evolveOptions
	cmd := &cobra.Command{
		Use:   "evolve",
		Short: "Search for faster training programs: LLM-driven evolution on a track",
		Long: `Evolve runs the evolutionary search on a track: islands of programs, an elite
archive, prompts built from the best and from diverse programs with their
telemetry, models that answer with SEARCH/REPLACE edits (or the mutate
baseline), a fast check with a fix loop, and full evaluations by frontier's
harness. Everything is stored in the database as it happens.

Settings come from the evolve: section of frontier.yaml (docs/evolve.md);
the flags below override them. The run ends cleanly on the first budget
reached and says which. Ctrl-C once drains (no new work; running
evaluations finish); twice aborts and kills every training process. A run
that was stopped or killed continues with --resume RUN, with the same
state; budgets count totals, so raise the one that stopped it.

Without models configured (llm: in frontier.yaml) the mutate baseline
proposes: it perturbs hyperparameters without a model.`,
		Example: `  frontier evolve --track tiny --iterations 30
  frontier evolve --track tiny --model gpt5 --model claude --max-usd 20
  frontier evolve --track tiny --proposer mutate --duration 30m
  frontier evolve --resume run-3 --iterations 60`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEvolve(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.track, "track", "tiny", "track to evolve on (a name or a track folder)")
	f.StringVar(&o.name, "name", "", "name of the new run (default run-ID)")
	f.StringVar(&o.resume, "resume", "", "continue run `RUN` (id or name) where it stood")
	f.StringVar(&o.proposer, "proposer", "", "auto, llm or mutate (default: evolve.proposer, auto)")
	f.StringSliceVar(&o.models, "model", nil, "model of the ensemble, by name under llm.models (repeat for several)")
	f.StringVar(&o.replay, "replay", "", "replay recorded answers from a JSONL `FILE` instead of asking models")
	f.IntVar(&o.iterations, "iterations", 0, "total iterations (budget.max_iterations)")
	f.IntVar(&o.evaluations, "evaluations", 0, "total full evaluations (budget.max_evaluations)")
	f.DurationVar(&o.duration, "duration", 0, "total active time, e.g. 2h (budget.max_duration)")
	f.Float64Var(&o.maxUSD, "max-usd", 0, "model spending limit in US dollars (budget.max_usd)")
	f.Int64Var(&o.maxTokens, "max-tokens", 0, "model token limit, input plus output (budget.max_tokens)")
	f.IntVar(&o.slots, "slots", 0, "evaluations at once (evolve.slots)")
	f.IntVar(&o.llmConcurrency, "llm-concurrency", 0, "model calls at once (evolve.llm_concurrency)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the search's random choices (evolve.seed)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress display")
	f.IntVar(&o.confirm, "confirm", 0, "when the run ends, re-time its record against the reference `N` times each, in alternation (see runs confirm); exit 8 when the speedup is not confirmed")
	return cmd
}

// budgetOverrides returns the budget flags as a BudgetConfig.
func (o evolveOptions) budgetOverrides() evolve.BudgetConfig {
	return evolve.BudgetConfig{MaxIterations: o.iterations, MaxEvaluations: o.evaluations,
		MaxDuration: llm.Duration(o.duration), MaxUSD: o.maxUSD, MaxTokens: o.maxTokens}
}

func runEvolve(ctx context.Context, g *globals, o evolveOptions) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	if o.confirm == 1 || o.confirm < 0 {
		return usage(fmt.Errorf("--confirm %d: a comparison needs at least 2 runs of each program", o.confirm))
	}
	if o.resume != "" && (o.name != "" || o.seed != 0 || o.proposer != "" || len(o.models) > 0 || o.replay != "") {
		return usage(errors.New("evolve --resume continues a run with its own settings: only budgets, --slots and --llm-concurrency may change"))
	}
	env, err := openEnvironment(ctx, g, cfg)
	if err != nil {
		return err
	}
	defer env.Close()
	sum, err := evolveRun(ctx, g, o, cfg, env)
	if err != nil {
		return err
	}
	printEvolveSummary(g.stdout, sum)
	switch sum.StopReason {
	case evolve.StopInterrupted, evolve.StopAborted:
		return interruptedError{}
	case evolve.StopReferenceFails, evolve.StopLLMFailures, evolve.StopError:
		return fmt.Errorf("the run stopped: %s", sum.StopDetail)
	}
	if o.confirm > 0 {
		fmt.Fprintln(g.stdout)
		err := confirmRecord(ctx, g, cfg, env, sum.RunName, confirmOptions{repeats: o.confirm, quiet: o.quiet})
		if errors.Is(err, errNothingToConfirm) {
			fmt.Fprintf(g.stdout, "confirm: %v\n", err)
			return nil
		}
		return err
	}
	return nil
}

// evolveRun starts or resumes a run and runs it to its end, with signal
// handling and the progress display. It returns the run's summary.
func evolveRun(ctx context.Context, g *globals, o evolveOptions, cfg *config.Config, env *environment) (*evolve.Summary, error) {
	st := env.store
	var (
		spec    *track.Spec
		evCfg   evolve.Config
		run     *store.Run
		runID   int64
		models  []evolve.Model
		budget  *llm.Budget
		err     error
		resumed = o.resume != ""
	)
	if resumed {
		run, evCfg, err = evolve.Load(ctx, st, o.resume)
		if err != nil {
			return nil, usage(err)
		}
		spec, err = registry(cfg).Get(run.Track)
		if err != nil {
			return nil, usage(fmt.Errorf("run %s is on track %s: %w", run.Name, run.Track, err))
		}
		runID = run.ID
	} else {
		evCfg = cfg.Evolve
		if err := evCfg.Validate(); err != nil {
			return nil, usage(fmt.Errorf("config %s: %w", cfg.Path, err))
		}
		spec, err = registry(cfg).Get(o.track)
		if err != nil {
			return nil, usage(err)
		}
		applyEvolveFlags(&evCfg, o)
	}
	// The run's budget with the flags applied, for the model budget.
	ov := o.budgetOverrides()
	budget, err = evolve.NewBudget(ctx, st, runID, evCfg.Budget.With(ov), cfg.LLM.Budget)
	if err != nil {
		return nil, err
	}
	if resumed {
		models, err = resumeModels(g, cfg, run, budget)
	} else {
		models, err = openModels(g, cfg, evCfg, o, budget)
	}
	if err != nil {
		return nil, err
	}
	var lw *liveWriter
	logger := g.log
	if !o.quiet && isTerminal(g.stderr) {
		lw = &liveWriter{w: g.stderr}
		logger = slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: logLevel(g)}))
	}
	prog := &evolveProgress{live: lw, log: logger, quiet: o.quiet, every: 30 * time.Second, extra: o.onStatus}
	redactor := cfg.LLM.Redactor(os.LookupEnv)
	opts := evolve.Options{
		Store: st, Track: spec, Evaluator: env.eval, Models: models, Log: logger,
		Redact: redactor.Redact, OnStatus: prog.show,
	}
	// The machine's GPUs are the evaluator's pool: gpus: in frontier.yaml,
	// else frontier's CUDA_VISIBLE_DEVICES, else what PyTorch sees; the
	// engine sizes its slots by the devices evaluations can have.
	if spec.Hardware.Device == "cuda" && env.eval.GPUs != nil {
		opts.MachineGPUs = env.eval.GPUs.Size()
	}
	var e *evolve.Engine
	if resumed {
		e, err = evolve.Resume(ctx, opts, run, evolve.Overrides{Budget: ov, Slots: o.slots, LLMConcurrency: o.llmConcurrency})
	} else {
		e, err = evolve.New(ctx, opts, evCfg, o.name)
	}
	if err != nil {
		return nil, usage(err)
	}
	logger.Info("evolve: run", "id", e.RunID(), "name", e.RunName(), "track", spec.Name, "resumed", resumed)

	// Signals: the first drains, the second aborts. main's context is
	// canceled on the first signal too; that drains as well.
	runCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	sigs := o.signals
	if sigs == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(ch)
		sigs = ch
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		n := 0
		parent := ctx.Done()
		for {
			select {
			case <-done:
				return
			case <-parent:
				// Not counted: the same Ctrl-C also arrives on sigs.
				parent = nil
				e.Drain("Ctrl-C: no new work started; running evaluations finished")
			case <-sigs:
				n++
				if n == 1 {
					fmt.Fprintln(lineStart(g.stderr, lw), "frontier: draining: no new work starts; running evaluations finish. Press Ctrl-C again to abort.")
					e.Drain("Ctrl-C: no new work started; running evaluations finished")
				} else {
					fmt.Fprintln(lineStart(g.stderr, lw), "frontier: aborting: stopping every training process; the run can be resumed.")
					abort()
				}
			}
		}
	}()
	sum, err := e.Run(runCtx)
	if lw != nil {
		lw.finish()
	}
	if err != nil {
		if sum != nil {
			printEvolveSummary(g.stdout, sum)
		}
		return nil, err
	}
	return sum, nil
}

// applyEvolveFlags puts the flags of a new run into its configuration.
func applyEvolveFlags(c *evolve.Config, o evolveOptions) {
	c.Budget = c.Budget.With(o.budgetOverrides())
	if o.slots > 0 {
		c.Slots = o.slots
	}
	if o.llmConcurrency > 0 {
		c.LLMConcurrency = o.llmConcurrency
	}
	if o.seed != 0 {
		c.Seed = o.seed
	}
	if o.proposer != "" {
		c.Proposer = o.proposer
	}
	if len(o.models) > 0 {
		c.Models = nil
		for _, m := range o.models {
			c.Models = append(c.Models, evolve.ModelWeight{Name: m})
		}
	}
}

// openModels builds the ensemble of a new run: the replay file, the mutate
// baseline, or the configured models (those whose key is available, in
// auto mode).
func openModels(g *globals, cfg *config.Config, ev evolve.Config, o evolveOptions, budget *llm.Budget) ([]evolve.Model, error) {
	if o.replay != "" {
		p, err := propose.OpenReplay(o.replay)
		if err != nil {
			return nil, usage(err)
		}
		return []evolve.Model{{Name: "replay", Kind: propose.KindReplay, Proposer: p, Spec: o.replay}}, nil
	}
	mode := ev.Proposer
	if mode == "" {
		mode = evolve.ProposerAuto
	}
	switch mode {
	case evolve.ProposerAuto, evolve.ProposerLLM, evolve.ProposerMutate:
	default:
		return nil, usage(fmt.Errorf("--proposer %q: use auto, llm or mutate", mode))
	}
	if mode == evolve.ProposerMutate {
		return mutateModels(), nil
	}
	wanted := ev.Models
	if len(wanted) == 0 {
		for _, m := range cfg.LLM.Models {
			wanted = append(wanted, evolve.ModelWeight{Name: m.Name, Weight: m.Weight})
			if m.Name == "" {
				wanted[len(wanted)-1].Name = m.Spec
			}
		}
	}
	if len(wanted) == 0 {
		if mode == evolve.ProposerLLM {
			return nil, usage(errors.New("evolve: proposer llm but no model is configured: add one under llm.models in frontier.yaml (docs/llm.md), or use --proposer mutate"))
		}
		g.log.Info("evolve: no model is configured (llm.models); the mutate baseline proposes")
		return mutateModels(), nil
	}
	set, err := provider.New(cfg.LLM, provider.Options{Budget: budget, Log: g.log})
	if err != nil {
		return nil, usage(err)
	}
	var out []evolve.Model
	var skipped []string
	for _, w := range wanted {
		m, err := cfg.LLM.Model(w.Name)
		if err != nil {
			return nil, usage(fmt.Errorf("evolve.models: %w", err))
		}
		if _, err := m.APIKey(os.LookupEnv); err != nil {
			if mode == evolve.ProposerLLM || len(o.models) > 0 {
				return nil, usage(fmt.Errorf("model %s: %w", m.Name, err))
			}
			skipped = append(skipped, fmt.Sprintf("%s (%v)", m.Name, err))
			continue
		}
		weight := w.Weight
		if weight == 0 {
			weight = m.Config.Weight
		}
		out = append(out, evolve.Model{Name: m.Name, Kind: propose.KindLLM, Client: set, Weight: weight, Spec: m.Config.Spec})
	}
	if len(skipped) > 0 {
		g.log.Warn("evolve: models left out for lack of an API key", "models", strings.Join(skipped, "; "))
	}
	if len(out) == 0 {
		g.log.Warn("evolve: no configured model has its API key; the mutate baseline proposes")
		return mutateModels(), nil
	}
	return out, nil
}

func mutateModels() []evolve.Model {
	return []evolve.Model{{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate(), Weight: 1}}
}

// resumeModels reopens the ensemble a run was started with.
func resumeModels(g *globals, cfg *config.Config, run *store.Run, budget *llm.Budget) ([]evolve.Model, error) {
	recs, err := evolve.RunModels(run)
	if err != nil {
		return nil, err
	}
	var set *provider.Set
	var out []evolve.Model
	for _, r := range recs {
		switch propose.Kind(r.Kind) {
		case propose.KindMutate:
			out = append(out, evolve.Model{Name: r.Name, Kind: propose.KindMutate, Proposer: propose.NewMutate(), Weight: r.Weight})
		case propose.KindReplay:
			p, err := propose.OpenReplay(r.Spec)
			if err != nil {
				return nil, usage(fmt.Errorf("run %s replays %s: %w", run.Name, r.Spec, err))
			}
			out = append(out, evolve.Model{Name: r.Name, Kind: propose.KindReplay, Proposer: p, Weight: r.Weight, Spec: r.Spec})
		default:
			if set == nil {
				if set, err = provider.New(cfg.LLM, provider.Options{Budget: budget, Log: g.log}); err != nil {
					return nil, usage(err)
				}
			}
			m, err := cfg.LLM.Model(r.Name)
			if err != nil {
				g.log.Warn("evolve: a model of the run is no longer configured; its children go to the others", "model", r.Name, "err", err)
				continue
			}
			if _, err := m.APIKey(os.LookupEnv); err != nil {
				return nil, usage(fmt.Errorf("model %s of run %s: %w", r.Name, run.Name, err))
			}
			out = append(out, evolve.Model{Name: r.Name, Kind: propose.KindLLM, Client: set, Weight: r.Weight, Spec: r.Spec})
		}
	}
	if len(out) == 0 {
		return nil, usage(fmt.Errorf("run %s: none of its models (%d) is configured any more", run.Name, len(recs)))
	}
	return out, nil
}

// logLevel returns the level of the --log-level flag.
func logLevel(g *globals) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(g.logLevel)); err != nil {
		return slog.LevelInfo
	}
	return l
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// liveWriter owns a terminal: one status line redrawn in place, with log
// lines printed above it.
type liveWriter struct {
	mu     sync.Mutex
	w      io.Writer
	status string
}

// Write prints a log line above the status line.
func (l *liveWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprint(l.w, "\r\x1b[K")
	n, err := l.w.Write(p)
	if l.status != "" {
		fmt.Fprint(l.w, l.status)
	}
	return n, err
}

func (l *liveWriter) set(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status = s
	fmt.Fprint(l.w, "\r\x1b[K"+s)
}

func (l *liveWriter) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.status != "" {
		fmt.Fprintln(l.w)
		l.status = ""
	}
}

// lineStart returns a writer for a message line: it clears the live status
// line first when there is one.
func lineStart(w io.Writer, lw *liveWriter) io.Writer {
	if lw != nil {
		return lw
	}
	return w
}

// evolveProgress shows the engine's status: a live line on a terminal,
// else a log line when the counts change (at most every `every`).
type evolveProgress struct {
	mu       sync.Mutex
	live     *liveWriter
	log      *slog.Logger
	quiet    bool
	every    time.Duration
	last     time.Time
	lastLine string
	lastKey  string
	extra    func(evolve.Status)
}

func (p *evolveProgress) show(s evolve.Status) {
	if p.extra != nil {
		p.extra(s)
	}
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := statusLine(s)
	if p.live != nil {
		if line != p.lastLine || time.Since(p.last) > time.Second {
			p.live.set(line)
			p.lastLine, p.last = line, time.Now()
		}
		return
	}
	key := fmt.Sprintf("%d/%d/%d/%d/%d/%d", s.Iteration, s.Acceptable, s.LossTooHigh, s.Buggy, s.Duplicates, s.Evaluations)
	if key == p.lastKey && time.Since(p.last) < 5*p.every {
		return
	}
	if time.Since(p.last) < p.every && s.StopReason == "" {
		return
	}
	p.last, p.lastKey = time.Now(), key
	attrs := []any{"run", s.RunName, "iteration", iterText(s), "slots", fmt.Sprintf("%d/%d", s.SlotsBusy, s.Slots),
		"proposing", s.ProposalsInFlight, "queued", s.Queued, "acceptable", s.Acceptable, "loss_too_high", s.LossTooHigh,
		"buggy", s.Buggy, "duplicates", s.Duplicates}
	if s.BestTimeMs > 0 {
		attrs = append(attrs, "best_time", secsText(s.BestTimeMs), "reference_time", secsText(s.ReferenceTimeMs))
	}
	if s.BestLoss > 0 {
		attrs = append(attrs, "best_loss", fmt.Sprintf("%.4f", s.BestLoss))
	}
	attrs = append(attrs, "usd", fmt.Sprintf("%.4f", s.USD), "elapsed", s.Elapsed.Round(time.Second).String())
	p.log.Info("evolve: progress", attrs...)
}

func iterText(s evolve.Status) string {
	if s.MaxIterations > 0 {
		return fmt.Sprintf("%d/%d", s.Iteration, s.MaxIterations)
	}
	return fmt.Sprint(s.Iteration)
}

func secsText(ms float64) string { return fmt.Sprintf("%.2fs", ms/1000) }

// statusLine is the live line: iteration, slots, proposals, counts, the
// record against the reference, the best loss and the spend.
func statusLine(s evolve.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  it %s  slots %d/%d  llm %d  queue %d  |  acc %d  high %d  bug %d  dup %d",
		s.RunName, iterText(s), s.SlotsBusy, s.Slots, s.ProposalsInFlight, s.Queued, s.Acceptable, s.LossTooHigh, s.Buggy, s.Duplicates)
	if s.BestTimeMs > 0 {
		fmt.Fprintf(&b, "  |  best %s", secsText(s.BestTimeMs))
		if s.ReferenceTimeMs > 0 {
			fmt.Fprintf(&b, " (ref %s, %+.1f%%)", secsText(s.ReferenceTimeMs), 100*(s.BestTimeMs-s.ReferenceTimeMs)/s.ReferenceTimeMs)
		}
	}
	if s.BestLoss > 0 {
		fmt.Fprintf(&b, "  loss %.4f", s.BestLoss)
	}
	fmt.Fprintf(&b, "  |  $%.2f  %s", s.USD, s.Elapsed.Round(time.Second))
	if s.Draining {
		b.WriteString("  [draining]")
	}
	return b.String()
}

// printEvolveSummary prints how a session ended and where to look next.
func printEvolveSummary(w io.Writer, s *evolve.Summary) {
	st := s.Status
	fmt.Fprintf(w, "run %s (#%d) stopped: %s: %s\n", s.RunName, s.RunID, s.StopReason, s.StopDetail)
	fmt.Fprintf(w, "  iterations %d, full evaluations %d: %d acceptable, %d loss too high, %d buggy, %d duplicates",
		st.Iteration, st.Evaluations, st.Acceptable, st.LossTooHigh, st.Buggy, st.Duplicates)
	if st.NoProposal > 0 {
		fmt.Fprintf(w, ", %d without a proposal", st.NoProposal)
	}
	fmt.Fprintln(w)
	switch {
	case st.BestTimeMs > 0 && st.ReferenceTimeMs > 0 && st.BestTimeID != 0 && st.BestTimeMs < st.ReferenceTimeMs:
		fmt.Fprintf(w, "  record: #%d trains to the target in %s, %.1f%% faster than the reference (%s)\n",
			st.BestTimeID, secsText(st.BestTimeMs), 100*(1-st.BestTimeMs/st.ReferenceTimeMs), secsText(st.ReferenceTimeMs))
	case st.ReferenceTimeMs > 0:
		fmt.Fprintf(w, "  no acceptable program was faster than the reference (%s)\n", secsText(st.ReferenceTimeMs))
	}
	if st.USD > 0 || st.Tokens > 0 {
		fmt.Fprintf(w, "  models: $%.4f, %d tokens\n", st.USD, st.Tokens)
	}
	fmt.Fprintf(w, "  more: frontier runs show %s    best program: frontier runs best %s    report: frontier report %s\n",
		s.RunName, s.RunName, s.RunName)
	if s.StopReason != evolve.StopReferenceFails && s.StopReason != evolve.StopError {
		fmt.Fprintf(w, "  continue: frontier evolve --resume %s (raise the budget that stopped it)\n", s.RunName)
	}
}
