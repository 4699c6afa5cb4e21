package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/bench/benchreport"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
)

func newBenchReportCmd(g *globals) *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report [RUN...]",
		Short: "Write the HTML report and CSV files of bench runs (all of them by default)",
		Long: `Report writes index.html (tables and figures: FSR by hint setting, by scaffold,
per task), tasks.csv (per task x hints x scaffold x model: FSR with its 95%
interval over seeds, acceptable and buggy rates, cost), configs.csv (per
configuration: mean and IQM of FSR over tasks with intervals) and report.json.
With --json it prints the report's data instead of writing files.`,
		Example: `  frontier bench report                      # every bench run, into <home>/reports/bench
  frontier bench report bench-3 bench-4 --out report/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			st, err := openBenchStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			rep, err := runview.LoadBench(cmd.Context(), st, args)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return usage(err)
				}
				return err
			}
			if asJSON {
				return benchreport.WriteJSON(g.stdout, rep)
			}
			if out == "" {
				out = filepath.Join(cfg.Home, "reports", "bench")
			}
			page, err := benchreport.Write(out, rep)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "bench report of %d runs (%d configurations): %s\n", len(rep.Runs), len(rep.Configs), page)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "folder to write the report into (default <home>/reports/bench)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report's data as JSON instead of writing files")
	return cmd
}
