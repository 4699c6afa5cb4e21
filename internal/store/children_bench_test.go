package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// BenchmarkChildren records children of 100 KB programs as an evolution
// run with a language model does, on each store side by side: for each
// child the prompt (the contract and the parent, in the request's JSON),
// the model's answer, the child's program (its parent with three lines
// changed), its attempt, a fast and a full evaluation, and the child's and
// the run's updates. It reports what the store costs per child in bytes
// (the database's size over the children) and in time, and the time per
// child over the first and the last tenth of the run: a store whose cost
// grows with what it holds shows it there.
//
//	go test -run '^$' -bench Children -benchtime 1x ./internal/store/
//
// FRONTIER_BENCH_CHILDREN lists the run sizes (default 1000; the issue's
// figures are at 10000 and 100000, which take minutes); the PostgreSQL
// runs need FRONTIER_TEST_POSTGRES (scripts/postgres.sh).
func BenchmarkChildren(b *testing.B) {
	sizes := []int{1000}
	if v := os.Getenv("FRONTIER_BENCH_CHILDREN"); v != "" {
		sizes = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 10 {
				b.Fatalf("FRONTIER_BENCH_CHILDREN=%q: give sizes of 10 or more, comma-separated", v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		for _, d := range storetest.Dialects {
			b.Run(fmt.Sprintf("n=%d/%s", n, d), func(b *testing.B) {
				for range b.N {
					recordChildren(b, d, n)
				}
			})
		}
	}
}

// contract stands for the fixed part of every prompt: how programs are
// run and judged, the answer's format (about 4 KB).
var contract = strings.Repeat("- The program runs under frontier's harness; the judge holds the clock and the loss. Edits to protected regions are refused.\n", 32)

func recordChildren(b *testing.B, dialect string, n int) {
	ctx := context.Background()
	st := storetest.Open(b, dialect)
	run := &store.Run{Name: "bench", Track: "big", TrackHash: "th", Config: json.RawMessage(`{}`)}
	if err := st.CreateRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, uint64(n)))
	// The population: the newest programs, of which each child's parent
	// is one (memory stays flat however long the run).
	const window = 64
	pool := [][]byte{storetest.Program(1, 100<<10)}
	poolIDs := []int64{0}
	var raw int64
	start := time.Now()
	tenth := max(1, n/10)
	var tenthStart time.Time
	var tenths []float64 // ms a child, per tenth of the run
	for i := range n {
		if i%tenth == 0 {
			tenthStart = time.Now()
		}
		k := r.IntN(len(pool))
		parent, parentID := pool[k], poolIDs[k]
		child := storetest.Mutate(parent, uint64(i)+1, 3)
		req, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 8192, "messages": []map[string]string{
			{"role": "system", "content": "You are an expert in fast language-model pretraining."},
			{"role": "user", "content": contract + "\n## The program to improve\n\nMeasured: 41.2 s, loss 3.27\n\n```python\n" +
				string(parent) + "```\n"}}})
		answer := fmt.Sprintf("Raise the learning rate of the embedding and fuse the norms (variant %d).\n\n<<<<<<< SEARCH\n    x = 1\n=======\n    x = 2\n>>>>>>> REPLACE\n", i)
		raw += int64(len(req) + len(answer) + len(child))

		call := &store.LLMCall{RunID: run.ID, Purpose: "template", Model: "m", Request: string(req)}
		must(b, st.InsertLLMCall(ctx, call))
		call.State, call.Answer, call.InputTokens, call.OutputTokens, call.CostUSD = store.CallDone, answer, 30000, 400, 0.01
		must(b, st.FinishLLMCall(ctx, call))
		h, err := st.PutProgram(ctx, child, "")
		must(b, err)
		c := &store.Child{RunID: run.ID, Iteration: i, ParentID: parentID, Origin: "llm", Model: "m", Stage: "template",
			Template: "speed", State: "fast", ProgramHash: h}
		must(b, st.RunInTx(ctx, func(tx store.RunTx) error {
			if err := tx.InsertChild(c); err != nil {
				return err
			}
			return tx.InsertAttempt(&store.Attempt{ChildID: c.ID, Kind: "propose", LLMCallID: call.ID, ProgramHash: h})
		}))
		for _, fast := range []bool{true, false} {
			e := &store.Evaluation{ProgramHash: h, Track: "big", TrackHash: "th", FastOnly: fast}
			must(b, st.CreateEvaluation(ctx, e))
			e.Verdict, e.ValLoss, e.TrainTimeMs = "acceptable", 3.27, 41200
			e.Result = json.RawMessage(`{"verdict":"acceptable","metrics":{"val_loss":3.27,"train_time_ms":41200}}`)
			must(b, st.FinishEvaluation(ctx, e, nil))
			c.EvaluationID = e.ID
		}
		c.State, c.Verdict, c.ValLoss, c.TrainTimeMs, c.FinishedAt = "done", "acceptable", 3.27, 41200, time.Now()
		run.Iterations = i + 1
		must(b, st.RunInTx(ctx, func(tx store.RunTx) error {
			if err := tx.UpdateChild(c); err != nil {
				return err
			}
			return tx.UpdateRun(run)
		}))
		if len(pool) < window {
			pool, poolIDs = append(pool, child), append(poolIDs, c.ID)
		} else {
			j := r.IntN(window)
			pool[j], poolIDs[j] = child, c.ID
		}
		if (i+1)%tenth == 0 || i == n-1 {
			k := (i % tenth) + 1
			tenths = append(tenths, float64(time.Since(tenthStart).Microseconds())/float64(k)/1000)
		}
	}
	elapsed := time.Since(start)
	u, err := st.Usage(ctx)
	must(b, err)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "children/s")
	b.ReportMetric(float64(u.Bytes)/float64(n)/1024, "KiB/child")
	b.ReportMetric(float64(raw)/float64(n)/1024, "raw-KiB/child")
	b.ReportMetric(tenths[0], "ms/child-first-10%")
	b.ReportMetric(tenths[len(tenths)-1], "ms/child-last-10%")
	b.ReportMetric(0, "ns/op")
	b.Logf("%s: %d children in %s: %.0f children/s; database %.1f MiB, %.1f KiB a child (%.0f KiB a child written); %d chunks, %d contents",
		dialect, n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), float64(u.Bytes)/(1<<20),
		float64(u.Bytes)/float64(n)/1024, float64(raw)/float64(n)/1024, u.Rows["chunks"], u.Rows["contents"])
	b.Logf("%s: ms a child, by tenth of the run: %.1f", dialect, tenths)
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
