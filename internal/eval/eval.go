// Package eval evaluates one candidate program on a track: it prepares a run
// folder, verifies the data, runs a fast check and then the full run through
// a runner, reads the harness's telemetry, and returns a verdict that comes
// only from what the environment measured itself.
package eval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// Evaluator runs evaluations. Its fields are set once; Evaluate may be
// called from several goroutines.
type Evaluator struct {
	Runner runner.Runner
	// Store, when set, records the program, the evaluation and its
	// telemetry. The evaluation row exists before the process starts.
	Store Store
	// Python is the interpreter that runs programs (see pyenv.Find).
	Python string
	// Version is frontier's own, recorded with every result.
	Version string
	// Torch is its PyTorch version, for the report.
	Torch string
	// RunsDir holds the run folders.
	RunsDir string
	// Data resolves and verifies a track's data (see Data).
	Data DataResolver
	// Checks run on the program before any process starts.
	Checks []Check
	// GPUs, when set, are the node's GPUs: each process of a cuda track
	// takes hardware.gpus of them (CUDA_VISIBLE_DEVICES), waiting while
	// other evaluations hold them (see assignGPUs).
	GPUs *runner.GPUPool
	// Sandbox names the confinement Runner applies, for the report
	// ("bwrap", "landlock", "none").
	Sandbox string
	// Hidden are paths no program may read (frontier's home: its
	// database, caches and other runs); Visible are paths inside them it
	// needs to read (the Python installation).
	Hidden  []string
	Visible []string
	Log     *slog.Logger
	// Progress, when set, receives a line per phase and per designated
	// step, for a live display.
	Progress func(line string)
}

// DataResolver returns the data files of a track after verifying them.
type DataResolver interface {
	Resolve(ctx context.Context, spec *track.Spec) (*DataFiles, error)
}

// Request is one evaluation to run.
type Request struct {
	Track   *track.Spec
	Program []byte
	// Name is how the program is shown (a file name).
	Name string
	Seed int
	// FastOnly stops after the fast check.
	FastOnly bool
	// SkipFast goes straight to the full run: for callers that ran the
	// fast check already (the evolution engine's fix loop).
	SkipFast bool
	// Keep, when set, is where the run folder is moved afterwards;
	// otherwise it is removed once everything is stored.
	Keep string
}

// ErrBadProgram is returned (wrapped) when the program cannot be evaluated
// at all: empty, not text, not Python.
var ErrBadProgram = errors.New("bad program")

// Evaluate runs the fast check and then (unless FastOnly or the fast check
// failed) the full run, and returns the result. An error means the
// evaluation itself could not happen (bad input, unusable data, a store
// failure); a failing program is a Result with a failing verdict.
func (e *Evaluator) Evaluate(ctx context.Context, req Request) (_ *Result, err error) {
	if err := checkProgram(req.Program, req.Name); err != nil {
		return nil, err
	}
	spec := req.Track
	var specHash string
	specHash, err = SpecHash(spec)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Schema:       Schema,
		Seed:         req.Seed,
		Verification: "full",
		Track: TrackInfo{
			Name: spec.Name, Hash: specHash, Target: spec.TargetValLoss,
			LossFloor: spec.Data.LossFloor, Device: spec.Hardware.Device,
		},
		Program:     ProgramInfo{Name: req.Name, Hash: store.Hash(req.Program), Bytes: len(req.Program)},
		Environment: Environment{Frontier: e.Version, Python: e.Python, Torch: e.Torch, Threads: spec.Hardware.Threads, Device: spec.Hardware.Device, Sandbox: e.sandboxName()},
	}
	if spec.Contract == "log" {
		res.Verification = "log"
	}
	if res.Environment.Sandbox == "none" {
		res.Warnings = append(res.Warnings, "the program ran without a sandbox (sandbox: none): it could read and write anything this user can, and reach the network")
	}

	files, err := e.Data.Resolve(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("data of track %s: %w", spec.Name, err)
	}
	if files.LossFloor > 0 && files.LossFloor != spec.Data.LossFloor {
		// Built-in data is drawn per installation: its floor is the
		// manifest's, and the loss-floor rule and the result use it. The
		// spec's hash stays the spec's.
		local := *spec
		local.Data.LossFloor = files.LossFloor
		spec = &local
		res.Track.LossFloor = files.LossFloor
	}

	// Static checks first: an invalid program never runs. The program that
	// runs is the one the checks hand back (protected regions restored).
	prog, findings, err := e.runChecks(ctx, spec, req.Name, req.Program)
	if err != nil {
		return nil, err
	}
	res.Findings = findings
	orig := req.Program
	req.Program = prog

	// The run folder first, so that the row names it: the next process
	// cleans up after one that was killed.
	runDir, err := e.newRunDir(res.Program.Hash, req.Seed)
	if err != nil {
		return nil, err
	}
	var telemetry []byte
	defer func() {
		if req.Keep == "" {
			os.RemoveAll(runDir)
		}
	}()
	var rec *store.Evaluation
	if e.Store != nil {
		if _, err := e.Store.PutProgram(ctx, orig, ""); err != nil {
			return nil, err
		}
		rec = &store.Evaluation{ProgramHash: res.Program.Hash, Track: spec.Name, TrackHash: specHash, Seed: req.Seed, FastOnly: req.FastOnly, RunDir: runDir}
		if err := e.Store.CreateEvaluation(ctx, rec); err != nil {
			return nil, err
		}
		res.EvaluationID = rec.ID
		// An evaluation that cannot finish leaves no row running behind it.
		defer func() {
			if rec.State == store.StateRunning {
				e.interrupt(ctx, rec, err)
			}
		}()
	}

	for _, f := range findings {
		if f.Severity == SeverityInvalid {
			res.Verdict, res.Rule, res.Reason = Invalid, f.Rule, f.String()
			break
		}
		res.Warnings = append(res.Warnings, f.String())
	}
	if res.Verdict == Invalid {
		if rec != nil {
			if err := e.record(ctx, rec, res, nil); err != nil {
				return res, err
			}
		}
		return res, nil
	}

	// Fast check: a few steps and a small validation, to fail in seconds.
	var fast *phaseOutcome
	if !req.SkipFast || req.FastOnly {
		fast, _, err = e.runPhase(ctx, spec, files, req, runDir, "fast", res, spec.Limits.FastCheck.D())
		if err != nil {
			return nil, err
		}
		res.Fast = fast.phase
	}
	switch {
	case fast != nil && fast.verdict != "":
		res.Verdict, res.Rule, res.Reason, res.Traceback = fast.verdict, fast.rule, "fast check: "+fast.reason, fast.traceback
	case req.FastOnly:
		res.Verdict, res.Reason = fast.fastVerdict(spec)
		e.fill(res, fast)
	default:
		limit, note := fullLimit(spec, fast)
		if note != "" {
			e.progress("%s: %s", spec.Name, note)
		}
		full, tel, err := e.runPhase(ctx, spec, files, req, runDir, "full", res, limit)
		if err != nil {
			return nil, err
		}
		telemetry = tel
		full.phase.LimitNote = note
		if full.verdict == Timeout {
			full.reason = timeoutReason(spec, full, fast, limit)
		}
		res.Full = full.phase
		e.fill(res, full)
		if full.verdict != "" {
			res.Verdict, res.Rule, res.Reason, res.Traceback = full.verdict, full.rule, full.reason, full.traceback
		} else {
			res.Verdict, res.Reason = judgeLoss(spec, res.Metrics.ValLoss)
		}
	}
	if ctx.Err() != nil && (res.Verdict == Timeout || res.Verdict == Error || res.Verdict == NoResult) {
		// A canceled evaluation has no verdict worth storing as one.
		return nil, fmt.Errorf("evaluation canceled: %w", ctx.Err())
	}

	if req.Keep != "" {
		if err := moveDir(runDir, req.Keep); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("could not keep the run folder in %s: %v", req.Keep, err))
		} else {
			res.RunDir = req.Keep
		}
	} else {
		// Free the run folder's space before the verdict is written: a
		// program that filled the disk must not cost the verdict.
		os.RemoveAll(runDir)
	}
	if rec != nil {
		if err := e.record(ctx, rec, res, telemetry); err != nil {
			return res, err
		}
	}
	return res, nil
}

// interrupt marks an evaluation that could not finish as interrupted, with
// why, so that no row stays running.
func (e *Evaluator) interrupt(ctx context.Context, rec *store.Evaluation, cause error) {
	rec.State, rec.Verdict = store.StateInterrupted, ""
	rec.Reason = "interrupted"
	if cause != nil {
		rec.Reason = "interrupted: " + cause.Error()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := e.Store.FinishEvaluation(sctx, rec, nil); err != nil && e.Log != nil {
		e.Log.Warn("could not mark an unfinished evaluation interrupted", "evaluation", rec.ID, "err", err)
	}
}

// record stores the finished evaluation. It uses a context that survives
// cancellation so that a result that exists is never lost.
func (e *Evaluator) record(ctx context.Context, rec *store.Evaluation, res *Result, telemetry []byte) error {
	doc, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	m := res.Metrics
	rec.Verdict, rec.Reason = string(res.Verdict), res.Reason
	rec.ValLoss, rec.TrainTimeMs, rec.StepAvgMs, rec.Steps = m.ValLoss, m.TrainTimeMs, m.StepAvgMs, m.Steps
	rec.TokensPerS, rec.PeakRSSMB, rec.WallMs = m.TokensPerS, m.PeakRSSMB, m.WallMs
	rec.FingerprintClass, rec.Result, rec.RunDir = res.FingerprintClass, doc, res.RunDir
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return e.Store.FinishEvaluation(sctx, rec, telemetry)
}

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

// runPhase runs the program once in mode "fast" or "full": its judge
// first, outside the sandbox, then the program in the sandbox with one
// socket to the judge per process. The verdict comes from the judge's
// telemetry and the runner's own account of the process; nothing in the
// run folder is read.
func (e *Evaluator) runPhase(ctx context.Context, spec *track.Spec, files *DataFiles, req Request, runDir, mode string, res *Result, limit time.Duration) (*phaseOutcome, []byte, error) {
	dir := filepath.Join(runDir, mode)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create run folder: %w", err)
	}
	scratch, err := newScratch()
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(scratch)
	progPath := filepath.Join(dir, harness.Program)
	if err := os.WriteFile(progPath, req.Program, 0o444); err != nil {
		return nil, nil, fmt.Errorf("write program: %w", err)
	}
	if spec.Contract == "log" {
		return e.runLogPhase(ctx, spec, files, req, dir, scratch, mode, limit)
	}
	if _, err := harness.Materialize(dir); err != nil {
		return nil, nil, fmt.Errorf("write harness: %w", err)
	}
	cfg := programConfig(spec, files, req.Seed, mode, dir)
	if err := harness.WriteConfig(filepath.Join(dir, harness.ConfigFile), cfg); err != nil {
		return nil, nil, fmt.Errorf("track %s gives an invalid harness config: %w", spec.Name, err)
	}
	gpuEnv, releaseGPUs, err := e.assignGPUs(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	defer releaseGPUs()

	// The judge: everything that decides the verdict, in a process and a
	// folder the program cannot reach.
	jcfg, err := judgeConfig(spec, files, mode)
	if err != nil {
		return nil, nil, err
	}
	judgeDir := filepath.Join(runDir, "judge-"+mode)
	judge, err := harness.StartJudge(ctx, e.Python, judgeDir, jcfg, judgeEnv(spec, gpuEnv), e.judgeProgress(spec))
	if err != nil {
		return nil, nil, err
	}

	argv, henv := harness.Command(e.Python, dir, cfg)
	env := append(append(baseEnv(scratch), henv...), gpuEnv...)
	e.progress("%s: %s run (limit %s)", spec.Name, mode, limit)
	job := runner.Job{
		Dir: dir, Argv: argv, Env: env, Timeout: limit,
		StdoutFile: filepath.Join(runDir, mode+"-stdout.log"), StderrFile: filepath.Join(runDir, mode+"-stderr.log"),
		MemoryBytes: int64(spec.Limits.Memory), MaxTasks: spec.Limits.MaxTasks, DiskBytes: int64(spec.Limits.Disk),
		Scratch: scratch, LoopbackTCP: cfg.WorldSize > 1,
		ExtraFiles: judge.Clients(), // descriptors 3, 4, ...: one socket per process
		Hidden:     e.hiddenFor(runDir, files),
		Visible:    e.Visible,
	}
	if e.Sandbox == "landlock" {
		// Landlock checks a file opened through /proc/PID/fd/N against its
		// path: the links the client makes to the descriptors the judge
		// sends at train_begin would be refused. The training shards stay
		// readable by path under Landlock, before the clock too (the
		// threat model says so); the validation shard stays hidden.
		job.Visible = append(slices.Clone(job.Visible), files.Train...)
	}
	rr, err := e.Runner.Run(ctx, job)
	if err != nil {
		judge.Kill()
		return nil, nil, fmt.Errorf("%s run: %w", mode, err)
	}
	tel, raw, jerr := judge.Finish(harness.JudgeFinishTimeout)
	if tel == nil {
		return nil, nil, fmt.Errorf("%s run: %w", mode, jerr)
	}
	out := judgePhase(spec, mode, rr, tel)
	out.phase.LimitMs = float64(limit.Milliseconds())
	if jerr != nil {
		// No trusted result without a judge that finished: an error of
		// frontier's (or of the Python it runs on), stored as such.
		reason := "internal: " + jerr.Error()
		if out.reason != "" {
			reason += "; the program: " + out.reason
		}
		out.verdict, out.rule, out.reason, out.traceback = Error, "", reason, judge.Stderr()
	}
	e.progress("%s: %s run ended: %s", spec.Name, mode, out.summary())
	return out, raw, nil
}

// hiddenFor is what the program of a run must not read: every run folder
// but its own (the runs folder is hidden and its own folder bound back),
// the judge's folders, the track's data (the training shards reach the
// program as descriptors at train_begin), and what the evaluator hides
// always (frontier's home: its database and caches).
func (e *Evaluator) hiddenFor(runDir string, files *DataFiles) []string {
	h := append([]string{filepath.Dir(runDir), filepath.Dir(files.Val)}, e.Hidden...)
	for _, f := range files.Train {
		if d := filepath.Dir(f); !slices.Contains(h, d) {
			h = append(h, d)
		}
	}
	return h
}

// judgeProgress turns the judge's step and validation events into
// progress lines.
func (e *Evaluator) judgeProgress(spec *track.Spec) func([]byte) {
	if e.Progress == nil {
		return nil
	}
	return func(line []byte) {
		var ev struct {
			Event       string   `json:"event"`
			Step        int      `json:"step"`
			TrainTimeMs float64  `json:"train_time_ms"`
			StepAvgMs   float64  `json:"step_avg_ms"`
			TrainLoss   *float64 `json:"train_loss"`
			ValLoss     float64  `json:"val_loss"`
		}
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch ev.Event {
		case harness.EventStep:
			msg := fmt.Sprintf("  step:%d train_time:%.0fms step_avg:%.2fms", ev.Step+1, ev.TrainTimeMs, ev.StepAvgMs)
			if ev.TrainLoss != nil {
				msg += fmt.Sprintf(" train_loss:%.4f", *ev.TrainLoss)
			}
			e.Progress(msg)
		case harness.EventVal:
			e.Progress(fmt.Sprintf("  step:%d val_loss:%.4f", ev.Step, ev.ValLoss))
		}
	}
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

// judgePhase classifies one process from the runner's result and the
// telemetry. Only the harness's own events count as results.
func judgePhase(spec *track.Spec, mode string, rr runner.Result, tel *harness.Telemetry) *phaseOutcome {
	p := &Phase{
		Mode: mode, Status: rr.Status, ExitCode: rr.ExitCode, WallMs: float64(rr.Wall) / 1e6,
		Message: rr.Message, ErrorLine: rr.ErrorLine, SkippedLines: tel.Skipped,
	}
	o := &phaseOutcome{phase: p, tel: tel}
	var broken *harness.Error // the first broken rule the judge found
	for i := range tel.Errors {
		if tel.Errors[i].Judge && harness.VerdictCode(tel.Errors[i].Code) {
			broken = &tel.Errors[i]
			break
		}
	}
	cause := tel.Error // the first failure: the judge's, else the program's own account
	for i := range tel.Errors {
		if tel.Errors[i].Judge {
			cause = &tel.Errors[i]
			break
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
		if cause.Judge {
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
	case tel.Final == nil:
		o.verdict = NoResult
		o.reason = "the program exited without a result: it must call fh.finish(logits_fn) at the end of training"
		if n := len(tel.Warnings); n > 0 && tel.Warnings[n-1].Code == harness.WarnNoSteps {
			o.reason += " (" + tel.Warnings[n-1].Message + ")"
		}
	case mode == harness.ModeFull && spec.Contract != "log" && spec.Verification.Probe.Enabled && (tel.Probe == nil || !tel.Final.Probe):
		// The judge writes the probe before the result; a result without
		// it is not one this evaluator can vouch for.
		o.verdict = Error
		o.reason = "internal: the final validation has no causality probe on record although the track requires one"
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
	}
	return "harness-check" // a code this evaluator does not know yet
}

func limitOf(spec *track.Spec, mode string) time.Duration {
	if mode == "fast" {
		return spec.Limits.FastCheck.D()
	}
	return spec.Limits.FullRun.D()
}

// fullLimit sizes the full run's wall-clock limit from the fast check: its
// step time on this machine times the steps the program plans, plus the
// setup and a validation, with half as much again to spare, never under
// the track's full_run and never over its full_run_max. A slow or busy
// machine then gives the same verdict, later, instead of a timeout. The
// note says so when the limit was raised.
func fullLimit(spec *track.Spec, fast *phaseOutcome) (time.Duration, string) {
	base, ceiling := spec.Limits.FullRun.D(), max(spec.Limits.FullRunMax.D(), spec.Limits.FullRun.D())
	stepMs := fastStepMs(fast)
	if stepMs <= 0 || fast.tel.Final == nil || fast.tel.Final.PlannedSteps <= 0 {
		return base, ""
	}
	f := fast.tel.Final
	valMs := f.ValMs * float64(spec.Data.ValTokens) / float64(max(f.ValTokens, 1))
	need := time.Duration(1.5 * (stepMs*float64(f.PlannedSteps) + f.PreTrainMs + valMs) * float64(time.Millisecond))
	if need <= base {
		return base, ""
	}
	limit := min(need.Round(time.Second), ceiling)
	note := fmt.Sprintf("the fast check ran %.1f ms a step%s; %d planned steps need about %s: the full run's limit is %s instead of %s",
		stepMs, slower(spec, stepMs), f.PlannedSteps, (need * 2 / 3).Round(time.Second), limit, base)
	if need > ceiling {
		note += " (the track's full_run_max; the run will likely time out)"
	}
	return limit, note
}

// fastStepMs is the fast check's time per step, the median over its steps
// after the first (which holds the clock-start check), or 0.
func fastStepMs(fast *phaseOutcome) float64 {
	if fast == nil || fast.tel == nil || len(fast.tel.Steps) < 2 {
		return 0
	}
	s := fast.tel.Steps
	var d []float64
	for i := 1; i < len(s); i++ {
		if n := s[i].Step - s[i-1].Step; n > 0 {
			d = append(d, (s[i].TrainTimeMs-s[i-1].TrainTimeMs)/float64(n))
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// slower says how this step time compares with the track's calibration.
func slower(spec *track.Spec, stepMs float64) string {
	ref := spec.Hardware.ReferenceStepMs
	if ref <= 0 {
		return ""
	}
	return fmt.Sprintf(" (the reference runs %.0f ms a step on the machine the track was calibrated on: %.1fx)", ref, stepMs/ref)
}

// timeoutReason says what a full run that hit its limit was doing and
// what to do about it.
func timeoutReason(spec *track.Spec, full, fast *phaseOutcome, limit time.Duration) string {
	r := fmt.Sprintf("the full run was killed at its wall-clock limit of %s", limit)
	t := full.tel
	if n := full.phase.Steps; n > 0 && len(t.Steps) > 0 {
		last := t.Steps[len(t.Steps)-1]
		stepMs := last.TrainTimeMs / float64(last.Step+1)
		r += fmt.Sprintf(" after %d steps at %.1f ms a step%s", n, stepMs, slower(spec, stepMs))
	}
	if fast != nil && fast.phase != nil && fastStepMs(fast) > 0 {
		r += fmt.Sprintf("; the fast check ran %.1f ms a step", fastStepMs(fast))
	}
	return r + ". On a slow or busy machine, raise limits.full_run_max in the track (or run fewer programs at once); a program that plans more steps than it can run in the limit needs fewer"
}

// judgeLoss compares the validation loss with the target.
func judgeLoss(spec *track.Spec, loss float64) (Verdict, string) {
	if loss <= spec.TargetValLoss {
		return Acceptable, fmt.Sprintf("val loss %.4f is at or under the target %.4g", loss, spec.TargetValLoss)
	}
	return LossTooHigh, fmt.Sprintf("val loss %.4f is above the target %.4g (by %.4f)", loss, spec.TargetValLoss, loss-spec.TargetValLoss)
}

// fill copies the phase's measurements into the result.
func (e *Evaluator) fill(res *Result, o *phaseOutcome) {
	t := o.tel
	for _, w := range t.Warnings {
		res.Warnings = append(res.Warnings, w.Message)
	}
	res.Metrics.WallMs = o.phase.WallMs
	if t.RunStart != nil {
		res.Fingerprint = t.RunStart.Fingerprint
		res.FingerprintClass = FingerprintClass(t.RunStart)
		if t.RunStart.Torch != "" {
			res.Environment.Torch = t.RunStart.Torch
		}
		res.Environment.Threads = t.RunStart.Threads
	}
	res.Curve, res.Vals, res.TopOps = t.Steps, t.Vals, t.TopOps
	res.Sections = t.Sections
	res.Probe, res.Checks, res.TelemetryLines = t.Probe, t.Checks, len(t.Lines)
	if t.Memory != nil {
		res.Metrics.PeakRSSMB, res.Metrics.CUDAAllocMB, res.Metrics.CUDAResMB = t.Memory.PeakRSSMB, t.Memory.CUDAAllocatedMB, t.Memory.CUDAReservedMB
	}
	if f := t.Final; f != nil {
		m := &res.Metrics
		m.ValLoss, m.ValTokens, m.TrainTimeMs, m.StepAvgMs = f.ValLoss, f.ValTokens, f.TrainTimeMs, f.StepAvgMs
		m.Steps, m.Tokens, m.TokensPerS, m.PreTrainMs = f.Steps, f.Tokens, f.TokensPerS, f.PreTrainMs
		m.Score = f.StepAvgMs * f.ValLoss
		if res.Track.LossFloor > 0 {
			m.GapToFloor = f.ValLoss - res.Track.LossFloor
		}
	}
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

// programConfig is what the program of a run is told.
func programConfig(spec *track.Spec, files *DataFiles, seed int, mode, dir string) harness.Config {
	names := make([]string, len(files.Train))
	for i, f := range files.Train {
		names[i] = filepath.Base(f)
	}
	return harness.Config{
		Schema: harness.ConfigSchema, Track: spec.Name, Mode: mode,
		TrainFiles: names, DataDir: filepath.Join(dir, harness.DataDir),
		VocabSize: spec.Data.VocabSize, BOSID: spec.Data.BOSID,
		ValSeqLen: spec.Data.ValSeqLen, ValBatchSeqs: spec.Data.ValBatchSeqs,
		Seed: seed, Device: spec.Hardware.Device, Threads: spec.Hardware.Threads, WorldSize: spec.Launcher.NProcPerNode,
		MaxSteps: spec.Limits.MaxSteps, FastSteps: spec.Limits.FastSteps,
		LogEvery: spec.Telemetry.LogEvery, ValEvery: spec.Telemetry.ValEvery,
		ProfileSteps: spec.Telemetry.ProfileSteps, TopK: spec.Telemetry.TopK,
		JudgeFD: 3,
	}
}

// judgeConfig is what the judge of a run holds: the validation text, the
// limits and the checks.
func judgeConfig(spec *track.Spec, files *DataFiles, mode string) (harness.JudgeConfig, error) {
	d := spec.Data
	fastVal := spec.Limits.FastValTokens
	if fastVal == 0 {
		fastVal = int64(d.ValSeqLen * d.ValBatchSeqs)
	}
	fastVal = min(fastVal, d.ValTokens)
	val, err := filepath.Abs(files.Val)
	if err != nil {
		return harness.JudgeConfig{}, fmt.Errorf("validation shard: %w", err)
	}
	var train []string
	for _, f := range files.Train {
		a, err := filepath.Abs(f)
		if err != nil {
			return harness.JudgeConfig{}, fmt.Errorf("training shard: %w", err)
		}
		train = append(train, a)
	}
	v := spec.Verification
	return harness.JudgeConfig{
		Mode: mode, VocabSize: d.VocabSize, BOSID: d.BOSID, Device: spec.Hardware.Device,
		ValFile: val, ValTokens: d.ValTokens, FastValTokens: fastVal, ValSeqLen: d.ValSeqLen, ValBatchSeqs: d.ValBatchSeqs,
		TrainFiles: train, WorldSize: spec.Launcher.NProcPerNode,
		MaxSteps: spec.Limits.MaxSteps, FastSteps: spec.Limits.FastSteps,
		LogEvery: spec.Telemetry.LogEvery, ValEvery: spec.Telemetry.ValEvery,
		CompileBudgetMs: spec.Limits.CompileBudget.D().Milliseconds(),
		Probe: harness.ProbeConfig{
			Enabled: v.Probe.Enabled, Sequences: v.Probe.Sequences, Positions: v.Probe.Positions, DocIsolated: v.Probe.DocIsolated,
		},
		Verify: harness.VerifyConfig{
			MaxNoise: v.MaxNoise, AllowNondeterministic: v.AllowNondeterministic, MinInitialLoss: MinInitialLoss(spec),
			MaxValidationShare: max(v.MaxValidationShare, 0), MaxValidationTokenCost: v.MaxValidationTokenCost,
			ValidationAllowanceMs: v.ValidationAllowance.D().Milliseconds(),
		},
	}, nil
}

// judgeEnv is the judge's environment: enough to run Python, one thread
// for its NumPy (the program's threads are the track's), and on CUDA
// tracks the run's GPUs, which it shares with the program through CUDA
// IPC.
func judgeEnv(spec *track.Spec, gpuEnv []string) []string {
	env := []string{"LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1"}
	for _, k := range []string{"PATH", "HOME", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if spec.Hardware.Device == "cuda" {
		env = append(env, gpuEnv...)
	}
	return env
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

// baseEnv is the environment every program gets: enough to run Python and
// find libraries, and nothing else. API keys and other secrets of the
// user's shell never reach a candidate program. Temporary files and the
// compile caches go to scratch, a short path of the run's own (a
// multiprocessing listener's socket path must fit 107 bytes): nothing a
// program writes reaches another evaluation.
func baseEnv(scratch string) []string {
	env := []string{
		"TMPDIR=" + scratch,
		"LANG=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1",
		"MPLCONFIGDIR=" + scratch,
		"XDG_CACHE_HOME=" + scratch,
		"CUDA_CACHE_PATH=" + filepath.Join(scratch, "nv"),
		"TORCHINDUCTOR_CACHE_DIR=" + filepath.Join(scratch, "inductor"),
		"TRITON_CACHE_DIR=" + filepath.Join(scratch, "triton"),
	}
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
		"NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// newScratch makes a run's temporary folder under the system's: short,
// private (0700), removed when the phase ends.
func newScratch() (string, error) {
	d, err := os.MkdirTemp("", "fr-")
	if err != nil {
		return "", fmt.Errorf("create the run's temporary folder: %w", err)
	}
	return d, nil
}

func (e *Evaluator) newRunDir(progHash string, seed int) (string, error) {
	if err := os.MkdirAll(e.RunsDir, 0o700); err != nil {
		return "", fmt.Errorf("create runs folder: %w", err)
	}
	prefix := fmt.Sprintf("%s-%s-s%d-", time.Now().Format("20060102-150405"), progHash[:12], seed)
	dir, err := os.MkdirTemp(e.RunsDir, prefix)
	if err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	return dir, nil
}

func (e *Evaluator) sandboxName() string {
	if e.Sandbox == "" {
		return "none"
	}
	return e.Sandbox
}

func (e *Evaluator) progress(format string, args ...any) {
	if e.Progress != nil {
		e.Progress(fmt.Sprintf(format, args...))
	}
	if e.Log != nil {
		e.Log.Debug(fmt.Sprintf(format, args...))
	}
}

// SpecHash identifies a track version: the SHA-256 of its spec as decoded
// (so comments and formatting do not matter).
func SpecHash(spec *track.Spec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hash track spec: %w", err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// checkProgram rejects input that is not a Python program at all, before
// any process starts.
func checkProgram(src []byte, name string) error {
	switch {
	case len(bytes.TrimSpace(src)) == 0:
		return fmt.Errorf("%w: %s is empty", ErrBadProgram, name)
	case bytes.IndexByte(src, 0) >= 0:
		return fmt.Errorf("%w: %s is not a text file (it contains NUL bytes); give a Python training program", ErrBadProgram, name)
	case name != "" && !strings.HasSuffix(name, ".py"):
		return fmt.Errorf("%w: %s does not end in .py; give a Python training program", ErrBadProgram, name)
	}
	return nil
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// moveDir moves src to dst (which must not exist or be empty), copying when
// a rename is impossible.
func moveDir(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if entries, err := os.ReadDir(dst); err == nil {
		if len(entries) > 0 {
			return fmt.Errorf("%s exists and is not empty", dst)
		}
		os.Remove(dst)
	}
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	return os.RemoveAll(src)
}

// readRunFile reads a file a program may have written: only a regular
// file, not through a link, opened without blocking (a named pipe would
// hang a plain open), and at most max bytes.
func readRunFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s holds %d bytes, more than the %d expected", path, fi.Size(), max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}
