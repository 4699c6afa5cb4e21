package evolve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
	"github.com/frontier-bench/frontier/internal/track"
	"github.com/frontier-bench/frontier/tracks"
)

// The resume test runs the engine in a child process (this test binary,
// re-executed with helperEnv set), kills it with SIGKILL at random moments,
// resumes it, and checks that the finished run lost nothing and evaluated
// nothing twice.

const helperEnv = "FRONTIER_EVOLVE_TEST_HELPER"

func resumeConfig() Config {
	return Config{
		Islands: 2, BranchingFactor: 3, ArchiveSize: 5, Slots: 2, LLMConcurrency: 2, Seed: 5,
		Migration:     MigrationConfig{Interval: 2, Count: 1},
		MetaPrompting: MetaConfig{StartIteration: ptr(4)},
		FastFixes:     ptr(2),
		Budget:        BudgetConfig{MaxIterations: 24},
	}
}

// runHelper is the child process: it starts (or resumes) the run named
// $EVOLVE_RUN ("resume" when unset) in the database $EVOLVE_DB (a
// location: a SQLite file or a PostgreSQL URL) and runs it to its end.
func runHelper(kind string) int {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := store.Open(ctx, os.Getenv("EVOLVE_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	spec, err := track.NewRegistry(tracks.FS, "testdata").Get("quick")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	killAfter, _ := strconv.ParseInt(os.Getenv("EVOLVE_KILL_AFTER"), 10, 64)
	opts := Options{
		Store: st, Track: spec, Log: log,
		Evaluator: &evaltest.Scripted{Store: st, Else: delayed(30*time.Millisecond, 150*time.Millisecond), After: func(n int64) {
			// The process dies right after recording its killAfter-th
			// evaluation, before returning it.
			if n == killAfter {
				syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
				select {}
			}
		}},
		Models: []Model{
			{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate()},
			{Name: "fake", Kind: propose.KindLLM, Client: fakeModel(30 * time.Millisecond)},
		},
	}
	name := os.Getenv("EVOLVE_RUN")
	if name == "" {
		name = "resume"
	}
	var e *Engine
	run, err := st.Run(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		e, err = New(ctx, opts, resumeConfig(), name)
	case err == nil:
		e, err = Resume(ctx, opts, run, Overrides{})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := e.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the engine in child processes")
	}
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { resumeAfterKill(t, storetest.Location(t, d)) })
	}
}

func resumeAfterKill(t *testing.T, db string) {
	rng := rand.New(rand.NewPCG(1, 2))
	start := func(extra ...string) *exec.Cmd {
		return startHelper(t, db, extra...)
	}
	// Killed at random moments, once right after an evaluation was
	// recorded but before the engine saw it, then run to its end.
	kills := 0
	for round := 0; round < 6; round++ {
		var cmd *exec.Cmd
		if round == 2 {
			cmd = start("EVOLVE_KILL_AFTER=3")
		} else {
			cmd = start()
			time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cmd.Wait(); err == nil {
			t.Fatalf("round %d: the run finished before it was killed; make it longer", round)
		}
		kills++
	}
	cmd := start()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("final session: %v", err)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("final session did not finish in 2 minutes")
	}
	t.Logf("%d kills", kills)
	checkFinishedRun(t, db, "resume", resumeConfig(), true)
}

// startHelper starts runHelper in a child process on the database at
// location db, with extra environment variables.
func startHelper(t *testing.T, db string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=run", "EVOLVE_DB="+db)
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// checkFinishedRun checks the invariants of a finished run: one that was
// killed and resumed any number of times (resumed), or that ran beside
// another in the same database (its evaluations are then told apart from
// the other's by its children).
func checkFinishedRun(t *testing.T, db, name string, cfg Config, resumed bool) {
	t.Helper()
	ctx := context.Background()
	st := storetest.OpenAt(t, db)
	run, err := st.Run(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != store.RunStopped || run.StopReason != StopIterations || run.Iterations != cfg.Budget.MaxIterations {
		t.Fatalf("run: state %s, reason %s (%s), iterations %d", run.State, run.StopReason, run.StopDetail, run.Iterations)
	}
	starts, err := st.RunEvents(ctx, run.ID, "session_start")
	if err != nil || (resumed && len(starts) < 2) || run.Sessions != len(starts) {
		t.Errorf("sessions %d, session_start events %d (%v): the run was never resumed?", run.Sessions, len(starts), err)
	}
	kids, err := st.Children(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]*store.Child{}
	n := 0
	for _, c := range kids {
		byID[c.ID] = c
		if c.State != runs.Done {
			t.Errorf("child %d is %s", c.ID, c.State)
		}
		if c.Origin != runs.OriginReference && !c.Origin.IsCopy() {
			n++
		}
	}
	if want := cfg.Budget.MaxIterations * cfg.BranchingFactor; n != want {
		t.Errorf("%d children, want %d: iteration counts must be totals", n, want)
	}
	iters, err := st.Iterations(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range iters {
		if it.DoneAt.IsZero() {
			t.Errorf("iteration %d is not done", it.Iteration)
		}
	}
	// No finished evaluation is repeated, and every verdict is backed by
	// the evaluation it came from.
	evals, err := st.Evaluations(ctx, store.Filter{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if !resumed {
		// The other run's evaluations are not this one's.
		mine := map[int64]bool{}
		for _, c := range kids {
			mine[c.EvaluationID], mine[c.FastEvaluationID] = true, true
		}
		evals = slices.DeleteFunc(evals, func(e *store.Evaluation) bool { return !mine[e.ID] })
	}
	done := map[string]int{}
	interrupted := 0
	evalByID := map[int64]*store.Evaluation{}
	for _, e := range evals {
		evalByID[e.ID] = e
		switch e.State {
		case store.StateDone:
			done[fmt.Sprintf("%s/%v", e.ProgramHash, e.FastOnly)]++
		case store.StateInterrupted:
			interrupted++
		default:
			t.Errorf("evaluation %d is still %s", e.ID, e.State)
		}
	}
	for k, v := range done {
		if v > 1 {
			t.Errorf("program %s was evaluated to the end %d times", k, v)
		}
	}
	fullRuns := 0
	for _, c := range kids {
		if c.Origin.IsCopy() || c.Verdict == runs.Duplicate {
			continue
		}
		if c.Verdict.Valid() {
			fullRuns++
			e := evalByID[c.EvaluationID]
			if e == nil || e.ProgramHash != c.ProgramHash || runs.Verdict(e.Verdict) != c.Verdict || e.FastOnly {
				t.Errorf("child %d (%s): its evaluation %d does not back it: %+v", c.ID, c.Verdict, c.EvaluationID, e)
			}
		}
		if c.FastEvaluationID != 0 && evalByID[c.FastEvaluationID] == nil {
			t.Errorf("child %d: fast evaluation %d is missing", c.ID, c.FastEvaluationID)
		}
	}
	if fullRuns == 0 {
		t.Error("no child reached a full evaluation")
	}
	calls, err := st.LLMCalls(ctx, run.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, c := range calls {
		switch c.State {
		case store.CallPending:
			t.Errorf("model call %d is still pending", c.ID)
		case store.CallLost:
			lost++
		}
	}
	adopted, err := st.RunEvents(ctx, run.ID, "adopted_evaluation")
	if err != nil || (resumed && len(adopted) == 0) {
		t.Errorf("no evaluation that finished just before a kill was adopted (%v)", err)
	}
	migs, err := st.RunEvents(ctx, run.ID, "migration")
	if err != nil {
		t.Fatal(err)
	}
	if want := cfg.Budget.MaxIterations / cfg.Migration.Interval; len(migs) != want {
		t.Errorf("%d migrations, want %d", len(migs), want)
	}
	t.Logf("%d members, %d evaluations (%d interrupted, %d adopted), %d full runs, %d model calls (%d lost), %d migrations",
		len(kids), len(evals), interrupted, len(adopted), fullRuns, len(calls), lost, len(migs))
}
