package evolve

import (
	"context"
	"errors"
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
// evaluation workers are goroutines that report back on channels, bounded
// by llm_concurrency and slots.
func (e *Engine) Run(ctx context.Context) (*Summary, error) {
	if e.ran {
		return nil, errors.New("evolve: Run called twice")
	}
	e.ran = true
	e.sessionStart = time.Now()
	e.activeBase = e.run.ActiveMs
	e.run.Sessions++
	e.run.State, e.run.StopReason, e.run.StopDetail, e.run.FinishedAt = store.RunRunning, "", "", time.Time{}
	if err := e.j.sessionStarted(ctx); err != nil {
		return nil, err
	}
	e.log.Info("evolve: run started", "run", e.run.Name, "id", e.run.ID, "track", e.spec.Name,
		"iteration", e.run.Iterations, "slots", e.slots, "llm_concurrency", e.cfg.LLMConcurrency, "models", e.ens.names)
	if w := e.SeriesWarning(); w != "" {
		e.log.Warn("evolve: " + w)
	}
	for _, r := range e.adopted {
		if r.work.kind == kindFull {
			e.fullStarted++
		}
		e.onEval(ctx, r)
	}
	e.adopted = nil
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	lastPersist := time.Now()
	aborted := false
	for {
		if !aborted {
			e.schedule(ctx)
		}
		e.publish()
		if e.proposing == 0 && e.evaluating == 0 && (aborted || e.idle()) {
			break
		}
		select {
		case r := <-e.propDone:
			e.proposing--
			e.onProposal(ctx, r)
		case r := <-e.evalDone:
			e.evaluating--
			delete(e.running, r.work.child.ID)
			e.onEval(ctx, r)
		case r := <-e.confirmDone:
			e.onConfirm(ctx, r)
		case reason := <-e.drainCh:
			e.stop(StopInterrupted, reason)
		case <-ticker.C:
			if d := e.cfg.Budget.MaxDuration.D(); d > 0 && e.elapsed() >= d {
				e.stop(StopDuration, fmt.Sprintf("the run has been active for %s (budget.max_duration = %s)", e.elapsed().Round(time.Second), d))
			}
			if time.Since(lastPersist) > 10*time.Second {
				lastPersist = time.Now()
				if err := e.j.checkpoint(ctx); err != nil {
					e.fail(err)
				}
			}
		case <-ctx.Done():
			if !aborted {
				aborted = true
				e.abort()
			}
		}
		if aborted {
			continue
		}
		if ctx.Err() != nil {
			aborted = true
			e.abort()
		}
	}
	return e.finish(ctx)
}

// finish records how the session ended.
func (e *Engine) finish(ctx context.Context) (*Summary, error) {
	if e.stopReason == "" {
		// Nothing stopped the run on the way, but a model budget spent by
		// the last calls leaves children queued: that, not the iteration
		// budget, is why it ends, and a resume needs a larger budget.
		e.stopReason, e.stopDetail = e.spendLimit()
	}
	if e.stopReason == "" {
		e.stopReason = StopIterations
		e.stopDetail = fmt.Sprintf("all %d iterations are done (budget.max_iterations = %d)", e.run.Iterations, e.cfg.Budget.MaxIterations)
	}
	e.run.State = store.RunStopped
	if e.fatal != nil {
		e.run.State = store.RunFailed
	}
	e.run.StopReason, e.run.StopDetail, e.run.FinishedAt = e.stopReason, e.stopDetail, time.Now()
	err := e.j.sessionEnded(ctx)
	e.publish()
	e.log.Info("evolve: run stopped", "run", e.run.Name, "reason", e.stopReason, "detail", e.stopDetail)
	sum := &Summary{RunID: e.run.ID, RunName: e.run.Name, StopReason: e.stopReason, StopDetail: e.stopDetail, Status: e.Status()}
	if e.fatal != nil {
		return sum, e.fatal
	}
	return sum, err
}

// stop ends the run cleanly: no new work starts; what runs finishes. The
// first reason given is the one recorded.
func (e *Engine) stop(reason, detail string) {
	if e.stopReason == "" {
		e.stopReason, e.stopDetail = reason, detail
		e.log.Info("evolve: stopping", "reason", reason, "detail", detail)
	}
	e.stopping = true
}

// abort records a cancellation. It outranks a drain already under way
// (Ctrl-C twice): running evaluations were killed, not finished, and the
// record must say so.
func (e *Engine) abort() {
	if e.stopReason == StopInterrupted {
		e.stopReason = ""
	}
	e.stop(StopAborted, "canceled: running evaluations were stopped and their children will be evaluated again on resume")
}

// fail stops the run on an error the engine cannot work around.
func (e *Engine) fail(err error) {
	if e.fatal == nil {
		e.fatal = err
		e.log.Error("evolve: cannot continue", "err", err)
	}
	e.stop(StopError, err.Error())
}

func (e *Engine) elapsed() time.Duration {
	return time.Duration(e.activeBase)*time.Millisecond + time.Since(e.sessionStart)
}

// snapshotRun copies the engine's mutable state into the run row.
func (e *Engine) snapshotRun() {
	e.run.RNG, _ = e.pcg.MarshalBinary()
	e.run.Bandit = e.ens.save()
	e.run.ActiveMs = e.elapsed().Milliseconds()
}
