package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/bench"
	"github.com/frontier-bench/frontier/internal/bench/published"
	"github.com/frontier-bench/frontier/internal/config"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/suites"
)

// The reproduction benchmark's commands: list, show and check suites,
// import the published benchmark, calibrate, run and report (docs/bench.md).

func suiteRegistry() *bench.Registry { return bench.NewRegistry(suites.FS) }

func newBenchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "The reproduction benchmark: reproduce record i+1 from record i, scored by the fraction of speedup recovered",
		Long: `The reproduction benchmark, after the Automated LLM Speedrunning Benchmark: a
search starts from the program of record i of a suite (optionally with hints
about what record i+1 changed) and is scored by the fraction of the speedup from
record i to record i+1 it recovers (FSR). See docs/bench.md.`,
	}
	cmd.AddCommand(newBenchListCmd(g), newBenchShowCmd(g), newBenchCheckCmd(g), newBenchImportCmd(g),
		newBenchCalibrateCmd(g), newBenchRunCmd(g), newBenchRunsCmd(g), newBenchReportCmd(g))
	return cmd
}

// suiteInfo is how list and show describe a suite as JSON.
type suiteInfo struct {
	Name        string         `json:"name"`
	Location    string         `json:"location"`
	Description string         `json:"description,omitempty"`
	Track       string         `json:"track"`
	Contract    string         `json:"contract,omitempty"`
	Times       string         `json:"times,omitempty"`
	Hash        string         `json:"hash"`
	Records     []bench.Record `json:"records"`
	Tasks       []taskInfo     `json:"tasks"`
}

type taskInfo struct {
	Name  string `json:"name"`
	Start string `json:"start"`
	Goal  string `json:"goal"`
	// GapMs and SpeedupPct are the published speedup.
	GapMs      float64 `json:"gap_ms"`
	SpeedupPct float64 `json:"speedup_pct"`
	Levels     []int   `json:"hint_levels"`
	HasDiff    bool    `json:"has_diff"`
	// Hints are the hint texts, for show SUITE/TASK.
	Hints []bench.Hint `json:"hints,omitempty"`
	// Diff is the ground truth, for show --diff.
	Diff string `json:"diff,omitempty"`
}

func describeSuite(s *bench.Suite) (suiteInfo, error) {
	h, err := s.Hash()
	if err != nil {
		return suiteInfo{}, err
	}
	info := suiteInfo{Name: s.Name, Location: s.Location(), Description: strings.TrimSpace(s.Description), Track: s.Track,
		Contract: s.Contract, Times: s.Times, Hash: h, Records: s.Records}
	for i := range s.Tasks {
		info.Tasks = append(info.Tasks, describeTask(s, &s.Tasks[i]))
	}
	return info, nil
}

func describeTask(s *bench.Suite, t *bench.Task) taskInfo {
	ti := taskInfo{Name: t.Name, Start: t.Start, Goal: t.Goal, Levels: t.Hints.Levels(), HasDiff: t.Diff != ""}
	if a, err := s.Record(t.Start); err == nil {
		if b, err := s.Record(t.Goal); err == nil {
			ti.GapMs = a.TimeMs - b.TimeMs
			ti.SpeedupPct = 100 * ti.GapMs / a.TimeMs
		}
	}
	return ti
}

func newBenchListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in suites",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := suiteRegistry().List()
			if err != nil {
				return usage(err)
			}
			var infos []suiteInfo
			for _, s := range all {
				info, err := describeSuite(s)
				if err != nil {
					return err
				}
				infos = append(infos, info)
			}
			if asJSON {
				return writeJSON(g.stdout, infos)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SUITE\tTRACK\tRECORDS\tTASKS\tWHERE\tDESCRIPTION")
			for _, s := range infos {
				first, _, _ := strings.Cut(s.Description, "\n")
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", s.Name, s.Track, len(s.Records), len(s.Tasks), s.Location, first)
			}
			fmt.Fprintln(tw, "\nA suite folder anywhere works too: frontier bench show DIR, frontier bench run DIR.")
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the suites as JSON")
	return cmd
}

func newBenchShowCmd(g *globals) *cobra.Command {
	var asJSON, diff bool
	cmd := &cobra.Command{
		Use:   "show SUITE[/TASK]",
		Short: "Show a suite's records and tasks, or a task with its hints",
		Long: `Show a suite (a built-in name or a folder): its records with their published
times and its tasks with their speedups and hint levels. SUITE/TASK shows one
task with the text of its hints; --diff adds the ground-truth diff, which is
for analysis and never shown to a model.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, t, err := suiteRegistry().GetTask(args[0])
			if err != nil {
				return usage(err)
			}
			if t != nil {
				return showTask(g.stdout, s, t, diff, asJSON)
			}
			info, err := describeSuite(s)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, info)
			}
			return printSuite(g.stdout, info)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&diff, "diff", false, "with SUITE/TASK, also print the ground-truth diff")
	return cmd
}

func printSuite(w io.Writer, s suiteInfo) error {
	fmt.Fprintf(w, "suite %s (%s), track %s\n", s.Name, s.Location, s.Track)
	if s.Description != "" {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(s.Description, "\n", "\n  "))
	}
	if s.Contract == "log" {
		fmt.Fprintln(w, "  verification: the legacy log contract (the records' own clocks and losses, parsed from their output)")
	}
	if s.Times != "" {
		fmt.Fprintf(w, "  published times: %s\n", s.Times)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nRECORD\tTIME\tVAL LOSS\tPROGRAM\tDESCRIPTION")
	for _, r := range s.Records {
		prog := r.Program
		if prog == "" {
			prog = "(time only)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%s\t%s\n", r.ID, recordTimeText(r), r.ValLoss, prog, r.Description)
	}
	fmt.Fprintln(tw, "\nTASK\tSTART\tGOAL\tSPEEDUP (of the published times)\tHINTS\tDIFF")
	for _, t := range s.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%% (%s)\t%v\t%v\n", t.Name, t.Start, t.Goal, t.SpeedupPct, secsText(t.GapMs), t.Levels, t.HasDiff)
	}
	if !slices.ContainsFunc(s.Records, bench.Record.HasNoise) {
		fmt.Fprintln(tw, "\nThe suite publishes one time per record, without its noise: a speedup above is two figures, not a measured interval.")
	}
	return tw.Flush()
}

// recordTimeText is a record's published time with the evidence the suite
// gives for it: the runs it is the mean of and their spread.
func recordTimeText(r bench.Record) string {
	switch {
	case r.HasNoise():
		return fmt.Sprintf("%s (sd %s, n %d)", secsText(r.TimeMs), secsText(r.TimeSDMs), r.Runs)
	case r.Runs > 0:
		return fmt.Sprintf("%s (n %d)", secsText(r.TimeMs), r.Runs)
	}
	return secsText(r.TimeMs) + " (one figure)"
}

func showTask(w io.Writer, s *bench.Suite, t *bench.Task, diff, asJSON bool) error {
	ti := describeTask(s, t)
	hints, err := s.HintsFor(t, t.Hints.Levels())
	if err != nil {
		return err
	}
	ti.Hints = hints
	if diff {
		if ti.Diff, err = s.GroundTruth(t); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(w, ti)
	}
	fmt.Fprintf(w, "task %s of suite %s: from record %s to record %s, %.1f%% faster (%s)\n", t.Name, s.Name, t.Start, t.Goal, ti.SpeedupPct, secsText(ti.GapMs))
	for _, h := range hints {
		fmt.Fprintf(w, "\n--- hint level %d (%s) ---\n%s\n", h.Level, h.Name, h.Text)
	}
	if diff && ti.Diff != "" {
		fmt.Fprintf(w, "\n--- ground-truth diff (never shown to a model) ---\n%s", ti.Diff)
	}
	return nil
}

func newBenchCheckCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check SUITE",
		Short: "Validate a suite (a folder, its suite.yaml, or a built-in suite's name); every error with file:line:col",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			// A folder, its suite.yaml, or a suite by name, found as
			// track check finds a track.
			s, err := suiteRegistry().Find(args[0])
			if err != nil {
				return usage(err)
			}
			// Every record's track must load too (each track once).
			var errs []error
			seen := map[string]bool{}
			for i := range s.Records {
				tr := s.TrackOf(&s.Records[i])
				if seen[tr] {
					continue
				}
				seen[tr] = true
				if _, err := registry(cfg).Get(tr); err != nil {
					errs = append(errs, fmt.Errorf("record %s: %w", s.Records[i].ID, err))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return usage(err)
			}
			info, err := describeSuite(s)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, info)
			}
			fmt.Fprintf(g.stdout, "%s: suite %s is valid: %d records, %d tasks\n", args[0], s.Name, len(s.Records), len(s.Tasks))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the suite as JSON when it is valid")
	return cmd
}

func newBenchImportCmd(g *globals) *cobra.Command {
	var o published.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import --from DIR",
		Short: "Make a suite from a checkout of the Automated LLM Speedrunning Benchmark",
		Long: `Import a checkout of facebookresearch/llm-speedrunner as a suite: each
workspace_templates/nanogpt_speedrun/record_<i> becomes a record (its script as
a track under the legacy log contract, its results.json time), and each
data/nanogpt_speedrun_knowledge_in_levels/record_<i> the hints and the
ground-truth diff of task record_i (record i to record i+1).`,
		Example: `  git clone https://github.com/facebookresearch/llm-speedrunner
  frontier bench import --from llm-speedrunner --out suites/llm-speedrunner
  frontier bench show suites/llm-speedrunner`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.From == "" {
				return usage(errors.New("--from: name the checkout of the benchmark's repository"))
			}
			im, err := published.Import(o)
			if err != nil {
				return usage(err)
			}
			if asJSON {
				return writeJSON(g.stdout, map[string]any{"dir": im.Suite.Dir, "suite": im.Suite.Name, "records": im.Records,
					"tasks": im.Tasks, "notes": im.Notes, "skipped": im.Skipped})
			}
			fmt.Fprintf(g.stdout, "imported suite %s in %s: %d records, %d tasks (legacy log contract)\n", im.Suite.Name, im.Suite.Dir, len(im.Records), len(im.Tasks))
			for _, n := range im.Notes {
				fmt.Fprintf(g.stdout, "  note: %s\n", n)
			}
			for _, n := range im.Skipped {
				fmt.Fprintf(g.stdout, "  left out: %s\n", n)
			}
			fmt.Fprintf(g.stdout, "next: frontier bench show %s, then frontier bench calibrate %s\n", im.Suite.Dir, im.Suite.Dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "the checkout of facebookresearch/llm-speedrunner")
	f.StringVar(&o.Out, "out", "", "the suite folder to write (default ./NAME)")
	f.StringVar(&o.Name, "name", "", "the suite's name (default llm-speedrunner)")
	f.Float64Var(&o.Target, "target", 0, "the tracks' target val loss (default 3.28)")
	f.IntVar(&o.GPUs, "gpus", 0, "GPUs each record runs on (default 8)")
	f.StringVar(&o.DataDir, "data-dir", "", "the FineWeb folder under the data root (default fineweb10B)")
	f.BoolVar(&asJSON, "json", false, "print what was imported as JSON")
	return cmd
}

// openBenchStore opens the database for commands that only read it; it
// must exist (reading does not create one).
func openBenchStore(ctx context.Context, cfg *config.Config) (store.Store, error) {
	if noDatabase(cfg) {
		return nil, fmt.Errorf("no database at %s: start a bench run with frontier bench run SUITE, or point --db or --home at the right one", cfg.DBName())
	}
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("open the database (set db: in frontier.yaml or --db): %w", err)
	}
	return st, nil
}
