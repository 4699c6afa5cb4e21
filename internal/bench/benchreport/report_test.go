package benchreport

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// addRun records a finished bench run whose attempts have the given FSR
// per task, one attempt per value (seeds 0, 1, ...).
func addRun(t *testing.T, st store.Store, name, scaffold, hints string, fsr map[string][]float64, tasks []string) {
	t.Helper()
	ctx := context.Background()
	r := &store.BenchRun{Name: name, Suite: "mini", SuiteHash: "h", Scaffold: scaffold, Model: "coder", Hints: hints}
	if err := st.CreateBenchRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	var as []*store.BenchAttempt
	for _, task := range tasks {
		for seed := range fsr[task] {
			as = append(as, &store.BenchAttempt{RunID: r.ID, Position: len(as), Task: task, Seed: seed})
		}
	}
	as = append(as, &store.BenchAttempt{RunID: r.ID, Position: len(as), Task: "unfinished"})
	if err := st.InsertBenchAttempts(ctx, as); err != nil {
		t.Fatal(err)
	}
	for _, a := range as[:len(as)-1] {
		a.State, a.FSR, a.Nodes, a.Acceptable, a.Buggy, a.CostUSD = store.AttemptDone, fsr[a.Task][a.Seed], 10, 6, 3, 0.5
		a.StartMs, a.GoalMs, a.BestMs, a.TimeSource = 1000, 800, 1000-200*fsr[a.Task][a.Seed], "published"
		if err := st.UpdateBenchAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReport(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	tasks := []string{"a", "b", "c", "d"}
	addRun(t, st, "aide-1", "aide", "1", map[string][]float64{"a": {0.2, 0.4}, "b": {0, 0}, "c": {1, 1}, "d": {0.5, 0.7}}, tasks)
	addRun(t, st, "flat-none", "flat", "none", map[string][]float64{"a": {0}, "b": {0.1}, "c": {0}, "d": {0}}, tasks)
	rep, err := runview.LoadBench(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Done != 8 || rep.Runs[0].Attempts != 9 {
		t.Fatalf("runs %+v", rep.Runs)
	}
	if len(rep.Configs) != 2 {
		t.Fatalf("%d configurations", len(rep.Configs))
	}
	// aide sorts before flat; its task means 0.3, 0, 1, 0.6.
	c := rep.Configs[0]
	if c.Scaffold != "aide" || c.Tasks != 4 || c.Attempts != 8 || math.Abs(c.Mean.Value-0.475) > 1e-9 || math.Abs(c.IQM.Value-0.45) > 1e-9 {
		t.Errorf("aide: %+v", c)
	}
	if c.Rates.Nodes != 80 || c.Rates.Acceptable != 0.6 || c.Rates.Buggy != 0.3 || c.CostUSD != 4 {
		t.Errorf("aide rates %+v, cost %v", c.Rates, c.CostUSD)
	}
	if len(rep.Tasks) != 8 || rep.Tasks[0].Task != "a" || rep.Tasks[0].FSR.N != 2 || rep.Tasks[0].BestMs != 920 {
		t.Errorf("tasks %+v", rep.Tasks[0])
	}

	dir := t.TempDir()
	page, err := Write(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(page)
	for _, want := range []string{"<svg", "by hint setting", "by scaffold", "FSR per task", "0.4750 [", "aide-1", "published"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, TasksFile))
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 9 || rows[0][9] != "fsr_mean" || rows[1][9] != "0.3000" {
		t.Errorf("tasks.csv: %v %v", rows, err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, ConfigsFile))
	rows, err = csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][9] != "0.4750" || rows[1][12] != "0.4500" {
		t.Errorf("configs.csv: %v %v", rows, err)
	}
	var back runview.BenchReport
	b, _ = os.ReadFile(filepath.Join(dir, JSONFile))
	if err := json.Unmarshal(b, &back); err != nil || back.Schema != runview.BenchSchema || len(back.Configs) != 2 {
		t.Errorf("report.json: %v", err)
	}
	// One run by name.
	if one, err := runview.LoadBench(ctx, st, []string{"flat-none"}); err != nil || len(one.Configs) != 1 || one.Configs[0].Mean.Value != 0.025 {
		t.Errorf("Load(flat-none) = %+v, %v", one, err)
	}
}

// run is a bench run for TestNeverPooled: its settings, and per task the
// FSR and time source of each attempt.
type run struct {
	name, suiteHash, config, scaffold, model, hints string
	fsr                                             map[string][]float64
	sources                                         map[string][]string
}

func addRunOf(t *testing.T, st store.Store, r run) {
	t.Helper()
	ctx := context.Background()
	br := &store.BenchRun{Name: r.name, Suite: "mini", SuiteHash: r.suiteHash, Scaffold: r.scaffold, Model: r.model, Hints: r.hints, Config: []byte(r.config)}
	if err := st.CreateBenchRun(ctx, br); err != nil {
		t.Fatal(err)
	}
	var as []*store.BenchAttempt
	for _, task := range []string{"a", "b"} {
		for seed := range r.fsr[task] {
			as = append(as, &store.BenchAttempt{RunID: br.ID, Position: len(as), Task: task, Seed: seed})
		}
	}
	if err := st.InsertBenchAttempts(ctx, as); err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		a.State, a.FSR, a.Nodes = store.AttemptDone, r.fsr[a.Task][a.Seed], 3
		a.StartMs, a.GoalMs, a.BestMs, a.TimeSource = 1000, 800, 1000-200*a.FSR, "published"
		if src := r.sources[a.Task]; src != nil {
			a.TimeSource = src[a.Seed]
			if a.TimeSource == "calibrated" {
				a.StartMs, a.GoalMs = 2000, 1500
			}
		}
		if err := st.UpdateBenchAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
}

// The report never pools runs with different node budgets, modes or suite
// versions; a task's row takes every figure from the same attempts; the
// figures keep every configuration; and the paper's main table (model x
// hint setting) is there.
func TestNeverPooled(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t, "")
	one := map[string][]float64{"a": {0.5}, "b": {0.1}}
	for _, r := range []run{
		{name: "n20", suiteHash: "v1", config: `{"nodes":20}`, scaffold: "flat", model: "m", hints: "1", fsr: one},
		{name: "n3", suiteHash: "v1", config: `{"nodes":3}`, scaffold: "flat", model: "m", hints: "1", fsr: map[string][]float64{"a": {0}, "b": {0}}},
		{name: "chain", suiteHash: "v1", config: `{"nodes":20,"cumulative":true}`, scaffold: "flat", model: "m", hints: "1", fsr: one},
		{name: "retimed", suiteHash: "v1", config: `{"nodes":20,"retime":5}`, scaffold: "flat", model: "m", hints: "1", fsr: one},
		{name: "v2", suiteHash: "v2", config: `{"nodes":20}`, scaffold: "flat", model: "m", hints: "1", fsr: one},
		{name: "mixed", suiteHash: "v1", config: `{"nodes":20}`, scaffold: "flat", model: "m", hints: "none",
			fsr: map[string][]float64{"a": {0.2, 0.4}, "b": {0, 0}}, sources: map[string][]string{"a": {"published", "calibrated"}}},
		{name: "other-model", suiteHash: "v1", config: `{"nodes":20}`, scaffold: "flat", model: "m2", hints: "1", fsr: one},
	} {
		addRunOf(t, st, r)
	}
	rep, err := runview.LoadBench(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Configs) != 7 {
		for _, c := range rep.Configs {
			t.Logf("%+v", c.BenchKey)
		}
		t.Fatalf("%d configurations, want 7: runs that differ in node budget, mode or suite version were pooled", len(rep.Configs))
	}
	for _, c := range rep.Configs {
		if c.Attempts != 2 && c.Attempts != 4 {
			t.Errorf("%s: %d attempts", c.BenchKey, c.Attempts)
		}
	}
	// The row of a task whose attempts were scored with different times
	// says so, and its start and goal are those of its own attempts.
	for _, row := range rep.Tasks {
		if row.Hints == "none" && row.Task == "a" {
			if row.TimeSource != "calibrated+published" || row.StartMs != 1500 || row.GoalMs != 1150 || row.FSR.N != 2 {
				t.Errorf("mixed row %+v", row)
			}
		}
	}
	// Every configuration has its own bar in the figures.
	for _, f := range Figures(rep) {
		if f.Title == "Mean FSR over tasks, by hint setting" {
			if n := strings.Count(f.SVG, "<title>"); n != 7 { // each bar has its title
				t.Errorf("%d bars in %q, want one per configuration (7)", n, f.Title)
			}
		}
	}
	// The paper's main table: models by hint setting, per block.
	var found bool
	for _, m := range rep.Main {
		if m.Key.Nodes == 20 && m.Key.Mode == "tasks" && m.Key.SuiteHash == "v1" {
			found = true
			if strings.Join(m.Hints, ",") != "none,1" || len(m.Rows) != 2 || m.Rows[1].Model != "m2" || m.Rows[1].Cells[0] != nil ||
				m.Rows[0].Cells[1] == nil || m.Rows[0].Cells[1].Value != 0.3 {
				t.Errorf("main table %+v", m)
			}
		}
	}
	if !found || len(rep.Main) != 5 {
		t.Errorf("%d main tables: %+v", len(rep.Main), rep.Main)
	}
	dir := t.TempDir()
	page, err := Write(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(page)
	if !strings.Contains(string(html), "Mean FSR by model and hint setting") || !strings.Contains(string(html), "mini@v1") {
		t.Error("the page lacks the main table or the suite's version")
	}
}
