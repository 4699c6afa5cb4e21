package runview_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/runview"
	"github.com/frontier-bench/frontier/internal/runview/runviewtest"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

// TestLive follows a run while it is written: each poll reports what was
// written since, once, and the summary from memory is the summary read
// from the store.
func TestLive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	w := storetest.SQLite(t, path)
	f, err := runviewtest.Seed(ctx, w, runviewtest.Options{Name: "live", Children: 30, Running: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.OpenReader(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	run, err := r.Run(ctx, f.Run.Name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := runview.OpenLive(ctx, r, run)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Poll(ctx, r, nil); err != nil || !d.Empty() {
		t.Fatalf("a poll with nothing written: %+v, %v", d, err)
	}
	v := l.Version()
	c, err := f.Propose(ctx, w, f.Run.Iterations, "a new child")
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Poll(ctx, r, nil)
	if err != nil || len(d.Members) != 1 || d.Members[0].ID != c.ID || d.Members[0].State != runs.Fast || d.Version != v+1 {
		t.Fatalf("a poll after a proposal: %+v, %v", d, err)
	}
	if d, err := l.Poll(ctx, r, nil); err != nil || !d.Empty() {
		t.Fatalf("a second poll reported again: %+v, %v", d, err)
	}
	time.Sleep(2 * time.Millisecond)
	if err := f.Settle(ctx, w, c, runs.Acceptable, 12_000); err != nil {
		t.Fatal(err)
	}
	d, err = l.Poll(ctx, r, nil)
	if err != nil || len(d.Members) != 1 || d.Members[0].Verdict != runs.Acceptable {
		t.Fatalf("a poll after a verdict: %+v, %v", d, err)
	}
	if l.Member(c.ID).Verdict != runs.Acceptable {
		t.Error("the live member did not change")
	}
	got, err := l.Summary(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runview.Summarize(ctx, r, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Members) != len(want.Members) || got.Settled.Members != want.Settled.Members || got.Fastest.ID != want.Fastest.ID ||
		got.Record.ID != want.Record.ID || got.USD != want.USD {
		t.Errorf("live summary: %d members, %d settled, fastest #%d, record #%d, $%v; read: %d, %d, #%d, #%d, $%v",
			len(got.Members), got.Settled.Members, got.Fastest.ID, got.Record.ID, got.USD,
			len(want.Members), want.Settled.Members, want.Fastest.ID, want.Record.ID, want.USD)
	}
	if got.Fastest.ID != c.ID {
		t.Errorf("the fastest is #%d, want the new child #%d at 12 s", got.Fastest.ID, c.ID)
	}
}

// BenchmarkSummary10k times a run page's aggregates over a run of 10,000
// programs: read whole, and from a Live after one change.
func BenchmarkSummary10k(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "f.db")
	w := storetest.SQLite(b, path)
	f, err := runviewtest.Seed(ctx, w, runviewtest.Options{Name: "big", Children: 10_000, Running: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := runview.Summarize(ctx, w, f.Run); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("live", func(b *testing.B) {
		l, err := runview.OpenLive(ctx, w, f.Run)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			if _, err := f.Propose(ctx, w, f.Run.Iterations, "x"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := l.Poll(ctx, w, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := l.Summary(ctx, w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
