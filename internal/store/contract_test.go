package store_test

import (
	"context"
	"os"
	"testing"

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
