package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/stats"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// wasteEvaluator times programs by their busywork, instantly: the search's
// view, which runs confirm then checks with real runs.
func wasteEvaluator() *evaltest.Scripted {
	return &evaltest.Scripted{
		Rules: []evaltest.Rule{{Source: evaltest.Contains("WASTE = 0"), Outcome: evaltest.Outcome{ValLoss: 4.04, TrainTimeMs: 400}}},
		Else:  func(eval.Request, string) evaltest.Outcome { return evaltest.Outcome{ValLoss: 4.04, TrainTimeMs: 1000} },
	}
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
	replay, err := propose.NewReplay(strings.NewReader(`{"answer":"<<<<<<< SEARCH\nWASTE = 4\n=======\nWASTE = 0\n>>>>>>> REPLACE\n"}`+"\n"), "replay")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := quickRun(t, home, "c", wasteEvaluator(), []evolve.Model{{Name: "replay", Kind: propose.KindReplay, Proposer: replay}},
		evolve.Config{Islands: 1, BranchingFactor: 1, Seed: 1, Budget: evolve.BudgetConfig{MaxIterations: 1}})
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
	for _, want := range []string{"confirming #2", "against #1 (the reference)", "pair 2 of 2",
		"warning: a series of 2 runs of each program cannot show a speedup at alpha 0.01"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"confirmation of #2 against #1 (the reference), 2 runs of each in alternation", "Welch", "stored as claim"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if claimed := strings.Contains(out, "  CONFIRMED: "); claimed != (code == exitOK) || strings.Contains(out, "LOSS_TOO_HIGH") {
		t.Errorf("exit %d, but the report says confirmed %v:\n%s", code, claimed, out)
	}
	// The outcome is stored with the run, confirmed or not.
	_, show, _ := runCLI(t, "--config", cfg, "runs", "show", "c")
	if !strings.Contains(show, "claims (candidate records") || !strings.Contains(show, "cli") {
		t.Errorf("runs show does not list the confirmation:\n%s", show)
	}
	if code == exitNotConfirmed && !strings.Contains(stderr, "not confirmed: ") {
		t.Errorf("no reason given:\n%s", stderr)
	}
	st = storetest.SQLite(t, filepath.Join(home, "frontier.db"))
	after, _ := st.Evaluations(ctx, store.Filter{Limit: 100})
	if len(after)-len(before) != 4 { // two runs of each (the search ran no series: the evaluator of its test cannot)
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
		"home: %s\ntracks_dirs: [%s]\nevolve:\n  islands: 1\n  branching_factor: 1\n  slots: 1\n  confirm: {enabled: false}\n", home, abs))
	replay := writeTemp(t, home, "answers.jsonl", `{"answer":"<<<<<<< SEARCH\nWASTE = 4\n=======\nWASTE = 0\n>>>>>>> REPLACE\n"}`+"\n")

	if code, _, stderr := runCLI(t, "--config", cfg, "evolve", "--track", "quick", "--replay", replay, "--confirm", "1"); code != exitUsage || !strings.Contains(stderr, "at least 2 runs") {
		t.Errorf("--confirm 1: exit %d: %s", code, stderr)
	}
	// With --json: one document, whose confirmation agrees with the exit
	// code (the text of a series is runs confirm's, tested above).
	code, out, stderr := runCLI(t, "--config", cfg, "evolve", "--track", "quick", "--replay", replay,
		"--iterations", "1", "--quiet", "--confirm", "2", "--json")
	if code != exitOK && code != exitNotConfirmed {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var got evolveJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	if got.StopReason != "iterations" || got.Run.StopReason != "iterations" || got.Iterations != 1 || got.Run.Record == nil ||
		got.Confirmation == nil || len(got.Next) < 3 {
		t.Errorf("evolve --json: %+v", got)
	}
	c := got.Confirmation
	if c.Claim == nil {
		if code != exitOK || !strings.Contains(c.Reason, "no acceptable program measured faster than the reference") {
			t.Errorf("exit %d: %+v", code, c)
		}
		t.Log("the reference measured fastest: nothing to confirm")
		return
	}
	if claimed := c.Claim.State == string(runs.ClaimConfirmed); claimed != (code == exitOK) || c.Claim.Pairs != 2 {
		t.Errorf("exit %d, claim %+v", code, c.Claim)
	}
}

// A series whose every run reached the target, with a mean loss that two
// runs cannot show to be under it, is not confirmed: and says so, instead
// of headlining the evaluator's verdict of the mean (LOSS_TOO_HIGH).
func TestConfirmationHeadline(t *testing.T) {
	lt := stats.TTest{T: -2, DF: 1, P: 0.15, Alpha: 0.01}
	wt := stats.TTest{T: -3, DF: 1.8, P: 0.06, Alpha: 0.01}
	res := &eval.Result{Verdict: eval.LossTooHigh, Track: eval.TrackInfo{Target: 4.2}, Repeats: &eval.Repeats{N: 2,
		Runs:    []eval.RepeatRun{{Seed: 1, Verdict: eval.Acceptable, ValLoss: 4.1, TrainTimeMs: 900}, {Seed: 2, Verdict: eval.Acceptable, ValLoss: 4.15, TrainTimeMs: 950}},
		ValLoss: stats.Summarize([]float64{4.1, 4.15}, 0.95), TrainTimeMs: stats.Summarize([]float64{900, 950}, 0.95), LossTest: &lt,
		Baseline: &eval.BaselineComparison{TrainTimeMs: stats.Summarize([]float64{1000, 1010}, 0.95), Test: wt,
			Runs: []eval.RepeatRun{{Seed: 1, Verdict: eval.Acceptable, TrainTimeMs: 1000}, {Seed: 2, Verdict: eval.Acceptable, TrainTimeMs: 1010}}},
		RecordReason: "the loss is not significantly under the target"}}
	cl := &store.Confirmation{Claim: runs.Claim{ChildID: 5, BaselineID: 1, Method: runs.MethodSeries, Pairs: 2, Alpha: 0.01}}
	cl.State, cl.Reason = evolve.FillClaim(cl, res, nil)
	if cl.State != runs.ClaimRejected {
		t.Fatalf("state %s (%s)", cl.State, cl.Reason)
	}
	ref := &store.Child{ID: 1, Origin: runs.OriginReference}
	sum := &runview.Summary{Run: &store.Run{Name: "r"}, Reference: ref, Record: ref}
	var b strings.Builder
	writeConfirmation(&b, cl, res, &store.Child{ID: 5}, ref, sum)
	out := b.String()
	for _, want := range []string{"NOT CONFIRMED: rejected in alternation, n = 2 each: +8.0%", "every run reached the target (2 of 2)", "Welch p = 0.06"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(strings.ToUpper(out), "LOSS_TOO_HIGH") {
		t.Errorf("the headline names the mean's verdict:\n%s", out)
	}
}
