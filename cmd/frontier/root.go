package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
)

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
		return nil, usage(err)
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
				return usage(fmt.Errorf("--log-level %q: use debug, info, warn or error", g.logLevel))
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
		newBenchCmd(g),
		newSandboxCmd(g),
	)
	markUsageErrors(root)
	return root
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr, log: slog.New(slog.NewTextHandler(stderr, nil))}
	root := newRootCmd(g)
	root.SetArgs(args)
	err := checkCommand(root, args)
	if err == nil {
		err = root.ExecuteContext(ctx)
	}
	var r reporter
	if err != nil && !errors.As(err, &r) {
		fmt.Fprintln(stderr, "frontier:", err)
	}
	return exitCode(err)
}

// checkCommand rejects an unknown command as a usage error before cobra
// runs, which would return it as text only. cobra adds its help and
// completion commands on Execute; they are added first so that they are
// found. Shell completion requests go to cobra untouched.
func checkCommand(root *cobra.Command, args []string) error {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return nil
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	if _, _, err := root.Find(args); err != nil {
		return usage(err)
	}
	return nil
}
