package dashboard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/frontier-bench/frontier/internal/testdeps"
)

// ShotsEnv names a folder where TestBrowser saves a screenshot of each
// page (docs/dashboard.md shows them): make dashboard-shots.
const ShotsEnv = "FRONTIER_DASHBOARD_SHOTS"

// findChromium returns a Chromium to drive, or "" when none is installed
// (scripts/install-deps.sh installs Debian's).
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// consoleErrors collects what a page reports as an error: console.error,
// an uncaught exception, and the browser's own log errors (a refused
// script or style, a file that did not load).
type consoleErrors struct {
	mu   sync.Mutex
	errs []string
}

func (c *consoleErrors) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			parts = append(parts, string(a.Value)+a.Description)
		}
		msg = "console.error: " + strings.Join(parts, " ")
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.EntryLevelError {
			return
		}
		msg = "log: " + ev.Entry.Text + " " + ev.Entry.URL
	default:
		return
	}
	c.mu.Lock()
	c.errs = append(c.errs, msg)
	c.mu.Unlock()
}

func (c *consoleErrors) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.errs
	c.errs = nil
	return out
}

// TestBrowser drives a real headless Chromium over the dashboard of a
// running search whose names and programs hold HTML and script: the token
// is required (the server is treated as off loopback), every page renders
// with no console error and runs none of the hostile text, and a child
// written while the run's page is open appears on it without a reload.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	chromium := findChromium()
	if chromium == "" {
		testdeps.Missing(t, "chromium", "chromium not found on PATH: install it (scripts/install-deps.sh) to run the browser test")
	}
	const token = "browser-test-token-0123456789abcdef"
	wd := newWorld(t, token, 60)
	dir := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("no-sandbox", true), // the test may run as root in a container
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1400, 1000),
		chromedp.Env("HOME="+dir),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	var cons consoleErrors
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(cons.listen))
	defer cancel()
	// The first run starts the browser; it has no timeout of its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	step := func(what string, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, d)
		defer scancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		defer scancel()
		s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	eval := func(expr string) bool {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		defer scancel()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	shots := os.Getenv(ShotsEnv)
	shot := func(name string) {
		if shots == "" {
			return
		}
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		b, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot of %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Without the token: 401, and nothing of the store.
	step("open without the token", 20*time.Second, chromedp.Navigate(wd.ts.URL+"/"))
	if body := text("body"); !strings.Contains(body, "401") || strings.Contains(body, "search") {
		t.Errorf("without the token the page says %q", body)
	}
	cons.take() // the 401 itself is logged as a failed load
	// The address printed at start carries the token once.
	step("open with the token", 20*time.Second, chromedp.Navigate(WithToken(wd.ts.URL+"/", token)))
	if eval(`location.search.includes("token")`) {
		t.Error("the token stayed in the address bar")
	}

	run, rec, ref := wd.fix.Run.ID, wd.fix.Record.ID, wd.fix.Reference.ID
	pages := []struct{ name, path, want string }{
		{"runs", "/", "Searches"},
		{"run", fmt.Sprintf("/runs/%d", run), "Lineage of the record"},
		{"program", fmt.Sprintf("/runs/%d/members/%d", run, rec), "Verdict and why"},
		{"compare", fmt.Sprintf("/runs/%d/compare?a=%d&b=%d", run, ref, rec), "Side by side"},
		{"evals", "/evals", "Evaluations"},
		{"eval", fmt.Sprintf("/evals/%d", wd.eval.ID), "Evaluation #"},
		{"bench-runs", "/bench", "FSR per task"},
		{"bench-run", "/bench/" + wd.bench.Name, "FSR per task"},
	}
	for _, p := range pages {
		step("open "+p.path, 30*time.Second, chromedp.Navigate(wd.ts.URL+p.path), chromedp.WaitVisible(chromedp.CSS("footer")))
		// Let the figures load and the event stream connect.
		step("settle "+p.path, 10*time.Second, chromedp.Sleep(700*time.Millisecond))
		if body := text("main"); !strings.Contains(body, p.want) {
			t.Errorf("%s does not say %q", p.path, p.want)
		}
		if eval(`window.__pwned !== undefined`) {
			t.Errorf("%s ran the hostile text", p.path)
		}
		if !eval(`[...document.images].every(i => i.complete && i.naturalWidth > 0)`) {
			t.Errorf("%s has an image that did not load", p.path)
		}
		for _, e := range cons.take() {
			t.Errorf("%s: %s", p.path, e)
		}
		shot(p.name)
	}
	// The hostile run name is shown as text.
	step("open the run", 30*time.Second, chromedp.Navigate(fmt.Sprintf("%s/runs/%d", wd.ts.URL, run)), chromedp.WaitVisible(chromedp.CSS("footer")))
	if h := text("h1"); !strings.Contains(h, "<script>window.__pwned=1</script>") {
		t.Errorf("the run's name is not shown as text: %q", h)
	}

	// Live: a child written while the page is open appears, without a
	// reload (the mark set on the window survives), and then its verdict.
	step("wait for the stream", 20*time.Second, chromedp.WaitVisible(chromedp.CSS("#live.on")))
	eval(`(window.__mark = 42) === 42`)
	c, err := wd.fix.Propose(context.Background(), wd.w, wd.fix.Run.Iterations, "a child written while the page is open")
	if err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf("#m-%d", c.ID)
	step("the new child's row", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(row)))
	if err := wd.fix.Settle(context.Background(), wd.w, c, "acceptable", 8_000); err != nil {
		t.Fatal(err)
	}
	step("the new child's verdict", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(row+" .v-acceptable")))
	if !eval(`window.__mark === 42`) {
		t.Error("the page was reloaded to show the new child")
	}
	for _, e := range cons.take() {
		t.Errorf("while live: %s", e)
	}
	shot("run-live")
}
