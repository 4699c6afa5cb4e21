// Package store keeps programs, evaluations and their telemetry, and the
// records of evolution runs, in a SQLite database (modernc.org/sqlite, no
// cgo). Every write happens before the caller acts on it, so a process
// killed at any moment loses nothing that was reported as done. Its
// contract, which every implementation passes, is internal/store/storetest;
// each consumer declares the few methods it uses.
package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// ErrNotFound is returned when a program or evaluation does not exist.
var ErrNotFound = errors.New("not found")

// Store is the database. It is safe for concurrent use.
type Store struct {
	db       *sql.DB
	path     string
	readOnly bool
	// reader is set for a database opened by OpenReader.
	reader bool
	// owner identifies this process on this machine in the evaluations it
	// creates, so that a later process can tell that one was left running
	// by a process that is gone (InterruptOrphans).
	owner string
	// reserve is the file that holds disk space back for the moment the
	// disk is full (see reserve.go); empty for an in-memory database.
	reserve string
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the handle to packages that add their own tables.
func (s *Store) DB() *sql.DB { return s.db }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// ReadOnly says whether the database was opened for reading only, because
// this user may not write to it or to its folder: every write fails, with
// ErrReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Hash is the content address of a program: the SHA-256 of its bytes.
func Hash(src []byte) string {
	h := sha256.Sum256(src)
	return hex.EncodeToString(h[:])
}

// PutProgram stores src (once) and returns its hash. normHash is the
// whitespace-normalized hash used for dedup; empty means the plain hash.
func (s *Store) PutProgram(ctx context.Context, src []byte, normHash string) (string, error) {
	h := Hash(src)
	if normHash == "" {
		normHash = h
	}
	err := s.write(ctx, func() error {
		_, err := s.db.ExecContext(ctx,
			`INSERT INTO programs (hash, norm_hash, source, size, created_at) VALUES ($1, $2, $3, $4, $5)
			 ON CONFLICT (hash) DO NOTHING`,
			h, normHash, src, len(src), time.Now().UnixMilli())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("store program: %w", err)
	}
	return h, nil
}

// Program returns the source of the program with hash h.
func (s *Store) Program(ctx context.Context, h string) ([]byte, error) {
	var src []byte
	err := s.db.QueryRowContext(ctx, `SELECT source FROM programs WHERE hash = $1`, h).Scan(&src)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("program %s: %w", h, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read program %s: %w", h, err)
	}
	return src, nil
}

// ProgramsByNormHash returns the hashes of stored programs that differ
// from each other only in whitespace.
func (s *Store) ProgramsByNormHash(ctx context.Context, normHash string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT hash FROM programs WHERE norm_hash = $1 ORDER BY created_at`, normHash)
	if err != nil {
		return nil, fmt.Errorf("find programs: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(dest ...any) error }

func nullZero(f float64) any {
	if f == 0 {
		return nil
	}
	return f
}
