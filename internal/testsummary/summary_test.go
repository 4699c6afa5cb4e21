package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stream is what go test -json prints for four packages: b passes while
// a still runs, a fails in a subtest, c does not build, d has no tests.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestSlow"}
{"Action":"start","Package":"m/b"}
{"Action":"run","Package":"m/b","Test":"TestFast"}
{"Action":"output","Package":"m/b","Test":"TestFast","Output":"    b_test.go:3: chatter of a passing test\n"}
{"Action":"pass","Package":"m/b","Test":"TestFast","Elapsed":0.5}
{"Action":"run","Package":"m/b","Test":"TestNeedsTorch"}
{"Action":"skip","Package":"m/b","Test":"TestNeedsTorch","Elapsed":0}
{"Action":"pass","Package":"m/b","Elapsed":0.6}
{"Action":"run","Package":"m/a","Test":"TestSlow/case"}
{"Action":"output","Package":"m/a","Test":"TestSlow/case","Output":"    a_test.go:9: want 2, got 3\n"}
{"Action":"fail","Package":"m/a","Test":"TestSlow/case","Elapsed":40}
{"Action":"output","Package":"m/a","Test":"TestSlow","Output":"--- FAIL: TestSlow (41.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestSlow","Elapsed":41}
{"Action":"output","Package":"m/a","Output":"FAIL\n"}
{"Action":"fail","Package":"m/a","Elapsed":41.2}
{"ImportPath":"m/c [m/c.test]","Action":"build-output","Output":"c/c.go:3:1: syntax error\n"}
{"ImportPath":"m/c [m/c.test]","Action":"build-fail"}
{"Action":"start","Package":"m/c"}
{"Action":"fail","Package":"m/c","Elapsed":0,"FailedBuild":"m/c [m/c.test]"}
{"Action":"start","Package":"m/d"}
{"Action":"output","Package":"m/d","Output":"?   \tm/d\t[no test files]\n"}
{"Action":"skip","Package":"m/d","Elapsed":0}
`

func replay(t *testing.T, s *summary) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stream), "\n") {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		s.add(e)
	}
}

func TestSummary(t *testing.T) {
	var out bytes.Buffer
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSummary(&out, start)
	s.module = "m"
	now := start
	s.now = func() time.Time { now = now.Add(time.Second); return now }
	replay(t, s)
	s.finish(2)
	got := out.String()
	// Each package as it ends: b before a.
	if ib, ia := strings.Index(got, "ok    b "), strings.Index(got, "FAIL  a "); ib < 0 || ia < 0 || ib > ia {
		t.Errorf("b, which ended first, is not said first:\n%s", got)
	}
	for _, want := range []string{
		"ok    b                                        0.6s  (1 skipped)",
		"    a_test.go:9: want 2, got 3\n    --- FAIL: TestSlow (41.00s)\n    FAIL\n", // the failure in full
		"FAIL  c ", "    c/c.go:3:1: syntax error", // the build's errors
		"4 packages: 1 ok, 2 failed, 1 without tests; 3 tests, 1 skipped, 1 failed",
		"slowest tests:\n     41.0s  a TestSlow\n      0.5s  b TestFast\n",
		// The end names the failed subtest and says why.
		"failed (their output in full is above):\n  a TestSlow/case\n      a_test.go:9: want 2, got 3\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "chatter of a passing test") {
		t.Errorf("a passing test's output is printed:\n%s", got)
	}
}

// The line every minute says what still runs, and which tests.
func TestHeartbeat(t *testing.T) {
	var out bytes.Buffer
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSummary(&out, start)
	now := start
	s.now = func() time.Time { return now }
	s.heartbeat(start.Add(70 * time.Second))
	now = start.Add(90 * time.Second)
	s.add(event{Action: "start", Package: "m/a"})
	s.add(event{Action: "run", Package: "m/a", Test: "TestSlow"})
	now = start.Add(100 * time.Second)
	s.add(event{Action: "run", Package: "m/a", Test: "TestSlow/sub"})
	s.heartbeat(start.Add(200 * time.Second))
	for _, want := range []string{"still building the test binaries (1m10s so far)", "still running: m/a 1m50s (TestSlow 1m50s)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lacks %q:\n%s", want, out.String())
		}
	}
}

// run passes go test's exit code on, and says what ran.
func TestRunExitCode(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	os.WriteFile(events, []byte(stream), 0o600)
	for _, c := range []struct {
		exit string
		want int
	}{{"0", 1}, {"1", 1}, {"2", 2}} {
		fake := filepath.Join(dir, "go")
		os.WriteFile(fake, []byte("#!/bin/sh\ncat "+events+"\nexit "+c.exit+"\n"), 0o700)
		var out bytes.Buffer
		// exit 0 with failures in the stream is still a failure.
		if got := run(fake, []string{"./..."}, &out, time.Hour, 3); got != c.want {
			t.Errorf("go exits %s: run = %d, want %d\n%s", c.exit, got, c.want, out.String())
		}
		if !strings.Contains(out.String(), "go test ./...: building first") || !strings.Contains(out.String(), "4 packages") {
			t.Errorf("output:\n%s", out.String())
		}
	}
	fake := filepath.Join(dir, "go")
	os.WriteFile(fake, []byte("#!/bin/sh\necho '{\"Action\":\"start\",\"Package\":\"m/b\"}'\necho '{\"Action\":\"pass\",\"Package\":\"m/b\",\"Elapsed\":1}'\n"), 0o700)
	if got := run(fake, nil, &bytes.Buffer{}, time.Hour, 3); got != 0 {
		t.Errorf("a run that passed: %d", got)
	}
}
