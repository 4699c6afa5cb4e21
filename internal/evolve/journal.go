package evolve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Store is what the engine reads and writes. store.Store is one; every
// implementation passes the contract suite of internal/store/storetest.
// Writes go through the journal only.
type Store interface {
	PutProgram(ctx context.Context, src []byte, normHash string) (string, error)
	Program(ctx context.Context, hash string) ([]byte, error)

	CreateRun(ctx context.Context, r *store.Run) error
	Run(ctx context.Context, ref string) (*store.Run, error)
	RunInTx(ctx context.Context, f func(tx store.RunTx) error) error
	AddRunEvent(ctx context.Context, e *store.RunEvent) error
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Iterations(ctx context.Context, runID int64) ([]*store.Iteration, error)
	Attempts(ctx context.Context, runID int64) ([]*store.Attempt, error)

	InsertLLMCall(ctx context.Context, c *store.LLMCall) error
	FinishLLMCall(ctx context.Context, c *store.LLMCall) error
	MarkLostCalls(ctx context.Context, runID int64) (int64, error)
	LLMCallText(ctx context.Context, id int64) (request, answer string, err error)
	RunSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error)

	InterruptEvaluations(ctx context.Context, programHash string, since time.Time) error
	RunningEvaluations(ctx context.Context, programHash string, since time.Time) ([]*store.Evaluation, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
	LatestEvaluation(ctx context.Context, programHash string, fastOnly bool, since time.Time) (*store.Evaluation, error)
	Evaluations(ctx context.Context, f store.Filter) ([]*store.Evaluation, error)
}

var _ Store = store.Store(nil)

// journal owns every write of a run to the store: one method per
// transition of the run's state machine, each one transaction, written
// before the engine acts on the decision. A resumed run rebuilds its state
// from exactly what these methods wrote (see restore), and its own writes
// while resuming go through them too.
//
// The coordinator goroutine calls every method except program,
// callStarted and callFinished, which the proposal workers call.
type journal struct {
	st  Store
	run *store.Run
	// snapshot copies the engine's mutable state (the generator, the
	// bandit, the active time) into run before the run row is written.
	snapshot func()
}

// records makes run, a run read back to resume, the one it writes.
func (j *journal) records(run *store.Run) { j.run = run }

// begin records a new run with its reference program as the first member
// (iteration 0, in its fast check, with the attempt that holds the
// program). An empty name becomes run-<id>.
func (j *journal) begin(ctx context.Context, run *store.Run, name string, ref *store.Child, a *store.Attempt) error {
	if err := j.st.CreateRun(ctx, run); err != nil {
		return err
	}
	j.run = run
	ref.RunID = run.ID
	err := j.st.RunInTx(ctx, func(tx store.RunTx) error {
		if name == "" {
			run.Name = fmt.Sprintf("run-%d", run.ID)
		}
		if err := tx.InsertIteration(&store.Iteration{RunID: run.ID, Iteration: 0, Island: 0, Stage: runs.StageReference}); err != nil {
			return err
		}
		if err := tx.InsertChild(ref); err != nil {
			return err
		}
		a.ChildID = ref.ID
		if err := tx.InsertAttempt(a); err != nil {
			return err
		}
		return tx.UpdateRun(run)
	})
	if err != nil {
		return fmt.Errorf("record run: %w", err)
	}
	return nil
}

// program stores a program (once) and returns its hash.
func (j *journal) program(ctx context.Context, src []byte, norm string) (string, error) {
	return j.st.PutProgram(ctx, src, norm)
}

// runState writes the run row (with the generator, the bandit and the
// active time) and an optional event.
func (j *journal) runState(ctx context.Context, ev *store.RunEvent) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error {
		if ev != nil {
			if _, err := tx.AddEvent(ev); err != nil {
				return err
			}
		}
		j.snapshot()
		return tx.UpdateRun(j.run)
	})
}

// sessionStarted records a session's start.
func (j *journal) sessionStarted(ctx context.Context) error {
	return j.runState(ctx, &store.RunEvent{RunID: j.run.ID, Kind: "session_start", Iteration: j.run.Iterations})
}

// checkpoint records the run row: its active time, generator and bandit.
func (j *journal) checkpoint(ctx context.Context) error { return j.runState(ctx, nil) }

// sessionEnded records how a session ended (the run row holds its state
// and stop reason).
func (j *journal) sessionEnded(ctx context.Context) error {
	detail, _ := json.Marshal(map[string]string{"reason": j.run.StopReason, "detail": j.run.StopDetail})
	return j.runState(ctx, &store.RunEvent{RunID: j.run.ID, Kind: "session_end", Iteration: j.run.Iterations, Detail: detail})
}

// iterationSampled records a sampled iteration with its children (which
// get their ids), the run's generator state, and the switch to
// meta-prompting the first time an iteration uses it.
func (j *journal) iterationSampled(ctx context.Context, it *store.Iteration, kids []*store.Child) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error {
		if err := tx.InsertIteration(it); err != nil {
			return err
		}
		for _, c := range kids {
			if err := tx.InsertChild(c); err != nil {
				return err
			}
		}
		if it.Stage == runs.StageMeta {
			if _, err := tx.AddEvent(&store.RunEvent{RunID: j.run.ID, Kind: "meta_prompting", Key: "start", Iteration: it.Iteration}); err != nil {
				return err
			}
		}
		j.snapshot()
		return tx.UpdateRun(j.run)
	})
}

// childChanged records a child's new state and, when a is set, the
// attempt that led to it.
func (j *journal) childChanged(ctx context.Context, c *store.Child, a *store.Attempt) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error {
		if a != nil {
			if err := tx.InsertAttempt(a); err != nil {
				return err
			}
		}
		return tx.UpdateChild(c)
	})
}

// attemptRecorded records an attempt of a child whose own row the next
// transition writes (childSettled).
func (j *journal) attemptRecorded(ctx context.Context, a *store.Attempt) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error { return tx.InsertAttempt(a) })
}

// fastChecked records a fast check's outcome on the attempt it checked (a
// may be nil or not yet stored) and the child's new state.
func (j *journal) fastChecked(ctx context.Context, c *store.Child, a *store.Attempt) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error {
		if a != nil && a.ID != 0 {
			if err := tx.SetAttemptFast(a.ID, a.FastEvaluationID, a.FastVerdict, a.FastReason); err != nil {
				return err
			}
		}
		return tx.UpdateChild(c)
	})
}

// settlement is everything a child's final verdict changes, recorded in
// one transaction with it.
type settlement struct {
	// migration, when set, is the migration event the iteration's end
	// triggers; copies holds its migrants (and the reference's seed copies).
	migration *store.RunEvent
	copies    []*store.Child
	// iterationDone closes the child's iteration.
	iterationDone bool
	// settleCopies is called with the copies once they have ids, and
	// returns the archive when the copies (or the child) changed it.
	settleCopies func(copies []*store.Child) (archive []int64, changed bool)
	// claim, when set, is the child's claim to be a record (it gets its
	// id).
	claim *store.Confirmation
}

// childSettled records a child's final verdict with everything it changes:
// the copies it causes (seeds of the other islands, migrants), the
// migration event, its iteration's end, the archive, and the run row (the
// bandit's state). A migration recorded before a restart is not recorded
// again, and neither are its copies.
func (j *journal) childSettled(ctx context.Context, c *store.Child, iteration int, s settlement) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error {
		if err := tx.UpdateChild(c); err != nil {
			return err
		}
		copies := s.copies
		if s.migration != nil {
			added, err := tx.AddEvent(s.migration)
			if err != nil {
				return err
			}
			if !added {
				copies = slices.DeleteFunc(copies, func(x *store.Child) bool { return x.Origin == runs.OriginMigrant })
			}
		}
		for _, cp := range copies {
			if err := tx.InsertChild(cp); err != nil {
				return err
			}
		}
		if s.iterationDone {
			if err := tx.FinishIteration(j.run.ID, iteration); err != nil {
				return err
			}
		}
		if s.claim != nil {
			if err := tx.InsertConfirmation(s.claim); err != nil {
				return err
			}
		}
		if archive, changed := s.settleCopies(copies); changed {
			if err := tx.SetArchive(j.run.ID, archive); err != nil {
				return err
			}
		}
		j.snapshot()
		return tx.UpdateRun(j.run)
	})
}

// claimsChanged records claims: new ones (no id yet) and the state and
// numbers of known ones, in one transaction.
func (j *journal) claimsChanged(ctx context.Context, claims ...*store.Confirmation) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error {
		for _, c := range claims {
			var err error
			if c.ID == 0 {
				err = tx.InsertConfirmation(c)
			} else {
				err = tx.UpdateConfirmation(c)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// evaluationsInterrupted marks the evaluations of a program that were
// running when they were stopped (since started) as interrupted.
func (j *journal) evaluationsInterrupted(ctx context.Context, programHash string, since time.Time) error {
	return j.st.InterruptEvaluations(ctx, programHash, since)
}

// callStarted records a model call before it is sent.
func (j *journal) callStarted(ctx context.Context, call *store.LLMCall) error {
	call.RunID = j.run.ID
	return j.st.InsertLLMCall(ctx, call)
}

// callFinished records a call's answer or failure, even while the run is
// being aborted.
func (j *journal) callFinished(ctx context.Context, call *store.LLMCall) error {
	return j.st.FinishLLMCall(context.WithoutCancel(ctx), call)
}

// callsLost marks the calls that were in flight when the last session
// ended as lost, and returns how many there were.
func (j *journal) callsLost(ctx context.Context) (int64, error) {
	return j.st.MarkLostCalls(ctx, j.run.ID)
}

// iterationClosed closes an iteration whose last child finished before the
// process that ran it could close it.
func (j *journal) iterationClosed(ctx context.Context, iteration int) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error { return tx.FinishIteration(j.run.ID, iteration) })
}

// archiveRebuilt records the archive as a resumed run rebuilt it.
func (j *journal) archiveRebuilt(ctx context.Context, ids []int64) error {
	return j.st.RunInTx(ctx, func(tx store.RunTx) error { return tx.SetArchive(j.run.ID, ids) })
}

// ideaFellBack records that a meta-prompted child got no idea from its
// model and was asked with a templated prompt instead (its row, written
// with the attempt, holds the new stage and template).
func (j *journal) ideaFellBack(ctx context.Context, c *store.Child, reason string) error {
	detail, _ := json.Marshal(map[string]any{"child": c.ID, "template": c.Template, "reason": reason})
	return j.st.AddRunEvent(ctx, &store.RunEvent{RunID: j.run.ID, Kind: "idea_fallback", Key: fmt.Sprint(c.ID),
		Iteration: c.Iteration, Detail: detail})
}

// evaluationAdopted records that a resumed run takes the result of an
// evaluation that finished before the last session could record it.
func (j *journal) evaluationAdopted(ctx context.Context, c *store.Child, evaluationID int64, kind string) error {
	detail, _ := json.Marshal(map[string]any{"child": c.ID, "evaluation": evaluationID, "kind": kind})
	return j.st.AddRunEvent(ctx, &store.RunEvent{RunID: j.run.ID, Kind: "adopted_evaluation", Key: fmt.Sprint(evaluationID),
		Iteration: c.Iteration, Detail: detail})
}
