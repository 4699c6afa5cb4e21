package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/frontier-bench/frontier/internal/track"
)

// WriteReport prints a result for people: the verdict, the headline
// figures against the target and the floor, then the telemetry tables.
func WriteReport(w io.Writer, r *Result) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "verdict       %s", strings.ToUpper(string(r.Verdict)))
	if r.Rule != "" {
		fmt.Fprintf(b, " (%s)", r.Rule)
	}
	fmt.Fprintf(b, "\nreason        %s\n", r.Reason)
	fmt.Fprintf(b, "program       %s  sha256 %s  %d bytes\n", nonEmpty(r.Program.Name, "(stdin)"), short(r.Program.Hash), r.Program.Bytes)
	fmt.Fprintf(b, "track         %s  (%s, target %.4g", r.Track.Name, r.Track.Device, r.Track.Target)
	if r.Track.LossFloor > 0 {
		fmt.Fprintf(b, ", loss floor %.4f", r.Track.LossFloor)
	}
	fmt.Fprintf(b, ")  seed %d  verification %s\n", r.Seed, r.Verification)
	if r.EvaluationID > 0 {
		fmt.Fprintf(b, "evaluation    #%d\n", r.EvaluationID)
	}
	m := r.Metrics
	if m.ValLoss > 0 {
		fmt.Fprintf(b, "\nval loss      %.4f  (target %.4g: %+.4f", m.ValLoss, r.Track.Target, m.ValLoss-r.Track.Target)
		if r.Track.LossFloor > 0 {
			fmt.Fprintf(b, "; floor %.4f: %+.4f", r.Track.LossFloor, m.GapToFloor)
		}
		fmt.Fprintf(b, ")  over %d tokens\n", m.ValTokens)
	}
	if m.TrainTimeMs > 0 {
		if m.Clock == track.ClockCPU {
			// The track's clock: say it where the time is.
			fmt.Fprintf(b, "train time    %s of CPU  (the track's clock; %s of wall time; %d steps, %.2f CPU ms/step; compile and warm-up before it: %s; the whole run: wall %s",
				fmtMs(m.TrainTimeMs), fmtMs(m.WallTrainMs), m.Steps, m.StepAvgMs, fmtMs(m.PreTrainMs), fmtMs(m.WallMs))
		} else {
			fmt.Fprintf(b, "train time    %s  (%d steps, %.2f ms/step; compile and warm-up before it: %s; wall %s",
				fmtMs(m.TrainTimeMs), m.Steps, m.StepAvgMs, fmtMs(m.PreTrainMs), fmtMs(m.WallMs))
		}
		if m.CPUMs > 0 {
			fmt.Fprintf(b, ", CPU %s", fmtMs(m.CPUMs))
		}
		b.WriteString(")\n")
		if m.Tokens > 0 {
			fmt.Fprintf(b, "throughput    %s tokens/s  (%s training tokens)\n", humanInt(int64(m.TokensPerS)), humanInt(m.Tokens))
		}
		fmt.Fprintf(b, "score         %.2f  (step_avg_ms x val_loss, lower is better)\n", m.Score)
	}
	if m.PeakRSSMB > 0 {
		fmt.Fprintf(b, "peak memory   %.0f MB RSS", m.PeakRSSMB)
		if m.CUDAAllocMB > 0 {
			fmt.Fprintf(b, ", CUDA %.0f MB allocated / %.0f MB reserved", m.CUDAAllocMB, m.CUDAResMB)
		}
		b.WriteString("\n")
	}
	if r.Environment.Torch != "" {
		fmt.Fprintf(b, "environment   torch %s, %d threads, %s, sandbox %s", r.Environment.Torch, r.Environment.Threads, r.Environment.Device, r.Environment.Sandbox)
		if r.Environment.BLAS != "" {
			fmt.Fprintf(b, ", %s", r.Environment.BLAS)
		}
		b.WriteString("\n")
	}
	writeChecks(b, r)
	for _, ph := range []*Phase{r.Fast, r.Full} {
		if ph == nil {
			continue
		}
		fmt.Fprintf(b, "%-13s %s in %s", ph.Mode+" run", ph.Status, fmtMs(ph.WallMs))
		if ph.Steps > 0 {
			fmt.Fprintf(b, ", %d steps", ph.Steps)
		}
		if ph.Message != "" && ph.Status != "ok" {
			fmt.Fprintf(b, ": %s", ph.Message)
		}
		b.WriteString("\n")
		if ph.LimitNote != "" {
			fmt.Fprintf(b, "%-13s %s\n", "", ph.LimitNote)
		}
		if c := ph.Conditions.Summary(); c != "" {
			fmt.Fprintf(b, "%-13s ran under: %s\n", "", c)
		}
	}

	if rp := r.Repeats; rp != nil {
		writeRepeats(b, r, rp)
	}
	if len(r.Curve) > 0 {
		b.WriteString("\nprogress\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  step\ttrain time\tms/step\ttokens/s\ttrain loss\t")
		for _, s := range r.Curve {
			loss := "-"
			if s.TrainLoss != nil {
				loss = fmt.Sprintf("%.4f", *s.TrainLoss)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%.2f\t%s\t%s\t\n", s.Step, fmtMs(s.TrainTimeMs), s.StepAvgMs, humanInt(int64(s.TokensPerS)), loss)
		}
		tw.Flush()
	}
	if len(r.Vals) > 0 {
		b.WriteString("\nvalidation\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  step\tval loss\ttokens\ttook\t")
		for _, v := range r.Vals {
			fmt.Fprintf(tw, "  %d\t%.4f\t%d\t%s\t\n", v.Step, v.ValLoss, v.Tokens, fmtMs(v.Ms))
		}
		tw.Flush()
	}
	if len(r.Sections) > 0 {
		b.WriteString("\nsections (share of train time)\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  section\ttotal\tavg\t%\tcalls\t")
		for _, s := range r.Sections {
			fmt.Fprintf(tw, "  %s\t%s\t%.3f ms\t%.1f\t%d\t\n", s.Name, fmtMs(s.TotalMs), s.AvgMs, s.Pct, s.Calls)
		}
		tw.Flush()
	}
	if r.TopOps != nil && len(r.TopOps.Ops) > 0 {
		kind := "CPU ops"
		if r.TopOps.Kind == "cuda" {
			kind = "CUDA kernels"
		}
		fmt.Fprintf(b, "\ntop %d %s (profiled steps %v)\n", len(r.TopOps.Ops), kind, r.TopOps.Steps)
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  op\ttotal\tcalls\t")
		for _, op := range r.TopOps.Ops {
			fmt.Fprintf(tw, "  %s\t%.3f ms\t%d\t\n", clip(op.Name, 60), op.TotalMs, op.Calls)
		}
		tw.Flush()
	}
	if r.Traceback != "" {
		fmt.Fprintf(b, "\ntraceback\n%s\n", indent(r.Traceback))
	} else if ph := failedPhase(r); ph != nil && ph.StderrTail != "" {
		fmt.Fprintf(b, "\nend of stderr (%s run)\n%s\n", ph.Mode, indent(ph.StderrTail))
	}
	for _, wmsg := range r.Warnings {
		fmt.Fprintf(b, "\nwarning: %s", wmsg)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
	}
	if r.RunDir != "" {
		fmt.Fprintf(b, "\nrun folder kept in %s\n", r.RunDir)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeChecks says what the judge verified in the judged run, so that a
// reader sees what an acceptable verdict rests on.
func writeChecks(b *strings.Builder, r *Result) {
	if p := r.Probe; p != nil {
		if p.OK {
			fmt.Fprintf(b, "causality     ok: %d perturbations in %d rows moved no earlier logit", p.Perturbations, p.Sequences)
			if p.RowCheck > 0 {
				b.WriteString(", no other row")
			}
			if p.DocIsolated {
				b.WriteString(", no other document")
			}
			fmt.Fprintf(b, " (tolerance %.2g, noise %.2g)\n", p.Tolerance, p.NoiseFloor)
		} else {
			fmt.Fprintf(b, "causality     FAILED: %s\n", p.Message)
		}
	}
	if c := r.Checks; c != nil {
		fmt.Fprintf(b, "judge         %s, %s by the judge", count(c.Validations, "validation"), count(c.Calls, "logits_fn call"))
		if c.ChargedMs > 0.5 {
			fmt.Fprintf(b, "; %.0f ms of validation calls slower than a forward pass counted as train time", c.ChargedMs)
		}
		if c.ValidationBudgetMs != nil {
			fmt.Fprintf(b, "; validations outside the clock %.1f s (at most %.1f s)", c.ValidationMs/1000, *c.ValidationBudgetMs/1000)
		}
		switch {
		case c.InitialLoss != nil:
			fmt.Fprintf(b, "; the model that started the clock scores %.4f (at least %.4f)", *c.InitialLoss, c.InitialLossMin)
		case c.InitialSkipped != "":
			fmt.Fprintf(b, "; %s", c.InitialSkipped)
		}
		b.WriteByte('\n')
	}
	if r.TelemetryLines > 0 {
		fmt.Fprintf(b, "telemetry     %d lines, written by the judge\n", r.TelemetryLines)
	}
}

func writeRepeats(b *strings.Builder, r *Result, rp *Repeats) {
	fmt.Fprintf(b, "\nrepeats (%d of %d runs)\n", len(rp.Runs), rp.N)
	writeRuns(b, rp.Runs)
	l, t := rp.ValLoss, rp.TrainTimeMs
	fmt.Fprintf(b, "  val loss    mean %.4f  sd %.4f  95%% CI [%.4f, %.4f]\n", l.Mean, l.SD, l.CILo, l.CIHi)
	fmt.Fprintf(b, "  train time  mean %s  sd %s  95%% CI [%s, %s]\n", fmtMs(t.Mean), fmtMs(t.SD), fmtMs(t.CILo), fmtMs(t.CIHi))
	if rp.LossTest != nil {
		fmt.Fprintf(b, "  loss < %.4g: %s\n", r.Track.Target, rp.LossTest)
	}
	if bc := rp.Baseline; bc != nil {
		if len(bc.Runs) > 0 {
			fmt.Fprintf(b, "  baseline %s, run in alternation with the program (ABBA order, the same seeds)\n", short(bc.ProgramHash))
			writeRuns(b, bc.Runs)
		}
		fmt.Fprintf(b, "  vs baseline %s (%d runs, mean %s): %.2f%% faster; Welch %s\n",
			short(bc.ProgramHash), bc.TrainTimeMs.N, fmtMs(bc.TrainTimeMs.Mean), bc.SpeedupPct, bc.Test)
	}
	claim := "no record claim"
	if rp.Record {
		claim = "RECORD CLAIM"
	}
	fmt.Fprintf(b, "  %s: %s\n", claim, rp.RecordReason)
}

// count is "1 thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func writeRuns(b *strings.Builder, runs []RepeatRun) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  seed\tverdict\tval loss\ttrain time\tms/step\tevaluation\t")
	for _, run := range runs {
		fmt.Fprintf(tw, "  %d\t%s\t%.4f\t%s\t%.2f\t#%d\t\n", run.Seed, run.Verdict, run.ValLoss, fmtMs(run.TrainTimeMs), run.StepAvgMs, run.EvaluationID)
	}
	tw.Flush()
}

func failedPhase(r *Result) *Phase {
	for _, ph := range []*Phase{r.Full, r.Fast} {
		if ph != nil && ph.Status != "ok" {
			return ph
		}
	}
	return nil
}

func fmtMs(ms float64) string {
	switch {
	case ms <= 0:
		return "0s"
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.2fs", ms/1000)
	}
	return fmt.Sprintf("%dm%04.1fs", int(ms/60_000), (ms-float64(int(ms/60_000))*60_000)/1000)
}

func humanInt(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
