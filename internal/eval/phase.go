package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
)

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
// the judge's folders, the track's data folder (the training shards reach
// the program as descriptors at train_begin; the tiny corpus's secret lies
// there too, so hiding the folder hides it), and what the evaluator hides
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
