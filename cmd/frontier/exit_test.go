package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
