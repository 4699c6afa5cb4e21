package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/frontier-bench/frontier/internal/bench"
	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/llm/llmtest"
	"github.com/frontier-bench/frontier/internal/pyenv"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/testdeps"
)

// The bench's test suite and tracks: records of a bigram on the tiny data
// that do less and less busywork per step.
const (
	benchQuickSuite  = "../../internal/bench/testdata/quick"
	benchQuickTracks = "../../internal/bench/testdata/tracks"
)

// busyCoder answers the bench's prompts like a model that reproduces the
// quick suite's records: it halves the busywork of the program it is
// shown (WASTE = 4 -> 2 -> 0), breaks every third program with a raise,
// and removes the raise when asked to debug.
type busyCoder struct {
	mu sync.Mutex
	n  int
}

var (
	wasteRE = regexp.MustCompile(`(?m)^WASTE = (\d+)$`)
	raiseRE = regexp.MustCompile(`(?m)^raise ValueError\("bold"\)\n`)
	codeRE  = regexp.MustCompile("(?s)```python\n(.*?)```")
)

func (c *busyCoder) respond(r llmtest.Recorded) llmtest.Step {
	c.mu.Lock()
	c.n++
	n := c.n
	c.mu.Unlock()
	var req struct {
		Messages []struct{ Role, Content string }
	}
	_ = json.Unmarshal(r.Body, &req)
	prompt := req.Messages[len(req.Messages)-1].Content
	usage := &llm.Usage{InputTokens: 2000, OutputTokens: 100}
	m := codeRE.FindStringSubmatch(prompt)
	if m == nil {
		return llmtest.Step{Text: "No program in the prompt.", Usage: usage}
	}
	if strings.Contains(prompt, "This program fails") {
		if r := raiseRE.FindString(m[1]); r != "" {
			return llmtest.Step{Text: "Remove the raise.\n<<<<<<< SEARCH\n" + r + "=======\n>>>>>>> REPLACE\n", Usage: usage}
		}
	}
	w := wasteRE.FindStringSubmatch(m[1])
	if w == nil {
		return llmtest.Step{Text: "No WASTE to cut.", Usage: usage}
	}
	v, _ := strconv.Atoi(w[1])
	if n%3 == 0 {
		return llmtest.Step{Text: fmt.Sprintf("Something bold.\n<<<<<<< SEARCH\nWASTE = %d\n=======\nWASTE = %d\nraise ValueError(\"bold\")\n>>>>>>> REPLACE\n", v, v), Usage: usage}
	}
	return llmtest.Step{Text: fmt.Sprintf("Halve the busywork.\n<<<<<<< SEARCH\nWASTE = %d\n=======\nWASTE = %d\n>>>>>>> REPLACE\n", v, max(v-2, 0)), Usage: usage}
}

// TestBenchEndToEnd drives aide and tree over the quick suite through the
// command line, with real training under the harness and a model behind a
// local OpenAI-compatible server: the hints are in the prompts the server
// received and in the stored calls, the ground-truth diff in none; the
// runs score FSR; calibrate, runs and report work on what they stored.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about a dozen short training processes")
	}
	if _, err := pyenv.Find(context.Background(), ""); err != nil {
		testdeps.Missing(t, "torch", "no Python with PyTorch: %v", err)
	}
	home := t.TempDir()
	coder := &busyCoder{}
	srv := llmtest.NewServer(t, llm.ProtocolOpenAI)
	srv.Respond = coder.respond
	tracksDir, _ := filepath.Abs(benchQuickTracks)
	suite, _ := filepath.Abs(benchQuickSuite)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf(`home: %s
data_dir: %s
tracks_dirs: [%s]
llm:
  models:
    - {name: coder, spec: "%s"}
  prices:
    openai-compatible/coder: {input: 1, output: 4}
  retry: {max_attempts: 1}
`, home, sharedDataDir(t), tracksDir, srv.Spec("coder")))

	// Calibrate the first task's records, so that the runs score with
	// times measured here.
	code, out, stderr := runCLI(t, "--config", cfg, "bench", "calibrate", suite, "--repeats", "2", "--task", "r0-r1", "--quiet", "--json")
	if code != 0 {
		t.Fatalf("calibrate: exit %d\n%s\n%s", code, out, stderr)
	}
	var cal struct {
		Class string `json:"fingerprint_class"`
		Gaps  []struct {
			SpeedupPct float64 `json:"speedup_pct"`
		}
	}
	if err := json.Unmarshal([]byte(out), &cal); err != nil || cal.Class == "" || len(cal.Gaps) != 1 || cal.Gaps[0].SpeedupPct <= 0 {
		t.Errorf("calibration %s (%v)", out, err)
	}

	for _, c := range []struct{ scaffold, hints string }{{"aide", "1+2+3"}, {"tree", "2"}} {
		before := len(srv.Requests())
		code, out, stderr := runCLI(t, "--config", cfg, "bench", "run", suite, "--scaffold", c.scaffold, "--model", "coder",
			"--hints", c.hints, "--task", "r0-r1", "--nodes", "3", "--name", c.scaffold, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", c.scaffold, code, out, stderr)
		}
		var sum benchSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%s: %v\n%s", c.scaffold, err, out)
		}
		a := sum.Attempts[0]
		if sum.StopReason != "done" || a.State != store.AttemptDone || a.Nodes != 3 || a.TimeSource != "calibrated" || a.CostUSD <= 0 {
			t.Errorf("%s: stopped %s; attempt %+v", c.scaffold, sum.StopReason, a)
		}
		if a.FSR < 0 || sum.Scores.Mean.N != 1 {
			t.Errorf("%s: FSR %v, scores %+v", c.scaffold, a.FSR, sum.Scores)
		}
		reqs := srv.Requests()[before:]
		if len(reqs) < 3 {
			t.Fatalf("%s: the server got %d requests", c.scaffold, len(reqs))
		}
		for _, r := range reqs {
			body := string(r.Body)
			if strings.Contains(body, "GROUND-TRUTH") {
				t.Fatalf("%s: a prompt holds the ground-truth diff:\n%s", c.scaffold, body)
			}
			if !strings.Contains(body, "HINT-DESCRIPTION") {
				t.Errorf("%s: a prompt without the level-2 hint:\n%s", c.scaffold, body)
			}
			if strings.Contains(body, "HINT-PSEUDO") != strings.Contains(c.hints, "1") {
				t.Errorf("%s: hints %s, but the level-1 hint is there: %v", c.scaffold, c.hints, strings.Contains(body, "HINT-PSEUDO"))
			}
		}
	}

	// What the server saw is what the store keeps.
	st := storetest.SQLite(t, filepath.Join(home, "frontier.db"))
	ctx := context.Background()
	run, err := st.BenchRun(ctx, "aide")
	if err != nil {
		t.Fatal(err)
	}
	as, _ := st.BenchAttempts(ctx, run.ID)
	calls, err := st.BenchCalls(ctx, as[0].ID, true)
	if err != nil || len(calls) < 3 {
		t.Fatalf("%d calls stored (%v)", len(calls), err)
	}
	debugged := false
	for _, c := range calls {
		if !strings.Contains(c.Request, "HINT-PAPER") || strings.Contains(c.Request, "GROUND-TRUTH") || c.State != store.CallDone {
			t.Errorf("stored call %d: state %s, hints %v", c.ID, c.State, strings.Contains(c.Request, "HINT-PAPER"))
		}
		debugged = debugged || c.Purpose == "debug"
	}
	nodes, _ := st.BenchNodes(ctx, as[0].ID)
	for _, n := range nodes[1:] {
		if n.State != store.NodeDone || (n.EvaluationID == 0 && n.Verdict != "duplicate") {
			t.Errorf("node %d: %s, verdict %s, evaluation %d", n.Seq, n.State, n.Verdict, n.EvaluationID)
		}
	}
	t.Logf("aide's nodes: %d, debugged: %v", len(nodes)-1, debugged)

	code, out, stderr = runCLI(t, "--config", cfg, "bench", "runs")
	if code != 0 || !strings.Contains(out, "aide") || !strings.Contains(out, "tree") {
		t.Errorf("bench runs: exit %d\n%s%s", code, out, stderr)
	}
	rdir := filepath.Join(home, "report")
	code, out, stderr = runCLI(t, "--config", cfg, "bench", "report", "--out", rdir)
	if code != 0 || !strings.Contains(out, "2 configurations") {
		t.Errorf("bench report: exit %d\n%s%s", code, out, stderr)
	}
	for _, f := range []string{"index.html", "tasks.csv", "configs.csv", "report.json"} {
		if _, err := os.Stat(filepath.Join(rdir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestBenchCommands: list, show, check and import without training.
func TestBenchCommands(t *testing.T) {
	home := t.TempDir()
	tracksDir, _ := filepath.Abs(benchQuickTracks)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf("home: %s\ntracks_dirs: [%s]\n", home, tracksDir))
	if code, out, stderr := runCLI(t, "bench", "list"); code != 0 || !strings.Contains(out, "tiny-ladder") {
		t.Errorf("bench list: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "bench", "list", "--json"); code != 0 || !json.Valid([]byte(out)) {
		t.Errorf("bench list --json: exit %d\n%s%s", code, out, stderr)
	}
	// The keys are snake_case: suites/tiny-ladder/measure.sh reads
	// records[].id and records[].program.
	code, out, stderr := runCLI(t, "bench", "show", benchQuickSuite, "--json")
	var suite struct {
		Records []map[string]any `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &suite); code != 0 || err != nil || len(suite.Records) == 0 ||
		suite.Records[0]["id"] != "r0" || suite.Records[0]["program"] == nil || suite.Records[0]["time_ms"] == nil {
		t.Errorf("bench show SUITE --json: exit %d (%v)\n%s%s", code, err, out, stderr)
	}
	code, out, stderr = runCLI(t, "bench", "show", benchQuickSuite+"/r0-r1", "--json")
	var task taskInfo
	if err := json.Unmarshal([]byte(out), &task); code != 0 || err != nil || len(task.Hints) != 3 || task.Diff != "" {
		t.Errorf("bench show TASK --json: exit %d (%v)\n%s%s", code, err, out, stderr)
	}
	// A published time shows its evidence: the runs and their spread when
	// the suite gives them, else that it is one figure.
	if code, out, _ := runCLI(t, "bench", "show", "tiny-ladder"); code != 0 || !strings.Contains(out, "(sd ") || !strings.Contains(out, ", n 5)") {
		t.Errorf("bench show tiny-ladder does not show the records' noise: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "bench", "show", benchQuickSuite); code != 0 || !strings.Contains(out, "(one figure)") || !strings.Contains(out, "without its noise") {
		t.Errorf("bench show of a suite without noise does not say so: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "bench", "show", benchQuickSuite+"/r0-r1", "--diff"); code != 0 || !strings.Contains(out, "GROUND-TRUTH") {
		t.Errorf("bench show --diff: exit %d\n%s", code, out)
	}
	if code, out, stderr := runCLI(t, "--config", cfg, "bench", "check", benchQuickSuite); code != 0 || !strings.Contains(out, "is valid") {
		t.Errorf("bench check: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "--config", cfg, "bench", "check", "tiny-ladder"); code != 0 || !strings.Contains(out, "is valid") {
		t.Errorf("bench check by name: exit %d\n%s%s", code, out, stderr)
	}
	// A typo in a new run's suite or flags is said before Python is probed.
	code, _, stderr = runCLI(t, "--config", cfg, "bench", "run", "nope")
	if code != exitUsage || !strings.Contains(stderr, "no suite named") || strings.Contains(stderr, "Python") {
		t.Errorf("bench run nope: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "--config", cfg, "bench", "run", "tiny-ladder", "--scaffold", "bogus")
	if code != exitUsage || !strings.Contains(stderr, "--scaffold") || strings.Contains(stderr, "Python") {
		t.Errorf("bench run --scaffold bogus: exit %d: %s", code, stderr)
	}
	bad := writeTemp(t, t.TempDir(), "suite.yaml", "name: x\ntrack: tiny\nrecords: []\ntasks: []\nbogus: 1\n")
	if code, _, stderr := runCLI(t, "bench", "check", bad); code != exitUsage || !strings.Contains(stderr, "suite.yaml:5:1") {
		t.Errorf("bench check of a bad suite: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "bench", "show", "nope"); code != exitUsage || !strings.Contains(stderr, "no suite named") {
		t.Errorf("bench show nope: exit %d: %s", code, stderr)
	}
	out = filepath.Join(t.TempDir(), "imported")
	code, stdout, stderr := runCLI(t, "bench", "import", "--from", "../../internal/bench/published/testdata/checkout", "--out", out)
	if code != 0 || !strings.Contains(stdout, "2 tasks (legacy log contract)") || !strings.Contains(stdout, "left out: task record_2") {
		t.Errorf("bench import: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "--config", cfg, "bench", "run", "--resume", "x", "--model", "m"); code != exitUsage || !strings.Contains(stderr, "only --max-usd") {
		t.Errorf("--resume with --model: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--config", cfg, "bench", "run", "tiny-ladder", "--name", "a\nb"); code != exitUsage || !strings.Contains(stderr, "--name") {
		t.Errorf("--name with a newline: exit %d: %s", code, stderr)
	}
	// Reading commands do not create a database; with none they say how
	// to get one.
	if code, _, stderr := runCLI(t, "--config", cfg, "bench", "runs"); code != exitFailure || !strings.Contains(stderr, "no database at") {
		t.Errorf("bench runs without a database: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "frontier.db")); err == nil {
		t.Error("bench runs created a database")
	}
	// A run to resume that is not there, or a model that is not
	// configured, is said before Python is probed.
	if code, _, stderr := runCLI(t, "--config", cfg, "bench", "run", "--resume", "nope"); code != exitUsage ||
		!strings.Contains(stderr, "no database at") || strings.Contains(stderr, "Python") {
		t.Errorf("--resume of a missing run: exit %d: %s", code, stderr)
	}
	// With a database, a missing run is named as such, still before Python.
	storetest.SQLite(t, filepath.Join(home, "frontier.db")).Close()
	if code, _, stderr := runCLI(t, "--config", cfg, "bench", "run", "--resume", "nope"); code != exitUsage ||
		!strings.Contains(stderr, `bench run "nope"`) || strings.Contains(stderr, "Python") {
		t.Errorf("--resume of a missing run with a database: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--config", cfg, "bench", "run", "tiny-ladder", "--model", "nope"); code != exitUsage ||
		!strings.Contains(stderr, "model nope, named on the command line") || strings.Contains(stderr, "Python") {
		t.Errorf("bench run --model nope: exit %d: %s", code, stderr)
	}
	// A JSON command that fails early still prints JSON on stdout.
	code, out, _ = runCLI(t, "bench", "show", "nope", "--json")
	var je jsonError
	if err := json.Unmarshal([]byte(out), &je); code != exitUsage || err != nil || je.ExitCode != exitUsage {
		t.Errorf("bench show nope --json: exit %d, stdout %q", code, out)
	}
}

// An unknown bench run is the user's to fix (2); its message says where
// to look.
func TestBenchUnknownRun(t *testing.T) {
	home := t.TempDir()
	storetest.SQLite(t, filepath.Join(home, "frontier.db")).Close()
	code, _, stderr := runCLI(t, "--home", home, "bench", "report", "nope", "--json")
	if code != exitUsage || !strings.Contains(stderr, "frontier bench runs") {
		t.Errorf("bench report nope: exit %d: %s", code, stderr)
	}
}

// The summary says that a best time the search found is one run, and
// says nothing of the kind when no search beat its start.
func TestBenchSummarySingleTiming(t *testing.T) {
	run := &store.BenchRun{Name: "x", Suite: "s", Scaffold: "flat", Model: "mutate", Hints: "none"}
	attempt := func(best int64) *store.BenchAttempt {
		return &store.BenchAttempt{Task: "r0-r1", State: store.AttemptDone, StartMs: 2000, GoalMs: 1000, BestMs: 1500,
			BestNodeID: best, TimeSource: bench.TimesCalibrated, FSR: 0.5}
	}
	for _, c := range []struct {
		best int64
		want bool
	}{{7, true}, {0, false}} {
		var b strings.Builder
		sum := &bench.Summary{Run: run, Attempts: []*store.BenchAttempt{attempt(c.best)}, StopReason: bench.StopDone}
		if err := printBenchSummary(&b, sum, false); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "single timing"); got != c.want {
			t.Errorf("best node %d: single-timing note %v, want %v\n%s", c.best, got, c.want, b.String())
		}
	}
}
