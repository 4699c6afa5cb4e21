package harness

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// benchProgram measures, inside a real run with its judge, what the judge
// costs the program: the round trip of fh.step against the same loop
// without it, and the validation pass against computing the same
// cross-entropy in-process on the same logits.
const benchProgram = `
import os, time
import torch
import torch.nn.functional as F
import frontier_harness as fh

cfg = fh.config()
V, T, B = cfg.vocab_size, cfg.val_seq_len, cfg.val_batch_seqs
n = int(os.environ["BENCH_STEPS"])
torch.manual_seed(0)
a = torch.randn(96, 96)

def work():
    # about a millisecond of compute: a stand-in for a training step
    x = a
    for _ in range(8):
        x = torch.tanh(x @ a)
    return x

fh.train_begin()
t0 = time.perf_counter()
for step in fh.steps(n):
    work()
    fh.step(step, tokens=1)
with_msg = (time.perf_counter() - t0) / n
t0 = time.perf_counter()
for step in range(n):
    work()
without = (time.perf_counter() - t0) / n
print("BENCH step_us=%.3f loop_us=%.3f" % (with_msg * 1e6, without * 1e6), flush=True)

# A model whose forward takes some milliseconds, like a small language model's.
emb = torch.nn.Embedding(V, 256)
mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256), torch.nn.GELU())
head = torch.nn.Linear(256, V)

def logits_fn(x):
    return head(mlp(emb(x)))

# In-process: the same number of batches through logits_fn, the
# cross-entropy computed here.
batches = int(os.environ["BENCH_VAL_TOKENS"]) // (B * T)
y = torch.randint(0, V, (B, T))
with torch.no_grad():
    t0 = time.perf_counter()
    for _ in range(batches):
        x = torch.randint(0, V, (B, T))
        float(F.cross_entropy(logits_fn(x).float().reshape(-1, V), y.reshape(-1), reduction="sum"))
    inproc = (time.perf_counter() - t0) / batches
print("BENCH inproc_batch_ms=%.3f" % (inproc * 1e3), flush=True)
fh.finish(logits_fn)
`

var benchLine = regexp.MustCompile(`BENCH (\w+)=([0-9.]+)(?: (\w+)=([0-9.]+))?`)

// BenchmarkJudge reports, for the tiny track's shapes (V 256, T 128, B 16,
// 65,536 validation tokens), the judge's cost per step and per validation
// batch. Run it with
//
//	go test -run '^$' -bench Judge -benchtime 1x ./internal/harness/
func BenchmarkJudge(b *testing.B) {
	for range b.N {
		r := newRunB(b)
		r.prog = benchProgram
		r.env = []string{"BENCH_STEPS=3000", "BENCH_VAL_TOKENS=65536"}
		res := r.execFor(b, 10*time.Minute, nil)
		m := map[string]float64{}
		for _, mm := range benchLine.FindAllStringSubmatch(res.stdout, -1) {
			for i := 1; i+1 < len(mm); i += 2 {
				if mm[i] != "" {
					v, _ := strconv.ParseFloat(mm[i+1], 64)
					m[mm[i]] = v
				}
			}
		}
		if res.tel.Final == nil || len(res.tel.Vals) == 0 || res.tel.Checks == nil {
			b.Fatalf("no result:\n%s\n%s", res.stdout, res.stderr)
		}
		v := res.tel.Vals[len(res.tel.Vals)-1]
		calls := float64(res.tel.Checks.Calls)
		judgeBatch := v.Ms / calls
		b.ReportMetric(m["step_us"]-m["loop_us"], "µs/step")
		b.ReportMetric(m["inproc_batch_ms"], "inproc-ms/batch")
		b.ReportMetric(judgeBatch, "judge-ms/call")
		tiny, err := track.NewRegistry(tracks.FS).Get("tiny")
		if err != nil {
			b.Fatal(err)
		}
		refStep := tiny.Hardware.ReferenceStepMs
		b.Logf("fh.step costs %.1f µs a step (a step of %.0f µs of work with it, %.0f µs without): %.3f%% of the tiny "+
			"reference's %.0f ms step; validation %.0f ms for %d calls (%.2f ms a call: logits_fn, the transfer, the "+
			"judge's loss and checks) against %.2f ms a batch in-process (logits_fn and the loss; ratio %.2f)",
			m["step_us"]-m["loop_us"], m["step_us"], m["loop_us"], 100*(m["step_us"]-m["loop_us"])/(1000*refStep), refStep, v.Ms, int(calls),
			judgeBatch, m["inproc_batch_ms"], judgeBatch/m["inproc_batch_ms"])
	}
}

// newRunB is newRun with the tiny track's validation shapes.
func newRunB(b *testing.B) *run {
	r := newRun(b, ModeFull)
	r.cfg.VocabSize, r.jcfg.VocabSize = 256, 256
	r.cfg.ValSeqLen, r.jcfg.ValSeqLen = 128, 128
	val := filepath.Join(filepath.Dir(r.jcfg.ValFile), "bench_val.bin")
	writeShard(b, val, markovTokens(3*65537+16*128+1, 256, 7))
	r.jcfg.ValFile, r.jcfg.ValTokens = val, 65536
	r.jcfg.Probe = ProbeConfig{Enabled: true, Sequences: 4, Positions: 4}
	r.jcfg.Verify = VerifyConfig{}
	return r
}
