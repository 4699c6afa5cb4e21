package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
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
	if n := len(s.db.stmts.byText); n > 3 {
		t.Errorf("the cache holds %d statements, more than its 3", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err == nil {
		t.Error("a closed store answered a query")
	}
}
