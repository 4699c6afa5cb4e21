package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/store"
)

// Exit codes, listed per command in docs/cli.md. exitCode is the one place
// that maps an error to one; commands return typed errors and never pick a
// number themselves.
const (
	exitOK       = 0
	exitFailure  = 1 // an error that is none of the below
	exitUsage    = 2 // bad flags, arguments, config, track or input
	exitTooHigh  = 3 // verdict loss_too_high
	exitError    = 4 // verdict error
	exitTimeout  = 5 // verdict timeout
	exitInvalid  = 6 // verdict invalid
	exitNoResult = 7 // verdict no_result
	// exitNotConfirmed: runs confirm (or evolve --confirm) found no
	// significant speedup.
	exitNotConfirmed = 8
	// exitHeld: evolve --resume of a run that a live process runs, here
	// or on another machine (or a session that lost its run to another).
	exitHeld = 9
	// exitInterrupted: a run stopped by Ctrl-C (128 + SIGINT, the shell's
	// convention).
	exitInterrupted = 130
)

// usageError is input the user must fix: a flag, an argument, the config,
// a track or a file named on the command line. Exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usage marks err as the user's input to fix.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// verdictError is an evaluation whose verdict is not acceptable (or
// fast_ok). Its report is printed already; the verdict picks the code.
type verdictError struct{ verdict eval.Verdict }

func (e *verdictError) Error() string { return "verdict " + string(e.verdict) }
func (e *verdictError) reported()     {}

// notConfirmedError: a record's speedup did not hold up in alternation.
type notConfirmedError struct{ reason string }

func (e *notConfirmedError) Error() string { return "not confirmed: " + e.reason }

// interruptedError: the run was drained or aborted by Ctrl-C; its summary
// is printed already.
type interruptedError struct{}

func (interruptedError) Error() string { return "interrupted" }
func (interruptedError) reported()     {}

// exitStatus is a code decided by a helper that has said why on stderr
// (the sandbox helper's).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (exitStatus) reported()       {}

// reporter is an error whose story is told already, on stdout or stderr;
// run prints nothing more for it.
type reporter interface{ reported() }

// exitCode maps what a command returned to the process's exit code.
func exitCode(err error) int {
	var (
		status exitStatus
		ve     *verdictError
		nc     *notConfirmedError
		ue     *usageError
		ie     interruptedError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &status):
		return int(status)
	case errors.Is(err, store.ErrHeld):
		return exitHeld
	case errors.As(err, &ie), errors.Is(err, context.Canceled):
		// The command's context is canceled only by Ctrl-C or SIGTERM
		// (main's signal context): whatever it was doing was interrupted.
		return exitInterrupted
	case errors.As(err, &ve):
		return verdictExitCode(ve.verdict)
	case errors.As(err, &nc):
		return exitNotConfirmed
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}

// verdictExitCode maps a verdict to the process exit code.
func verdictExitCode(v eval.Verdict) int {
	switch v {
	case eval.Acceptable, eval.FastOK:
		return exitOK
	case eval.LossTooHigh:
		return exitTooHigh
	case eval.Error:
		return exitError
	case eval.Timeout:
		return exitTimeout
	case eval.Invalid:
		return exitInvalid
	case eval.NoResult:
		return exitNoResult
	}
	return exitFailure
}

// verdictResult is the error a command returns for an evaluation's
// verdict: nil when it is acceptable (or fast_ok).
func verdictResult(v eval.Verdict) error {
	if verdictExitCode(v) == exitOK {
		return nil
	}
	return &verdictError{v}
}

// markUsageErrors makes cobra's own rejections of a command line typed: a
// flag it cannot parse (the flag-error hook) and arguments a command's
// Args rejects. Unknown commands are checked before cobra runs (see run).
func markUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if check := c.Args; check != nil {
			c.Args = func(cmd *cobra.Command, args []string) error { return usage(check(cmd, args)) }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
