package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/report"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

func reportData() *report.Data {
	return &report.Data{
		Run:       report.Run{ID: "7", Name: "cli-test", Track: "tiny", TargetValLoss: 4, MetaPromptFrom: 1, Models: []string{"mutate"}},
		Reference: report.Point{ValLoss: 3.99, TrainTimeMs: 20_000, StepAvgMs: 100},
		Programs: []report.Program{
			{ID: 1, Iteration: 0, Model: "mutate", Stage: "mutate", Verdict: "acceptable", ValLoss: 3.98, TrainTimeMs: 19_000},
			{ID: 2, Iteration: 1, Model: "mutate", Stage: "mutate", Verdict: "error", Reason: "boom"},
			{ID: 3, Iteration: 1, Model: "mutate", Stage: "mutate", Verdict: "acceptable", ValLoss: 3.97, TrainTimeMs: 18_500},
		},
	}
}

func TestReportFromData(t *testing.T) {
	dir := t.TempDir()
	b, err := json.Marshal(reportData())
	if err != nil {
		t.Fatal(err)
	}
	data := writeTemp(t, dir, "run.json", string(b))
	out := filepath.Join(dir, "rep")

	code, stdout, stderr := runCLI(t, "report", "--data", data, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	index := strings.TrimSpace(stdout)
	if index != filepath.Join(out, "index.html") {
		t.Errorf("printed %q", stdout)
	}
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	// 20 s against 18.5 s: (20 - 18.5) / 20 = 7.5% of the time saved.
	for _, want := range []string{"Run cli-test on track tiny", "18.50", "+7.5%"} {
		if !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}

	// Without --out the report goes next to the data file.
	code, stdout, stderr = runCLI(t, "report", "--data", data)
	if code != 0 || strings.TrimSpace(stdout) != filepath.Join(dir, "run-report", "index.html") {
		t.Errorf("default folder: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestReportUsage(t *testing.T) {
	dir := t.TempDir()
	bad := writeTemp(t, dir, "bad.json", `{"run": {"id": "x"}, "programz": []}`)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, exitUsage, "name the run"},
		{[]string{"report", "r1", "--data", bad}, exitUsage, "not both"},
		{[]string{"report", "--data", bad}, exitUsage, `unknown field "programz"`},
		{[]string{"report", "--data", filepath.Join(dir, "missing.json")}, exitUsage, "no such file"},
		{[]string{"report", "a", "b"}, exitUsage, "accepts at most 1 arg"},
		{[]string{"--db", filepath.Join(dir, "none.db"), "report", "r1"}, exitFailure, "no database at"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// The command reads a run through its loader and writes where it is told;
// the default folder is under the home.
func TestReportFromStore(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, "frontier.db")
	storetest.SQLite(t, db).Close()

	var gotRun string
	load := func(ctx context.Context, st store.Store, run string) (*report.Data, error) {
		gotRun = run
		if st == nil || st.Location() != db {
			return nil, errors.New("wrong store")
		}
		if run == "missing" {
			return nil, store.ErrNotFound
		}
		return reportData(), nil
	}
	var out, errb bytes.Buffer
	g := &globals{home: home, stdout: &out, stderr: &errb, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := runReport(context.Background(), g, reportOptions{run: "cli/test"}, load); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, "reports", "cli_test", "index.html")
	if gotRun != "cli/test" || strings.TrimSpace(out.String()) != want {
		t.Errorf("run %q, printed %q, want %q", gotRun, out.String(), want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Error(err)
	}

	err := runReport(context.Background(), g, reportOptions{run: "missing"}, load)
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "run missing") {
		t.Errorf("missing run: %v", err)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{"demo-1": "demo-1", "a/b": "a_b", "..": "run", "": "run", "x y": "x_y"} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// The example in docs/report.md must be data the command accepts.
func TestReportDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	start := strings.Index(s, "```json\n")
	if start < 0 {
		t.Fatal("docs/report.md has no JSON example")
	}
	s = s[start+len("```json\n"):]
	end := strings.Index(s, "```")
	if end < 0 {
		t.Fatal("unterminated JSON example")
	}
	path := writeTemp(t, t.TempDir(), "example.json", s[:end])
	d, err := readReportData(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Run.MetaPromptFrom != 20 || len(d.Programs) != 1 || d.Best == nil || len(d.Best.Vals) != 1 {
		t.Errorf("example decoded as %+v", d)
	}
	code, _, stderr := runCLI(t, "report", "--data", path)
	if code != 0 {
		t.Errorf("rendering the example: exit %d: %s", code, stderr)
	}
}

// confirmedRun stores, in a database under home, run db-run: the
// reference (20 s) and one child (16 s) whose claim was confirmed.
func confirmedRun(t *testing.T, home string) {
	t.Helper()
	ctx := context.Background()
	st := storetest.SQLite(t, filepath.Join(home, "frontier.db"))
	cfg, _ := json.Marshal(evolve.Defaults())
	run := &store.Run{Name: "db-run", Track: "tiny", TrackHash: "h", TargetValLoss: 4, Config: cfg,
		Models: json.RawMessage(`[{"name":"mutate","kind":"mutate","weight":1}]`)}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	refHash, _ := st.PutProgram(ctx, []byte("x = 1\n"), "")
	childHash, _ := st.PutProgram(ctx, []byte("x = 2\n"), "")
	err := st.RunInTx(ctx, func(tx store.RunTx) error {
		ref := &store.Child{RunID: run.ID, Origin: runs.OriginReference, Stage: runs.StageReference, State: runs.Done,
			ProgramHash: refHash, Verdict: "acceptable", ValLoss: 3.99, TrainTimeMs: 20_000}
		if err := tx.InsertChild(ref); err != nil {
			return err
		}
		child := &store.Child{RunID: run.ID, Iteration: 1, ParentID: ref.ID, Origin: "mutate", Model: "mutate",
			Stage: runs.StageMutate, State: runs.Done, ProgramHash: childHash, Verdict: "acceptable", ValLoss: 3.98,
			TrainTimeMs: 16_000, StepAvgMs: 80, Score: 318.4}
		if err := tx.InsertChild(child); err != nil {
			return err
		}
		nan := math.NaN()
		return tx.InsertConfirmation(&store.Confirmation{RunID: run.ID, Claim: runs.Claim{ChildID: child.ID, BaselineID: ref.ID,
			Method: runs.MethodSeries, State: runs.ClaimConfirmed, Pairs: 5, Alpha: 0.01, SingleMs: 16_000, TimeMs: 16_000,
			BaselineMs: 20_000, TimeSD: 100, BaselineSD: 100, Speedup: 0.2, SpeedupLo: 0.19, SpeedupHi: 0.21, TimeP: 1e-6, LossP: 1e-3,
			LossMean: 3.98, LossSD: 0.001, NoiseCV: nan}})
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
}

// frontier report RUN reads the run from the database.
func TestReportRunFromDatabase(t *testing.T) {
	home := t.TempDir()
	confirmedRun(t, home)
	code, stdout, stderr := runCLI(t, "--home", home, "report", "db-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	index := strings.TrimSpace(stdout)
	if index != filepath.Join(home, "reports", "db-run", "index.html") {
		t.Errorf("printed %q", stdout)
	}
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	// 20 s against 16 s, confirmed: 20% of the time saved; the record's
	// diff shows the one changed line.
	for _, want := range []string{"Run db-run on track tiny", "+20.0%", "confirmed in alternation, n = 5 each", "-x = 1", "+x = 2"} {
		if !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if code, _, stderr := runCLI(t, "--home", home, "report", "nope"); code != exitFailure || !strings.Contains(stderr, "not found") {
		t.Errorf("unknown run: exit %d, %s", code, stderr)
	}
}
