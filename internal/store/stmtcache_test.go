package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A cache smaller than the queries it sees evicts statements while other
// goroutines, in and out of transactions, still use them: every query
// still returns its own answer, and the cache never holds more than its
// size.
func TestStmtCacheEvictsWhileInUse(t *testing.T) {
	ctx := context.Background()
	s, err := open(ctx, filepath.Join(t.TempDir(), "frontier.db"), Self())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.db.stmts = newStmtCache(s.db.DB, 3)
	s.db.w.stmts = newDeferredStmtCache(s.db.w.db, 3)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 60 {
				k := (g + i) % 7
				q := fmt.Sprintf(`SELECT $1 + %d`, k)
				var got int
				var err error
				if i%2 == 0 {
					err = s.db.QueryRowContext(ctx, q, i).Scan(&got)
				} else {
					err = s.inTx(ctx, func(tx sqlTx) error { return tx.QueryRowContext(ctx, q, i).Scan(&got) })
				}
				if err == nil && got != i+k {
					err = fmt.Errorf("%s with %d = %d, want %d", q, i, got, i+k)
				}
				if err != nil {
					errs <- fmt.Errorf("call %d (tx %v): %w", i, i%2 == 1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, c := range []*stmtCache{s.db.stmts, s.db.w.stmts} {
		c.mu.Lock()
		if n := len(c.byText); n > 3 {
			t.Errorf("the cache (deferred %v) holds %d statements, more than its 3", c.deferred, n)
		}
		c.mu.Unlock()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err == nil {
		t.Error("a closed store answered a query")
	}
}

// A statement that a transaction runs first is prepared on the writer
// once the transaction ends, and the transactions after it use it.
func TestWriterPreparesAfterTransaction(t *testing.T) {
	ctx := context.Background()
	s, err := open(ctx, filepath.Join(t.TempDir(), "frontier.db"), Self())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const q = `SELECT $1 + 40`
	cached := func() bool {
		s.db.w.stmts.mu.Lock()
		defer s.db.w.stmts.mu.Unlock()
		return s.db.w.stmts.byText[q] != nil
	}
	for i := range 50 {
		var got int
		if err := s.inTx(ctx, func(tx sqlTx) error { return tx.QueryRowContext(ctx, q, i).Scan(&got) }); err != nil || got != i+40 {
			t.Fatalf("call %d: %d, %v; want %d", i, got, err, i+40)
		}
		if cached() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the statement was not prepared on the writer after 50 transactions")
}
