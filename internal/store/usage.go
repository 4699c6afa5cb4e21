package store

import (
	"context"
	"fmt"
)

// tables are frontier's tables, each after the tables it refers to (the
// order a copy inserts them in), with the columns that order their rows.
var tables = []struct{ name, key string }{
	{"chunks", "hash"},
	{"contents", "hash"},
	{"programs", "hash"},
	{"evaluations", "id"},
	{"telemetry", "evaluation_id"},
	{"runs", "id"},
	{"run_iterations", "run_id, iteration"},
	{"run_children", "id"},
	{"run_attempts", "id"},
	{"run_archive", "run_id, child_id"},
	{"run_events", "id"},
	{"run_confirmations", "id"},
	{"bench_runs", "id"},
	{"bench_attempts", "id"},
	{"bench_nodes", "id"},
	{"llm_calls", "id"},
	{"bench_calibrations", "id"},
}

// Usage measures the database (see Store).
func (s *sqlStore) Usage(ctx context.Context) (*Usage, error) {
	u := &Usage{Rows: map[string]int64{}}
	for _, t := range tables {
		var n int64
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+t.name).Scan(&n); err != nil {
			return nil, fmt.Errorf("count the rows of %s: %w", t.name, err)
		}
		u.Rows[t.name] = n
	}
	switch s.dialect.name {
	case SQLite:
		var pages, free, size int64
		err := s.db.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count()), (SELECT freelist_count FROM pragma_freelist_count()),
			(SELECT page_size FROM pragma_page_size())`).Scan(&pages, &free, &size)
		if err != nil {
			return nil, fmt.Errorf("measure the database: %w", err)
		}
		u.Bytes = (pages - free) * size
	case Postgres:
		for _, t := range tables {
			var n int64
			if err := s.db.QueryRowContext(ctx, `SELECT pg_total_relation_size(to_regclass($1))`, t.name).Scan(&n); err != nil {
				return nil, fmt.Errorf("measure %s: %w", t.name, err)
			}
			u.Bytes += n
		}
	}
	return u, nil
}
