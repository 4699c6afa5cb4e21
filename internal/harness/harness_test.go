package harness

import (
	"bytes"
	"context"
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

	"github.com/frontier-bench/frontier/internal/data"
	"github.com/frontier-bench/frontier/internal/testdeps"
)

// These tests run the embedded judge and harness client under a real Python
// with PyTorch, the program unconfined (the sandbox has its own tests).
// FRONTIER_TEST_PYTHON picks the interpreter; the default is
// /usr/bin/python3 (Debian's torch), then python3 on PATH.

var torchCheck struct {
	once   sync.Once
	python string
	err    error
}

func pythonWithTorch(t testing.TB) string {
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
		testdeps.Missing(t, "torch", "%s cannot import torch and numpy (set FRONTIER_TEST_PYTHON): %v",
			torchCheck.python, torchCheck.err)
	}
	return torchCheck.python
}

// writeShard writes tokens in the speedrun shard format, with the data
// package's writer.
func writeShard(t testing.TB, path string, tokens []uint16) {
	t.Helper()
	if err := data.WriteShardFile(path, tokens); err != nil {
		t.Fatal(err)
	}
}

// markovTokens returns n deterministic tokens below vocab from a chain in
// which each token has 4 likely successors: learnable in a few steps. Its
// formula is public (this file): a program can code its exact predictor
// without reading any data, which FH_FIT=formula does.
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
// variables, so that one program covers every path under test.
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
V = cfg.vocab_size
PAD = int(E("FH_PAD", "0"))
torch.manual_seed(cfg.seed)
emb = torch.nn.Embedding(V, 16)
mix = torch.nn.Linear(32, 16)
head = torch.nn.Linear(16, V + PAD)
params = list(emb.parameters()) + list(mix.parameters()) + list(head.parameters())
FIT = E("FH_FIT", "")
big = None
if FIT == "formula":
    # The chain's exact transitions, from its public formula: fitted
    # before the clock without reading a byte of data.
    big = torch.full((V, V + PAD), -9.0)
    for a in range(V):
        for k in range(4):
            big[a, (a * 7 + 3 + k) % V] = 0.0
if FIT == "count":
    big = torch.zeros(V, V + PAD)  # counts kept next to the network, filled inside the clock
opt = torch.optim.SGD(params, lr=float(E("FH_LR", "0.5")))
MODE = E("FH_LOGITS", "model")
SLEEP = float(E("FH_SLEEP", "0"))
FIRST_SLEEP = float(E("FH_FIRST_SLEEP", "0"))
RECORD = E("FH_RECORD")
calls = [0]

def model(x):
    h = emb(x)
    prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)  # causal: token t-1
    if MODE == "leak":
        prev = prev + h.mean(dim=1, keepdim=True)  # sees the whole window
    out = head(torch.tanh(mix(torch.cat([h, prev], dim=-1))))
    return out if big is None else out + big[x]

SEEN = set()

def logits_fn(x):
    calls[0] += 1
    if SLEEP:
        time.sleep(SLEEP)
    if FIRST_SLEEP and calls[0] == int(E("FH_SLEEP_CALL", "1")):
        time.sleep(FIRST_SLEEP)
    if MODE == "ttt":  # test-time training on the validation windows
        with torch.enable_grad():
            F.cross_entropy(model(x[:, :-1]).reshape(-1, V + PAD), x[:, 1:].reshape(-1)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if MODE == "mutate":  # a weight changed without autograd
        with torch.no_grad():
            head.bias[0] += 0.1
    if MODE == "memo":  # a window seen before gets other logits
        out = model(x)
        for i, row in enumerate(x.tolist()):
            if tuple(row) in SEEN:
                out[i] = out[i] * 1.5
            SEEN.add(tuple(row))
        return out
    if MODE == "rows" and x.shape[0] == cfg.val_batch_seqs:  # row i sees row i-1
        out = model(x)
        return out + 0.5 * torch.roll(out, 1, 0)
    if MODE == "noise":
        out = model(x)
        return out + 0.01 * torch.randn_like(out)
    if MODE == "bigclass":  # one extra class with a huge logit: it must not hide a leak
        out = model(x)
        out = out + out.mean(dim=1, keepdim=True) * 0.1  # a small look ahead
        return torch.cat([out, torch.full_like(out[..., :1], 1e6)], dim=-1)
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

if E("FH_EARLY_DATA"):  # reads the training data before the clock
    fh.read_shard(cfg.train_files[0])
if E("FH_SETUP_SLEEP"):
    time.sleep(float(E("FH_SETUP_SLEEP")))
if E("FH_GARBAGE"):  # writes to the judge's socket behind the client's back
    fh._C.w.sock.send(b"\xff not json")

B, T = 4, 16
fh.train_begin(None if E("FH_NO_SCORE") else logits_fn)
data = fh.read_shard(cfg.train_files[0])

def batch(step):
    i = (step * B * T + cfg.rank * 997) % (len(data) - B * T - 1)
    buf = torch.from_numpy(data[i:i + B * T + 1].astype("int64"))
    return buf[:-1].view(B, T), buf[1:].view(B, T)

if FIT == "count":
    d = data[:20000].astype("int64")
    c = np.bincount(d[:-1] * V + d[1:], minlength=V * V).reshape(V, V) + 0.1
    big[:, :V] = torch.from_numpy(np.log(c / c.sum(1, keepdims=True))).float()

nan_at = int(E("FH_NAN_AT", "-1"))
raise_at = int(E("FH_RAISE_AT", "-1"))
hang_at = int(E("FH_HANG_AT", "-1"))
own_val = int(E("FH_OWN_VAL", "-1"))
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
        open("hanging", "w").close()
        time.sleep(60)
    if 0 <= nan_at <= step:
        loss = loss * float("nan")
    try:
        fh.step(step, tokens=B * T, train_loss=loss)
    except fh.HarnessError:
        if not E("FH_SWALLOW"):
            raise
    if fh.want_validation(step) or step == own_val:
        fh.validate(logits_fn)
if not E("FH_NO_FINISH"):
    fh.finish(logits_fn)
`

type run struct {
	dir  string
	cfg  Config
	jcfg JudgeConfig
	env  []string // FH_* switches for testProgram
	prog string
	// noScorer leaves the scorer out after the handoff, as a frontier
	// that failed to start it would.
	noScorer bool
	// raw, when set, is a script in the run folder run instead of the
	// boot script and the program: a client that speaks the protocol
	// itself.
	raw string
}

// newRun lays out a run folder and a judge folder with a train shard, a
// validation shard and testProgram.
func newRun(t testing.TB, mode string) *run {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(data, "train_000001.bin")
	val := filepath.Join(data, "val_000000.bin")
	writeShard(t, train, markovTokens(20000, testVocab, 1))
	// The scored slice (4097 tokens), the practice slice and text for the probe.
	writeShard(t, val, markovTokens(2*4097+2*16*64, testVocab, 2))
	runDir := filepath.Join(dir, "run")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &run{
		dir:  runDir,
		prog: testProgram,
		cfg: Config{
			Schema: ConfigSchema, Track: "test", Mode: mode,
			TrainFiles: []string{"train_000001.bin"}, DataDir: filepath.Join(runDir, DataDir),
			VocabSize: testVocab, BOSID: 0, ValSeqLen: 64, ValBatchSeqs: 16,
			Seed: 1, Device: "cpu", Threads: 1, FastSteps: 3, LogEvery: 10, TopK: 15, JudgeFD: 3,
		},
		jcfg: JudgeConfig{
			Mode: mode, VocabSize: testVocab, BOSID: 0, Device: "cpu",
			ValFile: val, ValTokens: 4096, FastValTokens: 1024, ValSeqLen: 64, ValBatchSeqs: 16,
			TrainFiles: []string{train}, WorldSize: 1, FastSteps: 3, LogEvery: 10,
			CompileBudgetMs: 120000, Scorer: true,
			Probe:  ProbeConfig{Enabled: true, Sequences: 4, Positions: 4},
			Verify: VerifyConfig{MinInitialLoss: 3.5, MaxValidationTokenCost: 6},
		},
	}
}

type result struct {
	tel    *Telemetry
	code   int
	stdout string
	stderr string
	judge  error
	// The scorer's output and how it ended (nil: exit 0, or it did not run).
	scorerOut string
	scorerErr error
}

func (r *run) exec(t testing.TB) result {
	t.Helper()
	return r.execFor(t, 120*time.Second, nil)
}

// execFor starts the judge and the program, and waits at most limit for
// the program; during, when set, runs once the program has started. When
// the judge hands off after the final validation, the program is stopped
// (after a grace) and the scorer runs as frontier runs it.
func (r *run) execFor(t testing.TB, limit time.Duration, during func(*exec.Cmd)) result {
	t.Helper()
	py := pythonWithTorch(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	r.cfg.WorldSize = r.jcfg.WorldSize
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir}
	handedOff := make(chan struct{})
	var once sync.Once
	onLine := func(line []byte) {
		if bytes.Contains(line, []byte(`"event":"handoff"`)) {
			once.Do(func() { close(handedOff) })
		}
	}
	judge, err := StartJudge(context.Background(), py, filepath.Join(filepath.Dir(r.dir), "judge"), r.jcfg, env, onLine)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := r.command(t, ctx, py, r.dir, r.cfg, env, judge.Clients(), &stdout, &stderr)
	if err := cmd.Start(); err != nil {
		judge.Kill()
		t.Fatal(err)
	}
	if during != nil {
		during(cmd)
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-handedOff:
			select {
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			case <-stopped:
			}
		case <-stopped:
		}
	}()
	werr := cmd.Wait()
	close(stopped)
	judge.CloseClients()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	select {
	case <-handedOff:
		if r.noScorer {
			break
		}
		cfg := r.cfg
		cfg.Role = RoleScorer
		dir := r.dir + "-scorer"
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = filepath.Join(dir, DataDir)
		var sout, serr bytes.Buffer
		scmd := r.command(t, ctx, py, dir, cfg, env, judge.ScorerClients(), &sout, &serr)
		if err := scmd.Run(); err != nil {
			res.scorerErr = err
		}
		res.scorerOut = sout.String() + serr.String()
	default:
	}
	tel, _, jerr := judge.Finish(JudgeFinishTimeout)
	if tel == nil {
		t.Fatalf("judge: %v", jerr)
	}
	res.tel, res.judge = tel, jerr
	if jerr != nil {
		t.Errorf("judge failed: %v\n%s", jerr, judge.Stderr())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.code = 128 + int(ws.Signal())
		}
	case werr != nil:
		t.Fatalf("run: %v", werr)
	}
	if tel.Skipped+tel.TooLong > 0 {
		t.Errorf("telemetry has %d bad lines", tel.Skipped+tel.TooLong)
	}
	return res
}

// command writes the program and the harness into dir and returns the
// process that runs it with sockets as descriptors 3, 4, ...
func (r *run) command(t testing.TB, ctx context.Context, py, dir string, cfg Config, env []string, sockets []*os.File, stdout, stderr *bytes.Buffer) *exec.Cmd {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, Program), []byte(r.prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Materialize(dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(filepath.Join(dir, ConfigFile), cfg); err != nil {
		t.Fatal(err)
	}
	argv, henv := Command(py, dir, cfg)
	if r.raw != "" {
		argv = []string{py, "-u", filepath.Join(dir, r.raw)}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(slices.Clone(env), henv...), r.env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = sockets
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

func (res result) dump(t *testing.T) {
	t.Helper()
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s\nscorer (%v):\n%s", res.code, res.stdout, res.stderr, res.scorerErr, res.scorerOut)
	for _, l := range res.tel.Lines {
		t.Logf("telemetry: %.300s", l)
	}
}

// judgeError is the first error the judge found itself, or nil.
func (res result) judgeError() *Error {
	for i := range res.tel.Errors {
		if res.tel.Errors[i].Judge {
			return &res.tel.Errors[i]
		}
	}
	return nil
}

// wantFault checks that the judge stopped the run with code and a message
// holding msg.
func (res result) wantFault(t *testing.T, code, msg string) *Error {
	t.Helper()
	e := res.judgeError()
	if e == nil {
		res.dump(t)
		t.Fatalf("the judge found nothing; want %s", code)
	}
	if e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("judge error %+v; want code %q and a message containing %q", e, code, msg)
	}
	if res.tel.Final != nil {
		t.Errorf("a failed run has a final event: %+v", res.tel.Final)
	}
	return e
}

// wantProgramError checks the program's own account of how it failed.
func (res result) wantProgramError(t *testing.T, exit int, code, msg string) *Error {
	t.Helper()
	if res.code != exit {
		res.dump(t)
		t.Fatalf("exit code %d, want %d", res.code, exit)
	}
	e := res.tel.Error
	if e == nil {
		res.dump(t)
		t.Fatal("no error event")
	}
	if e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("error event %+v; want code %q and a message containing %q", e, code, msg)
	}
	if res.tel.Final != nil {
		t.Errorf("a failed run has a final event: %+v", res.tel.Final)
	}
	return e
}

func (res result) wantOK(t *testing.T) *Telemetry {
	t.Helper()
	if res.code != 0 || res.tel.Final == nil || res.tel.Error != nil {
		res.dump(t)
		t.Fatalf("exit %d, final %v, error %+v", res.code, res.tel.Final, res.tel.Error)
	}
	return res.tel
}

func TestFullRun(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.cfg.ValEvery, r.jcfg.ValEvery = 15, 15
	r.cfg.ProfileSteps = []int{5, 7}
	r.jcfg.Probe = ProbeConfig{Enabled: true, Sequences: 4, Positions: 6}
	tel := r.exec(t).wantOK(t)
	if tel.RunStart == nil || tel.RunStart.Threads != 1 || tel.RunStart.Torch == "" {
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
	// One designated validation after 15 steps (untimed, practice text), one final.
	if len(tel.Vals) != 2 || tel.Vals[0].Step != 15 || tel.Vals[0].Final || tel.Vals[0].Timed || tel.Vals[0].Slice != "practice" ||
		!tel.Vals[1].Final || tel.Vals[1].Step != 30 || tel.Vals[1].Slice != "scored" || tel.Vals[1].Tokens != 4096 {
		t.Errorf("vals %+v", tel.Vals)
	}
	f := tel.Final
	if f.Steps != 30 || f.Tokens != 30*64 || f.ValTokens != 4096 || !f.Probe || f.ValLoss != tel.Vals[1].ValLoss ||
		f.TrainTimeMs <= 0 || f.PreTrainMs <= 0 || math.Abs(f.StepAvgMs-f.TrainTimeMs/30) > 1e-6 {
		t.Errorf("final %+v", f)
	}
	// Every scored row answered again by the scorer: 64 windows, of which
	// the two whole batches and about one in eight others unchanged.
	if p := tel.Probe; p == nil || !p.OK || !p.Scorer || p.RowCheck != 64 || p.Perturbations < 10 || p.Sensitive < 0.5 || p.Calls < 5 {
		t.Errorf("probe %+v", tel.Probe)
	}
	c := tel.Checks
	if c == nil || c.Validations != 2 || c.DesignatedValidations != 1 || c.ExcludedMs <= 0 || c.InitialLoss == nil ||
		*c.InitialLoss < 3.5 || c.ExtraCalls < 2 || c.ValidationBudgetMs == nil || c.SetupMs == nil ||
		c.StateBytes == nil || *c.StateBytes <= 0 || c.ScorerCalls < 5 || c.ScorerSetupMs == nil {
		t.Errorf("checks %+v", c)
	}
	if tel.TopOps == nil || tel.TopOps.Kind != "cpu" || len(tel.TopOps.Ops) == 0 || tel.Memory == nil || tel.Memory.PeakRSSMB <= 0 {
		t.Errorf("top ops %+v, memory %+v", tel.TopOps, tel.Memory)
	}
	names := map[string]bool{}
	for _, s := range tel.Sections {
		names[s.Name] = true
	}
	for _, n := range []string{"data", "forward", "backward", "optimizer", "(untracked)"} {
		if !names[n] {
			t.Errorf("sections %+v lack %s", tel.Sections, n)
		}
	}
}

func TestFastRunStopsEarly(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.env = []string{"FH_STEPS=1000"}
	tel := r.exec(t).wantOK(t)
	// The fast check's single batch of 16 windows comes whole to the
	// scorer, then each row's twin: 32 rows answered again.
	if tel.Final.Steps != 3 || tel.Final.ValTokens != 1024 || len(tel.Vals) != 1 || tel.Vals[0].Slice != "practice" ||
		tel.Probe == nil || !tel.Probe.OK || tel.Probe.RowCheck != 32 {
		t.Errorf("final %+v vals %+v probe %+v", tel.Final, tel.Vals, tel.Probe)
	}
}

// The judge's loss is exact: a logits_fn whose logits are known gives the
// loss computed here, over exactly the scored windows, sent in order; the
// program's padded classes do not count.
func TestValidationIsExact(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.env = []string{"FH_LOGITS=shift", "FH_PAD=5", "FH_STEPS=2", "FH_NO_SCORE=1", "FH_RECORD=" + filepath.Join(r.dir, "inputs")}
	tel := r.exec(t).wantOK(t)
	// logit 5 on (x+1) % V, 0 elsewhere over V classes (the 5 padded ones
	// are ignored): the loss of a target that is (x+1) % V is
	// log(e^5 + V - 1) - 5, of any other log(e^5 + V - 1).
	val := markovTokens(2*4097+2*16*64, testVocab, 2)
	lse := math.Log(math.Exp(5) + testVocab - 1)
	var sum float64
	for i := range 4096 {
		x, y := val[i], val[i+1]
		sum += lse
		if int(y) == (int(x)+1)%testVocab {
			sum -= 5
		}
	}
	want := sum / 4096
	if got := tel.Final.ValLoss; math.Abs(got-want) > 1e-5 {
		t.Errorf("val loss %.7f, want %.7f", got, want)
	}
	// The scored windows came in order, each once (the checks' calls are
	// copies, mixed in after the batch they copy).
	b, err := os.ReadFile(filepath.Join(r.dir, "inputs.0"))
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if next < 64 {
			w := make([]string, 64)
			for i := range w {
				w[i] = strconv.Itoa(int(val[next*64+i]))
			}
			if slices.Equal(f, w) {
				next++
			}
		}
	}
	if next != 64 {
		t.Errorf("found %d of the 64 scored windows in order", next)
	}
}

// Validations on designated steps are outside the clock; those the program
// starts itself are timed; a call that takes much longer than the pass's
// others is charged to the clock.
func TestValidationTime(t *testing.T) {
	t.Parallel()
	t.Run("designated", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		r.cfg.ValEvery, r.jcfg.ValEvery = 10, 10
		r.env = []string{"FH_SLEEP=0.05", "FH_STEPS=20"}
		tel := r.exec(t).wantOK(t)
		// The designated pass: 4 batches and 2 checks, each sleeping 50 ms.
		if tel.Checks.ExcludedMs < 250 {
			t.Errorf("excluded %.0f ms, train time %.0f ms", tel.Checks.ExcludedMs, tel.Final.TrainTimeMs)
		}
		if tel.Checks.ChargedMs > 100 {
			t.Errorf("uniformly slow calls were charged %.0f ms", tel.Checks.ChargedMs)
		}
	})
	t.Run("program", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		r.env = []string{"FH_SLEEP=0.05", "FH_STEPS=20", "FH_OWN_VAL=4"}
		tel := r.exec(t).wantOK(t)
		if len(tel.Vals) != 2 || !tel.Vals[0].Timed || tel.Checks.ProgramValidations != 1 || tel.Checks.ExcludedMs != 0 {
			t.Fatalf("vals %+v checks %+v", tel.Vals, tel.Checks)
		}
		if tel.Final.TrainTimeMs < tel.Vals[0].Ms {
			t.Errorf("train time %.0f ms does not contain the program's own validation (%.0f ms)", tel.Final.TrainTimeMs, tel.Vals[0].Ms)
		}
	})
	t.Run("final", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		// The final validation's first call trains for 1.5 s (slept here):
		// the final validation is timed, so it is on the clock.
		r.env = []string{"FH_FIRST_SLEEP=1.5", "FH_SLEEP_CALL=2", "FH_STEPS=10"}
		tel := r.exec(t).wantOK(t)
		if tel.Final.TrainTimeMs < 1400 || tel.Final.ValMs < 1400 {
			t.Errorf("train time %.0f ms, final validation %.0f ms: the 1.5 s call is not on the clock", tel.Final.TrainTimeMs, tel.Final.ValMs)
		}
	})
	t.Run("budget", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, ModeFull)
		// Every designated call sleeps 0.2 s, far more than a hundredth of
		// a training token a token (a step of this tiny program is mostly
		// overhead: a training token costs about 1 ms).
		r.cfg.ValEvery, r.jcfg.ValEvery = 5, 5
		r.jcfg.Verify.MaxValidationTokenCost = 0.01
		r.env = []string{"FH_SLEEP=0.2", "FH_STEPS=10"}
		r.exec(t).wantFault(t, ErrValidationCost, "the designated validations, outside the clock, took")
	})
}

func TestProgramFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  []string
		prog string
		exit int
		code string
		msg  string
	}{
		{"raises", []string{"FH_RAISE_AT=1"}, "", 1, ErrException, "boom at step 1"},
		{"syntax", nil, "def broken(:\n", 1, ErrException, "invalid syntax"},
		{"no finish", []string{"FH_NO_FINISH=1"}, "", 3, ErrNoFinish, "without calling fh.finish"},
		{"data before the clock", []string{"FH_EARLY_DATA=1"}, "", 1, ErrDataBeforeClock, "available only once the clock runs"},
		{"short logits", []string{"FH_LOGITS=short"}, "", 1, ErrLogitsShape, "want [16, 64, V] with V >= vocab_size 64"},
		{"flat logits", []string{"FH_LOGITS=flat"}, "", 1, ErrLogitsShape, "returned logits of shape"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFast)
			r.env = tc.env
			if tc.prog != "" {
				r.prog = tc.prog
			}
			res := r.exec(t)
			if res.code != tc.exit {
				res.dump(t)
				t.Fatalf("exit %d, want %d", res.code, tc.exit)
			}
			e := res.judgeError()
			if e == nil || e.Code != tc.code {
				e = res.tel.Error
			}
			if e == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				res.dump(t)
				t.Fatalf("error %+v; want %s containing %q", e, tc.code, tc.msg)
			}
			if res.tel.Final != nil {
				t.Errorf("final %+v", res.tel.Final)
			}
		})
	}
}

// A NaN train loss stops the run, and a program that swallows the judge's
// stop cannot go on.
func TestNaNTrainLoss(t *testing.T) {
	t.Parallel()
	for _, swallow := range []bool{false, true} {
		r := newRun(t, ModeFull)
		r.env = []string{"FH_NAN_AT=12"}
		if swallow {
			r.env = append(r.env, "FH_SWALLOW=1")
		}
		res := r.exec(t)
		res.wantFault(t, ErrNaNLoss, "train loss is nan at step 19")
		if res.code != 1 {
			t.Errorf("swallow %v: exit %d", swallow, res.code)
		}
	}
}

// The checks woven into validation: state kept across calls, noise, leaks
// of future tokens, of other rows, and a huge extra class that must not
// widen the tolerance; honest padded classes and counts kept next to the
// network pass.
func TestChecks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		logits string
		fit    string
		code   string // "" to pass
		leak   string // a probe leak kind
	}{
		{"ttt", "", ErrStatefulEval + "|" + ErrNondeterministic, ""},
		// Only the scorer sees a row twice (its noise call): its answer
		// changes, which is noise to the judge.
		{"memo", "", ErrNondeterministic, ""},
		{"mutate", "", ErrStatefulEval + "|" + ErrNondeterministic, ""},
		{"noise", "", ErrNondeterministic, ""},
		{"leak", "", "", "future"},
		{"rows", "", "", "row"},
		{"bigclass", "", "", "future"},
		{"model", "count", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.logits+tc.fit, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFull)
			r.jcfg.Probe = ProbeConfig{Enabled: true, Sequences: 4, Positions: 4}
			r.env = []string{"FH_LOGITS=" + tc.logits, "FH_STEPS=10", "FH_PAD=3"}
			if tc.fit != "" {
				r.env = append(r.env, "FH_FIT="+tc.fit)
			}
			res := r.exec(t)
			switch {
			case tc.code != "":
				// Answers that change on every call are noise or state that
				// keeps changing: either rule is right.
				code := tc.code
				if e := res.judgeError(); e != nil && strings.Contains(tc.code, "|"+e.Code) {
					code = e.Code
				}
				res.wantFault(t, strings.Split(code, "|")[0], "")
			case tc.leak != "":
				p := res.tel.Probe
				if p == nil || p.OK || p.Leak == nil || p.Leak.Kind != tc.leak {
					res.dump(t)
					t.Fatalf("probe %+v; want a %s leak", p, tc.leak)
				}
			default:
				tel := res.wantOK(t)
				if !tel.Probe.OK {
					t.Errorf("probe %+v", tel.Probe)
				}
			}
		})
	}
}

// A model fitted before the clock is found by scoring it at train_begin;
// a program that does not pass logits_fn is told it was not scored.
func TestClockStartModel(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.env = []string{"FH_FIT=formula"}
	e := r.exec(t).wantFault(t, ErrPretrain, "the model that started the clock was already fitted")
	if !strings.Contains(e.Message, "limit is 3.5000") {
		t.Errorf("message %q", e.Message)
	}
	r = newRun(t, ModeFast)
	r.env = []string{"FH_FIT=formula", "FH_NO_SCORE=1"}
	tel := r.exec(t).wantOK(t)
	if tel.Checks.InitialLoss != nil || !strings.Contains(tel.Checks.InitialSkipped, "without logits_fn") {
		t.Errorf("checks %+v", tel.Checks)
	}
}

func TestCompileBudget(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.jcfg.CompileBudgetMs = 1000
	r.env = []string{"FH_SETUP_SLEEP=3"}
	r.exec(t).wantFault(t, ErrCompileBudget, "over the track's compile budget of 1000 ms")
}

// A program that writes to the judge's socket behind the client's back
// breaks the protocol: a rule of its own.
func TestProtocol(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.env = []string{"FH_GARBAGE=1"}
	r.exec(t).wantFault(t, ErrProtocol, "not JSON")
}

// The judge refuses a validation shard that is not one, and says so.
func TestBadValidationShard(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	if err := os.WriteFile(r.jcfg.ValFile, []byte("not a shard"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.exec(t)
	if e := res.judgeError(); e == nil || e.Code != ErrShard || !strings.Contains(e.Message, "not a speedrun-format shard") {
		res.dump(t)
		t.Fatalf("judge error %+v", e)
	}
	if res.code == 0 {
		t.Errorf("the program finished without a judge")
	}
}

func TestSIGTERMIsRecorded(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.env = []string{"FH_HANG_AT=3"}
	res := r.execFor(t, 120*time.Second, func(cmd *exec.Cmd) {
		// Once the program hangs in step 3 (however slow its start on a
		// busy machine).
		for range 1000 {
			if _, err := os.Stat(filepath.Join(r.dir, "hanging")); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
	})
	res.wantProgramError(t, 128+int(syscall.SIGTERM), ErrTerminated, "terminated by SIGTERM at step 3")
}

// Several processes on gloo: each scores its share of the windows through
// its own socket; the judge adds them up.
func TestDistributedValidation(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFull)
			r.jcfg.WorldSize = n
			r.jcfg.Probe = ProbeConfig{Enabled: true, Sequences: 2, Positions: 2}
			r.env = []string{"FH_STEPS=10", "FH_LOGITS=shift", "FH_NO_SCORE=1"}
			tel := r.exec(t).wantOK(t)
			if tel.Final.ValTokens != 4096 || tel.Final.Tokens != int64(n)*10*64 || !tel.Probe.OK {
				t.Errorf("final %+v probe %+v", tel.Final, tel.Probe)
			}
		})
	}
}

func TestDistributedWorkerFailure(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFull)
	r.jcfg.WorldSize = 2
	r.env = []string{"FH_RAISE_AT=2"}
	res := r.exec(t)
	if res.code != 1 || res.tel.Error == nil || !strings.Contains(res.tel.Error.Message, "boom at step 2") {
		res.dump(t)
		t.Fatalf("exit %d error %+v", res.code, res.tel.Error)
	}
}

// On a CUDA track the judge offers the client a device buffer through CUDA
// IPC; where it cannot (here: no GPU), it says so and the logits go
// through host memory. The client below speaks the protocol as a CUDA
// client would, then stops.
func TestCUDAIPCFallback(t *testing.T) {
	t.Parallel()
	r := newRun(t, ModeFast)
	r.jcfg.Device = "cuda"
	r.prog = "# unused\n"
	r.noScorer = true
	client := `
import frontier_wire
w, _ = frontier_wire.connect()
msg, fds = w.recv()
assert msg["op"] == "ready" and len(fds) == 1, msg
w.send({"op": "facts", "cuda_ipc": True, "device_index": 0})
reply, _ = w.recv()
assert reply["op"] == "ipc" and reply["handle"] is None, reply
`
	if err := os.WriteFile(filepath.Join(r.dir, "client.py"), []byte(client), 0o644); err != nil {
		t.Fatal(err)
	}
	r.raw = "client.py"
	res := r.execFor(t, 120*time.Second, nil)
	if !slices.ContainsFunc(res.tel.Warnings, func(w Warning) bool { return w.Code == "cuda_ipc" }) {
		res.dump(t)
		t.Errorf("no cuda_ipc warning in %+v", res.tel.Warnings)
	}
}

// rawClient speaks the protocol by hand, as a program that bypasses the
// client can: FH_CASE picks what it sends after hello and facts.
const rawClient = `
import array, json, mmap, os, socket, sys
import frontier_wire
w, _ = frontier_wire.connect()
msg, fds = w.recv()
assert msg["op"] == "ready", msg
case = os.environ["FH_CASE"]
def send(obj, fds=()):
    w.send(obj, fds)
def raw(data):
    w.sock.send(data)
def memfd(n, seal=True):
    import fcntl
    fd = os.memfd_create("x", os.MFD_ALLOW_SEALING)
    os.write(fd, b"\0" * n)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd
if case != "facts_late":
    send({"op": "facts"})
if case == "huge_int":
    send({"op": "train_begin"})
    w.recv()
    raw(b'{"op": "step", "step": 0, "tokens": 1' + b"0" * 400 + b'}')
elif case == "huge_float":
    send({"op": "train_begin"})
    w.recv()
    raw(b'{"op": "step", "step": 0, "tokens": 1e999, "loss": 1e999}')
elif case == "step_text":
    send({"op": "train_begin"})
    w.recv()
    send({"op": "step", "step": "zero"})
elif case == "facts_twice":
    send({"op": "facts"})
elif case == "facts_late":
    send({"op": "train_begin"})
elif case == "finish_first":
    send({"op": "finish", "steps": 0})
elif case == "finish_no_state":
    send({"op": "train_begin"})
    w.recv()
    send({"op": "finish", "steps": 0})
elif case == "finish_unsealed_state":
    send({"op": "train_begin"})
    w.recv()
    send({"op": "finish", "steps": 0}, [memfd(100, seal=False)])
elif case == "logits_unsealed":
    send({"op": "train_begin", "score": True})
    m, _ = w.recv()
    assert m["op"] == "batch", m
    send({"op": "logits", "shape": [m["rows"], 64, 64], "ipc": False}, [memfd(m["rows"] * 64 * 64 * 4, seal=False)])
elif case == "logits_short_buffer":
    send({"op": "train_begin", "score": True})
    m, _ = w.recv()
    send({"op": "logits", "shape": [m["rows"], 64, 64], "ipc": False}, [memfd(16)])
elif case == "logits_no_buffer":
    send({"op": "train_begin", "score": True})
    m, _ = w.recv()
    send({"op": "logits", "shape": [m["rows"], 64, 64], "ipc": False})
elif case == "logits_bool_shape":
    send({"op": "train_begin", "score": True})
    m, _ = w.recv()
    send({"op": "logits", "shape": [True, 64, 64]}, [memfd(16)])
elif case == "score_text":
    send({"op": "train_begin", "score": "yes"})
elif case == "unknown":
    send({"op": "final", "val_loss": 2.0})
elif case == "list":
    raw(b"[1, 2, 3]")
elif case == "deep":
    raw(b"[" * 100000 + b"]" * 100000)
elif case == "fds_on_hello":
    send({"op": "warning", "message": "x"}, [memfd(8), memfd(8)])
elif case == "scorer_op":
    send({"op": "serving"})
try:
    while True:
        m, _ = w.recv()
except Exception:
    pass
`

// Whatever a program sends, the judge answers with a rule of the program's
// (protocol, or the logits' shape), never with a failure of its own.
func TestProtocolFaults(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"huge_int": ErrProtocol, "huge_float": ErrProtocol, "step_text": ErrProtocol, "facts_twice": ErrProtocol,
		"facts_late": ErrProtocol, "finish_first": ErrProtocol, "finish_no_state": ErrProtocol,
		"finish_unsealed_state": ErrProtocol, "logits_unsealed": ErrProtocol, "logits_short_buffer": ErrProtocol,
		"logits_no_buffer": ErrProtocol, "logits_bool_shape": ErrLogitsShape, "score_text": ErrProtocol,
		"unknown": ErrProtocol, "list": ErrProtocol, "deep": ErrProtocol, "fds_on_hello": ErrProtocol,
		"scorer_op": ErrProtocol,
	}
	for name, code := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, ModeFull)
			r.prog = "# unused\n"
			r.raw = "client.py"
			r.env = []string{"FH_CASE=" + name}
			if err := os.WriteFile(filepath.Join(r.dir, "client.py"), []byte(rawClient), 0o644); err != nil {
				t.Fatal(err)
			}
			res := r.execFor(t, 120*time.Second, nil)
			if res.judge != nil {
				t.Fatalf("the judge failed: %v", res.judge)
			}
			e := res.judgeError()
			if e == nil || e.Code != code {
				res.dump(t)
				t.Fatalf("judge error %+v, want code %s", e, code)
			}
			if res.tel.Final != nil {
				t.Errorf("a result for a program that broke the protocol: %+v", res.tel.Final)
			}
		})
	}
}
