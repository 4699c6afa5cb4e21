package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
)

// Exit codes. Verdict codes are documented in docs/cli.md.
const (
	exitOK       = 0
	exitFailure  = 1 // an error that is not a verdict
	exitUsage    = 2 // bad flags, bad config, bad track
	exitTooHigh  = 3 // verdict loss_too_high
	exitError    = 4 // verdict error
	exitTimeout  = 5 // verdict timeout
	exitInvalid  = 6 // verdict invalid
	exitNoResult = 7 // verdict no_result
	// exitNotConfirmed: runs confirm found no significant speedup.
	exitNotConfirmed = 8
)

// exitError carries an exit code through cobra's error return.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitCodeError) Unwrap() error { return e.err }

// withCode attaches an exit code to err.
func withCode(code int, err error) error { return &exitCodeError{code: code, err: err} }

// globals are the flags every command shares, and what they resolve to.
type globals struct {
	configPath string
	home       string
	db         string
	logLevel   string

	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
}

// loadConfig reads frontier.yaml (if any) and applies the global flags.
func (g *globals) loadConfig() (*config.Config, error) {
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	if g.home != "" {
		cfg.SetHome(g.home)
	}
	if g.db != "" {
		cfg.DB = g.db
	}
	return cfg, nil
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "frontier",
		Short: "Run, verify and evolve LLM-pretraining programs on standardized speedrun tracks",
		Long: `frontier runs candidate training programs on a standardized track, verifies and
times them with its own code, records telemetry, and searches for faster programs.

Start with:  frontier doctor   then   frontier eval --track tiny`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
				return withCode(exitUsage, fmt.Errorf("--log-level %q: use debug, info, warn or error", g.logLevel))
			}
			g.log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: lvl}))
			return nil
		},
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config", "", "config file (default: $FRONTIER_CONFIG, else ./frontier.yaml if present)")
	pf.StringVar(&g.home, "home", "", "state folder for the database, data and runs (default: $FRONTIER_HOME, else ~/.local/share/frontier)")
	pf.StringVar(&g.db, "db", "", "database path (default: <home>/frontier.db)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")

	root.AddCommand(
		newDoctorCmd(g),
		newTrackCmd(g),
		newDataCmd(g),
		newEvalCmd(g),
		newLLMCmd(g),
		newEditCmd(g),
		newEvolveCmd(g),
		newRunsCmd(g),
		newDemoCmd(g),
		newReportCmd(g),
		newSandboxCmd(g),
	)
	return root
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr, log: slog.New(slog.NewTextHandler(stderr, nil))}
	root := newRootCmd(g)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ce *exitCodeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintln(stderr, "frontier:", ce.err)
		}
		return ce.code
	}
	fmt.Fprintln(stderr, "frontier:", err)
	if isUsageError(err) {
		return exitUsage
	}
	return exitFailure
}

// isUsageError reports whether cobra rejected the command line itself.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
