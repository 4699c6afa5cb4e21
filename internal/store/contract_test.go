package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/store/storetest"
)

func openSQLite(ctx context.Context, path string) (storetest.Store, error) {
	return store.Open(ctx, path)
}

func TestMain(m *testing.M) {
	storetest.HelperMain(openSQLite)
	os.Exit(m.Run())
}

// The SQLite store passes the contract every store must pass.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store { return storetest.SQLite(t, "") })
}

// Two processes on one SQLite file (WAL, busy timeout) lose nothing.
func TestContractProcesses(t *testing.T) {
	storetest.Processes(t, filepath.Join(t.TempDir(), "shared.db"), openSQLite)
}

// An evaluation a process left running when it died is marked
// interrupted by the next; a live process's is not.
func TestContractOrphans(t *testing.T) {
	storetest.Orphans(t, filepath.Join(t.TempDir(), "shared.db"), openSQLite)
}
