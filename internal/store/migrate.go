package store

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The schema is kept by goose, one folder of migrations per dialect (the
// types and the ways of adding a column differ); a migration that needs
// Go (moving rows into another form) is registered here.

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// Schema is where a database's schema stands.
type Schema struct {
	// Dialect is SQLite or Postgres.
	Dialect string
	// Version is the database's (0: it holds no schema yet); Latest,
	// the newest this frontier knows.
	Version, Latest int64
	// Due are the migrations this frontier would apply, in order.
	Due []Step
}

// Step is one migration.
type Step struct {
	Version int64
	Name    string
}

// Pending says whether migrations are due.
func (s *Schema) Pending() bool { return len(s.Due) > 0 }

// Newer says whether a newer frontier upgraded the database: this one
// must not write it.
func (s *Schema) Newer() bool { return s.Version > s.Latest }

func (s *Schema) newerError() error {
	return fmt.Errorf("the database was upgraded by a newer frontier (its schema is version %d, this frontier knows %d): use that version of frontier, or a newer one", s.Version, s.Latest)
}

// provider returns goose's migrations of the store's dialect.
func (s *sqlStore) provider() (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, path.Join("migrations", s.dialect.name))
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	var gd goose.Dialect
	switch s.dialect.name {
	case SQLite:
		gd = goose.DialectSQLite3
		opts = append(opts, goose.WithGoMigrations(
			goose.NewGoMigration(8, &goose.GoFunc{RunTx: s.moveToContents}, nil),
		))
	case Postgres:
		gd = goose.DialectPostgres
		// Processes that open one new database at once migrate it once.
		l, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(l))
	}
	p, err := goose.NewProvider(gd, s.db.DB, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// schema reads the database's schema version without changing anything.
func (s *sqlStore) schema(ctx context.Context) (*Schema, error) {
	st := &Schema{Dialect: s.dialect.name}
	var n int
	if err := s.db.QueryRowContext(ctx, s.dialect.versionTable).Scan(&n); err != nil {
		return nil, fmt.Errorf("read the schema version: %w", err)
	}
	applied := map[int64]bool{}
	if n > 0 {
		rows, err := s.db.QueryContext(ctx, `SELECT version_id, is_applied FROM goose_db_version ORDER BY id`)
		if err != nil {
			return nil, fmt.Errorf("read the schema version: %w", err)
		}
		for rows.Next() {
			var v int64
			var ok bool
			if err := rows.Scan(&v, &ok); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read the schema version: %w", err)
			}
			applied[v] = ok
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read the schema version: %w", err)
		}
	}
	for v, ok := range applied {
		if ok && v > st.Version {
			st.Version = v
		}
	}
	if err := s.listSteps(st, applied); err != nil {
		return nil, err
	}
	return st, nil
}

// listSteps sets st.Latest, and puts in st.Due the migrations of the
// store's dialect that applied lacks.
func (s *sqlStore) listSteps(st *Schema, applied map[int64]bool) error {
	p, err := s.provider()
	if err != nil {
		return err
	}
	st.Dialect = s.dialect.name
	for _, src := range p.ListSources() {
		st.Latest = max(st.Latest, src.Version)
		if !applied[src.Version] {
			name := path.Base(src.Path)
			if src.Type == goose.TypeGo {
				name = goMigrationNames[src.Version]
			}
			st.Due = append(st.Due, Step{Version: src.Version, Name: name})
		}
	}
	slices.SortFunc(st.Due, func(a, b Step) int { return cmp.Compare(a.Version, b.Version) })
	return nil
}

// goMigrationNames names the migrations written in Go, for status.
var goMigrationNames = map[int64]string{8: "move programs, prompts and answers into chunks (Go)"}

// migrate applies every migration that is due, and returns them.
func (s *sqlStore) migrate(ctx context.Context) error {
	st, err := s.schema(ctx)
	if err != nil {
		return err
	}
	if st.Newer() {
		return st.newerError()
	}
	if !st.Pending() {
		return nil
	}
	p, err := s.provider()
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w (is it a frontier database?)", err)
	}
	return nil
}

// moveToContents is SQLite's migration 8: the programs' sources, and the
// model calls' requests and answers, which rows held whole, move into
// chunks (content.go). Migration 7 made the tables; 9 drops the old
// columns.
func (s *sqlStore) moveToContents(ctx context.Context, gtx *sql.Tx) error {
	tx := sqlTx{Tx: gtx}
	put := func(b []byte) (string, error) {
		if len(b) == 0 {
			return "", nil
		}
		p, err := s.prepareContent(ctx, tx, b)
		if err != nil {
			return "", err
		}
		return p.hash, p.write(ctx, tx)
	}
	// In batches by rowid: a query stays open on one connection while the
	// transaction writes through it otherwise.
	const batch = 200
	for last := int64(-1); ; {
		rows, err := tx.QueryContext(ctx, `SELECT rowid, hash, source FROM programs WHERE rowid > $1 ORDER BY rowid LIMIT $2`, last, batch)
		if err != nil {
			return err
		}
		type prog struct {
			hash string
			src  []byte
		}
		var progs []prog
		for rows.Next() {
			var p prog
			if err := rows.Scan(&last, &p.hash, &p.src); err != nil {
				rows.Close()
				return err
			}
			progs = append(progs, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(progs) == 0 {
			break
		}
		for _, p := range progs {
			if Hash(p.src) != p.hash {
				return fmt.Errorf("program %s: its stored source (%d bytes) does not match its hash; the database is damaged: %w", p.hash, len(p.src), ErrDamaged)
			}
			if len(p.src) == 0 {
				// The empty program: a content with no chunks.
				if _, err := tx.ExecContext(ctx, `INSERT INTO contents (hash, size, chunks) VALUES ($1, 0, $2) ON CONFLICT (hash) DO NOTHING`,
					p.hash, []byte{}); err != nil {
					return err
				}
				continue
			}
			if _, err := put(p.src); err != nil {
				return fmt.Errorf("program %s: %w", p.hash, err)
			}
		}
	}
	for last := int64(0); ; {
		rows, err := tx.QueryContext(ctx, `SELECT id, request, answer FROM llm_calls WHERE id > $1 ORDER BY id LIMIT $2`, last, batch)
		if err != nil {
			return err
		}
		type call struct {
			id              int64
			request, answer string
		}
		var calls []call
		for rows.Next() {
			var c call
			if err := rows.Scan(&c.id, &c.request, &c.answer); err != nil {
				rows.Close()
				return err
			}
			last = c.id
			calls = append(calls, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(calls) == 0 {
			break
		}
		for _, c := range calls {
			req, err := put([]byte(c.request))
			if err != nil {
				return fmt.Errorf("model call %d: %w", c.id, err)
			}
			ans, err := put([]byte(c.answer))
			if err != nil {
				return fmt.Errorf("model call %d: %w", c.id, err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE llm_calls SET request_hash = $1, answer_hash = $2 WHERE id = $3`, req, ans, c.id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Inspect reads where the schema of the database at location stands,
// and what it holds, without changing it. A SQLite file that does not
// exist is an error.
func Inspect(ctx context.Context, location string) (*Schema, *Usage, error) {
	s, err := openRaw(ctx, location, true)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	st, err := s.schema(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s.loc, s.explain(err))
	}
	var u *Usage
	if st.Version > 0 && !st.Newer() && !st.Pending() {
		if u, err = s.Usage(ctx); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.loc, err)
		}
	}
	return st, u, nil
}

// Migrate applies the migrations due on the database at location (a
// SQLite file is created when there is none) and returns those it
// applied. Upgrade a shared database while no process writes to it: a
// process of an older frontier refuses a newer schema.
func Migrate(ctx context.Context, location string) ([]Step, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if f := loc.File(); f != "" && !fileExists(f) {
		s, err := openSQLite(ctx, loc, Self())
		if err != nil {
			return nil, err
		}
		defer s.Close()
		st := &Schema{}
		if err := s.listSteps(st, nil); err != nil {
			return nil, err
		}
		return st.Due, nil
	}
	s, err := openRaw(ctx, location, false)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	st, err := s.schema(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.loc, s.explain(err))
	}
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", s.loc, s.explain(err))
	}
	return st.Due, nil
}

// openRaw opens the database at location as it is: no schema is made or
// changed, and a SQLite file must exist.
func openRaw(ctx context.Context, location string, readOnly bool) (*sqlStore, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if loc.Dialect == Postgres {
		return connectPostgres(ctx, loc, Self())
	}
	fi, err := os.Stat(loc.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s yet: frontier db migrate makes one (as does the first evaluation or run)", loc.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", loc.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a database file (%s)", loc.Path, fi.Mode().Type())
	}
	if err := checkHeader(loc.Path, fi.Size()); err != nil {
		return nil, err
	}
	readOnly = readOnly || !writable(loc.Path) || !writable(filepath.Dir(loc.Path))
	return openFile(ctx, loc.Path, readOnly, Self())
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
