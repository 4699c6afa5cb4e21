// Package store keeps what frontier records: programs and prompts (by
// content, in chunks that programs and prompts share), evaluations with
// their telemetry and the conditions they ran under, the records of
// evolution runs (members, iterations, attempts, events, the claims that
// a program is faster and their series) and their model calls, and the
// reproduction benchmark's runs, attempts, nodes and calibrations.
//
// Store is the contract; Open returns an implementation for a location: a
// SQLite file on this machine (modernc.org/sqlite, no cgo), the default, or
// a PostgreSQL database that several machines share (pgx). Both are one
// code path over database/sql; what differs between the two SQL dialects
// stays in this package. internal/store/storetest checks that each keeps
// the contract, and is the fixture other packages' tests open stores
// through; each consumer declares the few methods it uses. OpenReader
// opens one for reading only (a watcher beside a running search), Migrate
// and Inspect upgrade and describe a schema, and Copy moves every row to
// another store.
//
// Every write happens before the caller acts on it, so a process killed at
// any moment loses nothing that was reported as done. A process that
// writes records who it is (Owner): an evaluation a dead process left
// running is found by the next (InterruptOrphans), and a run is claimed
// by the process that runs it and kept with a lease (KeepRun), so that
// two processes never write one run. A SQLite store holds disk space back
// (ReserveBytes) so that a verdict is stored even when a program filled
// the disk. Standing and Claims derive a run's record, as a member, from
// its stored claims, once for the engine and the readers.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
)

// ErrNotFound is returned when a program, evaluation, run or other record
// does not exist.
var ErrNotFound = errors.New("not found")

// Store is the contract of a store. Every implementation keeps these
// promises, which storetest checks:
//
//   - A write is durable, and visible to every process that shares the
//     database, once the call returns nil. A write that returns an error
//     wrote nothing.
//   - Ids are assigned by the store, are positive, and grow in the order
//     the records were created.
//   - Lists come back in the order each method documents.
//   - Several processes, on one machine or several, may write one database
//     at once: no row is lost, duplicated or mixed with another's.
//   - Text is stored as UTF-8: invalid bytes and NUL in a string field are
//     replaced (U+FFFD) on the way in. Programs, prompts and answers are
//     read back byte for byte; a stored content that does not match its
//     hash is an error, never returned.
//
// Methods take a context for cancellation; RunInTx alone goes on after its
// context is canceled, so that a decision that was made is recorded.
type Store interface {
	ProgramStore
	EvaluationStore
	RunStore
	CallStore
	BenchStore

	// Close releases the store's connections. A store is safe for
	// concurrent use until then.
	Close() error
	// Location names the database in messages: a file's path, or a URL
	// without its password.
	Location() string
	// ReadOnly says whether every write fails with ErrReadOnly: a SQLite
	// database that this user may only read.
	ReadOnly() bool
	// Usage measures the database: bytes in use and rows per table.
	Usage(ctx context.Context) (*Usage, error)
}

// ProgramStore keeps programs by content.
type ProgramStore interface {
	// PutProgram stores src, once however often it is put, and returns its
	// hash (Hash). normHash is the hash of its whitespace-normalized form,
	// by which ProgramsByNormHash finds programs that differ only in
	// whitespace; "" means the plain hash. What a program shares with
	// programs or prompts stored before is not stored again.
	PutProgram(ctx context.Context, src []byte, normHash string) (string, error)
	// Program returns the program with hash h, checked against h;
	// ErrNotFound when there is none.
	Program(ctx context.Context, h string) ([]byte, error)
	// ProgramsByNormHash returns the hashes of the programs stored with
	// normHash, oldest first.
	ProgramsByNormHash(ctx context.Context, normHash string) ([]string, error)
}

// EvaluationStore keeps evaluations: each is created running before its
// process starts, then finished with its outcome and telemetry at once.
type EvaluationStore interface {
	// CreateEvaluation records an evaluation about to start (state
	// running unless set) and sets e.ID and e.Owner (this store's owner,
	// see OpenAs). The program must be stored already.
	CreateEvaluation(ctx context.Context, e *Evaluation) error
	// FinishEvaluation stores the outcome of evaluation e.ID (state done
	// unless set) and, when not nil, its telemetry, all or nothing;
	// ErrNotFound when there is no such evaluation.
	FinishEvaluation(ctx context.Context, e *Evaluation, telemetry []byte) error
	// Evaluation returns evaluation id; ErrNotFound when there is none.
	Evaluation(ctx context.Context, id int64) (*Evaluation, error)
	// Evaluations lists the evaluations that f selects, newest first.
	Evaluations(ctx context.Context, f Filter) ([]*Evaluation, error)
	// Telemetry returns the telemetry stored with evaluation id;
	// ErrNotFound when there is none.
	Telemetry(ctx context.Context, id int64) ([]byte, error)
	// InterruptEvaluations marks interrupted the evaluations of a program
	// still running that started at or after since.
	InterruptEvaluations(ctx context.Context, programHash string, since time.Time) error
	// LatestEvaluation returns the newest finished (done) evaluation of a
	// program, fast-only or not, started at or after since; ErrNotFound
	// when there is none.
	LatestEvaluation(ctx context.Context, programHash string, fastOnly bool, since time.Time) (*Evaluation, error)
	// RunningEvaluations returns the evaluations of a program still
	// running that started at or after since, oldest first.
	RunningEvaluations(ctx context.Context, programHash string, since time.Time) ([]*Evaluation, error)
	// InterruptOrphans marks interrupted every evaluation that a process
	// of this machine left running when it ended, and returns them as they
	// were. Evaluations of live processes, of other machines, and from
	// before owners were recorded are left alone; a second call finds none
	// of the same.
	InterruptOrphans(ctx context.Context) ([]*Evaluation, error)
}

// RunStore keeps evolution runs. Their members, iterations and claims
// are written through a RunTx, all or nothing.
type RunStore interface {
	// CreateRun inserts r (state running unless set) and sets r.ID; a
	// name that exists already, or that CheckRunName refuses, is an error.
	CreateRun(ctx context.Context, r *Run) error
	// Run finds a run by id ("12", "#12") or name; a name that reads as
	// another run's id loses to the id. ErrNotFound when there is none.
	Run(ctx context.Context, ref string) (*Run, error)
	// Runs lists every run, newest first.
	Runs(ctx context.Context) ([]*Run, error)
	// RunInTx runs f in one transaction, committed when f returns nil and
	// rolled back, with nothing written, when it returns an error (which
	// RunInTx returns). It goes on when ctx is canceled. f may run more
	// than once (a full disk: once more after the store gave up its
	// reserve), so it writes only through tx, and what it sets from one
	// run (ids) the next sets again.
	RunInTx(ctx context.Context, f func(tx RunTx) error) error
	// Children returns every member of a run, in the order they were
	// created.
	Children(ctx context.Context, runID int64) ([]*Child, error)
	// ChildrenSince returns the members of a run whose row was written at
	// or after since, in the order they were written: a watcher's delta,
	// read from an index whatever the size of the run. Times are the
	// writers' clocks: a watcher that asks from a little before what it
	// saw last does not miss a write whose transaction began earlier.
	ChildrenSince(ctx context.Context, runID int64, since time.Time) ([]*Child, error)
	// Child returns one member; ErrNotFound when there is none.
	Child(ctx context.Context, id int64) (*Child, error)
	// Iterations returns a run's iterations in order.
	Iterations(ctx context.Context, runID int64) ([]*Iteration, error)
	// Attempts returns the attempts of a run's children, by child, then
	// in the order they were made.
	Attempts(ctx context.Context, runID int64) ([]*Attempt, error)
	// Archive returns the ids of the run's elite archive, best first.
	Archive(ctx context.Context, runID int64) ([]int64, error)
	// RunEvents returns a run's events of a kind ("" for all), in order.
	RunEvents(ctx context.Context, runID int64, kind string) ([]*RunEvent, error)
	// AddRunEvent records an event in a transaction of its own (see
	// RunTx.AddEvent).
	AddRunEvent(ctx context.Context, e *RunEvent) error
	// Confirmations returns a run's claims of a record, in the order they
	// were made; unknown numbers read back as NaN.
	Confirmations(ctx context.Context, runID int64) ([]*Confirmation, error)

	// ClaimRun makes this store's owner (see OpenAs) the process that
	// runs run runID, until lease from now. It succeeds when the run has
	// no owner, is this owner's already (which renews the lease), when its
	// owner's lease has lapsed, or when its owner was a process of this
	// machine that has ended. Otherwise it returns a *HeldError that names
	// the owner (errors.Is ErrHeld), and changes nothing. The lease is
	// timed by the database's clock.
	ClaimRun(ctx context.Context, runID int64, lease time.Duration) error
	// ReleaseRun ends this owner's claim of a run; a run that another
	// owns is left alone.
	ReleaseRun(ctx context.Context, runID int64) error
}

// RunTx writes a run's records inside RunInTx. Its writes become visible
// together, when the transaction commits.
type RunTx interface {
	// UpdateRun writes the run's mutable fields: name, state, stop reason
	// and detail, configuration and models (with the objective and planned
	// meta-prompting start), RNG and bandit state, iterations, active
	// time, sessions and the track's folder.
	UpdateRun(r *Run) error
	// InsertIteration records an iteration.
	InsertIteration(it *Iteration) error
	// FinishIteration marks an iteration done (once: a later call keeps
	// the first time).
	FinishIteration(runID int64, iteration int) error
	// InsertChild records a new member with every field and sets c.ID.
	InsertChild(c *Child) error
	// UpdateChild writes every mutable field of c.
	UpdateChild(c *Child) error
	// InsertAttempt records a step of a child and sets a.ID.
	InsertAttempt(a *Attempt) error
	// SetAttemptFast records the fast check of an attempt's program.
	SetAttemptFast(attemptID, evaluationID int64, verdict runs.Verdict, reason string) error
	// SetArchive replaces the run's elite archive with ids, best first.
	SetArchive(runID int64, ids []int64) error
	// AddEvent records an event. An event whose non-empty key exists
	// already for its run and kind is not recorded again: AddEvent then
	// reports false.
	AddEvent(e *RunEvent) (bool, error)
	// InsertConfirmation records a claim of a record and sets c.ID.
	InsertConfirmation(c *Confirmation) error
	// UpdateConfirmation writes every mutable field of a claim.
	UpdateConfirmation(c *Confirmation) error
}

// CallStore keeps model calls: each recorded before it is sent, then its
// answer, usage and cost.
type CallStore interface {
	// InsertLLMCall records a call before it is sent (state pending unless
	// set) and sets c.ID.
	InsertLLMCall(ctx context.Context, c *LLMCall) error
	// FinishLLMCall records a call's answer or failure.
	FinishLLMCall(ctx context.Context, c *LLMCall) error
	// MarkLostCalls marks lost the run's calls still pending (their
	// process died while they were in flight) and returns how many.
	MarkLostCalls(ctx context.Context, runID int64) (int64, error)
	// LLMCalls returns a run's calls in order; with text false, without
	// their request and answer.
	LLMCalls(ctx context.Context, runID int64, text bool) ([]*LLMCall, error)
	// LLMCallText returns a call's request and answer; ErrNotFound when
	// there is no such call.
	LLMCallText(ctx context.Context, id int64) (request, answer string, err error)
	// RunSpend sums a run's calls: cost, input plus output tokens, and
	// calls (lost calls count; their cost is unknown).
	RunSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error)
}

// BenchStore keeps the reproduction benchmark's runs, attempts, nodes,
// their model calls and calibrations.
type BenchStore interface {
	// CreateBenchRun inserts r and sets r.ID; an empty name becomes
	// "bench-<id>". A name that exists already is an error.
	CreateBenchRun(ctx context.Context, r *BenchRun) error
	// UpdateBenchRun writes r's state, stop reason, time and sessions;
	// ErrNotFound when there is no such run.
	UpdateBenchRun(ctx context.Context, r *BenchRun) error
	// BenchRun returns the bench run named ref, or with id ref;
	// ErrNotFound when there is none.
	BenchRun(ctx context.Context, ref string) (*BenchRun, error)
	// BenchRuns lists the bench runs, oldest first.
	BenchRuns(ctx context.Context) ([]*BenchRun, error)
	// InsertBenchAttempts records a run's planned attempts, all or
	// nothing, and sets their ids. Two attempts of a run at one position
	// are an error.
	InsertBenchAttempts(ctx context.Context, as []*BenchAttempt) error
	// UpdateBenchAttempt writes everything of a but its run, position,
	// task and seed; ErrNotFound when there is no such attempt.
	UpdateBenchAttempt(ctx context.Context, a *BenchAttempt) error
	// BenchAttempts returns a run's attempts by position.
	BenchAttempts(ctx context.Context, runID int64) ([]*BenchAttempt, error)
	// InsertBenchNode records a node and sets n.ID. Two nodes of an
	// attempt with one sequence number are an error.
	InsertBenchNode(ctx context.Context, n *BenchNode) error
	// UpdateBenchNode writes what a node's proposal and evaluation
	// changed; ErrNotFound when there is no such node.
	UpdateBenchNode(ctx context.Context, n *BenchNode) error
	// BenchNodes returns an attempt's nodes by sequence number.
	BenchNodes(ctx context.Context, attemptID int64) ([]*BenchNode, error)
	// InsertBenchCall records a model call of node nodeID before it is
	// sent and sets c.ID; FinishLLMCall records its answer. c.RunID must
	// be 0.
	InsertBenchCall(ctx context.Context, nodeID int64, c *LLMCall) error
	// BenchCalls returns the calls of an attempt's nodes in order; with
	// text false, without their request and answer.
	BenchCalls(ctx context.Context, attemptID int64, text bool) ([]*LLMCall, error)
	// MarkLostBenchCalls marks lost the pending calls of a bench run and
	// returns how many.
	MarkLostBenchCalls(ctx context.Context, runID int64) (int64, error)
	// BenchSpend sums a bench run's node calls: cost, input plus output
	// tokens, and calls.
	BenchSpend(ctx context.Context, runID int64) (usd float64, tokens, calls int64, err error)
	// PutCalibration records a calibrated record and sets c.ID.
	PutCalibration(ctx context.Context, c *Calibration) error
	// Calibrations returns the newest calibration of each record of a
	// suite on a machine class (every class when class is ""), by record.
	Calibrations(ctx context.Context, suite, class string) ([]*Calibration, error)
}

// Usage is what a database holds.
type Usage struct {
	// Bytes is the space the database's pages take (SQLite: the file's
	// pages in use and its write-ahead log; PostgreSQL: the tables with
	// their indexes and out-of-line storage).
	Bytes int64
	// Rows counts the rows of each of frontier's tables.
	Rows map[string]int64
}
