package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// wasteEvaluator times programs by their busywork, instantly: the search's
// view, which runs confirm then checks with real runs.
type wasteEvaluator struct{}

func (wasteEvaluator) Evaluate(ctx context.Context, req eval.Request) (*eval.Result, error) {
	if req.FastOnly {
		return &eval.Result{Verdict: eval.FastOK}, nil
	}
	ms := 1000.0
	if strings.Contains(string(req.Program), "WASTE = 0") {
		ms = 400
	}
	return &eval.Result{Verdict: eval.Acceptable, Metrics: eval.Metrics{ValLoss: 4.04, TrainTimeMs: ms, StepAvgMs: ms / 60, Score: ms / 60 * 4.04}}, nil
}

// A run's record is re-timed against its reference with real runs, in
// alternation; whether the speedup passes Welch's test on a loaded machine
// is not up to the test, but the exit code must agree with the report.
func TestRunsConfirm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training processes")
	}
	ctx := context.Background()
	home := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(home, "frontier.db"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := track.NewRegistry(tracks.FS, quickTracks).Get("quick")
	if err != nil {
		t.Fatal(err)
	}
	replay, err := propose.NewReplay(strings.NewReader(`{"answer":"<<<<<<< SEARCH\nWASTE = 4\n=======\nWASTE = 0\n>>>>>>> REPLACE\n"}`+"\n"), "replay")
	if err != nil {
		t.Fatal(err)
	}
	e, err := evolve.New(ctx, evolve.Options{Store: st, Track: spec, Evaluator: wasteEvaluator{},
		Models: []evolve.Model{{Name: "replay", Kind: propose.KindReplay, Proposer: replay}}},
		evolve.Config{Islands: 1, BranchingFactor: 1, Seed: 1, Budget: evolve.BudgetConfig{MaxIterations: 1}}, "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Evaluations(ctx, store.Filter{Limit: 100})
	st.Close()
	abs, _ := filepath.Abs(quickTracks)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf("home: %s\ntracks_dirs: [%s]\n", home, abs))

	if code, _, stderr := runCLI(t, "--config", cfg, "runs", "confirm", "c", "--repeats", "1"); code != exitUsage || !strings.Contains(stderr, "at least 2 runs") {
		t.Errorf("--repeats 1: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "--config", cfg, "runs", "confirm", "c", "--repeats", "2")
	if code != exitOK && code != exitNotConfirmed {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"confirming #2", "against the reference #1", "pair 2 of 2"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"repeats (2 of 2 runs)", "run in alternation with the program", "vs baseline", "Welch"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if claimed := strings.Contains(out, "RECORD CLAIM"); claimed != (code == exitOK) {
		t.Errorf("exit %d, but the report says record claim %v:\n%s", code, claimed, out)
	}
	if code == exitNotConfirmed && !strings.Contains(stderr, "not confirmed: ") {
		t.Errorf("no reason given:\n%s", stderr)
	}
	st = storetest.SQLite(t, filepath.Join(home, "frontier.db"))
	after, _ := st.Evaluations(ctx, store.Filter{Limit: 100})
	if len(after)-len(before) != 4 { // two runs of each
		t.Errorf("%d evaluations stored by confirm, want 4", len(after)-len(before))
	}
}

// The same at the end of a search (evolve --confirm). The search's record
// may be the reference itself on a loaded machine, so either outcome is
// accepted, but the output must agree with the exit code.
func TestEvolveConfirm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training processes")
	}
	home := t.TempDir()
	abs, _ := filepath.Abs(quickTracks)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf(
		"home: %s\ntracks_dirs: [%s]\nevolve:\n  islands: 1\n  branching_factor: 1\n  slots: 1\n", home, abs))
	replay := writeTemp(t, home, "answers.jsonl", `{"answer":"<<<<<<< SEARCH\nWASTE = 4\n=======\nWASTE = 0\n>>>>>>> REPLACE\n"}`+"\n")

	if code, _, stderr := runCLI(t, "--config", cfg, "evolve", "--track", "quick", "--replay", replay, "--confirm", "1"); code != exitUsage || !strings.Contains(stderr, "at least 2 runs") {
		t.Errorf("--confirm 1: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "--config", cfg, "evolve", "--track", "quick", "--replay", replay,
		"--iterations", "1", "--quiet", "--confirm", "2")
	if code != exitOK && code != exitNotConfirmed {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "stopped: iterations") {
		t.Errorf("no run summary:\n%s", out)
	}
	if strings.Contains(out, "nothing to confirm") {
		if code != exitOK || !strings.Contains(out, "the reference is still the fastest acceptable program") {
			t.Errorf("exit %d:\n%s", code, out)
		}
		t.Log("the reference measured fastest: nothing to confirm")
		return
	}
	if claimed := strings.Contains(out, "RECORD CLAIM"); claimed != (code == exitOK) || !strings.Contains(out, "run in alternation with the program") {
		t.Errorf("exit %d, record claim %v:\n%s", code, claimed, out)
	}
}
