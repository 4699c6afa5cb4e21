package evolve

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
)

// The engine's own overhead: a run of 100 KB programs with a proposer and
// an evaluator that answer at once, so that what is measured is the engine
// and its database (sampling, prompts, dedup, transactions, archive,
// migrations). A run of 1,000 children fits in CI's time:
//
//	go test -run '^$' -bench Engine -benchtime 1x ./internal/evolve/
//
// FRONTIER_BENCH_CHILDREN sets other sizes, a list: the cost per child
// should not grow with the population.
//
//	FRONTIER_BENCH_CHILDREN=1000,10000,100000 go test -run '^$' -bench 'Engine/proposer/sqlite' -benchtime 1x ./internal/evolve/
//
// It reports the CPU time of the process (user and system, every
// goroutine's) per child while the run runs, children per second, the Go
// heap in use at the end, its peak while running, and the size of the
// database.

// benchSizes are the runs' sizes in children.
func benchSizes(b *testing.B) []int {
	env := os.Getenv("FRONTIER_BENCH_CHILDREN")
	if env == "" {
		return []int{1000}
	}
	var sizes []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 10 {
			b.Fatalf("FRONTIER_BENCH_CHILDREN=%q: want a list of numbers of children, each at least 10 (1000,10000)", env)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bigTrack writes a track folder whose reference program is about 100 KB.
func bigTrack(b *testing.B) *track.Spec {
	b.Helper()
	dir := b.TempDir()
	yml, err := os.ReadFile("testdata/quick/track.yaml")
	if err != nil {
		b.Fatal(err)
	}
	src, err := os.ReadFile("testdata/quick/train.py")
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	sb.Write(src)
	for i := 0; sb.Len() < 100<<10; i++ {
		fmt.Fprintf(&sb, "# padding line %05d: a long comment standing in for the body of a large training program\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "track.yaml"), yml, 0o644); err != nil {
		b.Fatal(err)
	}
	// The fake evaluator fails one program in seven by its hash; the
	// reference must pass, whatever the hash of its padding is.
	for hashOutcome(eval.Request{FastOnly: true}, benchKey([]byte(sb.String()))).Crash != "" {
		sb.WriteString("#\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "train.py"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	spec, err := track.LoadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	return spec
}

// appendProposer appends a distinct line to the parent: an instant
// proposer whose children are all new programs.
type appendProposer struct{ n atomic.Int64 }

func (p *appendProposer) Propose(ctx context.Context, req propose.Request) (*propose.Proposal, error) {
	k := p.n.Add(1)
	ans := fmt.Sprintf("<<<<<<< SEARCH\n=======\n# change %d\n>>>>>>> REPLACE\n", k)
	e, err := edit.Parse(ans, "")
	if err != nil {
		return nil, err
	}
	res, err := edit.Apply(req.Parent.Source, e)
	if err != nil {
		return nil, err
	}
	return &propose.Proposal{Kind: propose.KindMutate, Description: fmt.Sprintf("change %d", k), Answer: ans, Edit: e, Result: res}, nil
}

// instantModel answers every prompt at once with an edit that appends a
// distinct line (and keeps nothing, unlike llmtest.Fake, which records
// every request).
func instantModel() llm.Client {
	var n atomic.Int64
	return llm.ClientFunc(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		k := n.Add(1)
		text := fmt.Sprintf("Append a note.\n\n<<<<<<< SEARCH\n=======\n# variant %d\n>>>>>>> REPLACE\n", k)
		return &llm.Response{Text: text, Usage: llm.Usage{InputTokens: 30000, OutputTokens: 40}, CostUSD: 0.001,
			FinishReason: llm.FinishStop, Model: req.Model, Provider: "instant"}, nil
	})
}

func BenchmarkEngine(b *testing.B) {
	for _, kind := range []string{"proposer", "llm"} {
		for _, d := range storetest.Dialects {
			for _, n := range benchSizes(b) {
				b.Run(fmt.Sprintf("%s/%s/children=%d", kind, d, n), func(b *testing.B) {
					for range b.N {
						benchRun(b, kind, d, n)
					}
				})
			}
		}
	}
}

// benchKey is the benchmark evaluator's program hash: a CRC-32, 3 us on
// 100 KB against SHA-256's 73 us (one machine, n = 3 each), so that what
// is measured is the engine, not its stub (which hashed each program
// twice with SHA-256, a tenth of the figure).
func benchKey(src []byte) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE(src)) }

func benchRun(b *testing.B, kind, dialect string, children int) {
	ctx := context.Background()
	spec := bigTrack(b)
	st := storetest.Open(b, dialect)
	m := Model{Name: "instant", Kind: propose.KindMutate, Proposer: &appendProposer{}}
	if kind == "llm" {
		m = Model{Name: "instant", Kind: propose.KindLLM, Client: instantModel()}
	}
	cfg := Config{
		Islands: 4, BranchingFactor: 10, Slots: 8, LLMConcurrency: 8, Seed: 3,
		MetaPrompting: MetaConfig{Enabled: ptr(false)},
		Budget:        BudgetConfig{MaxIterations: children / 10},
	}
	ev := fakeEvaluator(nil)
	ev.Key = benchKey
	opts := Options{Store: st, Track: spec, Evaluator: ev, Models: []Model{m}}
	e, err := New(ctx, opts, cfg, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	start, cpu := time.Now(), cpuTime(b)
	sum, err := e.Run(ctx)
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	if sum.StopReason != StopIterations {
		b.Fatalf("stopped: %s: %s", sum.StopReason, sum.StopDetail)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	kids, err := st.Children(ctx, e.RunID())
	if err != nil {
		b.Fatal(err)
	}
	u, err := st.Usage(ctx)
	if err != nil {
		b.Fatal(err)
	}
	dbMB := float64(u.Bytes) / (1 << 20)
	n := len(kids)
	// A SQLite commit appends the pages it changed to the WAL, and a
	// checkpoint copies them into the database once the WAL holds 40 MB:
	// a run of 1,000 children never reaches one, a run of 100,000 pays
	// for several. Closing the store checkpoints what is left, so that
	// every size pays for copying the pages it wrote (at 1,000 children
	// 0.01 ms a child).
	closing := cpuTime(b)
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	closing = cpuTime(b) - closing
	cpu += closing
	b.ReportMetric(cpu.Seconds()*1000/float64(children), "cpu-ms/child")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "children/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(dbMB, "db-MB")
	b.Logf("%s: %d members (%d children) in %s, %s of CPU (%.2f ms a child, %.3f of it closing the store): %.0f children/s; heap %.1f MB after GC, peak %.1f MB; database %.0f MB",
		kind, n, children, elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), cpu.Seconds()*1000/float64(children),
		closing.Seconds()*1000/float64(children),
		float64(children)/elapsed.Seconds(), float64(ms.HeapInuse)/(1<<20), float64(peak.Load())/(1<<20), dbMB)
}
