package eval

import (
	"context"

	"github.com/frontier-bench/frontier/internal/store"
)

// Store is what an Evaluator records into: the program, the evaluation as
// running before its process starts, then its outcome with the telemetry;
// and, for a series compared with stored runs, the earlier evaluations of
// the baseline. store.Store is one; every implementation passes the
// contract suite of internal/store/storetest.
type Store interface {
	PutProgram(ctx context.Context, src []byte, normHash string) (string, error)
	CreateEvaluation(ctx context.Context, e *store.Evaluation) error
	FinishEvaluation(ctx context.Context, e *store.Evaluation, telemetry []byte) error
	Evaluations(ctx context.Context, f store.Filter) ([]*store.Evaluation, error)
}

var _ Store = store.Store(nil)
