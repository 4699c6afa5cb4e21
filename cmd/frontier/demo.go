package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// demoOptions are the inputs of "frontier demo".
type demoOptions struct {
	track       string
	out         string
	duration    time.Duration
	iterations  int
	evaluations int
	pairs       int
	proposer    string
	asJSON      bool
	// together runs the two programs of each pair of the series at once
	// (demoTogether).
	together bool
}

// demoTrack is the demo's track: the tiny track on one thread, so that
// the two runs of a series' pair share two cores.
const demoTrack = "tiny-1cpu"

// demoTogether reports whether the series runs the two programs of each
// pair at once on a machine of cpus CPUs: when both fit on their own cores
// (a CPU track). Two 1-thread runs of the tiny reference at once each
// measured about 5% more CPU time than one alone, and both ended in the
// time of one (tracks/tiny-1cpu/README.md). The search keeps one slot:
// beside two CPU burners, children timed two at once that trained 17% to
// 20% fewer steps measured 9% to 14% more CPU time than the reference,
// timed with one neighbour fewer (one demo run, docs/evolve.md).
func demoTogether(spec *track.Spec, cpus int) bool {
	return spec.Hardware.Device != "cuda" && cpus >= 2*max(1, spec.Hardware.Threads)
}

func newDemoCmd(g *globals) *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A short search on the tiny track (one thread), its best program confirmed against the reference, and the report (15 to 20 minutes on 2 quiet cores, longer on a busy machine)",
		Long: `Demo runs a short evolutionary search on the built-in tiny-1cpu track (the
tiny track on one CPU thread), then tests the fastest acceptable program it
found against the reference in an interleaved series (both programs, --pairs
runs each, in alternation, the two runs of each pair at once on a machine
with 2 or more cores, with Welch's test on the time and a t-test of the loss
against the target), and writes the report.

It uses the models configured under llm: in frontier.yaml when one is usable
(its API key is set, or its local server answers), else the mutate baseline,
which needs no model. The search's budget counts full evaluations, not
minutes, so a slower or busier machine does the same work, only later:
15 to 20 minutes on 2 quiet cores, longer on a busy machine (timings in
docs/evolve.md; --duration caps the search's time as well).

When the series shows the fastest program's time held up but its loss did
not, the demo tries once more with the fastest other program whose loss
leaves the room the reference's seeds needed.

At the end it says whether the speedup was confirmed, with its evidence (n,
the interval, p), or that it was not, or that the search found no acceptable
program faster than the reference.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "", "report folder (default: <home>/reports/<run>)")
	f.DurationVar(&o.duration, "duration", 0, "search time before the run drains (0: no limit; the budget is --evaluations)")
	f.IntVar(&o.iterations, "iterations", 2, "iterations of the search")
	f.IntVar(&o.evaluations, "evaluations", 7, "full evaluations of the search, the reference's included")
	f.IntVar(&o.pairs, "pairs", 5, "runs of each program in the confirmation series (0: no confirmation; under 5 a rank test cannot reach p < 0.01)")
	f.StringVar(&o.proposer, "proposer", "auto", "auto (a usable configured model, else mutate), llm or mutate")
	f.BoolVar(&o.asJSON, "json", false, "print the outcome as JSON: the search, the confirmation, the report's path")
	f.StringVar(&o.track, "track", demoTrack, "track (for trying the demo on another small track)")
	f.MarkHidden("track")
	return cmd
}

// demoConfig is the search the demo runs: small enough to end, with its
// confirmation series, in 15 to 20 minutes on two quiet cores, large
// enough to show islands, migration, the archive and, with a model,
// meta-prompting and the fix loop. The engine's own confirmation is off:
// the demo confirms its fastest program once, after the search, so that
// the series always fits.
func demoConfig(o demoOptions) evolve.Config {
	return evolve.Config{
		Islands: 2, BranchingFactor: 3, ArchiveSize: 8, Slots: 1, LLMConcurrency: 3,
		Migration:     evolve.MigrationConfig{Interval: 1, Count: 1},
		MetaPrompting: evolve.MetaConfig{StartIteration: ptrTo(2)},
		FastFixes:     ptrTo(2),
		Proposer:      o.proposer,
		Confirm:       evolve.ConfirmConfig{Enabled: ptrTo(false)},
		Budget: evolve.BudgetConfig{MaxIterations: o.iterations, MaxEvaluations: o.evaluations,
			MaxDuration: llm.Duration(o.duration), MaxUSD: 2},
	}
}

func ptrTo[T any](v T) *T { return &v }

func runDemo(ctx context.Context, g *globals, o demoOptions) error {
	if o.iterations < 1 || o.evaluations < 2 {
		return usage(fmt.Errorf("--iterations %d, --evaluations %d: the demo needs at least one iteration and two full evaluations (the reference and a child)", o.iterations, o.evaluations))
	}
	if o.pairs == 1 || o.pairs < 0 {
		return usage(fmt.Errorf("--pairs %d: a comparison needs at least 2 runs of each program (0: no confirmation)", o.pairs))
	}
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	if o.track == "" {
		o.track = demoTrack
	}
	spec, err := lookupTrack(cfg, o.track)
	if err != nil {
		return err
	}
	o.together = demoTogether(spec, runtime.NumCPU())
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
	fmt.Fprintf(g.stderr, "frontier demo: a short search on the %s track with %s (%d full evaluations), then its fastest program against the reference, %d runs each %s; 15 to 20 minutes on 2 quiet cores, longer on a busy or slower machine (an estimate for this one follows the reference's run).\n",
		o.track, proposer, o.evaluations, o.pairs, pairingText(o.together))
	name := "demo-" + time.Now().Format("20060102-150405")
	clock := newDemoClock(g.stderr, o)
	sum, err := evolveRun(ctx, g, evolveOptions{track: o.track, name: name, asJSON: o.asJSON, onStatus: clock.observe}, cfg, env)
	if err != nil {
		return err
	}
	// With --json, one document at the end says what the text says.
	var out demoJSON
	if o.asJSON {
		if out.Search, err = searchJSON(ctx, env.store, sum); err != nil {
			return err
		}
	} else {
		printEvolveSummary(g.stdout, sum)
	}
	if err := stopError(sum); err != nil {
		if o.asJSON {
			out.Outcome, out.Message = "stopped", err.Error()
			writeJSON(g.stdout, out)
		}
		if _, interrupted := err.(interruptedError); interrupted {
			return err
		}
		return fmt.Errorf("the demo's run stopped: %s", sum.StopDetail)
	}
	st := sum.Status
	// The fastest single timing is what the series tests; without one,
	// the record (the reference).
	shown := st.FastestID
	if shown == 0 {
		shown = st.BestTimeID
	}
	if !o.asJSON {
		if err := printChildEvaluation(ctx, g.stdout, env.store, shown); err != nil {
			g.log.Warn("demo: no telemetry report for the fastest program", "child", shown, "err", err)
		}
	}

	// The search's times are single timings; the series decides.
	var confirmErr error
	switch {
	case o.pairs > 0:
		series, err := demoSeries(ctx, g, cfg, env, sum.RunName, o)
		for i, oc := range series {
			if i == len(series)-1 {
				out.Confirmation, confirmErr = oc.json(), oc.err()
			} else {
				out.Earlier = append(out.Earlier, oc.json())
			}
		}
		if err != nil {
			confirmErr = err
		}
		if o.asJSON && errors.Is(confirmErr, errNothingToConfirm) {
			out.Confirmation = &confirmationJSON{Reason: confirmErr.Error()}
		}
	}

	d, err := runview.LoadReport(ctx, env.store, sum.RunName)
	if err != nil {
		return fmt.Errorf("demo: read the run for its report: %w", err)
	}
	d.GeneratedAt = time.Now()
	dir := o.out
	if dir == "" {
		dir = filepath.Join(cfg.Home, "reports", sum.RunName)
	}
	index, err := report.Write(ctx, dir, d)
	if err != nil {
		return fmt.Errorf("demo: write the report: %w", err)
	}
	out.Report = index
	if !o.asJSON {
		fmt.Fprintf(g.stdout, "\nreport: %s\n", index)
	}

	var nc *notConfirmedError
	switch {
	case confirmErr == nil && o.pairs > 0:
		out.Outcome = "confirmed"
		out.Message = fmt.Sprintf("the demo found a faster program and confirmed it against the reference in alternation (above: n, the interval, p); frontier runs show %s tells the rest", sum.RunName)
	case errors.Is(confirmErr, errNothingToConfirm):
		out.Outcome = "nothing_faster"
		out.Message = fmt.Sprintf("no confirmed speedup: no acceptable program was measured faster than the reference (%s, one timing) in this short search; frontier evolve --resume %s --evaluations N continues it",
			secsText(st.ReferenceTimeMs), sum.RunName)
	case errors.As(confirmErr, &nc):
		out.Outcome = "not_confirmed"
		out.Message = fmt.Sprintf("no confirmed speedup: %s (the series above, with its evidence)", nc.reason)
	case confirmErr != nil:
		if o.asJSON {
			out.Outcome, out.Message = "failed", confirmErr.Error()
			writeJSON(g.stdout, out)
		}
		return confirmErr
	case st.FastestID != 0 && st.ReferenceTimeMs > 0:
		out.Outcome = "unconfirmed"
		out.Message = fmt.Sprintf("the fastest acceptable program (#%d) measured %s against the reference's %s: single timings, not confirmed (frontier runs confirm %s tests it)",
			st.FastestID, secsText(st.FastestMs), secsText(st.ReferenceTimeMs), sum.RunName)
	default:
		out.Outcome = "nothing_faster"
		out.Message = fmt.Sprintf("no acceptable program was measured faster than the reference in this short search; frontier evolve --resume %s continues it", sum.RunName)
	}
	if o.asJSON {
		return writeJSON(g.stdout, out)
	}
	fmt.Fprintln(g.stdout, out.Message)
	return nil
}

// demoJSON is demo --json: the search, the confirmation of its fastest
// program, the report, and the outcome in a word ("confirmed",
// "not_confirmed", "nothing_faster", "unconfirmed" without a series,
// "stopped" or "failed") and in a sentence.
type demoJSON struct {
	Search       *evolveJSON       `json:"search,omitempty"`
	Confirmation *confirmationJSON `json:"confirmation,omitempty"`
	// Earlier is the series of a program tried before Confirmation's: one
	// whose time held up and whose loss did not (see demoSeries).
	Earlier []*confirmationJSON `json:"earlier,omitempty"`
	Report  string              `json:"report,omitempty"`
	Outcome string              `json:"outcome"`
	Message string              `json:"message"`
}

// demoSeries confirms the search's fastest program against the reference.
// When its time held up and its loss did not (a program picked for one
// seed's luck), it tries once more with the fastest other program whose
// loss on the search's seed leaves the room the reference's own seeds
// needed in the series (nextCandidate); with nothing that qualifies it
// stops at the first. It returns the series in the order they ran.
func demoSeries(ctx context.Context, g *globals, cfg *config.Config, env *environment, run string, o demoOptions) ([]*confirmOutcome, error) {
	co := confirmOptions{repeats: o.pairs, seed: 1, together: o.together}
	var out []*confirmOutcome
	for {
		if !o.asJSON {
			fmt.Fprintln(g.stdout)
		}
		oc, err := runConfirmation(ctx, g, cfg, env, run, co)
		if err != nil {
			return out, err
		}
		out = append(out, oc)
		if !o.asJSON {
			writeConfirmation(g.stdout, oc.cl, oc.res, oc.cand, oc.base, oc.s)
		}
		if len(out) > 1 {
			return out, nil
		}
		next, limit := nextCandidate(oc)
		if next == nil {
			return out, nil
		}
		fmt.Fprintf(g.stderr, "\n#%d's time held up in the series but its loss did not; #%d (%s, loss %.4f on the search's seed) leaves the room the reference's seeds needed (loss at most %.4f): its series next\n",
			oc.cand.ID, next.ID, secsText(next.TrainTimeMs), next.ValLoss, limit)
		co.child = next.ID
	}
}

// nextCandidate is the program to confirm after oc when oc's candidate was
// faster in the series (Welch significant) but its mean loss was not
// significantly under the target: the fastest other acceptable program of
// the run, measured faster than the baseline in the search, whose loss on
// the search's seed is at most the target less t(1-alpha, n-1) sd/sqrt(n),
// sd being the spread of the baseline's loss over the series' n seeds:
// the room a program with the baseline's spread needs to pass the loss
// test. It returns nil when oc is not such a series or nothing qualifies,
// and the limit it applied.
func nextCandidate(oc *confirmOutcome) (*store.Child, float64) {
	rp := oc.res.Repeats
	if oc.cl.State != runs.ClaimRejected || rp == nil || rp.Baseline == nil || !rp.Baseline.Test.Significant ||
		rp.LossTest == nil || rp.LossTest.Significant {
		return nil, 0
	}
	var losses []float64
	for _, r := range rp.Baseline.Runs {
		if r.ValLoss > 0 && (r.Verdict == eval.Acceptable || r.Verdict == eval.LossTooHigh) {
			losses = append(losses, r.ValLoss)
		}
	}
	target := oc.res.Track.Target
	if len(losses) < 2 || target <= 0 {
		return nil, 0
	}
	sd := stats.Summarize(losses, 0.95).SD
	n := float64(len(losses))
	limit := target - stats.Quantile(1-oc.cl.Alpha, n-1)*sd/math.Sqrt(n)
	refuted := map[int64]bool{oc.cand.ID: true}
	for _, cl := range oc.s.Claims {
		if cl.State == runs.ClaimRejected || cl.State == runs.ClaimFailed {
			refuted[cl.ChildID] = true
		}
	}
	var best *store.Child
	for _, c := range oc.s.Children {
		if c.State != runs.Done || c.Verdict != runs.Acceptable || refuted[c.ID] || c.ID == oc.base.ID ||
			c.ProgramHash == oc.base.ProgramHash || !(c.TrainTimeMs < oc.s.RecordSingleMs) || c.ValLoss > limit {
			continue
		}
		if best == nil || c.TrainTimeMs < best.TrainTimeMs {
			best = c
		}
	}
	return best, limit
}

// printChildEvaluation writes the full evaluation report (verdict, loss,
// time, sections, top ops) of a child's full run, read back from the store.
func printChildEvaluation(ctx context.Context, w io.Writer, st store.Store, childID int64) error {
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
	fmt.Fprintf(w, "\nprogram #%d, its full run (one timing):\n\n", childID)
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
