package evolve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/search"
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
	e.run = run
	e.j.records(run)
	e.cfg.Seed = run.Seed
	if cfgJSON, err := json.Marshal(e.cfg); err == nil {
		run.Config = cfgJSON
	}
	run.Objective, run.MetaStart = e.cfg.Objective, e.cfg.plannedMetaStart(opts.Models)
	if dir := trackDir(opts.Track); dir != "" {
		run.TrackDir = dir // where the track is now, if it moved
	}
	if err := e.draw.restore(run); err != nil {
		return nil, err
	}
	if err := e.useBudget(ctx, run.ID); err != nil {
		return nil, err
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

// recorded is what a run recorded, read back to resume it.
type recorded struct {
	kids       []*store.Child
	attempts   []*store.Attempt
	iterations []*store.Iteration
	// pending counts, per iteration, its children that are not done.
	pending map[int]int
}

// readRecorded reads run runID back from st.
func readRecorded(ctx context.Context, st Store, runID int64) (*recorded, error) {
	var rec recorded
	var err error
	if rec.kids, err = st.Children(ctx, runID); err != nil {
		return nil, err
	}
	if rec.attempts, err = st.Attempts(ctx, runID); err != nil {
		return nil, err
	}
	if rec.iterations, err = st.Iterations(ctx, runID); err != nil {
		return nil, err
	}
	rec.pending = map[int]int{}
	for _, c := range rec.kids {
		if c.State != runs.Done {
			rec.pending[c.Iteration]++
		}
	}
	return &rec, nil
}

// restore rebuilds the in-memory state from the store and queues what was
// waiting or in flight: each part restores its own from what the run
// recorded.
func (e *Engine) restore(ctx context.Context) error {
	st := e.opts.Store
	rec, err := readRecorded(ctx, st, e.run.ID)
	if err != nil {
		return err
	}
	e.seen.restore(rec.attempts)
	if err := e.spend.restore(ctx, st, e.run.ID); err != nil {
		return err
	}
	for _, c := range rec.kids {
		e.pop.add(c)
	}
	if err := e.pop.restoreIndex(ctx, rec, e.work.program); err != nil {
		return err
	}
	for _, c := range rec.kids {
		if c.State == runs.Done {
			e.admit(c)
		}
	}
	ref := e.pop.reference()
	if ref == nil {
		return errors.New("the run has no reference program")
	}
	requeued, err := e.sched.restore(rec, e.pop, e.seen.last,
		func(c *store.Child, kind string) (bool, error) { return e.adopt(ctx, c, kind) },
		func(n int) error { return e.j.iterationClosed(ctx, n) })
	if err != nil {
		return err
	}
	e.pop.restoreExpanded(rec.iterations, e.sched.iteration)
	if ref.State == runs.Done && !ref.Verdict.Valid() {
		return fmt.Errorf("the reference program failed (%s: %s); there is nothing to evolve from", ref.Verdict, ref.Reason)
	}
	if err := e.j.archiveRebuilt(ctx, e.pop.elite()); err != nil {
		return err
	}
	if err := e.restoreClaims(ctx); err != nil {
		return err
	}
	e.log.Info("evolve: resuming", "run", e.run.Name, "iterations", e.run.Iterations, "completed", e.sched.completedIterations(),
		"members", len(rec.kids), "requeued", requeued, "spent_usd", e.spend.spentUSD())
	return nil
}

// restoreClaims reads the run's claims back: series that were queued or
// cut off run again (what the cut-off one had started is marked
// interrupted), finished ones count against the evaluation budget, and a
// fastest child that should have a claim and has none (a run recorded
// before claims existed) gets one.
func (e *Engine) restoreClaims(ctx context.Context) error {
	claims, err := e.opts.Store.Confirmations(ctx, e.run.ID)
	if err != nil {
		return err
	}
	cutOff := e.claims.reset(claims, e.pop.settledPrograms())
	for _, cl := range cutOff {
		for _, id := range []int64{cl.ChildID, cl.BaselineID} {
			if c := e.pop.member(id); c != nil {
				if err := e.interruptAndClean(ctx, c.ProgramHash, cl.CreatedAt.Add(-time.Second)); err != nil {
					return err
				}
			}
		}
	}
	e.sched.restoreSeries(e.claims.seriesRuns())
	if len(cutOff) > 0 {
		if err := e.j.claimsChanged(ctx, cutOff...); err != nil {
			return err
		}
	}
	e.openNext(ctx)
	return e.sess.err()
}

// interruptAndClean marks the evaluations of a program still running since
// as interrupted (the process that ran them is gone) and removes the run
// folders they left.
func (e *Engine) interruptAndClean(ctx context.Context, programHash string, since time.Time) error {
	evs, err := e.opts.Store.RunningEvaluations(ctx, programHash, since)
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
// result (it was killed in between; search.Adopt). If there is one, its
// result is queued for the coordinator as if the evaluation had just
// returned, and nothing is evaluated again. Evaluations of the program
// that were still running are marked interrupted.
func (e *Engine) adopt(ctx context.Context, c *store.Child, kind string) (bool, error) {
	since := c.UpdatedAt.Add(-time.Second)
	if err := e.interruptAndClean(ctx, c.ProgramHash, since); err != nil {
		return false, err
	}
	res, row, err := search.Adopt(ctx, e.opts.Store, "", c.ProgramHash, kind == kindFast, since)
	if err != nil || res == nil {
		return false, err
	}
	if err := e.j.evaluationAdopted(ctx, c, row.ID, kind); err != nil {
		return false, err
	}
	e.sched.adopt(&evalResult{work: &evalWork{child: *c, kind: kind, started: row.StartedAt}, res: res})
	e.log.Info("evolve: adopting an evaluation that finished before the last session ended", "child", c.ID, "evaluation", row.ID, "kind", kind)
	return true, nil
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
