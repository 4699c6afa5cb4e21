package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

// The change feed: one poller reads what was written since it last looked
// (runview.Live.Poll: the members written since, the claims, the run's
// row) for the runs someone watches, and pushes each change to the pages
// and scripts that follow it as server-sent events. Nothing is read again
// whole.

// subscriber follows one topic: a run (run > 0), the list of runs, or the
// bench runs.
type subscriber struct {
	run   int64
	bench bool
	ch    chan event
}

// event is one server-sent event.
type event struct {
	name string
	id   uint64
	data []byte
}

// subscriberBuffer is how many events a subscriber may fall behind by
// before it is dropped (its browser reconnects and catches up).
const subscriberBuffer = 512

// Run polls the store for changes until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			for sub := range s.subs {
				close(sub.ch)
				delete(s.subs, sub)
			}
			s.mu.Unlock()
			return nil
		case <-t.C:
			if err := s.poll(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("dashboard: reading changes", "err", err)
			}
		}
	}
}

// poll reads what changed and publishes it.
func (s *Server) poll(ctx context.Context) error {
	s.mu.Lock()
	subs := slices.Collect(maps.Keys(s.subs))
	watchedIDs := slices.Collect(maps.Keys(s.lives))
	s.mu.Unlock()
	var list, bench bool
	byRun := map[int64]bool{}
	for _, sub := range subs {
		switch {
		case sub.bench:
			bench = true
		case sub.run == 0:
			list = true
		default:
			byRun[sub.run] = true
		}
	}
	defer s.evict(byRun, list)
	if len(watchedIDs) == 0 && !list && !bench {
		return nil
	}
	all, err := s.st.Runs(ctx)
	if err != nil {
		return err
	}
	for _, run := range all {
		s.mu.Lock()
		w := s.lives[run.ID]
		c, cached := s.rows[run.ID]
		s.mu.Unlock()
		if w == nil && list && run.State == store.RunRunning {
			// The list shows a running run's progress as it goes.
			if w, err = s.watch(ctx, run); err != nil {
				return err
			}
			s.publishRow(ctx, w, run)
			continue
		}
		if w == nil {
			if list && cached && !c.updated.Equal(run.UpdatedAt) {
				s.publishRow(ctx, nil, run)
			}
			continue
		}
		select {
		case <-w.ready:
		default:
			continue // still being read by a page
		}
		if w.err != nil {
			continue
		}
		d, err := w.live.Poll(ctx, s.st, run)
		if err != nil {
			return err
		}
		if d.Empty() {
			continue
		}
		if byRun[run.ID] {
			s.publishRun(ctx, w, d)
		}
		if list {
			s.publishRow(ctx, w, w.live.Run())
		}
	}
	if bench {
		return s.pollBench(ctx)
	}
	return nil
}

// evict forgets the runs nobody has looked at for a while.
func (s *Server) evict(byRun map[int64]bool, list bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, w := range s.lives {
		select {
		case <-w.ready:
		default:
			continue
		}
		if byRun[id] || list && w.live != nil && w.live.Run().State == store.RunRunning {
			w.used = time.Now()
			continue
		}
		if time.Since(w.used) > s.opts.Idle {
			delete(s.lives, id)
		}
	}
}

// publishRun sends a run's watchers its changed members, then its
// sections as they now stand, then word that its figures changed.
func (s *Server) publishRun(ctx context.Context, w *watched, d runview.Delta) {
	run := w.live.Run()
	sum, err := w.live.Summary(ctx, s.st)
	if err != nil {
		s.log.Warn("dashboard: summarizing a run", "run", run.Name, "err", err)
		return
	}
	byID := map[int64]*store.Child{}
	for _, c := range sum.Members {
		byID[c.ID] = c
	}
	for _, c := range d.Members {
		var b bytes.Buffer
		if err := s.pages.ExecuteTemplate(&b, "member-row", memberRowView(run, c, sum, byID)); err != nil {
			s.log.Warn("dashboard: rendering a member", "err", err)
			continue
		}
		s.send(run.ID, false, "member", d.Version, map[string]any{"id": c.ID, "html": b.String(), "member": runview.Row(c, byID)})
	}
	// The figures go with the sections at most every figureEvery: the
	// page keeps the ones it has meanwhile.
	var figs []report.Figure
	withFigs := w.figuresDue(d.Run != nil && d.Run.State != store.RunRunning)
	if withFigs {
		if figs, _, err = s.figures(ctx, w, sum); err != nil {
			s.log.Warn("dashboard: drawing a run's figures", "run", run.Name, "err", err)
			withFigs = false
		}
	}
	sections, err := s.runSections(run, sum, figs, w.live.Version())
	if err != nil {
		s.log.Warn("dashboard: rendering a run", "err", err)
		return
	}
	if !withFigs {
		delete(sections, "figures")
	}
	s.send(run.ID, false, "summary", d.Version, map[string]any{"sections": sections, "run": sum.Row(time.Now()), "version": d.Version})
}

// publishRow sends the list's watchers a run's row.
func (s *Server) publishRow(ctx context.Context, w *watched, run *store.Run) {
	row, err := s.row(ctx, run)
	if err != nil {
		s.log.Warn("dashboard: a run's row", "run", run.Name, "err", err)
		return
	}
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, "run-row", row); err != nil {
		s.log.Warn("dashboard: rendering a run's row", "err", err)
		return
	}
	var v uint64
	if w != nil {
		v = w.live.Version()
	}
	s.send(0, false, "run", v, map[string]any{"id": run.ID, "html": b.String(), "run": row})
}

// pollBench tells the bench pages when a bench run changed: its row, or
// the attempts of one still running.
func (s *Server) pollBench(ctx context.Context) error {
	brs, err := s.st.BenchRuns(ctx)
	if err != nil {
		return err
	}
	for _, br := range brs {
		fp := fmt.Sprintf("%s %s %d %v", br.State, br.UpdatedAt, br.ActiveMs, br.FinishedAt)
		if br.State == store.RunRunning {
			as, err := s.st.BenchAttempts(ctx, br.ID)
			if err != nil {
				return err
			}
			for _, a := range as {
				fp += fmt.Sprintf(";%s %v %v", a.State, a.FSR, a.BestMs)
			}
		}
		s.mu.Lock()
		old, seen := s.bench[br.ID]
		s.bench[br.ID] = fp
		s.mu.Unlock()
		if seen && old != fp {
			s.send(0, true, "bench", 0, map[string]any{"id": br.ID, "name": br.Name})
		}
	}
	return nil
}

// send publishes an event to the subscribers of a topic; one that is too
// far behind is dropped.
func (s *Server) send(run int64, bench bool, name string, id uint64, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.log.Warn("dashboard: encoding an event", "err", err)
		return
	}
	ev := event{name: name, id: id, data: data}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		if sub.run != run || sub.bench != bench {
			continue
		}
		select {
		case sub.ch <- ev:
		default:
			close(sub.ch)
			delete(s.subs, sub)
		}
	}
}

// events streams a topic as server-sent events: ?run=RUN (its members,
// sections and figures), ?bench=1 (bench runs), else the list of runs.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sub := &subscriber{ch: make(chan event, subscriberBuffer)}
	var version uint64
	q := r.URL.Query()
	switch {
	case q.Get("run") != "":
		run, err := s.run(ctx, q.Get("run"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		wt, err := s.watch(ctx, run)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		sub.run, version = run.ID, wt.live.Version()
	case q.Get("bench") != "":
		sub.bench = true
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}()
	write := func(ev event) error {
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		var b bytes.Buffer
		if ev.name == "" && ev.data == nil {
			b.WriteString(": keep-alive\n") // a comment keeps proxies from closing the stream
		}
		if ev.name != "" {
			fmt.Fprintf(&b, "event: %s\n", ev.name)
		}
		if ev.id != 0 {
			fmt.Fprintf(&b, "id: %d\n", ev.id)
		}
		if ev.data != nil {
			fmt.Fprintf(&b, "data: %s\n", ev.data)
		}
		b.WriteString("\n")
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
		return rc.Flush()
	}
	// hello says where the stream starts: a page rendered at an older
	// version (it reconnected) fetches what it missed.
	if err := write(event{name: "hello", data: []byte(`{"version":` + strconv.FormatUint(version, 10) + `}`)}); err != nil {
		return
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.ch:
			if !ok {
				return
			}
			if err := write(ev); err != nil {
				return
			}
		case <-keep.C:
			if err := write(event{}); err != nil {
				return
			}
		}
	}
}
