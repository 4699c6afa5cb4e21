package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3/lock"
)

// openPostgres opens the PostgreSQL database at loc.URL. A database that
// holds no schema yet gets one; a schema of an older frontier is an error
// that says to run `frontier db migrate`: several machines share the
// database, and one that upgraded it on its own would break the others'
// runs (an older frontier refuses a newer schema).
func openPostgres(ctx context.Context, loc Location, owner Owner) (*sqlStore, error) {
	s, err := connectPostgres(ctx, loc, owner)
	if err != nil {
		return nil, err
	}
	st, err := s.schema(ctx)
	if err == nil && st.Version > 0 && st.Pending() {
		// Another process may be migrating a new database right now,
		// between two migrations: look again once it is done.
		st, err = s.settledSchema(ctx)
	}
	if err == nil {
		switch {
		case st.Version == 0:
			err = s.migrate(ctx)
		case st.Newer():
			err = st.newerError()
		case st.Pending():
			err = fmt.Errorf("its schema is version %d and this frontier needs %d: upgrade it with `frontier db migrate` (while no run writes to it; `frontier db status` lists what it changes)",
				st.Version, st.Latest)
		}
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", loc, err)
	}
	return s, nil
}

// settledSchema reads the schema while holding the lock that migrations
// hold (goose's session lock), so that it never sees a migration half done.
func (s *sqlStore) settledSchema(ctx context.Context) (*Schema, error) {
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := conn.ExecContext(lctx, `SELECT pg_advisory_lock($1)`, lock.DefaultLockID); err != nil {
		return nil, fmt.Errorf("wait for a migration another process runs: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lock.DefaultLockID)
	return s.schema(ctx)
}

// connectPostgres connects to the database at loc.URL as it is.
func connectPostgres(ctx context.Context, loc Location, owner Owner) (*sqlStore, error) {
	return connectPostgresWith(ctx, loc, owner, nil)
}

// connectPostgresWith connects with params set on every connection.
func connectPostgresWith(ctx context.Context, loc Location, owner Owner, params map[string]string) (*sqlStore, error) {
	cfg, err := pgx.ParseConfig(loc.URL)
	if err != nil {
		return nil, fmt.Errorf("database location %s: %w", loc, err)
	}
	for k, v := range params {
		cfg.RuntimeParams[k] = v
	}
	db := stdlib.OpenDB(*cfg)
	// A shared server's connections are a shared resource: a process
	// keeps a few, which its writers and readers take turns on.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot reach the PostgreSQL database %s (check db: in frontier.yaml, FRONTIER_DB or --db, that the server runs, and that this user may connect): %w", loc, err)
	}
	return &sqlStore{db: sqlDB{DB: db}, dialect: postgresDialect, loc: loc, owner: owner}, nil
}

// postgresDialect is PostgreSQL's SQL.
var postgresDialect = &dialect{
	name:         Postgres,
	nowMs:        `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)`,
	versionTable: `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'goose_db_version'`,
	unique: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23505"
	},
	transient: func(err error) bool {
		var pe *pgconn.PgError
		// serialization_failure, deadlock_detected.
		return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
	},
}
