package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// The database's own troubles, as errors a caller can tell apart; each
// comes wrapped in a message that says what happened and what to do.
var (
	// ErrReadOnly: the database was opened for reading (this user may not
	// write to it or its folder) and a write was asked for.
	ErrReadOnly = errors.New("the database is read-only")
	// ErrDiskFull: the disk that holds the database is full, even after
	// the store gave up its reserve.
	ErrDiskFull = errors.New("the disk is full")
)

// SQLite's primary result codes that the store explains.
const (
	sqliteReadOnly   = 8
	sqliteIOErr      = 10
	sqliteCorrupt    = 11
	sqliteFull       = 13
	sqliteCantOpen   = 14
	sqliteNotADB     = 26
	sqliteConstraint = 19
)

// sqliteCode returns the primary SQLite result code err carries, or 0.
func sqliteCode(err error) int {
	var c interface{ Code() int }
	if errors.As(err, &c) {
		return c.Code() & 0xff
	}
	return 0
}

// openSQLite opens the SQLite database at loc.Path and brings its schema
// up to date. Where there is none it creates one, private to this user
// (0600, in a folder created 0700, as it holds every program, prompt and
// answer), and atomically: a database file either does not exist or is
// complete.
//
// A database that exists is never re-created or repaired: an empty
// (0-byte), truncated or damaged file is an error (ErrDamaged) that says
// what happened and what to do. When this user may not write to the
// database or its folder (a read-only home), it is opened for reading:
// what only reads works, and every write fails with ErrReadOnly.
func openSQLite(ctx context.Context, loc Location, owner Owner) (*sqlStore, error) {
	path := loc.Path
	if path == ":memory:" {
		s, err := openFile(ctx, path, false, owner)
		if err == nil {
			if err = s.prepare(ctx); err != nil {
				s.Close()
			}
		}
		return s, err
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := create(ctx, path, owner); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("open store %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("open store: %s is not a file (%s): point --db or db: in frontier.yaml at a database file", path, fi.Mode().Type())
	default:
		if err := checkHeader(path, fi.Size()); err != nil {
			return nil, err
		}
	}
	readOnly := !writable(path) || !writable(filepath.Dir(path))
	s, err := openFile(ctx, path, readOnly, owner)
	if err != nil {
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if !readOnly {
		s.keepReserve()
	}
	return s, nil
}

// create makes a new database at path: built under a temporary name and
// linked into place, so that a process killed meanwhile leaves no empty
// or half-made database, and one that another process made meanwhile is
// kept.
func create(ctx context.Context, path string, owner Owner) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the database's folder: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".new-*") // 0600
	if err != nil {
		return fmt.Errorf("create store %s: %w", path, err)
	}
	tmp := f.Name()
	f.Close()
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			os.Remove(tmp + suffix)
		}
	}()
	s, err := openFile(ctx, tmp, false, owner)
	if err != nil {
		return fmt.Errorf("create store %s: %w", path, err)
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return fmt.Errorf("create store %s: %w", path, err)
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("create store %s: %w", path, err)
	}
	err = os.Link(tmp, path)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		return nil
	}
	// A file system without hard links: rename, which replaces what a
	// racing process may have made in the last milliseconds.
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("create store %s: %w", path, err)
	}
	return nil
}

// sqliteHeader is the size of a SQLite database file's header.
const sqliteHeader = 100

// checkHeader refuses a database file that is empty, is not SQLite, or is
// shorter than its header says, before SQLite would treat an empty file
// as a new database (all history gone without a word) or fail with a bare
// "malformed".
func checkHeader(path string, size int64) error {
	if size == 0 {
		return damaged(path, "it is empty (0 bytes): what it held is gone, perhaps cut off by a full disk, a failed copy or a tool. frontier does not start a new database in its place")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
	}
	defer f.Close()
	var h [sqliteHeader]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return damaged(path, fmt.Sprintf("it holds %d bytes, less than a SQLite database's header: it was cut off, or is not a database", size))
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return damaged(path, "it is not a SQLite database (it does not start with SQLite's header)")
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	// The page count is valid when the "version valid for" number matches
	// the change counter. In WAL mode the newest pages may be in the -wal
	// file, and a checkpoint grows the file after it writes the header:
	// with a -wal file that holds anything, SQLite is the judge.
	if binary.BigEndian.Uint32(h[92:96]) != binary.BigEndian.Uint32(h[24:28]) {
		return nil
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	if want := pages * pageSize; size < want {
		if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
			return nil
		}
		return damaged(path, fmt.Sprintf("it is truncated: it holds %d bytes of the %d its header counts, perhaps cut off by a full disk or a failed copy", size, want))
	}
	return nil
}

// damaged is the error for a database that frontier will not touch.
func damaged(path, what string) error {
	return fmt.Errorf("the database %s cannot be used: %s. Restore it from a backup; or save what SQLite can read (sqlite3 %s .recover | sqlite3 recovered.db); or move it aside (mv %s %s.damaged) and frontier starts a new, empty database: %w",
		path, what, path, path, path, ErrDamaged)
}

// How a SQLite file is opened: for writing, read-only because this user
// may not write it, or as a reader of a database others write
// (OpenReader).
type openMode int

const (
	modeWrite openMode = iota
	modeReadOnly
	modeReader
)

// openFile opens the database file (which must exist unless it is
// :memory:) and migrates it; read-only, it checks that no migration is
// due instead.
func openFile(ctx context.Context, path string, readOnly bool, owner Owner) (*sqlStore, error) {
	if readOnly {
		return openDB(ctx, path, modeReadOnly, owner)
	}
	return openDB(ctx, path, modeWrite, owner)
}

// A SQLite store keeps up to sqliteIdleConns connections open between
// uses, and up to sqliteStmts statements prepared on them: more than the
// store's queries of fixed text, and room for those built for a number of
// keys.
const (
	sqliteIdleConns = 16
	sqliteStmts     = 512
)

// sqliteCheckpointPages is how many pages the WAL grows to before a
// commit copies them back into the database (SQLite's default is 1,000).
const sqliteCheckpointPages = 10000

func openDB(ctx context.Context, path string, mode openMode, owner Owner) (*sqlStore, error) {
	q := url.Values{}
	pragmas := []string{"busy_timeout(10000)", "foreign_keys(1)"}
	switch mode {
	case modeReader:
		// Never immutable: the searches that write it must be seen.
		q.Set("mode", "ro")
		pragmas = append(pragmas, "query_only(1)")
	case modeReadOnly:
		q.Set("mode", "ro")
		// SQLite reads a WAL database read-only only where it may create
		// the -shm file, or when the file is declared immutable. Without a
		// -wal file that holds anything, immutable loses nothing.
		if wal, err := os.Stat(path + "-wal"); err != nil || wal.Size() == 0 {
			q.Set("immutable", "1")
		}
	default:
		// synchronous(NORMAL): in WAL mode a commit survives a killed
		// process (not a power cut), and only a checkpoint waits for the
		// disk. A checkpoint copies the pages written since the last one
		// back into the database, each once however often it was written:
		// after 10,000 pages (about 40 MB of WAL) rather than SQLite's
		// 1,000, the pages a run rewrites all the time (the ends of its
		// tables and indexes) are copied a tenth as often.
		pragmas = append(pragmas, "journal_mode(WAL)", "synchronous(NORMAL)", fmt.Sprintf("wal_autocheckpoint(%d)", sqliteCheckpointPages))
		q.Set("_txlock", "immediate")
	}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	// The path is part of a URI: '?', '#' and '%' in it must not be read
	// as its query.
	name := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	dsn := "file:" + name + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	var stmts *stmtCache
	var w *writer
	if path == ":memory:" {
		db.SetMaxOpenConns(1) // each connection would be its own database
	} else {
		// A connection costs its pragmas and a read of the schema to open,
		// and its prepared statements to lose: the workers of a run that
		// read at once keep theirs (database/sql keeps 2 by default).
		db.SetMaxIdleConns(sqliteIdleConns)
		stmts = newStmtCache(db, sqliteStmts)
		if mode == modeWrite {
			if w, err = openWriter(dsn); err != nil {
				db.Close()
				return nil, fmt.Errorf("open store %s: %w", path, err)
			}
		}
	}
	s := &sqlStore{db: sqlDB{DB: db, stmts: stmts, w: w}, dialect: sqliteDialect, loc: Location{Dialect: SQLite, Path: path}, readOnly: mode != modeWrite,
		reader: mode == modeReader, owner: owner}
	if path != ":memory:" {
		s.reserve = path + "-reserve"
	}
	return s, nil
}

// prepare reads the schema (which finds most damage at once) and brings it
// up to date; read-only, it checks that no migration is due instead.
func (s *sqlStore) prepare(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		return s.explain(fmt.Errorf("open store %s: %w", s.loc, err))
	}
	if s.readOnly {
		st, err := s.schema(ctx)
		if err != nil {
			return s.explain(fmt.Errorf("open store %s read-only: %w (is it a frontier database?)", s.loc, err))
		}
		if st.Newer() {
			return st.newerError()
		}
		if st.Pending() && s.reader {
			return fmt.Errorf("the database %s was written by an older version of frontier, which a reader does not upgrade: run frontier runs once (it upgrades the database), then start again: %w", s.loc, ErrReadOnly)
		}
		if st.Pending() {
			return fmt.Errorf("the database %s is read-only for this user, and this version of frontier must first upgrade it: run frontier once where it may write there: %w", s.loc, ErrReadOnly)
		}
		return nil
	}
	if err := s.migrate(ctx); err != nil {
		return s.explain(fmt.Errorf("open store %s: %w", s.loc, err))
	}
	return nil
}

// explain turns SQLite's terse codes for trouble with the database itself
// into what happened and what to do; other errors pass unchanged.
func (s *sqlStore) explain(err error) error {
	switch sqliteCode(err) {
	case 0:
		return err
	case sqliteCorrupt, sqliteNotADB:
		return fmt.Errorf("%w (%w)", damaged(s.loc.Path, "SQLite finds it damaged"), err)
	case sqliteReadOnly:
		return fmt.Errorf("the database %s is read-only for this user: frontier can read it but not record into it; use a home (--home, FRONTIER_HOME) or --db where you may write: %w (%w)", s.loc, ErrReadOnly, err)
	case sqliteFull:
		return fmt.Errorf("the disk that holds the database %s is full: free some space (old run folders, data you no longer use), then run again; nothing recorded before is lost: %w (%w)", s.loc, ErrDiskFull, err)
	case sqliteCantOpen, sqliteIOErr:
		return fmt.Errorf("the database %s cannot be read or written (check that its folder exists and that this user may write there): %w", s.loc, err)
	}
	return err
}

// sqliteDialect is SQLite's SQL.
var sqliteDialect = &dialect{
	name:         SQLite,
	nowMs:        `CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
	versionTable: `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'`,
	unique: func(err error) bool {
		return sqliteCode(err) == sqliteConstraint && strings.Contains(err.Error(), "UNIQUE")
	},
	// A writer waits for the lock (busy_timeout, and BEGIN IMMEDIATE takes
	// it first): nothing is aborted halfway.
	transient: func(error) bool { return false },
}
