package harness

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests run the embedded harness under a real Python with PyTorch.
// FRONTIER_TEST_PYTHON picks the interpreter; the default is
// /usr/bin/python3 (Debian's torch), then python3 on PATH.

var torchCheck struct {
	once   sync.Once
	python string
	err    error
}

func pythonWithTorch(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping Python end-to-end test in -short mode")
	}
	torchCheck.once.Do(func() {
		py := os.Getenv("FRONTIER_TEST_PYTHON")
		if py == "" {
			py = "/usr/bin/python3"
			if _, err := os.Stat(py); err != nil {
				py = "python3"
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, py, "-c", "import torch, numpy").CombinedOutput()
		if err != nil {
			torchCheck.err = errors.New(strings.TrimSpace(string(out)))
		}
		torchCheck.python = py
	})
	if torchCheck.err != nil {
		t.Skipf("skipping: %s cannot import torch and numpy (set FRONTIER_TEST_PYTHON): %v",
			torchCheck.python, torchCheck.err)
	}
	return torchCheck.python
}

// writeShard writes tokens in the speedrun shard format.
func writeShard(t *testing.T, path string, tokens []uint16) {
	t.Helper()
	var buf bytes.Buffer
	header := make([]int32, 256)
	header[0], header[1], header[2] = 20240520, 1, int32(len(tokens))
	if err := binary.Write(&buf, binary.LittleEndian, header); err != nil {
		t.Fatal(err)
	}
	if err := binary.Write(&buf, binary.LittleEndian, tokens); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// markovTokens returns n deterministic tokens below vocab from a chain in
// which each token has 4 likely successors: learnable in a few steps.
func markovTokens(n, vocab int, seed uint32) []uint16 {
	out := make([]uint16, n)
	x, prev := seed, uint32(0)
	for i := range out {
		x = x*1664525 + 1013904223
		prev = (prev*7 + 3 + (x>>16)%4) % uint32(vocab)
		out[i] = uint16(prev)
	}
	return out
}

const testVocab = 64

// testProgram is a small training program driven by FH_* environment
// variables, so that one program covers every harness path under test.
const testProgram = `
import os, sys, time
import numpy as np
import torch
import torch.nn.functional as F
import frontier_harness as fh

E = os.environ.get
cfg = fh.config()
if cfg.world_size > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo")
data = fh.read_shard(cfg.train_files[0])
V = cfg.vocab_size
PAD = int(E("FH_PAD", "0"))
torch.manual_seed(cfg.seed)
emb = torch.nn.Embedding(V, 16)
mix = torch.nn.Linear(32, 16)
head = torch.nn.Linear(16, V + PAD)
params = list(emb.parameters()) + list(mix.parameters()) + list(head.parameters())
FIT = E("FH_FIT", "")  # a bigram table: "zero", or "count": fitted from the training data before the clock
big = None
if FIT:
    big = torch.zeros(V, V + PAD, requires_grad=True)
    params.append(big)
if FIT == "count":
    d = data[:200000].astype("int64")
    c = np.bincount(d[:-1] * V + d[1:], minlength=V * V).reshape(V, V) + 0.1
    with torch.no_grad():
        big[:, :V] = torch.from_numpy(np.log(c / c.sum(1, keepdims=True))).float()
opt = torch.optim.SGD(params, lr=float(E("FH_LR", "0.5")))
MODE = E("FH_LOGITS", "model")
SLEEP = float(E("FH_SLEEP", "0"))
RECORD = E("FH_RECORD")

FROZEN = None
if MODE == "copy":  # answers from another copy of the model (an average of the weights, say)
    import copy
    FROZEN = copy.deepcopy((emb, mix, head))

def model(x, mods=None):
    emb_, mix_, head_ = mods or (emb, mix, head)
    h = emb_(x)
    prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)  # causal: token t-1
    if MODE == "leak":
        prev = prev + h.mean(dim=1, keepdim=True)  # sees the whole window
    out = head_(torch.tanh(mix_(torch.cat([h, prev], dim=-1))))
    return out if big is None else out + big[x]

SEEN = set()

def logits_fn(x):
    if SLEEP:
        time.sleep(SLEEP)
    if MODE == "ttt":  # test-time training on the validation windows
        with torch.enable_grad():
            F.cross_entropy(model(x[:, :-1]).reshape(-1, V + PAD), x[:, 1:].reshape(-1)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if MODE == "mutate":  # a weight changed without autograd
        head.bias.add_(1e-3)
    if MODE == "memo":  # a window seen before gets better logits
        out = model(x)
        for i, row in enumerate(x.tolist()):
            if tuple(row) in SEEN:
                out[i] = out[i] * 1.5
            SEEN.add(tuple(row))
        return out
    if MODE == "rows" and x.shape[0] == cfg.val_batch_seqs:  # row i sees row i-1
        out = model(x)
        return out + 0.5 * torch.roll(out, 1, 0)
    if MODE == "copy":
        return model(x, FROZEN)
    if MODE == "noise":
        out = model(x)
        return out + 0.01 * torch.randn_like(out)
    if RECORD:
        with open("%s.%d" % (RECORD, cfg.rank), "a") as f:
            for row in x.tolist():
                f.write(" ".join(map(str, row)) + "\n")
    if MODE == "shift":
        out = torch.zeros(x.shape[0], x.shape[1], V + PAD)
        out.scatter_(2, ((x + 1) % V).unsqueeze(-1), 5.0)
        return out
    if MODE == "short":
        return model(x)[..., : V - 1]
    if MODE == "flat":
        return model(x).reshape(-1, V + PAD)
    return model(x)

if E("FH_BAD_SHARD"):
    fh.read_shard(E("FH_BAD_SHARD"))
if E("FH_FD"):  # what the program finds at the validation shard's descriptor
    try:
        head = os.pread(int(E("FH_FD")), 4, 0)
        print("fd: shard" if int.from_bytes(head, "little") == 20240520 else "fd: other file")
    except OSError:
        print("fd: closed")
    print("config: " + " ".join(sorted(vars(cfg))))

B, T = 4, 16

def batch(step):
    i = (step * B * T + cfg.rank * 997) % (len(data) - B * T - 1)
    buf = torch.from_numpy(data[i:i + B * T + 1].astype("int64"))
    return buf[:-1].view(B, T), buf[1:].view(B, T)

WARM = E("FH_PRETRAIN", "")  # training before train_begin, in one of several ways
if WARM:
    saved = [p.detach().clone() for p in params]
    for w in range(5):
        x, y = batch(1000 + w)
        loss = F.cross_entropy(model(x).reshape(-1, V + PAD), y.reshape(-1))
        if WARM == "grad":  # autograd.grad and a manual update, no optimizer
            for p, g in zip(params, torch.autograd.grad(loss, params)):
                p.data.add_(g, alpha=-0.5)
            continue
        if WARM == "manual_grad":  # gradients set by hand, no backward
            for p in params:
                p.grad = torch.full_like(p, 0.01)
        else:
            loss.backward()
        if WARM != "no_step":
            opt.step()
        opt.zero_grad(set_to_none=True)
    if WARM == "restore":
        with torch.no_grad():
            for p, s in zip(params, saved):
                p.copy_(s)

fh.train_begin()
nan_at = int(E("FH_NAN_AT", "-1"))
raise_at = int(E("FH_RAISE_AT", "-1"))
hang_at = int(E("FH_HANG_AT", "-1"))
for step in fh.steps(int(E("FH_STEPS", "30"))):
    with fh.section("data"):
        x, y = batch(step)
    with fh.section("forward"):
        loss = F.cross_entropy(model(x).reshape(-1, V + PAD), y.reshape(-1))
    with fh.section("backward"):
        loss.backward()
    with fh.section("optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)
    if step == raise_at:
        raise RuntimeError("boom at step %d" % step)
    if step == hang_at:
        time.sleep(60)
    if 0 <= nan_at <= step:
        loss = loss * float("nan")
    try:
        fh.step(step, tokens=B * T, train_loss=loss)
    except fh.HarnessError:
        if not E("FH_SWALLOW"):
            raise
    if fh.want_validation(step):
        fh.validate(logits_fn)
if not E("FH_NO_FINISH"):
    fh.finish(logits_fn)
`

type run struct {
	dir      string
	cfg      Config
	env      []string // FH_* switches for testProgram
	prog     string
	torchrun bool       // start workers with torchrun instead of the boot launcher
	files    []*os.File // inherited as descriptors 3, 4, ...
}

// newRun lays out a run folder with a train shard, a validation shard and
// testProgram.
func newRun(t *testing.T, mode string) *run {
	t.Helper()
	dir := t.TempDir()
	writeShard(t, filepath.Join(dir, "train_000001.bin"), markovTokens(20000, testVocab, 1))
	// The scored slice (4097 tokens), the practice slice and text for the probe.
	writeShard(t, filepath.Join(dir, "val_000000.bin"), markovTokens(2*4097+2*16*64, testVocab, 2))
	return &run{
		dir:  dir,
		prog: testProgram,
		cfg: Config{
			Schema: ConfigSchema, Track: "test", Mode: mode,
			TrainFiles: []string{filepath.Join(dir, "train_000001.bin")},
			ValFile:    filepath.Join(dir, "val_000000.bin"),
			VocabSize:  testVocab, BOSID: 0,
			ValTokens: 4096, ValSeqLen: 64, ValBatchSeqs: 16,
			Seed: 1, Device: "cpu", Threads: 1,
			FastSteps: 3, FastValTokens: 1024,
			TelemetryPath: filepath.Join(dir, "telemetry.jsonl"),
			LogEvery:      10, ValEvery: 0, TopK: 15,
			CompileBudgetMs: 120000,
		},
	}
}

type result struct {
	tel    *Telemetry
	code   int
	stdout string
	stderr string
}

// start materializes the harness and starts the program.
func (r *run) start(t *testing.T, ctx context.Context, stdout, stderr *bytes.Buffer) *exec.Cmd {
	t.Helper()
	py := pythonWithTorch(t)
	if err := os.WriteFile(filepath.Join(r.dir, Program), []byte(r.prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Materialize(r.dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(filepath.Join(r.dir, ConfigFile), r.cfg); err != nil {
		t.Fatal(err)
	}
	argv, env := Command(py, r.dir, r.cfg)
	if r.torchrun {
		argv = []string{py, "-m", "torch.distributed.run", "--standalone",
			"--nproc_per_node=" + strconv.Itoa(r.cfg.WorldSize), filepath.Join(r.dir, Dir, BootFile), Program}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.dir
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir}, env...), r.env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = r.files
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func (r *run) exec(t *testing.T) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := r.start(t, ctx, &stdout, &stderr)
	err := cmd.Wait()
	return r.collect(t, err, &stdout, &stderr)
}

func (r *run) collect(t *testing.T, err error, stdout, stderr *bytes.Buffer) result {
	t.Helper()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run: %v", err)
	}
	f, err := os.Open(r.cfg.TelemetryPath)
	if err != nil {
		if !os.IsNotExist(err) {
			t.Fatal(err)
		}
		res.tel = &Telemetry{}
		return res
	}
	defer f.Close()
	res.tel, err = ReadTelemetry(f)
	if err != nil {
		t.Fatal(err)
	}
	if res.tel.Skipped+res.tel.TooLong > 0 {
		t.Errorf("telemetry has %d bad lines", res.tel.Skipped+res.tel.TooLong)
	}
	return res
}

func (res result) dump(t *testing.T) {
	t.Helper()
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
}

func (res result) wantError(t *testing.T, code int, errCode, msg string) *Error {
	t.Helper()
	if res.code != code {
		res.dump(t)
		t.Fatalf("exit code %d, want %d", res.code, code)
	}
	e := res.tel.Error
	if e == nil {
		res.dump(t)
		t.Fatalf("no error event")
	}
	if e.Code != errCode || !strings.Contains(e.Message, msg) {
		t.Fatalf("error event %+v; want code %q and a message containing %q", e, errCode, msg)
	}
	if res.tel.Final != nil {
		t.Errorf("a failed run wrote a final event: %+v", res.tel.Final)
	}
	return e
}

func TestFullRun(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.ValEvery = 15
	r.cfg.ProfileSteps = []int{5, 7}
	r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 4, Positions: 6}
	res := r.exec(t)
	if res.code != 0 {
		res.dump(t)
		t.Fatalf("exit code %d", res.code)
	}
	tel := res.tel
	if tel.RunStart == nil || tel.RunStart.Mode != ModeFull || tel.RunStart.Threads != 1 || tel.RunStart.Torch == "" {
		t.Errorf("run_start = %+v", tel.RunStart)
	}
	// Designated steps: every 10th and the last.
	var stepIdx []int
	for _, s := range tel.Steps {
		stepIdx = append(stepIdx, s.Step)
		if s.TrainLoss == nil || *s.TrainLoss <= 0 || s.TrainTimeMs <= 0 || s.TokensPerS <= 0 {
			t.Errorf("step event %+v", s)
		}
		if want := int64(s.Step+1) * 64; s.Tokens != want {
			t.Errorf("step %d: tokens %d, want %d", s.Step, s.Tokens, want)
		}
	}
	if got, want := stepIdx, []int{9, 19, 29}; !slices.Equal(got, want) {
		t.Errorf("designated steps %v, want %v", got, want)
	}
	// One intermediate validation after step 14 (15 steps done), one final.
	if len(tel.Vals) != 2 || tel.Vals[0].Step != 15 || tel.Vals[0].Final || !tel.Vals[1].Final || tel.Vals[1].Step != 30 ||
		tel.Vals[0].Slice != "practice" || tel.Vals[1].Slice != "scored" {
		t.Fatalf("vals = %+v", tel.Vals)
	}
	for _, v := range tel.Vals {
		if v.Tokens != 4096 || v.SeqLen != 64 {
			t.Errorf("val %+v: want 4096 tokens at seq_len 64", v)
		}
	}
	// The model learns: validation beats the uniform loss log(64).
	if fv := tel.FinalVal(); fv.ValLoss >= math.Log(testVocab) || fv.ValLoss < 1 {
		t.Errorf("final val loss %.4f; want below log(64) = %.4f", fv.ValLoss, math.Log(testVocab))
	}
	names := map[string]Section{}
	for _, s := range tel.Sections {
		names[s.Name] = s
	}
	for _, n := range []string{"data", "forward", "backward", "optimizer"} {
		s, ok := names[n]
		if !ok || s.Calls != 30 || s.TotalMs <= 0 || s.Pct <= 0 || s.Pct > 100 {
			t.Errorf("section %q = %+v (present %v)", n, s, ok)
		}
	}
	if tel.TopOps == nil || tel.TopOps.Kind != "cpu" || len(tel.TopOps.Ops) == 0 || len(tel.TopOps.Ops) > 15 ||
		!slices.Equal(tel.TopOps.Steps, []int{5, 7}) {
		t.Fatalf("top_ops = %+v", tel.TopOps)
	}
	for _, op := range tel.TopOps.Ops {
		if op.Name == "" || op.TotalMs <= 0 || op.Calls <= 0 {
			t.Errorf("op %+v", op)
		}
	}
	if tel.Memory == nil || tel.Memory.PeakRSSMB < 50 {
		t.Errorf("memory = %+v", tel.Memory)
	}
	// 4 x 6 perturbations wanted: two copies of a batch of 16 windows, one
	// change in 15 rows, one row replaced; calls: once unchanged, two copies,
	// and the first copy's replaced row alone (rows are independent).
	if p := tel.Probe; p == nil || !p.OK || p.Leak != nil || p.Sensitive <= 0.5 || p.Perturbations != 30 ||
		p.Sequences != 16 || p.RowCheck != 16 || p.Calls != 4 || p.NoiseFloor != 0 {
		t.Errorf("probe = %+v", tel.Probe)
	}
	// The checks: the 5 weight tensors are tracked from the first backward
	// pass; the intermediate validation rechecks one batch, the final one
	// makes the probe's 4 calls.
	if c := tel.Checks; c == nil || c.TrackedTensors != 5 || c.Validations != 2 || c.ExtraCalls != 5 ||
		c.PretrainBackward != 0 || c.Noise == nil || *c.Noise != 0 || c.Drift == nil || *c.Drift != 0 {
		t.Errorf("checks = %+v", tel.Checks)
	}
	f := tel.Final
	if f == nil {
		t.Fatal("no final event")
	}
	if f.Steps != 30 || f.Tokens != 30*64 || f.ValTokens != 4096 || f.ValLoss != tel.FinalVal().ValLoss ||
		f.TrainTimeMs <= 0 || math.Abs(f.StepAvgMs-f.TrainTimeMs/30) > 1e-6 || f.PreTrainMs <= 0 {
		t.Errorf("final = %+v", f)
	}
	if len(tel.Lines) == 0 || tel.Error != nil || len(tel.Warnings) != 0 {
		t.Errorf("lines %d, error %+v, warnings %+v", len(tel.Lines), tel.Error, tel.Warnings)
	}
	if !strings.Contains(res.stdout, "step:30/30 val_loss:") {
		t.Errorf("stdout lacks the speedrun-style val line:\n%s", res.stdout)
	}
}

func TestFastRunStopsEarlyAndFinishes(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.cfg.ProfileSteps = []int{0, 1}
	r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 2}
	r.env = []string{"FH_STEPS=1000"}
	res := r.exec(t)
	if res.code != 0 || res.tel.Final == nil {
		res.dump(t)
		t.Fatalf("exit code %d, final %+v", res.code, res.tel.Final)
	}
	if res.tel.Final.Steps != 3 || res.tel.Final.ValTokens != 1024 {
		t.Errorf("final = %+v; want 3 steps and 1024 val tokens", res.tel.Final)
	}
	if len(res.tel.Steps) != 1 || res.tel.Steps[0].Step != 2 {
		t.Errorf("steps = %+v; want only the last step (2)", res.tel.Steps)
	}
	if res.tel.TopOps != nil || res.tel.Probe != nil {
		t.Errorf("fast check profiled or probed: %+v %+v", res.tel.TopOps, res.tel.Probe)
	}
}

// The harness's validation: exact windows, shifted targets, padded classes
// in the softmax, and the count of tokens.
func TestValidationIsExact(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.ValBatchSeqs = 5 // 64 windows: batches of 5 and a last one of 4
	r.shiftValidation(t)
	res := r.exec(t)
	if res.code != 0 {
		res.dump(t)
		t.Fatalf("exit code %d", res.code)
	}
	r.checkShiftValidation(t, res, 1)
}

const shiftPad = 8

// shiftValidation makes val[i] = i % V and has logits_fn put 5.0 on class
// (x+1) % V and 0 on the other V+pad-1 classes, recording its inputs.
// The targets are exactly x+1, so the loss is known in closed form.
func (r *run) shiftValidation(t *testing.T) {
	t.Helper()
	val := make([]uint16, 4097+300) // longer than needed: only 4097 may be read
	for i := range val {
		val[i] = uint16(i % testVocab)
	}
	writeShard(t, r.cfg.ValFile, val)
	r.env = append(r.env, "FH_LOGITS=shift", "FH_PAD="+strconv.Itoa(shiftPad),
		"FH_RECORD="+filepath.Join(r.dir, "inputs"), "FH_STEPS=2")
}

// checkShiftValidation checks the loss and that the windows the ranks saw
// are exactly val[i*64 : i*64+64], each once.
func (r *run) checkShiftValidation(t *testing.T, res result, ranks int) {
	t.Helper()
	want := math.Log(math.Exp(5)+float64(testVocab+shiftPad-1)) - 5
	if got := res.tel.Final.ValLoss; math.Abs(got-want) > 1e-6 {
		t.Errorf("val loss %.8f, want %.8f", got, want)
	}
	if fv := res.tel.FinalVal(); fv == nil || fv.Tokens != 4096 || res.tel.Final.ValTokens != 4096 {
		t.Errorf("final val %+v; want 4096 tokens", fv)
	}
	var rows []string
	for rank := range ranks {
		b, err := os.ReadFile(filepath.Join(r.dir, "inputs."+strconv.Itoa(rank)))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	// Every window once (val[i] = i % 64 makes them all 0 1 ... 63), plus,
	// per process, one batch called again by the state check.
	for i, row := range rows {
		if row != windowRow(i) {
			t.Fatalf("call row %d = %.40s...; want val[%d:%d]", i, row, i*64, i*64+64)
		}
	}
	if extra := len(rows) - 64; extra <= 0 || extra > ranks*r.cfg.ValBatchSeqs {
		t.Errorf("logits_fn saw %d sequences; want 64 and a call on one batch per process", len(rows))
	}
}

// windowRow is validation window i of shiftValidation as recorded.
func windowRow(i int) string {
	f := make([]string, 64)
	for j := range f {
		f[j] = strconv.Itoa((i*64 + j) % testVocab)
	}
	return strings.Join(f, " ")
}

// A logits_fn that sleeps must not add train time: the clock is paused.
// The same run checks that max_steps caps fh.steps(n).
func TestClockPausesDuringValidation(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.ValEvery = 5
	r.cfg.ValBatchSeqs = 64 // one logits_fn call per validation
	r.cfg.MaxSteps = 20     // and the cap on fh.steps(n)
	// Sleeps long enough that 20 tiny steps stay far under half of them
	// on a loaded machine.
	r.env = []string{"FH_SLEEP=0.5", "FH_STEPS=1000"}
	res := r.exec(t)
	if res.code != 0 || res.tel.Final == nil || res.tel.Final.Steps != 20 {
		res.dump(t)
		t.Fatalf("exit code %d, final %+v; want 20 steps (max_steps)", res.code, res.tel.Final)
	}
	var valMs float64
	for _, v := range res.tel.Vals {
		valMs += v.Ms
	}
	if len(res.tel.Vals) != 4 || valMs < 4*500 {
		t.Fatalf("vals %+v: want 4 validations of at least 500 ms", res.tel.Vals)
	}
	if tt := res.tel.Final.TrainTimeMs; tt >= valMs/2 {
		t.Errorf("train time %.0f ms includes validation time (%.0f ms of sleeps)", tt, valMs)
	}
}

func TestProgramRaises(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.env = []string{"FH_RAISE_AT=4"}
	res := r.exec(t)
	e := res.wantError(t, 1, ErrException, "boom at step 4")
	if e.Kind != "RuntimeError" || e.Step != 4 {
		t.Errorf("error = %+v", e)
	}
	if !strings.HasPrefix(e.Traceback, "Traceback (most recent call last):") ||
		!strings.Contains(e.Traceback, "train.py") || strings.Contains(e.Traceback, BootFile) ||
		!strings.Contains(e.Traceback, "RuntimeError: boom at step 4") {
		t.Errorf("traceback:\n%s", e.Traceback)
	}
	if !strings.Contains(res.stderr, "RuntimeError: boom at step 4") {
		t.Errorf("stderr lacks the traceback:\n%s", res.stderr)
	}
}

func TestSyntaxError(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.prog = "import frontier_harness as fh\nx = (1,\n"
	res := r.exec(t)
	e := res.wantError(t, 1, ErrException, "")
	if e.Kind != "SyntaxError" || !strings.Contains(e.Traceback, "train.py") {
		t.Errorf("error = %+v", e)
	}
}

func TestNoFinish(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.env = []string{"FH_NO_FINISH=1"}
	res := r.exec(t)
	res.wantError(t, 3, ErrNoFinish, "the program ended without calling fh.finish(logits_fn)")
	if !strings.Contains(res.stderr, "without calling fh.finish") {
		t.Errorf("stderr: %s", res.stderr)
	}
}

func TestNaNTrainLoss(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.env = []string{"FH_NAN_AT=12"}
	res := r.exec(t)
	res.wantError(t, 1, ErrNaNLoss, "train loss is nan at step 19")
}

// A program that catches the harness's error and carries on still fails:
// the failure sticks, finish refuses, and the original error is reported.
func TestSwallowedHarnessError(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.env = []string{"FH_NAN_AT=12", "FH_SWALLOW=1"}
	res := r.exec(t)
	e := res.wantError(t, 1, ErrNaNLoss, "train loss is nan at step 19")
	if !strings.Contains(e.Traceback, "HarnessError") {
		t.Errorf("traceback:\n%s", e.Traceback)
	}
}

// telemetry_level "off" keeps the result and drops the measurements.
func TestTelemetryOff(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.TelemetryLevel = TelemetryOff
	r.cfg.ProfileSteps = []int{2, 4}
	res := r.exec(t)
	if res.code != 0 || res.tel.Final == nil {
		res.dump(t)
		t.Fatalf("exit %d", res.code)
	}
	tel := res.tel
	if len(tel.Steps) != 1 || tel.Steps[0].Step != 29 || tel.Sections != nil || tel.TopOps != nil {
		t.Errorf("steps %+v, sections %+v, top_ops %+v; want only the last step", tel.Steps, tel.Sections, tel.TopOps)
	}
	if tel.RunStart.TelemetryLevel != TelemetryOff || tel.Final.Steps != 30 || tel.FinalVal() == nil || tel.Memory == nil {
		t.Errorf("run_start %+v final %+v", tel.RunStart, tel.Final)
	}
	if len(tel.Warnings) != 0 {
		t.Errorf("warnings %+v", tel.Warnings)
	}
}

func TestWrongLogitsShape(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"short", "flat"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFast)
			r.env = []string{"FH_LOGITS=" + mode}
			res := r.exec(t)
			res.wantError(t, 1, ErrLogitsShape, "want [16, 64, V] with V >= vocab_size 64")
		})
	}
}

func TestCausalityProbeFindsLeak(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, logits string
		docIsolated  bool
		kind, msg    string
	}{
		// Every position sees the mean of the whole window.
		{"future", "leak", false, "future", "the model sees future tokens"},
		// Causal, but position t sees token t-1 across a BOS (token 0 here).
		{"document", "model", true, "document", "across a document boundary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFull)
			r.cfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 4, DocIsolated: tc.docIsolated}
			r.env = []string{"FH_LOGITS=" + tc.logits, "FH_STEPS=3"}
			res := r.exec(t)
			if res.code != 0 || res.tel.Probe == nil {
				res.dump(t)
				t.Fatalf("exit %d, probe %+v", res.code, res.tel.Probe)
			}
			p := res.tel.Probe
			if p.OK || p.Leak == nil || p.Leak.Kind != tc.kind || !strings.Contains(p.Message, tc.msg) {
				t.Fatalf("probe = %+v leak %+v", p, p.Leak)
			}
			if tc.kind == "future" && p.Leak.Position >= p.Leak.Perturbed {
				t.Errorf("future leak at %d from a change at %d", p.Leak.Position, p.Leak.Perturbed)
			}
			if tc.kind == "document" && p.Leak.Position <= p.Leak.Perturbed {
				t.Errorf("document leak at %d from a change at %d", p.Leak.Position, p.Leak.Perturbed)
			}
		})
	}
}

func TestBadShards(t *testing.T) {
	t.Parallel()
	t.Run("train magic", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFast)
		bad := filepath.Join(r.dir, "bad.bin")
		writeShard(t, bad, markovTokens(100, testVocab, 3))
		b, _ := os.ReadFile(bad)
		b[0] ^= 0xff
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r.env = []string{"FH_BAD_SHARD=" + bad}
		r.exec(t).wantError(t, 1, ErrShard, "bad magic number")
	})
	t.Run("val truncated", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFast)
		b, _ := os.ReadFile(r.cfg.ValFile)
		if err := os.WriteFile(r.cfg.ValFile, b[:len(b)-10], 0o644); err != nil {
			t.Fatal(err)
		}
		// Read at import, before the program: a setup failure (exit 2).
		r.exec(t).wantError(t, 2, ErrShard, "the file is truncated or corrupt")
	})
	t.Run("val short", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		writeShard(t, r.cfg.ValFile, markovTokens(4096, testVocab, 2)) // one target short
		r.exec(t).wantError(t, 2, ErrShard, "4097 are needed")
	})
}

func TestConfigRefused(t *testing.T) {
	t.Parallel()
	t.Run("unset", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFast)
		r.env = []string{"FRONTIER_CONFIG="}
		res := r.exec(t)
		if res.code != 2 || !strings.Contains(res.stderr, "FRONTIER_CONFIG is not set") {
			res.dump(t)
			t.Fatalf("exit %d", res.code)
		}
	})
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFast)
		r.env = []string{"FRONTIER_CONFIG=" + filepath.Join(r.dir, "nope.json")}
		res := r.exec(t)
		if res.code != 2 || !strings.Contains(res.stderr, "cannot read the run config") {
			res.dump(t)
			t.Fatalf("exit %d", res.code)
		}
	})
	t.Run("schema", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFast)
		other := filepath.Join(r.dir, "other.json")
		b, _ := json.Marshal(map[string]any{"schema": 99, "telemetry_path": r.cfg.TelemetryPath})
		if err := os.WriteFile(other, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r.env = []string{"FRONTIER_CONFIG=" + other}
		res := r.exec(t)
		if res.code != 2 || !strings.Contains(res.stderr, "has schema 99 but this harness reads schema 1") {
			res.dump(t)
			t.Fatalf("exit %d", res.code)
		}
	})
}

func TestSIGTERMIsRecorded(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.LogEvery = 1
	r.env = []string{"FH_HANG_AT=3"}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := r.start(t, ctx, &stdout, &stderr)
	// Wait until step 2 is in the telemetry, then terminate.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(r.cfg.TelemetryPath)
		if bytes.Contains(b, []byte(`"step":2,`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("step 2 never reached; stderr: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res := r.collect(t, cmd.Wait(), &stdout, &stderr)
	e := res.wantError(t, 128+15, ErrTerminated, "terminated by SIGTERM at step 3")
	if e.Kind != "SIGTERM" {
		t.Errorf("error = %+v", e)
	}
}

// With several processes each rank validates its share of the windows and
// the harness reduces: the loss, the token count and the windows must be
// exactly those of one process. Both the boot script's launcher and, where
// it works, torchrun are checked.
func TestDistributedValidation(t *testing.T) {
	t.Parallel()
	py := pythonWithTorch(t)
	run := func(t *testing.T, torchrun bool) {
		r := newRun(t, ModeFull)
		r.cfg.WorldSize = 2
		r.torchrun = torchrun
		r.shiftValidation(t)
		res := r.exec(t)
		if res.code != 0 || res.tel.Final == nil {
			res.dump(t)
			t.Fatalf("exit %d", res.code)
		}
		r.checkShiftValidation(t, res, 2)
		n := 0
		for _, l := range res.tel.Lines {
			if bytes.Contains(l, []byte(`"event":"run_start"`)) {
				n++
			}
		}
		if n != 1 || res.tel.RunStart.WorldSize != 2 {
			t.Errorf("want one run_start from rank 0 with world_size 2, got %d: %+v", n, res.tel.RunStart)
		}
		if res.tel.Final.Tokens != 2*2*64 {
			t.Errorf("tokens %d; want both ranks counted (%d)", res.tel.Final.Tokens, 2*2*64)
		}
	}
	t.Run("boot launcher", func(t *testing.T) { run(t, false) })
	t.Run("torchrun", func(t *testing.T) {
		// Debian's torch 1.13 under Python 3.11 cannot parse torchrun's own
		// default flags (Std.from_str("0") is None).
		probe := "from torch.distributed.elastic.multiprocessing.api import Std; assert Std.from_str('0') is not None"
		if out, err := exec.Command(py, "-c", probe).CombinedOutput(); err != nil {
			t.Skipf("skipping: torchrun is broken in this torch/Python: %s", lastLine(out))
		}
		run(t, true)
	})
}

// A worker that fails takes the others down, and its error comes first.
func TestDistributedWorkerFailure(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.WorldSize = 2
	r.prog = strings.Replace(testProgram, "if step == raise_at:", "if step == raise_at and cfg.rank == 1:", 1)
	r.env = []string{"FH_RAISE_AT=2", "FH_HANG_AT=3"}
	res := r.exec(t)
	e := res.wantError(t, 1, ErrException, "boom at step 2")
	if e.Rank != 1 {
		t.Errorf("first error from rank %d, want 1: %+v", e.Rank, res.tel.Errors)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
