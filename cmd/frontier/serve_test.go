package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runview"
)

// lockedBuffer is a buffer the command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveCLI starts frontier serve with args and returns the address it
// printed, a func that stops it and returns its exit code, and its output.
func serveCLI(t *testing.T, args ...string) (string, func() int, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	code := make(chan int, 1)
	go func() { code <- run(ctx, args, &out, &errb) }()
	addr := regexp.MustCompile(`http://\S+`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if u := addr.FindString(out.String()); u != "" {
			stop := sync.OnceValue(func() int { cancel(); return <-code })
			t.Cleanup(func() { stop() })
			return u, stop, &out
		}
		select {
		case c := <-code:
			t.Fatalf("serve ended with %d before it listened:\n%s%s", c, out.String(), errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	t.Fatalf("serve printed no address:\n%s%s", out.String(), errb.String())
	return "", nil, nil
}

func fetch(t *testing.T, url string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// frontier serve serves the database on loopback without a token, and
// its API says what runs --json says; off loopback it prints a token and
// refuses requests without it; Ctrl-C ends it with 0.
func TestServe(t *testing.T) {
	home := t.TempDir()
	confirmedRun(t, home)

	u, stop, _ := serveCLI(t, "--home", home, "serve", "--addr", "127.0.0.1:0", "--poll", "100ms")
	code, body := fetch(t, u+"api/runs")
	if code != http.StatusOK {
		t.Fatalf("GET /api/runs: %d %s", code, body)
	}
	var api, cli runview.RunsDoc
	if err := json.Unmarshal([]byte(body), &api); err != nil {
		t.Fatal(err)
	}
	jsonOf(t, &cli, "--home", home, "runs", "--json")
	// The two agree but for when they were read.
	for _, d := range []*runview.RunsDoc{&api, &cli} {
		for i := range d.Runs {
			d.Runs[i].Stale = false
		}
	}
	a, _ := json.Marshal(api)
	c, _ := json.Marshal(cli)
	if !bytes.Equal(a, c) {
		t.Errorf("the API and runs --json disagree:\napi %s\ncli %s", a, c)
	}
	if code, body := fetch(t, u); code != http.StatusOK || !strings.Contains(body, "db-run") {
		t.Errorf("GET /: %d", code)
	}
	if got := stop(); got != 0 {
		t.Errorf("serve stopped with %d", got)
	}

	u, _, out := serveCLI(t, "--home", home, "serve", "--addr", "0.0.0.0:0")
	tok := regexp.MustCompile(`Bearer (\S+)`).FindStringSubmatch(out.String())
	if tok == nil || !strings.Contains(u, "?token=") {
		t.Fatalf("off loopback, serve printed no token:\n%s", out.String())
	}
	base := u[:strings.Index(u, "?")]
	if code, body := fetch(t, base+"api/runs"); code != http.StatusUnauthorized || strings.Contains(body, "db-run") {
		t.Errorf("without the token: %d %s", code, body)
	}
	if code, _ := fetch(t, base+"api/runs", "Authorization", "Bearer "+tok[1]); code != http.StatusOK {
		t.Errorf("with the token: %d", code)
	}

	for _, args := range [][]string{{"--addr", "nonsense"}, {"--poll", "0s"}} {
		if code, _, stderr := runCLI(t, append([]string{"--home", home, "serve"}, args...)...); code != exitUsage {
			t.Errorf("serve %q: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "--home", t.TempDir(), "serve"); code != 1 || !strings.Contains(stderr, "no database") {
		t.Errorf("serve without a database: exit %d: %s", code, stderr)
	}
}
