package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
)

func TestExitCode(t *testing.T) {
	cases := []struct {
		err  error
		code int
	}{
		{nil, exitOK},
		{errors.New("disk full"), exitFailure},
		{usage(errors.New("bad flag")), exitUsage},
		{fmt.Errorf("context: %w", usage(errors.New("bad flag"))), exitUsage},
		{verdictResult(eval.Acceptable), exitOK},
		{verdictResult(eval.FastOK), exitOK},
		{verdictResult(eval.LossTooHigh), exitTooHigh},
		{verdictResult(eval.Error), exitError},
		{verdictResult(eval.Timeout), exitTimeout},
		{verdictResult(eval.Invalid), exitInvalid},
		{verdictResult(eval.NoResult), exitNoResult},
		{&notConfirmedError{"p = 0.2"}, exitNotConfirmed},
		{interruptedError{}, exitInterrupted},
		{fmt.Errorf("calibrate: %w", context.Canceled), exitInterrupted}, // Ctrl-C in any command
		{exitStatus(0), exitOK},
		{exitStatus(126), 126},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.code {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
	if usage(nil) != nil {
		t.Error("usage(nil) is not nil")
	}
}

// Command lines cobra rejects are usage errors (2), each with its message
// on stderr: no text is matched to decide the code.
func TestCommandLineErrors(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nosuchcommand"}, `unknown command "nosuchcommand"`},
		{[]string{"eval", "--nosuchflag"}, "unknown flag: --nosuchflag"},
		{[]string{"eval", "--seed", "x"}, "invalid argument"},
		{[]string{"eval", "--track"}, "flag needs an argument"},
		{[]string{"eval", "a.py", "b.py"}, "accepts at most 1 arg"},
		{[]string{"runs", "show"}, "accepts 1 arg"},
		{[]string{"--log-level", "loud", "runs"}, "--log-level"},
		{[]string{"track", "import"}, "--from is required"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--home", home}, c.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), exitUsage, c.want)
		}
	}
	// Help is not an error.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"help", "eval"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "Exit codes") {
		t.Errorf("help eval: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// A command run with --json that fails before it printed its JSON prints
// a JSON error on stdout, with the exit code; one that printed its JSON
// adds nothing to it.
func TestJSONErrors(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--config", "/nonexistent.yaml", "doctor", "--json"}, exitUsage, "read config"},
		{[]string{"track", "list", "--json", "--nosuchflag"}, exitUsage, "unknown flag"},
		{[]string{"nosuchcommand", "--json"}, exitUsage, "unknown command"},
		{[]string{"llm", "models", "--json", "extra"}, exitUsage, "unknown command"},
		{[]string{"runs", "--json"}, exitFailure, "no database at"},
		{[]string{"runs", "show", "x", "--json"}, exitFailure, "no database at"},
		{[]string{"report", "x", "--json"}, exitFailure, "no database at"},
		{[]string{"eval", "/dev/zero", "--json"}, exitUsage, "/dev/zero is a character device"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--home", home}, c.args...), &stdout, &stderr)
		var got jsonError
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || code != c.code || got.ExitCode != c.code || !strings.Contains(got.Error, c.want) {
			t.Errorf("%q: exit %d, stdout %q (%v); want exit %d and a JSON error with %q", c.args, code, stdout.String(), err, c.code, c.want)
		}
	}
	// Without --json, stdout stays empty.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--config", "/nonexistent.yaml", "track", "list"}, &stdout, &stderr); code != exitUsage || stdout.Len() != 0 {
		t.Errorf("without --json: exit %d, stdout %q", code, stdout.String())
	}
}

// Log lines read as text among a command's output: no time stamps, a
// word for what needs attention.
func TestHumanLogs(t *testing.T) {
	var b bytes.Buffer
	g := &globals{logLevel: "info", logFormat: "human"}
	h, err := g.logHandler(&b)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(h).With("track", "tiny")
	log.Info("fetching", "dir", "/tmp/a b", "n", 3)
	log.Warn("slow", "took", 2*time.Second)
	log.WithGroup("g").Error("failed", "err", errors.New("boom"))
	log.Debug("hidden")
	want := "fetching track=tiny dir=\"/tmp/a b\" n=3\nwarning: slow track=tiny took=2s\nerror: failed track=tiny g.err=boom\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, f := range []string{"text", "json"} {
		g.logFormat = f
		if _, err := g.logHandler(&b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	g.logFormat = "xml"
	if _, err := g.logHandler(&b); exitCode(err) != exitUsage {
		t.Errorf("--log-format xml: %v", err)
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "frontier ") {
		t.Errorf("--version: exit %d: %q", code, stdout.String())
	}
	stdout.Reset()
	var v versionInfo
	if code := run(context.Background(), []string{"version", "--json"}, &stdout, &stderr); code != 0 || json.Unmarshal(stdout.Bytes(), &v) != nil || v.Version == "" || v.Go == "" {
		t.Errorf("version --json: exit %d: %q", code, stdout.String())
	}
}

// --limit is on every command that runs full evaluations, and a limit
// that is not a positive duration is refused before anything runs.
func TestLimitFlag(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"eval", "--limit", "-5m"},
		{"evolve", "--limit", "-5m", "--proposer", "mutate"},
		{"bench", "run", "tiny-ladder", "--limit", "-5m", "--proposer", "mutate"},
		{"runs", "confirm", "r1", "--limit", "-5m"},
	} {
		code, _, stderr := runCLI(t, append([]string{"--home", home}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "--limit -5m0s: want a positive duration") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
		code, out, _ := runCLI(t, append(args[:len(args)-2:len(args)-2], "--help")...)
		if code != 0 || !strings.Contains(out, "--limit duration") || !strings.Contains(out, "extended while the run keeps stepping") {
			t.Errorf("%v --help lacks --limit:\n%s", args[:len(args)-2], out)
		}
	}
}
