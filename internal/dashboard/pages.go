package dashboard

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/bench/benchreport"
	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

func parsePages() (*template.Template, error) {
	t := template.New("pages").Funcs(funcs)
	return t.ParseFS(templateFS, "templates/*.html")
}

// page is what every page's layout reads.
type page struct {
	Title string
	// Nav is the section of the site it is in (runs, bench, evals).
	Nav string
	// Events is the stream the page follows ("" for none).
	Events string
	// Version is the run's version the page was rendered at.
	Version uint64
	Now     time.Time
	Body    any
}

// page wraps a handler that renders a page: it is given the request and
// returns the page, or an error that becomes its status.
func (s *Server) page(f func(r *http.Request) (*page, string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pg, name, err := f(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		pg.Now = time.Now()
		var b bytes.Buffer
		if err := s.pages.ExecuteTemplate(&b, name, pg); err != nil {
			s.log.Warn("dashboard: rendering a page", "page", name, "err", err)
			s.fail(w, r, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", pageCSP)
		_, _ = w.Write(b.Bytes())
	}
}

// pageCSP lets a page run only the dashboard's own script, load only its
// own files, and be framed by nobody: text that got into the markup could
// not run.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// fail answers an error: a page for browsers, JSON under /api/.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := status(err)
	if code >= 500 && code != 499 {
		s.log.Warn("dashboard", "path", r.URL.Path, "err", err)
	}
	if code == 499 {
		return
	}
	msg := err.Error()
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, code, map[string]any{"error": msg, "status": code})
		return
	}
	var b bytes.Buffer
	if terr := s.pages.ExecuteTemplate(&b, "error", &page{Title: http.StatusText(code), Now: time.Now(),
		Body: map[string]any{"Code": code, "Msg": msg}}); terr != nil {
		http.Error(w, msg, code)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// runsView is the front page: every search, bench run and the newest
// evaluations.
type runsView struct {
	Runs  []runview.RunRow
	Bench []runview.BenchRunRow
	Evals []evalRow
}

func (s *Server) runsPage(r *http.Request) (*page, string, error) {
	ctx := r.Context()
	doc, err := s.runsDoc(ctx)
	if err != nil {
		return nil, "", err
	}
	v := runsView{Runs: doc.Runs}
	br, err := runview.LoadBench(ctx, s.st, nil)
	if err != nil {
		return nil, "", err
	}
	v.Bench = br.Runs
	evs, err := s.st.Evaluations(ctx, store.Filter{Limit: 15})
	if err != nil {
		return nil, "", err
	}
	for _, e := range evs {
		v.Evals = append(v.Evals, evalRowOf(e))
	}
	return &page{Title: "Searches", Nav: "runs", Events: "/api/events", Body: v}, "runs", nil
}

// runsDoc is the list of runs, newest first.
func (s *Server) runsDoc(ctx context.Context) (runview.RunsDoc, error) {
	all, err := s.st.Runs(ctx)
	if err != nil {
		return runview.RunsDoc{}, err
	}
	doc := runview.RunsDoc{Runs: []runview.RunRow{}}
	for _, run := range all {
		row, err := s.row(ctx, run)
		if err != nil {
			return doc, err
		}
		doc.Runs = append(doc.Runs, row)
	}
	return doc, nil
}

// runView is a run's page.
type runView struct {
	Run     *store.Run
	Sum     *runview.Summary
	Row     runview.RunRow
	Version uint64
	Figures []report.Figure
	Lineage []*store.Child
	Members memberTable
}

// memberTable is a page of members with the form that chose it.
type memberTable struct {
	Run    *store.Run
	Page   runview.MemberPage
	Sum    *runview.Summary
	Models []string
	Stages []string
	// Classes lists the classes to filter by.
	Classes []runs.Class
	Prev    string
	Next    string
	// Live: new members go on top (the first page, newest first, no
	// filter); otherwise a page says how many came since.
	Live bool
}

func (s *Server) runPage(r *http.Request) (*page, string, error) {
	ctx := r.Context()
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		return nil, "", err
	}
	q, err := runview.ParseMemberQuery(r.URL.Query())
	if err != nil {
		return nil, "", badRequest("%v", err)
	}
	w, sum, err := s.summary(ctx, run)
	if err != nil {
		return nil, "", err
	}
	figs, _, err := s.figures(ctx, w, sum)
	if err != nil {
		return nil, "", err
	}
	v := &runView{Run: sum.Run, Sum: sum, Row: sum.Row(time.Now()), Version: w.live.Version(), Figures: figs,
		Members: s.memberTable(sum, q)}
	if sum.Record != nil {
		v.Lineage = runview.Lineage(byID(sum.Members), sum.Record)
	}
	return &page{Title: sum.Run.Name, Nav: "runs", Events: "/api/events?run=" + strconv.FormatInt(run.ID, 10), Version: v.Version, Body: v}, "run", nil
}

func byID(members []*store.Child) map[int64]*store.Child {
	m := make(map[int64]*store.Child, len(members))
	for _, c := range members {
		m[c.ID] = c
	}
	return m
}

func (s *Server) memberTable(sum *runview.Summary, q runview.MemberQuery) memberTable {
	t := memberTable{Run: sum.Run, Sum: sum, Page: runview.Page(sum.Members, sum.Settings.Objective, q), Classes: runs.Classes}
	for _, c := range sum.Members {
		if c.Model != "" && !slices.Contains(t.Models, c.Model) {
			t.Models = append(t.Models, c.Model)
		}
		if c.Stage != "" && !slices.Contains(t.Stages, string(c.Stage)) {
			t.Stages = append(t.Stages, string(c.Stage))
		}
	}
	slices.Sort(t.Models)
	slices.Sort(t.Stages)
	base := "/runs/" + strconv.FormatInt(sum.Run.ID, 10) + "?"
	if q.Page > 1 {
		t.Prev = base + q.Values(q.Page-1).Encode() + "#members"
	}
	if q.Page < t.Page.Pages {
		t.Next = base + q.Values(q.Page+1).Encode() + "#members"
	}
	t.Live = q.Page == 1 && q.Sort == "newest" && q.Class == "" && q.Model == "" && q.Stage == "" && !q.IslandSet
	return t
}

// memberRow is one row of the members table.
type memberRow struct {
	Run    *store.Run
	C      *store.Child
	Record bool
	Ref    *store.Child
	// Parent is the program it came from (copies followed).
	Parent int64
}

func memberRowView(run *store.Run, c *store.Child, sum *runview.Summary, members map[int64]*store.Child) memberRow {
	row := memberRow{Run: run, C: c, Ref: sum.Reference, Record: sum.Record != nil && sum.Record.ID == c.ID && sum.RecordClaim != nil}
	row.Parent = runview.Program(c, members).ParentID
	return row
}

// rows are the table's rows.
func (t memberTable) Rows() []memberRow {
	out := make([]memberRow, len(t.Page.Members))
	ids := byID(t.Sum.Members)
	for i, c := range t.Page.Members {
		out[i] = memberRow{Run: t.Run, C: c, Ref: t.Sum.Reference, Record: t.Sum.Record != nil && t.Sum.Record.ID == c.ID && t.Sum.RecordClaim != nil,
			Parent: runview.Program(c, ids).ParentID}
	}
	return out
}

// runSections renders the parts of a run's page that change as it runs,
// by the id of their element.
func (s *Server) runSections(run *store.Run, sum *runview.Summary, figs []report.Figure, version uint64) (map[string]string, error) {
	v := &runView{Run: run, Sum: sum, Row: sum.Row(time.Now()), Version: version, Figures: figs}
	if sum.Record != nil {
		v.Lineage = runview.Lineage(byID(sum.Members), sum.Record)
	}
	out := map[string]string{}
	for _, name := range []string{"head", "record", "budget", "verdicts", "claims", "lineage", "islands", "groups", "spend", "figures"} {
		var b bytes.Buffer
		if err := s.pages.ExecuteTemplate(&b, "sec-"+name, v); err != nil {
			return nil, err
		}
		out[name] = b.String()
	}
	return out, nil
}

// programView is a program's page.
type programView struct {
	*runview.ProgramView
	Sum     *runview.Summary
	Calls   []callView
	Version uint64
}

// callView is a model call with its prompt as people read it.
type callView struct {
	*store.LLMCall
	System   string
	Messages []llm.Message
	Raw      string
}

func callViewOf(c *store.LLMCall) callView {
	v := callView{LLMCall: c}
	var req llm.Request
	if json.Unmarshal([]byte(c.Request), &req) == nil {
		v.System, v.Messages = req.System, req.Messages
	} else {
		v.Raw = c.Request
	}
	return v
}

func (s *Server) programPage(r *http.Request) (*page, string, error) {
	ctx := r.Context()
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		return nil, "", err
	}
	mid, err := id(r, "id")
	if err != nil {
		return nil, "", err
	}
	w, sum, err := s.summary(ctx, run)
	if err != nil {
		return nil, "", err
	}
	pv, err := runview.ViewProgram(ctx, s.st, sum.Run, mid)
	if err != nil {
		return nil, "", err
	}
	v := &programView{ProgramView: pv, Sum: sum, Version: w.live.Version()}
	for _, c := range pv.Calls {
		v.Calls = append(v.Calls, callViewOf(c))
	}
	return &page{Title: "#" + strconv.FormatInt(mid, 10) + " of " + sum.Run.Name, Nav: "runs",
		Events: "/api/events?run=" + strconv.FormatInt(run.ID, 10), Version: v.Version, Body: v}, "program", nil
}

// Timings are the program's timings with their noise: its single timing
// in the search, and the repeated runs of its evaluation and its claims'
// series.
func (v *programView) Repeats() *eval.Repeats {
	if v.Result == nil {
		return nil
	}
	return v.Result.Repeats
}

// Memory is its peak memory, from its telemetry or its result.
func (v *programView) Memory() *harness.Memory {
	if v.Telemetry != nil && v.Telemetry.Memory != nil {
		return v.Telemetry.Memory
	}
	if v.Result != nil && v.Result.Metrics.PeakRSSMB > 0 {
		m := v.Result.Metrics
		return &harness.Memory{PeakRSSMB: m.PeakRSSMB, CUDAAllocatedMB: m.CUDAAllocMB, CUDAReservedMB: m.CUDAResMB}
	}
	return nil
}

// compareView is two programs side by side.
type compareView struct {
	Run  *store.Run
	A, B *runview.ProgramView
	Diff runview.Diff
}

func (s *Server) compare(ctx context.Context, r *http.Request) (*compareView, error) {
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	parse := func(k string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimPrefix(q.Get(k), "#"), 10, 64)
		if err != nil || n <= 0 {
			return 0, badRequest("%s=%q: name a member by its id (compare?a=12&b=40)", k, q.Get(k))
		}
		return n, nil
	}
	a, err := parse("a")
	if err != nil {
		return nil, err
	}
	b, err := parse("b")
	if err != nil {
		return nil, err
	}
	v := &compareView{Run: run}
	if v.A, err = runview.ViewProgram(ctx, s.st, run, a); err != nil {
		return nil, err
	}
	if v.B, err = runview.ViewProgram(ctx, s.st, run, b); err != nil {
		return nil, err
	}
	v.Diff = runview.DiffOf("other", v.A.Child, []byte(v.A.Source), v.B.Child, []byte(v.B.Source))
	return v, nil
}

func (s *Server) comparePage(r *http.Request) (*page, string, error) {
	v, err := s.compare(r.Context(), r)
	if err != nil {
		return nil, "", err
	}
	return &page{Title: "#" + strconv.FormatInt(v.A.Child.ID, 10) + " and #" + strconv.FormatInt(v.B.Child.ID, 10), Nav: "runs", Body: v}, "compare", nil
}

// evalRow is a row of the list of evaluations.
type evalRow struct {
	runview.EvaluationRow
	Track       string `json:"track"`
	ProgramHash string `json:"program_hash"`
	Fingerprint string `json:"fingerprint_class,omitempty"`
	StepAvgMs   float64
}

func evalRowOf(e *store.Evaluation) evalRow {
	return evalRow{EvaluationRow: runview.EvalRow(e), Track: e.Track, ProgramHash: e.ProgramHash, Fingerprint: e.FingerprintClass, StepAvgMs: e.StepAvgMs}
}

// evalFilter reads the list's filter: track, verdict and limit.
func evalFilter(r *http.Request) (store.Filter, error) {
	q := r.URL.Query()
	f := store.Filter{Track: q.Get("track"), Verdict: q.Get("verdict"), Limit: 100}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return f, badRequest("limit %q: use a whole number from 1 to 1000", l)
		}
		f.Limit = n
	}
	return f, nil
}

func (s *Server) evalsPage(r *http.Request) (*page, string, error) {
	f, err := evalFilter(r)
	if err != nil {
		return nil, "", err
	}
	evs, err := s.st.Evaluations(r.Context(), f)
	if err != nil {
		return nil, "", err
	}
	rows := make([]evalRow, 0, len(evs))
	for _, e := range evs {
		rows = append(rows, evalRowOf(e))
	}
	return &page{Title: "Evaluations", Nav: "evals", Body: map[string]any{"Rows": rows, "Filter": f}}, "evals", nil
}

func (s *Server) evalPage(r *http.Request) (*page, string, error) {
	eid, err := id(r, "id")
	if err != nil {
		return nil, "", err
	}
	v, err := runview.ViewEvaluation(r.Context(), s.st, eid)
	if err != nil {
		return nil, "", err
	}
	raw := bytes.Buffer{}
	if len(v.Evaluation.Result) > 0 {
		_ = json.Indent(&raw, v.Evaluation.Result, "", "  ")
	}
	return &page{Title: "Evaluation #" + strconv.FormatInt(eid, 10), Nav: "evals",
		Body: map[string]any{"V": v, "Raw": raw.String()}}, "eval", nil
}

// benchView is the bench runs' scores, with their figures.
type benchView struct {
	Report   *runview.BenchReport
	Figures  []benchFigure
	Run      *store.BenchRun
	Attempts []*store.BenchAttempt
}

type benchFigure struct {
	Title string
	// SVG is the chart as a data: URL, shown as an image: an SVG inlined
	// in the page would be markup of the page, its styles refused by the
	// page's policy.
	SVG template.URL
}

func benchFigures(rep *runview.BenchReport) []benchFigure {
	var out []benchFigure
	for _, f := range benchreport.Figures(rep) {
		out = append(out, benchFigure{Title: f.Title, SVG: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(f.SVG)))})
	}
	return out
}

func (s *Server) benchListPage(r *http.Request) (*page, string, error) {
	rep, err := runview.LoadBench(r.Context(), s.st, nil)
	if err != nil {
		return nil, "", err
	}
	return &page{Title: "Bench runs", Nav: "bench", Events: "/api/events?bench=1", Body: &benchView{Report: rep, Figures: benchFigures(rep)}}, "bench", nil
}

func (s *Server) benchPage(r *http.Request) (*page, string, error) {
	ctx := r.Context()
	br, err := s.st.BenchRun(ctx, r.PathValue("run"))
	if err != nil {
		return nil, "", err
	}
	rep, err := runview.LoadBench(ctx, s.st, []string{strconv.FormatInt(br.ID, 10)})
	if err != nil {
		return nil, "", err
	}
	as, err := s.st.BenchAttempts(ctx, br.ID)
	if err != nil {
		return nil, "", err
	}
	return &page{Title: br.Name, Nav: "bench", Events: "/api/events?bench=1",
		Body: &benchView{Report: rep, Figures: benchFigures(rep), Run: br, Attempts: as}}, "bench", nil
}

// svg answers with a figure's SVG; a figure with nothing to draw is 404
// with its note.
func svgOut(w http.ResponseWriter, f report.Figure) {
	h := w.Header()
	if len(f.SVG) == 0 {
		http.Error(w, f.Note, http.StatusNotFound)
		return
	}
	h.Set("Content-Type", "image/svg+xml")
	// An SVG opened on its own is a document: it may not run anything.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	h.Set("Cache-Control", "private, max-age=60")
	_, _ = w.Write(f.SVG)
}

func (s *Server) runFigure(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := strings.TrimSuffix(r.PathValue("name"), ".svg")
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	wt, sum, err := s.summary(ctx, run)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	figs, _, err := s.figures(ctx, wt, sum)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, f := range figs {
		if f.Name == name {
			svgOut(w, f)
			return
		}
	}
	s.fail(w, r, notFound("run %s has no figure %q", run.Name, name))
}

func (s *Server) programCurve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	mid, err := id(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pv, err := runview.ViewProgram(ctx, s.st, run, mid)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b := &report.Best{Program: runview.Program(pv.Child, pv.Members)}
	if t := pv.Telemetry; t != nil {
		b.Curve, b.Vals = t.Steps, t.Vals
	}
	if t := pv.RefTelemetry; t != nil {
		b.ReferenceCurve = t.Steps
	}
	svgOut(w, report.ProgramCurve(run.TargetValLoss, b))
}

func (s *Server) evalCurve(w http.ResponseWriter, r *http.Request) {
	eid, err := id(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := runview.ViewEvaluation(r.Context(), s.st, eid)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b := &report.Best{Program: report.Program{TrainTimeMs: v.Evaluation.TrainTimeMs}}
	if t := v.Telemetry; t != nil {
		b.Curve, b.Vals = t.Steps, t.Vals
	}
	target := 0.0
	if v.Result != nil {
		target = v.Result.Track.Target
	}
	svgOut(w, report.ProgramCurve(target, b))
}
