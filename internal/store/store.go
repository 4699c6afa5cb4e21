// Package store keeps programs, evaluations and their telemetry in a SQLite
// database (modernc.org/sqlite, no cgo). Every write happens before the
// caller acts on it, so a process killed at any moment loses nothing that
// was reported as done.
package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// ErrNotFound is returned when a program or evaluation does not exist.
var ErrNotFound = errors.New("not found")

// Store is the database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
}

// Open opens (creating if needed) the SQLite database at path and brings
// its schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty database path")
	}
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if path == ":memory:" {
		db.SetMaxOpenConns(1) // each connection would be its own database
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		db.Close()
		return nil, err
	}
	prov, err := goose.NewProvider(goose.DialectSQLite3, db, sub)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: migrations: %w", path, err)
	}
	if _, err := prov.Up(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: migrate: %w (is it a frontier database?)", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the handle to packages that add their own tables.
func (s *Store) DB() *sql.DB { return s.db }

// Path is the database file.
func (s *Store) Path() string { return s.path }

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
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO programs (hash, norm_hash, source, size, created_at) VALUES ($1, $2, $3, $4, $5)
		 ON CONFLICT (hash) DO NOTHING`,
		h, normHash, src, len(src), time.Now().UnixMilli())
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

// Evaluation states.
const (
	StateRunning     = "running"
	StateDone        = "done"
	StateInterrupted = "interrupted"
)

// Evaluation is one evaluation of a program on a track.
type Evaluation struct {
	ID               int64
	ProgramHash      string
	Track            string
	TrackHash        string
	Seed             int
	FastOnly         bool
	State            string
	Verdict          string
	Reason           string
	ValLoss          float64 // 0 when there is none
	TrainTimeMs      float64
	StepAvgMs        float64
	Steps            int
	TokensPerS       float64
	PeakRSSMB        float64
	WallMs           float64
	FingerprintClass string
	Result           json.RawMessage // the evaluator's full result document
	RunDir           string
	StartedAt        time.Time
	FinishedAt       time.Time // zero while running
}

// CreateEvaluation records an evaluation that is about to start and sets
// e.ID. The program must be stored already.
func (s *Store) CreateEvaluation(ctx context.Context, e *Evaluation) error {
	if e.StartedAt.IsZero() {
		e.StartedAt = time.Now()
	}
	if e.State == "" {
		e.State = StateRunning
	}
	err := s.db.QueryRowContext(ctx,
		`INSERT INTO evaluations (program_hash, track, track_hash, seed, fast_only, state, run_dir, started_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
		e.ProgramHash, e.Track, e.TrackHash, e.Seed, e.FastOnly, e.State, e.RunDir, e.StartedAt.UnixMilli(),
	).Scan(&e.ID)
	if err != nil {
		return fmt.Errorf("record evaluation: %w", err)
	}
	return nil
}

// FinishEvaluation stores the outcome of evaluation e.ID and, when not nil,
// its telemetry, in one transaction.
func (s *Store) FinishEvaluation(ctx context.Context, e *Evaluation, telemetry []byte) error {
	if e.FinishedAt.IsZero() {
		e.FinishedAt = time.Now()
	}
	if e.State == "" || e.State == StateRunning {
		e.State = StateDone
	}
	if len(e.Result) == 0 {
		e.Result = json.RawMessage("{}")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finish evaluation %d: %w", e.ID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx,
		`UPDATE evaluations SET state = $1, verdict = $2, reason = $3, val_loss = $4, train_time_ms = $5,
		 step_avg_ms = $6, steps = $7, tokens_per_s = $8, peak_rss_mb = $9, wall_ms = $10,
		 fingerprint_class = $11, result = $12, finished_at = $13 WHERE id = $14`,
		e.State, e.Verdict, e.Reason, nullZero(e.ValLoss), nullZero(e.TrainTimeMs), nullZero(e.StepAvgMs),
		e.Steps, nullZero(e.TokensPerS), nullZero(e.PeakRSSMB), nullZero(e.WallMs),
		e.FingerprintClass, string(e.Result), e.FinishedAt.UnixMilli(), e.ID)
	if err != nil {
		return fmt.Errorf("finish evaluation %d: %w", e.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("finish evaluation %d: %w", e.ID, ErrNotFound)
	}
	if telemetry != nil {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO telemetry (evaluation_id, jsonl) VALUES ($1, $2)
			 ON CONFLICT (evaluation_id) DO UPDATE SET jsonl = excluded.jsonl`, e.ID, telemetry); err != nil {
			return fmt.Errorf("store telemetry of evaluation %d: %w", e.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finish evaluation %d: %w", e.ID, err)
	}
	return nil
}

const evalColumns = `id, program_hash, track, track_hash, seed, fast_only, state, verdict, reason,
	val_loss, train_time_ms, step_avg_ms, steps, tokens_per_s, peak_rss_mb, wall_ms,
	fingerprint_class, result, run_dir, started_at, finished_at`

type scanner interface{ Scan(dest ...any) error }

func scanEvaluation(r scanner) (*Evaluation, error) {
	var e Evaluation
	var valLoss, trainMs, stepAvg, tps, rss, wall sql.NullFloat64
	var steps sql.NullInt64
	var started int64
	var finished sql.NullInt64
	var result string
	err := r.Scan(&e.ID, &e.ProgramHash, &e.Track, &e.TrackHash, &e.Seed, &e.FastOnly, &e.State, &e.Verdict, &e.Reason,
		&valLoss, &trainMs, &stepAvg, &steps, &tps, &rss, &wall, &e.FingerprintClass, &result, &e.RunDir, &started, &finished)
	if err != nil {
		return nil, err
	}
	e.ValLoss, e.TrainTimeMs, e.StepAvgMs = valLoss.Float64, trainMs.Float64, stepAvg.Float64
	e.TokensPerS, e.PeakRSSMB, e.WallMs = tps.Float64, rss.Float64, wall.Float64
	e.Steps = int(steps.Int64)
	e.Result = json.RawMessage(result)
	e.StartedAt = time.UnixMilli(started)
	if finished.Valid {
		e.FinishedAt = time.UnixMilli(finished.Int64)
	}
	return &e, nil
}

// Evaluation returns evaluation id.
func (s *Store) Evaluation(ctx context.Context, id int64) (*Evaluation, error) {
	e, err := scanEvaluation(s.db.QueryRowContext(ctx, `SELECT `+evalColumns+` FROM evaluations WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("evaluation %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read evaluation %d: %w", id, err)
	}
	return e, nil
}

// Filter selects evaluations; zero fields match everything.
type Filter struct {
	Track       string
	ProgramHash string
	Verdict     string
	Limit       int // 0 means 100
}

// Evaluations lists evaluations, newest first.
func (s *Store) Evaluations(ctx context.Context, f Filter) ([]*Evaluation, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+evalColumns+` FROM evaluations
		WHERE ($1 = '' OR track = $1) AND ($2 = '' OR program_hash = $2) AND ($3 = '' OR verdict = $3)
		ORDER BY id DESC LIMIT $4`, f.Track, f.ProgramHash, f.Verdict, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list evaluations: %w", err)
	}
	defer rows.Close()
	var out []*Evaluation
	for rows.Next() {
		e, err := scanEvaluation(rows)
		if err != nil {
			return nil, fmt.Errorf("list evaluations: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Telemetry returns the stored telemetry JSONL of evaluation id.
func (s *Store) Telemetry(ctx context.Context, id int64) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, `SELECT jsonl FROM telemetry WHERE evaluation_id = $1`, id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("telemetry of evaluation %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read telemetry of evaluation %d: %w", id, err)
	}
	return b, nil
}

func nullZero(f float64) any {
	if f == 0 {
		return nil
	}
	return f
}
