package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/frontier-bench/frontier/internal/store"
)

// SQLite is the store fixture of every package's tests: the SQLite store
// at path (a new file in a temporary folder when path is ""), closed when
// the test ends.
func SQLite(t testing.TB, path string) *store.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "frontier.db")
	}
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
