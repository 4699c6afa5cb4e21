package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// fill writes a little of everything a store holds.
func fill(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	parent := storetest.Program(3, 40<<10)
	r := &store.Run{Name: "copied", Track: "tiny", TrackHash: "th", Config: json.RawMessage(`{"islands":2}`), RNG: []byte{1, 2, 3}, Seed: 1 << 63}
	must(t, s.CreateRun(ctx, r))
	var prev *store.Child
	for i := range 12 {
		src := storetest.Mutate(parent, uint64(i), 2)
		h, err := s.PutProgram(ctx, src, "")
		must(t, err)
		e := &store.Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th", FastOnly: i%2 == 0}
		must(t, s.CreateEvaluation(ctx, e))
		e.Verdict, e.ValLoss, e.Reason = "acceptable", 3.25+float64(i)/100, "ok \xff"
		must(t, s.FinishEvaluation(ctx, e, []byte(`{"step":1}`+"\n")))
		call := &store.LLMCall{RunID: r.ID, Purpose: "template", Model: "m", Request: `{"prompt":"` + strings.Repeat("p", 3000) + `"}`}
		must(t, s.InsertLLMCall(ctx, call))
		call.State, call.Answer, call.Estimated, call.CostUSD = store.CallDone, "answer", i%3 == 0, 0.25
		must(t, s.FinishLLMCall(ctx, call))
		c := &store.Child{RunID: r.ID, Iteration: i, Origin: "llm", State: "done", ProgramHash: h, EvaluationID: e.ID, ValLoss: e.ValLoss}
		if prev != nil {
			c.ParentID = prev.ID
		}
		must(t, s.RunInTx(ctx, func(tx store.RunTx) error {
			if err := tx.InsertIteration(&store.Iteration{RunID: r.ID, Iteration: i, Stage: "template"}); err != nil {
				return err
			}
			if err := tx.InsertChild(c); err != nil {
				return err
			}
			if err := tx.InsertAttempt(&store.Attempt{ChildID: c.ID, Kind: "propose", ProgramHash: h, LLMCallID: call.ID}); err != nil {
				return err
			}
			if _, err := tx.AddEvent(&store.RunEvent{RunID: r.ID, Kind: "migration", Key: string(rune('a' + i))}); err != nil {
				return err
			}
			return tx.InsertConfirmation(&store.Confirmation{RunID: r.ID, Claim: runs.Claim{ChildID: c.ID, Method: runs.MethodNoise,
				State: runs.ClaimQueued, TimeMs: math.NaN()}})
		}))
		prev = c
	}
	must(t, s.RunInTx(ctx, func(tx store.RunTx) error { return tx.SetArchive(r.ID, []int64{prev.ID}) }))
	br := &store.BenchRun{Suite: "s", SuiteHash: "h", Scaffold: "aide", Model: "m", Hints: "none"}
	must(t, s.CreateBenchRun(ctx, br))
	as := []*store.BenchAttempt{{RunID: br.ID, Task: "t1"}}
	must(t, s.InsertBenchAttempts(ctx, as))
	n := &store.BenchNode{AttemptID: as[0].ID, Kind: "start", State: store.NodeDone, ProgramHash: prev.ProgramHash}
	must(t, s.InsertBenchNode(ctx, n))
	must(t, s.InsertBenchCall(ctx, n.ID, &store.LLMCall{Purpose: "draft", Model: "m", Request: "r"}))
	must(t, s.PutCalibration(ctx, &store.Calibration{Suite: "s", Record: "r0", ProgramHash: prev.ProgramHash, Track: "tiny", N: 3, MeanMs: 10}))
}

// A SQLite home's history moves to PostgreSQL, and back, row for row:
// ids, programs, prompts, flags and unknown numbers read back the same.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	src := storetest.Open(t, store.SQLite)
	fill(t, src)
	pg := storetest.Open(t, store.Postgres)
	var steps []string
	copied, err := store.Copy(ctx, pg, src, func(step, table string, rows int64) { steps = append(steps, step+" "+table) })
	if err != nil {
		t.Fatal(err)
	}
	want, _ := src.Usage(ctx)
	got, _ := pg.Usage(ctx)
	for _, c := range copied {
		if c.Rows != want.Rows[c.Table] || got.Rows[c.Table] != c.Rows {
			t.Errorf("%s: copied %d rows, the source has %d, the copy %d", c.Table, c.Rows, want.Rows[c.Table], got.Rows[c.Table])
		}
	}
	if len(steps) != 2*len(copied) || !strings.HasPrefix(steps[len(steps)-1], "checked") {
		t.Errorf("progress: %v", steps)
	}
	// What the consumers read is the same in both.
	for _, s := range []store.Store{src, pg} {
		calls, err := s.LLMCalls(ctx, 1, true)
		if err != nil || len(calls) != 12 || !strings.HasPrefix(calls[3].Request, `{"prompt":"ppp`) || !calls[3].Estimated {
			t.Errorf("%s: calls %d, %v", s.Location(), len(calls), err)
		}
		kids, err := s.Children(ctx, 1)
		if err != nil || len(kids) != 12 || kids[5].ParentID != kids[4].ID {
			t.Fatalf("%s: children %d, %v", s.Location(), len(kids), err)
		}
		p, err := s.Program(ctx, kids[7].ProgramHash)
		if err != nil || !bytes.Equal(p, storetest.Mutate(storetest.Program(3, 40<<10), 7, 2)) {
			t.Errorf("%s: a program reads back as %d bytes, %v", s.Location(), len(p), err)
		}
		claims, _ := s.Confirmations(ctx, 1)
		if len(claims) != 12 || !math.IsNaN(claims[0].TimeMs) {
			t.Errorf("%s: claims %d", s.Location(), len(claims))
		}
		r, _ := s.Run(ctx, "copied")
		if r == nil || r.Seed != 1<<63 || string(r.RNG) != "\x01\x02\x03" {
			t.Errorf("%s: run %+v", s.Location(), r)
		}
	}
	// New rows in the copy get new ids, after the copied ones.
	r2 := &store.Run{Name: "after", Track: "tiny", TrackHash: "th"}
	must(t, pg.CreateRun(ctx, r2))
	if r2.ID != 2 {
		t.Errorf("a run made in the copy got id %d, want 2", r2.ID)
	}
	// A destination with data is refused, and left as it was.
	if _, err := store.Copy(ctx, pg, src, nil); err == nil || !strings.Contains(err.Error(), "holds data already") {
		t.Errorf("copy into a database with data: %v", err)
	}
	// And back to a new SQLite file.
	back := storetest.Open(t, store.SQLite)
	if _, err := store.Copy(ctx, back, pg, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := back.Run(ctx, "after"); err != nil || r.ID != 2 {
		t.Errorf("copied back: %v, %v", r, err)
	}
}
