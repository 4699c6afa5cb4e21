package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Store is what the dashboard reads. store.Store opened with
// store.OpenReader is one.
type Store interface {
	runview.FeedReader
	runview.SummaryReader
	runview.MemberReader
	runview.ProgramReader
	runview.BenchReader
	Runs(ctx context.Context) ([]*store.Run, error)
	Evaluations(ctx context.Context, f store.Filter) ([]*store.Evaluation, error)
}

// Options configure a Server.
type Options struct {
	// Token, when set, must come with every request (docs/dashboard.md).
	// Empty: only requests to localhost are answered.
	Token string
	// Poll is how often the change feed looks for writes; default 1 s.
	Poll time.Duration
	// Idle is how long a run nobody looks at stays in memory; default 5
	// minutes.
	Idle time.Duration
	Log  *slog.Logger
}

// Server serves the dashboard. Run its poller with Run; Handler answers
// requests.
type Server struct {
	st    Store
	opts  Options
	log   *slog.Logger
	pages *template.Template
	mux   *http.ServeMux

	mu    sync.Mutex
	lives map[int64]*watched
	subs  map[*subscriber]struct{}
	rows  map[int64]rowCache // list rows of runs that are not watched
	bench map[int64]string   // what a bench run looked like at the last poll
}

// watched is a run held in memory while someone looks at it.
type watched struct {
	ready chan struct{}
	live  *runview.Live
	err   error
	used  time.Time

	figMu   sync.Mutex
	figVer  uint64
	figAt   time.Time // when the figures were drawn
	figs    []report.Figure
	figData *report.Data
}

// figureEvery is how often a run's figures are drawn again while it keeps
// changing: drawing those of a run of 10,000 programs takes a fraction of
// a second, and a busy search changes at every poll.
const figureEvery = 5 * time.Second

type rowCache struct {
	updated time.Time
	row     runview.RunRow
}

// New returns a server over st.
func New(st Store, o Options) (*Server, error) {
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Idle <= 0 {
		o.Idle = 5 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{st: st, opts: o, log: o.Log, pages: pages, lives: map[int64]*watched{}, subs: map[*subscriber]struct{}{},
		rows: map[int64]rowCache{}, bench: map[int64]string{}}
	s.routes()
	return s, nil
}

// Handler is the dashboard behind its guard (the token, reads only).
func (s *Server) Handler() http.Handler { return newGuard(s.opts.Token, s.mux) }

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	m.HandleFunc("GET /{$}", s.page(s.runsPage))
	m.HandleFunc("GET /runs/{run}", s.page(s.runPage))
	m.HandleFunc("GET /runs/{run}/members/{id}", s.page(s.programPage))
	m.HandleFunc("GET /runs/{run}/compare", s.page(s.comparePage))
	m.HandleFunc("GET /runs/{run}/figures/{name}", s.runFigure)
	m.HandleFunc("GET /runs/{run}/members/{id}/curve.svg", s.programCurve)
	m.HandleFunc("GET /evals", s.page(s.evalsPage))
	m.HandleFunc("GET /evals/{id}", s.page(s.evalPage))
	m.HandleFunc("GET /evals/{id}/curve.svg", s.evalCurve)
	m.HandleFunc("GET /bench", s.page(s.benchListPage))
	m.HandleFunc("GET /bench/{run}", s.page(s.benchPage))

	m.HandleFunc("GET /api/runs", s.api(s.apiRuns))
	m.HandleFunc("GET /api/runs/{run}", s.api(s.apiRun))
	m.HandleFunc("GET /api/runs/{run}/members", s.api(s.apiMembers))
	m.HandleFunc("GET /api/runs/{run}/members/{id}", s.api(s.apiMember))
	m.HandleFunc("GET /api/runs/{run}/members/{id}/program", s.apiProgramSource)
	m.HandleFunc("GET /api/runs/{run}/members/{id}/diff", s.api(s.apiDiff))
	m.HandleFunc("GET /api/runs/{run}/members/{id}/telemetry", s.api(s.apiTelemetry))
	m.HandleFunc("GET /api/runs/{run}/compare", s.api(s.apiCompare))
	m.HandleFunc("GET /api/runs/{run}/report", s.api(s.apiReport))
	m.HandleFunc("GET /api/runs/{run}/iterations", s.api(s.apiIterations))
	m.HandleFunc("GET /api/runs/{run}/figures", s.api(s.apiFigures))
	m.HandleFunc("GET /api/evals", s.api(s.apiEvals))
	m.HandleFunc("GET /api/evals/{id}", s.api(s.apiEval))
	m.HandleFunc("GET /api/bench", s.api(s.apiBenchAll))
	m.HandleFunc("GET /api/bench/{run}", s.api(s.apiBench))
	m.HandleFunc("GET /api/events", s.events)
	m.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, &httpError{http.StatusNotFound, fmt.Sprintf("nothing at %s", r.URL.Path)})
	})
	s.mux = m
}

// cacheStatic lets browsers keep the embedded files for an hour: they
// change only with the binary.
func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// httpError is an answer other than 200, with what to say.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// status is the HTTP status of err: its own, 404 for what the store does
// not hold, else 500.
func status(err error) int {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.code
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.Canceled):
		return 499
	}
	return http.StatusInternalServerError
}

// run finds run ref (an id or a name).
func (s *Server) run(ctx context.Context, ref string) (*store.Run, error) {
	run, err := s.st.Run(ctx, ref)
	if err != nil {
		return nil, err
	}
	return run, nil
}

// watch returns the live copy of run, reading it whole the first time.
func (s *Server) watch(ctx context.Context, run *store.Run) (*watched, error) {
	s.mu.Lock()
	w := s.lives[run.ID]
	if w == nil {
		w = &watched{ready: make(chan struct{})}
		s.lives[run.ID] = w
		s.mu.Unlock()
		w.live, w.err = runview.OpenLive(context.WithoutCancel(ctx), s.st, run)
		close(w.ready)
		if w.err != nil {
			s.mu.Lock()
			delete(s.lives, run.ID)
			s.mu.Unlock()
		}
	} else {
		s.mu.Unlock()
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if w.err != nil {
		return nil, w.err
	}
	s.mu.Lock()
	w.used = time.Now()
	s.mu.Unlock()
	return w, nil
}

// summary is run's summary as it stands, from its live copy.
func (s *Server) summary(ctx context.Context, run *store.Run) (*watched, *runview.Summary, error) {
	w, err := s.watch(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	sum, err := w.live.Summary(ctx, s.st)
	return w, sum, err
}

// figuresDue reports whether the figures pushed to a run's watchers are
// behind by more than figureEvery, or the run ended.
func (w *watched) figuresDue(ended bool) bool {
	w.figMu.Lock()
	defer w.figMu.Unlock()
	return ended || w.figs == nil || time.Since(w.figAt) >= figureEvery
}

// figures are the run's figures at the live copy's version, drawn again
// only after a change.
func (s *Server) figures(ctx context.Context, w *watched, sum *runview.Summary) ([]report.Figure, *report.Data, error) {
	w.figMu.Lock()
	defer w.figMu.Unlock()
	v := w.live.Version()
	if w.figs != nil && w.figVer == v {
		return w.figs, w.figData, nil
	}
	d := runview.ReportOf(sum, sum.MetaFrom())
	if sum.Record != nil && sum.Record.ProgramHash != "" {
		b, err := runview.LoadBest(ctx, s.st, sum, sum.Record)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, nil, err
		}
		d.Best = b
	}
	w.figs, w.figData, w.figVer, w.figAt = report.Figures(d), d, v, time.Now()
	return w.figs, d, nil
}

// row is run's row of the list: from its live copy when it is watched or
// running, else as it was read when it last changed.
func (s *Server) row(ctx context.Context, run *store.Run) (runview.RunRow, error) {
	s.mu.Lock()
	c, cached := s.rows[run.ID]
	_, live := s.lives[run.ID]
	s.mu.Unlock()
	if !live && run.State != store.RunRunning {
		if cached && c.updated.Equal(run.UpdatedAt) {
			return c.row, nil
		}
		sum, err := runview.Summarize(ctx, s.st, run)
		if err != nil {
			return runview.RunRow{}, err
		}
		r := sum.Row(time.Now())
		s.mu.Lock()
		s.rows[run.ID] = rowCache{updated: run.UpdatedAt, row: r}
		s.mu.Unlock()
		return r, nil
	}
	_, sum, err := s.summary(ctx, run)
	if err != nil {
		return runview.RunRow{}, err
	}
	return sum.Row(time.Now()), nil
}

// id parses a path's numeric id.
func id(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, badRequest("%s %q is not an id (a positive whole number)", name, v)
	}
	return n, nil
}
