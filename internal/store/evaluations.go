package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Evaluations of programs on tracks: each inserted as running before its
// process starts, then finished with its outcome and telemetry in one
// transaction.

// Evaluation states.
const (
	StateRunning     = "running"
	StateDone        = "done"
	StateInterrupted = "interrupted"
	StateDiskFull    = "disk_full" // could not finish: the disk was full (free space, run again)
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
	// Conditions are the machine's state while the evaluation's timed
	// phase ran (its full run, else its fast check); nil when unknown.
	Conditions *Conditions
	Result     json.RawMessage // the evaluator's full result document
	RunDir     string
	// Owner names the process that ran it (set by CreateEvaluation; see
	// InterruptOrphans).
	Owner      string
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
}

// CreateEvaluation records an evaluation that is about to start and sets
// e.ID. The program must be stored already.
func (s *sqlStore) CreateEvaluation(ctx context.Context, e *Evaluation) error {
	if e.StartedAt.IsZero() {
		e.StartedAt = time.Now()
	}
	if e.State == "" {
		e.State = StateRunning
	}
	e.Owner = s.owner.String()
	err := s.write(ctx, func() error {
		return s.db.QueryRowContext(ctx,
			`INSERT INTO evaluations (program_hash, track, track_hash, seed, fast_only, state, run_dir, started_at, owner)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			e.ProgramHash, e.Track, e.TrackHash, e.Seed, e.FastOnly, e.State, e.RunDir, e.StartedAt.UnixMilli(), e.Owner,
		).Scan(&e.ID)
	})
	if err != nil {
		return fmt.Errorf("record evaluation: %w", err)
	}
	return nil
}

// FinishEvaluation stores the outcome of evaluation e.ID and, when not nil,
// its telemetry, in one transaction.
func (s *sqlStore) FinishEvaluation(ctx context.Context, e *Evaluation, telemetry []byte) error {
	if e.FinishedAt.IsZero() {
		e.FinishedAt = time.Now()
	}
	if e.State == "" || e.State == StateRunning {
		e.State = StateDone
	}
	if len(e.Result) == 0 {
		e.Result = json.RawMessage("{}")
	}
	err := s.write(ctx, func() error { return s.finishEvaluation(ctx, e, telemetry) })
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("finish evaluation %d: %w", e.ID, err)
	}
	return err
}

func (s *sqlStore) finishEvaluation(ctx context.Context, e *Evaluation, telemetry []byte) error {
	var cond sql.NullString
	if e.Conditions != nil {
		b, err := json.Marshal(e.Conditions)
		if err != nil {
			return fmt.Errorf("encode conditions: %w", err)
		}
		cond = sql.NullString{String: string(b), Valid: true}
	}
	tx, err := s.db.BeginTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx,
		`UPDATE evaluations SET state = $1, verdict = $2, reason = $3, val_loss = $4, train_time_ms = $5,
		 step_avg_ms = $6, steps = $7, tokens_per_s = $8, peak_rss_mb = $9, wall_ms = $10,
		 fingerprint_class = $11, result = $12, finished_at = $13, conditions = $14 WHERE id = $15`,
		e.State, e.Verdict, e.Reason, nullZero(e.ValLoss), nullZero(e.TrainTimeMs), nullZero(e.StepAvgMs),
		e.Steps, nullZero(e.TokensPerS), nullZero(e.PeakRSSMB), nullZero(e.WallMs),
		e.FingerprintClass, string(e.Result), e.FinishedAt.UnixMilli(), cond, e.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("finish evaluation %d: %w", e.ID, ErrNotFound)
	}
	if telemetry != nil {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO telemetry (evaluation_id, jsonl) VALUES ($1, $2)
			 ON CONFLICT (evaluation_id) DO UPDATE SET jsonl = excluded.jsonl`, e.ID, telemetry); err != nil {
			return fmt.Errorf("store telemetry: %w", err)
		}
	}
	return tx.Commit()
}

const evalColumns = `id, program_hash, track, track_hash, seed, fast_only, state, verdict, reason,
	val_loss, train_time_ms, step_avg_ms, steps, tokens_per_s, peak_rss_mb, wall_ms,
	fingerprint_class, result, run_dir, started_at, finished_at, owner, conditions`

func scanEvaluation(r scanner) (*Evaluation, error) {
	var e Evaluation
	var valLoss, trainMs, stepAvg, tps, rss, wall sql.NullFloat64
	var steps sql.NullInt64
	var started int64
	var finished sql.NullInt64
	var result string
	var cond sql.NullString
	err := r.Scan(&e.ID, &e.ProgramHash, &e.Track, &e.TrackHash, &e.Seed, &e.FastOnly, &e.State, &e.Verdict, &e.Reason,
		&valLoss, &trainMs, &stepAvg, &steps, &tps, &rss, &wall, &e.FingerprintClass, &result, &e.RunDir, &started, &finished, &e.Owner, &cond)
	if err != nil {
		return nil, err
	}
	if cond.Valid && cond.String != "" {
		e.Conditions = new(Conditions)
		if err := json.Unmarshal([]byte(cond.String), e.Conditions); err != nil {
			return nil, fmt.Errorf("evaluation %d: conditions: %w", e.ID, err)
		}
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
func (s *sqlStore) Evaluation(ctx context.Context, id int64) (*Evaluation, error) {
	e, err := scanEvaluation(s.db.QueryRowContext(ctx, `SELECT `+evalColumns+` FROM evaluations WHERE id = $1`, id))
	if notFound(err) {
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
func (s *sqlStore) Evaluations(ctx context.Context, f Filter) ([]*Evaluation, error) {
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
func (s *sqlStore) Telemetry(ctx context.Context, id int64) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, `SELECT jsonl FROM telemetry WHERE evaluation_id = $1`, id).Scan(&b)
	if notFound(err) {
		return nil, fmt.Errorf("telemetry of evaluation %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read telemetry of evaluation %d: %w", id, err)
	}
	return b, nil
}

// InterruptEvaluations marks evaluations of a program that are still
// "running" and started at or after since as interrupted: the process that
// ran them is gone.
func (s *sqlStore) InterruptEvaluations(ctx context.Context, programHash string, since time.Time) error {
	err := s.write(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `UPDATE evaluations SET state = $1, reason = $2, finished_at = $3
			WHERE program_hash = $4 AND state = $5 AND started_at >= $6`,
			StateInterrupted, "interrupted: the process that ran it ended", time.Now().UnixMilli(), programHash, StateRunning, since.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("mark interrupted evaluations: %w", err)
	}
	return nil
}

// LatestEvaluation returns the newest finished evaluation (state done) of
// a program, fast-only or not, that started at or after since. A run that
// was killed after an evaluation finished but before it recorded the
// result adopts it instead of evaluating again.
func (s *sqlStore) LatestEvaluation(ctx context.Context, programHash string, fastOnly bool, since time.Time) (*Evaluation, error) {
	e, err := scanEvaluation(s.db.QueryRowContext(ctx, `SELECT `+evalColumns+` FROM evaluations
		WHERE program_hash = $1 AND fast_only = $2 AND state = $3 AND started_at >= $4 ORDER BY id DESC LIMIT 1`,
		programHash, fastOnly, StateDone, since.UnixMilli()))
	if notFound(err) {
		return nil, fmt.Errorf("finished evaluation of %.12s: %w", programHash, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("find evaluation of %.12s: %w", programHash, err)
	}
	return e, nil
}
