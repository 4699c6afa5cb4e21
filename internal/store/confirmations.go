package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
)

// Confirmations (migration 00005): the claims that a program is faster
// than a run's standing record, each with what testing it found. The
// engine writes the ones it tests itself through a RunTx, in the same
// transaction as what they change; `frontier runs confirm` adds its own.

// Confirmation is a stored claim (runs.Claim) of a run.
type Confirmation struct {
	runs.Claim
	RunID int64
	// Evaluations are the ids of the series' evaluations, in the order
	// they ran.
	Evaluations []int64
	CreatedAt   time.Time
	// StartedAt is when its series started (zero before): a series cut
	// off by a kill resumes with the runs it finished since.
	StartedAt  time.Time
	FinishedAt time.Time // zero until the claim has its outcome
}

// InsertConfirmation records a claim and sets c.ID.
func (t *runTx) InsertConfirmation(c *Confirmation) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = t.now
	}
	if c.Source == "" {
		c.Source = "engine"
	}
	err := t.tx.QueryRowContext(t.ctx, `INSERT INTO run_confirmations (run_id, child_id, baseline_id, method, state, source, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		c.RunID, c.ChildID, c.BaselineID, c.Method, c.State, c.Source, c.CreatedAt.UnixMilli()).Scan(&c.ID)
	if err != nil {
		return fmt.Errorf("record the claim of child %d: %w", c.ChildID, err)
	}
	return t.UpdateConfirmation(c)
}

// UpdateConfirmation writes every mutable field of a claim: its state,
// its numbers and its evaluations.
func (t *runTx) UpdateConfirmation(c *Confirmation) error {
	var finished, started any
	if !c.FinishedAt.IsZero() {
		finished = c.FinishedAt.UnixMilli()
	}
	if !c.StartedAt.IsZero() {
		started = c.StartedAt.UnixMilli()
	}
	evs, _ := json.Marshal(nonNil(c.Evaluations))
	_, err := t.tx.ExecContext(t.ctx, `UPDATE run_confirmations SET baseline_id = $1, method = $2, state = $3, pairs = $4, alpha = $5,
		time_ms = $6, baseline_ms = $7, time_sd = $8, baseline_sd = $9, loss_mean = $10, loss_sd = $11, speedup = $12,
		speedup_lo = $13, speedup_hi = $14, time_p = $15, loss_p = $16, noise_cv = $17, noise_df = $18, reason = $19,
		evaluations = $20, finished_at = $21, single_ms = $22, started_at = $24 WHERE id = $23`,
		c.BaselineID, c.Method, c.State, c.Pairs, c.Alpha, number(c.TimeMs), number(c.BaselineMs), number(c.TimeSD),
		number(c.BaselineSD), number(c.LossMean), number(c.LossSD), number(c.Speedup), number(c.SpeedupLo),
		number(c.SpeedupHi), number(c.TimeP), number(c.LossP), number(c.NoiseCV), c.NoiseDF, c.Reason, string(evs), finished,
		number(c.SingleMs), c.ID, started)
	if err != nil {
		return fmt.Errorf("update claim %d: %w", c.ID, err)
	}
	return nil
}

// Confirmations returns a run's claims in the order they were made.
func (s *sqlStore) Confirmations(ctx context.Context, runID int64) ([]*Confirmation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, child_id, baseline_id, method, state, source, pairs, alpha, time_ms,
		baseline_ms, time_sd, baseline_sd, loss_mean, loss_sd, speedup, speedup_lo, speedup_hi, time_p, loss_p, noise_cv,
		noise_df, reason, evaluations, created_at, finished_at, single_ms, started_at FROM run_confirmations WHERE run_id = $1 ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("list claims of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*Confirmation
	for rows.Next() {
		c := &Confirmation{RunID: runID}
		var nums [13]sql.NullFloat64
		var evs string
		var created int64
		var finished, started sql.NullInt64
		err := rows.Scan(&c.ID, &c.ChildID, &c.BaselineID, &c.Method, &c.State, &c.Source, &c.Pairs, &c.Alpha,
			&nums[0], &nums[1], &nums[2], &nums[3], &nums[4], &nums[5], &nums[6], &nums[7], &nums[8], &nums[9], &nums[10],
			&nums[11], &c.NoiseDF, &c.Reason, &evs, &created, &finished, &nums[12], &started)
		if err != nil {
			return nil, fmt.Errorf("list claims of run %d: %w", runID, err)
		}
		for i, p := range []*float64{&c.TimeMs, &c.BaselineMs, &c.TimeSD, &c.BaselineSD, &c.LossMean, &c.LossSD,
			&c.Speedup, &c.SpeedupLo, &c.SpeedupHi, &c.TimeP, &c.LossP, &c.NoiseCV, &c.SingleMs} {
			*p = math.NaN()
			if nums[i].Valid {
				*p = nums[i].Float64
			}
		}
		if err := json.Unmarshal([]byte(evs), &c.Evaluations); err != nil {
			return nil, fmt.Errorf("claim %d: evaluations: %w", c.ID, err)
		}
		c.CreatedAt = time.UnixMilli(created)
		if finished.Valid {
			c.FinishedAt = time.UnixMilli(finished.Int64)
		}
		if started.Valid {
			c.StartedAt = time.UnixMilli(started.Int64)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// number stores a float, NaN and ±Inf as NULL (unknown): SQL has no NaN.
func number(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

// RunningEvaluations returns the evaluations of a program still marked
// running that started at or after since: a resumed run reads them before
// it marks them interrupted, to clean what their process left.
func (s *sqlStore) RunningEvaluations(ctx context.Context, programHash string, since time.Time) ([]*Evaluation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+evalColumns+` FROM evaluations
		WHERE program_hash = $1 AND state = $2 AND started_at >= $3 ORDER BY id`, programHash, StateRunning, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("find running evaluations of %.12s: %w", programHash, err)
	}
	defer rows.Close()
	var out []*Evaluation
	for rows.Next() {
		e, err := scanEvaluation(rows)
		if err != nil {
			return nil, fmt.Errorf("find running evaluations of %.12s: %w", programHash, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// FastestOpen is the acceptable child with the fastest single timing among
// kids whose claim was not refuted (rejected or failed): the run's
// candidate record, as the engine keeps it and every reader shows it.
func FastestOpen(claims []*Confirmation, kids []*Child) *Child {
	refuted := map[int64]bool{}
	for _, cl := range claims {
		if cl.State == runs.ClaimRejected || cl.State == runs.ClaimFailed {
			refuted[cl.ChildID] = true
		}
	}
	var best *Child
	for _, c := range kids {
		if c == nil || c.State != runs.Done || c.Origin.IsCopy() || c.Origin == runs.OriginReference || refuted[c.ID] {
			continue
		}
		if o := c.Outcome(); best == nil && o.Timed() || best != nil && o.Faster(best.Outcome()) {
			best = c
		}
	}
	return best
}

// Standing is a run's record (runs.RecordOf) as a member, with its times:
// the best estimate, the timings behind it and its own single timing; nil
// before the reference has a time. member looks a member up by id (nil
// when none).
func Standing(claims []*Confirmation, member func(id int64) *Child, ref *Child) (*Child, runs.Record) {
	var refOut runs.Outcome
	if ref != nil && ref.State == runs.Done {
		refOut = ref.Outcome()
	}
	rec := runs.RecordOf(Claims(claims), refOut)
	c := member(rec.ID)
	if c == nil {
		return nil, runs.Record{}
	}
	return c, rec
}

// Claims are the confirmations' claims, in their order.
func Claims(cs []*Confirmation) []runs.Claim {
	out := make([]runs.Claim, len(cs))
	for i, c := range cs {
		out[i] = c.Claim
	}
	return out
}
