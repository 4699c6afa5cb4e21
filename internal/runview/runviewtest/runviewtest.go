// Package runviewtest writes searches into a store for the tests and
// benchmarks of their readers (the CLI, the reports, the dashboard): a run
// of any size with members of every kind (the reference, seeds and
// migrants, acceptable, too slow, buggy, duplicate and pending children),
// their attempts, model calls, evaluations with results and telemetry,
// claims and events, written with the transactions the engine's journal
// uses; a bench run; an evaluation of frontier eval.
package runviewtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
)

// Store is what the fixtures write. store.Store is one.
type Store interface {
	PutProgram(ctx context.Context, src []byte, normHash string) (string, error)
	CreateEvaluation(ctx context.Context, e *store.Evaluation) error
	FinishEvaluation(ctx context.Context, e *store.Evaluation, telemetry []byte) error
	CreateRun(ctx context.Context, r *store.Run) error
	RunInTx(ctx context.Context, f func(tx store.RunTx) error) error
	InsertLLMCall(ctx context.Context, c *store.LLMCall) error
	FinishLLMCall(ctx context.Context, c *store.LLMCall) error
	CreateBenchRun(ctx context.Context, r *store.BenchRun) error
	UpdateBenchRun(ctx context.Context, r *store.BenchRun) error
	InsertBenchAttempts(ctx context.Context, as []*store.BenchAttempt) error
	UpdateBenchAttempt(ctx context.Context, a *store.BenchAttempt) error
}

// Options shape a run.
type Options struct {
	Name string
	// Children is the number of proposed children (default 40); they come
	// Branching to an iteration (default 10) over Islands islands
	// (default 4).
	Children, Branching, Islands int
	// Models name the ensemble (default two models).
	Models []string
	// Seed draws every outcome.
	Seed uint64
	// Hostile gives the run, its models and its programs names and text
	// with HTML and script in them.
	Hostile bool
	// Running leaves the run running with its last iteration in flight;
	// otherwise it stopped on its iteration budget.
	Running bool
	// Calls records a model call (prompt and answer) per child; off, only
	// every tenth child has one, which keeps a large run small.
	Calls bool
}

// Hostile is the text a hostile fixture puts into names and programs.
const Hostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`

// Fixture is a run as written.
type Fixture struct {
	Run       *store.Run
	Reference *store.Child
	// Record is the member whose confirmed claim makes it the record;
	// Rejected a faster single timing whose claim was rejected.
	Record, Rejected *store.Child
	Members          []*store.Child
	Models           []string
}

const refSrc = `import torch

LR = 3e-3
STEPS = 200


def main():
    model = torch.nn.Linear(64, 64)
    for step in range(STEPS):
        loss = model(torch.randn(8, 64)).pow(2).mean()
        loss.backward()


if __name__ == "__main__":
    main()
`

// Seed writes a run into st.
func Seed(ctx context.Context, st Store, o Options) (*Fixture, error) {
	if o.Name == "" {
		o.Name = "fixture"
	}
	if o.Children <= 0 {
		o.Children = 40
	}
	if o.Branching <= 0 {
		o.Branching = 10
	}
	if o.Islands <= 0 {
		o.Islands = 4
	}
	if len(o.Models) == 0 {
		o.Models = []string{"model-a", "model-b"}
		if o.Hostile {
			o.Models[1] = "evil" + Hostile
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 7))
	iters := (o.Children + o.Branching - 1) / o.Branching
	name := o.Name
	if o.Hostile {
		name += " " + strings.ReplaceAll(Hostile, "\n", " ")
	}
	var models []store.RunModel
	var weights []map[string]any
	for _, m := range o.Models {
		models = append(models, store.RunModel{Name: m, Kind: "llm", Spec: "openai/" + m, Weight: 1})
		weights = append(weights, map[string]any{"name": m, "weight": 1})
	}
	mj, _ := json.Marshal(models)
	cfg, _ := json.Marshal(map[string]any{"islands": o.Islands, "branching_factor": o.Branching, "archive_size": 20, "top_programs": 3,
		"diverse_programs": 2, "objective": "score", "fast_fixes": 3, "llm_concurrency": 4, "models": weights,
		"migration":      map[string]any{"interval": 2, "count": 1},
		"selection":      map[string]any{"strategy": "power_law"},
		"meta_prompting": map[string]any{"enabled": true, "start_iteration": max(1, iters/2), "probability": 1},
		"budget":         map[string]any{"max_iterations": iters + 5, "max_usd": 0.02 * float64(o.Children) * 1.5, "max_evaluations": o.Children * 2},
		"confirm":        map[string]any{"enabled": true, "pairs": 5}})
	t0 := time.Now().Add(-time.Duration(o.Children) * time.Second)
	run := &store.Run{Name: name, Track: "tiny", TrackHash: "0123abcd", TargetValLoss: 4.0, LossFloor: 3.5, Objective: "score",
		MetaStart: max(1, iters/2), Config: cfg, Models: mj, Seed: o.Seed, StartedAt: t0}
	if err := st.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	f := &Fixture{Run: run, Models: o.Models}
	w := &writer{ctx: ctx, st: st, run: run, rng: rng, hostile: o.Hostile}

	refHash, err := w.program(refSrc)
	if err != nil {
		return nil, err
	}
	refEval, err := w.evaluate(refHash, "acceptable", 3.99, 20_000, 100, false)
	if err != nil {
		return nil, err
	}
	ref := &store.Child{RunID: run.ID, Origin: runs.OriginReference, Stage: runs.StageReference, State: runs.Done, ProgramHash: refHash,
		Verdict: runs.Acceptable, ValLoss: 3.99, TrainTimeMs: 20_000, StepAvgMs: 100, Score: 399, EvaluationID: refEval,
		Description: "the track's reference"}
	err = st.RunInTx(ctx, func(tx store.RunTx) error {
		if err := tx.InsertIteration(&store.Iteration{RunID: run.ID, Stage: runs.StageReference}); err != nil {
			return err
		}
		if err := tx.InsertChild(ref); err != nil {
			return err
		}
		for i := 1; i < o.Islands; i++ {
			seed := &store.Child{RunID: run.ID, Island: i, Origin: runs.OriginSeed, SourceID: ref.ID, State: runs.Done, ProgramHash: refHash,
				Verdict: runs.Acceptable, ValLoss: 3.99, TrainTimeMs: 20_000, StepAvgMs: 100, Score: 399}
			if err := tx.InsertChild(seed); err != nil {
				return err
			}
			f.Members = append(f.Members, seed)
		}
		_, err := tx.AddEvent(&store.RunEvent{RunID: run.ID, Kind: "session_start", Detail: json.RawMessage(`{}`)})
		return err
	})
	if err != nil {
		return nil, err
	}
	f.Reference = ref
	f.Members = append([]*store.Child{ref}, f.Members...)
	byIsland := make([][]*store.Child, o.Islands)
	byIsland[0] = []*store.Child{ref}
	for i := 1; i < o.Islands; i++ {
		byIsland[i] = []*store.Child{f.Members[i]}
	}

	made := 0
	for it := 1; made < o.Children; it++ {
		island := (it - 1) % o.Islands
		pool := byIsland[island]
		parent := pool[rng.IntN(len(pool))]
		stage := runs.StageTemplate
		if it >= run.MetaStart {
			stage = runs.StageMeta
		}
		last := o.Running && made+o.Branching >= o.Children
		var kids []*store.Child
		for slot := 0; slot < o.Branching && made < o.Children; slot++ {
			c, err := w.child(it, slot, island, parent, stage, o.Models[made%len(o.Models)], last, o.Calls || made%10 == 0)
			if err != nil {
				return nil, err
			}
			made++
			kids = append(kids, c)
			if c.Verdict.Valid() {
				byIsland[island] = append(byIsland[island], c)
			}
			if c.Verdict == runs.Acceptable && (f.Rejected == nil || c.TrainTimeMs < f.Rejected.TrainTimeMs) {
				f.Rejected = c
			}
		}
		err := st.RunInTx(ctx, func(tx store.RunTx) error {
			if err := tx.InsertIteration(&store.Iteration{RunID: run.ID, Iteration: it, Island: island, ParentID: parent.ID, Stage: stage}); err != nil {
				return err
			}
			for _, c := range kids {
				if err := tx.InsertChild(c); err != nil {
					return err
				}
				for _, a := range w.attempts[c] {
					a.ChildID = c.ID
					if err := tx.InsertAttempt(a); err != nil {
						return err
					}
				}
			}
			if !last {
				if err := tx.FinishIteration(run.ID, it); err != nil {
					return err
				}
			}
			if it%2 == 0 && o.Islands > 1 {
				d, _ := json.Marshal(map[string]any{"moves": []map[string]int{{"from": island, "to": (island + 1) % o.Islands}}})
				if _, err := tx.AddEvent(&store.RunEvent{RunID: run.ID, Kind: "migration", Key: fmt.Sprint(it), Iteration: it, Detail: d}); err != nil {
					return err
				}
			}
			run.Iterations = it
			run.ActiveMs = int64(it) * 60_000
			run.Sessions = 1
			return tx.UpdateRun(run)
		})
		if err != nil {
			return nil, err
		}
		for _, c := range kids {
			if err := w.calls(c); err != nil {
				return nil, err
			}
		}
		f.Members = append(f.Members, kids...)
	}
	if err := w.claims(f); err != nil {
		return nil, err
	}
	err = st.RunInTx(ctx, func(tx store.RunTx) error {
		var archive []int64
		for _, c := range f.Members {
			if c.Verdict == runs.Acceptable && !c.Origin.IsCopy() && len(archive) < 20 {
				archive = append(archive, c.ID)
			}
		}
		if err := tx.SetArchive(run.ID, archive); err != nil {
			return err
		}
		if !o.Running {
			run.State, run.StopReason, run.StopDetail = store.RunStopped, "iterations", fmt.Sprintf("all %d iterations are done", run.Iterations)
			run.FinishedAt = time.Now()
		}
		return tx.UpdateRun(run)
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// writer writes a run's members.
type writer struct {
	ctx      context.Context
	st       Store
	run      *store.Run
	rng      *rand.Rand
	hostile  bool
	n        int
	attempts map[*store.Child][]*store.Attempt
	asked    map[*store.Child]string
}

func (w *writer) program(src string) (string, error) { return w.st.PutProgram(w.ctx, []byte(src), "") }

// evaluate records a finished full evaluation (fast: a fast check) with
// its result document and telemetry.
func (w *writer) evaluate(hash string, verdict runs.Verdict, loss, ms, stepAvg float64, fast bool) (int64, error) {
	e := &store.Evaluation{ProgramHash: hash, Track: "tiny", TrackHash: "0123abcd", FastOnly: fast}
	if err := w.st.CreateEvaluation(w.ctx, e); err != nil {
		return 0, err
	}
	res := Result(verdict, loss, ms, stepAvg, w.hostile)
	res.EvaluationID = e.ID
	res.Program.Hash = hash
	b, err := json.Marshal(res)
	if err != nil {
		return 0, err
	}
	e.State, e.Verdict, e.Reason, e.ValLoss, e.TrainTimeMs, e.StepAvgMs = store.StateDone, string(verdict), res.Reason, loss, ms, stepAvg
	e.FingerprintClass, e.Result, e.WallMs = res.FingerprintClass, b, ms*1.2
	var tel []byte
	if !fast && verdict.Valid() {
		tel = Telemetry(ms, stepAvg, loss)
	}
	if err := w.st.FinishEvaluation(w.ctx, e, tel); err != nil {
		return 0, err
	}
	return e.ID, nil
}

// child draws one child's outcome and writes its program and evaluations
// (the member itself is inserted with its iteration).
func (w *writer) child(it, slot, island int, parent *store.Child, stage runs.Stage, model string, pending, call bool) (*store.Child, error) {
	w.n++
	c := &store.Child{RunID: w.run.ID, Iteration: it, Slot: slot, Island: island, ParentID: parent.ID, Origin: runs.OriginLLM,
		Model: model, Stage: stage, Seed: w.rng.Uint64() >> 1, State: runs.Done, InputTokens: 1500 + int64(w.rng.IntN(2000)),
		OutputTokens: 300 + int64(w.rng.IntN(900))}
	c.CostUSD = float64(c.InputTokens)*2e-6 + float64(c.OutputTokens)*8e-6
	c.Description = fmt.Sprintf("change %d: tune the learning rate and the warmup", w.n)
	if stage == runs.StageMeta {
		c.Idea = "Fuse the optimizer step and overlap it with the backward pass."
	}
	src := strings.Replace(refSrc, "LR = 3e-3", fmt.Sprintf("LR = %.6fe-3  # child %d", 2+w.rng.Float64()*2, w.n), 1)
	if w.hostile {
		c.Description = "hostile " + Hostile
		c.Idea = "</textarea>" + Hostile
		src += "\n# " + Hostile + "\nprint('</script><script>window.__pwned=3</script>')\n"
	}
	if pending {
		c.State = runs.Evaluating
		hash, err := w.program(src)
		c.ProgramHash = hash
		return c, err
	}
	// Outcomes roughly as a search sees them: a third acceptable, some too
	// slow to learn, a quarter buggy, a few duplicates and failed edits.
	x := w.rng.Float64()
	var err error
	w.attempts = mapOr(w.attempts)
	first := &store.Attempt{Attempt: 0, Kind: "propose", Edit: `{"blocks":1}`}
	switch {
	case x < 0.05:
		c.Verdict, c.Reason, c.FixAttempts = runs.ApplyFailed, "the answer's SEARCH block did not match the program", 3
		c.Error = "SEARCH block 1 not found in the program\nclosest match at line 4"
		first.Error = c.Error
		w.attempts[c] = []*store.Attempt{first}
		return c, nil
	case x < 0.09:
		c.Verdict, c.SourceID = runs.Duplicate, parent.ID
		c.ProgramHash = parent.ProgramHash
		w.attempts[c] = []*store.Attempt{first}
		return c, nil
	}
	if c.ProgramHash, err = w.program(src); err != nil {
		return nil, err
	}
	first.ProgramHash = c.ProgramHash
	if c.FastEvaluationID, err = w.evaluate(c.ProgramHash, runs.FastOK, 0, 0, 0, true); err != nil {
		return nil, err
	}
	first.FastEvaluationID, first.FastVerdict = c.FastEvaluationID, runs.FastOK
	w.attempts[c] = []*store.Attempt{first}
	switch {
	case x < 0.3:
		c.Verdict, c.Reason = runs.Error, "the program raised RuntimeError at step 12"
		c.Error = "Traceback (most recent call last):\n  File \"train.py\", line 9, in main\nRuntimeError: shape mismatch"
		c.FixAttempts = 1 + w.rng.IntN(3)
		w.attempts[c] = append(w.attempts[c], &store.Attempt{Attempt: 1, Kind: "fix_run", ProgramHash: c.ProgramHash, Error: c.Error,
			FastEvaluationID: c.FastEvaluationID, FastVerdict: runs.Error, FastReason: c.Reason})
		c.EvaluationID = c.FastEvaluationID
		return c, nil
	case x < 0.55:
		c.Verdict = runs.LossTooHigh
		c.ValLoss = 4.0 + w.rng.Float64()*0.3
		c.Reason = fmt.Sprintf("val loss %.4f is above the target 4.0", c.ValLoss)
	default:
		c.Verdict = runs.Acceptable
		c.ValLoss = 3.9 + w.rng.Float64()*0.099
		c.Reason = "val loss under the target"
	}
	// Later iterations are faster on the whole, with noise.
	c.TrainTimeMs = 20_000 * (1 - 0.25*float64(it)/float64(it+20)) * (0.9 + 0.2*w.rng.Float64())
	c.StepAvgMs = c.TrainTimeMs / 200
	c.Score = c.StepAvgMs * c.ValLoss
	c.Summary = "forward 45%, optimizer 25%, data 10%"
	if c.EvaluationID, err = w.evaluate(c.ProgramHash, c.Verdict, c.ValLoss, c.TrainTimeMs, c.StepAvgMs, false); err != nil {
		return nil, err
	}
	if call {
		w.asked = mapOrS(w.asked)
		w.asked[c] = src
	}
	return c, nil
}

func mapOr(m map[*store.Child][]*store.Attempt) map[*store.Child][]*store.Attempt {
	if m == nil {
		return map[*store.Child][]*store.Attempt{}
	}
	return m
}

func mapOrS(m map[*store.Child]string) map[*store.Child]string {
	if m == nil {
		return map[*store.Child]string{}
	}
	return m
}

// calls records the model call that proposed c, for the children drawn
// to have one.
func (w *writer) calls(c *store.Child) error {
	src, ok := w.asked[c]
	if !ok {
		return nil
	}
	req, _ := json.Marshal(llm.Request{Model: "openai/" + c.Model, System: "You improve PyTorch training programs.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Make this program train faster:\n\n" + refSrc}}})
	call := &store.LLMCall{RunID: w.run.ID, ChildID: c.ID, Purpose: "template", Model: c.Model, State: store.CallPending, Request: string(req)}
	if err := w.st.InsertLLMCall(w.ctx, call); err != nil {
		return err
	}
	call.State, call.Answer, call.FinishReason = store.CallDone, "<<<<<<< SEARCH\nLR = 3e-3\n=======\n"+src[:40]+"\n>>>>>>> REPLACE", "stop"
	call.InputTokens, call.OutputTokens, call.CostUSD, call.LatencyMs = c.InputTokens, c.OutputTokens, c.CostUSD, 2100
	return w.st.FinishLLMCall(w.ctx, call)
}

// claims records a rejected series for the fastest single timing and a
// confirmed one for a slower acceptable child, which becomes the record.
func (w *writer) claims(f *Fixture) error {
	if f.Rejected == nil {
		return nil
	}
	for _, c := range f.Members {
		if c.Verdict == runs.Acceptable && c.ID != f.Rejected.ID && c.State == runs.Done && !c.Origin.IsCopy() &&
			c.Origin != runs.OriginReference && (f.Record == nil || c.TrainTimeMs < f.Record.TrainTimeMs) {
			f.Record = c
		}
	}
	return w.st.RunInTx(w.ctx, func(tx store.RunTx) error {
		if err := tx.InsertConfirmation(&store.Confirmation{RunID: w.run.ID, Claim: runs.Claim{ChildID: f.Rejected.ID, BaselineID: f.Reference.ID,
			Method: runs.MethodSeries, State: runs.ClaimRejected, Source: "engine", Pairs: 5, Alpha: 0.01, SingleMs: f.Rejected.TrainTimeMs,
			TimeMs: 19_900, BaselineMs: 20_000, TimeSD: 300, BaselineSD: 250, Speedup: 0.005, SpeedupLo: -0.02, SpeedupHi: 0.03, TimeP: 0.3,
			LossP: 0.001, NoiseCV: math.NaN(), LossSD: 0.002, LossMean: 3.98, Reason: "the time is not significantly under the baseline's"}}); err != nil {
			return err
		}
		if f.Record == nil {
			return nil
		}
		ms := f.Record.TrainTimeMs * 1.01
		return tx.InsertConfirmation(&store.Confirmation{RunID: w.run.ID, Claim: runs.Claim{ChildID: f.Record.ID, BaselineID: f.Reference.ID,
			Method: runs.MethodSeries, State: runs.ClaimConfirmed, Source: "engine", Pairs: 5, Alpha: 0.01, SingleMs: f.Record.TrainTimeMs,
			TimeMs: ms, BaselineMs: 20_050, TimeSD: 200, BaselineSD: 250, Speedup: runs.Speedup(20_050, ms), SpeedupLo: runs.Speedup(20_050, ms) - 0.02,
			SpeedupHi: runs.Speedup(20_050, ms) + 0.02, TimeP: 1e-5, LossP: 0.004, NoiseCV: math.NaN(), LossSD: 0.002, LossMean: 3.99}})
	})
}

// Result is an evaluator's result document of a program with verdict.
func Result(verdict runs.Verdict, loss, ms, stepAvg float64, hostile bool) *eval.Result {
	r := &eval.Result{Schema: eval.Schema, Verdict: eval.Verdict(verdict), Verification: "full", FingerprintClass: "cpu/2/torch2.1",
		Track:       eval.TrackInfo{Name: "tiny", Hash: "0123abcd", Target: 4.0, LossFloor: 3.5, Device: "cpu"},
		Program:     eval.ProgramInfo{Name: "train.py", Bytes: len(refSrc)},
		Environment: eval.Environment{Frontier: "test", Python: "3.11.2", Torch: "2.1.0", Threads: 2, Device: "cpu", Sandbox: "bwrap"}}
	switch verdict {
	case runs.Acceptable:
		r.Reason = fmt.Sprintf("val loss %.4f reached the target 4.0 in %.1f s of training", loss, ms/1000)
	case runs.LossTooHigh:
		r.Reason = fmt.Sprintf("val loss %.4f is above the target 4.0", loss)
	case runs.FastOK:
		r.Reason = "the fast check passed: the program ran its first steps and validated"
	case runs.Invalid:
		r.Rule, r.Reason = "no-eval-tampering", "the program wrote to the validation data"
	default:
		r.Reason = "the program raised RuntimeError at step 12"
		r.Traceback = "Traceback (most recent call last):\n  File \"train.py\", line 9, in main\nRuntimeError: shape mismatch"
	}
	if hostile {
		r.Reason += " " + Hostile
	}
	if verdict.Valid() {
		r.Metrics = eval.Metrics{ValLoss: loss, TrainTimeMs: ms, StepAvgMs: stepAvg, Steps: 200, Tokens: 102_400, TokensPerS: 102_400 / (ms / 1000),
			PeakRSSMB: 812, WallMs: ms * 1.2, Score: stepAvg * loss, GapToFloor: loss - 3.5}
		r.Sections = []harness.Section{{Name: "forward", TotalMs: ms * 0.45, AvgMs: ms * 0.45 / 200, Pct: 45, Calls: 200},
			{Name: "optimizer", TotalMs: ms * 0.25, AvgMs: ms * 0.25 / 200, Pct: 25, Calls: 200}}
		times := []float64{ms, ms * 1.02, ms * 0.99}
		losses := []float64{loss, loss + 0.003, loss - 0.002}
		r.Repeats = &eval.Repeats{N: 3, ValLoss: stats.Summarize(losses, 0.95), TrainTimeMs: stats.Summarize(times, 0.95),
			Record: false, RecordReason: "not a record claim: no baseline was given"}
		for i := range times {
			r.Repeats.Runs = append(r.Repeats.Runs, eval.RepeatRun{Seed: i, Verdict: eval.Verdict(verdict), ValLoss: losses[i], TrainTimeMs: times[i], StepAvgMs: times[i] / 200})
		}
	}
	r.Warnings = []string{"the program set torch.backends.cudnn.benchmark; it is ignored on cpu"}
	return r
}

// Telemetry is a full run's telemetry: a loss curve, validations,
// sections, the top operators and the peak memory.
func Telemetry(ms, stepAvg, loss float64) []byte {
	var b strings.Builder
	for step := 20; step <= 200; step += 20 {
		tl := 5.5 - 1.4*float64(step)/200
		fmt.Fprintf(&b, `{"event":"step","t_ms":%d,"step":%d,"train_time_ms":%.1f,"step_avg_ms":%.2f,"tokens":%d,"tokens_per_s":5120,"train_loss":%.4f}`+"\n",
			step, step, float64(step)*stepAvg, stepAvg, step*512, tl)
	}
	fmt.Fprintf(&b, `{"event":"val","t_ms":300,"step":100,"val_loss":%.4f,"tokens":4096,"seq_len":64,"ms":30}`+"\n", loss+0.4)
	fmt.Fprintf(&b, `{"event":"val","t_ms":400,"step":200,"val_loss":%.4f,"tokens":4096,"seq_len":64,"ms":30,"final":true}`+"\n", loss)
	fmt.Fprintf(&b, `{"event":"sections","t_ms":401,"sections":[{"name":"forward","total_ms":%.1f,"avg_ms":%.2f,"pct":45,"calls":200},{"name":"optimizer","total_ms":%.1f,"avg_ms":%.2f,"pct":25,"calls":200},{"name":"data","total_ms":%.1f,"avg_ms":%.2f,"pct":10,"calls":200}]}`+"\n",
		ms*0.45, ms*0.45/200, ms*0.25, ms*0.25/200, ms*0.1, ms*0.1/200)
	b.WriteString(`{"event":"top_ops","t_ms":402,"kind":"cpu","steps":[10,14],"ops":[{"name":"aten::mm","total_ms":50,"calls":400},{"name":"aten::add_","total_ms":12,"calls":800}]}` + "\n")
	b.WriteString(`{"event":"memory","t_ms":403,"peak_rss_mb":812.5}` + "\n")
	return []byte(b.String())
}

// SeedBench writes a bench run of three tasks with three seeds each: two
// tasks finished, the third's last attempt still running.
func SeedBench(ctx context.Context, st Store, name string, hostile bool) (*store.BenchRun, error) {
	model := "model-a"
	if hostile {
		model += Hostile
	}
	br := &store.BenchRun{Name: name, Suite: "mini", SuiteHash: "5eed5eed5eed", Scaffold: "flat", Model: model, Hints: "1+2",
		Config: json.RawMessage(`{"nodes":20}`)}
	if err := st.CreateBenchRun(ctx, br); err != nil {
		return nil, err
	}
	var as []*store.BenchAttempt
	for _, task := range []string{"record-1", "record-2", "record-3"} {
		for seed := range 3 {
			as = append(as, &store.BenchAttempt{RunID: br.ID, Position: len(as), Task: task, Seed: seed})
		}
	}
	if err := st.InsertBenchAttempts(ctx, as); err != nil {
		return nil, err
	}
	fsrs := []float64{0.42, 0.31, 0.55, 0, 0.12, 0.05, 0.7, 0.64}
	for i, a := range as {
		a.State, a.StartMs, a.GoalMs, a.TimeSource, a.Nodes = store.AttemptDone, 1000, 800, "published", 20
		if i == len(as)-1 {
			a.State = store.AttemptRunning
		} else {
			a.FSR = fsrs[i]
			a.BestMs, a.Acceptable, a.Buggy = 1000-200*a.FSR, 9, 6
			a.CostUSD, a.Tokens = 0.31, 41_000
		}
		if err := st.UpdateBenchAttempt(ctx, a); err != nil {
			return nil, err
		}
	}
	br.State, br.ActiveMs, br.Sessions = store.RunRunning, 3_600_000, 1
	return br, st.UpdateBenchRun(ctx, br)
}

// SeedEvaluation writes an evaluation of frontier eval: a program outside
// any run, with its result document and telemetry.
func SeedEvaluation(ctx context.Context, st Store, verdict runs.Verdict, hostile bool) (*store.Evaluation, error) {
	src := refSrc + "# evaluated on its own\n"
	if hostile {
		src += "# " + Hostile + "\n"
	}
	w := &writer{ctx: ctx, st: st, hostile: hostile}
	hash, err := w.program(src)
	if err != nil {
		return nil, err
	}
	loss, ms := 3.97, 18_500.0
	if !verdict.Valid() {
		loss, ms = 0, 0
	}
	id, err := w.evaluate(hash, verdict, loss, ms, ms/200, false)
	if err != nil {
		return nil, err
	}
	return &store.Evaluation{ID: id, ProgramHash: hash}, nil
}

// Propose writes a new child of iteration it of f's run as the engine
// does when its proposal comes back: queued, then with its program and
// waiting for its fast check. It returns the child.
func (f *Fixture) Propose(ctx context.Context, st Store, it int, desc string) (*store.Child, error) {
	hash, err := st.PutProgram(ctx, []byte(refSrc+"# "+desc+"\n"), "")
	if err != nil {
		return nil, err
	}
	c := &store.Child{RunID: f.Run.ID, Iteration: it, Origin: runs.OriginLLM, Model: f.Models[0], Stage: runs.StageTemplate,
		State: runs.Queued, ParentID: f.Reference.ID}
	err = st.RunInTx(ctx, func(tx store.RunTx) error { return tx.InsertChild(c) })
	if err != nil {
		return nil, err
	}
	c.State, c.ProgramHash, c.Description = runs.Fast, hash, desc
	return c, st.RunInTx(ctx, func(tx store.RunTx) error { return tx.UpdateChild(c) })
}

// Settle gives child c its final verdict, as the engine does when its
// evaluation ends.
func (f *Fixture) Settle(ctx context.Context, st Store, c *store.Child, v runs.Verdict, ms float64) error {
	c.State, c.Verdict = runs.Done, v
	if v.Valid() {
		c.ValLoss, c.TrainTimeMs, c.StepAvgMs = 3.95, ms, ms/200
		c.Score = c.StepAvgMs * c.ValLoss
	}
	return st.RunInTx(ctx, func(tx store.RunTx) error { return tx.UpdateChild(c) })
}
