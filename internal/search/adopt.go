package search

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/frontier-bench/frontier/internal/eval"
	"github.com/frontier-bench/frontier/internal/store"
)

// Evaluations is what Adopt reads; store.Store is one.
type Evaluations interface {
	LatestEvaluation(ctx context.Context, programHash string, fastOnly bool, since time.Time) (*store.Evaluation, error)
}

// Adopt finds the evaluation of a program (a fast check when fastOnly) on
// track (any track when "") that finished after since, the moment its
// search last recorded the candidate, but whose result the search never
// recorded: the process that ran the search was killed in between. The
// evaluator records every evaluation itself, so the result is there to
// take instead of evaluating again. It returns the result with its
// EvaluationID and the row it came from; nil when there is none, or when
// its result is unreadable (evaluate again).
func Adopt(ctx context.Context, st Evaluations, track, programHash string, fastOnly bool, since time.Time) (*eval.Result, *store.Evaluation, error) {
	row, err := st.LatestEvaluation(ctx, programHash, fastOnly, since)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if track != "" && row.Track != track {
		return nil, nil, nil
	}
	var res eval.Result
	if err := json.Unmarshal(row.Result, &res); err != nil || res.Verdict == "" {
		return nil, nil, nil
	}
	res.EvaluationID = row.ID
	return &res, row, nil
}
