package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to make and drop schemas

	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/testdeps"
)

// PostgresEnv names the PostgreSQL database the tests may use, as a URL
// (scripts/postgres.sh start; eval "$(scripts/postgres.sh env)"). Each
// test gets a schema of its own in it, dropped when the test ends.
const PostgresEnv = "FRONTIER_TEST_POSTGRES"

// SQLite is the store fixture of every package's tests: the SQLite store
// at path (a new file in a temporary folder when path is ""), closed when
// the test ends.
func SQLite(t testing.TB, path string) store.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "frontier.db")
	}
	return OpenAt(t, path)
}

// OpenAt opens the store at a location, closed when the test ends.
func OpenAt(t testing.TB, location string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Dialects are the stores a test that runs on each runs on.
var Dialects = []string{store.SQLite, store.Postgres}

// Location returns the location of a new, empty database of a dialect:
// a SQLite file in a temporary folder, or a schema of its own in the
// PostgreSQL database of PostgresEnv, which is dropped when the test ends.
// Without PostgresEnv, a PostgreSQL test skips, or fails where
// FRONTIER_REQUIRE_DEPS=1 (internal/testdeps).
func Location(t testing.TB, dialect string) string {
	t.Helper()
	if dialect == store.SQLite {
		return filepath.Join(t.TempDir(), "frontier.db")
	}
	base := os.Getenv(PostgresEnv)
	if base == "" {
		testdeps.Missing(t, "postgres", "%s names no PostgreSQL database (scripts/postgres.sh start; eval \"$(scripts/postgres.sh env)\")", PostgresEnv)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close()
		testdeps.Missing(t, "postgres", "the PostgreSQL database of %s cannot be used: %v", PostgresEnv, err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop the test's schema %s: %v", schema, err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open returns a new, empty store of a dialect, closed when the test ends.
func Open(t testing.TB, dialect string) store.Store {
	t.Helper()
	return OpenAt(t, Location(t, dialect))
}
