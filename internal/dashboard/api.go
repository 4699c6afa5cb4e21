package dashboard

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

// The JSON API: everything the pages show, in runview's shapes (those of
// the CLI's --json where the two overlap). docs/dashboard.md lists it.

// api wraps a handler that returns a value to write as JSON.
func (s *Server) api(f func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Server) apiRuns(r *http.Request) (any, error) { return s.runsDoc(r.Context()) }

func (s *Server) apiRun(r *http.Request) (any, error) {
	ctx := r.Context()
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		return nil, err
	}
	_, sum, err := s.summary(ctx, run)
	if err != nil {
		return nil, err
	}
	return sum.Doc(time.Now()), nil
}

// membersDoc is a page of a run's members.
type membersDoc struct {
	Total   int                 `json:"total"`
	Page    int                 `json:"page"`
	Pages   int                 `json:"pages"`
	PerPage int                 `json:"per_page"`
	Members []runview.MemberRow `json:"members"`
}

func (s *Server) apiMembers(r *http.Request) (any, error) {
	ctx := r.Context()
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		return nil, err
	}
	q, err := runview.ParseMemberQuery(r.URL.Query())
	if err != nil {
		return nil, badRequest("%v", err)
	}
	_, sum, err := s.summary(ctx, run)
	if err != nil {
		return nil, err
	}
	p := runview.Page(sum.Members, sum.Settings.Objective, q)
	ids := byID(sum.Members)
	doc := membersDoc{Total: p.Total, Page: q.Page, Pages: p.Pages, PerPage: q.PerPage, Members: []runview.MemberRow{}}
	for _, c := range p.Members {
		doc.Members = append(doc.Members, runview.Row(c, ids))
	}
	return doc, nil
}

func (s *Server) program(r *http.Request) (*runview.ProgramView, error) {
	ctx := r.Context()
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		return nil, err
	}
	mid, err := id(r, "id")
	if err != nil {
		return nil, err
	}
	return runview.ViewProgram(ctx, s.st, run, mid)
}

func (s *Server) apiMember(r *http.Request) (any, error) {
	pv, err := s.program(r)
	if err != nil {
		return nil, err
	}
	return pv.Doc(), nil
}

func (s *Server) apiProgramSource(w http.ResponseWriter, r *http.Request) {
	pv, err := s.program(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if pv.Child.ProgramHash == "" {
		s.fail(w, r, notFound("member #%d has no program", pv.Child.ID))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(pv.Source))
}

func (s *Server) apiDiff(r *http.Request) (any, error) {
	pv, err := s.program(r)
	if err != nil {
		return nil, err
	}
	against := r.URL.Query().Get("against")
	if against == "" {
		against = "reference"
	}
	for _, d := range pv.Diffs {
		if d.Label == against || strconv.FormatInt(d.Against, 10) == against {
			return d, nil
		}
	}
	return nil, notFound("member #%d has no diff against %s (it has one against the reference, and one against its parent when that is another program)", pv.Child.ID, against)
}

// telemetryDoc is what a program's telemetry shows.
type telemetryDoc struct {
	Curve    []harness.Step    `json:"curve"`
	Vals     []harness.Val     `json:"vals"`
	Sections []harness.Section `json:"sections"`
	TopOps   *harness.TopOps   `json:"top_ops,omitempty"`
	Memory   *harness.Memory   `json:"memory,omitempty"`
}

func telemetryOf(t *harness.Telemetry) *telemetryDoc {
	if t == nil {
		return nil
	}
	return &telemetryDoc{Curve: t.Steps, Vals: t.Vals, Sections: t.Sections, TopOps: t.TopOps, Memory: t.Memory}
}

func (s *Server) apiTelemetry(r *http.Request) (any, error) {
	pv, err := s.program(r)
	if err != nil {
		return nil, err
	}
	if pv.Telemetry == nil {
		return nil, notFound("member #%d has no telemetry (no full evaluation recorded one)", pv.Child.ID)
	}
	return telemetryOf(pv.Telemetry), nil
}

func (s *Server) apiCompare(r *http.Request) (any, error) {
	v, err := s.compare(r.Context(), r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"a": runview.Row(v.A.Child, v.A.Members), "b": runview.Row(v.B.Child, v.B.Members), "diff": v.Diff}, nil
}

func (s *Server) reportData(r *http.Request) (*report.Data, []report.Figure, *store.Run, error) {
	ctx := r.Context()
	run, err := s.run(ctx, r.PathValue("run"))
	if err != nil {
		return nil, nil, nil, err
	}
	w, sum, err := s.summary(ctx, run)
	if err != nil {
		return nil, nil, nil, err
	}
	figs, d, err := s.figures(ctx, w, sum)
	return d, figs, run, err
}

func (s *Server) apiReport(r *http.Request) (any, error) {
	d, _, _, err := s.reportData(r)
	return d, err
}

func (s *Server) apiIterations(r *http.Request) (any, error) {
	d, _, _, err := s.reportData(r)
	if err != nil {
		return nil, err
	}
	its := report.Iterations(d)
	if its == nil {
		its = []report.Iteration{}
	}
	return map[string]any{"iterations": its}, nil
}

// figureDoc is a figure with where its SVG is.
type figureDoc struct {
	report.Figure
	URL string `json:"url,omitempty"`
}

func (s *Server) apiFigures(r *http.Request) (any, error) {
	_, figs, run, err := s.reportData(r)
	if err != nil {
		return nil, err
	}
	out := []figureDoc{}
	for _, f := range figs {
		d := figureDoc{Figure: f}
		if len(f.SVG) > 0 {
			d.URL = "/runs/" + strconv.FormatInt(run.ID, 10) + "/figures/" + f.Name + ".svg"
		}
		out = append(out, d)
	}
	return map[string]any{"figures": out}, nil
}

func (s *Server) apiEvals(r *http.Request) (any, error) {
	f, err := evalFilter(r)
	if err != nil {
		return nil, err
	}
	evs, err := s.st.Evaluations(r.Context(), f)
	if err != nil {
		return nil, err
	}
	rows := []evalRow{}
	for _, e := range evs {
		rows = append(rows, evalRowOf(e))
	}
	return map[string]any{"evaluations": rows}, nil
}

func (s *Server) apiEval(r *http.Request) (any, error) {
	eid, err := id(r, "id")
	if err != nil {
		return nil, err
	}
	v, err := runview.ViewEvaluation(r.Context(), s.st, eid)
	if err != nil {
		return nil, err
	}
	doc := map[string]any{"evaluation": evalRowOf(v.Evaluation), "telemetry": telemetryOf(v.Telemetry)}
	if len(v.Evaluation.Result) > 0 {
		doc["result"] = json.RawMessage(v.Evaluation.Result)
	}
	return doc, nil
}

func (s *Server) apiBenchAll(r *http.Request) (any, error) {
	return runview.LoadBench(r.Context(), s.st, nil)
}

func (s *Server) apiBench(r *http.Request) (any, error) {
	ctx := r.Context()
	br, err := s.st.BenchRun(ctx, r.PathValue("run"))
	if err != nil {
		return nil, err
	}
	rep, err := runview.LoadBench(ctx, s.st, []string{strconv.FormatInt(br.ID, 10)})
	if err != nil {
		return nil, err
	}
	as, err := s.st.BenchAttempts(ctx, br.ID)
	if err != nil {
		return nil, err
	}
	if as == nil {
		as = []*store.BenchAttempt{}
	}
	return map[string]any{"run": br, "report": rep, "attempts": as}, nil
}
