package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
)

// Local runs the phases of harness-contract tracks on this machine: the
// judge first, outside the sandbox; the program in the sandbox with one
// socket to the judge per process; and, once the final validation's scored
// answers are in and every process of the program is gone, the scorer: a
// fresh process of the same program, in a sandbox of its own, that answers
// the final validation again from the state the program exported at
// fh.finish(). Nothing in the run folder is read. Its fields are set once;
// Execute may be called from several goroutines.
type Local struct {
	// Runner runs the processes (a sandbox wraps the local runner).
	Runner runner.Runner
	// Python is the interpreter that runs programs (see pyenv.Find).
	Python string
	// GPUs, when set, are the node's GPUs: each process of a cuda track
	// takes hardware.gpus of them (CUDA_VISIBLE_DEVICES), waiting while
	// other evaluations hold them (see assignGPUs).
	GPUs *runner.GPUPool
	// Sandbox names the confinement Runner applies ("bwrap", "landlock",
	// "none").
	Sandbox string
	// Hidden are paths no program may read (frontier's home: its
	// database, caches and other runs); Visible are paths inside them it
	// needs to read (the Python installation).
	Hidden  []string
	Visible []string
	// Env is added to every program's environment: what the
	// interpreter's probe found it needs (pyenv.Info.ProgramEnv).
	Env []string
	// BLAS names the kernels programs run with, for the result
	// (pyenv.Info.BLASName).
	BLAS string
}

// Execute runs one phase: the judge, the program, then the scorer.
func (l *Local) Execute(ctx context.Context, job PhaseJob) (*PhaseRun, error) {
	spec, mode := job.Track, job.Mode
	say := sayer(job.Progress)
	gpuEnv, releaseGPUs, err := l.assignGPUs(ctx, spec, say)
	if err != nil {
		return nil, err
	}
	defer releaseGPUs()

	// The judge: everything that decides the verdict, in a process and a
	// folder the program cannot reach.
	jcfg, err := judgeConfig(spec, job.Data, mode)
	if err != nil {
		return nil, err
	}
	var handoff sync.Once
	handedOff := make(chan struct{})
	progress := judgeProgress(job.Progress)
	// The first deadline is the limit; a run still stepping there may go
	// on, up to the ceiling (the runner's own limit then).
	var dl *deadline
	runLimit := job.Limit
	if job.Ceiling > job.Limit && job.Limit > 0 {
		dl, runLimit = newDeadline(time.Now(), job.Limit, job.Ceiling, job.PlannedSteps), job.Ceiling
	}
	var cpu *cpuWatch
	if spec.Hardware.Clock == track.ClockCPU {
		cpu = newCPUWatch()
	}
	onLine := func(line []byte) {
		if cpu != nil {
			cpu.observe(line)
		}
		if bytes.Contains(line, []byte(`"event":"handoff"`)) {
			handoff.Do(func() { close(handedOff) })
		}
		if dl != nil {
			dl.observe(line, time.Now())
		}
		if progress != nil {
			progress(line)
		}
	}
	judgeDir := filepath.Join(job.RunDir, "judge-"+mode)
	judge, err := harness.StartJudge(ctx, l.Python, judgeDir, jcfg, judgeEnv(spec, gpuEnv), onLine)
	if err != nil {
		return nil, err
	}

	// The program.
	say("%s: %s run (limit %s)", spec.Name, mode, job.Limit)
	pjob, cleanup, err := l.programJob(job, "", gpuEnv, judge.Clients(), runLimit)
	if err != nil {
		judge.Kill()
		return nil, err
	}
	pctx, stop := context.WithCancelCause(ctx)
	if cpu != nil {
		pjob.CPU = &cpu.meter
		go cpu.sample(pctx)
	}
	if dl != nil {
		dl.begin(time.Now())
		go watchDeadline(pctx, dl, stop)
	}
	go func() {
		// After its final validation the program has nothing left to do:
		// a short grace to end on its own, then it is stopped, so that
		// nothing of it runs beside the scorer.
		select {
		case <-handedOff:
		case <-pctx.Done():
			return
		}
		select {
		case <-time.After(handoffGrace):
			stop(errHandedOff)
		case <-pctx.Done():
		}
	}()
	meter := startMeter(judge.Pid())
	rr, err := l.Runner.Run(pctx, pjob)
	ended := context.Cause(pctx)
	cond := meter.stop(rr)
	stop(nil)
	cleanup() // its temporary files, before the scorer starts
	judge.CloseClients()
	if err != nil {
		judge.Kill()
		return nil, fmt.Errorf("%s run: %w", mode, err)
	}
	if rr.Status == runner.StatusCanceled && errors.Is(ended, errHandedOff) && ctx.Err() == nil {
		rr.Status, rr.Message = runner.StatusOK, "stopped after its final validation"
	}
	var over *limitPassed
	if rr.Status == runner.StatusCanceled && errors.As(ended, &over) && ctx.Err() == nil {
		rr.Status, rr.Message = runner.StatusTimeout, over.why+"; its processes were stopped"
	}
	run := &PhaseRun{Mode: mode, Program: rr, Limit: job.Limit, Node: hostname(), Conditions: cond, BLAS: l.BLAS}
	if cpu != nil {
		cpu.ended(rr)
	}
	if dl != nil {
		run.Limit, run.LimitNote = dl.limit()
	}

	// The scorer, once the program's final validation is over.
	select {
	case <-handedOff:
		if ctx.Err() == nil {
			say("%s: %s run: the scorer answers the final validation again", spec.Name, mode)
			sjob, scleanup, err := l.programJob(job, harness.RoleScorer, gpuEnv, judge.ScorerClients(),
				spec.Limits.CompileBudget.D()+job.Limit)
			if err != nil {
				judge.Kill()
				return nil, err
			}
			sr, err := l.Runner.Run(ctx, sjob)
			scleanup()
			if err != nil {
				judge.Kill()
				return nil, fmt.Errorf("%s run's scorer: %w", mode, err)
			}
			run.Scorer = &sr
		}
	default:
	}

	tel, raw, jerr := judge.Finish(harness.JudgeFinishTimeout)
	if tel == nil {
		return nil, fmt.Errorf("%s run: %w", mode, jerr)
	}
	run.Telemetry = raw
	if cpu != nil {
		run.CPU = cpu.readings() // the judge's marks are all heard now
	}
	if jerr != nil && ctx.Err() == nil {
		// A judge stopped because the evaluation was canceled did not
		// fail: the program's status says the evaluation was canceled.
		run.JudgeFailed, run.JudgeStderr = jerr.Error(), judge.Stderr()
	}
	return run, nil
}

// watchDeadline stops the run (stop, with a *limitPassed) once dl says
// it ran too long, checking every second until ctx ends.
func watchDeadline(ctx context.Context, dl *deadline, stop context.CancelCauseFunc) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if over, why := dl.check(now); over {
				stop(&limitPassed{why: why})
				return
			}
		}
	}
}

// limitPassed is why a run was stopped at its deadline.
type limitPassed struct{ why string }

func (e *limitPassed) Error() string { return e.why }

// handoffGrace is how long a program may take to end on its own after its
// final validation before it is stopped.
const handoffGrace = 5 * time.Second

// errHandedOff is why a program that outlived its final validation was
// stopped: not a failure.
var errHandedOff = errors.New("the final validation is over")

// programJob prepares the folder of one process of a phase (the program,
// or with role RoleScorer the scorer, in a folder of its own) and returns
// its job and what to remove once it ended.
func (l *Local) programJob(pj PhaseJob, role string, gpuEnv []string, sockets []*os.File, limit time.Duration) (runner.Job, func(), error) {
	spec, files, mode := pj.Track, pj.Data, pj.Mode
	name := mode
	if role == harness.RoleScorer {
		name = mode + "-scorer"
	}
	dir := filepath.Join(pj.RunDir, name)
	if err := writeProgram(dir, pj.Program); err != nil {
		return runner.Job{}, nil, err
	}
	if _, err := harness.Materialize(dir); err != nil {
		return runner.Job{}, nil, fmt.Errorf("write harness: %w", err)
	}
	cfg := programConfig(spec, files, pj.Seed, mode, dir)
	cfg.Role = role
	cfg.ExportMaxBytes = exportLimit(spec)
	if err := harness.WriteConfig(filepath.Join(dir, harness.ConfigFile), cfg); err != nil {
		return runner.Job{}, nil, fmt.Errorf("track %s gives an invalid harness config: %w", spec.Name, err)
	}
	scratch, err := newScratch()
	if err != nil {
		return runner.Job{}, nil, err
	}
	argv, henv := harness.Command(l.Python, dir, cfg)
	env := append(append(append(baseEnv(scratch), l.Env...), henv...), gpuEnv...)
	job := runner.Job{
		Dir: dir, Argv: argv, Env: env, Timeout: limit,
		StdoutFile: filepath.Join(pj.RunDir, name+"-stdout.log"), StderrFile: filepath.Join(pj.RunDir, name+"-stderr.log"),
		MemoryBytes: int64(spec.Limits.Memory), MaxTasks: spec.Limits.MaxTasks, DiskBytes: int64(spec.Limits.Disk),
		Scratch: scratch, LoopbackTCP: cfg.WorldSize > 1,
		ExtraFiles: sockets, // descriptors 3, 4, ...: one socket per process
		Hidden:     l.hiddenFor(pj.RunDir, files),
		Visible:    l.Visible,
	}
	if role == harness.RoleScorer {
		// The scorer shares nothing writable with the program: no memory
		// files or IPC objects the program may have left behind.
		job.IsolateIPC = true
	} else if l.Sandbox == "landlock" {
		// Landlock checks a file opened through /proc/PID/fd/N against its
		// path: the links the client makes to the descriptors the judge
		// sends at train_begin would be refused. The training shards stay
		// readable by path under Landlock, before the clock too (the
		// threat model says so); the validation shard stays hidden.
		job.Visible = append(slices.Clone(job.Visible), files.Train...)
	}
	return job, func() { os.RemoveAll(scratch) }, nil
}

// writeProgram makes a process's folder and writes the candidate there,
// read-only.
func writeProgram(dir string, program []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create run folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, harness.Program), program, 0o444); err != nil {
		return fmt.Errorf("write program: %w", err)
	}
	return nil
}

// exportLimit bounds the state a program hands its scorer: what fits in
// the job's memory (the judge holds it in memory until the scorer reads
// it), or 16 GiB on tracks without a memory limit.
func exportLimit(spec *track.Spec) int64 {
	if m := int64(spec.Limits.Memory); m > 0 {
		return m
	}
	return 16 << 30
}

// hiddenFor is what the program of a run must not read: every run folder
// but its own (the runs folder is hidden and its own folder bound back),
// the judge's folders, the track's data folder (the training shards reach
// the program as descriptors at train_begin; the tiny corpus's secret lies
// there too, so hiding the folder hides it), and what the evaluator hides
// always (frontier's home: its database and caches).
func (l *Local) hiddenFor(runDir string, files *DataFiles) []string {
	h := append([]string{filepath.Dir(runDir), filepath.Dir(files.Val)}, l.Hidden...)
	for _, f := range files.Train {
		if d := filepath.Dir(f); !slices.Contains(h, d) {
			h = append(h, d)
		}
	}
	return h
}

// judgeProgress turns the judge's step and validation events into
// progress lines.
func judgeProgress(progress func(string)) func([]byte) {
	if progress == nil {
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
			progress(msg)
		case harness.EventVal:
			progress(fmt.Sprintf("  step:%d val_loss:%.4f", ev.Step, ev.ValLoss))
		}
	}
}

// sayer formats progress lines for progress, which may be nil.
func sayer(progress func(string)) func(format string, args ...any) {
	return func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
}

// hostname names this node in a phase's result.
func hostname() string {
	h, _ := os.Hostname()
	return h
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
		Scorer:          true, ExportMaxBytes: exportLimit(spec),
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
