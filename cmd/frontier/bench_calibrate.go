package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/bench"
)

func newBenchCalibrateCmd(g *globals) *cobra.Command {
	var o bench.CalibrateOptions
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "calibrate SUITE",
		Short: "Re-time a suite's records on this machine, in alternation, for its scores",
		Long: `Calibrate runs every record of a suite --repeats times, round by round in
alternation (forward, then backward), and records each record's mean train time
and its noise for this machine's class. Scores then use these times instead of
the published ones (bench run says which it used). It prints each task's
calibrated speedup with Welch's one-sided test that the goal is faster.`,
		Example: `  frontier bench calibrate tiny-ladder --repeats 5`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			s, err := suiteRegistry().Get(args[0])
			if err != nil {
				return usage(err)
			}
			if o.Repeats < 2 {
				return usage(fmt.Errorf("--repeats %d: a calibration needs at least 2 runs of each record", o.Repeats))
			}
			env, err := openEnvironment(cmd.Context(), g, cfg)
			if err != nil {
				return err
			}
			defer env.Close()
			benv := bench.Env{Store: env.store, Evaluator: env.eval, Tracks: registry(cfg), Log: g.log}
			if !quiet {
				benv.Progress = func(line string) { fmt.Fprintln(g.stderr, line) }
			}
			rep, err := bench.Calibrate(cmd.Context(), benv, s, o)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, rep)
			}
			return printCalibration(g.stdout, rep)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Repeats, "repeats", 5, "runs of each record")
	f.StringSliceVar(&o.Tasks, "task", nil, "calibrate only the records of these tasks (repeat)")
	f.BoolVar(&asJSON, "json", false, "print the calibration as JSON")
	f.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	return cmd
}

func printCalibration(w io.Writer, rep *bench.CalibrationReport) error {
	fmt.Fprintf(w, "suite %s calibrated on %s, %d runs per record in alternation; %s\n", rep.Suite, rep.Class, rep.Repeats,
		bench.ConditionsText(rep.At, rep.Conditions))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECORD\tTRACK\tN\tTRAIN TIME (95%)\tSD\tVAL LOSS\tPUBLISHED\tNOTE")
	for _, r := range rep.Records {
		t := r.TrainTimeMs
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s [%s, %s]\t%s\t%.4f\t%s\t%s\n", r.Record, r.Track, t.N, secsText(t.Mean), secsText(t.CILo),
			secsText(t.CIHi), secsText(t.SD), r.ValLoss.Mean, secsText(r.PublishedMs), r.Failed)
	}
	fmt.Fprintln(tw, "\nTASK\tSTART\tGOAL\tSPEEDUP\tWELCH (goal faster)")
	for _, g := range rep.Gaps {
		test := "-"
		if g.Test != nil {
			test = g.Test.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t%s\n", g.Task, secsText(g.StartMs), secsText(g.GoalMs), g.SpeedupPct, test)
	}
	return tw.Flush()
}
