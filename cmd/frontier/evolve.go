package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/provider"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// evolveOptions are the inputs of "frontier evolve".
type evolveOptions struct {
	limit          time.Duration
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
	asJSON         bool
	// trackSet: --track was given (a resumed run then reads its track
	// there, for a folder that moved).
	trackSet bool

	// signals, when set, replaces the process's SIGINT/SIGTERM (tests).
	signals <-chan os.Signal
	// onStatus, when set, also receives every status (the demo's clock,
	// tests).
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
			o.trackSet = cmd.Flags().Changed("track")
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
	f.IntVar(&o.evaluations, "evaluations", 0, "total full evaluations and confirmation series runs (budget.max_evaluations)")
	f.DurationVar(&o.duration, "duration", 0, "total active time, e.g. 2h (budget.max_duration)")
	limitFlag(cmd, &o.limit)
	f.Float64Var(&o.maxUSD, "max-usd", 0, "model spending limit in US dollars (budget.max_usd)")
	f.Int64Var(&o.maxTokens, "max-tokens", 0, "model token limit, input plus output (budget.max_tokens)")
	f.IntVar(&o.slots, "slots", 0, "evaluations at once (evolve.slots)")
	f.IntVar(&o.llmConcurrency, "llm-concurrency", 0, "model calls at once (evolve.llm_concurrency)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the search's random choices (evolve.seed)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress display")
	f.BoolVar(&o.asJSON, "json", false, "print how the session ended and where the run stands as JSON (and the confirmation, with --confirm)")
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
	if o.name != "" {
		// Refused before the environment opens: a bad name should not
		// cost a Python probe and a store.
		if err := store.CheckRunName(o.name); err != nil {
			return usage(fmt.Errorf("--name: %w", err))
		}
	}
	if err := checkLimit(o.limit); err != nil {
		return err
	}
	env, err := openEnvironment(ctx, g, cfg)
	if err != nil {
		return err
	}
	defer env.Close()
	env.eval.FullLimit = o.limit
	sum, err := evolveRun(ctx, g, o, cfg, env)
	if err != nil {
		return err
	}
	if o.asJSON {
		return evolveJSONResult(ctx, g, cfg, env, sum, o)
	}
	printEvolveSummary(g.stdout, sum)
	if err := stopError(sum); err != nil {
		return err
	}
	if o.confirm > 0 {
		fmt.Fprintln(g.stdout)
		err := confirmRecord(ctx, g, cfg, env, sum.RunName, confirmOptions{repeats: o.confirm, quiet: o.quiet, seed: 1})
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
		claim   = newRunClaim()
	)
	defer claim.Release()
	if resumed {
		run, evCfg, err = evolve.Load(ctx, st, o.resume)
		if err != nil {
			return nil, usage(err)
		}
		override := ""
		if o.trackSet {
			override = o.track
		}
		if spec, err = runTrack(cfg, run, override); err != nil {
			return nil, err
		}
		runID = run.ID
		// Before Resume changes anything: a run that a live process
		// runs (here or on another machine) is that process's.
		if err := claim.hold(ctx, st, run.ID); err != nil {
			return nil, err
		}
	} else {
		evCfg = cfg.Evolve
		if err := evCfg.Validate(); err != nil {
			return nil, usage(fmt.Errorf("config %s: %w", cfg.Path, err))
		}
		spec, err = lookupTrack(cfg, o.track)
		if err != nil {
			return nil, err
		}
		applyEvolveFlags(&evCfg, o)
	}
	// The run's budget with the flags applied, for the model budget.
	ov := o.budgetOverrides()
	budget, err = evolve.NewBudget(ctx, st, runID, evCfg.Budget.With(ov), cfg.LLM.Budget)
	if err != nil {
		return nil, err
	}
	recs, ofRun := []evolve.ModelsRecord(nil), ""
	if resumed {
		if recs, err = run.ModelList(); err != nil {
			return nil, err
		}
		ofRun = run.Name
	} else {
		recs, err = evolve.ChooseModels(cfg.LLM, evolve.ModelChoice{Proposer: evCfg.Proposer, Models: evCfg.Models,
			Named: len(o.models) > 0, Replay: o.replay}, os.LookupEnv, g.log)
		if err != nil {
			return nil, usage(err)
		}
	}
	models, err = evolve.OpenModels(recs, cfg.LLM, provider.Options{Budget: budget, Log: g.log}, ofRun, g.log)
	if err != nil {
		return nil, usage(err)
	}
	var lw *liveWriter
	logger := g.log
	if !o.quiet && isTerminal(g.stderr) {
		lw = &liveWriter{w: g.stderr}
		h, err := g.logHandler(lw)
		if err != nil {
			return nil, err
		}
		logger = slog.New(h)
	}
	prog := &evolveProgress{live: lw, log: logger, quiet: o.quiet, every: 30 * time.Second, extra: o.onStatus}
	env.eval.Progress = prog.evalLine
	defer func() { env.eval.Progress = nil }()
	redactor := cfg.LLM.Redactor(os.LookupEnv)
	opts := evolve.Options{
		Store: st, Track: spec, Evaluator: env.eval, Models: models, Log: logger,
		Redact: redactor.Redact, OnStatus: prog.show, Budget: budget, RunsDir: env.eval.RunsDir,
	}
	if spec.Data.Builtin != "" {
		// The floor of built-in data is this installation's (the corpus is
		// built here on first use, before the reference runs).
		files, err := env.eval.Data.Resolve(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("data of track %s: %w", spec.Name, err)
		}
		opts.LossFloor = files.LossFloor
	}
	// The machine's GPUs are the evaluator's pool: gpus: in frontier.yaml,
	// else frontier's CUDA_VISIBLE_DEVICES, else what PyTorch sees; the
	// engine sizes its slots by the devices evaluations can have.
	if spec.Hardware.Device == "cuda" && env.gpus != nil {
		opts.MachineGPUs = env.gpus.Size()
	}
	opts.ExecutorSlots = env.slots
	var e *evolve.Engine
	if resumed {
		e, err = evolve.Resume(ctx, opts, run, evolve.Overrides{Budget: ov, Slots: o.slots, LLMConcurrency: o.llmConcurrency})
	} else {
		e, err = evolve.New(ctx, opts, evCfg, o.name)
	}
	if err != nil {
		return nil, usage(err)
	}
	if !resumed {
		if err := claim.hold(ctx, st, e.RunID()); err != nil {
			return nil, err
		}
	}
	logger.Info("evolve: run", "id", e.RunID(), "name", e.RunName(), "track", spec.Name, "resumed", resumed)

	runCtx, stopSignals := drainOnSignals(ctx, o.signals, e, evolveDrainWords, lineStart(g.stderr, lw))
	defer stopSignals()
	runCtx, unwatch := claim.watch(runCtx)
	defer unwatch()
	sum, err := e.Run(runCtx)
	if lw != nil {
		lw.finish()
	}
	if lost := claim.err(); lost != nil {
		if sum != nil {
			printEvolveSummary(g.stdout, sum)
		}
		return nil, fmt.Errorf("stopped: another process took the run over while this one stalled past its claim: %w", lost)
	}
	if err != nil {
		if sum != nil && !o.asJSON {
			printEvolveSummary(g.stdout, sum)
		}
		return nil, err
	}
	return sum, nil
}

// stopError is what a session that stopped on sum returns: nil when it
// ended on a budget.
func stopError(sum *evolve.Summary) error {
	switch sum.StopReason {
	case evolve.StopInterrupted, evolve.StopAborted:
		return interruptedError{}
	case evolve.StopReferenceFails, evolve.StopLLMFailures, evolve.StopError:
		return fmt.Errorf("the run stopped: %s", sum.StopDetail)
	case evolve.StopDiskFull:
		return fmt.Errorf("the run stopped, the disk is full: %s; free some space, then frontier evolve --resume %s", sum.StopDetail, sum.RunName)
	}
	return nil
}

// evolveJSON is evolve --json, and the search of demo --json: where the
// run stands once the session ended, why it ended, the engine's counts
// over the run, the confirmation (--confirm) and what to run next.
type evolveJSON struct {
	Run          runview.RunRow    `json:"run"`
	StopReason   string            `json:"stop_reason"`
	StopDetail   string            `json:"stop_detail"`
	Iterations   int               `json:"iterations"`
	Evaluations  int               `json:"evaluations"`
	Acceptable   int               `json:"acceptable"`
	LossTooHigh  int               `json:"loss_too_high"`
	Buggy        int               `json:"buggy"`
	Duplicates   int               `json:"duplicates"`
	NoProposal   int               `json:"no_proposal"`
	Confirmation *confirmationJSON `json:"confirmation,omitempty"`
	Next         []string          `json:"next"`
}

// searchJSON reads back the run a session ended and describes it.
func searchJSON(ctx context.Context, st store.Store, sum *evolve.Summary) (*evolveJSON, error) {
	s, err := summarizeRun(ctx, st, sum.RunName)
	if err != nil {
		return nil, err
	}
	c := sum.Status
	out := &evolveJSON{Run: s.Row(time.Now()), StopReason: sum.StopReason, StopDetail: sum.StopDetail, Iterations: c.Iteration,
		Evaluations: c.Evaluations, Acceptable: c.Acceptable, LossTooHigh: c.LossTooHigh, Buggy: c.Buggy, Duplicates: c.Duplicates,
		NoProposal: c.NoProposal, Next: []string{"frontier runs show " + sum.RunName, "frontier runs best " + sum.RunName, "frontier report " + sum.RunName}}
	if c.FastestID != 0 && c.FastestClaim != string(runs.ClaimRejected) && c.FastestClaim != string(runs.ClaimFailed) {
		out.Next = append(out.Next, "frontier runs confirm "+sum.RunName)
	}
	if sum.StopReason != evolve.StopReferenceFails && sum.StopReason != evolve.StopError {
		out.Next = append(out.Next, "frontier evolve --resume "+sum.RunName)
	}
	return out, nil
}

// evolveJSONResult finishes evolve --json: the confirmation when asked
// for, then one JSON document, then the exit code the text would have.
func evolveJSONResult(ctx context.Context, g *globals, cfg *config.Config, env *environment, sum *evolve.Summary, o evolveOptions) error {
	stopped := stopError(sum)
	var result error
	var conf *confirmationJSON
	if stopped == nil && o.confirm > 0 {
		oc, err := runConfirmation(ctx, g, cfg, env, sum.RunName, confirmOptions{repeats: o.confirm, quiet: o.quiet, seed: 1})
		switch {
		case errors.Is(err, errNothingToConfirm):
			conf = &confirmationJSON{Reason: err.Error()}
		case err != nil:
			return err
		default:
			conf, result = oc.json(), oc.err()
		}
	}
	out, err := searchJSON(ctx, env.store, sum)
	if err != nil {
		return err
	}
	out.Confirmation = conf
	if err := writeJSON(g.stdout, out); err != nil {
		return err
	}
	if stopped != nil {
		return stopped
	}
	return result
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

// printEvolveSummary prints how a session ended and where to look next.
func printEvolveSummary(w io.Writer, s *evolve.Summary) {
	st := s.Status
	fmt.Fprintf(w, "run %s (#%d) stopped: %s: %s\n", s.RunName, s.RunID, s.StopReason, s.StopDetail)
	fmt.Fprintf(w, "  iterations %d, full evaluations %d, confirmation series runs %d: %d acceptable, %d loss too high, %d buggy, %d duplicates",
		st.Iteration, st.Evaluations, st.SeriesRuns, st.Acceptable, st.LossTooHigh, st.Buggy, st.Duplicates)
	if st.NoProposal > 0 {
		fmt.Fprintf(w, ", %d without a proposal", st.NoProposal)
	}
	fmt.Fprintln(w)
	switch {
	case st.BestTimeMs > 0 && st.ReferenceTimeMs > 0 && st.BestTimeID != 0 && st.RecordBrief != "reference":
		fmt.Fprintf(w, "  record: #%d, speedup %s over the reference (%s)\n",
			st.BestTimeID, runs.FormatSpeedup(st.RecordSpeedup), st.RecordBasis)
		fmt.Fprintf(w, "          evidence: %s\n", st.RecordEvidence)
	case st.ReferenceTimeMs > 0:
		fmt.Fprintf(w, "  record: still the reference (%s): no faster program was confirmed\n", secsText(st.ReferenceTimeMs))
	}
	if st.FastestID != 0 {
		fmt.Fprintf(w, "  candidate: #%d measured %s once (speedup %s over the record's single timing %s), claim %s\n", st.FastestID,
			secsText(st.FastestMs), runs.FormatSpeedup(runs.Speedup(st.RecordSingleMs, st.FastestMs)), secsText(st.RecordSingleMs), orDash(st.FastestClaim))
		if st.FastestClaim != string(runs.ClaimRejected) && st.FastestClaim != string(runs.ClaimFailed) {
			fmt.Fprintf(w, "  confirm it: frontier runs confirm %s (a single timing is not a record)\n", s.RunName)
		}
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
