package eval

import (
	"context"
	"time"

	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// An Executor runs one phase of one evaluation on one node: the judge, the
// program and its scorer together (or, under the legacy log contract, the
// program alone). It decides no verdict and writes no store: it returns
// what the runner saw of each process and the judge's telemetry, and the
// pipeline (Evaluator.Evaluate) judges them. Node runs phases on this
// machine; a cluster's executor runs them on one of its nodes.
type Executor interface {
	Execute(ctx context.Context, job PhaseJob) (*PhaseRun, error)
}

// PhaseJob is one phase to run.
type PhaseJob struct {
	// Track is the spec as the evaluation resolved it (the loss floor of
	// this installation's data included).
	Track *track.Spec `json:"track"`
	// Data are the track's verified data files, as paths the node sees.
	Data    *DataFiles `json:"data"`
	Program []byte     `json:"program"`
	Name    string     `json:"name"`
	Seed    int        `json:"seed"`
	// Mode is "fast" or "full".
	Mode  string        `json:"mode"`
	Limit time.Duration `json:"limit_ns"`
	// Ceiling, when above Limit, is the hard limit: an executor that
	// follows the run's steps may let a run that is still stepping go on
	// past Limit, up to Ceiling (see deadline). PlannedSteps, when known,
	// is how many steps the program plans (its fast check said so).
	Ceiling      time.Duration `json:"ceiling_ns,omitempty"`
	PlannedSteps int           `json:"planned_steps,omitempty"`
	// RunDir is the evaluation's run folder: the phase's folders go
	// inside it.
	RunDir string `json:"run_dir"`
	// FastOnly says the request wants the fast check alone.
	FastOnly bool `json:"fast_only,omitempty"`
	// Key names the evaluation across restarts (Request.Key): an executor
	// that runs phases elsewhere finds a phase in flight again by it.
	Key string `json:"key,omitempty"`
	// Progress, when set, receives progress lines as the phase runs. An
	// executor that cannot stream them may say less.
	Progress func(line string) `json:"-"`
}

// PhaseRun is what one phase did, as the node saw it: the runner's account
// of the program and of its scorer, and the telemetry the judge wrote. It
// holds no verdict. It travels as JSON from a cluster's node.
type PhaseRun struct {
	Mode string `json:"mode"`
	// Program is how the program's processes ended; Scorer how the
	// scorer's did, nil when it did not run.
	Program runner.Result  `json:"program"`
	Scorer  *runner.Result `json:"scorer,omitempty"`
	// Telemetry is the judge's JSON lines (under the log contract, lines
	// made from the program's parsed log, with the same events).
	Telemetry []byte `json:"telemetry"`
	// JudgeFailed says why the judge did not finish ("" when it did): no
	// result is trusted then, and the failure is frontier's.
	JudgeFailed string `json:"judge_failed,omitempty"`
	JudgeStderr string `json:"judge_stderr,omitempty"`
	// Limit is the wall-clock limit the program ran under; LimitNote says
	// how and why it moved while the run went (the live step rate).
	Limit     time.Duration `json:"limit_ns"`
	LimitNote string        `json:"limit_note,omitempty"`
	// Skipped, when set, says why the phase did not run and needed not
	// (a log-contract script with no iteration count to shorten).
	Skipped string `json:"skipped,omitempty"`
	// Node names the machine the phase ran on; BLAS the kernels its
	// programs ran with (Local.BLAS).
	Node string `json:"node,omitempty"`
	BLAS string `json:"blas,omitempty"`
	// Waited is how long the phase waited for a node: from its submission
	// to its start there (0 on this machine).
	Waited time.Duration `json:"waited_ns,omitempty"`
	// Conditions are the node's state while the program ran: the load
	// average at its start and end, and the CPU time it, and others
	// beside it, took (see measureConditions); nil when not read.
	Conditions *store.Conditions `json:"conditions,omitempty"`
	// CPU are the program's CPU readings at the judge's clock marks, on a
	// track whose clock is CPU time; nil on others.
	CPU *CPUReadings `json:"cpu,omitempty"`
}

// Node runs phases on this machine: Harness those of harness-contract
// tracks (the judge, the program and the scorer), Log those of tracks
// under the legacy log contract.
type Node struct {
	Harness Executor
	Log     Executor
}

// Execute runs the phase with the executor of its track's contract.
func (n Node) Execute(ctx context.Context, job PhaseJob) (*PhaseRun, error) {
	if job.Track.Contract == "log" {
		return n.Log.Execute(ctx, job)
	}
	return n.Harness.Execute(ctx, job)
}

// NewNode returns the executors of this machine, sharing one runner, one
// Python, one GPU pool and one view of what programs must not read.
func NewNode(l *Local) Node {
	return Node{Harness: l, Log: &Legacy{Local: l}}
}
