package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// quickTracks is the engine's test track folder (a bigram on the tiny data).
const quickTracks = "../../internal/evolve/testdata"

// hashEvaluator judges programs by their hash, instantly: every fast check
// passes; a full run takes 1 to 3.5 s, at loss 4, and one program in about
// four is loss_too_high at 4.5.
func hashEvaluator() *evaltest.Scripted {
	return &evaltest.Scripted{Else: func(req eval.Request, h string) evaltest.Outcome {
		o := evaltest.Outcome{Verdict: eval.Acceptable, ValLoss: 4, TrainTimeMs: 1000 + float64(h[0])*10}
		if h[1] < '4' {
			o.Verdict, o.ValLoss = eval.LossTooHigh, 4.5
		}
		return o
	}}
}

// quickRun runs a search named name on the quick track in a database
// under home and returns the store, still open, and how the run ended.
func quickRun(t *testing.T, home, name string, ev evolve.Evaluator, models []evolve.Model, cfg evolve.Config) (store.Store, *evolve.Summary) {
	t.Helper()
	ctx := context.Background()
	st := storetest.SQLite(t, filepath.Join(home, "frontier.db"))
	spec, err := track.NewRegistry(tracks.FS, quickTracks).Get("quick")
	if err != nil {
		t.Fatal(err)
	}
	e, err := evolve.New(ctx, evolve.Options{Store: st, Track: spec, Evaluator: ev, Models: models}, cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st, sum
}

func TestRunsCommands(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	st, sum := quickRun(t, home, "cli-runs", hashEvaluator(), []evolve.Model{{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate()}},
		evolve.Config{Islands: 2, BranchingFactor: 3, Seed: 4, Budget: evolve.BudgetConfig{MaxIterations: 3}})
	run, _ := st.Run(ctx, "cli-runs")
	s, err := runview.Summarize(ctx, st, run)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, stderr := runCLI(t, "--home", home, "runs")
	if code != 0 || !strings.Contains(out, "cli-runs") || !strings.Contains(out, "iterations") || !strings.Contains(out, "RECORD") {
		t.Errorf("runs: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "--home", home, "runs", "show", "cli-runs")
	for _, want := range []string{"run cli-runs (#1) on track quick", "stopped: iterations", "verdicts", "acceptable",
		"best programs", "per model", "per stage", "mutate", "2 islands, branching 3"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	// The evaluator runs no series: a faster child is a candidate, shown
	// as one, and the record stays the reference.
	if s.Record == nil || s.Record.ID != s.Reference.ID || !strings.Contains(out, "record      the reference #1") {
		t.Errorf("runs show: record %v, want the reference:\n%s", s.Record, out)
	}
	if f := s.Fastest; sum.Status.Acceptable > 0 && f != nil && f.TrainTimeMs < s.RecordMs &&
		(!strings.Contains(out, fmt.Sprintf("%d ?", f.ID)) || !strings.Contains(out, "candidate   #") || !strings.Contains(out, "frontier runs confirm cli-runs")) {
		t.Errorf("runs show does not show the candidate #%d:\n%s", f.ID, out)
	}
	bestFile := filepath.Join(home, "best.py")
	code, _, stderr = runCLI(t, "--home", home, "runs", "best", "1", "-o", bestFile)
	got, _ := os.ReadFile(bestFile)
	st2 := storetest.SQLite(t, filepath.Join(home, "frontier.db"))
	want, _ := st2.Program(ctx, s.Best().ProgramHash)
	if code != 0 || string(got) != string(want) || !strings.Contains(stderr, fmt.Sprintf("#%d", s.Best().ID)) {
		t.Errorf("runs best: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--home", home, "runs", "show", "nope"); code != exitUsage || !strings.Contains(stderr, "not found") {
		t.Errorf("unknown run: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--home", t.TempDir(), "runs"); code != exitFailure || !strings.Contains(stderr, "no database") {
		t.Errorf("no database: exit %d: %s", code, stderr)
	}
}

func TestEvolveFlagsRejected(t *testing.T) {
	home := t.TempDir()
	cfg := writeTemp(t, home, "frontier.yaml", "home: "+home+"\nevolve:\n  islands: 2\n  branching: 3\n")
	code, _, stderr := runCLI(t, "--config", cfg, "evolve", "--track", "tiny")
	if code != exitUsage || !strings.Contains(stderr, "branching") {
		t.Errorf("unknown evolve key: exit %d: %s", code, stderr)
	}
	cfg = writeTemp(t, home, "frontier.yaml", "home: "+home+"\n")
	code, _, stderr = runCLI(t, "--config", cfg, "evolve", "--resume", "x", "--model", "m")
	if code != exitUsage || !strings.Contains(stderr, "only budgets") {
		t.Errorf("--resume with --model: exit %d: %s", code, stderr)
	}
}

func TestStatusLine(t *testing.T) {
	s := evolve.Status{RunName: "run-3", Iteration: 12, MaxIterations: 100, SlotsBusy: 1, Slots: 1, ProposalsInFlight: 3,
		Queued: 4, Acceptable: 8, LossTooHigh: 3, Buggy: 5, Duplicates: 1, BestTimeMs: 41200, BestTimeID: 7, ReferenceTimeMs: 52300,
		RecordSpeedup: 0.212, RecordBrief: "confirmed n=5 p=0.002", FastestID: 12, FastestMs: 39100, FastestClaim: "running",
		BestLoss: 2.681, USD: 1.234, Elapsed: 14*time.Minute + 2*time.Second, Draining: true,
		Running: []evolve.RunningEval{{ChildID: 12, Kind: "confirm"}}}
	want := "run-3  it 12/100  slots 1/1  llm 3  queue 4  |  acc 8  high 3  bug 5  dup 1  |  record #7 41.20s +21.2% (confirmed n=5 p=0.002)" +
		"  cand #12 39.10s once (running)  loss 2.6810  |  eval #12 confirm pair 2/5 program  |  $1.23  14m2s  [draining]"
	if got := statusLine(s, stepOf("pair 2 of 5: program (seed 3)")); got != want {
		t.Errorf("status line\n got %s\nwant %s", got, want)
	}
	s = evolve.Status{RunName: "r", BestTimeMs: 52300, BestTimeID: 1, ReferenceTimeMs: 52300, RecordBrief: "reference",
		Running: []evolve.RunningEval{{ChildID: 4, Kind: "full"}}}
	if got := statusLine(s, stepOf("  step:120 train_time:900ms step_avg:7.50ms")); !strings.Contains(got, "record: the reference 52.30s") ||
		!strings.Contains(got, "eval #4 full step 120") {
		t.Errorf("status line %s", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C once drains, twice aborts, and --resume finishes the run: with
// real training processes on the quick track. The engine's own
// confirmation is off, as in the other searches of these tests: a child
// measured faster than the reference would start a series of five pairs of
// full runs, which this test does not look at (it took 300 s in one suite
// run and 590 s in another).
func TestEvolveSignalsAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training processes")
	}
	home := t.TempDir()
	abs, _ := filepath.Abs(quickTracks)
	cfgPath := writeTemp(t, home, "frontier.yaml", fmt.Sprintf(`home: %s
data_dir: %s
tracks_dirs: [%s]
evolve:
  islands: 2
  branching_factor: 2
  slots: 1
  seed: 11
  confirm: {enabled: false}
`, home, sharedDataDir(t), abs))
	var stdout, stderr syncBuffer
	g := &globals{configPath: cfgPath, logLevel: "info", stdout: &stdout, stderr: &stderr}
	g.log = slog.New(slog.NewTextHandler(&stderr, nil))
	if _, err := g.loadConfig(); err != nil {
		t.Fatal(err)
	}

	sigs := make(chan os.Signal, 2)
	statuses := make(chan evolve.Status, 1000)
	// The engine must never wait on this test's reading.
	send := func(ch chan evolve.Status) func(evolve.Status) {
		return func(s evolve.Status) {
			select {
			case ch <- s:
			default:
			}
		}
	}
	o := evolveOptions{track: "quick", name: "sig", iterations: 3, proposer: "mutate", signals: sigs,
		onStatus: send(statuses)}
	done := make(chan error, 1)
	go func() { done <- runEvolve(context.Background(), g, o) }()
	// Once the first child is evaluated, Ctrl-C: the run drains.
	awaitStatus(t, "a child evaluated", statuses, done, &stderr, func(s evolve.Status) bool { return s.Acceptable+s.LossTooHigh+s.Buggy > 0 })
	sigs <- syscall.SIGINT
	err := <-done
	if exitCode(err) != exitInterrupted {
		t.Fatalf("first session: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "draining") || !strings.Contains(stdout.String(), "stopped: interrupted") {
		t.Errorf("no drain message:\n%s\n%s", stderr.String(), stdout.String())
	}
	checkRun(t, g, "sig", store.RunStopped, evolve.StopInterrupted)

	// Resume; Ctrl-C twice as soon as an evaluation runs: aborted, and no
	// evaluation is left running. Both signals go at once: waiting between
	// them would let a short evaluation finish, and a drained run with
	// nothing running stops as interrupted before the second arrives.
	statuses = make(chan evolve.Status, 1000)
	o = evolveOptions{resume: "sig", iterations: 3, signals: sigs, onStatus: send(statuses)}
	go func() { done <- runEvolve(context.Background(), g, o) }()
	awaitStatus(t, "an evaluation running", statuses, done, &stderr, func(s evolve.Status) bool { return s.SlotsBusy > 0 })
	sigs <- syscall.SIGINT
	sigs <- syscall.SIGINT
	err = <-done
	if exitCode(err) != exitInterrupted {
		t.Fatalf("aborted session: %v", err)
	}
	if !strings.Contains(stderr.String(), "aborting") {
		t.Errorf("no abort message:\n%s", stderr.String())
	}
	checkRun(t, g, "sig", store.RunStopped, evolve.StopAborted)

	// Resume to the end.
	code, out, errText := runCLI(t, "--config", cfgPath, "evolve", "--resume", "sig", "--quiet")
	if code != 0 || !strings.Contains(out, "stopped: iterations") {
		t.Fatalf("final session: exit %d\n%s\n%s", code, out, errText)
	}
	checkRun(t, g, "sig", store.RunStopped, evolve.StopIterations)
}

// awaitStatus reads the engine's statuses until one satisfies ok. A session
// that ends first fails the test with its error and log, instead of
// leaving it waiting for a status that will not come until the suite's
// timeout.
func awaitStatus(t *testing.T, what string, statuses <-chan evolve.Status, done <-chan error, log *syncBuffer, ok func(evolve.Status) bool) {
	t.Helper()
	for {
		select {
		case s := <-statuses:
			if ok(s) {
				return
			}
		case err := <-done:
			t.Fatalf("the session ended (%v) before %s:\n%s", err, what, log.String())
		}
	}
}

// The demo's whole path on the quick track: a short mutate search, the
// report, and the closing lines.
func TestDemoOnQuickTrack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training processes")
	}
	home := t.TempDir()
	abs, _ := filepath.Abs(quickTracks)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf("home: %s\ndata_dir: %s\ntracks_dirs: [%s]\n", home, sharedDataDir(t), abs))
	out := filepath.Join(home, "rep")
	code, stdout, stderr := runCLI(t, "--config", cfg, "demo", "--track", "quick", "--iterations", "1", "--evaluations", "3", "--pairs", "2", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"report: " + filepath.Join(out, "index.html"), "its full run (one timing):", "verdict"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout)
		}
	}
	// The budget counts evaluations: the reference and two children.
	if !strings.Contains(stdout, "stopped: evaluations") && !strings.Contains(stdout, "stopped: iterations") {
		t.Errorf("demo output lacks its stop reason:\n%s", stdout)
	}
	// Either a series ran (and its outcome is said with its evidence), or
	// there was nothing to confirm, and the demo says so.
	switch {
	case strings.Contains(stdout, "confirmation of #"):
		if !strings.Contains(stdout, "CONFIRMED") || !strings.Contains(stdout, "2 runs of each in alternation") {
			t.Errorf("the series' outcome is not said:\n%s", stdout)
		}
		if !strings.Contains(stdout, "the demo found a faster program and confirmed it") && !strings.Contains(stdout, "(the series above, with its evidence)") {
			t.Errorf("the demo's closing line does not follow the series:\n%s", stdout)
		}
	case !strings.Contains(stdout, "no confirmed speedup: no acceptable program was measured faster than the reference"):
		t.Errorf("demo output does not compare with the reference:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(stderr, "mutate baseline") {
		t.Errorf("the demo did not say which proposer it uses:\n%s", stderr)
	}
	if !strings.Contains(stderr, "the reference's full evaluation took") || !strings.Contains(stderr, "2 more programs, then 2 pairs") {
		t.Errorf("the demo did not estimate its time on this machine:\n%s", stderr)
	}
}

// demo --json: one document with the search, the report and the
// outcome (no series here: --pairs 0).
func TestDemoJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training processes")
	}
	home := t.TempDir()
	abs, _ := filepath.Abs(quickTracks)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf("home: %s\ndata_dir: %s\ntracks_dirs: [%s]\n", home, sharedDataDir(t), abs))
	var got demoJSON
	jsonOf(t, &got, "--config", cfg, "demo", "--track", "quick", "--iterations", "1", "--evaluations", "2", "--pairs", "0", "--json")
	if got.Search == nil || !strings.HasPrefix(got.Search.Run.Name, "demo-") || got.Search.Run.Track != "quick" || got.Search.Run.Record == nil ||
		got.Confirmation != nil || (got.Outcome != "unconfirmed" && got.Outcome != "nothing_faster") || got.Message == "" {
		t.Errorf("demo --json: %+v", got)
	}
	if _, err := os.Stat(got.Report); err != nil {
		t.Errorf("the report: %v", err)
	}
}

func checkRun(t *testing.T, g *globals, name, state, reason string) {
	t.Helper()
	cfg, _ := g.loadConfig()
	st := storetest.SQLite(t, cfg.DB)
	run, err := st.Run(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != state || run.StopReason != reason {
		t.Errorf("run %s: %s/%s, want %s/%s (%s)", name, run.State, run.StopReason, state, reason, run.StopDetail)
	}
	evals, _ := st.Evaluations(context.Background(), store.Filter{Limit: 1000})
	for _, e := range evals {
		if e.State == store.StateRunning {
			t.Errorf("evaluation %d is left running", e.ID)
		}
	}
}

// A run started on a track folder resumes from that folder (it failed with
// "no track named ..."), or from --track when the folder moved.
func TestRunTrack(t *testing.T) {
	home := t.TempDir()
	cfg, err := (&globals{configPath: writeTemp(t, home, "frontier.yaml", "home: "+home+"\n")}).loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join(quickTracks, "quick"))
	run := &store.Run{Name: "r", Track: "quick", TrackDir: abs}
	if spec, err := runTrack(cfg, run, ""); err != nil || spec.Name != "quick" {
		t.Errorf("from the recorded folder: %v, %v", spec, err)
	}
	run.TrackDir = filepath.Join(home, "gone")
	if _, err := runTrack(cfg, run, ""); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "pass --track") {
		t.Errorf("a folder that is gone: %v", err)
	}
	if spec, err := runTrack(cfg, run, abs); err != nil || spec.Name != "quick" {
		t.Errorf("--track: %v, %v", spec, err)
	}
}

// The end of a run says what its record rests on and points at the
// confirmation of a candidate that has none.
func TestEvolveSummaryPointsAtConfirm(t *testing.T) {
	var b bytes.Buffer
	printEvolveSummary(&b, &evolve.Summary{RunID: 3, RunName: "run-3", StopReason: "usd", StopDetail: "spent", Status: evolve.Status{
		BestTimeMs: 1000, BestTimeID: 1, RecordSingleMs: 1000, ReferenceTimeMs: 1000, RecordBrief: "reference", FastestID: 9, FastestMs: 700, FastestClaim: "queued"}})
	out := b.String()
	for _, want := range []string{"record: still the reference (1.00s)", "candidate: #9 measured 0.70s once (speedup +30.0% over the record's single timing 1.00s), claim queued",
		"confirm it: frontier runs confirm run-3"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	// The record's time is its series' mean under that series' load; its
	// speedup is its series', not that mean against the reference's
	// single timing (which would read -10.0% here).
	printEvolveSummary(&b, &evolve.Summary{RunName: "r", Status: evolve.Status{BestTimeMs: 1100, BestTimeID: 4, ReferenceTimeMs: 1000,
		RecordSpeedup: 0.2, RecordBasis: "from its claim: #4 vs the reference, series n = 5",
		RecordBrief: "confirmed n=5 p=0.001", RecordEvidence: "confirmed in alternation, n = 5 each: +20.0%"}})
	if out := b.String(); !strings.Contains(out, "speedup +20.0% over the reference (from its claim: #4 vs the reference, series n = 5)") || !strings.Contains(out, "evidence: confirmed in alternation") {
		t.Errorf("summary of a confirmed record:\n%s", out)
	}
}
