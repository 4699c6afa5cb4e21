package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
)

// This file holds the tables of the reproduction benchmark (migration
// 00006): bench runs, their attempts (a task with a seed) and the nodes of
// each attempt's search, the model calls of a node (rows of llm_calls that
// name it), and the calibrated times of a suite's records. The bench
// package decides what to write; these are its queries.

// Bench attempt states.
const (
	AttemptPending = "pending"
	AttemptRunning = "running"
	AttemptDone    = "done"
)

// NodeState is where a node of a bench search stands.
type NodeState string

// Node states, in the order a node passes through them.
const (
	NodeProposing  NodeState = "proposing"  // waits for (or is in) its proposal
	NodeEvaluating NodeState = "evaluating" // has a program that waits for (or is in) its evaluation
	NodeDone       NodeState = "done"       // has its verdict
)

// BenchRun is one `frontier bench run`: a suite under one scaffold, model
// and hint setting, over its tasks and seeds.
type BenchRun struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Suite     string `json:"suite"`
	SuiteHash string `json:"suite_hash"`
	Scaffold  string `json:"scaffold"`
	Model     string `json:"model"`
	Hints     string `json:"hints"`
	// Config is the run's resolved settings (JSON), for the bench package.
	Config     json.RawMessage `json:"config"`
	State      string          `json:"state"` // RunRunning, RunStopped or RunFailed
	StopReason string          `json:"stop_reason"`
	StopDetail string          `json:"stop_detail"`
	ActiveMs   int64           `json:"active_ms"`
	Sessions   int             `json:"sessions"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	UpdatedAt  time.Time       `json:"updated_at,omitzero"`
	FinishedAt time.Time       `json:"finished_at,omitzero"` // zero while running
}

// BenchAttempt is one search of a bench run: a task with a seed.
type BenchAttempt struct {
	ID       int64  `json:"id"`
	RunID    int64  `json:"run_id"`
	Position int    `json:"position"` // the order the run works in
	Task     string `json:"task"`
	Seed     int    `json:"seed"`
	State    string `json:"state"`
	// StartHash is the program the search starts from: the task's start
	// record, or in a cumulative run the best program of the task before.
	StartHash string `json:"start_hash"`
	EvolveRun string `json:"evolve_run"`
	// StartMs and GoalMs are t_i and t_{i+1}, the times the score uses;
	// TimeSource says whether they were calibrated here or published.
	StartMs    float64 `json:"start_ms"`
	GoalMs     float64 `json:"goal_ms"`
	TimeSource string  `json:"time_source"`
	BestNodeID int64   `json:"best_node_id"`
	BestMs     float64 `json:"best_ms"`
	FSR        float64 `json:"fsr"`
	Nodes      int     `json:"nodes"`
	Acceptable int     `json:"acceptable"`
	Buggy      int     `json:"buggy"`
	CostUSD    float64 `json:"cost_usd"`
	Tokens     int64   `json:"tokens"`
	// Retime is the best node re-timed in alternation with the start
	// (bench run --retime K): RetimeN runs of each, their mean train
	// times, Welch's one-sided p that the best is faster, and the
	// evaluations (0 and empty when not re-timed). SingleFSR is the FSR of
	// the search's single timing, kept beside FSR, which is then scored
	// from the series.
	RetimeN           int     `json:"retime_n,omitempty"`
	RetimeStartMs     float64 `json:"retime_start_ms,omitempty"`
	RetimeBestMs      float64 `json:"retime_best_ms,omitempty"`
	RetimeP           float64 `json:"retime_p,omitempty"`
	RetimeEvaluations []int64 `json:"retime_evaluations,omitempty"`
	SingleFSR         float64 `json:"single_fsr,omitempty"`
	// Notes are warnings about the attempt's times, one a line.
	Notes      string    `json:"notes,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// BenchNode is one node of an attempt's search tree.
type BenchNode struct {
	ID         int64     `json:"id"`
	AttemptID  int64     `json:"attempt_id"`
	Seq        int       `json:"seq"` // 0: the start program
	Step       int       `json:"step"`
	ParentID   int64     `json:"parent_id"` // 0: none (the start program)
	Kind       string    `json:"kind"`
	DebugDepth int       `json:"debug_depth"`
	State      NodeState `json:"state"`
	// ProgramHash is empty until the proposal yielded a program.
	ProgramHash  string       `json:"program_hash"`
	NormHash     string       `json:"norm_hash"`
	DuplicateOf  int64        `json:"duplicate_of"`
	Description  string       `json:"description"`
	Error        string       `json:"error"`
	EvaluationID int64        `json:"evaluation_id"`
	Verdict      runs.Verdict `json:"verdict"`
	Reason       string       `json:"reason"`
	ValLoss      float64      `json:"val_loss"` // 0: unknown
	TrainTimeMs  float64      `json:"train_time_ms"`
	InputTokens  int64        `json:"input_tokens"`
	OutputTokens int64        `json:"output_tokens"`
	CostUSD      float64      `json:"cost_usd"`
	CreatedAt    time.Time    `json:"created_at,omitzero"`
	UpdatedAt    time.Time    `json:"updated_at,omitzero"`
}

// Calibration is a record of a suite re-timed on one machine class.
type Calibration struct {
	ID               int64   `json:"id"`
	Suite            string  `json:"suite"`
	Record           string  `json:"record"`
	ProgramHash      string  `json:"program_hash"`
	Track            string  `json:"track"`
	TrackHash        string  `json:"track_hash"`
	FingerprintClass string  `json:"fingerprint_class"`
	N                int     `json:"n"`
	MeanMs           float64 `json:"mean_ms"`
	SDMs             float64 `json:"sd_ms"`
	LoMs             float64 `json:"lo_ms"` // the 95% interval of the mean
	HiMs             float64 `json:"hi_ms"`
	ValLoss          float64 `json:"val_loss"` // mean
	EvaluationIDs    []int64 `json:"evaluation_ids"`
	// Conditions are the machine's state while it was taken; CreatedAt
	// is when it ended.
	Conditions Conditions `json:"conditions"`
	CreatedAt  time.Time  `json:"created_at,omitzero"`
}

// Conditions are what is known of a machine's state while something was
// measured (runs.Conditions). They are stored as JSON, so that what is
// recorded can grow.
type Conditions = runs.Conditions

// CPUUse is a measured job's CPU time beside the machine's
// (runs.CPUUse).
type CPUUse = runs.CPUUse

// CreateBenchRun inserts r and sets r.ID. An empty name becomes
// "bench-<id>".
func (s *sqlStore) CreateBenchRun(ctx context.Context, r *BenchRun) error {
	now := time.Now()
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	r.UpdatedAt = now
	if r.State == "" {
		r.State = RunRunning
	}
	if err := CheckRunName(r.Name); err != nil {
		return fmt.Errorf("record bench run: %w", err)
	}
	// f may run twice (see write): it sets r's id and name only from the
	// transaction that was committed.
	var id int64
	var name string
	err := s.write(ctx, func() error {
		name = r.Name
		if name == "" {
			name = fmt.Sprintf("bench-pending-%d", now.UnixNano())
		}
		tx, err := s.db.BeginTx(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		err = tx.QueryRowContext(ctx, `INSERT INTO bench_runs (name, suite, suite_hash, scaffold, model, hints, config, state,
			started_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			name, r.Suite, r.SuiteHash, r.Scaffold, r.Model, r.Hints, jsonText(r.Config, "{}"), r.State,
			r.StartedAt.UnixMilli(), r.UpdatedAt.UnixMilli()).Scan(&id)
		if err != nil {
			return err
		}
		if r.Name == "" {
			name = "bench-" + strconv.FormatInt(id, 10)
			if _, err := tx.ExecContext(ctx, `UPDATE bench_runs SET name = $1 WHERE id = $2`, name, id); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	if err != nil {
		if s.unique(err) {
			return fmt.Errorf("record bench run: a bench run named %q exists already; choose another name (--name) or resume it (--resume)", name)
		}
		return fmt.Errorf("record bench run %q: %w", name, err)
	}
	r.ID, r.Name = id, name
	return nil
}

// UpdateBenchRun writes r's state, stop reason, time and sessions.
func (s *sqlStore) UpdateBenchRun(ctx context.Context, r *BenchRun) error {
	r.UpdatedAt = time.Now()
	var finished any
	if !r.FinishedAt.IsZero() {
		finished = r.FinishedAt.UnixMilli()
	}
	var n int64
	err := s.write(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE bench_runs SET state = $1, stop_reason = $2, stop_detail = $3, active_ms = $4,
			sessions = $5, updated_at = $6, finished_at = $7 WHERE id = $8`,
			r.State, r.StopReason, r.StopDetail, r.ActiveMs, r.Sessions, r.UpdatedAt.UnixMilli(), finished, r.ID)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update bench run %d: %w", r.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("update bench run %d: %w", r.ID, ErrNotFound)
	}
	return nil
}

const benchRunColumns = `id, name, suite, suite_hash, scaffold, model, hints, config, state, stop_reason, stop_detail,
	active_ms, sessions, started_at, updated_at, finished_at`

func scanBenchRun(r scanner) (*BenchRun, error) {
	var b BenchRun
	var cfg string
	var started, updated int64
	var finished sql.NullInt64
	if err := r.Scan(&b.ID, &b.Name, &b.Suite, &b.SuiteHash, &b.Scaffold, &b.Model, &b.Hints, &cfg, &b.State, &b.StopReason,
		&b.StopDetail, &b.ActiveMs, &b.Sessions, &started, &updated, &finished); err != nil {
		return nil, err
	}
	b.Config = json.RawMessage(cfg)
	b.StartedAt, b.UpdatedAt = time.UnixMilli(started), time.UnixMilli(updated)
	if finished.Valid {
		b.FinishedAt = time.UnixMilli(finished.Int64)
	}
	return &b, nil
}

// BenchRun returns the bench run named ref, or with id ref.
func (s *sqlStore) BenchRun(ctx context.Context, ref string) (*BenchRun, error) {
	q := `SELECT ` + benchRunColumns + ` FROM bench_runs WHERE name = $1`
	arg := any(ref)
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		q, arg = `SELECT `+benchRunColumns+` FROM bench_runs WHERE id = $1`, id
	}
	r, err := scanBenchRun(s.db.QueryRowContext(ctx, q, arg))
	if notFound(err) {
		return nil, fmt.Errorf("bench run %q: %w (list bench runs with: frontier bench runs)", ref, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read bench run %q: %w", ref, err)
	}
	return r, nil
}

// BenchRuns lists the bench runs, oldest first.
func (s *sqlStore) BenchRuns(ctx context.Context) ([]*BenchRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+benchRunColumns+` FROM bench_runs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list bench runs: %w", err)
	}
	defer rows.Close()
	var out []*BenchRun
	for rows.Next() {
		r, err := scanBenchRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list bench runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// InsertBenchAttempts records a run's planned attempts in one transaction
// and sets their ids.
func (s *sqlStore) InsertBenchAttempts(ctx context.Context, as []*BenchAttempt) error {
	for _, a := range as {
		if a.State == "" {
			a.State = AttemptPending
		}
	}
	ids := make([]int64, len(as))
	err := s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for i, a := range as {
			err := tx.QueryRowContext(ctx, `INSERT INTO bench_attempts (run_id, position, task, seed, state, start_hash)
				VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
				a.RunID, a.Position, a.Task, a.Seed, a.State, nullText(a.StartHash)).Scan(&ids[i])
			if err != nil {
				return fmt.Errorf("bench attempt %s seed %d: %w", a.Task, a.Seed, err)
			}
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("record bench attempts: %w", err)
	}
	for i, a := range as {
		a.ID = ids[i]
	}
	return nil
}

// UpdateBenchAttempt writes everything of a but its run, position, task
// and seed.
func (s *sqlStore) UpdateBenchAttempt(ctx context.Context, a *BenchAttempt) error {
	var n int64
	revs, _ := json.Marshal(nonNil(a.RetimeEvaluations))
	err := s.write(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE bench_attempts SET state = $1, start_hash = $2, evolve_run = $3, start_ms = $4,
			goal_ms = $5, time_source = $6, best_node_id = $7, best_ms = $8, fsr = $9, nodes = $10, acceptable = $11, buggy = $12,
			cost_usd = $13, tokens = $14, started_at = $15, finished_at = $16, retime_n = $18, retime_start_ms = $19,
			retime_best_ms = $20, retime_p = $21, retime_evaluations = $22, single_fsr = $23, notes = $24 WHERE id = $17`,
			a.State, nullText(a.StartHash), a.EvolveRun, a.StartMs, a.GoalMs, a.TimeSource, nullID(a.BestNodeID), a.BestMs, a.FSR,
			a.Nodes, a.Acceptable, a.Buggy, a.CostUSD, a.Tokens, nullTime(a.StartedAt), nullTime(a.FinishedAt), a.ID,
			a.RetimeN, nullZero(a.RetimeStartMs), nullZero(a.RetimeBestMs), nullZero(a.RetimeP), string(revs), nullZero(a.SingleFSR), a.Notes)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update bench attempt %d: %w", a.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("update bench attempt %d: %w", a.ID, ErrNotFound)
	}
	return nil
}

// BenchAttempts returns a run's attempts in their order.
func (s *sqlStore) BenchAttempts(ctx context.Context, runID int64) ([]*BenchAttempt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, run_id, position, task, seed, state, COALESCE(start_hash, ''), evolve_run,
		start_ms, goal_ms, time_source, COALESCE(best_node_id, 0), best_ms, fsr, nodes, acceptable, buggy, cost_usd, tokens,
		started_at, finished_at, retime_n, COALESCE(retime_start_ms, 0), COALESCE(retime_best_ms, 0), COALESCE(retime_p, 0),
		retime_evaluations, COALESCE(single_fsr, 0), notes FROM bench_attempts WHERE run_id = $1 ORDER BY position`, runID)
	if err != nil {
		return nil, fmt.Errorf("list attempts of bench run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*BenchAttempt
	for rows.Next() {
		var a BenchAttempt
		var started, finished sql.NullInt64
		var revs string
		if err := rows.Scan(&a.ID, &a.RunID, &a.Position, &a.Task, &a.Seed, &a.State, &a.StartHash, &a.EvolveRun, &a.StartMs,
			&a.GoalMs, &a.TimeSource, &a.BestNodeID, &a.BestMs, &a.FSR, &a.Nodes, &a.Acceptable, &a.Buggy, &a.CostUSD, &a.Tokens,
			&started, &finished, &a.RetimeN, &a.RetimeStartMs, &a.RetimeBestMs, &a.RetimeP, &revs, &a.SingleFSR, &a.Notes); err != nil {
			return nil, fmt.Errorf("list attempts of bench run %d: %w", runID, err)
		}
		if err := json.Unmarshal([]byte(revs), &a.RetimeEvaluations); err != nil {
			return nil, fmt.Errorf("bench attempt %d: its re-timing evaluations are unreadable: %w", a.ID, err)
		}
		a.StartedAt, a.FinishedAt = timeOf(started), timeOf(finished)
		out = append(out, &a)
	}
	return out, rows.Err()
}

// InsertBenchNode records a node and sets n.ID.
func (s *sqlStore) InsertBenchNode(ctx context.Context, n *BenchNode) error {
	now := time.Now()
	n.CreatedAt, n.UpdatedAt = now, now
	err := s.write(ctx, func() error {
		return s.db.QueryRowContext(ctx, `INSERT INTO bench_nodes (attempt_id, seq, step, parent_id, kind, debug_depth, state,
			program_hash, norm_hash, duplicate_of, description, error, evaluation_id, verdict, reason, val_loss, train_time_ms,
			input_tokens, output_tokens, cost_usd, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) RETURNING id`,
			n.AttemptID, n.Seq, n.Step, nullID(n.ParentID), n.Kind, n.DebugDepth, n.State, nullText(n.ProgramHash), n.NormHash,
			nullID(n.DuplicateOf), n.Description, n.Error, nullID(n.EvaluationID), n.Verdict, n.Reason, nullZero(n.ValLoss),
			nullZero(n.TrainTimeMs), n.InputTokens, n.OutputTokens, n.CostUSD, now.UnixMilli(), now.UnixMilli()).Scan(&n.ID)
	})
	if err != nil {
		return fmt.Errorf("record node %d of bench attempt %d: %w", n.Seq, n.AttemptID, err)
	}
	return nil
}

// UpdateBenchNode writes what a node's proposal and evaluation changed.
func (s *sqlStore) UpdateBenchNode(ctx context.Context, n *BenchNode) error {
	n.UpdatedAt = time.Now()
	var k int64
	err := s.write(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE bench_nodes SET state = $1, program_hash = $2, norm_hash = $3, duplicate_of = $4,
			description = $5, error = $6, evaluation_id = $7, verdict = $8, reason = $9, val_loss = $10, train_time_ms = $11,
			input_tokens = $12, output_tokens = $13, cost_usd = $14, updated_at = $15 WHERE id = $16`,
			n.State, nullText(n.ProgramHash), n.NormHash, nullID(n.DuplicateOf), n.Description, n.Error, nullID(n.EvaluationID),
			n.Verdict, n.Reason, nullZero(n.ValLoss), nullZero(n.TrainTimeMs), n.InputTokens, n.OutputTokens, n.CostUSD,
			n.UpdatedAt.UnixMilli(), n.ID)
		if err == nil {
			k, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update bench node %d: %w", n.ID, err)
	}
	if k == 0 {
		return fmt.Errorf("update bench node %d: %w", n.ID, ErrNotFound)
	}
	return nil
}

// BenchNodes returns an attempt's nodes in the order they were made.
func (s *sqlStore) BenchNodes(ctx context.Context, attemptID int64) ([]*BenchNode, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, attempt_id, seq, step, COALESCE(parent_id, 0), kind, debug_depth, state,
		COALESCE(program_hash, ''), norm_hash, COALESCE(duplicate_of, 0), description, error, COALESCE(evaluation_id, 0), verdict,
		reason, val_loss, train_time_ms, input_tokens, output_tokens, cost_usd, created_at, updated_at
		FROM bench_nodes WHERE attempt_id = $1 ORDER BY seq`, attemptID)
	if err != nil {
		return nil, fmt.Errorf("list nodes of bench attempt %d: %w", attemptID, err)
	}
	defer rows.Close()
	var out []*BenchNode
	for rows.Next() {
		var n BenchNode
		var loss, ms sql.NullFloat64
		var created, updated int64
		if err := rows.Scan(&n.ID, &n.AttemptID, &n.Seq, &n.Step, &n.ParentID, &n.Kind, &n.DebugDepth, &n.State, &n.ProgramHash,
			&n.NormHash, &n.DuplicateOf, &n.Description, &n.Error, &n.EvaluationID, &n.Verdict, &n.Reason, &loss, &ms,
			&n.InputTokens, &n.OutputTokens, &n.CostUSD, &created, &updated); err != nil {
			return nil, fmt.Errorf("list nodes of bench attempt %d: %w", attemptID, err)
		}
		n.ValLoss, n.TrainTimeMs = loss.Float64, ms.Float64
		n.CreatedAt, n.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
		out = append(out, &n)
	}
	return out, rows.Err()
}

// InsertBenchCall records a model call of bench node nodeID before it is
// sent and sets c.ID; FinishLLMCall records its answer. c.RunID must be 0:
// the call belongs to a bench run, not an evolution run.
func (s *sqlStore) InsertBenchCall(ctx context.Context, nodeID int64, c *LLMCall) error {
	if c.RunID != 0 {
		return fmt.Errorf("record model call of bench node %d: it names evolution run %d", nodeID, c.RunID)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	if c.State == "" {
		c.State = CallPending
	}
	c.BenchNodeID = nodeID
	err := s.write(ctx, func() error {
		req, err := s.contentText(ctx, c.Request)
		if err != nil {
			return err
		}
		err = s.inTx(ctx, func(tx sqlTx) error {
			if err := req.writeIf(ctx, tx); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, `INSERT INTO llm_calls (bench_node_id, purpose, model, state, request_hash, created_at)
				VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
				nodeID, c.Purpose, c.Model, c.State, req.hashOf(), c.CreatedAt.UnixMilli()).Scan(&c.ID)
		})
		if err == nil {
			req.stored(&s.known)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record model call of bench node %d: %w", nodeID, err)
	}
	return nil
}

// BenchCalls returns the model calls of an attempt's nodes in order. With
// text false the request and answer are left empty.
func (s *sqlStore) BenchCalls(ctx context.Context, attemptID int64, text bool) ([]*LLMCall, error) {
	out, err := s.calls(ctx, text, `SELECT `+callColumns+` FROM llm_calls c JOIN bench_nodes n ON n.id = c.bench_node_id
		WHERE n.attempt_id = $1 ORDER BY c.id`, attemptID)
	if err != nil {
		return nil, fmt.Errorf("list model calls of bench attempt %d: %w", attemptID, err)
	}
	return out, nil
}

// MarkLostBenchCalls marks the calls of a bench run that never got an
// answer recorded as lost, and returns how many there were.
func (s *sqlStore) MarkLostBenchCalls(ctx context.Context, runID int64) (int64, error) {
	var n int64
	err := s.write(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE llm_calls SET state = $1, error = $2, finished_at = $3 WHERE state = $4
			AND bench_node_id IN (SELECT n.id FROM bench_nodes n JOIN bench_attempts a ON a.id = n.attempt_id WHERE a.run_id = $5)`,
			CallLost, "the process ended while the call was in flight; its answer and cost are unknown", time.Now().UnixMilli(),
			CallPending, runID)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark lost model calls of bench run %d: %w", runID, err)
	}
	return n, nil
}

// BenchSpend sums a bench run's model calls: cost, input plus output
// tokens, and calls. The calls of its evolve scaffold's runs are not
// included (see RunSpend).
func (s *sqlStore) BenchSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(c.cost_usd), 0), CAST(COALESCE(SUM(c.input_tokens + c.output_tokens), 0) AS BIGINT),
		COUNT(*) FROM llm_calls c JOIN bench_nodes n ON n.id = c.bench_node_id JOIN bench_attempts a ON a.id = n.attempt_id
		WHERE a.run_id = $1`, runID).Scan(&usd, &tokens, &calls)
	if err != nil {
		err = fmt.Errorf("sum spending of bench run %d: %w", runID, err)
	}
	return usd, tokens, calls, err
}

// PutCalibration records a calibrated record and sets c.ID.
func (s *sqlStore) PutCalibration(ctx context.Context, c *Calibration) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	ids, _ := json.Marshal(nonNil(c.EvaluationIDs))
	cond, err := json.Marshal(c.Conditions)
	if err != nil {
		return fmt.Errorf("record calibration of %s/%s: %w", c.Suite, c.Record, err)
	}
	err = s.write(ctx, func() error {
		return s.db.QueryRowContext(ctx, `INSERT INTO bench_calibrations (suite, record, program_hash, track, track_hash,
			fingerprint_class, n, mean_ms, sd_ms, lo_ms, hi_ms, val_loss, evaluation_ids, created_at, conditions)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
			c.Suite, c.Record, c.ProgramHash, c.Track, c.TrackHash, c.FingerprintClass, c.N, c.MeanMs, c.SDMs, c.LoMs, c.HiMs,
			c.ValLoss, string(ids), c.CreatedAt.UnixMilli(), string(cond)).Scan(&c.ID)
	})
	if err != nil {
		return fmt.Errorf("record calibration of %s/%s: %w", c.Suite, c.Record, err)
	}
	return nil
}

// Calibrations returns the newest calibration of each record of a suite
// on a machine class (every class when class is ""), by record.
func (s *sqlStore) Calibrations(ctx context.Context, suite, class string) ([]*Calibration, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, suite, record, program_hash, track, track_hash, fingerprint_class, n,
		mean_ms, sd_ms, lo_ms, hi_ms, val_loss, evaluation_ids, created_at, conditions FROM bench_calibrations c
		WHERE suite = $1 AND ($2 = '' OR fingerprint_class = $2) AND id = (SELECT MAX(id) FROM bench_calibrations d
		WHERE d.suite = c.suite AND d.record = c.record AND d.program_hash = c.program_hash AND d.track_hash = c.track_hash
		AND d.fingerprint_class = c.fingerprint_class) ORDER BY record, id`, suite, class)
	if err != nil {
		return nil, fmt.Errorf("list calibrations of suite %s: %w", suite, err)
	}
	defer rows.Close()
	var out []*Calibration
	for rows.Next() {
		var c Calibration
		var ids, cond string
		var created int64
		if err := rows.Scan(&c.ID, &c.Suite, &c.Record, &c.ProgramHash, &c.Track, &c.TrackHash, &c.FingerprintClass, &c.N,
			&c.MeanMs, &c.SDMs, &c.LoMs, &c.HiMs, &c.ValLoss, &ids, &created, &cond); err != nil {
			return nil, fmt.Errorf("list calibrations of suite %s: %w", suite, err)
		}
		if err := json.Unmarshal([]byte(ids), &c.EvaluationIDs); err != nil {
			return nil, fmt.Errorf("calibration %d: its evaluation ids are unreadable: %w", c.ID, err)
		}
		if err := json.Unmarshal([]byte(cond), &c.Conditions); err != nil {
			return nil, fmt.Errorf("calibration %d: its conditions are unreadable: %w", c.ID, err)
		}
		c.CreatedAt = time.UnixMilli(created)
		out = append(out, &c)
	}
	return out, rows.Err()
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func timeOf(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int64)
}
