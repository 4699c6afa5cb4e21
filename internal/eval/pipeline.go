package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// Evaluate runs the fast check and then (unless FastOnly or the fast check
// failed) the full run, and returns the result. An error means the
// evaluation itself could not happen (bad input, unusable data, a store
// failure); a failing program is a Result with a failing verdict.
//
// The pipeline, top to bottom: the program is checked; the track's data
// resolved and verified; the static checks run; the store records the
// program and the evaluation as running (once, at the start); the fast
// phase runs on the executor and is judged; the full phase runs, sized by
// the fast one, and is judged; the store records the outcome (once, at the
// end, or as interrupted when the evaluation could not finish).
func (e *Evaluator) Evaluate(ctx context.Context, req Request) (_ *Result, err error) {
	if err := checkProgram(req.Program, req.Name); err != nil {
		return nil, err
	}
	spec := req.Track
	res, err := e.newResult(req)
	if err != nil {
		return nil, err
	}

	// The data: verified before anything runs.
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

	// Static checks: an invalid program never runs. The program that runs
	// is the one the checks hand back (protected regions restored).
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
	defer func() {
		if req.Keep == "" {
			os.RemoveAll(runDir)
		}
	}()

	// The store, at the start: the program and the evaluation, running.
	var rec *store.Evaluation
	if e.Store != nil {
		if _, err := e.Store.PutProgram(ctx, orig, ""); err != nil {
			return nil, err
		}
		rec = &store.Evaluation{ProgramHash: res.Program.Hash, Track: spec.Name, TrackHash: res.Track.Hash, Seed: req.Seed, FastOnly: req.FastOnly, RunDir: runDir}
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

	var telemetry []byte
	if !staticVerdict(res) {
		// The fast phase: a few steps and a small validation, to fail in
		// seconds.
		var fast *phaseOutcome
		if !req.SkipFast || req.FastOnly {
			if fast, _, err = e.phase(ctx, spec, files, req, runDir, harness.ModeFast, phaseLimits{limit: spec.Limits.FastCheck.D()}); err != nil {
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
			// The full phase, its limit sized from the fast one.
			lim, note := e.fullLimits(spec, fast, req.ReferenceWall)
			if note != "" {
				e.progress("%s: %s", spec.Name, note)
			}
			var full *phaseOutcome
			if full, telemetry, err = e.phase(ctx, spec, files, req, runDir, harness.ModeFull, lim); err != nil {
				return nil, err
			}
			full.phase.LimitNote = joinNotes(note, full.phase.LimitNote)
			if full.verdict == Timeout {
				full.reason = timeoutReason(spec, full, fast, time.Duration(full.phase.LimitMs)*time.Millisecond)
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

	// The store, at the end: the outcome.
	if rec != nil {
		if err := e.record(ctx, rec, res, telemetry); err != nil {
			return res, err
		}
	}
	return res, nil
}

// newResult is the result of an evaluation before anything ran.
func (e *Evaluator) newResult(req Request) (*Result, error) {
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
		Environment: Environment{Frontier: e.Version, Python: e.Python, Torch: e.Torch, Threads: spec.Hardware.Threads, Device: spec.Hardware.Device, Sandbox: e.sandboxName()},
	}
	if spec.Contract == "log" {
		res.Verification = "log"
	}
	if res.Environment.Sandbox == "none" {
		res.Warnings = append(res.Warnings, "the program ran without a sandbox (sandbox: none): it could read and write anything this user can, and reach the network")
	}
	return res, nil
}

// staticVerdict makes the verdict of a program the static checks found
// invalid (it never runs), and reports whether there is one; it turns the
// other findings into warnings.
func staticVerdict(res *Result) bool {
	for _, f := range res.Findings {
		if f.Severity == SeverityInvalid {
			res.Verdict, res.Rule, res.Reason = Invalid, f.Rule, f.String()
			return true
		}
		res.Warnings = append(res.Warnings, f.String())
	}
	return false
}

// phase runs one phase on the executor and judges it; it returns the
// outcome and the telemetry to store.
func (e *Evaluator) phase(ctx context.Context, spec *track.Spec, files *DataFiles, req Request, runDir, mode string, lim phaseLimits) (*phaseOutcome, []byte, error) {
	run, err := e.Executor.Execute(ctx, PhaseJob{
		Track: spec, Data: files, Program: req.Program, Name: req.Name, Seed: req.Seed,
		Mode: mode, Limit: lim.limit, Ceiling: lim.ceiling, PlannedSteps: lim.planned,
		RunDir: runDir, FastOnly: req.FastOnly, Key: req.Key, Progress: e.Progress,
	})
	if err != nil {
		return nil, nil, err
	}
	out, err := judgeRun(spec, run)
	if err != nil {
		return nil, nil, err
	}
	e.progress("%s: %s run ended: %s", spec.Name, mode, out.summary())
	return out, run.Telemetry, nil
}

// fill copies the phase's measurements into the result.
func (e *Evaluator) fill(res *Result, o *phaseOutcome) {
	t := o.tel
	for _, w := range t.Warnings {
		res.Warnings = append(res.Warnings, w.Message)
	}
	res.Metrics.WallMs = o.phase.WallMs
	if c := o.phase.Conditions; c != nil && c.CPU != nil {
		res.Metrics.CPUMs = c.CPU.OwnMs
	}
	if o.phase.Sandbox != "" {
		res.Environment.Sandbox = o.phase.Sandbox
	}
	res.Environment.BLAS = o.phase.BLAS
	if t.RunStart != nil {
		res.Fingerprint = t.RunStart.Fingerprint
		res.FingerprintClass = withBLAS(FingerprintClass(t.RunStart), o.phase.BLAS)
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
		m.Clock = track.ClockWall
		if o.phase.TrainCPUMs > 0 {
			// A track timed by CPU time: the run's time is its CPU time.
			m.Clock, m.WallTrainMs, m.TrainTimeMs = track.ClockCPU, f.TrainTimeMs, o.phase.TrainCPUMs
			m.StepAvgMs = m.TrainTimeMs / float64(max(f.Steps, 1))
		}
		m.Score = m.StepAvgMs * f.ValLoss
		if res.Track.LossFloor > 0 {
			m.GapToFloor = f.ValLoss - res.Track.LossFloor
		}
	}
}

// interrupt marks an evaluation that could not finish as interrupted, with
// why, so that no row stays running.
func (e *Evaluator) interrupt(ctx context.Context, rec *store.Evaluation, cause error) {
	rec.Verdict = ""
	rec.State, rec.Reason = unfinished(cause)
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
	rec.Conditions = res.TimedConditions()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return e.Store.FinishEvaluation(sctx, rec, telemetry)
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

// runChecks applies the checks in order. It returns the program to run and
// every finding; the first invalid finding decides the verdict.
func (e *Evaluator) runChecks(ctx context.Context, spec *track.Spec, name string, prog []byte) ([]byte, []Finding, error) {
	if len(e.Checks) == 0 {
		return prog, nil, nil
	}
	ref, err := spec.ReferenceSource()
	if err != nil {
		return nil, nil, err
	}
	var all []Finding
	for _, c := range e.Checks {
		r, err := c.Check(ctx, CheckInput{Track: spec, Reference: ref, Program: prog, Name: name})
		if err != nil {
			return nil, nil, fmt.Errorf("check program: %w", err)
		}
		if r == nil {
			continue
		}
		all = append(all, r.Findings...)
		if r.Program != nil {
			prog = r.Program
		}
	}
	return prog, all, nil
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

// phaseLimits are a phase's wall-clock limits: the first deadline, and
// the hard ceiling a run still stepping may go on to (0: none past limit);
// planned is the steps the program plans, when known.
type phaseLimits struct {
	limit, ceiling time.Duration
	planned        int
}

// fullLimits are the full run's limits: fixed when the evaluator has a
// FullLimit (--limit); else the first deadline sized from the fast check
// (fullLimit), at least twice the reference's measured full run (refWall,
// when known), and the track's full_run_max as the ceiling.
func (e *Evaluator) fullLimits(spec *track.Spec, fast *phaseOutcome, refWall time.Duration) (phaseLimits, string) {
	if e.FullLimit > 0 {
		return phaseLimits{limit: e.FullLimit}, fmt.Sprintf("the full run's limit is %s, as set (--limit): fixed", e.FullLimit)
	}
	limit, note := fullLimit(spec, fast)
	ceiling := max(spec.Limits.FullRunMax.D(), limit)
	if floor := min((2 * refWall).Round(time.Second), ceiling); floor > limit {
		limit = floor
		note = joinNotes(note, fmt.Sprintf("the reference's full run took %s here: the limit is %s", refWall.Round(time.Second), limit))
	}
	lim := phaseLimits{limit: limit, ceiling: ceiling}
	if fast != nil && fast.tel != nil && fast.tel.Final != nil {
		lim.planned = fast.tel.Final.PlannedSteps
	}
	return lim, note
}

// joinNotes joins the notes that are not empty.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
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
