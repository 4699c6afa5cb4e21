// Package eval evaluates one candidate program on a track: it prepares a run
// folder, verifies the data, runs a fast check and then the full run through
// a runner, reads the harness's telemetry, and returns a verdict that comes
// only from what the environment measured itself.
package eval

import (
	"bytes"
	"context"
	"crypto/rand"
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
	"strings"
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
	Store *store.Store
	// Python is the interpreter that runs programs (see pyenv.Find).
	Python string
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
	// Cache is a folder for compile caches shared by evaluations; the
	// only place outside the run folder a program may write.
	Cache string
	Log   *slog.Logger
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
func (e *Evaluator) Evaluate(ctx context.Context, req Request) (*Result, error) {
	if err := checkProgram(req.Program, req.Name); err != nil {
		return nil, err
	}
	spec := req.Track
	specHash, err := SpecHash(spec)
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
		Environment: Environment{Python: e.Python, Torch: e.Torch, Threads: spec.Hardware.Threads, Device: spec.Hardware.Device, Sandbox: e.sandboxName()},
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

	// Static checks first: an invalid program never runs. The program that
	// runs is the one the checks hand back (protected regions restored).
	prog, findings, err := e.runChecks(ctx, spec, req.Name, req.Program)
	if err != nil {
		return nil, err
	}
	res.Findings = findings
	orig := req.Program
	req.Program = prog

	var rec *store.Evaluation
	if e.Store != nil {
		if _, err := e.Store.PutProgram(ctx, orig, ""); err != nil {
			return nil, err
		}
		rec = &store.Evaluation{ProgramHash: res.Program.Hash, Track: spec.Name, TrackHash: specHash, Seed: req.Seed, FastOnly: req.FastOnly}
		if err := e.Store.CreateEvaluation(ctx, rec); err != nil {
			return nil, err
		}
		res.EvaluationID = rec.ID
	}

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
		fast, _, err = e.runPhase(ctx, spec, files, req, runDir, "fast", res)
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
		full, tel, err := e.runPhase(ctx, spec, files, req, runDir, "full", res)
		if err != nil {
			return nil, err
		}
		telemetry = tel
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
	}
	if rec != nil {
		if err := e.record(ctx, rec, res, telemetry); err != nil {
			return res, err
		}
	}
	return res, nil
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

// runPhase runs the program once in mode "fast" or "full".
func (e *Evaluator) runPhase(ctx context.Context, spec *track.Spec, files *DataFiles, req Request, runDir, mode string, res *Result) (*phaseOutcome, []byte, error) {
	dir := filepath.Join(runDir, mode)
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, nil, fmt.Errorf("create run folder: %w", err)
	}
	progPath := filepath.Join(dir, harness.Program)
	if err := os.WriteFile(progPath, req.Program, 0o444); err != nil {
		return nil, nil, fmt.Errorf("write program: %w", err)
	}
	if spec.Contract == "log" {
		return e.runLogPhase(ctx, spec, files, req, dir, mode)
	}
	if _, err := harness.Materialize(dir); err != nil {
		return nil, nil, fmt.Errorf("write harness: %w", err)
	}
	cfg := harnessConfig(spec, files, req.Seed, mode, filepath.Join(dir, "telemetry.jsonl"))
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("track %s gives an invalid harness config: %w", spec.Name, err)
	}
	if err := harness.WriteConfig(filepath.Join(dir, harness.ConfigFile), cfg); err != nil {
		return nil, nil, fmt.Errorf("write config: %w", err)
	}
	// The harness reads the validation shard from an inherited descriptor
	// and closes it before the program runs; the path is hidden from the
	// program (under sandbox none it stays readable).
	val, err := os.Open(files.Val)
	if err != nil {
		return nil, nil, fmt.Errorf("open validation shard: %w", err)
	}
	defer val.Close()
	key, keyFile, err := telemetryKey()
	if err != nil {
		return nil, nil, err
	}
	defer keyFile.Close()
	valPath, err := filepath.Abs(files.Val)
	if err != nil {
		return nil, nil, fmt.Errorf("validation shard: %w", err)
	}
	argv, henv := harness.Command(e.Python, dir, cfg)
	gpuEnv, releaseGPUs, err := e.assignGPUs(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	defer releaseGPUs()
	env := append(append(baseEnv(dir), henv...), gpuEnv...)

	limit := spec.Limits.FullRun.D()
	if mode == "fast" {
		limit = spec.Limits.FastCheck.D()
	}
	e.progress("%s: %s run (limit %s)", spec.Name, mode, limit)
	job := runner.Job{
		Dir: dir, Argv: argv, Env: env, Timeout: limit,
		StdoutFile: filepath.Join(dir, "stdout.log"), StderrFile: filepath.Join(dir, "stderr.log"),
		MemoryBytes: int64(spec.Limits.Memory), MaxTasks: spec.Limits.MaxTasks,
		LoopbackTCP: cfg.WorldSize > 1,
		ExtraFiles:  []*os.File{val, keyFile}, // descriptors harnessValFD, harnessKeyFD
		Hidden:      []string{valPath},
	}
	if mode == "full" {
		// What the fast check left in its folder (weights it trained after
		// finish, say) must not reach the full run.
		fast, err := filepath.Abs(filepath.Join(runDir, "fast"))
		if err != nil {
			return nil, nil, fmt.Errorf("run folder: %w", err)
		}
		job.Hidden = append(job.Hidden, fast)
	}
	if e.Cache != "" {
		// Compile caches persist across evaluations (compilation is not
		// timed, and a warm cache is what a speedrunner has too).
		for _, d := range []string{"inductor", "triton"} {
			if err := os.MkdirAll(filepath.Join(e.Cache, d), 0o755); err != nil {
				return nil, nil, fmt.Errorf("create cache folder: %w", err)
			}
		}
		job.Writable = append(job.Writable, e.Cache)
		job.Env = append(job.Env, "TORCHINDUCTOR_CACHE_DIR="+filepath.Join(e.Cache, "inductor"), "TRITON_CACHE_DIR="+filepath.Join(e.Cache, "triton"))
	}
	if e.Progress != nil {
		job.OnLine = func(stream, line string) {
			if stream == "stdout" && strings.HasPrefix(line, "step:") {
				e.Progress("  " + line)
			}
		}
	}
	rr, err := e.Runner.Run(ctx, job)
	if err != nil {
		return nil, nil, fmt.Errorf("%s run: %w", mode, err)
	}
	raw, _ := os.ReadFile(cfg.TelemetryPath)
	tel, terr := harness.ReadAuthenticated(bytes.NewReader(raw), key)
	if terr != nil {
		return nil, nil, fmt.Errorf("read telemetry: %w", terr)
	}
	out := judgePhase(spec, mode, rr, tel)
	e.progress("%s: %s run ended: %s", spec.Name, mode, out.summary())
	return out, raw, nil
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
	var broken *harness.Error // the first finding of the harness's behavioural checks
	for i := range tel.Errors {
		if harness.VerdictCode(tel.Errors[i].Code) {
			broken = &tel.Errors[i]
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
	case tel.Forged > 0 || tel.Gaps > 0:
		// Lines without the harness's MAC, or harness lines removed: the
		// program wrote into the telemetry, and nothing in it can be
		// trusted.
		o.verdict, o.rule = Invalid, RuleTelemetry
		o.reason = fmt.Sprintf("%s: the telemetry file holds %d lines the harness did not write and lacks %d that it did: the program tampered with it", RuleTelemetry, tel.Forged, tel.Gaps)
	case broken != nil:
		// A broken rule outranks how the process ended: the harness wrote
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
	case rr.Status == runner.StatusLimit:
		o.verdict = Error
		o.reason = "resource limit: " + rr.Message
	case rr.Status == runner.StatusCanceled:
		o.verdict, o.reason = Error, "the evaluation was canceled"
	case tel.Error != nil && tel.Error.Code == harness.ErrNoFinish:
		o.verdict, o.reason = NoResult, tel.Error.Message
	case tel.Error != nil:
		o.verdict = Error
		o.reason = tel.Error.Kind + ": " + tel.Error.Message
		o.traceback = tel.Error.Traceback
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
	RuleTelemetry        = "telemetry"             // lines in the telemetry file that the harness did not write
	RuleLossFloor        = "loss-floor"            // a val loss under the track's loss floor: the model sees what it predicts
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
	}
	return "harness-check" // a code this evaluator does not know yet
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
	res.Probe, res.Checks, res.TelemetryLines = t.Probe, t.Checks, t.Authentic
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

// harnessValFD is the descriptor the validation shard has in the program's
// process: the first of runner.Job.ExtraFiles.
const harnessValFD = 3

// harnessKeyFD is the descriptor of the telemetry key: the second of
// runner.Job.ExtraFiles.
const harnessKeyFD = 4

// telemetryKey makes a fresh key for one run and a descriptor that holds
// it. The file is unlinked at once: only the inherited descriptor reaches
// it, and the harness closes that before the program runs.
func telemetryKey() (key []byte, f *os.File, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, nil, fmt.Errorf("telemetry key: %w", err)
	}
	f, err = os.CreateTemp("", "frontier-key-*")
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry key: %w", err)
	}
	os.Remove(f.Name())
	key = []byte(hex.EncodeToString(raw))
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("telemetry key: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("telemetry key: %w", err)
	}
	return key, f, nil
}

func harnessConfig(spec *track.Spec, files *DataFiles, seed int, mode, telemetryPath string) harness.Config {
	d := spec.Data
	fastVal := spec.Limits.FastValTokens
	if fastVal == 0 {
		fastVal = int64(d.ValSeqLen * d.ValBatchSeqs)
	}
	if fastVal > d.ValTokens {
		fastVal = d.ValTokens
	}
	return harness.Config{
		Schema: harness.ConfigSchema, Track: spec.Name, Mode: mode,
		TrainFiles: files.Train, ValFD: harnessValFD, KeyFD: harnessKeyFD, VocabSize: d.VocabSize, BOSID: d.BOSID,
		ValTokens: d.ValTokens, ValSeqLen: d.ValSeqLen, ValBatchSeqs: d.ValBatchSeqs,
		Seed: seed, Device: spec.Hardware.Device, Threads: spec.Hardware.Threads, WorldSize: spec.Launcher.NProcPerNode,
		MaxSteps: spec.Limits.MaxSteps, FastSteps: spec.Limits.FastSteps, FastValTokens: fastVal,
		TelemetryPath: telemetryPath, LogEvery: spec.Telemetry.LogEvery, ValEvery: spec.Telemetry.ValEvery,
		ProfileSteps: spec.Telemetry.ProfileSteps, TopK: spec.Telemetry.TopK,
		CompileBudgetMs: spec.Limits.CompileBudget.D().Milliseconds(),
		Probe: harness.ProbeConfig{
			Enabled: spec.Verification.Probe.Enabled, Sequences: spec.Verification.Probe.Sequences,
			Positions: spec.Verification.Probe.Positions, DocIsolated: spec.Verification.Probe.DocIsolated,
		},
		Verify: harness.VerifyConfig{
			MaxNoise: spec.Verification.MaxNoise, AllowNondeterministic: spec.Verification.AllowNondeterministic,
			MinInitialLoss: MinInitialLoss(spec),
		},
	}
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
// user's shell never reach a candidate program.
func baseEnv(dir string) []string {
	env := []string{
		"TMPDIR=" + filepath.Join(dir, "tmp"),
		"LANG=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1",
		"MPLCONFIGDIR=" + filepath.Join(dir, "tmp"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "tmp"),
	}
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
		"NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func (e *Evaluator) newRunDir(progHash string, seed int) (string, error) {
	if err := os.MkdirAll(e.RunsDir, 0o755); err != nil {
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
