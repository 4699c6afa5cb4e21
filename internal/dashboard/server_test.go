package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runview/runviewtest"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// world is a store written by a search and read by a dashboard.
type world struct {
	w, r   store.Store
	fix    *runviewtest.Fixture
	bench  *store.BenchRun
	eval   *store.Evaluation
	srv    *Server
	ts     *httptest.Server
	cancel context.CancelFunc
}

// newWorld seeds a running search (hostile names and code), a bench run and
// an evaluation, and serves them on loopback with the token, if any.
func newWorld(t testing.TB, token string, children int) *world {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "frontier.db")
	w := storetest.SQLite(t, path)
	wd := &world{w: w}
	var err error
	if wd.fix, err = runviewtest.Seed(ctx, w, runviewtest.Options{Name: "search" + runviewtest.Hostile, Children: children, Running: true, Hostile: true, Calls: children <= 100}); err != nil {
		t.Fatal(err)
	}
	if wd.bench, err = runviewtest.SeedBench(ctx, w, "bench-1", true); err != nil {
		t.Fatal(err)
	}
	if wd.eval, err = runviewtest.SeedEvaluation(ctx, w, "acceptable", true); err != nil {
		t.Fatal(err)
	}
	if wd.r, err = store.OpenReader(ctx, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wd.r.Close() })
	if wd.srv, err = New(wd.r, Options{Token: token, Poll: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	wd.cancel = cancel
	done := make(chan struct{})
	go func() { defer close(done); wd.srv.Run(rctx) }()
	wd.ts = httptest.NewServer(wd.srv.Handler())
	t.Cleanup(func() {
		cancel()
		<-done
		wd.ts.Close()
	})
	return wd
}

// pages are every page and API document of the world, with what each
// must say.
func (wd *world) pages() map[string]string {
	run := fmt.Sprint(wd.fix.Run.ID)
	rec := fmt.Sprint(wd.fix.Record.ID)
	ref := fmt.Sprint(wd.fix.Reference.ID)
	return map[string]string{
		"/":            "Searches",
		"/runs/" + run: "Lineage of the record",
		"/runs/" + run + "?class=acceptable&sort=time&page=1": "Members",
		"/runs/" + run + "/members/" + rec:                    "Verdict and why",
		"/runs/" + run + "/compare?a=" + ref + "&b=" + rec:    "Side by side",
		"/evals":                           "Evaluations",
		"/evals/" + fmt.Sprint(wd.eval.ID): "Evaluation #",
		"/bench":                           "FSR per task",
		"/bench/" + wd.bench.Name:          "FSR per task",
		"/api/runs":                        `"runs"`,
		"/api/runs/" + run:                 `"claims"`,
		"/api/runs/" + run + "/members?per_page=5":             `"members"`,
		"/api/runs/" + run + "/members/" + rec:                 `"lineage"`,
		"/api/runs/" + run + "/members/" + rec + "/program":    "import torch",
		"/api/runs/" + run + "/members/" + rec + "/diff":       `"label"`,
		"/api/runs/" + run + "/members/" + rec + "/telemetry":  `"sections"`,
		"/api/runs/" + run + "/compare?a=" + ref + "&b=" + rec: `"diff"`,
		"/api/runs/" + run + "/report":                         `"programs"`,
		"/api/runs/" + run + "/iterations":                     `"iterations"`,
		"/api/runs/" + run + "/figures":                        `"figures"`,
		"/api/evals":                                           `"evaluations"`,
		"/api/evals/" + fmt.Sprint(wd.eval.ID):                 `"evaluation"`,
		"/api/bench":                                           `"tasks"`,
		"/api/bench/" + wd.bench.Name:                          `"attempts"`,
		"/runs/" + run + "/figures/time_vs_iteration.svg":      "<svg",
		"/runs/" + run + "/members/" + rec + "/curve.svg":      "<svg",
		"/evals/" + fmt.Sprint(wd.eval.ID) + "/curve.svg":      "<svg",
	}
}

func get(t testing.TB, c *http.Client, url string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Every page and document answers, says what it shows, and shows a
// hostile name or program as text.
func TestPages(t *testing.T) {
	wd := newWorld(t, "", 40)
	for path, want := range wd.pages() {
		code, body, h := get(t, wd.ts.Client(), wd.ts.URL+path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d\n%.400s", path, code, body)
			continue
		}
		if !strings.Contains(body, want) {
			t.Errorf("GET %s does not say %q:\n%.600s", path, want, body)
		}
		if strings.HasSuffix(path, "/program") {
			continue // text/plain, nosniff: a program as it is
		}
		if strings.Contains(body, "<script>window.__pwned") || strings.Contains(body, `onerror="window.__pwned`) {
			t.Errorf("GET %s holds the hostile text as markup", path)
		}
		if ct := h.Get("Content-Type"); strings.HasPrefix(path, "/api/") && !strings.HasSuffix(path, "/program") && ct != "application/json" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		if !strings.HasPrefix(path, "/api/") && !strings.HasSuffix(path, ".svg") && !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: no content security policy", path)
		}
	}
	// The hostile name is on the front page, escaped.
	_, body, _ := get(t, wd.ts.Client(), wd.ts.URL+"/")
	if !strings.Contains(body, "&lt;script&gt;window.__pwned=1&lt;/script&gt;") {
		t.Errorf("the front page does not show the hostile run name as text")
	}
	for path, code := range map[string]int{
		"/runs/nope":                               404,
		"/runs/1/members/0":                        400,
		"/runs/1/members/999999":                   404,
		"/runs/1?sort=sideways":                    400,
		"/api/runs/1/members?per_page=100000":      400,
		"/api/runs/1/compare?a=x&b=2":              400,
		"/evals/abc":                               400,
		"/nothing/here":                            404,
		"/api/runs/1/members/1/diff?against=99999": 404,
	} {
		got, body, _ := get(t, wd.ts.Client(), wd.ts.URL+path)
		if got != code {
			t.Errorf("GET %s: %d, want %d\n%.300s", path, got, code, body)
		}
		if strings.HasPrefix(path, "/api/") && !strings.Contains(body, `"error"`) {
			t.Errorf("GET %s: the error is not JSON: %.200s", path, body)
		}
	}
}

// The CLI's documents and the API's are one: runs show --json's shape is
// the API's run (runview.RunDoc), decoded strictly.
func TestAPIShapes(t *testing.T) {
	wd := newWorld(t, "", 20)
	_, body, _ := get(t, wd.ts.Client(), fmt.Sprintf("%s/api/runs/%d", wd.ts.URL, wd.fix.Run.ID))
	var doc struct {
		Run struct {
			ID     int64 `json:"id"`
			Record *struct {
				ID int64 `json:"id"`
				N  int   `json:"n"`
			} `json:"record"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || doc.Run.ID != wd.fix.Run.ID || doc.Run.Record == nil || doc.Run.Record.ID != wd.fix.Record.ID {
		t.Errorf("the run's document: %v\n%.500s", err, body)
	}
}

// Off loopback the token is required: without it, or with a wrong one,
// 401 and nothing else; with it (a header, the link, then the cookie),
// the page. Writes are refused.
func TestToken(t *testing.T) {
	const token = "s3cret-token-of-the-test-0123456789"
	wd := newWorld(t, token, 10)
	c := wd.ts.Client()
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic " + token}, {"Cookie", tokenCookie + "=nope"}} {
		for _, path := range []string{"/", "/api/runs", "/api/events", "/static/dash.js"} {
			code, body, _ := get(t, c, wd.ts.URL+path, hdr...)
			if code != http.StatusUnauthorized || strings.Contains(body, "search") || len(body) > 40 {
				t.Errorf("GET %s with %v: %d %q, want 401 and nothing else", path, hdr, code, body)
			}
		}
	}
	if code, _, _ := get(t, c, wd.ts.URL+"/api/runs", "Authorization", "Bearer "+token); code != 200 {
		t.Errorf("with the bearer token: %d", code)
	}
	// The icon a browser asks for on its own, the 401 page's included:
	// empty, without the token, and not a failed load.
	if code, body, _ := get(t, c, wd.ts.URL+"/favicon.ico"); code != http.StatusNoContent || body != "" {
		t.Errorf("GET /favicon.ico without the token: %d %q, want 204 and nothing", code, body)
	}
	// The link with the token sets a cookie and takes the token out of
	// the address.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(wd.ts.URL + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == tokenCookie {
			cookie = ck
		}
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || cookie == nil || !cookie.HttpOnly {
		t.Fatalf("the link with the token: %d, Location %q, cookie %+v", resp.StatusCode, resp.Header.Get("Location"), cookie)
	}
	if code, body, _ := get(t, c, wd.ts.URL+"/", "Cookie", tokenCookie+"="+cookie.Value); code != 200 || !strings.Contains(body, "Searches") {
		t.Errorf("with the cookie: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, wd.ts.URL+"/api/runs", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// Without a token only requests addressed to this machine's loopback are
// answered: a page of another site that resolved its name to 127.0.0.1
// (DNS rebinding) reads nothing.
func TestLoopbackHost(t *testing.T) {
	wd := newWorld(t, "", 10)
	req, _ := http.NewRequest(http.MethodGet, wd.ts.URL+"/api/runs", nil)
	req.Host = "evil.example:8080"
	resp, err := wd.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request for evil.example: %d, want 403", resp.StatusCode)
	}
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true, "0.0.0.0:8080": false, ":8080": false, "10.0.0.5:80": false, "nonsense": false} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v", addr, got)
		}
	}
}

// sse reads server-sent events from a stream.
type sse struct {
	sc *bufio.Scanner
}

func (s *sse) next(t testing.TB, name string, deadline time.Duration) map[string]any {
	t.Helper()
	type ev struct {
		name string
		data string
	}
	got := make(chan ev, 1)
	go func() {
		var e ev
		for s.sc.Scan() {
			l := s.sc.Text()
			switch {
			case strings.HasPrefix(l, "event: "):
				e.name = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				e.data = strings.TrimPrefix(l, "data: ")
			case l == "" && e.name != "":
				if e.name == name {
					got <- e
					return
				}
				e = ev{}
			}
		}
		close(got)
	}()
	select {
	case e, ok := <-got:
		if !ok {
			t.Fatalf("the stream ended before a %s event", name)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(e.data), &v); err != nil {
			t.Fatalf("%s event: %v: %s", name, err, e.data)
		}
		return v
	case <-time.After(deadline):
		t.Fatalf("no %s event in %s", name, deadline)
	}
	return nil
}

// A child written while a run's stream is open arrives as an event, with
// its row rendered, and then its verdict; the list's stream gets the
// run's row.
func TestEvents(t *testing.T) {
	wd := newWorld(t, "", 20)
	ctx := context.Background()
	open := func(q string) *sse {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, wd.ts.URL+"/api/events"+q, nil)
		resp, err := wd.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("events: Content-Type %q", ct)
		}
		s := &sse{sc: bufio.NewScanner(resp.Body)}
		s.sc.Buffer(nil, 4<<20)
		s.next(t, "hello", 5*time.Second)
		return s
	}
	runStream := open(fmt.Sprintf("?run=%d", wd.fix.Run.ID))
	list := open("")
	c, err := wd.fix.Propose(ctx, wd.w, wd.fix.Run.Iterations, "a child <b>written</b> live")
	if err != nil {
		t.Fatal(err)
	}
	ev := runStream.next(t, "member", 30*time.Second)
	if ev["id"] != float64(c.ID) || !strings.Contains(ev["html"].(string), "a child &lt;b&gt;written&lt;/b&gt; live") {
		t.Errorf("member event: %v", ev)
	}
	sum := runStream.next(t, "summary", 30*time.Second)
	if secs, ok := sum["sections"].(map[string]any); !ok || secs["head"] == nil || secs["figures"] == nil {
		t.Errorf("summary event: %v", sum)
	}
	if err := wd.fix.Settle(ctx, wd.w, c, "acceptable", 9_000); err != nil {
		t.Fatal(err)
	}
	ev = runStream.next(t, "member", 30*time.Second)
	if m, _ := ev["member"].(map[string]any); ev["id"] != float64(c.ID) || m["verdict"] != "acceptable" {
		t.Errorf("the verdict's event: %v", ev)
	}
	row := list.next(t, "run", 30*time.Second)
	if row["id"] != float64(wd.fix.Run.ID) {
		t.Errorf("run event: %v", row)
	}
}
