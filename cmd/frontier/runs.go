package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

func newRunsCmd(g *globals) *cobra.Command {
	var listJSON bool
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List evolution runs; show one, a member of one, a diff; write its best program; confirm its record",
		Long: `Runs lists the evolution runs in the database: their track, state, why they
stopped, how many children they made, how many were acceptable, the record
(the fastest acceptable program) against the reference, and what the
models cost. "runs show RUN" summarizes one run; "runs child RUN N" tells one
member's story; "runs diff RUN [N]" diffs a program against the reference and
its parent; "runs best RUN" writes its record program; "runs confirm RUN"
re-times a candidate against the standing record. RUN is a run's id or name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), g, func(st store.Store) error { return runsList(cmd.Context(), g.stdout, st, listJSON) })
		},
	}
	cmd.Flags().BoolVar(&listJSON, "json", false, "print the runs as JSON")
	var child int64
	var showJSON bool
	show := &cobra.Command{
		Use:   "show RUN",
		Short: "Summarize a run: settings, record and claims, verdicts, best programs, islands, models, stages, spend",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), g, func(st store.Store) error {
				if child != 0 {
					return runsChild(cmd.Context(), g.stdout, st, args[0], child, childOptions{json: showJSON})
				}
				return runsShow(cmd.Context(), g.stdout, st, args[0], showJSON)
			})
		},
	}
	show.Flags().Int64Var(&child, "child", 0, "show member `N` instead (as runs child RUN N)")
	show.Flags().BoolVar(&showJSON, "json", false, "print the summary as JSON")
	var out string
	var fastest, bestJSON bool
	best := &cobra.Command{
		Use:   "best RUN",
		Short: "Write a run's record program (confirmed, else the reference), or with --fastest its fastest single timing",
		Example: `  frontier runs best run-3 -o best.py
  frontier runs best run-3 | diff tracks/tiny/train.py -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), g, func(st store.Store) error {
				return runsBest(cmd.Context(), g, st, args[0], bestOptions{out: out, fastest: fastest, json: bestJSON})
			})
		},
	}
	best.Flags().StringVarP(&out, "output", "o", "", "write the program to `FILE` (default: stdout)")
	best.Flags().BoolVar(&fastest, "fastest", false, "write the acceptable program with the fastest single timing, confirmed or not")
	best.Flags().BoolVar(&bestJSON, "json", false, "print the program and why it is the one as JSON (with -o, the program goes to the file only)")
	cmd.AddCommand(show, best, newRunsConfirmCmd(g), newRunsChildCmd(g), newRunsDiffCmd(g))
	return cmd
}

// summarizeRun reads the summary of run ref (an id or a name); an unknown
// run is a usage error.
func summarizeRun(ctx context.Context, st store.Store, ref string) (*runview.Summary, error) {
	run, err := st.Run(ctx, ref)
	if err != nil {
		return nil, usage(err)
	}
	return runview.Summarize(ctx, st, run)
}

// withStore opens the configured database, which must exist.
func withStore(ctx context.Context, g *globals, f func(st store.Store) error) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	if noDatabase(cfg) {
		return fmt.Errorf("no database at %s: start a run with frontier evolve (or frontier demo), or point --db or --home at the right one", cfg.DBName())
	}
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	return f(st)
}

func runsList(ctx context.Context, w io.Writer, st store.Store, asJSON bool) error {
	list, err := st.Runs(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		out := runview.RunsDoc{Runs: []runview.RunRow{}}
		for _, r := range list {
			s, err := runview.Summarize(ctx, st, r)
			if err != nil {
				return fmt.Errorf("run %s: %w", r.Name, err)
			}
			out.Runs = append(out.Runs, s.Row(time.Now()))
		}
		return writeJSON(w, out)
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no runs yet: start one with frontier evolve --track tiny (or frontier demo)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTRACK\tSTATE\tSTOP\tITER\tCHILDREN\tACCEPT\tRECORD\tSPEEDUP\tEVIDENCE\tCOST\tSTARTED")
	for _, r := range list {
		s, err := runview.Summarize(ctx, st, r)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
		record, vs, evidence := recordCells(s)
		state := r.State
		if runview.Stale(r, time.Now()) {
			state = "running?" // no session has written for a while: it may have been killed
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t$%.2f\t%s\n", r.ID, printable(r.Name), printable(r.Track), state, orDash(r.StopReason),
			r.Iterations, len(s.Children), s.Settled.Classes[runs.ClassAcceptable], record, vs, evidence, s.USD, r.StartedAt.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

// recordCells are the record's cells of the runs table: the record, its
// speedup over the reference and what it rests on (with the fastest
// single timing when it is a candidate that is not confirmed).
func recordCells(s *runview.Summary) (record, speedup, evidence string) {
	if s.Record == nil {
		return "-", "-", "-"
	}
	record = fmt.Sprintf("#%d %s", s.Record.ID, secsText(s.RecordMs))
	speedup, evidence = "-", "the reference"
	if s.RecordClaim != nil {
		// From the record's claims (measured together), never its series'
		// mean against the reference's single timing.
		speedup, evidence = runs.FormatSpeedup(s.RecordSpeedup), s.RecordClaim.Brief()
	}
	if c := s.CandidateClaim(); c != nil {
		evidence += fmt.Sprintf("; #%d faster once (%s)", c.ChildID, c.State)
	}
	return record, speedup, evidence
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func budgetText(b runview.Budget) string {
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

func clipText(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// bestOptions are runs best's flags.
type bestOptions struct {
	out           string
	fastest, json bool
}

func runsBest(ctx context.Context, g *globals, st store.Store, ref string, o bestOptions) error {
	if o.json && o.out == "-" {
		return usage(errors.New("--json prints the program in its output; use -o FILE to write it to a file instead, not -o -"))
	}
	s, err := summarizeRun(ctx, st, ref)
	if err != nil {
		return err
	}
	run := s.Run
	b := s.Best()
	var what, kind string
	switch {
	case o.fastest && s.Fastest == nil:
		return fmt.Errorf("run %s has no acceptable program with a train time", run.Name)
	case o.fastest:
		b, kind = s.Fastest, "fastest"
		what = "the fastest single timing"
		if s.RecordClaim != nil && s.Record.ID == b.ID {
			what += ", the record: " + s.RecordClaim.Evidence()
		} else if c := s.CandidateClaim(); c != nil {
			what += fmt.Sprintf(", not confirmed (claim %s)", c.State)
		}
	case b == nil:
		return fmt.Errorf("run %s has no evaluated program yet", run.Name)
	case s.RecordClaim != nil && b.ID == s.Record.ID:
		what, kind = "the record: "+s.RecordClaim.Evidence(), "record"
	case s.Record != nil && b.ID == s.Record.ID:
		what, kind = "the record is still the reference: no faster program was confirmed", "reference"
		if c := s.CandidateClaim(); c != nil {
			what += fmt.Sprintf(" (#%d measured faster once, claim %s; --fastest writes it)", c.ChildID, c.State)
		}
	default:
		what, kind = "no program is acceptable; this is the best by the run's objective", "best"
	}
	src, err := st.Program(ctx, b.ProgramHash)
	if err != nil {
		return err
	}
	if o.out != "" && o.out != "-" {
		if err := os.WriteFile(o.out, src, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.out, err)
		}
	}
	if o.json {
		byID := map[int64]*store.Child{}
		for _, c := range s.Members {
			byID[c.ID] = c
		}
		out := runsBestJSON{Run: run.Name, Member: runview.Program(b, byID), Kind: kind, Evidence: what, Output: o.out}
		if o.out == "" {
			out.Source = string(src)
		}
		return writeJSON(g.stdout, out)
	}
	fmt.Fprintf(g.stderr, "#%d (iteration %d, %s): %s, val loss %.4f, train time %s; %s\n",
		b.ID, b.Iteration, orDash(b.Model), b.Verdict, b.ValLoss, secsText(b.TrainTimeMs), what)
	if o.out == "" || o.out == "-" {
		_, err = g.stdout.Write(src)
		return err
	}
	fmt.Fprintf(g.stderr, "wrote %s\n", o.out)
	return nil
}

// runTrack returns the track run was started on: the track named by
// override when set (a folder that moved), else the folder the run
// recorded when it still exists, else the track of the run's name.
// Resume checks the spec's hash against the run's either way.
func runTrack(cfg *config.Config, run *store.Run, override string) (*track.Spec, error) {
	name, where := run.Track, ""
	switch {
	case override != "":
		name = override
	case run.TrackDir != "":
		if _, err := os.Stat(run.TrackDir); err == nil {
			name = run.TrackDir
		} else {
			where = fmt.Sprintf(" (its folder %s is gone: pass --track with where it is now)", run.TrackDir)
		}
	}
	spec, err := registry(cfg).Get(name)
	if err != nil {
		return nil, usage(fmt.Errorf("run %s is on track %s%s: %w", run.Name, run.Track, where, err))
	}
	return spec, nil
}
