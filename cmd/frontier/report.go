package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/bounded"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

// reportOptions are the inputs of "frontier report".
type reportOptions struct {
	run  string // run id or name in the database
	out  string // report folder; "" means <home>/reports/<run>
	data string // a report.Data JSON file to render instead of the database
	json bool   // print where the report is as JSON
}

// reportJSON is report --json: where the report was written.
type reportJSON struct {
	// Run is the run's name (its id when it has none).
	Run         string    `json:"run"`
	Index       string    `json:"index"`
	Dir         string    `json:"dir"`
	Programs    int       `json:"programs"`
	GeneratedAt time.Time `json:"generated_at"`
}

// reportLoader reads everything the report of one run shows from the
// database (loadRunReport; tests give their own).
type reportLoader func(ctx context.Context, st store.Store, run string) (*report.Data, error)

func newReportCmd(g *globals) *cobra.Command {
	return newReportCmdWith(g, loadRunReport)
}

// newReportCmdWith builds the command around a loader, so tests can give
// their own.
func newReportCmdWith(g *globals, load reportLoader) *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report RUN",
		Short: "Write a run's static report: HTML page, SVG/PNG figures, CSV, best program and diff",
		Long: `Report reads an evolution run from the database and writes a static report
folder: index.html (no scripts, no network; open it in any browser), the
figures as SVG and PNG, programs.csv with every program, and best.py with
best.diff, its diff against the reference. It prints the path of
index.html.

RUN is the run's id or name (see frontier runs). With --data, the report is
rendered from a JSON file holding the report's data instead (the shape is
documented in docs/report.md).

What each part shows and how to read it: docs/report.md.`,
		Example: `  frontier report demo-1 --out report/
  frontier report 3
  frontier report --data run.json --out report/`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.run = args[0]
			}
			return runReport(cmd.Context(), g, o, load)
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "", "report folder (default: <home>/reports/RUN)")
	cmd.Flags().StringVar(&o.data, "data", "", "render from this JSON file of report data instead of the database")
	cmd.Flags().BoolVar(&o.json, "json", false, "print where the report is as JSON")
	return cmd
}

// runReport loads the data, writes the report and prints where it is.
func runReport(ctx context.Context, g *globals, o reportOptions, load reportLoader) error {
	switch {
	case o.run == "" && o.data == "":
		return usage(errors.New("report: name the run (frontier report RUN; frontier runs lists them) or pass --data FILE"))
	case o.run != "" && o.data != "":
		return usage(errors.New("report: give either RUN or --data, not both"))
	}
	var d *report.Data
	var err error
	out := o.out
	if o.data != "" {
		d, err = readReportData(o.data)
		if err != nil {
			return usage(err)
		}
		if out == "" {
			out = strings.TrimSuffix(o.data, filepath.Ext(o.data)) + "-report"
		}
	} else {
		cfg, err := g.loadConfig()
		if err != nil {
			return err
		}
		if noDatabase(cfg) {
			return fmt.Errorf("report: no database at %s: start a run with frontier evolve (or frontier demo), or point --db or --home at the right one", cfg.DBName())
		}
		st, err := store.Open(ctx, cfg.DB)
		if err != nil {
			return err
		}
		defer st.Close()
		d, err = load(ctx, st, o.run)
		if err != nil {
			return fmt.Errorf("report: run %s: %w", o.run, err)
		}
		if d == nil {
			return fmt.Errorf("report: run %s: the loader returned no data", o.run)
		}
		if out == "" {
			out = filepath.Join(cfg.Home, "reports", safeName(o.run))
		}
	}
	if d.GeneratedAt.IsZero() {
		d.GeneratedAt = time.Now()
	}
	index, err := report.Write(ctx, out, d)
	if err != nil {
		return err
	}
	g.log.Debug("report written", "run", d.Run.ID, "programs", len(d.Programs), "path", index)
	if o.json {
		return writeJSON(g.stdout, reportJSON{Run: cmp.Or(d.Run.Name, d.Run.ID), Index: index, Dir: out, Programs: len(d.Programs), GeneratedAt: d.GeneratedAt})
	}
	fmt.Fprintln(g.stdout, index)
	return nil
}

// maxReportData bounds a --data file: the data of a run of thousands of
// programs, with the best program's source and telemetry, is a few
// megabytes.
const maxReportData = 256 << 20

// readReportData reads a report.Data JSON file strictly: an unknown field
// is more likely a typo or another tool's file than something to ignore.
func readReportData(path string) (*report.Data, error) {
	b, err := bounded.ReadFile(path, maxReportData)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var d report.Data
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("report: %s is not report data (see docs/report.md for its shape): %w", path, err)
	}
	return &d, nil
}

// safeName turns a run reference into a folder name.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if n := b.String(); n != "" && n != "." && n != ".." {
		return n
	}
	return "run"
}

// loadRunReport reads a run from the database (the engine's tables) into
// the report's data.
func loadRunReport(ctx context.Context, st store.Store, run string) (*report.Data, error) {
	return runview.LoadReport(ctx, st, run)
}
