package eval

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
)

// phaseOutcome is what one process established.
type phaseOutcome struct {
	phase *Phase
	tel   *harness.Telemetry
	// verdict is set when the phase failed (error, timeout, no_result,
	// invalid); empty when it reached finish with a finite loss.
	verdict   Verdict
	rule      string // for invalid verdicts
	reason    string
	traceback string
}

func (o *phaseOutcome) fastVerdict(spec *track.Spec) (Verdict, string) {
	return FastOK, fmt.Sprintf("fast check passed: %d steps ran and the program reached finish (val loss %.4f on the short slice); the full run was skipped, so this is not a measurement against the target %.4g",
		o.phase.Steps, o.phase.ValLoss, spec.TargetValLoss)
}

func (o *phaseOutcome) summary() string {
	if o.verdict != "" {
		return string(o.verdict) + ": " + o.reason
	}
	return fmt.Sprintf("%d steps, val loss %.4f", o.phase.Steps, o.phase.ValLoss)
}

// lossFloorMargin is how far under the loss floor a val loss may fall
// before it is impossible. The floor is the Bayes-optimal loss given the
// window; even the whole slice in view only gets 2.4% under it on the tiny
// track (2.3323 against 2.3887), and chance on 65,536 tokens is of the
// order of 0.01 nats (a per-token spread of about 2 nats over sqrt(65,536)),
// so 3% (0.07 nats) is out of an honest model's reach and far inside what
// any leak gains.
const lossFloorMargin = 0.03

// judgePhase classifies one phase from the runner's results (the program's
// and, when it ran, the scorer's) and the telemetry. Only the judge's own
// events count as results.
func judgePhase(spec *track.Spec, mode string, rr runner.Result, scorer *runner.Result, tel *harness.Telemetry) *phaseOutcome {
	p := &Phase{
		Mode: mode, Status: rr.Status, ExitCode: rr.ExitCode, WallMs: float64(rr.Wall) / 1e6,
		Message: rr.Message, ErrorLine: rr.ErrorLine, SkippedLines: tel.Skipped,
	}
	if scorer != nil {
		p.Scorer = &ScorerRun{Status: scorer.Status, ExitCode: scorer.ExitCode, WallMs: float64(scorer.Wall) / 1e6, Message: scorer.Message}
		if scorer.Status != runner.StatusOK {
			p.Scorer.StderrTail = lastLines(scorer.Stderr.String(), 30)
		}
	}
	o := &phaseOutcome{phase: p, tel: tel}
	var broken *harness.Error // the first broken rule the judge found
	for i := range tel.Errors {
		if tel.Errors[i].Judge && ruleCode(tel.Errors[i].Code) {
			broken = &tel.Errors[i]
			break
		}
	}
	// The first failure of the program (the judge's finding, else the
	// program's own account), and of the scorer.
	var cause, scorerCause *harness.Error
	for i := range tel.Errors {
		e := &tel.Errors[i]
		switch {
		case e.Scorer && scorerCause == nil:
			scorerCause = e
		case !e.Scorer && (cause == nil || e.Judge && !cause.Judge):
			cause = e
		}
	}
	if len(tel.Steps) > 0 {
		p.Steps = tel.Steps[len(tel.Steps)-1].Step + 1
	}
	if tel.Final != nil {
		p.Steps, p.ValLoss = tel.Final.Steps, tel.Final.ValLoss
	}
	if rr.Status != runner.StatusOK {
		p.StderrTail = lastLines(rr.Stderr.String(), 30)
	}
	switch {
	case tel.Finals > 1 || tel.Misattributed > 0:
		// The judge writes one result and reports the program's events as
		// the program's: anything else is not the judge's record.
		o.verdict = Error
		o.reason = fmt.Sprintf("internal: the telemetry holds %d results and %d events of the program's of kinds only the judge writes", tel.Finals, tel.Misattributed)
	case broken != nil:
		// A broken rule outranks how the process ended: the judge wrote
		// it the moment it found it, and the program may have hung or
		// been killed after.
		o.verdict, o.rule = Invalid, codeRule(broken.Code)
		o.reason = o.rule + ": " + broken.Message
		if broken.Rank > 0 {
			o.reason += fmt.Sprintf(" (process %d)", broken.Rank)
		}
		o.traceback = broken.Traceback
	case rr.Status == runner.StatusTimeout:
		o.verdict = Timeout
		o.reason = fmt.Sprintf("the %s run was killed at its wall-clock limit of %s", mode, limitOf(spec, mode))
		if n := p.Steps; n > 0 {
			o.reason += fmt.Sprintf(" after %d steps", n)
		}
		if mode == harness.ModeFast {
			o.reason += ". The fast check runs a few steps: a program that needs longer is stuck, or its setup is too slow; on a slow machine raise limits.fast_check"
		}
	case rr.Status == runner.StatusLimit:
		o.verdict = Error
		o.reason = "resource limit: " + rr.Message
	case rr.Status == runner.StatusCanceled:
		o.verdict, o.reason = Error, "the evaluation was canceled"
	case cause != nil && cause.Code == harness.ErrNoFinish:
		o.verdict, o.reason = NoResult, cause.Message
	case cause != nil:
		o.verdict = Error
		o.reason = cause.Kind + ": " + cause.Message
		if cause.Judge || cause.Code == harness.ErrState {
			o.reason = cause.Code + ": " + cause.Message
		}
		o.traceback = cause.Traceback
	case rr.Status != runner.StatusOK:
		o.verdict = Error
		o.reason = rr.Message
		if rr.ErrorLine != "" {
			o.reason = rr.ErrorLine
		}
		o.traceback = rr.Traceback
	case scorer != nil && scorer.Status == runner.StatusLimit:
		o.verdict = Error
		o.reason = "resource limit (the scorer): " + scorer.Message
	case scorer != nil && scorer.Status == runner.StatusTimeout:
		o.verdict = Error
		o.reason = "scorer: " + scorerTimeout
	case scorerCause != nil:
		o.verdict = Error
		o.reason = "scorer: " + scorerCause.Message
		if !scorerCause.Judge && scorerCause.Code != harness.ErrScorer {
			o.reason = "scorer: " + scorerCause.Kind + ": " + scorerCause.Message
		}
		o.traceback = scorerCause.Traceback
		if o.traceback == "" && scorer != nil {
			o.traceback = scorer.Traceback
		}
	case scorer != nil && scorer.Status != runner.StatusOK && tel.Final == nil:
		o.verdict = Error
		o.reason = "scorer: " + scorer.Message
		if scorer.ErrorLine != "" {
			o.reason = "scorer: " + scorer.ErrorLine
		}
		o.traceback = scorer.Traceback
	case tel.Final == nil:
		o.verdict = NoResult
		o.reason = "the program exited without a result: it must call fh.finish(logits_fn) at the end of training"
		if n := len(tel.Warnings); n > 0 && tel.Warnings[n-1].Code == harness.WarnNoSteps {
			o.reason += " (" + tel.Warnings[n-1].Message + ")"
		}
	case spec.Contract != "log" && (tel.Probe == nil || !tel.Final.Probe):
		// The judge writes the scorer's comparison before the result; a
		// result without it is not one this evaluator can vouch for.
		o.verdict = Error
		o.reason = "internal: the final validation was not answered again by the scorer"
	case tel.Checks == nil && spec.Contract != "log":
		o.verdict = Error
		o.reason = "internal: the judge's checks are not on record"
	case math.IsNaN(tel.Final.ValLoss) || math.IsInf(tel.Final.ValLoss, 0):
		o.verdict = Error
		o.reason = fmt.Sprintf("the validation loss is %v: training diverged", tel.Final.ValLoss)
	case tel.Probe != nil && !tel.Probe.OK:
		o.verdict = Invalid
		o.rule = RuleCausality
		o.reason = o.rule + ": " + tel.Probe.Message
	case mode == "full" && spec.Data.LossFloor > 0 && tel.Final.ValLoss < spec.Data.LossFloor*(1-lossFloorMargin):
		o.verdict, o.rule = Invalid, RuleLossFloor
		o.reason = fmt.Sprintf("%s: val loss %.4f is under the track's loss floor %.4f (the Bayes-optimal predictor's loss on this slice) by more than %.0f%%: no causal model can do that, so the model sees the tokens it predicts",
			RuleLossFloor, tel.Final.ValLoss, spec.Data.LossFloor, 100*lossFloorMargin)
	case len(tel.Steps) > 0 && tel.Final.TrainTimeMs+1 < tel.Steps[len(tel.Steps)-1].TrainTimeMs:
		o.verdict = Error
		o.reason = fmt.Sprintf("internal: the judge's train time %.0f ms is shorter than at its last step event (%.0f ms)", tel.Final.TrainTimeMs, tel.Steps[len(tel.Steps)-1].TrainTimeMs)
	case tel.Final.TrainTimeMs > float64(rr.Wall)/1e6+1:
		o.verdict = Invalid
		o.rule = RuleTiming
		o.reason = fmt.Sprintf("timing: the reported train time %.0f ms is longer than the process's whole wall time %.0f ms", tel.Final.TrainTimeMs, float64(rr.Wall)/1e6)
	}
	return o
}

// scorerTimeout says why a scorer that hit its limit fails the run.
const scorerTimeout = "the scorer (a fresh process of the program that answers the final validation again from the state exported at fh.finish()) did not finish within the compile budget and the run's limit: its setup up to fh.train_begin() or its logits_fn hangs"

// Rules of the behavioural checks: the Rule of an invalid verdict that the
// harness's telemetry decided.
const (
	RuleCausality        = "causality"             // the probe saw logits depend on later tokens, another document or another row
	RuleNondeterministic = "nondeterministic-eval" // the same input gave different logits beyond the noise limit
	RuleStatefulEval     = "stateful-validation"   // training, changed weights or changed logits during validation
	RulePretrain         = "pretrain"              // training before train_begin that the program did not undo
	RuleCompileBudget    = "compile-budget"        // setup before train_begin over the track's compile budget
	RuleTiming           = "timing"                // a train time the process's wall clock cannot contain
	RuleLossFloor        = "loss-floor"            // a val loss under the track's loss floor: the model sees what it predicts
	RuleValidationCost   = "validation-cost"       // validations outside the clock took more than the track allows
	RuleProtocol         = "protocol"              // the program's process sent the judge what the harness client never sends
)

// codeRule is the rule an error code of the harness's behavioural checks
// (harness.VerdictCode) breaks.
func codeRule(code string) string {
	switch code {
	case harness.ErrPretrain:
		return RulePretrain
	case harness.ErrStatefulEval:
		return RuleStatefulEval
	case harness.ErrNondeterministic:
		return RuleNondeterministic
	case harness.ErrCompileBudget:
		return RuleCompileBudget
	case harness.ErrValidationCost:
		return RuleValidationCost
	case harness.ErrProtocol:
		return RuleProtocol
	case codeLogShape:
		return RuleLogShape
	case codeLogInjection:
		return RuleLogInjection
	}
	return "harness-check" // a code this evaluator does not know yet
}

// ruleCode reports whether an error code is a broken rule (a judge's
// finding that makes the verdict invalid): the harness's behavioural
// checks and the log contract's rules.
func ruleCode(code string) bool {
	return harness.VerdictCode(code) || code == codeLogShape || code == codeLogInjection
}

// judgeRun classifies a phase from what its executor returned.
func judgeRun(spec *track.Spec, run *PhaseRun) (*phaseOutcome, error) {
	if run.Skipped != "" {
		return &phaseOutcome{phase: &Phase{Mode: run.Mode, Status: "skipped", Message: run.Skipped}, tel: &harness.Telemetry{}}, nil
	}
	tel, err := harness.ReadTelemetry(bytes.NewReader(run.Telemetry))
	if err != nil {
		return nil, fmt.Errorf("read the %s run's telemetry: %w", run.Mode, err)
	}
	out := judgePhase(spec, run.Mode, run.Program, run.Scorer, tel)
	out.phase.LimitMs = float64(run.Limit.Milliseconds())
	out.phase.LimitNote = run.LimitNote
	out.phase.Node, out.phase.Sandbox, out.phase.BLAS = run.Node, run.Program.Sandbox, run.BLAS
	out.phase.WaitMs = float64(run.Waited.Milliseconds())
	out.phase.Conditions = run.Conditions
	if spec.Hardware.Clock == track.ClockCPU && out.tel.Final != nil && out.verdict != Error {
		out.phase.CPU = run.CPU
		var checks harness.Checks
		if out.tel.Checks != nil {
			checks = *out.tel.Checks
		}
		cpu, err := trainCPU(run.CPU, checks.ChargedMs)
		if err != nil && (out.verdict == Acceptable || out.verdict == LossTooHigh || out.verdict == FastOK) {
			// No time, no result: the program is not to blame.
			out.verdict, out.rule = Error, ""
			out.reason = fmt.Sprintf("internal: this track is timed by CPU time, and the program's CPU time over its training could not be read: %v", err)
		}
		out.phase.TrainCPUMs = cpu
	}
	if run.JudgeFailed != "" {
		// No trusted result without a judge that finished: an error of
		// frontier's (or of the Python it runs on), stored as such.
		reason := "internal: " + run.JudgeFailed
		if out.reason != "" {
			reason += "; the program: " + out.reason
		}
		out.verdict, out.rule, out.reason, out.traceback = Error, "", reason, run.JudgeStderr
	}
	return out, nil
}

func limitOf(spec *track.Spec, mode string) time.Duration {
	if mode == "fast" {
		return spec.Limits.FastCheck.D()
	}
	return spec.Limits.FullRun.D()
}

// judgeLoss compares the validation loss with the target.
func judgeLoss(spec *track.Spec, loss float64) (Verdict, string) {
	if loss <= spec.TargetValLoss {
		return Acceptable, fmt.Sprintf("val loss %.4f is at or under the target %.4g", loss, spec.TargetValLoss)
	}
	return LossTooHigh, fmt.Sprintf("val loss %.4f is above the target %.4g (by %.4f)", loss, spec.TargetValLoss, loss-spec.TargetValLoss)
}

// withBLAS adds the CPU kernels the executor ran the program with to a CPU
// class: the same machine runs a matrix product several times faster with
// one OpenBLAS kernel set than another (pyenv.TuneBLAS), so times measured
// under different sets are not compared.
func withBLAS(class, blas string) string {
	if blas == "" || !strings.HasPrefix(class, "cpu|") {
		return class
	}
	return class + "|" + blas
}

// FingerprintClass is the class results are compared within: the device
// model(s), thread count and the PyTorch version.
func FingerprintClass(rs *harness.RunStart) string {
	f := rs.Fingerprint
	torch := f.Torch
	if torch == "" {
		torch = rs.Torch
	}
	if len(f.GPUs) > 0 {
		return fmt.Sprintf("cuda|%dx %s|torch %s|cuda %s", len(f.GPUs), f.GPUs[0], torch, f.CUDA)
	}
	return fmt.Sprintf("cpu|%s|%d threads|torch %s", f.CPU, rs.Threads, torch)
}

// MinInitialLoss is the lowest loss the model that starts the clock may
// score on unscored text under spec: the track's own limit, or a quarter
// of the way from an untrained model's ln(V) down to the target, and at
// least 0.1 nats under ln(V). An untrained model scores about ln(V):
// uniform logits exactly, random ones more on average (the log-sum-exp of
// the logits is at least their mean plus ln(V)), and one batch of a few
// thousand tokens scatters by thousandths; so no initialization that knows
// nothing of the data comes near the limit, while a model fitted before the
// clock (counted statistics, loaded weights) goes far under it. 0: no check.
func MinInitialLoss(spec *track.Spec) float64 {
	v := spec.Verification.MinInitialLoss
	switch {
	case v < 0:
		return 0
	case v > 0:
		return v
	}
	untrained := math.Log(float64(spec.Data.VocabSize))
	if spec.TargetValLoss <= 0 || spec.TargetValLoss >= untrained {
		return 0
	}
	return untrained - max((untrained-spec.TargetValLoss)/4, minInitialMargin)
}

// minInitialMargin keeps the limit clear of an untrained model's loss on
// tracks whose target is close to ln(V).
const minInitialMargin = 0.1
