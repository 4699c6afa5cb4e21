package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
)

type confirmOptions struct {
	repeats int
	seed    int
	asJSON  bool
	quiet   bool
}

func newRunsConfirmCmd(g *globals) *cobra.Command {
	var o confirmOptions
	cmd := &cobra.Command{
		Use:   "confirm RUN",
		Short: "Re-time a run's record against its reference, in alternation, and test the speedup",
		Long: `Confirm re-times a run's record (its fastest acceptable program) against the
run's reference: N runs of each with the same seeds, in alternation (reference,
record, record, reference, ...), so that a machine whose speed drifts favours
neither. It prints both series, the one-sided t-test that the record's mean
loss is under the target, and Welch's test that its time is under the
reference's. A search picks its record by single, noisy timings; this is how to
find out whether the speedup is real before claiming it.

Exit codes: 0 the speedup is confirmed (a record claim), 8 it is not, and the
eval command's codes when the record fails a run.`,
		Example: `  frontier runs confirm run-3 --repeats 5`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsConfirm(cmd.Context(), g, args[0], o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.repeats, "repeats", 5, "runs of each program (at least 2)")
	f.IntVar(&o.seed, "seed", 0, "the first seed; the pairs use seed..seed+N-1")
	f.BoolVar(&o.asJSON, "json", false, "print the record's result as JSON (schema frontier.eval/v1)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	return cmd
}

// errNothingToConfirm: the run's fastest acceptable program is its
// reference (or it has none).
var errNothingToConfirm = errors.New("nothing to confirm")

func runsConfirm(ctx context.Context, g *globals, ref string, o confirmOptions) error {
	if o.repeats < 2 {
		return usage(fmt.Errorf("--repeats %d: a comparison needs at least 2 runs of each program", o.repeats))
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	env, err := openEnvironment(ctx, g, cfg)
	if err != nil {
		return err
	}
	defer env.Close()
	// Nothing to confirm is a failure here (exit 1); evolve --confirm
	// says so and exits 0.
	return confirmRecord(ctx, g, cfg, env, ref, o)
}

// confirmRecord re-times run ref's record against its reference and
// prints the result; see newRunsConfirmCmd for the exit codes.
func confirmRecord(ctx context.Context, g *globals, cfg *config.Config, env *environment, ref string, o confirmOptions) error {
	st := env.store
	s, err := summarizeRun(ctx, st, ref)
	if err != nil {
		return err
	}
	run := s.Run
	if s.Record == nil || s.Reference == nil {
		return fmt.Errorf("run %s has no acceptable program: %w", run.Name, errNothingToConfirm)
	}
	if s.Record.ID == s.Reference.ID || s.Record.ProgramHash == s.Reference.ProgramHash {
		return fmt.Errorf("run %s: the reference is still the fastest acceptable program; %w", run.Name, errNothingToConfirm)
	}
	spec, err := registry(cfg).Get(run.Track)
	if err != nil {
		return usage(fmt.Errorf("run %s is on track %s: %w", run.Name, run.Track, err))
	}
	if h, err := eval.SpecHash(spec); err == nil && run.TrackHash != "" && h != run.TrackHash {
		fmt.Fprintf(g.stderr, "warning: track %s changed since run %s; both programs are timed on the track as it is now\n", spec.Name, run.Name)
	}
	best, err := st.Program(ctx, s.Record.ProgramHash)
	if err != nil {
		return err
	}
	base, err := st.Program(ctx, s.Reference.ProgramHash)
	if err != nil {
		return err
	}
	if !o.quiet {
		fmt.Fprintf(g.stderr, "confirming #%d (%s in the search) against the reference #%d (%s): %d runs of each\n",
			s.Record.ID, secsText(s.Record.TrainTimeMs), s.Reference.ID, secsText(s.Reference.TrainTimeMs), o.repeats)
		env.eval.Progress = func(line string) { fmt.Fprintln(g.stderr, line) }
	}
	req := eval.Request{Track: spec, Program: best, Name: fmt.Sprintf("%s-%d.py", run.Name, s.Record.ID), Seed: o.seed}
	res, err := env.eval.EvaluateRepeats(ctx, eval.RepeatRequest{Request: req, N: o.repeats, Baseline: base})
	if err != nil {
		return err
	}
	if err := printResult(g.stdout, res, o.asJSON); err != nil {
		return err
	}
	switch {
	case res.Verdict != eval.Acceptable && res.Verdict != eval.LossTooHigh:
		return verdictResult(res.Verdict)
	case res.Repeats == nil || !res.Repeats.Record:
		reason := "no record claim"
		if res.Repeats != nil {
			reason = res.Repeats.RecordReason
		}
		return &notConfirmedError{reason}
	}
	return nil
}
