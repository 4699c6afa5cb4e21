package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

// runsShow prints a run's summary: settings, where it stands, its record
// with the evidence, the verdicts, the best programs, the claims, the
// islands, the models and stages, and the spend by purpose.
func runsShow(ctx context.Context, w io.Writer, st store.Store, ref string, asJSON bool) error {
	s, err := summarizeRun(ctx, st, ref)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, s.Doc(time.Now()))
	}
	showHeader(w, s)
	showRecord(w, s)
	showVerdicts(w, s)
	showBest(w, s)
	showClaims(w, s)
	showIslands(w, s)
	showGroups(w, s)
	showSpend(w, s)
	return nil
}

func showHeader(w io.Writer, s *runview.Summary) {
	run, c := s.Run, s.Settings
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
	resumed := ""
	if s.Resumed > 0 {
		resumed = fmt.Sprintf(" (resumed %d time(s))", s.Resumed)
	}
	fmt.Fprintf(w, "  started     %s; active %s over %d session(s)%s\n", run.StartedAt.Format(time.RFC3339), s.Active.Round(time.Second), run.Sessions, resumed)
	if run.TrackDir != "" {
		fmt.Fprintf(w, "  track from  %s\n", run.TrackDir)
	}
	fmt.Fprintf(w, "  search      %d islands, branching %d, archive %d, |T| %d, |D| %d, objective %s, seed %d\n",
		c.Islands, c.BranchingFactor, c.ArchiveSize, c.TopPrograms, c.DiversePrograms, c.Objective, run.Seed)
	fmt.Fprintf(w, "              selection %s, migration every %d iterations (top %d), fast fixes %d, slots %d, llm concurrency %d\n",
		c.Selection.Strategy, c.Migration.Interval, c.Migration.Count, c.FastFixes, c.Slots, c.LLMConcurrency)
	meta := "off"
	if s.MetaStart >= 0 {
		meta = fmt.Sprintf("from iteration %d", s.MetaStart)
	} else if c.MetaPrompting.Enabled {
		meta = fmt.Sprintf("planned from iteration %d (not reached)", c.MetaPrompting.StartIteration)
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
	fmt.Fprintf(w, "  progress    %d iterations, %d children, %d fast checks, %d full evaluations, %d confirmation series runs, %d migrations, archive %d\n",
		run.Iterations, len(s.Children), s.FastChecks, s.Evaluations, s.SeriesRuns, s.Migrations, len(s.Archive))
	fmt.Fprintf(w, "  spend       $%.4f, %d tokens, %d model calls", s.USD, s.Tokens, s.Calls)
	if s.LostCalls > 0 {
		fmt.Fprintf(w, " (%d lost when a session was killed)", s.LostCalls)
	}
	fmt.Fprintln(w)
}

// showRecord says what the run's record is and what it rests on, and what
// became of a faster single timing.
func showRecord(w io.Writer, s *runview.Summary) {
	switch {
	case s.Record == nil:
		fmt.Fprintln(w, "  record      none: the reference has no time yet")
	case s.RecordClaim == nil:
		fmt.Fprintf(w, "  record      the reference #%d, %s (single timing): no claim to beat it was confirmed\n", s.Record.ID, secsText(s.RecordSingleMs))
		if s.RecordN > 1 {
			fmt.Fprintf(w, "              %s is the mean of its %d runs in its newest series, under that series' load\n", secsText(s.RecordMs), s.RecordN)
		}
	default:
		fmt.Fprintf(w, "  record      #%d, %s vs the reference (%s)\n", s.Record.ID, runs.FormatSpeedup(s.RecordSpeedup), s.RecordBasis)
		fmt.Fprintf(w, "              %s once in the search; %s", secsText(s.RecordSingleMs), secsText(s.RecordMs))
		if s.RecordN > 1 {
			fmt.Fprintf(w, ", the mean of its %d runs in its newest series", s.RecordN)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "              evidence: %s\n", s.RecordClaim.Evidence())
	}
	if c := s.CandidateClaim(); c != nil {
		fmt.Fprintf(w, "  candidate   #%d measured %s once (%s vs the record's single timing %s): %s", c.ChildID, secsText(s.Candidate.TrainTimeMs),
			runs.FormatSpeedup(runs.Speedup(s.RecordSingleMs, s.Candidate.TrainTimeMs)), secsText(s.RecordSingleMs), c.State)
		if c.Reason != "" {
			fmt.Fprintf(w, ": %s", c.Reason)
		}
		fmt.Fprintln(w)
		if !c.State.Done() || c.State == runs.ClaimSkipped || c.State == runview.Unclaimed {
			fmt.Fprintf(w, "              test it: frontier runs confirm %s\n", s.Run.Name)
		}
	}
	if s.Settings.Confirm.Enabled {
		pairs := s.Settings.Confirm.Pairs
		line := "series of the fewest runs that can reach the track's alpha"
		if pairs > 0 {
			line = fmt.Sprintf("series of %d runs of each program", pairs)
		}
		fmt.Fprintf(w, "  confirm     %s\n", line)
		if pairs > 0 && len(s.Claims) > 0 {
			if warn := evolve.ShortSeries(pairs, s.Claims[0].Alpha); warn != "" && s.Claims[0].Alpha > 0 {
				fmt.Fprintf(w, "              warning: %s\n", warn)
			}
		}
	} else {
		fmt.Fprintln(w, "  confirm     off: candidates stay single timings")
	}
}

func showVerdicts(w io.Writer, s *runview.Summary) {
	fmt.Fprintln(w, "\nverdicts (what each child's attempts did)")
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
	if n := s.EndedOnDuplicate; n > 0 {
		fmt.Fprintf(w, "  and %d more ended on a program the run knew after a program of their own failed its fast check: they count by that failure\n", n)
	}
}

func showBest(w io.Writer, s *runview.Summary) {
	fmt.Fprintln(w, "\nbest programs (by the objective; times are single timings)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tITER\tISLAND\tMODEL\tSTAGE\tVERDICT\tVAL LOSS\tTRAIN TIME\tSPEEDUP\tSCORE\tCHANGE")
	cand := s.CandidateClaim()
	for _, x := range s.BestRows() {
		mark := ""
		switch {
		case s.Record != nil && x.ID == s.Record.ID && s.RecordClaim != nil:
			mark = " *"
		case cand != nil && x.ID == cand.ChildID:
			mark = " ?"
		}
		vs := "-"
		if s.Reference != nil && x.ID != s.Reference.ID {
			vs = runs.FormatSpeedup(runs.Speedup(s.Reference.TrainTimeMs, x.TrainTimeMs))
		}
		desc := x.Description
		if x.Origin == runs.OriginReference {
			desc = "(the reference)"
		}
		fmt.Fprintf(tw, "  %d%s\t%d\t%d\t%s\t%s\t%s\t%.4f\t%s\t%s\t%.1f\t%s\n", x.ID, mark, x.Iteration, x.Island, orDash(x.Model),
			x.Stage, x.Verdict, x.ValLoss, secsText(x.TrainTimeMs), vs, x.Score, clipText(desc, 60))
	}
	tw.Flush()
	fmt.Fprintln(w, "  SPEEDUP is (t_ref - t) / t_ref: the share of the reference's time saved, both single timings of the search")
	if s.RecordClaim != nil {
		fmt.Fprintln(w, "  * the record (confirmed)")
	}
	if cand != nil {
		fmt.Fprintln(w, "  ? faster once, not confirmed")
	}
}

// showClaims lists every claim, failed and rejected ones too.
func showClaims(w io.Writer, s *runview.Summary) {
	if len(s.Claims) == 0 {
		return
	}
	fmt.Fprintln(w, "\nclaims (candidate records and what testing them found)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tCANDIDATE\tAGAINST\tBY\tMETHOD\tN\tSTATE\tSPEEDUP\tFROM\t95% CI\tP TIME\tP LOSS\tREASON")
	for _, c := range s.Claims {
		ci := "-"
		if !math.IsNaN(c.SpeedupLo) && !math.IsNaN(c.SpeedupHi) {
			ci = runs.FormatSpeedup(c.SpeedupLo) + " to " + runs.FormatSpeedup(c.SpeedupHi)
		}
		fmt.Fprintf(tw, "  %d\t#%d\t#%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.ChildID, c.BaselineID, c.Source, c.Method, c.Pairs,
			c.State, runs.FormatSpeedup(c.Speedup), c.Basis(), ci, pText(c.TimeP), pText(c.LossP), clipText(c.Reason, 90))
	}
	tw.Flush()
	fmt.Fprintln(w, "  FROM says what a speedup compares: the means of the claim's series (both programs in alternation), or two single timings of the search")
}

func pText(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.2g", p)
}

func showIslands(w io.Writer, s *runview.Summary) {
	if len(s.Islands) == 0 {
		return
	}
	fmt.Fprintln(w, "\nislands")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ISLAND\tITERATIONS\tMEMBERS\tOWN\tCOPIES\tMIGRANTS IN/OUT\tBEST\tITS TIME\tITS LOSS")
	for _, is := range s.Islands {
		best, t, l := "-", "-", "-"
		if b := is.Best; b != nil {
			best, t, l = fmt.Sprintf("#%d %s", b.ID, b.Verdict), secsText(b.TrainTimeMs), fmt.Sprintf("%.4f", b.ValLoss)
			if b.Origin.IsCopy() {
				best += fmt.Sprintf(" (copy of #%d)", b.SourceID)
			}
		}
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%d\t%d\t%d/%d\t%s\t%s\t%s\n", is.Island, is.Iterations, is.Members, is.Originals, is.Copies,
			is.MigrantsIn, is.MigrantsOut, best, t, l)
	}
	tw.Flush()
}

func showGroups(w io.Writer, s *runview.Summary) {
	for _, grp := range []struct {
		title string
		rows  []runview.GroupStats
	}{{"per model", s.PerModel}, {"per stage", s.PerStage}} {
		fmt.Fprintf(w, "\n%s\n", grp.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tCHILDREN\tJUDGED\tRAN\tACCEPT\tRATE\tHIGH\tBUGGY\tDUP\tIMPROVED\tFIXED\tFASTEST\tTOKENS IN/OUT\tCOST")
		for _, m := range grp.rows {
			best := "-"
			if m.Fastest.ID != 0 {
				best = secsText(m.Fastest.TrainTimeMs)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%.0f%%\t%d\t%d\t%d\t%d\t%d\t%s\t%d/%d\t$%.4f\n", orDash(m.Name), m.Members,
				m.Judged(), m.Ran(), m.Classes[runs.ClassAcceptable], 100*m.AcceptableRate(), m.Classes[runs.TooHigh], m.Classes[runs.Buggy],
				m.Classes[runs.ClassDuplicate], m.Improved, m.Fixed, best, m.InputTokens, m.OutputTokens, m.CostUSD)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "  RATE is acceptable among judged children: those that ran, and those whose edit never applied (buggy, never run)")
}

// showSpend is the spend per purpose of the model calls.
func showSpend(w io.Writer, s *runview.Summary) {
	if len(s.Purposes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nspend by purpose")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PURPOSE\tCALLS\tSHARE\tFAILED\tLOST\tTOKENS IN/OUT\tCOST\tSHARE")
	for _, p := range s.Purposes {
		cost := "-"
		if s.USD > 0 {
			cost = fmt.Sprintf("%.0f%%", 100*p.CostUSD/s.USD)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%.0f%%\t%d\t%d\t%d/%d\t$%.4f\t%s\n", p.Purpose, p.Calls, 100*float64(p.Calls)/float64(max(1, s.Calls)),
			p.Failed, p.Lost, p.InputTokens, p.OutputTokens, p.CostUSD, cost)
	}
	tw.Flush()
}
