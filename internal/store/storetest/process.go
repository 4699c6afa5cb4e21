package storetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
)

// helperEnv names the database a helper process writes to;
// orphanEnv, the database a helper leaves an evaluation running in.
const (
	helperEnv = "FRONTIER_STORETEST_HELPER"
	orphanEnv = "FRONTIER_STORETEST_ORPHAN"
)

// perProcess is how many evaluations and children each process writes.
const perProcess = 25

// HelperMain does the helper process's part of Processes and exits, when
// this process is one; otherwise it returns at once. Call it first in
// TestMain, with the same open function as Processes.
func HelperMain(open func(ctx context.Context, name string) (store.Store, error)) {
	if name := os.Getenv(orphanEnv); name != "" {
		if err := leaveRunning(context.Background(), open, name); err != nil {
			fmt.Fprintln(os.Stderr, "storetest helper:", err)
			os.Exit(1)
		}
		// Gone without finishing it, as a process killed with -9 is.
		os.Exit(0)
	}
	name := os.Getenv(helperEnv)
	if name == "" {
		return
	}
	if err := writeShare(context.Background(), open, name, "helper"); err != nil {
		fmt.Fprintln(os.Stderr, "storetest helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Processes checks that two processes writing to one database at once
// lose nothing: this process and a helper (the test binary run again,
// which TestMain hands to HelperMain) each record evaluations and a run's
// children, and every row of both is there afterwards. name is what open
// takes: a file path for SQLite, a connection string for a server.
func Processes(t *testing.T, name string, open func(ctx context.Context, name string) (store.Store, error)) {
	ctx := context.Background()
	s, err := open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, who := range []string{"main", "helper"} {
		must(t, s.CreateRun(ctx, &store.Run{Name: who, Track: "tiny", TrackHash: "th"}))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name)
	out := make(chan error, 1)
	var stderr []byte
	go func() {
		b, err := cmd.CombinedOutput()
		stderr = b
		out <- err
	}()
	if err := writeShare(ctx, open, name, "main"); err != nil {
		t.Error(err)
	}
	if err := <-out; err != nil {
		t.Fatalf("helper process: %v\n%s", err, stderr)
	}
	evs, err := s.Evaluations(ctx, store.Filter{Limit: 10 * perProcess})
	if err != nil || len(evs) != 2*perProcess {
		t.Errorf("%d evaluations (%v), want %d", len(evs), err, 2*perProcess)
	}
	seen := map[int64]bool{}
	for _, e := range evs {
		if seen[e.ID] || e.State != store.StateDone {
			t.Errorf("evaluation #%d: duplicate id or not done (%s)", e.ID, e.State)
		}
		seen[e.ID] = true
	}
	for _, who := range []string{"main", "helper"} {
		r, err := s.Run(ctx, who)
		must(t, err)
		kids, err := s.Children(ctx, r.ID)
		if err != nil || len(kids) != perProcess || r.Iterations != perProcess {
			t.Errorf("run %s: %d children, iterations %d (%v); want %d", who, len(kids), r.Iterations, err, perProcess)
		}
	}
}

// writeShare is one process's writes: evaluations from creation to
// finish, and its run's children with the run row in one transaction each.
func writeShare(ctx context.Context, open func(ctx context.Context, name string) (store.Store, error), name, who string) error {
	s, err := open(ctx, name)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := s.Run(ctx, who)
	if err != nil {
		return err
	}
	for i := range perProcess {
		h, err := s.PutProgram(ctx, []byte(who+strconv.Itoa(i)), "")
		if err != nil {
			return err
		}
		e := &store.Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th"}
		if err := s.CreateEvaluation(ctx, e); err != nil {
			return err
		}
		e.Verdict = "acceptable"
		if err := s.FinishEvaluation(ctx, e, []byte("{}\n")); err != nil {
			return err
		}
		err = s.RunInTx(ctx, func(tx store.RunTx) error {
			if err := tx.InsertChild(&store.Child{RunID: r.ID, Iteration: i, Origin: "mutate", State: "queued", ProgramHash: h}); err != nil {
				return err
			}
			r.Iterations = i + 1
			return tx.UpdateRun(r)
		})
		if err != nil {
			return fmt.Errorf("%s: child %d: %w", who, i, err)
		}
	}
	return nil
}

// Orphans checks that an evaluation a process left running when it ended
// (killed, or a failure before it recorded the outcome) is found by the
// next process and marked interrupted, once, while the evaluations of live
// processes (this one) are left alone.
func Orphans(t *testing.T, name string, open func(ctx context.Context, name string) (store.Store, error)) {
	ctx := context.Background()
	s, err := open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, err := s.PutProgram(ctx, []byte("mine"), "")
	must(t, err)
	mine := &store.Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th"}
	must(t, s.CreateEvaluation(ctx, mine))
	if mine.Owner == "" {
		t.Error("CreateEvaluation recorded no owner")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), orphanEnv+"="+name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	orphans, err := s.InterruptOrphans(ctx)
	must(t, err)
	if len(orphans) != 1 || orphans[0].ID == mine.ID || orphans[0].Track != "orphan" {
		t.Fatalf("InterruptOrphans = %v, want the helper's evaluation only", ids(orphans))
	}
	got, err := s.Evaluation(ctx, orphans[0].ID)
	if err != nil || got.State != store.StateInterrupted || got.FinishedAt.IsZero() || got.Reason == "" {
		t.Errorf("the orphan reads back as %+v (%v), want interrupted with a reason", got, err)
	}
	if got, err := s.Evaluation(ctx, mine.ID); err != nil || got.State != store.StateRunning {
		t.Errorf("this process's evaluation reads back as %+v (%v), want running", got, err)
	}
	if again, err := s.InterruptOrphans(ctx); err != nil || len(again) != 0 {
		t.Errorf("a second InterruptOrphans = %v, %v; want none", ids(again), err)
	}
}

// leaveRunning is the helper's part of Orphans.
func leaveRunning(ctx context.Context, open func(ctx context.Context, name string) (store.Store, error), name string) error {
	s, err := open(ctx, name)
	if err != nil {
		return err
	}
	defer s.Close()
	h, err := s.PutProgram(ctx, []byte("orphan"), "")
	if err != nil {
		return err
	}
	return s.CreateEvaluation(ctx, &store.Evaluation{ProgramHash: h, Track: "orphan", TrackHash: "th"})
}
