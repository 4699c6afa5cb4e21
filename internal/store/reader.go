package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// OpenReader opens the store at a location for reading only, as a watcher
// does while searches write it (frontier serve). Nothing is created or
// migrated: a schema this version must first upgrade is an error that says
// so, and every write fails with ErrReadOnly.
//
// A SQLite file is opened with read-only connections (mode=ro and
// query_only) and never as immutable, so that a WAL database is read as it
// changes; a reader in WAL mode never blocks a writer, and each query is
// its own short transaction, so it never holds the log back from its
// checkpoint for long. A PostgreSQL database is read through connections
// whose transactions are read-only (default_transaction_read_only).
func OpenReader(ctx context.Context, location string) (Store, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	var s *sqlStore
	switch loc.Dialect {
	case SQLite:
		s, err = openSQLiteReader(ctx, loc.Path)
	case Postgres:
		s, err = openPostgresReader(ctx, loc)
	default:
		err = fmt.Errorf("open store %s: no implementation for %s", loc, loc.Dialect)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func openSQLiteReader(ctx context.Context, path string) (*sqlStore, error) {
	if path == ":memory:" {
		return nil, errors.New("open store :memory: for reading: an in-memory database is a process's own; point --db at a database file")
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open store %s: there is no database there: start a run with frontier evolve (or frontier demo), or point --db or --home at the right one", path)
	case err != nil:
		return nil, fmt.Errorf("open store %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("open store: %s is not a file (%s): point --db or db: in frontier.yaml at a database file", path, fi.Mode().Type())
	}
	if err := checkHeader(path, fi.Size()); err != nil {
		return nil, err
	}
	s, err := openDB(ctx, path, modeReader, Self())
	if err != nil {
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func openPostgresReader(ctx context.Context, loc Location) (*sqlStore, error) {
	s, err := connectPostgresWith(ctx, loc, Self(), map[string]string{"default_transaction_read_only": "on"})
	if err != nil {
		return nil, err
	}
	s.readOnly, s.reader = true, true
	st, err := s.schema(ctx)
	if err == nil {
		switch {
		case st.Version == 0:
			err = errors.New("it holds no frontier schema yet: start a run on it with frontier evolve (or frontier db migrate), or point --db at the right database")
		case st.Newer():
			err = st.newerError()
		case st.Pending():
			err = fmt.Errorf("its schema is version %d and this frontier needs %d, which a reader does not upgrade: upgrade it with `frontier db migrate` (while no run writes to it)",
				st.Version, st.Latest)
		}
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", loc, err)
	}
	return s, nil
}
