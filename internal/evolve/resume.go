package evolve

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Load returns a run and the configuration it runs with, for a caller that
// must open the run's models (and check its track) before resuming it.
func Load(ctx context.Context, st Store, ref string) (*store.Run, Config, error) {
	run, err := st.Run(ctx, ref)
	if err != nil {
		return nil, Config{}, err
	}
	var cfg Config
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return nil, Config{}, fmt.Errorf("run %s: its stored configuration is unreadable: %w", run.Name, err)
	}
	return run, cfg, nil
}

// RunModels returns the ensemble a run was started with.
func RunModels(run *store.Run) ([]ModelsRecord, error) { return run.ModelList() }

// Overrides are settings a resumed run may change; zero fields keep the
// run's own.
type Overrides struct {
	Budget         BudgetConfig
	Slots          int
	LLMConcurrency int
}

// Resume continues a stopped or killed run with the state it recorded:
// the population, islands and archive, the open iterations, the
// generator's and the bandit's state. Budgets count totals from the run's
// start, so a run that stopped on a budget continues only if the budget is
// raised. Children that were waiting or in flight are queued again: a
// child whose evaluation was running is evaluated again (its evaluation
// row is marked interrupted), and model calls that were in flight are
// marked lost. Nothing that finished is redone.
func Resume(ctx context.Context, opts Options, run *store.Run, ov Overrides) (*Engine, error) {
	var cfg Config
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return nil, fmt.Errorf("run %s: its stored configuration is unreadable: %w", run.Name, err)
	}
	cfg.Budget = cfg.Budget.With(ov.Budget)
	if ov.Slots > 0 {
		cfg.Slots = ov.Slots
	}
	if ov.LLMConcurrency > 0 {
		cfg.LLMConcurrency = ov.LLMConcurrency
	}
	specHash, err := eval.SpecHash(opts.Track)
	if err != nil {
		return nil, err
	}
	if opts.Track.Name != run.Track {
		return nil, fmt.Errorf("run %s is on track %s, not %s", run.Name, run.Track, opts.Track.Name)
	}
	// A run started before the hash left the track's folder out stored a
	// hash of the spec read from run.TrackDir.
	if !eval.SpecMatches(opts.Track, run.TrackHash, run.TrackDir, opts.Track.Dir) {
		return nil, fmt.Errorf("track %s changed since run %s started (its spec hash was %.12s, now %.12s): programs measured under the old spec would be compared with new ones; start a new run instead",
			run.Track, run.Name, run.TrackHash, specHash)
	}
	e, err := newEngine(opts, cfg)
	if err != nil {
		return nil, err
	}
	e.run, e.j.run = run, run
	e.cfg.Seed = run.Seed
	if cfgJSON, err := json.Marshal(e.cfg); err == nil {
		run.Config = cfgJSON
	}
	run.Objective, run.MetaStart = e.cfg.Objective, e.cfg.plannedMetaStart(opts.Models)
	if dir := trackDir(opts.Track); dir != "" {
		run.TrackDir = dir // where the track is now, if it moved
	}
	e.pcg = rand.NewPCG(run.Seed, run.Seed^0x9e3779b97f4a7c15)
	if len(run.RNG) > 0 {
		if err := e.pcg.UnmarshalBinary(run.RNG); err != nil {
			return nil, fmt.Errorf("run %s: restore the random generator: %w", run.Name, err)
		}
	}
	e.rng = rand.New(e.pcg)
	if opts.Budget != nil {
		e.useBudget(opts.Budget, false)
	} else {
		b, err := NewBudget(ctx, e.st, run.ID, e.cfg.Budget, llm.BudgetConfig{})
		if err != nil {
			return nil, err
		}
		e.useBudget(b, true)
	}
	if err := e.ens.load(run.Bandit); err != nil {
		return nil, fmt.Errorf("run %s: restore the bandit: %w", run.Name, err)
	}
	lost, err := e.j.callsLost(ctx)
	if err != nil {
		return nil, err
	}
	if lost > 0 {
		e.log.Warn("evolve: model calls were in flight when the run last ended; their answers are lost", "calls", lost)
	}
	if err := e.restore(ctx); err != nil {
		return nil, fmt.Errorf("resume run %s: %w", run.Name, err)
	}
	return e, nil
}

// restore rebuilds the in-memory state from the store and queues what was
// waiting or in flight.
func (e *Engine) restore(ctx context.Context) error {
	runID := e.run.ID
	kids, err := e.st.Children(ctx, runID)
	if err != nil {
		return err
	}
	attempts, err := e.st.Attempts(ctx, runID)
	if err != nil {
		return err
	}
	for _, a := range attempts {
		e.lastAttempt[a.ChildID] = a
		if a.ProgramHash != "" && a.FastVerdict != "" && a.FastVerdict != runs.FastOK {
			e.lastChecked[a.ChildID] = a
		}
	}
	iters, err := e.st.Iterations(ctx, runID)
	if err != nil {
		return err
	}
	e.spentUSD, e.spentTokens, _, err = e.st.RunSpend(ctx, runID)
	if err != nil {
		return err
	}
	for _, c := range kids {
		e.pop.add(c)
		if c.Origin == runs.OriginReference {
			e.reference = c
		}
	}
	// The dedup index: every program a child of the run had, in the order
	// the run saw them (attempts in creation order), duplicates' earlier
	// programs included: a program that failed its fast check and was then
	// fixed, or whose fix came back to a known program, was evaluated, and
	// while running the engine would not evaluate it again.
	byID := map[int64]*store.Child{}
	for _, c := range kids {
		byID[c.ID] = c
	}
	norms := map[string]string{}
	byCreation := slices.Clone(attempts)
	slices.SortFunc(byCreation, func(a, b *store.Attempt) int { return cmp.Compare(a.ID, b.ID) })
	for _, a := range byCreation {
		c := byID[a.ChildID]
		if a.ProgramHash == "" || c == nil || c.Origin.IsCopy() {
			continue
		}
		norm, ok := norms[a.ProgramHash]
		if !ok {
			src, err := e.st.Program(ctx, a.ProgramHash)
			if err != nil {
				return fmt.Errorf("program of attempt %d of child %d: %w", a.Attempt, a.ChildID, err)
			}
			norm = edit.NormalizedHash(src)
			norms[a.ProgramHash] = norm
		}
		e.pop.claim(norm, a.ChildID)
	}
	for _, c := range kids {
		if !c.Origin.IsCopy() && c.NormHash != "" {
			e.pop.claim(c.NormHash, c.ID) // a child whose attempts were not recorded (an older run)
		}
		if c.State == runs.Done {
			e.admit(c)
			if !c.Origin.IsCopy() && c.EvaluationID != 0 && c.EvaluationID != c.FastEvaluationID {
				e.fullStarted++
			}
		}
	}
	if e.reference == nil {
		return errors.New("the run has no reference program")
	}
	pending := map[int]int{}
	for _, c := range kids {
		if c.State != runs.Done {
			pending[c.Iteration]++
		}
	}
	for _, it := range iters {
		if !it.DoneAt.IsZero() {
			if it.Iteration > 0 {
				e.completed++
			}
			continue
		}
		st := &iterState{it: it, parent: e.pop.members[it.ParentID], pending: pending[it.Iteration]}
		for _, id := range it.TopIDs {
			if c := e.pop.members[id]; c != nil {
				st.top = append(st.top, c)
			}
		}
		for _, id := range it.DiverseIDs {
			if c := e.pop.members[id]; c != nil {
				st.diverse = append(st.diverse, c)
			}
		}
		if st.pending == 0 {
			// Its last child finished but the process died before the
			// iteration was marked: mark it now.
			if err := e.j.iterationClosed(ctx, it.Iteration); err != nil {
				return err
			}
			if it.Iteration > 0 {
				e.completed++
			}
			continue
		}
		e.iters[it.Iteration] = st
		if st.parent != nil {
			e.pop.expanded[st.parent.ID]++
		}
	}
	// Parents of closed iterations count as expanded too.
	for _, it := range iters {
		if !it.DoneAt.IsZero() && it.ParentID != 0 {
			e.pop.expanded[it.ParentID]++
		}
	}
	var requeued int
	for _, c := range kids {
		switch c.State {
		case runs.Done:
			continue
		case runs.Queued:
			e.proposalQ = append(e.proposalQ, &job{child: c, kind: kindPropose})
		case runs.Fix:
			kind := kindFixRun
			if a := e.lastAttempt[c.ID]; a != nil && a.ProgramHash == "" {
				kind = kindFixApply
			}
			e.proposalQ = append(e.proposalQ, &job{child: c, kind: kind})
		case runs.Fast, runs.Evaluating:
			kind := kindFast
			if c.State == runs.Evaluating {
				kind = kindFull
			}
			adopted, err := e.adopt(ctx, c, kind)
			if err != nil {
				return err
			}
			if adopted {
				continue
			}
			if kind == kindFast {
				e.fastQ = append(e.fastQ, &job{child: c, kind: kindFast})
			} else {
				c.State = runs.Ready
				e.fullQ = append(e.fullQ, &job{child: c, kind: kindFull})
			}
		case runs.Ready:
			e.fullQ = append(e.fullQ, &job{child: c, kind: kindFull})
		default:
			return fmt.Errorf("child %d is in an unknown state %q", c.ID, c.State)
		}
		requeued++
	}
	// Fixes first, as while running.
	var fixes, firsts []*job
	for _, j := range e.proposalQ {
		if j.kind == kindPropose {
			firsts = append(firsts, j)
		} else {
			fixes = append(fixes, j)
		}
	}
	e.proposalQ = append(fixes, firsts...)
	if e.reference.State == runs.Done && !e.reference.Verdict.Valid() {
		return fmt.Errorf("the reference program failed (%s: %s); there is nothing to evolve from", e.reference.Verdict, e.reference.Reason)
	}
	if err := e.j.archiveRebuilt(ctx, e.pop.archive); err != nil {
		return err
	}
	if err := e.restoreClaims(ctx); err != nil {
		return err
	}
	e.log.Info("evolve: resuming", "run", e.run.Name, "iterations", e.run.Iterations, "completed", e.completed,
		"members", len(kids), "requeued", requeued, "spent_usd", e.spentUSD)
	return nil
}

// restoreClaims reads the run's claims back: series that were queued or
// cut off run again (what the cut-off one had started is marked
// interrupted), finished ones count against the evaluation budget, and a
// fastest child that should have a claim and has none (a run recorded
// before claims existed) gets one.
func (e *Engine) restoreClaims(ctx context.Context) error {
	claims, err := e.st.Confirmations(ctx, e.run.ID)
	if err != nil {
		return err
	}
	e.claims = claims
	var requeued []*store.Confirmation
	for _, cl := range claims {
		switch {
		case cl.State == runs.ClaimRunning:
			for _, id := range []int64{cl.ChildID, cl.BaselineID} {
				if c := e.pop.members[id]; c != nil {
					if err := e.interruptAndClean(ctx, c.ProgramHash, cl.CreatedAt.Add(-time.Second)); err != nil {
						return err
					}
				}
			}
			cl.State = runs.ClaimQueued
			requeued = append(requeued, cl)
			fallthrough
		case cl.State == runs.ClaimQueued:
			e.confirmQ = append(e.confirmQ, cl)
		case cl.Method == runs.MethodSeries:
			e.seriesRuns += len(cl.Evaluations)
		}
	}
	if len(requeued) > 0 {
		if err := e.j.claimsChanged(ctx, requeued...); err != nil {
			return err
		}
	}
	e.openNext(ctx)
	return e.fatal
}

// interruptAndClean marks the evaluations of a program still running since
// as interrupted (the process that ran them is gone) and removes the run
// folders they left.
func (e *Engine) interruptAndClean(ctx context.Context, programHash string, since time.Time) error {
	evs, err := e.st.RunningEvaluations(ctx, programHash, since)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		for _, dir := range leftFolders(e.opts.RunsDir, ev) {
			if err := os.RemoveAll(dir); err != nil {
				e.log.Warn("evolve: could not remove the folder of an interrupted evaluation", "dir", dir, "err", err)
				continue
			}
			e.log.Info("evolve: removed the folder of an evaluation the last session left", "evaluation", ev.ID, "dir", dir)
		}
	}
	return e.j.evaluationsInterrupted(ctx, programHash, since)
}

// leftFolders are the run folders an evaluation that never finished left
// under runsDir: the one it recorded, else those named as the evaluator
// names them (<start time>-<program hash prefix>-s<seed>-<random>) and
// created within seconds of its start. Another process's evaluation of the
// same program and seed started in the same seconds would match too; that
// is the price of the evaluator not recording its folder before it starts
// (it records it only when asked to keep it).
func leftFolders(runsDir string, ev *store.Evaluation) []string {
	if ev.RunDir != "" {
		return []string{ev.RunDir}
	}
	if runsDir == "" || len(ev.ProgramHash) < 12 {
		return nil
	}
	var out []string
	for d := -1; d <= 5; d++ {
		stamp := ev.StartedAt.Add(time.Duration(d) * time.Second).Format("20060102-150405")
		m, _ := filepath.Glob(filepath.Join(runsDir, fmt.Sprintf("%s-%s-s%d-*", stamp, ev.ProgramHash[:12], ev.Seed)))
		out = append(out, m...)
	}
	return out
}

// adopt looks for an evaluation of c's program that finished after c
// entered its state but before the process that ran it could record the
// result (it was killed in between). If there is one, its result is
// queued for the coordinator as if the evaluation had just returned, and
// nothing is evaluated again. Evaluations of the program that were still
// running are marked interrupted.
func (e *Engine) adopt(ctx context.Context, c *store.Child, kind string) (bool, error) {
	since := c.UpdatedAt.Add(-time.Second)
	if err := e.interruptAndClean(ctx, c.ProgramHash, since); err != nil {
		return false, err
	}
	row, err := e.st.LatestEvaluation(ctx, c.ProgramHash, kind == kindFast, since)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var res eval.Result
	if err := json.Unmarshal(row.Result, &res); err != nil || res.Verdict == "" {
		return false, nil // an unreadable result: evaluate again
	}
	res.EvaluationID = row.ID
	if err := e.j.evaluationAdopted(ctx, c, row.ID, kind); err != nil {
		return false, err
	}
	e.adopted = append(e.adopted, &evalResult{work: &evalWork{child: *c, kind: kind, started: row.StartedAt}, res: &res})
	e.log.Info("evolve: adopting an evaluation that finished before the last session ended", "child", c.ID, "evaluation", row.ID, "kind", kind)
	return true, nil
}

// NewBudget returns the model budget of a run: the evolve budget's dollar
// and token limits where set (budget, with the overrides of the command
// line merged by BudgetConfig.With), else llm.budget's, with what the run has
// spent so far. Pass it to the model clients so that every call of the run
// draws from it.
func NewBudget(ctx context.Context, st Store, runID int64, budget BudgetConfig, llmBudget llm.BudgetConfig) (*llm.Budget, error) {
	limits := llmBudget
	if budget.MaxUSD > 0 {
		limits.MaxUSD = budget.MaxUSD
	}
	if budget.MaxTokens > 0 {
		limits.MaxTokens = budget.MaxTokens
	}
	var spent llm.Spend
	if runID != 0 {
		usd, tokens, calls, err := st.RunSpend(ctx, runID)
		if err != nil {
			return nil, err
		}
		spent = llm.Spend{USD: usd, Tokens: tokens, Calls: calls}
	}
	return llm.NewBudget(limits, spent), nil
}

// ParseConfig decodes an evolve section on its own (strict YAML), for
// tools and tests; frontier.yaml is read by the config package.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b), yaml.Strict(), yaml.DisallowUnknownField())
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("evolve config:\n%s", yaml.FormatError(err, false, true))
	}
	return c, c.Validate()
}
