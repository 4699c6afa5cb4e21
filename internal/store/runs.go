package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/frontier-bench/frontier/internal/runs"
)

// This file holds the tables of evolution runs (migrations 00002 and
// 00003): runs, their iterations and children (every member of the run's
// population), the attempts of each child, the elite archive and events;
// model calls are in calls.go. The evolve package decides what to write
// (its journal); these are its queries. The words of the rows (states,
// origins, stages, verdicts) are internal/runs'.

// Run states.
const (
	RunRunning = "running" // a session is running it, or one was killed
	RunStopped = "stopped" // it ended cleanly (see StopReason)
	RunFailed  = "failed"  // it ended on an error (see StopDetail)
)

// Run is one evolution run.
type Run struct {
	ID    int64
	Name  string
	Track string
	// TrackDir is the folder the track was read from when the run was
	// started on a track folder; empty for a track found by name.
	TrackDir      string
	TrackHash     string
	TargetValLoss float64
	LossFloor     float64
	// Objective ranks the run's programs: "score", "time" or "loss".
	Objective string
	// MetaStart is the first iteration planned for meta-prompting; -1 when
	// the run never meta-prompts. (The first that did is the first
	// iteration whose stage is meta.)
	MetaStart int
	// Config is the engine's resolved configuration (JSON), for the engine.
	Config json.RawMessage
	// Models is the ensemble (JSON: []RunModel); see ModelList.
	Models     json.RawMessage
	Seed       uint64
	State      string
	StopReason string
	StopDetail string
	RNG        []byte
	Bandit     json.RawMessage
	Iterations int
	ActiveMs   int64
	Sessions   int
	StartedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time // zero while running
	// Owner is the process that runs the run (see RunStore.ClaimRun), as
	// Owner.String writes it; "" when none claims it. LeaseUntil is when
	// its claim lapses unless it is renewed.
	Owner      string
	LeaseUntil time.Time
}

// RunModel is a member of a run's ensemble, as the run records it.
type RunModel struct {
	Name   string  `json:"name"`
	Kind   string  `json:"kind"` // llm, mutate or replay
	Spec   string  `json:"spec,omitempty"`
	Weight float64 `json:"weight"`
}

// ModelList decodes the run's ensemble.
func (r *Run) ModelList() ([]RunModel, error) {
	var out []RunModel
	if len(r.Models) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(r.Models, &out); err != nil {
		return nil, fmt.Errorf("run %s: its stored models are unreadable: %w", r.Name, err)
	}
	return out, nil
}

// Iteration is the sampled state the children of one iteration share.
type Iteration struct {
	RunID      int64
	Iteration  int
	Island     int
	ParentID   int64 // 0 for the reference's iteration
	TopIDs     []int64
	DiverseIDs []int64
	Stage      runs.Stage
	CreatedAt  time.Time
	DoneAt     time.Time
}

// Child is one member of a run's population.
type Child struct {
	ID               int64
	RunID            int64
	Iteration        int
	Slot             int
	Island           int
	ParentID         int64 // 0: none
	Origin           runs.Origin
	SourceID         int64 // 0: none
	Model            string
	Stage            runs.Stage
	Template         string
	Seed             uint64
	State            runs.State
	ProgramHash      string
	NormHash         string
	Description      string
	Idea             string
	FixAttempts      int
	Verdict          runs.Verdict
	Reason           string
	Error            string
	FastEvaluationID int64
	EvaluationID     int64
	ValLoss          float64 // 0: unknown
	TrainTimeMs      float64
	StepAvgMs        float64
	Score            float64
	Summary          string
	InputTokens      int64
	OutputTokens     int64
	CostUSD          float64
	CreatedAt        time.Time
	UpdatedAt        time.Time
	FinishedAt       time.Time
}

// Outcome is what the run's aggregates (runs.Tally, the record, the
// objective) read of the member.
func (c *Child) Outcome() runs.Outcome {
	return runs.Outcome{ID: c.ID, Verdict: c.Verdict, ValLoss: c.ValLoss, TrainTimeMs: c.TrainTimeMs, Score: c.Score,
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, CostUSD: c.CostUSD}
}

// Attempt is one step of a child's life.
type Attempt struct {
	ID               int64
	ChildID          int64
	Attempt          int
	Kind             string
	LLMCallID        int64
	ProgramHash      string
	Edit             string
	Error            string
	FastEvaluationID int64
	FastVerdict      runs.Verdict
	FastReason       string
	CreatedAt        time.Time
}

// RunEvent is something that happened to a run.
type RunEvent struct {
	ID        int64
	RunID     int64
	Kind      string
	Key       string // non-empty keys are unique per run and kind
	Iteration int
	Detail    json.RawMessage
	At        time.Time
}

// CreateRun inserts r and sets r.ID.
func (s *sqlStore) CreateRun(ctx context.Context, r *Run) error {
	now := time.Now()
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	r.UpdatedAt = now
	if r.State == "" {
		r.State = RunRunning
	}
	if err := CheckRunName(r.Name); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	err := s.write(ctx, func() error {
		return s.db.QueryRowContext(ctx, `INSERT INTO runs (name, track, track_hash, target_val_loss, loss_floor, config, models,
			seed, state, rng, bandit, started_at, updated_at, objective, meta_start, track_dir)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id`,
			r.Name, r.Track, r.TrackHash, r.TargetValLoss, r.LossFloor, jsonText(r.Config, "{}"), jsonText(r.Models, "[]"),
			int64(r.Seed), r.State, r.RNG, jsonText(r.Bandit, "{}"), r.StartedAt.UnixMilli(), r.UpdatedAt.UnixMilli(),
			r.Objective, r.MetaStart, r.TrackDir).Scan(&r.ID)
	})
	if err != nil {
		if s.unique(err) {
			return fmt.Errorf("create run: a run named %q exists already; choose another name or resume it", r.Name)
		}
		return fmt.Errorf("create run: %w", err)
	}
	return nil
}

const runColumns = `id, name, track, track_hash, target_val_loss, loss_floor, config, models, seed, state, stop_reason,
	stop_detail, rng, bandit, iterations, active_ms, sessions, started_at, updated_at, finished_at, objective, meta_start, track_dir,
	owner, lease_until`

func scanRun(r scanner) (*Run, error) {
	var run Run
	var seed, started, updated int64
	var finished sql.NullInt64
	var cfg, models, bandit string
	var lease int64
	err := r.Scan(&run.ID, &run.Name, &run.Track, &run.TrackHash, &run.TargetValLoss, &run.LossFloor, &cfg, &models, &seed,
		&run.State, &run.StopReason, &run.StopDetail, &run.RNG, &bandit, &run.Iterations, &run.ActiveMs, &run.Sessions,
		&started, &updated, &finished, &run.Objective, &run.MetaStart, &run.TrackDir, &run.Owner, &lease)
	if err != nil {
		return nil, err
	}
	run.Config, run.Models, run.Bandit = json.RawMessage(cfg), json.RawMessage(models), json.RawMessage(bandit)
	run.Seed = uint64(seed)
	run.StartedAt, run.UpdatedAt = time.UnixMilli(started), time.UnixMilli(updated)
	if finished.Valid {
		run.FinishedAt = time.UnixMilli(finished.Int64)
	}
	if lease > 0 {
		run.LeaseUntil = time.UnixMilli(lease)
	}
	return &run, nil
}

// Run finds a run by id ("12") or name.
func (s *sqlStore) Run(ctx context.Context, ref string) (*Run, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, errors.New("run: empty id or name")
	}
	var row *sql.Row
	if id, err := strconv.ParseInt(strings.TrimPrefix(ref, "#"), 10, 64); err == nil {
		row = s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1 OR name = $2 ORDER BY id = $1 DESC LIMIT 1`, id, ref)
	} else {
		row = s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE name = $1`, ref)
	}
	r, err := scanRun(row)
	if notFound(err) {
		return nil, fmt.Errorf("run %q: %w (list runs with: frontier runs)", ref, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %q: %w", ref, err)
	}
	return r, nil
}

// Runs lists every run, newest first.
func (s *sqlStore) Runs(ctx context.Context) ([]*Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM runs ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// runTx is a RunTx: a transaction over the run tables, with the time it
// began (every row it writes has it).
type runTx struct {
	ctx context.Context
	tx  sqlTx
	now time.Time
}

var _ RunTx = (*runTx)(nil)

// RunInTx runs f in one transaction (see RunStore). It does not follow
// ctx's cancellation (only its values), so that a decision that was made
// is recorded even while the run is being aborted, but gives up after a
// minute.
func (s *sqlStore) RunInTx(ctx context.Context, f func(tx RunTx) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		defer tx.Rollback()
		if err := f(&runTx{ctx: ctx, tx: tx, now: time.Now()}); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}

// CheckRunName refuses a run name that would break the tables and logs it
// is printed in: control characters (a newline, an escape sequence), or
// more than 200 bytes.
func CheckRunName(name string) error {
	switch {
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("run name %q: use a name without control characters (newlines, tabs, escape sequences)", name)
	case !utf8.ValidString(name):
		return fmt.Errorf("run name %q: use a name in UTF-8", name)
	case len(name) > 200:
		return fmt.Errorf("run name %.40q...: use a name of at most 200 bytes", name)
	}
	return nil
}

// UpdateRun writes the run's mutable fields: name, state, stop reason and
// detail, configuration and models (with the objective and the planned
// meta-prompting start), RNG and bandit state, iterations, active time,
// sessions and the track's folder (a resumed run may find it elsewhere).
func (t *runTx) UpdateRun(r *Run) error {
	if err := CheckRunName(r.Name); err != nil {
		return fmt.Errorf("update run %d: %w", r.ID, err)
	}
	r.UpdatedAt = t.now
	var finished any
	if !r.FinishedAt.IsZero() {
		finished = r.FinishedAt.UnixMilli()
	}
	_, err := t.tx.ExecContext(t.ctx, `UPDATE runs SET state = $1, stop_reason = $2, stop_detail = $3, rng = $4, bandit = $5,
		iterations = $6, active_ms = $7, sessions = $8, updated_at = $9, finished_at = $10, config = $11, models = $12, name = $13,
		objective = $14, meta_start = $15, track_dir = $16 WHERE id = $17`,
		r.State, r.StopReason, r.StopDetail, r.RNG, jsonText(r.Bandit, "{}"), r.Iterations, r.ActiveMs, r.Sessions,
		r.UpdatedAt.UnixMilli(), finished, jsonText(r.Config, "{}"), jsonText(r.Models, "[]"), r.Name, r.Objective, r.MetaStart,
		r.TrackDir, r.ID)
	if err != nil {
		return fmt.Errorf("update run %d: %w", r.ID, err)
	}
	return nil
}

// InsertIteration records an iteration.
func (t *runTx) InsertIteration(it *Iteration) error {
	if it.CreatedAt.IsZero() {
		it.CreatedAt = t.now
	}
	top, _ := json.Marshal(nonNil(it.TopIDs))
	div, _ := json.Marshal(nonNil(it.DiverseIDs))
	_, err := t.tx.ExecContext(t.ctx, `INSERT INTO run_iterations (run_id, iteration, island, parent_id, top_ids, diverse_ids, stage, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		it.RunID, it.Iteration, it.Island, nullID(it.ParentID), string(top), string(div), it.Stage, it.CreatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("record iteration %d: %w", it.Iteration, err)
	}
	return nil
}

// FinishIteration marks an iteration done.
func (t *runTx) FinishIteration(runID int64, iteration int) error {
	_, err := t.tx.ExecContext(t.ctx, `UPDATE run_iterations SET done_at = $1 WHERE run_id = $2 AND iteration = $3 AND done_at IS NULL`,
		t.now.UnixMilli(), runID, iteration)
	if err != nil {
		return fmt.Errorf("finish iteration %d: %w", iteration, err)
	}
	return nil
}

// nullables returns the member's program hash and end time as stored:
// NULL for none.
func (c *Child) nullables() (hash, finished any) {
	if c.ProgramHash != "" {
		hash = c.ProgramHash
	}
	if !c.FinishedAt.IsZero() {
		finished = c.FinishedAt.UnixMilli()
	}
	return hash, finished
}

// InsertChild records a new member with every field, in one statement
// (each statement that writes a member rewrites its row and its indexes),
// and sets c.ID.
func (t *runTx) InsertChild(c *Child) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = t.now
	}
	c.UpdatedAt = t.now
	hash, finished := c.nullables()
	err := t.tx.QueryRowContext(t.ctx, `INSERT INTO run_children (run_id, iteration, slot, island, parent_id, origin, source_id, model, stage,
		template, seed, state, program_hash, norm_hash, description, idea, fix_attempts, verdict, reason, error, fast_evaluation_id,
		evaluation_id, val_loss, train_time_ms, step_avg_ms, score, summary, input_tokens, output_tokens, cost_usd, created_at,
		updated_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
		$21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33) RETURNING id`,
		c.RunID, c.Iteration, c.Slot, c.Island, nullID(c.ParentID), c.Origin, nullID(c.SourceID), c.Model, c.Stage,
		c.Template, int64(c.Seed), c.State, hash, c.NormHash, c.Description, c.Idea, c.FixAttempts, c.Verdict, c.Reason, c.Error,
		nullID(c.FastEvaluationID), nullID(c.EvaluationID), nullZero(c.ValLoss), nullZero(c.TrainTimeMs), nullZero(c.StepAvgMs),
		nullZero(c.Score), c.Summary, c.InputTokens, c.OutputTokens, c.CostUSD, c.CreatedAt.UnixMilli(), c.UpdatedAt.UnixMilli(),
		finished).Scan(&c.ID)
	if err != nil {
		return fmt.Errorf("record child: %w", err)
	}
	return nil
}

// UpdateChild writes every mutable field of c (its stage and template
// too: a child whose model left the ensemble, or gave no idea, is asked
// with another prompt).
func (t *runTx) UpdateChild(c *Child) error {
	c.UpdatedAt = t.now
	hash, finished := c.nullables()
	_, err := t.tx.ExecContext(t.ctx, `UPDATE run_children SET island = $1, model = $2, state = $3, program_hash = $4, norm_hash = $5,
		description = $6, idea = $7, fix_attempts = $8, verdict = $9, reason = $10, error = $11, fast_evaluation_id = $12,
		evaluation_id = $13, val_loss = $14, train_time_ms = $15, step_avg_ms = $16, score = $17, summary = $18,
		input_tokens = $19, output_tokens = $20, cost_usd = $21, updated_at = $22, finished_at = $23, source_id = $24,
		stage = $26, template = $27 WHERE id = $25`,
		c.Island, c.Model, c.State, hash, c.NormHash, c.Description, c.Idea, c.FixAttempts, c.Verdict, c.Reason, c.Error,
		nullID(c.FastEvaluationID), nullID(c.EvaluationID), nullZero(c.ValLoss), nullZero(c.TrainTimeMs), nullZero(c.StepAvgMs),
		nullZero(c.Score), c.Summary, c.InputTokens, c.OutputTokens, c.CostUSD, c.UpdatedAt.UnixMilli(), finished,
		nullID(c.SourceID), c.ID, c.Stage, c.Template)
	if err != nil {
		return fmt.Errorf("update child %d: %w", c.ID, err)
	}
	return nil
}

// InsertAttempt records a step of a child and sets a.ID.
func (t *runTx) InsertAttempt(a *Attempt) error {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = t.now
	}
	var hash any
	if a.ProgramHash != "" {
		hash = a.ProgramHash
	}
	err := t.tx.QueryRowContext(t.ctx, `INSERT INTO run_attempts (child_id, attempt, kind, llm_call_id, program_hash, edit, error,
		fast_evaluation_id, fast_verdict, fast_reason, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		a.ChildID, a.Attempt, a.Kind, nullID(a.LLMCallID), hash, a.Edit, a.Error, nullID(a.FastEvaluationID), a.FastVerdict,
		a.FastReason, a.CreatedAt.UnixMilli()).Scan(&a.ID)
	if err != nil {
		return fmt.Errorf("record attempt of child %d: %w", a.ChildID, err)
	}
	return nil
}

// SetAttemptFast records the fast check of an attempt's program.
func (t *runTx) SetAttemptFast(attemptID, evaluationID int64, verdict runs.Verdict, reason string) error {
	_, err := t.tx.ExecContext(t.ctx, `UPDATE run_attempts SET fast_evaluation_id = $1, fast_verdict = $2, fast_reason = $3 WHERE id = $4`,
		nullID(evaluationID), verdict, reason, attemptID)
	if err != nil {
		return fmt.Errorf("record fast check of attempt %d: %w", attemptID, err)
	}
	return nil
}

// SetArchive replaces the run's elite archive with ids, best first.
func (t *runTx) SetArchive(runID int64, ids []int64) error {
	if _, err := t.tx.ExecContext(t.ctx, `DELETE FROM run_archive WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("update archive: %w", err)
	}
	for i, id := range ids {
		if _, err := t.tx.ExecContext(t.ctx, `INSERT INTO run_archive (run_id, child_id, position) VALUES ($1, $2, $3)`, runID, id, i); err != nil {
			return fmt.Errorf("update archive: %w", err)
		}
	}
	return nil
}

// AddEvent records an event. An event whose non-empty key exists already
// is not recorded again, and AddEvent reports false.
func (t *runTx) AddEvent(e *RunEvent) (bool, error) {
	if e.At.IsZero() {
		e.At = t.now
	}
	res, err := t.tx.ExecContext(t.ctx, `INSERT INTO run_events (run_id, kind, key, iteration, detail, at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT DO NOTHING`, e.RunID, e.Kind, e.Key, e.Iteration, jsonText(e.Detail, "{}"), e.At.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("record %s event: %w", e.Kind, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

const childColumns = `id, run_id, iteration, slot, island, parent_id, origin, source_id, model, stage, template, seed, state,
	program_hash, norm_hash, description, idea, fix_attempts, verdict, reason, error, fast_evaluation_id, evaluation_id,
	val_loss, train_time_ms, step_avg_ms, score, summary, input_tokens, output_tokens, cost_usd, created_at, updated_at, finished_at`

func scanChild(r scanner) (*Child, error) {
	var c Child
	var parent, source, fastEval, evalID, finished sql.NullInt64
	var hash sql.NullString
	var seed, created, updated int64
	var loss, trainMs, stepAvg, score sql.NullFloat64
	err := r.Scan(&c.ID, &c.RunID, &c.Iteration, &c.Slot, &c.Island, &parent, &c.Origin, &source, &c.Model, &c.Stage,
		&c.Template, &seed, &c.State, &hash, &c.NormHash, &c.Description, &c.Idea, &c.FixAttempts, &c.Verdict, &c.Reason,
		&c.Error, &fastEval, &evalID, &loss, &trainMs, &stepAvg, &score, &c.Summary, &c.InputTokens, &c.OutputTokens,
		&c.CostUSD, &created, &updated, &finished)
	if err != nil {
		return nil, err
	}
	c.ParentID, c.SourceID, c.FastEvaluationID, c.EvaluationID = parent.Int64, source.Int64, fastEval.Int64, evalID.Int64
	c.ProgramHash, c.Seed = hash.String, uint64(seed)
	c.ValLoss, c.TrainTimeMs, c.StepAvgMs, c.Score = loss.Float64, trainMs.Float64, stepAvg.Float64, score.Float64
	c.CreatedAt, c.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	if finished.Valid {
		c.FinishedAt = time.UnixMilli(finished.Int64)
	}
	return &c, nil
}

// Children returns every member of a run, in the order they were created.
func (s *sqlStore) Children(ctx context.Context, runID int64) ([]*Child, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+childColumns+` FROM run_children WHERE run_id = $1 ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("list children of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*Child
	for rows.Next() {
		c, err := scanChild(rows)
		if err != nil {
			return nil, fmt.Errorf("list children of run %d: %w", runID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ChildrenSince returns the members of a run written at or after since,
// in the order they were written (see RunStore).
func (s *sqlStore) ChildrenSince(ctx context.Context, runID int64, since time.Time) ([]*Child, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+childColumns+` FROM run_children WHERE run_id = $1 AND updated_at >= $2
		ORDER BY updated_at, id`, runID, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("list changed children of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*Child
	for rows.Next() {
		c, err := scanChild(rows)
		if err != nil {
			return nil, fmt.Errorf("list changed children of run %d: %w", runID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Child returns one member.
func (s *sqlStore) Child(ctx context.Context, id int64) (*Child, error) {
	c, err := scanChild(s.db.QueryRowContext(ctx, `SELECT `+childColumns+` FROM run_children WHERE id = $1`, id))
	if notFound(err) {
		return nil, fmt.Errorf("child %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read child %d: %w", id, err)
	}
	return c, nil
}

// Iterations returns a run's iterations in order.
func (s *sqlStore) Iterations(ctx context.Context, runID int64) ([]*Iteration, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT iteration, island, parent_id, top_ids, diverse_ids, stage, created_at, done_at
		FROM run_iterations WHERE run_id = $1 ORDER BY iteration`, runID)
	if err != nil {
		return nil, fmt.Errorf("list iterations of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*Iteration
	for rows.Next() {
		it := &Iteration{RunID: runID}
		var parent, done sql.NullInt64
		var top, div string
		var created int64
		if err := rows.Scan(&it.Iteration, &it.Island, &parent, &top, &div, &it.Stage, &created, &done); err != nil {
			return nil, fmt.Errorf("list iterations of run %d: %w", runID, err)
		}
		it.ParentID = parent.Int64
		if err := json.Unmarshal([]byte(top), &it.TopIDs); err != nil {
			return nil, fmt.Errorf("iteration %d: top ids: %w", it.Iteration, err)
		}
		if err := json.Unmarshal([]byte(div), &it.DiverseIDs); err != nil {
			return nil, fmt.Errorf("iteration %d: diverse ids: %w", it.Iteration, err)
		}
		it.CreatedAt = time.UnixMilli(created)
		if done.Valid {
			it.DoneAt = time.UnixMilli(done.Int64)
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// Attempts returns the attempts of a run's children, by child then order.
func (s *sqlStore) Attempts(ctx context.Context, runID int64) ([]*Attempt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.id, a.child_id, a.attempt, a.kind, a.llm_call_id, a.program_hash, a.edit, a.error,
		a.fast_evaluation_id, a.fast_verdict, a.fast_reason, a.created_at
		FROM run_attempts a JOIN run_children c ON c.id = a.child_id WHERE c.run_id = $1 ORDER BY a.child_id, a.id`, runID)
	if err != nil {
		return nil, fmt.Errorf("list attempts of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*Attempt
	for rows.Next() {
		var a Attempt
		var call, fast sql.NullInt64
		var hash sql.NullString
		var created int64
		if err := rows.Scan(&a.ID, &a.ChildID, &a.Attempt, &a.Kind, &call, &hash, &a.Edit, &a.Error, &fast, &a.FastVerdict,
			&a.FastReason, &created); err != nil {
			return nil, fmt.Errorf("list attempts of run %d: %w", runID, err)
		}
		a.LLMCallID, a.FastEvaluationID, a.ProgramHash = call.Int64, fast.Int64, hash.String
		a.CreatedAt = time.UnixMilli(created)
		out = append(out, &a)
	}
	return out, rows.Err()
}

// Archive returns the ids of the run's elite archive, best first.
func (s *sqlStore) Archive(ctx context.Context, runID int64) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT child_id FROM run_archive WHERE run_id = $1 ORDER BY position`, runID)
	if err != nil {
		return nil, fmt.Errorf("read archive of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// RunEvents returns a run's events of a kind ("" for all), in order.
func (s *sqlStore) RunEvents(ctx context.Context, runID int64, kind string) ([]*RunEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, kind, key, iteration, detail, at FROM run_events
		WHERE run_id = $1 AND ($2 = '' OR kind = $2) ORDER BY id`, runID, kind)
	if err != nil {
		return nil, fmt.Errorf("read events of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*RunEvent
	for rows.Next() {
		e := &RunEvent{RunID: runID}
		var detail string
		var at int64
		if err := rows.Scan(&e.ID, &e.Kind, &e.Key, &e.Iteration, &detail, &at); err != nil {
			return nil, err
		}
		e.Detail, e.At = json.RawMessage(detail), time.UnixMilli(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// AddRunEvent records an event outside a transaction (see RunTx.AddEvent).
func (s *sqlStore) AddRunEvent(ctx context.Context, e *RunEvent) error {
	return s.RunInTx(ctx, func(tx RunTx) error {
		_, err := tx.AddEvent(e)
		return err
	})
}

func jsonText(b json.RawMessage, empty string) string {
	if len(b) == 0 {
		return empty
	}
	return string(b)
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
