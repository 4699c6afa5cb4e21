package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
)

// TestOpenReader reads a database while another handle writes it: the
// reader sees each write as it commits, never writes, and a write it asks
// for fails with ErrReadOnly.
func TestOpenReader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	if _, err := OpenReader(ctx, path); err == nil {
		t.Fatal("a reader of a database that does not exist opened")
	}
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	run := &Run{Name: "live", Track: "tiny", TrackHash: "h", TargetValLoss: 4}
	if err := w.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.ReadOnly() {
		t.Error("a reader says it may write")
	}
	add := func(it int) *Child {
		c := &Child{RunID: run.ID, Iteration: it, Origin: runs.OriginLLM, State: runs.Queued}
		if err := w.RunInTx(ctx, func(tx *RunTx) error { return tx.InsertChild(c) }); err != nil {
			t.Fatal(err)
		}
		return c
	}
	start := time.Now().Add(-time.Second)
	a := add(1)
	got, err := r.ChildrenSince(ctx, run.ID, start)
	if err != nil || len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("ChildrenSince after one insert: %v, %v", got, err)
	}
	mark := got[0].UpdatedAt
	time.Sleep(5 * time.Millisecond)
	b := add(2)
	time.Sleep(5 * time.Millisecond) // the writes' times are in milliseconds
	a.State, a.Verdict = runs.Done, runs.Acceptable
	if err := w.RunInTx(ctx, func(tx *RunTx) error { return tx.UpdateChild(a) }); err != nil {
		t.Fatal(err)
	}
	got, err = r.ChildrenSince(ctx, run.ID, mark.Add(time.Millisecond))
	if err != nil || len(got) != 2 || got[0].ID != b.ID || got[1].ID != a.ID || got[1].Verdict != runs.Acceptable {
		t.Fatalf("ChildrenSince after an insert and an update: %+v, %v", got, err)
	}
	if err := r.CreateRun(ctx, &Run{Name: "no", Track: "t", TrackHash: "h"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a reader's write: %v, want ErrReadOnly", err)
	}
	if err := w.CreateRun(ctx, &Run{Name: "yes", Track: "t", TrackHash: "h"}); err != nil {
		t.Errorf("a writer beside a reader: %v", err)
	}
}
