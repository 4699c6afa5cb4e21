package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/config"
)

// globals are the flags every command shares, and what they resolve to.
type globals struct {
	configPath string
	home       string
	db         string
	logLevel   string
	logFormat  string

	// stdin is where "-" reads from; nil means os.Stdin.
	stdin  *os.File
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
}

// logHandler returns the handler of the --log-format flag at the
// --log-level, writing to w: "human" (the default) writes what a person
// reads among a command's own output ("warning: msg key=value", no time
// stamps), "text" and "json" are slog's, for files and machines.
func (g *globals) logHandler(w io.Writer) (slog.Handler, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usage(fmt.Errorf("--log-level %q: use debug, info, warn or error", g.logLevel))
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch g.logFormat {
	case "", "human":
		return &humanHandler{mu: &sync.Mutex{}, w: w, level: lvl}, nil
	case "text":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, usage(fmt.Errorf("--log-format %q: use human, text or json", g.logFormat))
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
		cfg.SetDB(g.db)
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
			h, err := g.logHandler(g.stderr)
			if err != nil {
				return err
			}
			g.log = slog.New(h)
			return nil
		},
		Version: buildVersion().String(),
	}
	root.SetVersionTemplate("frontier {{.Version}}\n")
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config", "", "config file (default: $FRONTIER_CONFIG, else ./frontier.yaml if present)")
	pf.StringVar(&g.home, "home", "", "state folder for the database, data and runs (default: $FRONTIER_HOME, else ~/.local/share/frontier)")
	pf.StringVar(&g.db, "db", "", "database: a SQLite file, or a postgres:// URL (default: db: in the config, else $FRONTIER_DB, else <home>/frontier.db)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "human", "log lines on stderr: human (for reading among the output), text or json (slog's, with time stamps)")

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
		newPhaseExecCmd(g),
		newPhaseWorkerCmd(g),
		newDBCmd(g),
		newServeCmd(g),
		newVersionCmd(g),
	)
	markUsageErrors(root)
	return root
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &countingWriter{w: stdout}
	g := &globals{stdout: out, stderr: stderr, log: slog.New(&humanHandler{mu: &sync.Mutex{}, w: stderr, level: slog.LevelInfo})}
	root := newRootCmd(g)
	root.SetArgs(args)
	cmd := root
	err := checkCommand(root, args)
	if err == nil {
		cmd, err = root.ExecuteContextC(ctx)
	}
	code := exitCode(err)
	var r reporter
	if err != nil && !errors.As(err, &r) {
		fmt.Fprintln(stderr, "frontier:", err)
	}
	// A script that asked for JSON gets JSON on stdout, even when the
	// command failed before it wrote any (a bad flag, the config): the
	// error and the exit code.
	if err != nil && out.n == 0 && wantsJSON(cmd, args) {
		writeJSON(stdout, jsonError{Error: err.Error(), ExitCode: code})
	}
	return code
}

// jsonError is what a command run with --json prints on stdout when it
// fails before it printed its own JSON.
type jsonError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// wantsJSON says whether the command line asked for JSON: the command's
// --json flag, or, when the flags could not be parsed, --json among the
// arguments.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			return f.Value.String() == "true"
		}
	}
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.Contains(args, "--json") || slices.Contains(args, "--json=true")
}

// countingWriter counts what a command wrote on stdout, so that run knows
// whether a JSON document was started.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
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

// humanHandler writes log records for a person reading them among a
// command's own output: no time stamp, no level for information, "warning:"
// or "error:" in front of what needs attention, then the message and its
// attributes as key=value, quoted where they hold spaces.
type humanHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Leveler
	attrs string // formatted attributes of WithAttrs
	group string // the prefix of WithGroup, "a.b."
}

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *humanHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	h2 := *h
	h2.attrs += b.String()
	return &h2
}

func (h *humanHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.group += name + "."
	return &h2
}

func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			appendAttr(b, p, ga)
		}
		return
	}
	v := a.Value.String()
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) }) {
		v = strconv.Quote(v)
	}
	b.WriteString(" " + prefix + a.Key + "=" + v)
}
