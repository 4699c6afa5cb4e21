// Package storetest is the contract every implementation of frontier's
// store must pass: SQLite today (internal/store), PostgreSQL next. Its
// tests are what "nothing is lost" rests on: every write is visible once
// the call returns, a transaction is all or nothing and outlives a
// canceled context, lists come back in their documented order, the
// queries resume relies on (lost calls, interrupted and finished
// evaluations) select exactly their rows, two processes that write to
// one database lose nothing, and an evaluation a dead process left running
// is found by the next.
//
// An implementation's test calls Run with a function that opens a fresh,
// empty store, and Processes and Orphans with one that opens a store by
// name, from this process and from a helper process; its TestMain calls HelperMain
// first so that the helper process does its part and exits.
package storetest

import (
	"context"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
)

// Store is the whole contract: every method the consumers of the store
// use (each declares the few it needs: eval.Store, evolve.Store,
// runview's readers, bench's). *store.Store is one.
type Store interface {
	Close() error

	PutProgram(ctx context.Context, src []byte, normHash string) (string, error)
	Program(ctx context.Context, hash string) ([]byte, error)
	ProgramsByNormHash(ctx context.Context, normHash string) ([]string, error)

	CreateEvaluation(ctx context.Context, e *store.Evaluation) error
	FinishEvaluation(ctx context.Context, e *store.Evaluation, telemetry []byte) error
	Evaluation(ctx context.Context, id int64) (*store.Evaluation, error)
	Evaluations(ctx context.Context, f store.Filter) ([]*store.Evaluation, error)
	Telemetry(ctx context.Context, id int64) ([]byte, error)
	InterruptEvaluations(ctx context.Context, programHash string, since time.Time) error
	LatestEvaluation(ctx context.Context, programHash string, fastOnly bool, since time.Time) (*store.Evaluation, error)
	InterruptOrphans(ctx context.Context) ([]*store.Evaluation, error)
	RunningEvaluations(ctx context.Context, programHash string, since time.Time) ([]*store.Evaluation, error)

	CreateRun(ctx context.Context, r *store.Run) error
	Run(ctx context.Context, ref string) (*store.Run, error)
	Runs(ctx context.Context) ([]*store.Run, error)
	RunInTx(ctx context.Context, f func(tx *store.RunTx) error) error
	Children(ctx context.Context, runID int64) ([]*store.Child, error)
	Child(ctx context.Context, id int64) (*store.Child, error)
	ChildrenSince(ctx context.Context, runID int64, since time.Time) ([]*store.Child, error)
	Iterations(ctx context.Context, runID int64) ([]*store.Iteration, error)
	Attempts(ctx context.Context, runID int64) ([]*store.Attempt, error)
	Archive(ctx context.Context, runID int64) ([]int64, error)
	RunEvents(ctx context.Context, runID int64, kind string) ([]*store.RunEvent, error)
	AddRunEvent(ctx context.Context, e *store.RunEvent) error
	Confirmations(ctx context.Context, runID int64) ([]*store.Confirmation, error)

	InsertLLMCall(ctx context.Context, c *store.LLMCall) error
	FinishLLMCall(ctx context.Context, c *store.LLMCall) error
	MarkLostCalls(ctx context.Context, runID int64) (int64, error)
	LLMCalls(ctx context.Context, runID int64, text bool) ([]*store.LLMCall, error)
	LLMCallText(ctx context.Context, id int64) (request, answer string, err error)
	RunSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error)

	CreateBenchRun(ctx context.Context, r *store.BenchRun) error
	UpdateBenchRun(ctx context.Context, r *store.BenchRun) error
	BenchRun(ctx context.Context, ref string) (*store.BenchRun, error)
	BenchRuns(ctx context.Context) ([]*store.BenchRun, error)
	InsertBenchAttempts(ctx context.Context, as []*store.BenchAttempt) error
	UpdateBenchAttempt(ctx context.Context, a *store.BenchAttempt) error
	BenchAttempts(ctx context.Context, runID int64) ([]*store.BenchAttempt, error)
	InsertBenchNode(ctx context.Context, n *store.BenchNode) error
	UpdateBenchNode(ctx context.Context, n *store.BenchNode) error
	BenchNodes(ctx context.Context, attemptID int64) ([]*store.BenchNode, error)
	InsertBenchCall(ctx context.Context, nodeID int64, c *store.LLMCall) error
	BenchCalls(ctx context.Context, attemptID int64, text bool) ([]*store.LLMCall, error)
	MarkLostBenchCalls(ctx context.Context, runID int64) (int64, error)
	BenchSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error)
	PutCalibration(ctx context.Context, c *store.Calibration) error
	Calibrations(ctx context.Context, suite, class string) ([]*store.Calibration, error)
}
