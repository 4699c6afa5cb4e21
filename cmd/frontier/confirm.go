package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

type confirmOptions struct {
	limit   time.Duration
	repeats int
	seed    int
	child   int64
	against string
	asJSON  bool
	quiet   bool
	// together runs each pair's two runs at once.
	together bool
}

func newRunsConfirmCmd(g *globals) *cobra.Command {
	var o confirmOptions
	cmd := &cobra.Command{
		Use:   "confirm RUN",
		Short: "Re-time a run's candidate record against its standing record, in alternation, and test the speedup",
		Long: `Confirm re-times a program of a run against another: N runs of each with the
same seeds, in alternation (baseline, candidate, candidate, baseline, ...), so
that a machine whose speed drifts favours neither. By default the candidate is
the run's fastest single timing when it is not the record yet (else the record
itself), and the baseline is the run's standing record (else the reference).
It prints both series, Welch's test that the candidate's time is under the
baseline's with the interval of the speedup, and the one-sided t-test that its
mean loss is under the target. The outcome is stored with the run, confirmed
or not: runs, runs show and the report show it.

The speedup is (t_baseline - t) / t_baseline, the share of the baseline's
time saved (docs/evolve.md).

Exit codes: 0 the speedup is confirmed (a record claim), 8 it is not, and the
eval command's codes when a run of the candidate fails.`,
		Example: `  frontier runs confirm run-3
  frontier runs confirm run-3 --child 17 --against reference --repeats 8`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsConfirm(cmd.Context(), g, args[0], o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.repeats, "repeats", 0, "runs of each program (default: the fewest that can reach the track's alpha, 5 at 0.01)")
	f.IntVar(&o.seed, "seed", 1, "the first seed; the pairs use seed..seed+N-1 (the search timed programs with seed 0)")
	f.Int64Var(&o.child, "child", 0, "the member to confirm (default: the fastest single timing, else the record)")
	f.StringVar(&o.against, "against", "", "record, reference or a member's id (default: the standing record, else the reference)")
	f.BoolVar(&o.asJSON, "json", false, "print the candidate's result as JSON (schema frontier.eval/v1)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	f.BoolVar(&o.together, "together", false, "run the two runs of each pair at once, each beside the other (a CPU track on a machine with a core for every thread of both): half the time, and a neighbour's cost falls on both alike")
	limitFlag(cmd, &o.limit)
	return cmd
}

// errNothingToConfirm: the run has no member faster than its reference to
// confirm.
var errNothingToConfirm = errors.New("nothing to confirm")

func runsConfirm(ctx context.Context, g *globals, ref string, o confirmOptions) error {
	if o.repeats == 1 || o.repeats < 0 {
		return usage(fmt.Errorf("--repeats %d: a comparison needs at least 2 runs of each program", o.repeats))
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return err
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
	// Nothing to confirm is a failure here (exit 1); evolve --confirm
	// says so and exits 0.
	return confirmRecord(ctx, g, cfg, env, ref, o)
}

// confirmPair picks the candidate and the baseline of a confirmation.
func confirmPair(s *runview.Summary, o confirmOptions) (cand, base *store.Child, err error) {
	byID := map[int64]*store.Child{}
	for _, c := range s.Members {
		byID[c.ID] = c
	}
	if s.Reference == nil {
		return nil, nil, fmt.Errorf("run %s has no reference: %w", s.Run.Name, errNothingToConfirm)
	}
	switch {
	case o.child != 0:
		cand = byID[o.child]
		if cand == nil || cand.Origin.IsCopy() || !cand.Verdict.Valid() {
			return nil, nil, usage(fmt.Errorf("run %s has no evaluated program #%d", s.Run.Name, o.child))
		}
	case s.Candidate != nil:
		cand = s.Candidate
	case s.Record != nil && s.Record.ID != s.Reference.ID:
		cand = s.Record
	default:
		return nil, nil, fmt.Errorf("run %s: no acceptable program measured faster than the reference; %w", s.Run.Name, errNothingToConfirm)
	}
	switch o.against {
	case "":
		base = s.Record
		if base == nil || base.ID == cand.ID {
			base = s.Reference
		}
	case "record":
		base = s.Record
	case "reference":
		base = s.Reference
	default:
		id, perr := strconv.ParseInt(strings.TrimPrefix(o.against, "#"), 10, 64)
		if perr != nil || byID[id] == nil {
			return nil, nil, usage(fmt.Errorf("--against %q: use record, reference or the id of a member of run %s", o.against, s.Run.Name))
		}
		base = byID[id]
	}
	if base == nil || base.ID == cand.ID || base.ProgramHash == cand.ProgramHash {
		return nil, nil, usage(fmt.Errorf("#%d cannot be compared with itself", cand.ID))
	}
	return cand, base, nil
}

// confirmRecord re-times run ref's candidate against its baseline, prints
// and stores the result; see newRunsConfirmCmd for the exit codes.
func confirmRecord(ctx context.Context, g *globals, cfg *config.Config, env *environment, ref string, o confirmOptions) error {
	oc, err := runConfirmation(ctx, g, cfg, env, ref, o)
	if err != nil {
		return err
	}
	if o.asJSON {
		if err := printResult(g.stdout, oc.res, true); err != nil {
			return err
		}
	} else {
		writeConfirmation(g.stdout, oc.cl, oc.res, oc.cand, oc.base, oc.s)
	}
	return oc.err()
}

// confirmOutcome is a series that ran: its stored claim, the candidate's
// result, the two programs and the run.
type confirmOutcome struct {
	cl         *store.Confirmation
	res        *eval.Result
	cand, base *store.Child
	s          *runview.Summary
}

// err is what the command returns for the series: nil when the speedup
// is confirmed, the verdict of a run that failed, else not confirmed.
func (oc *confirmOutcome) err() error {
	switch {
	case oc.cl.State == runs.ClaimConfirmed:
		return nil
	case oc.res.Verdict != eval.Acceptable && oc.res.Verdict != eval.LossTooHigh:
		return verdictResult(oc.res.Verdict)
	}
	return &notConfirmedError{oc.cl.Reason}
}

// confirmationJSON is a series in the JSON of evolve --confirm and demo:
// the claim it stored, and the verdict and reason of the candidate's
// result (runs confirm --json prints the whole result).
type confirmationJSON struct {
	Claim   *report.Claim `json:"claim,omitempty"`
	Verdict eval.Verdict  `json:"verdict,omitempty"`
	Reason  string        `json:"reason"`
}

func (oc *confirmOutcome) json() *confirmationJSON {
	cl := runview.Claim(oc.cl.Claim)
	return &confirmationJSON{Claim: &cl, Verdict: oc.res.Verdict, Reason: oc.res.Reason}
}

// runConfirmation picks run ref's candidate and baseline, runs the series
// and stores its claim.
func runConfirmation(ctx context.Context, g *globals, cfg *config.Config, env *environment, ref string, o confirmOptions) (*confirmOutcome, error) {
	st := env.store
	s, err := summarizeRun(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	run := s.Run
	cand, base, err := confirmPair(s, o)
	if err != nil {
		return nil, err
	}
	spec, err := runTrack(cfg, run, "")
	if err != nil {
		return nil, err
	}
	if run.TrackHash != "" && !eval.SpecMatches(spec, run.TrackHash, run.TrackDir, spec.Dir) {
		fmt.Fprintf(g.stderr, "warning: track %s changed since run %s; both programs are timed on the track as it is now\n", spec.Name, run.Name)
	}
	alpha := spec.Verification.Alpha
	pairs := o.repeats
	if pairs == 0 {
		pairs = evolveMinPairs(alpha)
	}
	if w := evolve.ShortSeries(pairs, alpha); w != "" {
		fmt.Fprintln(g.stderr, "warning: "+w)
	}
	if !o.quiet {
		fmt.Fprintf(g.stderr, "confirming #%d (%s, one timing in the search) against %s (%s): %d runs of each, %s\n",
			cand.ID, secsText(cand.TrainTimeMs), memberName(base, s), secsText(base.TrainTimeMs), pairs, pairingText(o.together))
		env.eval.Progress = func(line string) { fmt.Fprintln(g.stderr, line) }
	}
	cl, res, err := evolve.Confirm(ctx, st, evolve.ConfirmRequest{Run: run, Track: spec, CandidateID: cand.ID, BaselineID: base.ID,
		Pairs: pairs, Seed: o.seed, Evaluator: env.eval, CandidateName: fmt.Sprintf("%s-%d.py", run.Name, cand.ID), Together: o.together})
	if err != nil {
		return nil, err
	}
	return &confirmOutcome{cl: cl, res: res, cand: cand, base: base, s: s}, nil
}

// pairingText says how a series ran its pairs.
func pairingText(together bool) string {
	if together {
		return "in alternation, the two runs of each pair at once"
	}
	return "in alternation"
}

// evolveMinPairs is the default length of a series at alpha.
func evolveMinPairs(alpha float64) int { return evolve.Defaults().ConfirmPairs(alpha) }

// memberName names a member of a run for people: "#1 (the reference)".
func memberName(c *store.Child, s *runview.Summary) string {
	switch {
	case s.Reference != nil && c.ID == s.Reference.ID:
		return fmt.Sprintf("#%d (the reference)", c.ID)
	case s.Record != nil && c.ID == s.Record.ID:
		return fmt.Sprintf("#%d (the record)", c.ID)
	}
	return fmt.Sprintf("#%d", c.ID)
}

// writeConfirmation prints a series for people: the outcome first, said
// from the claim (never the evaluator's verdict of the candidate's mean,
// which reads LOSS_TOO_HIGH when every run reached the target but the mean
// is not significantly under it), then the runs and the tests.
func writeConfirmation(w io.Writer, cl *store.Confirmation, res *eval.Result, cand, base *store.Child, s *runview.Summary) {
	fmt.Fprintf(w, "confirmation of #%d against %s, %d runs of each %s\n", cand.ID, memberName(base, s), cl.Pairs,
		pairingText(res != nil && res.Repeats != nil && res.Repeats.Together))
	head := "CONFIRMED"
	if cl.State != runs.ClaimConfirmed {
		head = "NOT CONFIRMED"
	}
	fmt.Fprintf(w, "  %s: %s\n", head, cl.Evidence())
	rp := res.Repeats
	if rp == nil {
		fmt.Fprintf(w, "  %s\n", res.Reason)
		return
	}
	ok, reached := 0, 0
	for _, r := range rp.Runs {
		if r.Verdict == eval.Acceptable || r.Verdict == eval.LossTooHigh {
			ok++
		}
		if r.Verdict == eval.Acceptable {
			reached++
		}
	}
	switch {
	case cl.State == runs.ClaimFailed:
		fmt.Fprintf(w, "  a run failed: %s\n", res.Reason)
	case reached == len(rp.Runs) && rp.LossTest != nil && !rp.LossTest.Significant:
		fmt.Fprintf(w, "  every run reached the target (%d of %d), but %d runs cannot show the mean loss is under it: %s\n",
			reached, len(rp.Runs), len(rp.Runs), rp.LossTest)
	case cl.State != runs.ClaimConfirmed:
		fmt.Fprintf(w, "  why: %s\n", cl.Reason)
	}
	fmt.Fprintln(w, "\nruns (seconds)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  seed\t#%d\t#%d\tits loss\t\n", base.ID, cand.ID)
	var baseRuns []eval.RepeatRun
	if rp.Baseline != nil {
		baseRuns = rp.Baseline.Runs
	}
	for i := range max(len(rp.Runs), len(baseRuns)) {
		seed, b, c, l := "-", "-", "-", "-"
		if i < len(baseRuns) {
			seed, b = fmt.Sprint(baseRuns[i].Seed), secsText(baseRuns[i].TrainTimeMs)
		}
		if i < len(rp.Runs) {
			r := rp.Runs[i]
			seed, c, l = fmt.Sprint(r.Seed), secsText(r.TrainTimeMs), fmt.Sprintf("%.4f", r.ValLoss)
			if r.Verdict != eval.Acceptable {
				c += " " + string(r.Verdict)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", seed, b, c, l)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if rp.Baseline != nil {
		bs := rp.Baseline.TrainTimeMs
		fmt.Fprintf(w, "  #%-4d time %s ± %s (95%% CI %s to %s)\n", base.ID, secsText(bs.Mean), secsText(bs.SD), secsText(bs.CILo), secsText(bs.CIHi))
	}
	ts := rp.TrainTimeMs
	fmt.Fprintf(w, "  #%-4d time %s ± %s (95%% CI %s to %s), loss %.4f ± %.4f over %d runs\n",
		cand.ID, secsText(ts.Mean), secsText(ts.SD), secsText(ts.CILo), secsText(ts.CIHi), rp.ValLoss.Mean, rp.ValLoss.SD, ok)
	if rp.Baseline != nil {
		fmt.Fprintf(w, "  speedup %s, Welch: %s\n", runs.FormatSpeedup(cl.Speedup), rp.Baseline.Test)
	}
	if rp.LossTest != nil {
		fmt.Fprintf(w, "  loss under the target %.4g: %s\n", res.Track.Target, rp.LossTest)
	}
	fmt.Fprintf(w, "  stored as claim %d of run %s (frontier runs show %s)\n", cl.ID, s.Run.Name, s.Run.Name)
}
