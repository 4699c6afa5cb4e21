package runview

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

const refSrc = "import torch\nLR = 3e-3\nSTEPS = 200\n"

// fixture is a small stored run: the reference, a seed copy on island 1,
// children over three iterations (one of them a migrant copy's child, a
// duplicate, a failed apply, one still evaluating), and telemetry for the
// reference and the best child.
type fixture struct {
	st      store.Store
	run     *store.Run
	ref     *store.Child
	seed    *store.Child
	fast    *store.Child // the fastest acceptable child
	lowLoss *store.Child // acceptable with the lowest loss, slower
	migrant *store.Child
	first   *store.Child // the first child; the migrant copies it
}

func newFixture(t *testing.T, objective string, metaStart int) *fixture {
	t.Helper()
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	modelsJSON, _ := json.Marshal([]store.RunModel{{Name: "m1", Kind: "llm", Weight: 1}, {Name: "m2", Kind: "llm", Weight: 1}})
	t0 := time.Date(2025, 8, 1, 12, 0, 0, 0, time.UTC)
	f := &fixture{st: st, run: &store.Run{Name: "r1", Track: "tiny", TrackHash: "th", TargetValLoss: 4.0, LossFloor: 3.5,
		Objective: objective, MetaStart: metaStart, Models: modelsJSON, StartedAt: t0}}
	if err := st.CreateRun(ctx, f.run); err != nil {
		t.Fatal(err)
	}

	put := func(src string) string {
		h, err := st.PutProgram(ctx, []byte(src), "")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	evaluate := func(hash, class, telemetry string) int64 {
		e := &store.Evaluation{ProgramHash: hash, Track: "tiny", TrackHash: "th"}
		if err := st.CreateEvaluation(ctx, e); err != nil {
			t.Fatal(err)
		}
		e.Verdict, e.FingerprintClass = "acceptable", class
		e.Conditions = &store.Conditions{LoadAvg: []float64{float64(e.ID), 1, 1},
			CPU: &store.CPUUse{WallMs: 1000, OwnMs: 1900, OwnSource: "cgroup", OthersMs: 500, CPUs: 2}}
		var tel []byte
		if telemetry != "" {
			tel = []byte(telemetry)
		}
		if err := st.FinishEvaluation(ctx, e, tel); err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	add := func(c *store.Child) *store.Child {
		c.RunID = f.run.ID
		if c.State == "" {
			c.State = runs.Done
		}
		if err := st.RunInTx(ctx, func(tx store.RunTx) error { return tx.InsertChild(c) }); err != nil {
			t.Fatal(err)
		}
		return c
	}

	refHash := put(refSrc)
	refTel := `{"event":"sections","t_ms":1,"sections":[{"name":"forward","total_ms":900,"avg_ms":4.5,"pct":45,"calls":200},{"name":"optimizer","total_ms":500,"avg_ms":2.5,"pct":25,"calls":200}]}
{"event":"step","t_ms":2,"step":100,"train_time_ms":10000,"step_avg_ms":100,"tokens":51200,"tokens_per_s":5120,"train_loss":4.5}
`
	f.ref = add(&store.Child{Iteration: 0, Origin: runs.OriginReference, Stage: runs.StageReference, ProgramHash: refHash,
		Verdict: "acceptable", ValLoss: 3.99, TrainTimeMs: 20_000, StepAvgMs: 100, Score: 399,
		EvaluationID: evaluate(refHash, "cpu/2/torch1.13", refTel)})
	f.seed = add(&store.Child{Iteration: 0, Island: 1, Origin: runs.OriginSeed, SourceID: f.ref.ID, ProgramHash: refHash,
		Verdict: "acceptable", ValLoss: 3.99, TrainTimeMs: 20_000})

	f.first = add(&store.Child{Iteration: 1, Island: 0, ParentID: f.ref.ID, Origin: "llm", Model: "m1", Stage: runs.StageTemplate,
		ProgramHash: put(strings.Replace(refSrc, "3e-3", "4e-3", 1)), Verdict: "acceptable", ValLoss: 3.98, TrainTimeMs: 19_000,
		StepAvgMs: 95, Score: 95 * 3.98, InputTokens: 1000, OutputTokens: 200, CostUSD: 0.01})
	add(&store.Child{Iteration: 1, Island: 1, ParentID: f.seed.ID, Origin: "llm", Model: "m2", Stage: runs.StageTemplate,
		Verdict: "apply_failed", Error: "SEARCH block 1 not found\nclosest match: ...", FixAttempts: 3, CostUSD: 0.02})
	f.migrant = add(&store.Child{Iteration: 1, Island: 1, Origin: runs.OriginMigrant, SourceID: f.first.ID, ProgramHash: f.first.ProgramHash,
		Verdict: "acceptable", ValLoss: f.first.ValLoss, TrainTimeMs: f.first.TrainTimeMs})

	fastSrc := strings.Replace(refSrc, "STEPS = 200", "STEPS = 180", 1)
	fastTel := `{"event":"sections","t_ms":1,"sections":[{"name":"forward","total_ms":800,"avg_ms":4.4,"pct":47,"calls":180}]}
{"event":"top_ops","t_ms":1,"kind":"cpu","steps":[10,14],"ops":[{"name":"aten::mm","total_ms":50,"calls":400}]}
{"event":"step","t_ms":2,"step":90,"train_time_ms":8500,"step_avg_ms":94,"tokens":46080,"tokens_per_s":5400,"train_loss":4.4}
{"event":"val","t_ms":3,"step":180,"val_loss":3.995,"tokens":4096,"seq_len":64,"ms":30,"final":true}
`
	fastHash := put(fastSrc)
	f.fast = add(&store.Child{Iteration: 2, Island: 1, ParentID: f.migrant.ID, Origin: "llm", Model: "m2", Stage: runs.StageMeta,
		ProgramHash: fastHash, Verdict: "acceptable", ValLoss: 3.995, TrainTimeMs: 17_000, StepAvgMs: 94, Score: 94 * 3.995,
		FixAttempts: 1, InputTokens: 3000, OutputTokens: 900, CostUSD: 0.05, EvaluationID: evaluate(fastHash, "cpu/2/torch1.13", fastTel)})
	f.lowLoss = add(&store.Child{Iteration: 2, Island: 0, ParentID: f.first.ID, Origin: "llm", Model: "m1", Stage: runs.StageMeta,
		ProgramHash: put(refSrc + "# slower, lower loss\n"), Verdict: "acceptable", ValLoss: 3.90, TrainTimeMs: 19_500, StepAvgMs: 97,
		Score: 97 * 3.90})
	add(&store.Child{Iteration: 2, Island: 0, ParentID: f.first.ID, Origin: "llm", Model: "m1", Stage: runs.StageMeta,
		ProgramHash: f.first.ProgramHash, Verdict: runs.Duplicate, SourceID: f.first.ID})
	add(&store.Child{Iteration: 3, Island: 0, ParentID: f.first.ID, Origin: "llm", Model: "m1", Stage: runs.StageMeta,
		State: runs.Evaluating})
	if err := st.RunInTx(ctx, func(tx store.RunTx) error {
		for i, stage := range []runs.Stage{runs.StageReference, runs.StageTemplate, runs.StageMeta, runs.StageMeta} {
			if err := tx.InsertIteration(&store.Iteration{RunID: f.run.ID, Iteration: i, Stage: stage}); err != nil {
				return err
			}
		}
		// #first measured faster once; its series did not confirm it.
		return tx.InsertConfirmation(&store.Confirmation{RunID: f.run.ID, Claim: runs.Claim{ChildID: f.first.ID, BaselineID: f.ref.ID,
			Method: runs.MethodSeries, State: runs.ClaimRejected, Pairs: 5, Alpha: 0.01, SingleMs: 19_000, TimeMs: 19_900,
			BaselineMs: 20_000, TimeSD: 300, BaselineSD: 250, Speedup: 0.005, SpeedupLo: -0.02, SpeedupHi: 0.03, TimeP: 0.3,
			LossP: 0.001, NoiseCV: math.NaN(), LossSD: 0.002, LossMean: 3.98, Reason: "the time is not significantly under the baseline's"}})
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// confirm records a confirmed series for #fast: it becomes the record.
func (f *fixture) confirm(t *testing.T) {
	t.Helper()
	err := f.st.RunInTx(context.Background(), func(tx store.RunTx) error {
		return tx.InsertConfirmation(&store.Confirmation{RunID: f.run.ID, Claim: runs.Claim{ChildID: f.fast.ID, BaselineID: f.ref.ID,
			Method: runs.MethodSeries, State: runs.ClaimConfirmed, Pairs: 5, Alpha: 0.01, SingleMs: 17_000, TimeMs: 17_200,
			BaselineMs: 20_050, TimeSD: 200, BaselineSD: 250, Speedup: 0.142, SpeedupLo: 0.12, SpeedupHi: 0.16, TimeP: 1e-5,
			LossP: 0.004, NoiseCV: math.NaN(), LossSD: 0.002, LossMean: 3.99}})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoadReport(t *testing.T) {
	f := newFixture(t, runs.ObjectiveScore, 2)
	f.confirm(t)
	d, err := LoadReport(context.Background(), f.st, "r1")
	if err != nil {
		t.Fatal(err)
	}
	r := d.Run
	if r.ID != "1" || r.Name != "r1" || r.Track != "tiny" || r.TargetValLoss != 4 || r.LossFloor != 3.5 || r.Objective != "score" {
		t.Errorf("run = %+v", r)
	}
	if r.MetaPromptFrom != 2 || strings.Join(r.Models, ",") != "m1,m2" || r.FingerprintClass != "cpu/2/torch1.13" {
		t.Errorf("run = %+v", r)
	}
	if ref := d.Reference; ref.ValLoss != 3.99 || ref.TrainTimeMs != 20_000 || ref.StepAvgMs != 100 {
		t.Errorf("reference = %+v", d.Reference)
	}
	// The load behind each time comes with it.
	if c := d.Reference.Conditions; c == nil || c.CPU == nil || c.CPU.OthersMs != 500 {
		t.Errorf("reference's conditions = %+v", c)
	}

	// The reference, the seed and the migrant are not programs of the run.
	if len(d.Programs) != 6 {
		t.Fatalf("%d programs, want 6: %+v", len(d.Programs), d.Programs)
	}
	byID := map[int64]report.Program{}
	for _, p := range d.Programs {
		byID[p.ID] = p
		if p.ID == f.ref.ID || p.ID == f.seed.ID || p.ID == f.migrant.ID {
			t.Errorf("copy or reference #%d listed as a program", p.ID)
		}
	}
	fast := byID[f.fast.ID]
	if c := fast.Conditions; c == nil || len(c.LoadAvg) != 3 || c.LoadAvg[0] != float64(f.fast.EvaluationID) {
		t.Errorf("the fast program's conditions = %+v, want its evaluation's", c)
	}
	if fast.ParentID != f.first.ID {
		t.Errorf("the child of a migrant has parent %d, want the migrant's original #%d", fast.ParentID, f.first.ID)
	}
	// It reached its full run after a fix: stage fix, first prompted by a
	// meta idea.
	if fast.Stage != "fix" || fast.PromptStage != "meta" || fast.Model != "m2" || fast.FixAttempts != 1 || fast.CostUSD != 0.05 || fast.Island != 1 {
		t.Errorf("fast child = %+v", fast)
	}
	var failed, dup, pending report.Program
	for _, p := range d.Programs {
		switch p.Verdict {
		case "apply_failed":
			failed = p
		case string(runs.Duplicate):
			dup = p
		case "":
			pending = p
		}
	}
	if failed.ParentID != 0 || failed.Reason != "SEARCH block 1 not found" || failed.Class() != runs.Buggy {
		t.Errorf("failed child = %+v: its parent is the seed, a copy of the reference, so 0; reason the error's first line", failed)
	}
	if !dup.Duplicate || dup.Class() != runs.ClassDuplicate {
		t.Errorf("duplicate = %+v", dup)
	}
	if pending.Iteration != 3 || pending.Class() != runs.Pending {
		t.Errorf("pending child = %+v", pending)
	}

	// The best program is the record: the confirmed claim's.
	if d.Record == nil || d.Record.ID != f.fast.ID || d.Record.Reference || d.Record.TrainTimeMs != 17_200 ||
		!strings.Contains(d.Record.Evidence, "confirmed in alternation, n = 5 each") {
		t.Errorf("record = %+v", d.Record)
	}
	if len(d.Claims) != 2 || d.Claims[0].State != "rejected" || d.Claims[0].TimeP == nil || *d.Claims[0].TimeP != 0.3 || d.Claims[1].State != "confirmed" {
		t.Errorf("claims = %+v", d.Claims)
	}
	b := d.Best
	if b == nil || b.Program.ID != f.fast.ID {
		t.Fatalf("best = %+v, want #%d", b, f.fast.ID)
	}
	if !strings.Contains(b.Source, "STEPS = 180") || b.ReferenceSource != refSrc {
		t.Errorf("sources: best %q, reference %q", b.Source, b.ReferenceSource)
	}
	if len(b.Sections) != 1 || len(b.TopOps) != 1 || b.TopOps[0].Ops[0].Name != "aten::mm" || len(b.Curve) != 1 || len(b.Vals) != 1 {
		t.Errorf("best telemetry: %+v", b)
	}
	if len(b.ReferenceSections) != 2 || len(b.ReferenceCurve) != 1 {
		t.Errorf("reference telemetry: %+v / %+v", b.ReferenceSections, b.ReferenceCurve)
	}

	// The loaded data renders.
	index, err := report.Write(context.Background(), t.TempDir(), d)
	if err != nil {
		t.Fatal(err)
	}
	if index == "" {
		t.Error("no index")
	}
}

// Without a confirmed claim the record is still the reference, whatever
// ranks first by the objective, and the report's best program is the
// reference: what runs best writes.
func TestLoadRecord(t *testing.T) {
	for _, objective := range []string{runs.ObjectiveScore, runs.ObjectiveTime, runs.ObjectiveLoss} {
		f := newFixture(t, objective, 2)
		d, err := LoadReport(context.Background(), f.st, "1")
		if err != nil {
			t.Fatal(err)
		}
		if d.Record == nil || !d.Record.Reference || d.Record.ID != f.ref.ID || d.Record.TrainTimeMs != 20_000 {
			t.Errorf("objective %s: record = %+v, want the reference", objective, d.Record)
		}
		if d.Best == nil || d.Best.Program.ID != f.ref.ID || len(d.Best.Sections) != 2 {
			t.Errorf("objective %s: best = %+v, want the reference with its telemetry", objective, d.Best)
		}
	}
}

// The first meta-prompted iteration is the first iteration of stage meta;
// before the run reaches one, the run's planned start (the engine records
// -1 when it never meta-prompts).
func TestLoadMetaPromptFrom(t *testing.T) {
	for _, c := range []struct {
		name    string
		planned int
		iters   []runs.Stage
		want    int
	}{
		{"reached", 20, []runs.Stage{runs.StageReference, runs.StageTemplate, runs.StageMeta}, 2},
		{"planned", 20, []runs.Stage{runs.StageReference, runs.StageTemplate}, 20},
		{"never", -1, []runs.Stage{runs.StageReference, runs.StageMutate}, -1},
	} {
		var iters []*store.Iteration
		for i, s := range c.iters {
			iters = append(iters, &store.Iteration{Iteration: i, Stage: s})
		}
		if got := metaPromptFrom(&store.Run{MetaStart: c.planned}, iters); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestLoadMissingRun(t *testing.T) {
	f := newFixture(t, runs.ObjectiveScore, 2)
	_, err := LoadReport(context.Background(), f.st, "nope")
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
}
