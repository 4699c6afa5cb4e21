package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/eval/evaltest"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// A session holds its run: a second one, of a process that is alive here
// or elsewhere, is refused with exit code 9, naming the holder; a session
// whose claim another took over (it stalled past its lease) is told to
// stop.
func TestRunClaim(t *testing.T) {
	ctx := context.Background()
	loc := storetest.Location(t, store.SQLite)
	st := storetest.OpenAt(t, loc)
	r := &store.Run{Name: "held", Track: "quick", TrackHash: "th"}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	elsewhere, err := store.OpenAs(ctx, loc, store.Owner{Host: "gpu-7.example", Boot: "b", PID: 4242, Start: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Close()
	if err := elsewhere.ClaimRun(ctx, r.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	c := newRunClaim()
	err = c.hold(ctx, st, r.ID)
	if exitCode(err) != exitHeld || !strings.Contains(err.Error(), "gpu-7.example") || !strings.Contains(err.Error(), "4242") {
		t.Fatalf("resuming a run held elsewhere: exit %d: %v; want %d naming the host and pid", exitCode(err), err, exitHeld)
	}
	c.Release()
	if err := elsewhere.ReleaseRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}

	// This session's process is taken for gone by another (a process of
	// this host with a pid that ended): the other takes the run over, and
	// this session learns it at its next renewal.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	self := store.Self()
	ghost, err := store.OpenAs(ctx, loc, store.Owner{Host: self.Host, Boot: self.Boot, PID: cmd.Process.Pid, Start: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	c = newRunClaim()
	c.lease = 400 * time.Millisecond
	if err := c.hold(ctx, ghost, r.ID); err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	runCtx, unwatch := c.watch(ctx)
	defer unwatch()
	if err := st.ClaimRun(ctx, r.ID, time.Hour); err != nil {
		t.Fatalf("the run of a process that ended was not taken over: %v", err)
	}
	select {
	case <-runCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session that lost its run was not stopped")
	}
	if err := c.err(); !errors.Is(err, store.ErrHeld) || exitCode(err) != exitHeld {
		t.Errorf("the lost claim: %v", err)
	}
}

// frontier evolve --resume of a run that a process on another machine
// runs is refused before it changes anything.
func TestEvolveResumeHeld(t *testing.T) {
	evaltest.Python(t) // the command finds Python before it opens the run
	ctx := context.Background()
	home := t.TempDir()
	st, _ := quickRun(t, home, "held", hashEvaluator(), []evolve.Model{{Name: "mutate", Kind: propose.KindMutate, Proposer: propose.NewMutate()}},
		evolve.Config{Islands: 1, BranchingFactor: 2, Seed: 4, Budget: evolve.BudgetConfig{MaxIterations: 1}})
	defer st.Close()
	before, _ := st.Run(ctx, "held")
	elsewhere, err := store.OpenAs(ctx, filepath.Join(home, "frontier.db"), store.Owner{Host: "gpu-7.example", Boot: "b", PID: 4242, Start: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Close()
	if err := elsewhere.ClaimRun(ctx, before.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(quickTracks)
	cfg := writeTemp(t, home, "frontier.yaml", fmt.Sprintf("home: %s\ntracks_dirs: [%s]\n", home, abs))
	code, _, stderr := runCLI(t, "--config", cfg, "evolve", "--resume", "held", "--iterations", "2")
	if code != exitHeld || !strings.Contains(stderr, "gpu-7.example") || !strings.Contains(stderr, "process 4242") {
		t.Fatalf("exit %d, want %d naming the holder:\n%s", code, exitHeld, stderr)
	}
	after, _ := st.Run(ctx, "held")
	if after.Sessions != before.Sessions || after.Iterations != before.Iterations {
		t.Errorf("the refused session changed the run: sessions %d -> %d, iterations %d -> %d",
			before.Sessions, after.Sessions, before.Iterations, after.Iterations)
	}
}
