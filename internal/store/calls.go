package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Model calls: each recorded before it is sent, then its answer, usage
// and cost; a call still pending when a run resumes was cut off.

// LLM call states.
const (
	CallPending = "pending"
	CallDone    = "done"
	CallFailed  = "failed"
	CallLost    = "lost"
)

// LLMCall is one model call.
type LLMCall struct {
	ID              int64
	RunID           int64
	ChildID         int64
	Purpose         string
	Model           string
	State           string
	Request         string // JSON, redacted
	Answer          string // redacted
	Error           string
	ServerModel     string
	Provider        string
	FinishReason    string
	InputTokens     int64
	OutputTokens    int64
	ReasoningTokens int64
	CachedTokens    int64
	Estimated       bool
	CostUSD         float64
	PriceUnknown    bool
	LatencyMs       float64
	Attempts        int
	RequestID       string
	CreatedAt       time.Time
	FinishedAt      time.Time

	// BenchNodeID is the bench node the call belongs to (InsertBenchCall),
	// 0 for the calls of evolution runs.
	BenchNodeID int64
}

// InsertLLMCall records a call before it is sent and sets c.ID. The
// request is stored by content (content.go): what it repeats of the
// prompts before it (the contract, the parent program) is not stored again.
func (s *sqlStore) InsertLLMCall(ctx context.Context, c *LLMCall) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	if c.State == "" {
		c.State = CallPending
	}
	err := s.write(ctx, func() error {
		req, err := s.contentText(ctx, c.Request)
		if err != nil {
			return err
		}
		err = s.inTx(ctx, func(tx sqlTx) error {
			if err := req.writeIf(ctx, tx); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, `INSERT INTO llm_calls (run_id, child_id, purpose, model, state, request_hash, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
				nullID(c.RunID), nullID(c.ChildID), c.Purpose, c.Model, c.State, req.hashOf(), c.CreatedAt.UnixMilli()).Scan(&c.ID)
		})
		if err == nil {
			req.stored(&s.known)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record model call: %w", err)
	}
	return nil
}

// FinishLLMCall records a call's answer or failure.
func (s *sqlStore) FinishLLMCall(ctx context.Context, c *LLMCall) error {
	if c.FinishedAt.IsZero() {
		c.FinishedAt = time.Now()
	}
	err := s.write(ctx, func() error {
		ans, err := s.contentText(ctx, c.Answer)
		if err != nil {
			return err
		}
		err = s.inTx(ctx, func(tx sqlTx) error {
			if err := ans.writeIf(ctx, tx); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `UPDATE llm_calls SET state = $1, answer_hash = $2, error = $3, server_model = $4, provider = $5,
				finish_reason = $6, input_tokens = $7, output_tokens = $8, reasoning_tokens = $9, cached_tokens = $10, estimated = $11,
				cost_usd = $12, price_unknown = $13, latency_ms = $14, attempts = $15, request_id = $16, finished_at = $17 WHERE id = $18`,
				c.State, ans.hashOf(), c.Error, c.ServerModel, c.Provider, c.FinishReason, c.InputTokens, c.OutputTokens, c.ReasoningTokens,
				c.CachedTokens, c.Estimated, c.CostUSD, c.PriceUnknown, c.LatencyMs, c.Attempts, c.RequestID, c.FinishedAt.UnixMilli(), c.ID)
			return err
		})
		if err == nil {
			ans.stored(&s.known)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record answer of model call %d: %w", c.ID, err)
	}
	return nil
}

// MarkLostCalls marks the run's calls that never got an answer recorded
// (the process died while they were in flight) as lost, and returns how
// many there were.
func (s *sqlStore) MarkLostCalls(ctx context.Context, runID int64) (int64, error) {
	var n int64
	err := s.write(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE llm_calls SET state = $1, error = $2, finished_at = $3 WHERE run_id = $4 AND state = $5`,
			CallLost, "the process ended while the call was in flight; its answer and cost are unknown", time.Now().UnixMilli(), runID, CallPending)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark lost model calls: %w", err)
	}
	return n, nil
}

// LLMCalls returns a run's model calls in order. With text false the
// request and answer are left empty (they can be large).
func (s *sqlStore) LLMCalls(ctx context.Context, runID int64, text bool) ([]*LLMCall, error) {
	out, err := s.calls(ctx, text, `SELECT `+callColumns+` FROM llm_calls c WHERE c.run_id = $1 ORDER BY c.id`, runID)
	if err != nil {
		return nil, fmt.Errorf("list model calls of run %d: %w", runID, err)
	}
	return out, nil
}

// callColumns are what calls scans, of llm_calls c.
const callColumns = `c.id, c.run_id, c.child_id, c.bench_node_id, c.purpose, c.model, c.state, c.request_hash, c.answer_hash,
	c.error, c.server_model, c.provider, c.finish_reason, c.input_tokens, c.output_tokens, c.reasoning_tokens, c.cached_tokens,
	c.estimated, c.cost_usd, c.price_unknown, c.latency_ms, c.attempts, c.request_id, c.created_at, c.finished_at`

// calls runs a query of callColumns and reads the calls; with text, their
// requests and answers too.
func (s *sqlStore) calls(ctx context.Context, text bool, query string, args ...any) ([]*LLMCall, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*LLMCall
	var hashes [][2]string
	for rows.Next() {
		var c LLMCall
		var run, child, node, finished sql.NullInt64
		var created int64
		var req, ans string
		if err := rows.Scan(&c.ID, &run, &child, &node, &c.Purpose, &c.Model, &c.State, &req, &ans, &c.Error, &c.ServerModel,
			&c.Provider, &c.FinishReason, &c.InputTokens, &c.OutputTokens, &c.ReasoningTokens, &c.CachedTokens, &c.Estimated,
			&c.CostUSD, &c.PriceUnknown, &c.LatencyMs, &c.Attempts, &c.RequestID, &created, &finished); err != nil {
			return nil, err
		}
		c.RunID, c.ChildID, c.BenchNodeID = run.Int64, child.Int64, node.Int64
		c.CreatedAt = time.UnixMilli(created)
		if finished.Valid {
			c.FinishedAt = time.UnixMilli(finished.Int64)
		}
		out = append(out, &c)
		hashes = append(hashes, [2]string{req, ans})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if text {
		if err := s.fillText(ctx, out, hashes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fillText sets each call's request and answer from their contents'
// hashes (the same index in hashes).
func (s *sqlStore) fillText(ctx context.Context, calls []*LLMCall, hashes [][2]string) error {
	// In batches, so that a run of many calls is not held in memory twice.
	const batch = 256
	for i := 0; i < len(calls); i += batch {
		j := min(i+batch, len(calls))
		var want []string
		for _, h := range hashes[i:j] {
			want = append(want, h[0], h[1])
		}
		m, err := s.contents(ctx, s.db, want)
		if err != nil {
			return err
		}
		for k, c := range calls[i:j] {
			req, ok1 := m[hashes[i+k][0]]
			ans, ok2 := m[hashes[i+k][1]]
			if !ok1 || !ok2 {
				return fmt.Errorf("model call %d: its request or answer is missing from the database: %w", c.ID, ErrDamaged)
			}
			c.Request, c.Answer = string(req), string(ans)
		}
	}
	return nil
}

// LLMCallText returns a call's stored (redacted) request and answer.
func (s *sqlStore) LLMCallText(ctx context.Context, id int64) (request, answer string, err error) {
	var req, ans string
	err = s.db.QueryRowContext(ctx, `SELECT request_hash, answer_hash FROM llm_calls WHERE id = $1`, id).Scan(&req, &ans)
	if notFound(err) {
		return "", "", fmt.Errorf("model call %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", "", fmt.Errorf("read model call %d: %w", id, err)
	}
	c := &LLMCall{ID: id}
	if err := s.fillText(ctx, []*LLMCall{c}, [][2]string{{req, ans}}); err != nil {
		return "", "", fmt.Errorf("read model call %d: %w", id, err)
	}
	return c.Request, c.Answer, nil
}

// RunSpend sums a run's model calls: cost, input plus output tokens, and
// calls (lost calls count as calls; their cost is unknown).
func (s *sqlStore) RunSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(cost_usd), 0), CAST(COALESCE(SUM(input_tokens + output_tokens), 0) AS BIGINT), COUNT(*)
		FROM llm_calls WHERE run_id = $1`, runID).Scan(&usd, &tokens, &calls)
	if err != nil {
		err = fmt.Errorf("sum spending of run %d: %w", runID, err)
	}
	return usd, tokens, calls, err
}
