package evolve

import (
	"fmt"
	"slices"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// claimBook holds the run's candidate records with their evidence, in the
// order made (confirm.go says what makes and settles one): those that wait
// for a series, the one whose series runs, and the fastest open candidate,
// the acceptable child with the fastest single timing among those whose
// claim was not refuted. That one is kept as children settle, not searched
// for: the status asks for it after every change.
type claimBook struct {
	all     []*store.Confirmation
	queue   []*store.Confirmation
	running *store.Confirmation
	since   time.Time
	// refuted holds the children whose claim was rejected or failed.
	refuted map[int64]bool
	fastest *store.Child
}

func newClaimBook() *claimBook { return &claimBook{refuted: map[int64]bool{}} }

// reset replaces the book's claims with claims, as recorded, and finds the
// fastest open candidate among settled (the run's settled originals). It
// returns the claims whose series was cut off (running): they wait for a
// series again.
func (b *claimBook) reset(claims []*store.Confirmation, settled []*store.Child) (cutOff []*store.Confirmation) {
	b.all, b.queue, b.running, b.refuted = claims, nil, nil, map[int64]bool{}
	for _, cl := range claims {
		switch {
		case cl.State == runs.ClaimRunning:
			cl.State = runs.ClaimQueued
			cutOff = append(cutOff, cl)
			fallthrough
		case cl.State == runs.ClaimQueued:
			b.queue = append(b.queue, cl)
		case refutes(cl.State):
			b.refuted[cl.ChildID] = true
		}
	}
	b.fastest = store.FastestOpen(claims, settled)
	return cutOff
}

// refutes reports whether a claim in state s shows its child's timing to
// be noise (or could not tell).
func refutes(s runs.ClaimState) bool { return s == runs.ClaimRejected || s == runs.ClaimFailed }

// seriesRuns counts the runs of the finished series, which the evaluation
// budget counts.
func (b *claimBook) seriesRuns() int {
	n := 0
	for _, cl := range b.all {
		if cl.State != runs.ClaimQueued && cl.Method == runs.MethodSeries {
			n += len(cl.Evaluations)
		}
	}
	return n
}

// observe takes a member that settled into the search for the fastest
// open candidate.
func (b *claimBook) observe(c *store.Child) {
	if c.State != runs.Done || c.Origin.IsCopy() || c.Origin == runs.OriginReference || b.refuted[c.ID] {
		return
	}
	var cur runs.Outcome
	if b.fastest != nil {
		cur = b.fastest.Outcome()
	}
	if c.Outcome().Faster(cur) {
		b.fastest = c
	}
}

// fastestOpen is the acceptable child with the fastest single timing among
// those whose claim was not refuted (rejected or failed): a single timing
// a series showed to be noise must not keep the next fastest child from
// being tested.
func (b *claimBook) fastestOpen() *store.Child { return b.fastest }

// isFastest reports whether child id is the fastest open candidate. (The
// book may hold a copy of the member: compare ids, not records.)
func (b *claimBook) isFastest(id int64) bool { return b.fastest != nil && b.fastest.ID == id }

// add records a new claim.
func (b *claimBook) add(cl *store.Confirmation) {
	b.all = append(b.all, cl)
	if cl.State == runs.ClaimQueued {
		b.queue = append(b.queue, cl)
	}
}

// settled records that cl reached a final state; a refuted claim opens
// the search for the fastest open candidate again, among settled.
func (b *claimBook) settled(cl *store.Confirmation, settled func() []*store.Child) {
	if !refutes(cl.State) || b.refuted[cl.ChildID] {
		return
	}
	b.refuted[cl.ChildID] = true
	if b.fastest != nil && b.fastest.ID == cl.ChildID {
		b.fastest = store.FastestOpen(b.all, settled())
	}
}

// of is the newest claim of child id, or nil.
func (b *claimBook) of(id int64) *store.Confirmation {
	for _, cl := range slices.Backward(b.all) {
		if cl.ChildID == id {
			return cl
		}
	}
	return nil
}

// list is every claim, in the order made; the caller must not change it.
func (b *claimBook) list() []*store.Confirmation { return b.all }

// waiting reports whether a claim waits for a series and none runs.
func (b *claimBook) waiting() bool { return b.running == nil && len(b.queue) > 0 }

// queued reports whether a claim waits for a series.
func (b *claimBook) queued() bool { return len(b.queue) > 0 }

// next takes the queued claim of the fastest candidate (timeOf reads a
// child's single timing), or nil.
func (b *claimBook) next(timeOf func(id int64) float64) *store.Confirmation {
	if len(b.queue) == 0 {
		return nil
	}
	slices.SortStableFunc(b.queue, func(x, y *store.Confirmation) int { return cmpFloat(timeOf(x.ChildID), timeOf(y.ChildID)) })
	cl := b.queue[0]
	b.queue = b.queue[1:]
	return cl
}

// start records that cl's series runs.
func (b *claimBook) start(cl *store.Confirmation) { b.running, b.since = cl, time.Now() }

// done records that the running series returned.
func (b *claimBook) done() { b.running = nil }

// current is the claim whose series runs (nil when none) and since when.
func (b *claimBook) current() (*store.Confirmation, time.Time) { return b.running, b.since }

// supersede settles the queued claims that a confirmed claim of child id
// made moot: those of children not faster than recordMs (timeOf reads a
// child's single timing; ok is false for a child that is not a member).
// It returns them.
func (b *claimBook) supersede(id int64, recordMs float64, timeOf func(id int64) (float64, bool)) []*store.Confirmation {
	var out []*store.Confirmation
	b.queue = slices.DeleteFunc(b.queue, func(q *store.Confirmation) bool {
		if ms, ok := timeOf(q.ChildID); ok && ms < recordMs {
			return false
		}
		q.State, q.FinishedAt = runs.ClaimSuperseded, time.Now()
		q.Reason = fmt.Sprintf("#%d became the record first", id)
		out = append(out, q)
		return true
	})
	return out
}
