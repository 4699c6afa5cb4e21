package eval

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/importer"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/testdeps"
	"github.com/frontier-bench/frontier/internal/track"
)

// logTrack is the tiny data under the log contract, sized for the
// miniature speedrun script: 8192 validation tokens, a 3-step fast check.
func logTrack(t *testing.T, nproc int) *track.Spec {
	t.Helper()
	s := testTrack(t, 6.0)
	s.Name = "logtest"
	s.Contract = "log"
	s.Launcher = track.Launcher{Kind: "torchrun", NProcPerNode: nproc}
	s.Hardware.Threads = 1
	s.Data.ValTokens = 8192
	s.Limits.FastSteps = 3
	s.Limits.FastValTokens = 1024
	s.Limits.FullRun = track.Duration(3 * time.Minute)
	s.Limits.FastCheck = track.Duration(2 * time.Minute)
	s.Telemetry.LogEvery = 10
	return s
}

var injected = importer.Values{TrainFiles: "/d/tiny_train_*.bin", ValFiles: "/d/tiny_val_000000.bin", ValTokens: 8192}

func echo(v importer.Values) string {
	return fmt.Sprintf(`%s {"train_files": %q, "val_files": %q, "val_tokens": %d}`, importer.InjectedPrefix, v.TrainFiles, v.ValFiles, v.ValTokens)
}

// judgeLog runs the log contract's reading of an output without a process.
func judgeLog(t *testing.T, spec *track.Spec, rr runner.Result, stdout string) *phaseOutcome {
	t.Helper()
	rr.Stdout = runner.Output{Head: stdout, Total: int64(len(stdout))}
	if rr.Wall == 0 {
		rr.Wall = time.Minute
	}
	lg, err := importer.ParseLog(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	fp := []byte(`{"torch": "2.9.0", "threads": 4, "cpu": "Test CPU", "gpus": ["NVIDIA H100 80GB HBM3"], "cuda": "12.6", "driver": "570.1"}`)
	raw := logTelemetryLines(spec, "full", injected, lg, rr, fp)
	tel, err := harness.ReadTelemetry(bytes.NewReader(raw))
	if err != nil || tel.Skipped > 0 {
		t.Fatalf("synthesized telemetry does not read back: %v, %d skipped\n%s", err, tel.Skipped, raw)
	}
	return judgePhase(spec, "full", rr, nil, tel)
}

func steps(n, total int, valEvery int, finalLoss string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step:0/%d val_loss:5.5000 train_time:0ms step_avg:0.03ms\n", total)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "step:%d/%d train_time:%dms step_avg:10.00ms\n", i, total, 10*i)
		if i%valEvery == 0 && i < total {
			fmt.Fprintf(&b, "step:%d/%d val_loss:4.%04d train_time:%dms step_avg:10.00ms\n", i, total, 9000-i, 10*i)
		}
	}
	if n == total {
		fmt.Fprintf(&b, "step:%d/%d val_loss:%s train_time:%dms step_avg:10.00ms\n", total, total, finalLoss, 10*total)
	}
	return b.String()
}

func TestLogContractReading(t *testing.T) {
	spec := logTrack(t, 1)
	ok := runner.Result{Status: runner.StatusOK, MaxRSSKB: 512 * 1024}

	t.Run("result", func(t *testing.T) {
		out := "logs/x.txt\n" + echo(injected) + "\n" + steps(20, 20, 10, "3.9000") + "peak memory allocated: 100 MiB reserved: 200 MiB\n"
		o := judgeLog(t, spec, ok, out)
		if o.verdict != "" {
			t.Fatalf("verdict %s: %s", o.verdict, o.reason)
		}
		f := o.tel.Final
		if f == nil || f.Steps != 20 || f.ValLoss != 3.9 || f.TrainTimeMs != 200 || f.StepAvgMs != 10 || f.ValTokens != 8192 {
			t.Fatalf("final %+v", f)
		}
		if o.phase.Steps != 20 || o.phase.ValLoss != 3.9 {
			t.Fatalf("phase %+v", o.phase)
		}
		var kept []int
		for _, s := range o.tel.Steps {
			kept = append(kept, s.Step)
		}
		if fmt.Sprint(kept) != "[9 19]" || len(o.tel.Vals) != 3 || !o.tel.Vals[2].Final || o.tel.Vals[0].Final {
			t.Fatalf("curve %v, vals %+v", kept, o.tel.Vals)
		}
		m := o.tel.Memory
		if m == nil || m.CUDAAllocatedMB != 100 || m.CUDAReservedMB != 200 || m.PeakRSSMB != 512 {
			t.Fatalf("memory %+v", m)
		}
		rs := o.tel.RunStart
		if rs == nil || FingerprintClass(rs) != "cuda|1x NVIDIA H100 80GB HBM3|torch 2.9.0|cuda 12.6" {
			t.Fatalf("run start %+v", rs)
		}
		if len(o.tel.Warnings) == 0 || !strings.Contains(o.tel.Warnings[0].Message, "verification level log") {
			t.Fatalf("warnings %+v", o.tel.Warnings)
		}
	})

	cases := []struct {
		name    string
		rr      runner.Result
		out     string
		verdict Verdict
		reason  string
	}{
		{"no final line", ok, echo(injected) + "\n" + steps(12, 20, 10, ""), NoResult, "last validation line was at step 10 of 20"},
		{"nothing printed", ok, "", NoResult, "without printing the validation line"},
		{"diverged", ok, echo(injected) + "\n" + steps(20, 20, 10, "nan"), Error, "training diverged"},
		{"no echo", ok, steps(20, 20, 10, "3.9"), Invalid, "log-injection: the program printed no"},
		{"two echoes", ok, echo(injected) + "\n" + echo(injected) + "\n" + steps(20, 20, 10, "3.9"), Invalid, "2 \"frontier:injected\" lines"},
		{"other val_tokens", ok, echo(importer.Values{TrainFiles: injected.TrainFiles, ValFiles: injected.ValFiles, ValTokens: 1024}) + "\n" + steps(20, 20, 10, "3.9"),
			Invalid, "val_tokens 1024 instead of 8192"},
		{"other val file", ok, echo(importer.Values{TrainFiles: injected.TrainFiles, ValFiles: "/elsewhere.bin", ValTokens: 8192}) + "\n" + steps(20, 20, 10, "3.9"),
			Invalid, `val_files "/elsewhere.bin"`},
		{"garbled echo", ok, importer.InjectedPrefix + " {nope\n" + steps(20, 20, 10, "3.9"), Invalid, "not the JSON"},
		{"clock longer than the process", runner.Result{Status: runner.StatusOK, Wall: 100 * time.Millisecond}, echo(injected) + "\n" + steps(20, 20, 10, "3.9"),
			Invalid, "longer than the process's whole wall time"},
		{"crash", runner.Result{Status: runner.StatusError, ExitCode: 1, ErrorLine: "RuntimeError: boom", Traceback: "Traceback ...\nRuntimeError: boom"},
			echo(injected) + "\n" + steps(5, 20, 10, ""), Error, "RuntimeError: boom"},
		{"timeout", runner.Result{Status: runner.StatusTimeout}, echo(injected) + "\n" + steps(5, 20, 10, ""), Timeout, "after 5 steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := judgeLog(t, spec, c.rr, c.out)
			if o.verdict != c.verdict || !strings.Contains(o.reason, c.reason) {
				t.Fatalf("verdict %s: %s\nwant %s: ...%s...", o.verdict, o.reason, c.verdict, c.reason)
			}
			if (o.verdict == Invalid) != (o.rule != "") {
				t.Errorf("verdict %s with rule %q", o.verdict, o.rule)
			}
		})
	}
}

func TestLogValues(t *testing.T) {
	spec := logTrack(t, 1)
	files := &DataFiles{Train: []string{"/data/run[1]/tiny_train_000001.bin"}, Val: "/data/run[1]/tiny_val_000000.bin"}
	full := logValues(spec, files, "full")
	if full.TrainFiles != "/data/run[[]1]/tiny_train_*.bin" || full.ValFiles != "/data/run[[]1]/tiny_val_000000.bin" || full.ValTokens != 8192 || full.Iterations != 0 {
		t.Fatalf("full %+v", full)
	}
	fast := logValues(spec, files, "fast")
	if fast.ValTokens != 1024 || fast.Iterations != 3 {
		t.Fatalf("fast %+v", fast)
	}
}

// logEvaluator is an evaluator over the tiny data with a real runner.
func logEvaluator(t *testing.T) *Evaluator {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: runs Python training programs")
	}
	ev, _ := newEvaluator(t)
	ev.Data = &LocalData{Dirs: map[string]string{"logtest": shared.dataDir, "imported": shared.dataDir}}
	return ev
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func requireAcceptable(t *testing.T, res *Result) {
	t.Helper()
	if res.Verdict != Acceptable {
		var b bytes.Buffer
		WriteReport(&b, res)
		t.Fatalf("verdict %s: %s\n%s", res.Verdict, res.Reason, b.String())
	}
}

// TestLogContractEndToEnd runs the unmodified miniature speedrun script on
// two processes (gloo), as a record would run on a node.
func TestLogContractEndToEnd(t *testing.T) {
	ev := logEvaluator(t)
	spec := logTrack(t, 2)
	res, err := ev.Evaluate(context.Background(), Request{Track: spec, Program: readTestdata(t, "speedrun_mini.py"), Name: "speedrun_mini.py", Keep: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	requireAcceptable(t, res)
	m := res.Metrics
	if res.Verification != "log" || m.Steps != 30 || m.ValTokens != 8192 || m.TrainTimeMs <= 0 || m.ValLoss <= spec.Data.LossFloor || m.Score <= 0 {
		t.Fatalf("verification %s, metrics %+v", res.Verification, m)
	}
	if res.Fast == nil || res.Fast.Steps != 3 || res.Full == nil || res.Full.Status != runner.StatusOK {
		t.Fatalf("phases: fast %+v, full %+v", res.Fast, res.Full)
	}
	if len(res.Curve) != 3 || len(res.Vals) != 3 || !strings.HasPrefix(res.FingerprintClass, "cpu|") {
		t.Fatalf("curve %+v, vals %+v, class %q", res.Curve, res.Vals, res.FingerprintClass)
	}
	var rep bytes.Buffer
	if err := WriteReport(&rep, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", rep.String())
	for _, want := range []string{"verification log", "weaker than the harness's full verification"} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, rep.String())
		}
	}
	// The program ran with the injected values, and wrote its own log.
	prog, err := os.ReadFile(filepath.Join(res.RunDir, "full", harness.Program))
	if err != nil || !bytes.Contains(prog, []byte("val_tokens = 8192")) {
		t.Fatalf("program as run: %v\n%s", err, prog)
	}
	logs, _ := filepath.Glob(filepath.Join(res.RunDir, "full", "logs", "*.txt"))
	if len(logs) != 1 {
		t.Fatalf("the script's log files: %v", logs)
	}
}

// TestHarnessContractMiniSpeedrun runs the same ML ported to the harness.
func TestHarnessContractMiniSpeedrun(t *testing.T) {
	ev := logEvaluator(t)
	spec := logTrack(t, 1)
	spec.Contract = "harness"
	spec.Data.ValTokens = 8192
	res, err := ev.Evaluate(context.Background(), Request{Track: spec, Program: readTestdata(t, "speedrun_mini_harness.py"), Name: "speedrun_mini_harness.py"})
	if err != nil {
		t.Fatal(err)
	}
	requireAcceptable(t, res)
	if res.Verification != "full" || res.Metrics.Steps != 30 || res.Metrics.ValTokens != 8192 || res.Metrics.TokensPerS <= 0 {
		t.Fatalf("verification %s, metrics %+v", res.Verification, res.Metrics)
	}
}

// TestImportedRecordEvaluates imports a synthetic record log (the miniature
// script, the separator, versions, log lines), checks the track folder the
// way `frontier track check` does, and evaluates the record on the tiny
// data under the log contract.
func TestImportedRecordEvaluates(t *testing.T) {
	ev := logEvaluator(t)
	sep := importer.Separator + "\n"
	record := string(readTestdata(t, "speedrun_mini.py")) + sep + "Running Python 3.12\nRunning PyTorch 2.9.0\n" + sep +
		"step:0/30 val_loss:5.5452 train_time:0ms step_avg:0.02ms\nstep:30/30 val_loss:4.2000 train_time:900ms step_avg:30.00ms\n"
	dir := filepath.Join(t.TempDir(), "imported")
	im, err := importer.Import(importer.Options{From: "2026-01-01_Mini/0b0a6f5e-aaaa-4bbb-8ccc-123456789abc.txt", Source: []byte(record), Out: dir, Name: "imported", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := track.LoadDir(dir)
	if err != nil {
		t.Fatalf("track check: %v", err)
	}
	if im.Record == nil || im.Record.ValLoss != 4.2 {
		t.Fatalf("record line %+v", im.Record)
	}
	// On this machine: the tiny data and a CPU instead of FineWeb on a GPU.
	tiny := logTrack(t, 1)
	spec.Data, spec.Hardware, spec.Limits, spec.TargetValLoss = tiny.Data, tiny.Hardware, tiny.Limits, 6.0
	ref, err := spec.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	res, err := ev.Evaluate(context.Background(), Request{Track: spec, Program: ref, Name: "imported/train_gpt.py", FastOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != FastOK || res.Fast.Steps != 3 || res.Verification != "log" {
		t.Fatalf("verdict %s: %s (fast %+v)", res.Verdict, res.Reason, res.Fast)
	}
	res, err = ev.Evaluate(context.Background(), Request{Track: spec, Program: ref, Name: "imported/train_gpt.py", SkipFast: true})
	if err != nil {
		t.Fatal(err)
	}
	requireAcceptable(t, res)
}

// TestLogContractRefusesBeforeRunning: a program that is not speedrun-shaped,
// or that changes an injected setting, is invalid and never starts.
func TestLogContractRefusesBeforeRunning(t *testing.T) {
	if shared.err != nil {
		testdeps.Missing(t, "torch", "%v", shared.err)
	}
	ev, _ := newEvaluator(t)
	ev.Data = &LocalData{Dirs: map[string]string{"logtest": shared.dataDir}}
	ev.Executor = NewNode(&Local{Python: shared.python.Path, Runner: runner.Func(func(ctx context.Context, j runner.Job) (runner.Result, error) {
		t.Errorf("a process was started: %v", j.Argv)
		return runner.Result{}, nil
	})})
	spec := logTrack(t, 1)
	mini := string(readTestdata(t, "speedrun_mini.py"))
	cases := []struct {
		name, prog, reason string
	}{
		{"reassigns val_tokens", strings.Replace(mini, "args = Hyperparameters()\n", "args = Hyperparameters()\nargs.val_tokens = 1024\n", 1), "log-injection: line"},
		{"no Hyperparameters", "import torch\nprint('step:1/1 val_loss:1.0 train_time:1ms step_avg:1.00ms')\n", "log-shape: not a speedrun-style"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := ev.Evaluate(context.Background(), Request{Track: spec, Program: []byte(c.prog), Name: "p.py"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != Invalid || res.Rule == "" || !strings.Contains(res.Reason, c.reason) || res.Fast == nil || res.Fast.Status != runner.StatusNoStart {
				t.Fatalf("verdict %s: %s (fast %+v)", res.Verdict, res.Reason, res.Fast)
			}
		})
	}
}
