package eval

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/importer"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/track"
)

// The log contract runs an unmodified NanoGPT speedrun script: frontier
// rewrites the data paths and val_tokens of its Hyperparameters block
// (importer.Inject), launches it the way torchrun would, and reads the
// result from the lines the script prints. The script owns its clock and
// computes its own validation loss, so such results carry the verification
// level "log", which every report states.

//go:embed frontier_launch.py
var launchScript []byte

// Names in a log-contract run folder.
const (
	launchFile      = "frontier_launch.py"
	fingerprintFile = "fingerprint.json"
	logTelemetry    = "telemetry.jsonl" // synthesized from the parsed log
)

// Rules of invalid log-contract verdicts, at the start of the reason.
const (
	RuleLogShape     = "log-shape"     // not a speedrun-style script
	RuleLogInjection = "log-injection" // the injected settings were not used
)

// logNotice is the warning every log-contract result carries.
const logNotice = "verification level log: this result was read from the program's own printed lines " +
	"(its validation loss, its train_time clock, its peak memory). frontier injected the data paths and " +
	"val_tokens and checked that the program used them, but it did not compute the validation loss itself, " +
	"does not own the clock, and ran no causality probe: weaker than the harness's full verification"

// Output kept from a log-contract run: the step lines of a long run must
// survive to the final validation line.
const (
	logHeadBytes = 1 << 20
	logTailBytes = 8 << 20
)

// Legacy runs the phases of tracks under the legacy "log" contract: an
// unmodified speedrun script whose parameters are injected and whose log
// lines are parsed, on Local's runner, Python and GPUs. What the script
// printed is turned into the judge's events (logTelemetryLines), and a
// script that cannot run under the contract, or did not use what was
// injected, gets the error events of the rules it broke, so that the
// pipeline judges both contracts alike.
type Legacy struct {
	Local *Local
}

// Execute runs the script once, in the phase's mode.
func (g *Legacy) Execute(ctx context.Context, job PhaseJob) (*PhaseRun, error) {
	l, spec, mode := g.Local, job.Track, job.Mode
	say := sayer(job.Progress)
	run := &PhaseRun{Mode: mode, Limit: job.Limit, Node: hostname(), BLAS: l.BLAS}
	vals := logValues(spec, job.Data, mode)
	prog, err := importer.Inject(job.Program, vals)
	switch {
	case errors.Is(err, importer.ErrNoIterations) && mode == harness.ModeFast:
		if job.FastOnly {
			return nil, fmt.Errorf("cannot run a fast check of %s: %w; evaluate it without --fast", job.Name, err)
		}
		// Nothing to shorten: go straight to the full run.
		run.Skipped = "skipped: " + err.Error()
		return run, nil
	case err != nil:
		run.Program = runner.Result{Status: runner.StatusNoStart, ExitCode: -1, Message: "not run: " + err.Error()}
		run.Telemetry = rejectedLines(err)
		return run, nil
	}

	dir := filepath.Join(job.RunDir, mode)
	if err := writeProgram(dir, prog); err != nil {
		return nil, err
	}
	if err := writeLauncher(dir); err != nil {
		return nil, err
	}
	scratch, err := newScratch()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	progPath := filepath.Join(dir, harness.Program)
	fpPath := filepath.Join(dir, fingerprintFile)
	nproc := max(spec.Launcher.NProcPerNode, 1)
	argv := []string{l.Python, "-u", filepath.Join(dir, launchFile), "--nproc=" + strconv.Itoa(nproc)}
	if mode == harness.ModeFull {
		// The result's fingerprint comes from the full run; the fast check
		// saves the probe's seconds.
		argv = append(argv, "--fingerprint="+fpPath)
	}
	argv = append(argv, progPath)

	gpuEnv, releaseGPUs, err := l.assignGPUs(ctx, spec, say)
	if err != nil {
		return nil, err
	}
	defer releaseGPUs()
	env := append(append(baseEnv(scratch), l.Env...), "PYTHONUNBUFFERED=1")
	if n := spec.Hardware.Threads; n > 0 {
		t := strconv.Itoa(n)
		env = append(env, "OMP_NUM_THREADS="+t, "MKL_NUM_THREADS="+t, "OPENBLAS_NUM_THREADS="+t)
	}
	env = append(env, gpuEnv...)

	say("%s: %s run (limit %s, log contract, %d process(es))", spec.Name, mode, job.Limit, nproc)
	rjob := runner.Job{
		Dir: dir, Argv: argv, Env: env, Timeout: job.Limit,
		StdoutFile: filepath.Join(job.RunDir, mode+"-stdout.log"), StderrFile: filepath.Join(job.RunDir, mode+"-stderr.log"),
		HeadBytes: logHeadBytes, TailBytes: logTailBytes,
		MemoryBytes: int64(spec.Limits.Memory), MaxTasks: spec.Limits.MaxTasks,
		// The workers rendezvous over TCP on 127.0.0.1, even alone.
		LoopbackTCP: true,
		Scratch:     scratch, DiskBytes: int64(spec.Limits.Disk),
	}
	if job.Progress != nil {
		rjob.OnLine = func(stream, line string) {
			if stream == runner.StreamStdout && strings.HasPrefix(line, "step:") && strings.Contains(line, "val_loss:") {
				job.Progress("  " + line)
			}
		}
	}
	meter := startMeter(0)
	rr, err := l.Runner.Run(ctx, rjob)
	if err != nil {
		return nil, fmt.Errorf("%s run: %w", mode, err)
	}
	run.Conditions = meter.stop(rr)
	lg, err := importer.ParseLog(strings.NewReader(rr.Stdout.String()))
	if err != nil {
		return nil, fmt.Errorf("read the program's output: %w", err)
	}
	// The program could have put anything under that name: a link, a
	// pipe, a huge file. Only a small regular file is read.
	fp, _ := readRunFile(fpPath, 64<<10)
	run.Program = rr
	run.Telemetry = logTelemetryLines(spec, mode, vals, lg, rr, fp)
	_ = os.WriteFile(filepath.Join(job.RunDir, mode+"-"+logTelemetry), run.Telemetry, 0o600) // kept with --keep, for people
	return run, nil
}

// logValues are the settings injected into the program for one phase.
func logValues(spec *track.Spec, files *DataFiles, mode string) importer.Values {
	val, _ := filepath.Abs(files.Val) // only fails without a working directory
	trainDir := filepath.Dir(val)
	if len(files.Train) > 0 {
		trainDir, _ = filepath.Abs(filepath.Dir(files.Train[0]))
	}
	v := importer.Values{
		// The script globs these patterns itself: the folder part must
		// match literally.
		TrainFiles: filepath.Join(globEscape(trainDir), spec.Data.Train),
		ValFiles:   globEscape(val),
		ValTokens:  spec.Data.ValTokens,
	}
	if mode == harness.ModeFast {
		v.ValTokens = fastValTokens(spec)
		v.Iterations = spec.Limits.FastSteps
	}
	return v
}

// fastValTokens is the validation slice of the fast check, as the harness
// contract computes it.
func fastValTokens(spec *track.Spec) int64 {
	n := spec.Limits.FastValTokens
	if n == 0 {
		n = int64(spec.Data.ValSeqLen * spec.Data.ValBatchSeqs)
	}
	return min(n, spec.Data.ValTokens)
}

// globEscape makes a path match itself under Python's glob (glob.escape).
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		switch r {
		case '*', '?', '[':
			b.WriteString("[" + string(r) + "]")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// rejectedLines are the telemetry of a program that cannot run under the
// log contract at all: not speedrun-shaped, or changing an injected
// setting. The rule is the judge's finding, as for the harness contract.
func rejectedLines(err error) []byte {
	code := codeLogInjection
	if errors.Is(err, importer.ErrNotSpeedrun) {
		code = codeLogShape
	}
	b, _ := json.Marshal(harness.Error{Kind: "Judge", Code: code, Message: err.Error(), Judge: true})
	return append(append([]byte(`{"event":"error","t_ms":0,`), b[1:]...), '\n')
}

// Error codes of the log contract's rules: judge findings, as the
// harness's behavioural checks (see codeRule).
const (
	codeLogShape     = "log_shape"
	codeLogInjection = "log_injection"
)

// injectedProblem says why the program did not show it used the injected
// values ("" when it did): it must print them, once, the proof that the
// rewritten Hyperparameters block ran and held what frontier injected.
func injectedProblem(lg *importer.Log, vals importer.Values) string {
	switch len(lg.Injected) {
	case 0:
		return fmt.Sprintf("the program printed no %q line: its injected Hyperparameters block did not run, so the data and validation settings it used are unknown", importer.InjectedPrefix)
	case 1:
	default:
		return fmt.Sprintf("the program printed %d %q lines instead of one: the injected settings cannot be told apart from imitations", len(lg.Injected), importer.InjectedPrefix)
	}
	var echo importer.Echo
	if err := json.Unmarshal([]byte(lg.Injected[0]), &echo); err != nil {
		return fmt.Sprintf("the %q line is not the JSON frontier writes: %v", importer.InjectedPrefix, err)
	}
	if ok, diff := echo.Matches(vals); !ok {
		return "the program used " + diff
	}
	return ""
}

// logTelemetryLines turns a parsed log into telemetry events, so that the
// rest of the evaluation (verdicts, report, store) treats both contracts
// alike. Train lines are kept every log_every steps and at the last step.
func logTelemetryLines(spec *track.Spec, mode string, vals importer.Values, lg *importer.Log, rr runner.Result, fingerprint []byte) []byte {
	var b bytes.Buffer
	emit := func(kind string, v any) {
		body, err := json.Marshal(v)
		if err != nil {
			body, _ = json.Marshal(harness.Warning{Code: harness.WarnTelemetry, Message: fmt.Sprintf("could not encode a %s event: %v", kind, err)})
			kind = harness.EventWarning
		}
		fmt.Fprintf(&b, `{"event":%q,"t_ms":0`, kind)
		if len(body) > 2 {
			b.WriteByte(',')
			b.Write(body[1:])
		} else {
			b.WriteByte('}')
		}
		b.WriteByte('\n')
	}

	if rs := runStartFrom(spec, mode, fingerprint); rs != nil {
		emit(harness.EventRunStart, rs)
	}
	emit(harness.EventWarning, harness.Warning{Code: "log_contract", Message: logNotice})
	if lg.TooLong > 0 {
		emit(harness.EventWarning, harness.Warning{Code: "log_lines", Message: fmt.Sprintf("%d output lines over 1 MiB were skipped", lg.TooLong)})
	}
	if rr.Stdout.Dropped > 0 {
		emit(harness.EventWarning, harness.Warning{Code: "log_lines", Message: fmt.Sprintf("%d bytes of the program's output were not kept; step lines in that part are missing from the curve", rr.Stdout.Dropped)})
	}

	every := max(spec.Telemetry.LogEvery, 1)
	for i, t := range lg.Train {
		last := i == len(lg.Train)-1 || t.Step == t.Total
		if t.Step%every != 0 && !last {
			continue
		}
		if !finite(t.TrainTimeMs) {
			continue
		}
		s := harness.Step{Step: t.Step - 1, TrainTimeMs: t.TrainTimeMs, StepAvgMs: orZero(t.StepAvgMs)}
		if t.TrainLoss != nil && finite(*t.TrainLoss) {
			s.TrainLoss = t.TrainLoss
		}
		emit(harness.EventStep, s)
	}
	final := lg.Final()
	for i := range lg.Vals {
		v := &lg.Vals[i]
		if !finite(v.ValLoss) {
			continue
		}
		emit(harness.EventVal, harness.Val{Step: v.Step, ValLoss: v.ValLoss, Tokens: vals.ValTokens, Final: v == final})
	}
	mem := harness.Memory{PeakRSSMB: float64(rr.MaxRSSKB) / 1024, CUDAAllocatedMB: lg.PeakAllocatedMiB, CUDAReservedMB: lg.PeakReservedMiB}
	emit(harness.EventMemory, mem)

	if final != nil {
		if p := injectedProblem(lg, vals); p != "" {
			emit(harness.EventError, harness.Error{Kind: "Judge", Code: codeLogInjection, Message: p, Judge: true})
		}
		if vals.Iterations > 0 && final.Total != vals.Iterations {
			emit(harness.EventWarning, harness.Warning{Code: "log_steps",
				Message: fmt.Sprintf("the fast check set %d iterations but the program ran %d", vals.Iterations, final.Total)})
		}
	}
	switch {
	case final != nil && !finite(final.ValLoss):
		emit(harness.EventError, harness.Error{Kind: "FloatingPointError", Code: harness.ErrNaNLoss, Step: final.Step,
			Message: fmt.Sprintf("the final validation loss is %v: training diverged", final.ValLoss)})
	case final != nil:
		avg := final.StepAvgMs
		if !finite(avg) || avg <= 0 {
			avg = final.TrainTimeMs / float64(max(final.Total, 1))
		}
		emit(harness.EventFinal, harness.Final{Steps: final.Total, TrainTimeMs: final.TrainTimeMs, StepAvgMs: avg,
			ValLoss: final.ValLoss, ValTokens: vals.ValTokens})
	case rr.Status == runner.StatusOK:
		msg := "the program exited without printing the validation line of its last step (step:N/N val_loss:... train_time:...ms)"
		if n := len(lg.Vals); n > 0 {
			v := lg.Vals[n-1]
			msg += fmt.Sprintf("; its last validation line was at step %d of %d", v.Step, v.Total)
		}
		emit(harness.EventError, harness.Error{Kind: "NoResult", Code: harness.ErrNoFinish, Message: msg})
	}
	return b.Bytes()
}

// runStartFrom builds the run_start event from the launcher's fingerprint
// probe; nil when there is none.
func runStartFrom(spec *track.Spec, mode string, raw []byte) *harness.RunStart {
	var p struct {
		harness.Fingerprint
		Error string `json:"error"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil || p.Torch == "" {
		return nil
	}
	return &harness.RunStart{
		Mode: mode, Python: p.Python, Torch: p.Torch, Device: spec.Hardware.Device, Threads: p.Threads,
		Fingerprint: p.Fingerprint, WorldSize: max(spec.Launcher.NProcPerNode, 1),
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func orZero(x float64) float64 {
	if finite(x) {
		return x
	}
	return 0
}

// writeLauncher writes the launcher into dir with the harness's boot
// script beside it: the launcher imports the boot's torchrun environment
// and its supervision of workers, so that both contracts stop their
// workers alike.
func writeLauncher(dir string) error {
	boot, err := harness.Source(harness.BootFile)
	if err != nil {
		return fmt.Errorf("write launcher: %w", err)
	}
	if err := replaceFile(filepath.Join(dir, harness.BootFile), boot, 0o444); err != nil {
		return fmt.Errorf("write launcher: %w", err)
	}
	if err := replaceFile(filepath.Join(dir, launchFile), launchScript, 0o444); err != nil {
		return fmt.Errorf("write launcher: %w", err)
	}
	return nil
}

// replaceFile writes b to path with mode perm, replacing a read-only file.
func replaceFile(path string, b []byte, perm os.FileMode) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, b, perm)
}
