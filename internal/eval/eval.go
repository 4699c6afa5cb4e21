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
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

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
