package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// db status says where the schema stands and what the database holds;
// db copy moves a home's history into a new database (a SQLite file, or
// PostgreSQL), checked row for row, and refuses a database with data.
func TestDBCommands(t *testing.T) {
	home := t.TempDir()
	st, _ := quickRun(t, home, "moved", hashEvaluator(), []evolve.Model{{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate()}},
		evolve.Config{Islands: 2, BranchingFactor: 2, Seed: 4, Budget: evolve.BudgetConfig{MaxIterations: 2}})
	st.Close()

	code, out, stderr := runCLI(t, "--home", home, "db", "status")
	if code != 0 || !strings.Contains(out, "up to date") || !strings.Contains(out, "run_children") {
		t.Fatalf("db status: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "--home", home, "db", "status", "--json")
	var rep dbStatusReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Dialect != store.SQLite || rep.Version != rep.Latest ||
		rep.Rows["runs"] != 1 || rep.Rows["programs"] == 0 {
		t.Fatalf("db status --json: exit %d, %v: %+v", code, err, rep)
	}
	code, out, _ = runCLI(t, "--home", home, "db", "migrate")
	if code != 0 || !strings.Contains(out, "up to date") || strings.Contains(out, "applied") {
		t.Errorf("db migrate of an up-to-date database: exit %d: %s", code, out)
	}
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			to := storetest.Location(t, d)
			code, out, stderr := runCLI(t, "--home", home, "db", "copy", "--to", to)
			if code != 0 || !strings.Contains(out, "run_children") || !strings.Contains(out, "checked: every row") {
				t.Fatalf("db copy: exit %d\n%s%s", code, out, stderr)
			}
			code, out, _ = runCLI(t, "--db", to, "db", "status", "--json")
			var got dbStatusReport
			if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Dialect != d {
				t.Fatalf("db status of the copy: exit %d, %v: %s", code, err, out)
			}
			for table, n := range rep.Rows {
				if got.Rows[table] != n {
					t.Errorf("%s: %d rows in the copy, %d in the source", table, got.Rows[table], n)
				}
			}
			// The copy serves the commands that read runs.
			code, out, _ = runCLI(t, "--db", to, "runs", "show", "moved")
			if code != 0 || !strings.Contains(out, "run moved (#1)") {
				t.Errorf("runs show on the copy: exit %d:\n%s", code, out)
			}
			code, _, stderr = runCLI(t, "--home", home, "db", "copy", "--to", to)
			if code != exitFailure || !strings.Contains(stderr, "holds data already") {
				t.Errorf("a copy into a database with data: exit %d: %s", code, stderr)
			}
		})
	}
	if code, _, stderr := runCLI(t, "--home", home, "db", "copy"); code != exitUsage || !strings.Contains(stderr, "--to") {
		t.Errorf("db copy without --to: exit %d: %s", code, stderr)
	}
	db := filepath.Join(home, "frontier.db")
	if code, _, stderr := runCLI(t, "--home", home, "db", "copy", "--to", "sqlite:"+db); code != exitUsage || !strings.Contains(stderr, "both") {
		t.Errorf("db copy onto itself: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--home", t.TempDir(), "db", "status"); code != exitFailure || !strings.Contains(stderr, "no database") {
		t.Errorf("db status without a database: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--db", "mysql://x/y", "db", "status"); code != exitUsage || !strings.Contains(stderr, "unknown scheme") {
		t.Errorf("db status of an unknown scheme: exit %d: %s", code, stderr)
	}
}
