package runview

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
)

// FeedReader is what following a run reads: its row, its members (all of
// them once, then those written since a time) and its claims. store.Store
// is one.
type FeedReader interface {
	Run(ctx context.Context, ref string) (*store.Run, error)
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	ChildrenSince(ctx context.Context, runID int64, since time.Time) ([]*store.Child, error)
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)
}

// Lookback is how far before the newest write it has seen a Live asks for
// members again. Members are stamped with their writer's clock when its
// transaction begins, so one that commits after a later-stamped one, or
// comes from a machine whose clock is behind, is still found; what is
// found again unchanged is not reported twice.
const Lookback = 10 * time.Second

// Live is a run as a watcher holds it: its row, its members and its
// claims, brought up to date by Poll from what changed since, never by
// reading the run again. It is safe for concurrent use.
type Live struct {
	mu      sync.RWMutex
	run     *store.Run
	members []*store.Child // by id
	index   map[int64]int
	claims  []*store.Confirmation
	claimFP string
	newest  time.Time // the newest member's write seen
	version uint64

	sumMu      sync.Mutex
	sum        *Summary
	sumVersion uint64
}

// Delta is what one Poll found changed; empty when nothing did.
type Delta struct {
	// Version counts the changes a Live has taken in.
	Version uint64
	// Run is the run's row when it changed.
	Run *store.Run
	// Members are the members written since the last poll (new or
	// changed), in the order they were written.
	Members []*store.Child
	// Claims are all the run's claims when any of them changed.
	Claims []*store.Confirmation
}

// Empty reports whether nothing changed.
func (d Delta) Empty() bool { return d.Run == nil && len(d.Members) == 0 && d.Claims == nil }

// OpenLive reads a run whole.
func OpenLive(ctx context.Context, st FeedReader, run *store.Run) (*Live, error) {
	members, err := st.Children(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	claims, err := st.Confirmations(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	l := &Live{run: run, members: members, index: make(map[int64]int, len(members)), claims: claims, claimFP: claimPrint(claims), version: 1}
	slices.SortFunc(l.members, func(a, b *store.Child) int { return cmp.Compare(a.ID, b.ID) })
	for i, c := range l.members {
		l.index[c.ID] = i
		if c.UpdatedAt.After(l.newest) {
			l.newest = c.UpdatedAt
		}
	}
	return l, nil
}

// Poll reads what changed since the last poll: the run's row (run, when
// the caller has read it already; else it is read), the members written
// since, and the claims. Three short queries, each from an index.
func (l *Live) Poll(ctx context.Context, st FeedReader, run *store.Run) (Delta, error) {
	l.mu.RLock()
	id, since, cur, fp := l.run.ID, l.newest.Add(-Lookback), l.run, l.claimFP
	l.mu.RUnlock()
	if run == nil {
		var err error
		if run, err = st.Run(ctx, strconv.FormatInt(id, 10)); err != nil {
			return Delta{}, err
		}
	}
	if run.ID != id {
		return Delta{}, fmt.Errorf("poll run %d: got run %d", id, run.ID)
	}
	changed, err := st.ChildrenSince(ctx, id, since)
	if err != nil {
		return Delta{}, err
	}
	claims, err := st.Confirmations(ctx, id)
	if err != nil {
		return Delta{}, err
	}
	var d Delta
	if runChanged(cur, run) {
		d.Run = run
	}
	if p := claimPrint(claims); p != fp {
		d.Claims = claims
		if d.Claims == nil {
			d.Claims = []*store.Confirmation{}
		}
		fp = p
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range changed {
		if i, ok := l.index[c.ID]; ok {
			if *l.members[i] == *c {
				continue
			}
			l.members[i] = c
		} else {
			l.insert(c)
		}
		d.Members = append(d.Members, c)
		if c.UpdatedAt.After(l.newest) {
			l.newest = c.UpdatedAt
		}
	}
	if d.Run != nil {
		l.run = d.Run
	}
	if d.Claims != nil {
		l.claims, l.claimFP = d.Claims, fp
	}
	if !d.Empty() {
		l.version++
	}
	d.Version = l.version
	return d, nil
}

// insert adds a member in its place by id: members usually come in the
// order of their ids, but two writers' transactions may commit out of it.
func (l *Live) insert(c *store.Child) {
	i, _ := slices.BinarySearchFunc(l.members, c.ID, func(m *store.Child, id int64) int { return cmp.Compare(m.ID, id) })
	l.members = slices.Insert(l.members, i, c)
	for j := i; j < len(l.members); j++ {
		l.index[l.members[j].ID] = j
	}
}

// runChanged reports whether a run's row changed in what a watcher
// shows; the RNG and the bandit's state, which each decision rewrites,
// are not shown.
func runChanged(a, b *store.Run) bool {
	return !a.UpdatedAt.Equal(b.UpdatedAt) || a.Name != b.Name || a.State != b.State || a.StopReason != b.StopReason ||
		a.StopDetail != b.StopDetail || a.Iterations != b.Iterations || a.ActiveMs != b.ActiveMs || a.Sessions != b.Sessions ||
		!a.FinishedAt.Equal(b.FinishedAt) || string(a.Config) != string(b.Config) || string(a.Models) != string(b.Models)
}

// claimPrint is a claims' text, compared to tell a change (NaN, which a
// claim's untested figures are, never equals itself).
func claimPrint(cs []*store.Confirmation) string {
	var b []byte
	for _, c := range cs {
		b = fmt.Appendf(b, "%v\n", *c)
	}
	return string(b)
}

// Version counts the changes taken in; it starts at 1.
func (l *Live) Version() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.version
}

// Run is the run's row as last read.
func (l *Live) Run() *store.Run {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.run
}

// Members are the run's members by id, as last read. The slice is the
// caller's; the members are shared and never changed (a change replaces
// one).
func (l *Live) Members() []*store.Child {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.members)
}

// Member is member id, or nil.
func (l *Live) Member(id int64) *store.Child {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if i, ok := l.index[id]; ok {
		return l.members[i]
	}
	return nil
}

// Claims are the run's claims as last read.
func (l *Live) Claims() []*store.Confirmation {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.claims)
}

// Summary is the run's summary as it stands: its members and claims from
// memory, the rest (spend, islands' iterations, events) read from st. It
// is computed again only after a change, one caller at a time.
func (l *Live) Summary(ctx context.Context, st SummaryReader) (*Summary, error) {
	l.sumMu.Lock()
	defer l.sumMu.Unlock()
	l.mu.RLock()
	v, run := l.version, l.run
	l.mu.RUnlock()
	if l.sum != nil && l.sumVersion == v {
		return l.sum, nil
	}
	s, err := Summarize(ctx, held{SummaryReader: st, l: l}, run)
	if err != nil {
		return nil, err
	}
	l.sum, l.sumVersion = s, v
	return s, nil
}

// held reads a run's members and claims from a Live, and the rest from
// the store.
type held struct {
	SummaryReader
	l *Live
}

func (h held) Children(context.Context, int64) ([]*store.Child, error) { return h.l.Members(), nil }

func (h held) Confirmations(context.Context, int64) ([]*store.Confirmation, error) {
	return h.l.Claims(), nil
}
