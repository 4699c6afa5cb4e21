package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// sqlStore is the Store over database/sql, for SQLite and PostgreSQL
// alike: the queries are one text for both ($N placeholders, RETURNING,
// ON CONFLICT); what differs is in dialect.
type sqlStore struct {
	db       sqlDB
	dialect  *dialect
	loc      Location
	readOnly bool
	// reader is set for a store opened by OpenReader.
	reader bool
	// owner identifies this process in the evaluations it creates and the
	// runs it claims, so that another process can tell whether the one
	// that left a row behind is gone (InterruptOrphans, ClaimRun).
	owner Owner
	// reserve is the file that holds disk space back for the moment the
	// disk is full (see reserve.go); empty for PostgreSQL and an
	// in-memory database.
	reserve string
	codec   codec
	// known are chunks this store found or wrote.
	known chunkSet
	// recent are the contents this store last wrote or read, as they
	// were cut (see layouts).
	recent layouts
}

var _ Store = (*sqlStore)(nil)

// dialect is what differs between the SQL of SQLite and of PostgreSQL.
type dialect struct {
	name string
	// nowMs is an expression for the database's clock in Unix
	// milliseconds (leases are timed by it, not by each machine's own).
	nowMs string
	// versionTable counts the tables named goose_db_version (0 or 1).
	versionTable string
	// unique says whether err is a violated uniqueness constraint.
	unique func(err error) bool
	// transient says whether err aborted a write that may simply be
	// run again.
	transient func(err error) bool
}

func (s *sqlStore) Close() error     { return s.db.Close() }
func (s *sqlStore) Location() string { return s.loc.String() }
func (s *sqlStore) ReadOnly() bool   { return s.readOnly }

// sqlDB is the database handle. Its query methods store every string
// argument as valid UTF-8 without NUL (PostgreSQL's text refuses both;
// SQLite's would return them to readers that choke on them), so that
// what a store reads back is the same on either. With stmts set, they
// run each query as a statement prepared once (see stmtCache).
type sqlDB struct {
	*sql.DB
	stmts *stmtCache
	// w, when set, runs every transaction (see writer).
	w *writer
}

func (d sqlDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st := d.stmts.get(ctx, q)
	if st == nil {
		return d.DB.ExecContext(ctx, q, textArgs(args)...)
	}
	defer d.stmts.release(st)
	return st.stmt.ExecContext(ctx, textArgs(args)...)
}

func (d sqlDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st := d.stmts.get(ctx, q)
	if st == nil {
		return d.DB.QueryContext(ctx, q, textArgs(args)...)
	}
	defer d.stmts.release(st)
	return st.stmt.QueryContext(ctx, textArgs(args)...)
}

func (d sqlDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	st := d.stmts.get(ctx, q)
	if st == nil {
		return d.DB.QueryRowContext(ctx, q, textArgs(args)...)
	}
	defer d.stmts.release(st)
	return st.stmt.QueryRowContext(ctx, textArgs(args)...)
}

// BeginTx starts a transaction whose queries clean their arguments too.
func (d sqlDB) BeginTx(ctx context.Context) (sqlTx, error) {
	if d.w != nil {
		return d.w.begin(ctx)
	}
	tx, err := d.DB.BeginTx(ctx, nil)
	return sqlTx{Tx: tx, stmts: d.stmts}, err
}

// hot returns where to run reads whose pages the store has just written
// or is about to write (a program's rows and chunks): the writer, when
// it is free, else d. A SQLite connection drops its whole page cache when
// another one wrote since its last read, so on a pooled connection those
// reads come from the file; on the writer, from its cache. A writer
// that a transaction holds, or that another read just took, is not
// waited for. The caller must be done with the rows of each query before
// it begins a transaction.
func (d sqlDB) hot() querier {
	if d.w == nil || d.w.db.Stats().InUse > 0 {
		return d
	}
	return sqlDB{DB: d.w.db, stmts: d.w.stmts}
}

// Close closes the prepared statements, then the database.
func (d sqlDB) Close() error {
	var werr error
	if d.w != nil {
		werr = d.w.close()
	}
	d.stmts.close()
	return errors.Join(werr, d.DB.Close())
}

// sqlTx is a transaction of sqlDB.
type sqlTx struct {
	*sql.Tx
	stmts *stmtCache
	// conn, when set, is the writer's connection, given back when the
	// transaction ends.
	conn *sql.Conn
}

// Commit commits the transaction and gives its connection back.
func (t sqlTx) Commit() error {
	err := t.Tx.Commit()
	t.release()
	return err
}

// Rollback rolls the transaction back (nothing once it committed) and
// gives its connection back.
func (t sqlTx) Rollback() error {
	err := t.Tx.Rollback()
	t.release()
	return err
}

func (t sqlTx) release() {
	if t.conn != nil {
		t.conn.Close() // ErrConnDone when given back already
	}
}

func (t sqlTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st := t.stmts.get(ctx, q)
	if st == nil {
		return t.Tx.ExecContext(ctx, q, textArgs(args)...)
	}
	defer t.stmts.release(st)
	return t.Tx.StmtContext(ctx, st.stmt).ExecContext(ctx, textArgs(args)...)
}

func (t sqlTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st := t.stmts.get(ctx, q)
	if st == nil {
		return t.Tx.QueryContext(ctx, q, textArgs(args)...)
	}
	defer t.stmts.release(st)
	return t.Tx.StmtContext(ctx, st.stmt).QueryContext(ctx, textArgs(args)...)
}

func (t sqlTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	st := t.stmts.get(ctx, q)
	if st == nil {
		return t.Tx.QueryRowContext(ctx, q, textArgs(args)...)
	}
	defer t.stmts.release(st)
	return t.Tx.StmtContext(ctx, st.stmt).QueryRowContext(ctx, textArgs(args)...)
}

// querier is a database or a transaction.
type querier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// textArgs returns args with every string made valid UTF-8 without NUL;
// args itself when they are already.
func textArgs(args []any) []any {
	var out []any
	for i, a := range args {
		s, ok := a.(string)
		if !ok || (utf8.ValidString(s) && strings.IndexByte(s, 0) < 0) {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = cleanText(s)
	}
	if out == nil {
		return args
	}
	return out
}

// cleanText is s as the store keeps a string: invalid UTF-8 and NUL
// replaced with U+FFFD.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// write runs f, a write to the database. When it fails because the disk
// is full, the store gives up its reserve and runs f once more, so that an
// outcome that was reached is stored; f must write only through the
// database. Errors are explained (ErrReadOnly, ErrDiskFull, ErrDamaged).
//
// A write that PostgreSQL aborted because it crossed another process's
// (a deadlock, a serialization failure) is run again, a few times: f
// writes the same rows each time.
func (s *sqlStore) write(ctx context.Context, f func() error) error {
	if s.readOnly {
		return s.explain(errReadOnlyWrite)
	}
	err := f()
	if sqliteCode(err) == sqliteFull && s.releaseReserve() {
		err = f()
	}
	for try := 1; try <= 5 && s.dialect.transient(err); try++ {
		select {
		case <-ctx.Done():
			return s.explain(err)
		case <-time.After(time.Duration(try*try) * 10 * time.Millisecond):
		}
		err = f()
	}
	return s.explain(err)
}

// inTx runs f in a transaction of its own, committed when f returns nil.
func (s *sqlStore) inTx(ctx context.Context, f func(tx sqlTx) error) error {
	tx, err := s.db.BeginTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// unique says whether err is a violated uniqueness constraint (a name
// that exists already).
func (s *sqlStore) unique(err error) bool { return err != nil && s.dialect.unique(err) }

type scanner interface{ Scan(dest ...any) error }

func nullZero(f float64) any {
	if f == 0 {
		return nil
	}
	return f
}

// notFound says whether err is a query's "no rows".
func notFound(err error) bool { return errors.Is(err, sql.ErrNoRows) }
