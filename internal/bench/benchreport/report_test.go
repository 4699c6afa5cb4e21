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
	rep, err := Load(ctx, st, nil)
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
	if err != nil || len(rows) != 9 || rows[0][6] != "fsr_mean" || rows[1][6] != "0.3000" {
		t.Errorf("tasks.csv: %v %v", rows, err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, ConfigsFile))
	rows, err = csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][6] != "0.4750" || rows[1][9] != "0.4500" {
		t.Errorf("configs.csv: %v %v", rows, err)
	}
	var back Report
	b, _ = os.ReadFile(filepath.Join(dir, JSONFile))
	if err := json.Unmarshal(b, &back); err != nil || back.Schema != Schema || len(back.Configs) != 2 {
		t.Errorf("report.json: %v", err)
	}
	// One run by name.
	if one, err := Load(ctx, st, []string{"flat-none"}); err != nil || len(one.Configs) != 1 || one.Configs[0].Mean.Value != 0.025 {
		t.Errorf("Load(flat-none) = %+v, %v", one, err)
	}
}
