package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/frontier-bench/frontier/internal/store"
)

func newDBCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "The database: where its schema stands, upgrade it, copy it into another (SQLite or PostgreSQL)",
		Long: `The database is a SQLite file (the default, <home>/frontier.db) or a PostgreSQL
database that a team's machines share (db: in frontier.yaml, FRONTIER_DB or
--db; see docs/cluster.md). "db status" says where its schema stands and what
it holds; "db migrate" upgrades it (a SQLite file is upgraded by every command
that opens it; a shared PostgreSQL database only by this command, while no run
writes to it); "db copy" copies every row of one database into a new one and
checks the copy row for row.`,
		Args: cobra.NoArgs,
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Say where the database's schema stands, the migrations due, and what it holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return dbStatus(cmd.Context(), g.stdout, cfg.DB, asJSON)
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "write the status as JSON")
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the migrations due (upgrade a shared database while no run writes to it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return dbMigrate(cmd.Context(), g.stdout, cfg.DB)
		},
	}
	var from, to string
	cp := &cobra.Command{
		Use:   "copy --to LOCATION",
		Short: "Copy every row of a database into a new one, keeping ids, and check the copy row for row",
		Example: `  frontier db copy --from sqlite:$HOME/.local/share/frontier/frontier.db \
      --to 'postgres://frontier@db.example:5432/frontier?sslmode=require'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if from == "" {
				from = cfg.DB
			}
			if to == "" {
				return usage(errors.New("db copy: --to names the new database: a postgres:// URL, or a SQLite file that does not exist yet"))
			}
			return dbCopy(cmd.Context(), g, from, to)
		},
	}
	cp.Flags().StringVar(&from, "from", "", "the database to copy (default: the configured one)")
	cp.Flags().StringVar(&to, "to", "", "the new database: a postgres:// URL, or a SQLite file that does not exist yet")
	cmd.AddCommand(status, migrate, cp)
	return cmd
}

// dbStatusReport is what db status says.
type dbStatusReport struct {
	Database string           `json:"database"`
	Dialect  string           `json:"dialect"`
	Version  int64            `json:"version"`
	Latest   int64            `json:"latest"`
	Due      []store.Step     `json:"due"`
	Bytes    int64            `json:"bytes,omitempty"`
	Rows     map[string]int64 `json:"rows,omitempty"`
}

func dbStatus(ctx context.Context, w io.Writer, location string, asJSON bool) error {
	loc, err := store.ParseLocation(location)
	if err != nil {
		return usage(err)
	}
	st, u, err := store.Inspect(ctx, location)
	if err != nil {
		return err
	}
	rep := dbStatusReport{Database: loc.String(), Dialect: st.Dialect, Version: st.Version, Latest: st.Latest, Due: st.Due}
	if rep.Due == nil {
		rep.Due = []store.Step{}
	}
	if u != nil {
		rep.Bytes, rep.Rows = u.Bytes, u.Rows
	}
	if asJSON {
		return writeJSON(w, rep)
	}
	fmt.Fprintf(w, "database  %s (%s)\n", rep.Database, rep.Dialect)
	switch {
	case st.Version == 0:
		fmt.Fprintf(w, "schema    none yet: frontier db migrate (or the first run) makes it, version %d\n", st.Latest)
	case st.Newer():
		fmt.Fprintf(w, "schema    version %d, newer than this frontier's %d: use a newer frontier\n", st.Version, st.Latest)
	case st.Pending():
		fmt.Fprintf(w, "schema    version %d of %d: frontier db migrate applies:\n", st.Version, st.Latest)
	default:
		fmt.Fprintf(w, "schema    version %d, up to date\n", st.Version)
	}
	if st.Version > 0 {
		for _, s := range st.Due {
			fmt.Fprintf(w, "            %d  %s\n", s.Version, s.Name)
		}
	}
	if u == nil {
		return nil
	}
	fmt.Fprintf(w, "size      %s\n", humanBytes(u.Bytes))
	var names []string
	for name := range u.Rows {
		names = append(names, name)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, name := range names {
		label := ""
		if i == 0 {
			label = "rows"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", label, name, u.Rows[name])
	}
	return tw.Flush()
}

func dbMigrate(ctx context.Context, w io.Writer, location string) error {
	loc, err := store.ParseLocation(location)
	if err != nil {
		return usage(err)
	}
	steps, err := store.Migrate(ctx, location)
	if err != nil {
		return err
	}
	if len(steps) == 0 {
		fmt.Fprintf(w, "%s: the schema is up to date\n", loc)
		return nil
	}
	for _, s := range steps {
		fmt.Fprintf(w, "applied %d  %s\n", s.Version, s.Name)
	}
	fmt.Fprintf(w, "%s: the schema is up to date\n", loc)
	return nil
}

func dbCopy(ctx context.Context, g *globals, from, to string) error {
	fl, err := store.ParseLocation(from)
	if err != nil {
		return usage(fmt.Errorf("--from: %w", err))
	}
	tl, err := store.ParseLocation(to)
	if err != nil {
		return usage(fmt.Errorf("--to: %w", err))
	}
	if fl == tl {
		return usage(fmt.Errorf("db copy: --from and --to are both %s", fl))
	}
	if f := fl.File(); f != "" {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("db copy: no database to copy: %w", err)
		}
	}
	src, err := store.Open(ctx, from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := store.Open(ctx, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	fmt.Fprintf(g.stdout, "copying %s to %s\n", fl, tl)
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, err = store.Copy(ctx, dst, src, func(step, table string, rows int64) {
		if step == "copied" {
			fmt.Fprintf(tw, "\t%s\t%d rows\t\n", table, rows)
		}
	})
	tw.Flush()
	if err != nil {
		return err
	}
	fmt.Fprintln(g.stdout, "checked: every row of every table reads back the same from both")
	return nil
}
