package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// TestOpenReader reads a database while another handle writes it, on
// SQLite and PostgreSQL: the reader sees each write as it commits, never
// writes, and a write it asks for fails with ErrReadOnly.
func TestOpenReader(t *testing.T) {
	ctx := context.Background()
	if _, err := store.OpenReader(ctx, filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("a reader of a database that does not exist opened")
	}
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			loc := storetest.Location(t, d)
			w := storetest.OpenAt(t, loc)
			run := &store.Run{Name: "live", Track: "tiny", TrackHash: "h", TargetValLoss: 4}
			if err := w.CreateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			r, err := store.OpenReader(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if !r.ReadOnly() {
				t.Error("a reader says it may write")
			}
			add := func(it int) *store.Child {
				c := &store.Child{RunID: run.ID, Iteration: it, Origin: runs.OriginLLM, State: runs.Queued}
				if err := w.RunInTx(ctx, func(tx store.RunTx) error { return tx.InsertChild(c) }); err != nil {
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
			if err := w.RunInTx(ctx, func(tx store.RunTx) error { return tx.UpdateChild(a) }); err != nil {
				t.Fatal(err)
			}
			got, err = r.ChildrenSince(ctx, run.ID, mark.Add(time.Millisecond))
			if err != nil || len(got) != 2 || got[0].ID != b.ID || got[1].ID != a.ID || got[1].Verdict != runs.Acceptable {
				t.Fatalf("ChildrenSince after an insert and an update: %+v, %v", got, err)
			}
			if err := r.CreateRun(ctx, &store.Run{Name: "no", Track: "t", TrackHash: "h"}); !errors.Is(err, store.ErrReadOnly) {
				t.Errorf("a reader's write: %v, want ErrReadOnly", err)
			}
			if err := w.CreateRun(ctx, &store.Run{Name: "yes", Track: "t", TrackHash: "h"}); err != nil {
				t.Errorf("a writer beside a reader: %v", err)
			}
		})
	}
}
