package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// An evaluation that a process left running when it ended (kill -9) is
// marked interrupted by the next one, its run folder removed, and the
// user told; a live process's evaluation and folder are left alone.
func TestCleanOrphans(t *testing.T) {
	ctx := context.Background()
	loc := storetest.Location(t, store.SQLite)
	st := storetest.OpenAt(t, loc)
	// A process of this host that is gone: this host and boot, a pid that
	// does not exist.
	gone := store.Self()
	gone.PID = 999999999
	ghost, err := store.OpenAs(ctx, loc, gone)
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	runs := t.TempDir()
	newEval := func(st store.Store, src string) (*store.Evaluation, string) {
		h, err := st.PutProgram(ctx, []byte(src), "")
		if err != nil {
			t.Fatal(err)
		}
		e := &store.Evaluation{ProgramHash: h, Track: "tiny", TrackHash: "th", Seed: 3}
		if err := st.CreateEvaluation(ctx, e); err != nil {
			t.Fatal(err)
		}
		// The folder the evaluator makes right after it records the row.
		dir := filepath.Join(runs, e.StartedAt.Format("20060102-150405")+"-"+h[:12]+"-s3-123456")
		os.MkdirAll(filepath.Join(dir, "fast"), 0o700)
		os.WriteFile(filepath.Join(dir, "fast", "train.py"), []byte("x"), 0o444)
		return e, dir
	}
	dead, deadDir := newEval(ghost, "killed")
	live, liveDir := newEval(st, "running")
	var logs bytes.Buffer
	g := &globals{log: slog.New(&humanHandler{mu: &sync.Mutex{}, w: &logs, level: slog.LevelInfo})}
	cleanOrphans(ctx, g, st, runs)

	if got, _ := st.Evaluation(ctx, dead.ID); got.State != store.StateInterrupted {
		t.Errorf("the dead process's evaluation is %s", got.State)
	}
	if got, _ := st.Evaluation(ctx, live.ID); got.State != store.StateRunning {
		t.Errorf("the live process's evaluation is %s", got.State)
	}
	if _, err := os.Stat(deadDir); err == nil {
		t.Error("the orphan's run folder is still there")
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Error("the live evaluation's run folder was removed")
	}
	if want := "warning: an earlier evaluation was left running by a process that ended: marked interrupted evaluation=1"; !strings.Contains(logs.String(), want) ||
		!strings.Contains(logs.String(), "run_folders_removed=1") {
		t.Errorf("said %q, want %q", logs.String(), want)
	}
}
