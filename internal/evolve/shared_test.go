package evolve

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// Two searches in two processes write one database at once (as two
// machines of a team do), while a reader (a report, `frontier runs`)
// reads it: neither run loses, duplicates or mixes up a row, and the
// reader sees each run only grow, every member it sees whole (its program
// readable, its run its own).
func TestTwoProcessesShareADatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine in two child processes")
	}
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { shareDatabase(t, storetest.Location(t, d)) })
	}
}

func shareDatabase(t *testing.T, db string) {
	ctx := context.Background()
	names := []string{"left", "right"}
	var cmds []*exec.Cmd
	done := make(chan error, len(names))
	for _, name := range names {
		cmd := startHelper(t, db, "EVOLVE_RUN="+name)
		cmds = append(cmds, cmd)
		go func() { done <- cmd.Wait() }()
	}
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
		}
	}()
	reader := storetest.OpenAt(t, db)
	seen := map[string]int{}
	calls := map[string]int{}
	reads := 0
	finished := 0
	deadline := time.After(3 * time.Minute)
	for finished < len(names) {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("a search process failed: %v", err)
			}
			finished++
			continue
		case <-deadline:
			t.Fatal("the two searches did not finish in 3 minutes")
		case <-time.After(50 * time.Millisecond):
		}
		for _, name := range names {
			run, err := reader.Run(ctx, name)
			if errors.Is(err, store.ErrNotFound) {
				continue // not started yet
			}
			if err != nil {
				t.Fatalf("reading run %s while it runs: %v", name, err)
			}
			kids, err := reader.Children(ctx, run.ID)
			if err != nil {
				t.Fatalf("reading the children of %s while it runs: %v", name, err)
			}
			if len(kids) < seen[name] {
				t.Fatalf("run %s: %d members, after %d were read before", name, len(kids), seen[name])
			}
			seen[name] = len(kids)
			for _, c := range kids {
				if c.RunID != run.ID {
					t.Fatalf("run %s lists member %d of run %d", name, c.ID, c.RunID)
				}
			}
			// The newest member with a program: it reads back whole.
			for i := len(kids) - 1; i >= 0; i-- {
				if h := kids[i].ProgramHash; h != "" {
					src, err := reader.Program(ctx, h)
					if err != nil || store.Hash(src) != h {
						t.Fatalf("run %s: the program of member %d does not read back (%v)", name, kids[i].ID, err)
					}
					break
				}
			}
			cs, err := reader.LLMCalls(ctx, run.ID, false)
			if err != nil || len(cs) < calls[name] {
				t.Fatalf("run %s: %d model calls after %d (%v)", name, len(cs), calls[name], err)
			}
			calls[name] = len(cs)
			reads++
		}
	}
	t.Logf("the reader read both runs %d times while they ran", reads)
	if reads < 4 {
		t.Errorf("the reader read only %d times: the runs were too short to overlap", reads)
	}
	left, _ := reader.Run(ctx, "left")
	right, _ := reader.Run(ctx, "right")
	if left.StartedAt.After(right.FinishedAt) || right.StartedAt.After(left.FinishedAt) {
		t.Errorf("the runs did not overlap: %v-%v and %v-%v", left.StartedAt, left.FinishedAt, right.StartedAt, right.FinishedAt)
	}
	for _, name := range names {
		checkFinishedRun(t, db, name, resumeConfig(), false)
	}
	// No member, call or evaluation is the other's too.
	ids := map[int64]string{}
	for _, r := range []*store.Run{left, right} {
		kids, err := reader.Children(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kids {
			if other, ok := ids[c.ID]; ok {
				t.Errorf("member %d is in runs %s and %s", c.ID, other, r.Name)
			}
			ids[c.ID] = r.Name
			if c.Verdict.Valid() && c.Origin != runs.OriginReference && !c.Origin.IsCopy() {
				e, err := reader.Evaluation(ctx, c.EvaluationID)
				if err != nil || e.ProgramHash != c.ProgramHash {
					t.Errorf("run %s, member %d: its evaluation %d is another program's (%v)", r.Name, c.ID, c.EvaluationID, err)
				}
			}
		}
	}
	lc, _ := reader.LLMCalls(ctx, left.ID, true)
	rc, _ := reader.LLMCalls(ctx, right.ID, true)
	for _, c := range append(lc, rc...) {
		if c.State == store.CallDone && (c.Request == "" || !bytes.Contains([]byte(c.Request), []byte("messages"))) {
			t.Errorf("model call %d: its request reads back as %q", c.ID, c.Request[:min(len(c.Request), 40)])
		}
	}
}
