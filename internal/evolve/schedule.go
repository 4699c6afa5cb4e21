package evolve

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// scheduler holds what work waits and what runs: the open iterations, the
// queues of children waiting for a proposal (fixes first), a fast check
// or a full run, the proposals and evaluations in flight with their
// bounds (llm_concurrency, slots, prefetch), and the counters the budgets
// and the status read. Engine.schedule decides what starts; the scheduler
// keeps the books.
type scheduler struct {
	slots, prefetch, concurrency, maxOpen int

	iters     map[int]*iterState // the open iterations
	completed int                // iterations finished, the reference's not counted
	// noMore: the iteration budget is reached; no iteration is sampled.
	noMore bool

	proposals, fast, full []*job
	proposing, evaluating int
	running               map[int64]RunningEval
	// fullStarted counts the search's full evaluations started, the
	// reference's included; seriesRuns the runs of confirmation series,
	// apart. budget.max_evaluations counts both.
	fullStarted, seriesRuns int
	// fullWall sums the wall time of the full evaluations this session
	// saw end (fullRuns of them), to tell whether a series fits the
	// duration budget.
	fullWall time.Duration
	fullRuns int
	// adopted holds results of evaluations that finished before a restart
	// but were not recorded; Run takes them first.
	adopted []*evalResult
}

// iterState is an open iteration.
type iterState struct {
	it      *store.Iteration
	parent  *store.Child
	top     []*store.Child
	diverse []*store.Child
	pending int
}

// job is a child waiting for a proposal, a fix or an evaluation.
type job struct {
	child *store.Child
	kind  string
}

// Attempt and job kinds.
const (
	kindReference = "reference"
	kindPropose   = "propose"
	kindFixApply  = "fix_apply"
	kindFixRun    = "fix_run"
	kindFast      = "fast"
	kindFull      = "full"
)

func newScheduler(cfg Config) *scheduler {
	return &scheduler{slots: cfg.Slots, prefetch: cfg.Prefetch, concurrency: cfg.LLMConcurrency, maxOpen: cfg.MaxOpenIterations,
		iters: map[int]*iterState{}, running: map[int64]RunningEval{}}
}

// propose queues a child for its first proposal.
func (s *scheduler) propose(c *store.Child) {
	s.proposals = append(s.proposals, &job{child: c, kind: kindPropose})
}

// fix queues a child for a fix: after earlier fixes but ahead of first
// proposals, since a child in its fix loop is closer to an evaluation.
func (s *scheduler) fix(c *store.Child, kind string) {
	i := 0
	for i < len(s.proposals) && s.proposals[i].kind != kindPropose {
		i++
	}
	s.proposals = slices.Insert(s.proposals, i, &job{child: c, kind: kind})
}

// retry puts a child whose proposal could not happen (the budget) first.
func (s *scheduler) retry(c *store.Child, kind string) {
	s.proposals = slices.Insert(s.proposals, 0, &job{child: c, kind: kind})
}

// check queues a child with a program for its fast check.
func (s *scheduler) check(c *store.Child) { s.fast = append(s.fast, &job{child: c, kind: kindFast}) }

// measure queues a child that passed its fast check for its full run.
func (s *scheduler) measure(c *store.Child) { s.full = append(s.full, &job{child: c, kind: kindFull}) }

// fixesFirst orders the waiting proposals as the running engine would:
// fixes, then first proposals.
func (s *scheduler) fixesFirst() {
	var fixes, firsts []*job
	for _, j := range s.proposals {
		if j.kind == kindPropose {
			firsts = append(firsts, j)
		} else {
			fixes = append(fixes, j)
		}
	}
	s.proposals = append(fixes, firsts...)
}

func pop(q *[]*job) *job {
	if len(*q) == 0 {
		return nil
	}
	j := (*q)[0]
	*q = (*q)[1:]
	return j
}

// slotFree reports whether an evaluation may start.
func (s *scheduler) slotFree() bool { return s.evaluating < s.slots }

// mayPropose reports whether a proposal may start: one waits, a model
// call is free, and fewer children wait for an evaluation than prefetch.
func (s *scheduler) mayPropose() bool {
	return s.proposing < s.concurrency && len(s.proposals) > 0 && s.proposing+len(s.fast)+len(s.full) < s.prefetch
}

// queued is how many children wait for a proposal, a fix or an
// evaluation.
func (s *scheduler) queued() int { return len(s.proposals) + len(s.fast) + len(s.full) }

// report shows the scheduler's counters and what runs in the status.
func (s *scheduler) report(st *Status) {
	st.IterationsDone, st.SlotsBusy, st.Slots, st.ProposalsInFlight = s.completed, s.evaluating, s.slots, s.proposing
	st.Queued, st.Evaluations, st.SeriesRuns = s.queued(), s.fullStarted, s.seriesRuns
	for _, r := range s.running {
		st.Running = append(st.Running, r)
	}
}

// evaluations counts what budget.max_evaluations counts.
func (s *scheduler) evaluations() int { return s.fullStarted + s.seriesRuns }

// proposalStarted and proposalDone count the proposals in flight.
func (s *scheduler) proposalStarted() { s.proposing++ }
func (s *scheduler) proposalDone()    { s.proposing-- }

// evalStarted counts an evaluation that took a slot.
func (s *scheduler) evalStarted(c *store.Child, kind string, at time.Time) {
	s.evaluating++
	if kind == kindFull {
		s.fullStarted++
	}
	s.running[c.ID] = RunningEval{ChildID: c.ID, Kind: kind, Since: at}
}

// evalDone frees the slot of child id's evaluation.
func (s *scheduler) evalDone(id int64) {
	s.evaluating--
	delete(s.running, id)
}

// fullEnded counts the wall time of a full evaluation that ended.
func (s *scheduler) fullEnded(started time.Time) {
	if !started.IsZero() {
		s.fullWall += time.Since(started)
		s.fullRuns++
	}
}

// seriesStarted and seriesDone count a confirmation series, which takes a
// slot for its 2 x pairs runs.
func (s *scheduler) seriesStarted(pairs int) {
	s.seriesRuns += 2 * pairs
	s.evaluating++
}
func (s *scheduler) seriesDone() { s.evaluating-- }

// seriesEstimate is how long a series of pairs runs take here: 2 x pairs
// full runs at the mean wall time of this session's full runs (0 before
// the first).
func (s *scheduler) seriesEstimate(pairs int) time.Duration {
	if s.fullRuns == 0 {
		return 0
	}
	return time.Duration(2*pairs) * (s.fullWall / time.Duration(s.fullRuns))
}

// idle reports whether nothing waits (claims for a series included) and
// no iteration may be sampled: the run is over once nothing is in flight
// either.
func (s *scheduler) idle(claimsQueued, canSample bool) bool {
	return len(s.proposals) == 0 && len(s.fast) == 0 && len(s.full) == 0 && !claimsQueued && !canSample
}

// inFlight reports whether a proposal or an evaluation runs.
func (s *scheduler) inFlight() bool { return s.proposing > 0 || s.evaluating > 0 }

// canSample reports whether a new iteration may be sampled now (after
// iterations of at most maxIterations, 0 none): when the open iterations
// have no proposal left to make and fewer children wait for an
// evaluation than there are slots, so that slots are about to run dry.
// Sampling later than that would leave slots idle while a model answers;
// sampling earlier would draw parents from an older state.
func (s *scheduler) canSample(iterations, maxIterations int) bool {
	if s.noMore || len(s.proposals) > 0 || s.proposing+len(s.fast)+len(s.full) >= s.slots {
		return false
	}
	if maxIterations > 0 && iterations >= maxIterations {
		s.noMore = true
		return false
	}
	open := 0
	for n := range s.iters {
		if n > 0 {
			open++
		}
	}
	return open < s.maxOpen
}

// sampledLast records that the iteration budget is reached: no iteration
// is sampled after the one just sampled.
func (s *scheduler) sampledLast() { s.noMore = true }

// restoreSeries counts the runs of the series a resumed run finished
// before, which the evaluation budget counts.
func (s *scheduler) restoreSeries(n int) { s.seriesRuns = n }

// open records an open iteration.
func (s *scheduler) open(st *iterState) { s.iters[st.it.Iteration] = st }

// iteration is open iteration n, or nil.
func (s *scheduler) iteration(n int) *iterState { return s.iters[n] }

// settle counts a child of iteration n that settled; it reports whether
// the iteration is done.
func (s *scheduler) settle(n int) bool {
	it := s.iters[n]
	if it == nil {
		return false
	}
	it.pending--
	return it.pending <= 0
}

// completedIterations counts the search's iterations that finished.
func (s *scheduler) completedIterations() int { return s.completed }

// close forgets a done iteration, and counts it when it is one of the
// search's (n > 0); it returns the number of completed iterations.
func (s *scheduler) close(n int) int {
	delete(s.iters, n)
	if n > 0 {
		s.completed++
	}
	return s.completed
}

// adopt holds the result of an evaluation that finished before a restart
// but was not recorded, for Run to take first.
func (s *scheduler) adopt(r *evalResult) { s.adopted = append(s.adopted, r) }

// takeAdopted returns the adopted results, counting the full evaluations
// among them as started.
func (s *scheduler) takeAdopted() []*evalResult {
	out := s.adopted
	s.adopted = nil
	for _, r := range out {
		if r.work.kind == kindFull {
			s.fullStarted++
		}
	}
	return out
}

// restore opens the iterations the run left open (closing with
// closeIteration those whose last child finished unrecorded), counts the
// full evaluations of settled members, and queues every child that was
// waiting or in flight, as the running engine would: a child whose
// evaluation finished unrecorded is taken by adopt instead (last is a
// child's newest attempt). It returns how many children it queued.
func (s *scheduler) restore(rec *recorded, pop *population, last func(id int64) *store.Attempt,
	adopt func(c *store.Child, kind string) (bool, error), closeIteration func(n int) error) (int, error) {
	for _, c := range rec.kids {
		if c.State == runs.Done && !c.Origin.IsCopy() && c.EvaluationID != 0 && c.EvaluationID != c.FastEvaluationID {
			s.fullStarted++
		}
	}
	for _, it := range rec.iterations {
		if !it.DoneAt.IsZero() {
			if it.Iteration > 0 {
				s.completed++
			}
			continue
		}
		st := &iterState{it: it, parent: pop.member(it.ParentID), pending: rec.pending[it.Iteration]}
		for _, id := range it.TopIDs {
			if c := pop.member(id); c != nil {
				st.top = append(st.top, c)
			}
		}
		for _, id := range it.DiverseIDs {
			if c := pop.member(id); c != nil {
				st.diverse = append(st.diverse, c)
			}
		}
		if st.pending == 0 {
			// Its last child finished but the process died before the
			// iteration was marked: mark it now.
			if err := closeIteration(it.Iteration); err != nil {
				return 0, err
			}
			if it.Iteration > 0 {
				s.completed++
			}
			continue
		}
		s.iters[it.Iteration] = st
	}
	requeued := 0
	for _, c := range rec.kids {
		switch c.State {
		case runs.Done:
			continue
		case runs.Queued:
			s.propose(c)
		case runs.Fix:
			kind := kindFixRun
			if a := last(c.ID); a != nil && a.ProgramHash == "" {
				kind = kindFixApply
			}
			s.proposals = append(s.proposals, &job{child: c, kind: kind})
		case runs.Fast, runs.Evaluating:
			kind := kindFast
			if c.State == runs.Evaluating {
				kind = kindFull
			}
			adopted, err := adopt(c, kind)
			if err != nil {
				return 0, err
			}
			if adopted {
				continue
			}
			if kind == kindFast {
				s.check(c)
			} else {
				c.State = runs.Ready
				s.measure(c)
			}
		case runs.Ready:
			s.measure(c)
		default:
			return 0, fmt.Errorf("child %d is in an unknown state %q", c.ID, c.State)
		}
		requeued++
	}
	s.fixesFirst()
	return requeued, nil
}

// schedule starts whatever work can start: evaluations first (fast checks
// before confirmation series before full runs, since they unblock more
// work), then proposals up to the prefetch depth, then new iterations when
// the open ones have no proposals left to make.
func (e *Engine) schedule(ctx context.Context) {
	s := e.sched
	for !e.sess.stopped() {
		progress := false
		for s.slotFree() && !e.sess.stopped() {
			if j := pop(&s.fast); j != nil {
				e.startEval(ctx, j)
				progress = true
				continue
			}
			// A candidate record's series comes before full runs: the
			// record is what the search is for, and prompts quote it.
			if e.claims.waiting() {
				progress = true
				if e.startConfirm(ctx) {
					continue
				}
			}
			if len(s.full) == 0 {
				break
			}
			if max := e.cfg.Budget.MaxEvaluations; max > 0 && s.evaluations() >= max {
				e.sess.stop(StopEvaluations, fmt.Sprintf("%d full evaluations and %d confirmation series runs were started (budget.max_evaluations = %d counts both)", s.fullStarted, s.seriesRuns, max))
				break
			}
			e.startEval(ctx, pop(&s.full))
			progress = true
		}
		for s.mayPropose() && !e.sess.stopped() {
			if reason, detail := e.spend.limit(); reason != "" {
				e.sess.stop(reason, detail)
				break
			}
			e.startProposal(ctx, pop(&s.proposals))
			progress = true
		}
		if e.canSample() {
			if err := e.sampleIteration(ctx); err != nil {
				e.sess.fail(err)
			}
			progress = true
		}
		if !progress {
			return
		}
	}
}

// canSample reports whether a new iteration may be sampled now (see
// scheduler.canSample), once the reference has its verdict.
func (e *Engine) canSample() bool {
	return !e.sess.stopped() && e.pop.referenceDone() && e.sched.canSample(e.run.Iterations, e.cfg.Budget.MaxIterations)
}

// idle reports whether nothing can start: the run is over once nothing is
// in flight either.
func (e *Engine) idle() bool {
	return e.sess.stopped() || e.sched.idle(e.claims.queued(), e.canSample())
}

// sampleIteration samples a new iteration (sampler.iteration), records it
// with its children and the generator's state, and queues the children
// for proposals.
func (e *Engine) sampleIteration(ctx context.Context) error {
	n := e.run.Iterations + 1
	st, kids, err := e.draw.iteration(e.run.ID, n, e.pop)
	if err != nil {
		return err
	}
	e.run.Iterations = n
	if err := e.j.iterationSampled(ctx, st.it, kids); err != nil {
		e.run.Iterations--
		return fmt.Errorf("record iteration %d: %w", n, err)
	}
	e.pop.expand(st.parent.ID)
	e.sched.open(st)
	for _, c := range kids {
		e.pop.add(c)
		e.sched.propose(c)
	}
	e.log.Info("evolve: iteration", "iteration", n, "island", st.it.Island, "parent", st.parent.ID, "stage", st.it.Stage,
		"top", st.it.TopIDs, "diverse", st.it.DiverseIDs)
	if e.cfg.Budget.MaxIterations > 0 && n >= e.cfg.Budget.MaxIterations {
		e.sched.sampledLast()
	}
	return nil
}
