package evolve

import (
	"context"
	"fmt"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
)

// Run runs the search until a budget is reached, Drain is called or ctx
// is canceled, and records how it ended. Canceling ctx aborts: running
// evaluations are killed and their children are re-queued when the run
// resumes. The returned error is set only when the engine could not go on
// (a store failure, an evaluation that could not happen); budgets and
// interruptions are normal ends, reported in the Summary.
//
// The coordinator (this goroutine) owns every piece of state; proposal and
// evaluation workers are goroutines that report back on one channel,
// bounded by llm_concurrency and slots.
func (e *Engine) Run(ctx context.Context) (*Summary, error) {
	if err := e.sess.begin(e.run.ActiveMs); err != nil {
		return nil, err
	}
	e.run.Sessions++
	e.run.State, e.run.StopReason, e.run.StopDetail, e.run.FinishedAt = store.RunRunning, "", "", time.Time{}
	if err := e.j.sessionStarted(ctx); err != nil {
		return nil, err
	}
	e.log.Info("evolve: run started", "run", e.run.Name, "id", e.run.ID, "track", e.opts.Track.Name,
		"iteration", e.run.Iterations, "slots", e.cfg.Slots, "llm_concurrency", e.cfg.LLMConcurrency, "models", e.draw.names())
	if w := e.SeriesWarning(); w != "" {
		e.log.Warn("evolve: " + w)
	}
	for _, r := range e.sched.takeAdopted() {
		e.onEval(ctx, r)
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	lastPersist := time.Now()
	aborted := false
	drains := e.sess.drainRequested()
	for {
		if !aborted {
			e.schedule(ctx)
		}
		e.publish()
		if !e.sched.inFlight() && (aborted || e.idle()) {
			break
		}
		select {
		case r := <-e.work.results():
			r.settle(ctx, e)
		case <-drains:
			drains = nil // read once: the first reason stands
			e.sess.drained()
		case <-ticker.C:
			if d := e.cfg.Budget.MaxDuration.D(); d > 0 && e.sess.elapsed() >= d {
				e.sess.stop(StopDuration, fmt.Sprintf("the run has been active for %s (budget.max_duration = %s)", e.sess.elapsed().Round(time.Second), d))
			}
			if time.Since(lastPersist) > 10*time.Second {
				lastPersist = time.Now()
				if err := e.j.checkpoint(ctx); err != nil {
					e.sess.fail(err)
				}
			}
		case <-ctx.Done():
			if !aborted {
				aborted = true
				e.sess.abort()
			}
		}
		if aborted {
			continue
		}
		if ctx.Err() != nil {
			aborted = true
			e.sess.abort()
		}
	}
	return e.finish(ctx)
}

// finish records how the session ended.
func (e *Engine) finish(ctx context.Context) (*Summary, error) {
	if !e.sess.hasReason() {
		// Nothing stopped the run on the way, but a model budget spent by
		// the last calls leaves children queued: that, not the iteration
		// budget, is why it ends, and a resume needs a larger budget.
		if reason, detail := e.spend.limit(); reason != "" {
			e.sess.end(reason, detail)
		}
	}
	reason, detail := e.sess.end(StopIterations,
		fmt.Sprintf("all %d iterations are done (budget.max_iterations = %d)", e.run.Iterations, e.cfg.Budget.MaxIterations))
	e.run.State = store.RunStopped
	if e.sess.err() != nil {
		e.run.State = store.RunFailed
	}
	e.run.StopReason, e.run.StopDetail, e.run.FinishedAt = reason, detail, time.Now()
	err := e.j.sessionEnded(ctx)
	e.publish()
	e.log.Info("evolve: run stopped", "run", e.run.Name, "reason", reason, "detail", detail)
	sum := &Summary{RunID: e.run.ID, RunName: e.run.Name, StopReason: reason, StopDetail: detail, Status: e.Status()}
	if err := e.sess.err(); err != nil {
		return sum, err
	}
	return sum, err
}

// snapshotRun copies the engine's mutable state into the run row.
func (e *Engine) snapshotRun() {
	e.run.RNG, e.run.Bandit = e.draw.save()
	e.run.ActiveMs = e.sess.elapsed().Milliseconds()
}
