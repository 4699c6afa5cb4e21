package store_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.HelperMain(store.Open)
	os.Exit(m.Run())
}

// Every store passes the contract: SQLite, and PostgreSQL (a real server,
// see storetest.PostgresEnv).
func TestContract(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store { return storetest.Open(t, d) })
		})
	}
}

// Two processes on one database lose nothing: SQLite (WAL, busy timeout)
// and PostgreSQL.
func TestContractProcesses(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { storetest.Processes(t, storetest.Location(t, d), store.Open) })
	}
}

// An evaluation a process left running when it died is marked
// interrupted by the next; a live process's is not.
func TestContractOrphans(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { storetest.Orphans(t, storetest.Location(t, d), store.Open) })
	}
}

// A run a live process runs is refused to another; a dead one's is taken
// over.
func TestContractClaims(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			storetest.Claims(t, storetest.Location(t, d), func(ctx context.Context, loc string, o store.Owner) (store.Store, error) {
				return store.OpenAs(ctx, loc, o)
			})
		})
	}
}

// Processes that open one new PostgreSQL database at once all open it:
// none sees the schema between two of the first one's migrations and takes
// it for an old schema to upgrade.
func TestNewPostgresOpenedAtOnce(t *testing.T) {
	loc := storetest.Location(t, store.Postgres)
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			// Staggered, so that some look while the first migrates.
			time.Sleep(time.Duration(i) * 15 * time.Millisecond)
			s, err := store.Open(context.Background(), loc)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
