package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/bench"
	"github.com/frontier-bench/frontier/internal/bench/fsr"
	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/provider"
	"github.com/frontier-bench/frontier/internal/store"
)

// benchRunOptions are the inputs of "frontier bench run".
type benchRunOptions struct {
	limit      time.Duration
	suite      string
	resume     string
	name       string
	cfg        bench.Config
	model      string
	proposer   string
	replay     string
	budget     bench.Budget
	duration   time.Duration
	asJSON     bool
	quiet      bool
	signals    <-chan os.Signal // tests
	afterStart func()           // tests: called once the run is recorded
}

func newBenchRunCmd(g *globals) *cobra.Command {
	var o benchRunOptions
	cmd := &cobra.Command{
		Use:   "run SUITE",
		Short: "Run a scaffold over a suite's tasks and score the fraction of speedup it recovers",
		Long: `Run one scaffold with one model (or the mutate baseline) over every task of a
suite (or those named with --task), --seeds times each: each attempt starts
from the task's start record, searches with a budget of --nodes proposed
programs, and scores FSR = (t_start - t_best) / (t_start - t_goal). Every
node, prompt, answer and evaluation is stored as it happens: Ctrl-C once
finishes the node in progress and stops, twice aborts; a stopped or killed
run continues with --resume RUN, where only the budgets may change.

Scaffolds: ` + bench.ScaffoldHelp() + `.
Hints: none, 1 (pseudocode), 2 (description), 3 (mini-paper), 1+2, 1+2+3.

Exit codes: 0 done or stopped on a budget, 130 interrupted (resumable),
1 an error, 2 bad input.`,
		Example: `  frontier bench run tiny-ladder --scaffold flat --proposer mutate
  frontier bench run tiny-ladder --scaffold aide --model gpt5 --hints 1+2 --seeds 3 --max-usd 20
  frontier bench run tiny-ladder --scaffold tree --proposer mutate --retime 5
  frontier bench run --resume bench-4 --max-usd 40`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.suite = args[0]
			}
			o.budget.MaxDuration = llm.Duration(o.duration)
			return runBench(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.Scaffold, "scaffold", "flat", oneOf(bench.Scaffolds()))
	f.StringVar(&o.model, "model", "", "the model that proposes, by name under llm.models")
	f.StringVar(&o.proposer, "proposer", "", "auto (the one configured model, else mutate), llm or mutate")
	f.StringVar(&o.replay, "replay", "", "replay recorded answers from a JSONL `FILE` instead of asking a model")
	f.StringVar(&o.cfg.Hints, "hints", "none", "hint levels in the prompts: none, 1, 2, 3, 1+2 or 1+2+3")
	f.IntVar(&o.cfg.Seeds, "seeds", 1, "attempts per task (seeds 0..N-1)")
	f.IntVar(&o.cfg.Nodes, "nodes", bench.DefaultNodes, "programs each search proposes (the node budget)")
	f.StringSliceVar(&o.cfg.Tasks, "task", nil, "run only these tasks (repeat), in this order")
	f.BoolVar(&o.cfg.Cumulative, "cumulative", false, "chain each seed's tasks: the best program of task i starts task i+1")
	f.IntVar(&o.cfg.Retime, "retime", 0, "re-time each attempt's best node `K` times in alternation with its start, and score FSR from that series (0: the single timing)")
	f.StringVar(&o.cfg.Order, "order", bench.OrderSuite, "suite (seed by seed, in task order) or learnable (the task with the highest p(1-p) of reaching its goal next)")
	f.Float64Var(&o.cfg.Success, "success", 1, "with --order learnable, the FSR that counts as reaching the goal")
	f.IntVar(&o.cfg.ApplyFixes, "apply-fixes", 2, "times an answer that does not apply goes back to the model (negative: none)")
	f.Uint64Var(&o.cfg.Seed, "seed", 0, "seed of the searches' random choices (0: pick one, recorded)")
	f.Float64Var(&o.budget.MaxUSD, "max-usd", 0, "model spending limit in US dollars, for the whole run")
	f.Int64Var(&o.budget.MaxTokens, "max-tokens", 0, "model token limit (input plus output), for the whole run")
	f.DurationVar(&o.duration, "duration", 0, "active time limit of the whole run, e.g. 2h")
	limitFlag(cmd, &o.limit)
	f.StringVar(&o.name, "name", "", "name of the new run (default bench-ID)")
	f.StringVar(&o.resume, "resume", "", "continue bench run `RUN` (name or id) where it stood")
	f.BoolVar(&o.asJSON, "json", false, "print the run's summary as JSON")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	return cmd
}

// benchSummary is what bench run prints with --json.
type benchSummary struct {
	Run        string                `json:"run"`
	Suite      string                `json:"suite"`
	Scaffold   string                `json:"scaffold"`
	Model      string                `json:"model"`
	Hints      string                `json:"hints"`
	StopReason string                `json:"stop_reason"`
	StopDetail string                `json:"stop_detail"`
	Attempts   []*store.BenchAttempt `json:"attempts"`
	Scores     fsr.Scores            `json:"scores"`
}

func runBench(ctx context.Context, g *globals, o benchRunOptions) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	if o.resume != "" && (o.suite != "" || o.name != "" || o.model != "" || o.proposer != "" || o.replay != "") {
		return usage(errors.New("bench run --resume continues a run with its own settings: only --max-usd, --max-tokens and --duration may change"))
	}
	if o.resume == "" && o.suite == "" {
		return usage(errors.New("name the suite to run (frontier bench list), or --resume a run"))
	}
	if err := store.CheckRunName(o.name); err != nil {
		return usage(fmt.Errorf("--name: %w", err))
	}
	// A new run's suite, model and settings are checked before Python is
	// probed and the database opened: a typo costs no wait.
	var nr *newBenchRun
	var run *store.BenchRun
	var env *environment
	if err := checkLimit(o.limit); err != nil {
		return err
	}
	if o.resume == "" {
		if nr, err = planBench(g, o, cfg); err != nil {
			return err
		}
		if env, err = openEnvironment(ctx, g, cfg); err != nil {
			return err
		}
	} else {
		// The run to resume is looked up before Python is probed: a
		// mistyped name costs no wait.
		if env, run, err = openForResume(ctx, g, cfg, o.resume); err != nil {
			return err
		}
	}
	defer env.Close()
	env.eval.FullLimit = o.limit
	b, err := startBench(ctx, g, o, nr, run, cfg, env)
	if err != nil {
		return err
	}
	if o.afterStart != nil {
		o.afterStart()
	}
	runCtx, stop := drainOnSignals(ctx, o.signals, b, benchDrainWords, g.stderr)
	defer stop()
	sum, runErr := b.Run(runCtx)
	if sum == nil {
		return runErr
	}
	if err := printBenchSummary(g.stdout, sum, o.asJSON); err != nil {
		return err
	}
	switch {
	case runErr != nil:
		return runErr
	case sum.StopReason == bench.StopInterrupted:
		return interruptedError{}
	}
	return nil
}

// openForResume finds the bench run to resume in the database, then
// builds the environment around the same store.
func openForResume(ctx context.Context, g *globals, cfg *config.Config, name string) (*environment, *store.BenchRun, error) {
	if noDatabase(cfg) {
		return nil, nil, usage(fmt.Errorf("--resume %s: there is no database at %s yet, so no bench run to resume (--home, --db)", name, cfg.DBName()))
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	run, err := st.BenchRun(ctx, name)
	if err != nil {
		st.Close()
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, usage(fmt.Errorf("--resume: %w", err))
		}
		return nil, nil, err
	}
	env, err := withEvaluator(ctx, g, cfg, st)
	if err != nil {
		return nil, nil, err
	}
	return env, run, nil
}

// newBenchRun is a new run's suite and resolved settings.
type newBenchRun struct {
	suite *bench.Suite
	cfg   bench.Config
}

// planBench finds a new run's suite and model and resolves its settings.
func planBench(g *globals, o benchRunOptions, cfg *config.Config) (*newBenchRun, error) {
	s, err := suiteRegistry().Get(o.suite)
	if err != nil {
		return nil, usage(err)
	}
	recs, err := evolve.ChooseModels(cfg.LLM, evolve.ModelChoice{Proposer: o.proposer, Models: modelWeights(o.model),
		Named: o.model != "", Replay: o.replay}, os.LookupEnv, g.log)
	if err != nil {
		return nil, usage(err)
	}
	if len(recs) != 1 {
		return nil, usage(fmt.Errorf("a bench run has one model, and %d are configured: name one with --model", len(recs)))
	}
	rc := o.cfg
	rc.Model, rc.Budget = recs[0], o.budget
	// The evolve scaffold starts from frontier.yaml's evolve settings;
	// the others drop them.
	ev := cfg.Evolve
	rc.Evolve = &ev
	if err := rc.Resolve(s); err != nil {
		return nil, usage(err)
	}
	return &newBenchRun{suite: s, cfg: rc}, nil
}

// startBench creates (nr) or resumes (run) the run, with its model and
// budget.
func startBench(ctx context.Context, g *globals, o benchRunOptions, nr *newBenchRun, run *store.BenchRun, cfg *config.Config, env *environment) (*bench.Bench, error) {
	benv := bench.Env{Store: env.store, Evaluator: env.eval, Tracks: registry(cfg), WorkDir: filepath.Join(cfg.Home, "bench"),
		Redact: cfg.LLM.Redactor(os.LookupEnv).Redact, Log: g.log}
	if !o.quiet {
		benv.Progress = func(line string) { fmt.Fprintln(g.stderr, line) }
	}
	if run != nil {
		rc, err := bench.ParseConfig(run.Config)
		if err != nil {
			return nil, err
		}
		s, err := benchSuiteOf(rc)
		if err != nil {
			return nil, usage(fmt.Errorf("bench run %s: %w", run.Name, err))
		}
		budget, err := bench.NewBudget(ctx, env.store, run.ID, rc.Budget.With(o.budget), cfg.LLM.Budget)
		if err != nil {
			return nil, err
		}
		m, err := openBenchModel(rc.Model, cfg, budget, run.Name, g)
		if err != nil {
			return nil, err
		}
		b, err := bench.Resume(ctx, benv, s, run, o.budget, m, budget)
		if err != nil {
			return nil, usage(err)
		}
		return b, nil
	}
	s, rc := nr.suite, nr.cfg
	budget, err := bench.NewBudget(ctx, env.store, 0, rc.Budget, cfg.LLM.Budget)
	if err != nil {
		return nil, err
	}
	m, err := openBenchModel(rc.Model, cfg, budget, "", g)
	if err != nil {
		return nil, err
	}
	b, err := bench.New(ctx, benv, s, rc, o.name, m, budget)
	if err != nil {
		return nil, usage(err)
	}
	g.log.Info("bench: run", "name", b.Name(), "suite", s.Name, "scaffold", rc.Scaffold, "model", rc.Model.Name, "hints", rc.Hints)
	return b, nil
}

func modelWeights(name string) []evolve.ModelWeight {
	if name == "" {
		return nil
	}
	return []evolve.ModelWeight{{Name: name, Weight: 1}}
}

// openBenchModel opens the run's one model, its client drawing from budget.
func openBenchModel(rec evolve.ModelsRecord, cfg *config.Config, budget *llm.Budget, run string, g *globals) (evolve.Model, error) {
	ms, err := evolve.OpenModels([]evolve.ModelsRecord{rec}, cfg.LLM, provider.Options{Budget: budget, Log: g.log}, run, g.log)
	if err != nil {
		return evolve.Model{}, usage(err)
	}
	return ms[0], nil
}

// benchSuiteOf finds a recorded run's suite: built in, or its folder.
func benchSuiteOf(rc bench.Config) (*bench.Suite, error) {
	if rc.SuiteDir != "" {
		return bench.LoadDir(rc.SuiteDir)
	}
	return suiteRegistry().Get(rc.Suite)
}

// printBenchSummary prints how a run ended, its attempts and its scores.
func printBenchSummary(w io.Writer, sum *bench.Summary, asJSON bool) error {
	var outcomes []fsr.Outcome
	for _, a := range sum.Attempts {
		if a.State == store.AttemptDone {
			outcomes = append(outcomes, fsr.Outcome{Task: a.Task, Seed: a.Seed, FSR: a.FSR})
		}
	}
	sc := fsr.Summarize(outcomes, 1)
	r := sum.Run
	if asJSON {
		return writeJSON(w, benchSummary{Run: r.Name, Suite: r.Suite, Scaffold: r.Scaffold, Model: r.Model, Hints: r.Hints,
			StopReason: sum.StopReason, StopDetail: sum.StopDetail, Attempts: sum.Attempts, Scores: sc})
	}
	fmt.Fprintf(w, "bench run %s (%s, %s, model %s, hints %s) stopped: %s: %s\n", r.Name, r.Suite, r.Scaffold, r.Model, r.Hints, sum.StopReason, sum.StopDetail)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSEED\tSTATE\tFSR\tBEST\tSTART\tGOAL\tTIMES\tNODES\tACC\tBUGGY\tCOST")
	for _, a := range sum.Attempts {
		if a.State == store.AttemptPending {
			fmt.Fprintf(tw, "%s\t%d\t%s\t\t\t\t\t\t\t\t\t\n", a.Task, a.Seed, a.State)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t$%.2f\n", a.Task, a.Seed, a.State, a.FSR, secsText(a.BestMs),
			secsText(a.StartMs), secsText(a.GoalMs), a.TimeSource, a.Nodes, a.Acceptable, a.Buggy, a.CostUSD)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if sc.Mean.N > 0 {
		fmt.Fprintf(w, "FSR over %d tasks: mean %.3f [%.3f, %.3f], IQM %.3f [%.3f, %.3f] (95%% bootstrap intervals)\n",
			sc.Mean.N, sc.Mean.Value, sc.Mean.Lo, sc.Mean.Hi, sc.IQM.Value, sc.IQM.Lo, sc.IQM.Hi)
	}
	// The standing rule: a time shown says its n and noise, or that it is
	// a single timing.
	if slices.ContainsFunc(sum.Attempts, func(a *store.BenchAttempt) bool { return a.BestNodeID != 0 && a.RetimeN == 0 }) {
		fmt.Fprintln(w, "note: each BEST found by the search is a single timing (one run of its program), and the intervals are over tasks, not over that timing's noise; --retime K re-times each best node K times in alternation with its start and scores FSR from that series")
	}
	if slices.ContainsFunc(sum.Attempts, func(a *store.BenchAttempt) bool { return a.RetimeN > 0 }) {
		fmt.Fprintln(w, "note: a re-timed BEST is the start's time times the ratio of the best's and the start's means in their series (runs in alternation, the same seeds); FSR is scored from it, and single_fsr (--json) keeps the single timing's")
	}
	for _, a := range sum.Attempts {
		for _, n := range strings.Split(a.Notes, "\n") {
			if n != "" {
				fmt.Fprintf(w, "warning: task %s seed %d: %s\n", a.Task, a.Seed, n)
			}
		}
	}
	if slices.ContainsFunc(sum.Attempts, func(a *store.BenchAttempt) bool { return a.TimeSource == bench.TimesPublished }) {
		fmt.Fprintln(w, "note: some scores use the suite's published times, measured where its times: says; `frontier bench calibrate` re-times the records here")
	}
	fmt.Fprintf(w, "more: frontier bench report %s", r.Name)
	if sum.StopReason != bench.StopDone && sum.StopReason != bench.StopError {
		fmt.Fprintf(w, "    continue: frontier bench run --resume %s", r.Name)
	}
	fmt.Fprintln(w)
	return nil
}

func newBenchRunsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the bench runs in the database",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			st, err := openBenchStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.BenchRuns(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, runs)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSUITE\tSCAFFOLD\tMODEL\tHINTS\tSTATE\tSTARTED")
			for _, r := range runs {
				state := r.State
				if r.StopReason != "" {
					state += " (" + r.StopReason + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Suite, r.Scaffold, r.Model, r.Hints, state, r.StartedAt.Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	return cmd
}

// oneOf lists names as a flag's help says them: "a, b or c". The list
// comes from where the names are defined, so that a new one is in the
// help at once.
func oneOf(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
