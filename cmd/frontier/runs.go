package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

func newRunsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List evolution runs; show one; write its best program",
		Long: `Runs lists the evolution runs in the database: their track, state, why they
stopped, how many children they made, how many were acceptable, the record
(the fastest acceptable program) against the reference, and what the
models cost. "runs show RUN" summarizes one run; "runs best RUN" writes its
best program; "runs confirm RUN" re-times it against the reference. RUN is a
run's id or name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), g, func(st *store.Store) error { return runsList(cmd.Context(), g.stdout, st) })
		},
	}
	show := &cobra.Command{
		Use:   "show RUN",
		Short: "Summarize a run: settings, stop reason, verdicts, best programs, models and stages",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), g, func(st *store.Store) error { return runsShow(cmd.Context(), g.stdout, st, args[0]) })
		},
	}
	var out string
	best := &cobra.Command{
		Use:   "best RUN",
		Short: "Write a run's best program: the fastest acceptable one, else the best by the run's objective",
		Example: `  frontier runs best run-3 -o best.py
  frontier runs best run-3 | diff tracks/tiny/train.py -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), g, func(st *store.Store) error {
				return runsBest(cmd.Context(), g, st, args[0], out)
			})
		},
	}
	best.Flags().StringVarP(&out, "output", "o", "", "write the program to `FILE` (default: stdout)")
	cmd.AddCommand(show, best, newRunsConfirmCmd(g))
	return cmd
}

// summarizeRun reads the summary of run ref (an id or a name); an unknown
// run is a usage error.
func summarizeRun(ctx context.Context, st *store.Store, ref string) (*evolve.RunSummary, error) {
	run, err := st.Run(ctx, ref)
	if err != nil {
		return nil, usage(err)
	}
	return evolve.Summarize(ctx, st, run)
}

// withStore opens the configured database, which must exist.
func withStore(ctx context.Context, g *globals, f func(st *store.Store) error) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	if _, err := os.Stat(cfg.DB); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no database at %s: start a run with frontier evolve (or frontier demo), or point --db or --home at the right one", cfg.DB)
	}
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	return f(st)
}

func runsList(ctx context.Context, w io.Writer, st *store.Store) error {
	list, err := st.Runs(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no runs yet: start one with frontier evolve --track tiny (or frontier demo)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTRACK\tSTATE\tSTOP\tITER\tCHILDREN\tACCEPT\tRECORD\tVS REF\tCOST\tSTARTED")
	for _, r := range list {
		s, err := evolve.Summarize(ctx, st, r)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
		record, vs := "-", "-"
		if s.Record != nil {
			record = secsText(s.Record.TrainTimeMs)
			if s.Reference != nil && s.Reference.TrainTimeMs > 0 && s.Record.ID != s.Reference.ID {
				vs = fmt.Sprintf("%+.1f%%", 100*(s.Record.TrainTimeMs-s.Reference.TrainTimeMs)/s.Reference.TrainTimeMs)
			}
		}
		state := r.State
		if r.State == store.RunRunning && !r.UpdatedAt.IsZero() && time.Since(r.UpdatedAt) > 2*time.Minute {
			state = "running?" // no session has written for a while: it may have been killed
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t$%.2f\t%s\n", r.ID, r.Name, r.Track, state, orDash(r.StopReason),
			r.Iterations, len(s.Children), s.Settled.Classes[runs.ClassAcceptable], record, vs, s.USD, r.StartedAt.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runsShow(ctx context.Context, w io.Writer, st *store.Store, ref string) error {
	s, err := summarizeRun(ctx, st, ref)
	if err != nil {
		return err
	}
	run := s.Run
	c := s.Config
	fmt.Fprintf(w, "run %s (#%d) on track %s (target val loss %.4g", run.Name, run.ID, run.Track, run.TargetValLoss)
	if run.LossFloor > 0 {
		fmt.Fprintf(w, ", floor %.4g", run.LossFloor)
	}
	fmt.Fprintln(w, ")")
	state := run.State
	if run.StopReason != "" {
		state += ": " + run.StopReason
	}
	fmt.Fprintf(w, "  state       %s\n", state)
	if run.StopDetail != "" {
		fmt.Fprintf(w, "              %s\n", run.StopDetail)
	}
	fmt.Fprintf(w, "  started     %s; active %s over %d session(s)\n", run.StartedAt.Format(time.RFC3339), s.Active.Round(time.Second), run.Sessions)
	fmt.Fprintf(w, "  search      %d islands, branching %d, archive %d, |T| %d, |D| %d, objective %s, seed %d\n",
		c.Islands, c.BranchingFactor, c.ArchiveSize, *c.TopPrograms, *c.DiversePrograms, c.Objective, run.Seed)
	fmt.Fprintf(w, "              selection %s, migration every %d iterations (top %d), fast fixes %d, slots %d, llm concurrency %d\n",
		c.Selection.Strategy, c.Migration.Interval, c.Migration.Count, *c.FastFixes, c.Slots, c.LLMConcurrency)
	meta := "off"
	if s.MetaStart >= 0 {
		meta = fmt.Sprintf("from iteration %d", s.MetaStart)
	} else if *c.MetaPrompting.Enabled {
		meta = fmt.Sprintf("planned from iteration %d (not reached)", *c.MetaPrompting.StartIteration)
	}
	fmt.Fprintf(w, "              meta-prompting %s\n", meta)
	var ms []string
	for _, m := range s.Models {
		x := m.Name
		if m.Spec != "" && m.Spec != m.Name {
			x += " (" + m.Spec + ")"
		}
		if len(s.Models) > 1 {
			x += fmt.Sprintf(" weight %g", m.Weight)
		}
		ms = append(ms, x)
	}
	bandit := ""
	if c.Bandit.Strategy != "" {
		bandit = ", bandit " + c.Bandit.Strategy
	}
	fmt.Fprintf(w, "  models      %s%s\n", strings.Join(ms, ", "), bandit)
	fmt.Fprintf(w, "  budget      %s\n", budgetText(c.Budget))
	fmt.Fprintf(w, "  progress    %d iterations, %d children, %d fast checks, %d full evaluations, %d migrations, archive %d\n",
		run.Iterations, len(s.Children), s.FastChecks, s.Evaluations, s.Migrations, len(s.Archive))
	fmt.Fprintf(w, "  spend       $%.4f, %d tokens, %d model calls", s.USD, s.Tokens, s.Calls)
	if s.LostCalls > 0 {
		fmt.Fprintf(w, " (%d lost when a session was killed)", s.LostCalls)
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "\nverdicts")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cl := range []runs.Class{runs.ClassAcceptable, runs.TooHigh, runs.Buggy, runs.ClassDuplicate, runs.ClassNone} {
		if n := s.Settled.Classes[cl]; n > 0 || cl == runs.ClassAcceptable {
			var parts []string
			for v, k := range s.Settled.Verdicts {
				if runs.ClassOf(v) == cl && string(v) != string(cl) {
					parts = append(parts, fmt.Sprintf("%s %d", v, k))
				}
			}
			detail := ""
			if len(parts) > 0 {
				slices.Sort(parts)
				detail = "(" + strings.Join(parts, ", ") + ")"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\n", cl, n, detail)
		}
	}
	if pending := len(s.Children) - s.Settled.Members; pending > 0 {
		fmt.Fprintf(tw, "  pending\t%d\t(queued or in flight; resume the run to finish them)\n", pending)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nbest programs (by the objective; the record is the fastest acceptable one)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tITER\tISLAND\tMODEL\tSTAGE\tVERDICT\tVAL LOSS\tTRAIN TIME\tVS REF\tSCORE\tCHANGE")
	rows := s.Top
	if len(rows) > 8 {
		rows = rows[:8]
	}
	if s.Record != nil && !containsChild(rows, s.Record.ID) {
		rows = append(rows, s.Record)
	}
	for _, x := range rows {
		mark := ""
		if s.Record != nil && x.ID == s.Record.ID {
			mark = " *"
		}
		vs := "-"
		if s.Reference != nil && s.Reference.TrainTimeMs > 0 && x.ID != s.Reference.ID {
			vs = fmt.Sprintf("%+.1f%%", 100*(x.TrainTimeMs-s.Reference.TrainTimeMs)/s.Reference.TrainTimeMs)
		}
		desc := x.Description
		if x.Origin == runs.OriginReference {
			desc = "(the reference)"
		}
		fmt.Fprintf(tw, "  %d%s\t%d\t%d\t%s\t%s\t%s\t%.4f\t%s\t%s\t%.1f\t%s\n", x.ID, mark, x.Iteration, x.Island, orDash(x.Model),
			x.Stage, x.Verdict, x.ValLoss, secsText(x.TrainTimeMs), vs, x.Score, clipText(desc, 60))
	}
	tw.Flush()
	if s.Record != nil {
		fmt.Fprintln(w, "  * the record")
	}

	for _, grp := range []struct {
		title string
		rows  []evolve.GroupStats
	}{{"per model", s.PerModel}, {"per stage", s.PerStage}} {
		fmt.Fprintf(w, "\n%s\n", grp.title)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tCHILDREN\tACCEPT\tRATE\tHIGH\tBUGGY\tDUP\tIMPROVED\tFIXED\tBEST TIME\tTOKENS IN/OUT\tCOST")
		for _, m := range grp.rows {
			best := "-"
			if m.Fastest.ID != 0 {
				best = secsText(m.Fastest.TrainTimeMs)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%.0f%%\t%d\t%d\t%d\t%d\t%d\t%s\t%d/%d\t$%.4f\n", orDash(m.Name), m.Members,
				m.Classes[runs.ClassAcceptable], 100*m.AcceptableRate(), m.Classes[runs.TooHigh], m.Classes[runs.Buggy],
				m.Classes[runs.ClassDuplicate], m.Improved, m.Fixed, best, m.InputTokens, m.OutputTokens, m.CostUSD)
		}
		tw.Flush()
	}
	if c.Bandit.Strategy != "" && len(run.Bandit) > 2 {
		var stats map[string]json.RawMessage
		if json.Unmarshal(run.Bandit, &stats) == nil {
			fmt.Fprintf(w, "\nbandit state: %s\n", run.Bandit)
		}
	}
	return nil
}

func budgetText(b evolve.BudgetConfig) string {
	var parts []string
	if b.MaxIterations > 0 {
		parts = append(parts, fmt.Sprintf("%d iterations", b.MaxIterations))
	}
	if b.MaxEvaluations > 0 {
		parts = append(parts, fmt.Sprintf("%d evaluations", b.MaxEvaluations))
	}
	if b.MaxDuration > 0 {
		parts = append(parts, b.MaxDuration.D().String())
	}
	if b.MaxUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", b.MaxUSD))
	}
	if b.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.MaxTokens))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func containsChild(cs []*store.Child, id int64) bool {
	for _, c := range cs {
		if c.ID == id {
			return true
		}
	}
	return false
}

func clipText(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func runsBest(ctx context.Context, g *globals, st *store.Store, ref, out string) error {
	s, err := summarizeRun(ctx, st, ref)
	if err != nil {
		return err
	}
	run := s.Run
	b := s.Best()
	if b == nil {
		return fmt.Errorf("run %s has no evaluated program yet", run.Name)
	}
	src, err := st.Program(ctx, b.ProgramHash)
	if err != nil {
		return err
	}
	what := "the record: the fastest acceptable program"
	if s.Record == nil {
		what = "no program is acceptable; this is the best by the run's objective"
	}
	fmt.Fprintf(g.stderr, "#%d (iteration %d, %s): %s, val loss %.4f, train time %s; %s\n",
		b.ID, b.Iteration, orDash(b.Model), b.Verdict, b.ValLoss, secsText(b.TrainTimeMs), what)
	if out == "" || out == "-" {
		_, err = g.stdout.Write(src)
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(g.stderr, "wrote %s\n", out)
	return nil
}
