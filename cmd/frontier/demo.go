package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/report/fromstore"
	"github.com/frontier-bench/frontier/internal/store"
)

// demoOptions are the inputs of "frontier demo".
type demoOptions struct {
	track      string
	out        string
	duration   time.Duration
	iterations int
	proposer   string
}

func newDemoCmd(g *globals) *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A short search on the tiny track, then its report (about 10 minutes on 2 cores)",
		Long: `Demo runs a short evolutionary search on the built-in tiny track and writes
its report. It uses the models configured under llm: in frontier.yaml when
one is usable (its API key is set, or its local server answers), else the
mutate baseline, which needs no model. The search stops after a few
iterations or about 7 minutes of search, whichever comes first; running
evaluations then finish. At the end it prints where the report is and how
much faster the best acceptable program is than the reference.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "", "report folder (default: <home>/reports/<run>)")
	f.DurationVar(&o.duration, "duration", 7*time.Minute, "search time before the run drains")
	f.IntVar(&o.iterations, "iterations", 3, "iterations of the search")
	f.StringVar(&o.proposer, "proposer", "auto", "auto (a usable configured model, else mutate), llm or mutate")
	f.StringVar(&o.track, "track", "tiny", "track (for trying the demo on another small track)")
	f.MarkHidden("track")
	return cmd
}

// demoConfig is the search the demo runs: small enough to end in about
// ten minutes on two cores, large enough to show islands, migration, the
// archive and, with a model, meta-prompting and the fix loop.
func demoConfig(o demoOptions) evolve.Config {
	return evolve.Config{
		Islands: 2, BranchingFactor: 3, ArchiveSize: 8, Slots: 1, LLMConcurrency: 3,
		Migration:     evolve.MigrationConfig{Interval: 1, Count: 1},
		MetaPrompting: evolve.MetaConfig{StartIteration: ptrTo(2)},
		FastFixes:     ptrTo(2),
		Proposer:      o.proposer,
		Budget:        evolve.BudgetConfig{MaxIterations: o.iterations, MaxDuration: llm.Duration(o.duration), MaxUSD: 2},
	}
}

func ptrTo[T any](v T) *T { return &v }

func runDemo(ctx context.Context, g *globals, o demoOptions) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	ev := demoConfig(o)
	if o.proposer == "auto" {
		ev.Proposer = evolve.ProposerMutate
		if names := usableModels(ctx, cfg); len(names) > 0 {
			ev.Proposer = evolve.ProposerLLM
			for _, n := range names {
				ev.Models = append(ev.Models, evolve.ModelWeight{Name: n})
			}
		}
	}
	cfg.Evolve = ev
	env, err := openEnvironment(ctx, g, cfg)
	if err != nil {
		return err
	}
	defer env.Close()
	proposer := "the mutate baseline (no model needed)"
	if ev.Proposer != evolve.ProposerMutate {
		proposer = "the configured models"
	}
	if o.track == "" {
		o.track = "tiny"
	}
	fmt.Fprintf(g.stderr, "frontier demo: a short search on the %s track with %s; about 10 minutes on 2 cores.\n", o.track, proposer)
	name := "demo-" + time.Now().Format("20060102-150405")
	sum, err := evolveRun(ctx, g, evolveOptions{track: o.track, name: name}, cfg, env)
	if err != nil {
		return err
	}
	printEvolveSummary(g.stdout, sum)

	d, err := fromstore.Load(ctx, env.store, sum.RunName)
	if err != nil {
		return fmt.Errorf("demo: read the run for its report: %w", err)
	}
	d.GeneratedAt = time.Now()
	out := o.out
	if out == "" {
		out = filepath.Join(cfg.Home, "reports", sum.RunName)
	}
	index, err := report.Write(ctx, out, d)
	if err != nil {
		return fmt.Errorf("demo: write the report: %w", err)
	}
	st := sum.Status
	if err := printChildEvaluation(ctx, g.stdout, env.store, st.BestTimeID); err != nil {
		g.log.Warn("demo: no telemetry report for the best program", "child", st.BestTimeID, "err", err)
	}
	fmt.Fprintf(g.stdout, "\nreport: %s\n", index)
	switch {
	case st.BestTimeMs > 0 && st.ReferenceTimeMs > 0 && st.BestTimeMs < st.ReferenceTimeMs:
		fmt.Fprintf(g.stdout, "the best acceptable program (#%d) trains to the target in %s, %.1f%% faster than the reference (%s)\n",
			st.BestTimeID, secsText(st.BestTimeMs), 100*(1-st.BestTimeMs/st.ReferenceTimeMs), secsText(st.ReferenceTimeMs))
		// The tiny track's train time varies by about 4% (sd) between runs
		// of one program on a quiet machine (tracks/tiny/README.md), far
		// more on a busy one.
		note := "one run each"
		if st.BestTimeMs > 0.9*st.ReferenceTimeMs {
			note = "one run each; under 10% is within a busy machine's timing noise"
		}
		fmt.Fprintf(g.stdout, "(%s: frontier runs confirm %s re-times it against the reference, in alternation, and tests the speedup)\n", note, sum.RunName)
	case st.ReferenceTimeMs > 0:
		fmt.Fprintf(g.stdout, "no acceptable program was faster than the reference (%s) in this short run; frontier evolve --resume %s continues it\n",
			secsText(st.ReferenceTimeMs), sum.RunName)
	default:
		fmt.Fprintln(g.stdout, "the reference program was not measured; see frontier runs show "+sum.RunName)
	}
	switch sum.StopReason {
	case evolve.StopInterrupted, evolve.StopAborted:
		return interruptedError{}
	case evolve.StopReferenceFails, evolve.StopLLMFailures, evolve.StopError:
		return fmt.Errorf("the demo's run stopped: %s", sum.StopDetail)
	}
	return nil
}

// printChildEvaluation writes the full evaluation report (verdict, loss,
// time, sections, top ops) of a child's full run, read back from the store.
func printChildEvaluation(ctx context.Context, w io.Writer, st *store.Store, childID int64) error {
	if childID == 0 {
		return nil
	}
	c, err := st.Child(ctx, childID)
	if err != nil {
		return err
	}
	if c.EvaluationID == 0 {
		return fmt.Errorf("child %d has no full evaluation", childID)
	}
	ev, err := st.Evaluation(ctx, c.EvaluationID)
	if err != nil {
		return err
	}
	var r eval.Result
	if err := json.Unmarshal(ev.Result, &r); err != nil {
		return fmt.Errorf("evaluation %d: read its result: %w", ev.ID, err)
	}
	fmt.Fprintf(w, "\nthe best acceptable program (#%d), its full run:\n\n", childID)
	return eval.WriteReport(w, &r)
}

// usableModels returns the configured models the demo can use: those
// whose API key is set, and local servers (no key needed) that accept a
// connection.
func usableModels(ctx context.Context, cfg *config.Config) []string {
	var out []string
	for _, name := range cfg.LLM.ModelNames() {
		m, err := cfg.LLM.Model(name)
		if err != nil {
			continue
		}
		key, err := m.APIKey(os.LookupEnv)
		if err != nil {
			continue
		}
		if key == "" && !reachable(ctx, m.Spec.BaseURL) {
			continue
		}
		out = append(out, m.Name)
	}
	return out
}

// reachable reports whether a server accepts a TCP connection at the URL's
// host within a second.
func reachable(ctx context.Context, rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
