package eval

import (
	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runner"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// Schema is the version of the JSON document `frontier eval --json` prints
// (docs/eval-json.md). A change that removes or renames a field bumps it.
const Schema = "frontier.eval/v1"

// Verdict is the outcome of an evaluation: the runs vocabulary's word,
// the same type every reader of a result uses.
type Verdict = runs.Verdict

// Verdicts, from best to worst (Verdict.Rank). Failures never outrank
// valid programs.
const (
	Acceptable  = runs.Acceptable  // val loss at or under the target
	LossTooHigh = runs.LossTooHigh // ran correctly, val loss above the target
	Invalid     = runs.Invalid     // broke a rule; Rule says which
	Error       = runs.Error       // the program failed; see the traceback
	Timeout     = runs.Timeout     // killed at a wall-clock limit
	NoResult    = runs.NoResult    // ended without a result
	// FastOK is the verdict of a fast check run on its own (--fast): the
	// program ran its first steps and reached finish. It says nothing
	// about the target.
	FastOK = runs.FastOK
)

// Result is everything an evaluation established. It is what
// `frontier eval --json` prints and what the store keeps.
type Result struct {
	Schema  string  `json:"schema"`
	Verdict Verdict `json:"verdict"`
	// Rule is set for invalid verdicts: the id of the broken rule.
	Rule string `json:"rule,omitempty"`
	// Reason says in one or two sentences why the verdict is what it is.
	Reason string `json:"reason"`
	// Traceback is the program's Python traceback for error verdicts.
	Traceback string `json:"traceback,omitempty"`

	EvaluationID int64       `json:"evaluation_id,omitempty"`
	Track        TrackInfo   `json:"track"`
	Program      ProgramInfo `json:"program"`
	Seed         int         `json:"seed"`
	// Verification is "full" (harness contract) or "log" (parsed logs).
	Verification string `json:"verification"`

	Metrics Metrics `json:"metrics"`

	// Curve holds the metrics at designated steps; Vals every validation.
	Curve    []harness.Step    `json:"curve,omitempty"`
	Vals     []harness.Val     `json:"vals,omitempty"`
	Sections []harness.Section `json:"sections,omitempty"`
	TopOps   *harness.TopOps   `json:"top_ops,omitempty"`

	// Probe and Checks are what the harness's verification found in the
	// judged run: the causality probe and the behavioural checks.
	Probe  *harness.Probe  `json:"probe,omitempty"`
	Checks *harness.Checks `json:"checks,omitempty"`
	// TelemetryLines counts the telemetry lines whose MAC held.
	TelemetryLines int `json:"telemetry_lines,omitempty"`

	Fingerprint      harness.Fingerprint `json:"fingerprint"`
	FingerprintClass string              `json:"fingerprint_class"`
	Environment      Environment         `json:"environment"`

	// Repeats holds the statistics when the program ran with several
	// seeds; the verdict then follows the t-test.
	Repeats *Repeats `json:"repeats,omitempty"`

	Fast *Phase `json:"fast,omitempty"`
	Full *Phase `json:"full,omitempty"`

	// Findings are what the static checks found (invalid or warnings).
	Findings []Finding `json:"findings,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
	// RunDir is where the run folder was kept (--keep), if it was.
	RunDir string `json:"run_dir,omitempty"`
}

// TrackInfo identifies the track and its targets.
type TrackInfo struct {
	Name      string  `json:"name"`
	Hash      string  `json:"hash"` // SHA-256 of the spec file
	Target    float64 `json:"target_val_loss"`
	LossFloor float64 `json:"loss_floor,omitempty"`
	Device    string  `json:"device"`
}

// ProgramInfo identifies the program.
type ProgramInfo struct {
	Name  string `json:"name"`
	Hash  string `json:"hash"`
	Bytes int    `json:"bytes"`
}

// Metrics are the headline figures of the full run. Zero means unknown.
type Metrics struct {
	ValLoss     float64 `json:"val_loss,omitempty"`
	ValTokens   int64   `json:"val_tokens,omitempty"`
	TrainTimeMs float64 `json:"train_time_ms,omitempty"`
	StepAvgMs   float64 `json:"step_avg_ms,omitempty"`
	// Clock is what TrainTimeMs and StepAvgMs measure: "wall" (the
	// judge's wall clock) or "cpu" (the program's CPU time over the same
	// stretch, on a track timed by CPU time); WallTrainMs is the judge's
	// wall-clock train time beside a CPU time.
	Clock       string  `json:"clock,omitempty"`
	WallTrainMs float64 `json:"wall_train_ms,omitempty"`
	Steps       int     `json:"steps,omitempty"`
	Tokens      int64   `json:"tokens,omitempty"`
	TokensPerS  float64 `json:"tokens_per_s,omitempty"`
	PreTrainMs  float64 `json:"pre_train_ms,omitempty"`
	PeakRSSMB   float64 `json:"peak_rss_mb,omitempty"`
	CUDAAllocMB float64 `json:"cuda_allocated_mb,omitempty"`
	CUDAResMB   float64 `json:"cuda_reserved_mb,omitempty"`
	WallMs      float64 `json:"wall_ms,omitempty"`
	// CPUMs is the program's own CPU time in the full run (user and
	// system, all its threads), beside WallMs; full.conditions says where
	// it was read and what else ran meanwhile.
	CPUMs float64 `json:"cpu_ms,omitempty"`
	// Score is the paper's s = step_avg_ms x val_loss (lower is better).
	Score float64 `json:"score,omitempty"`
	// GapToFloor is val_loss minus the track's loss floor.
	GapToFloor float64 `json:"gap_to_floor,omitempty"`
}

// Environment is the software that ran the program.
type Environment struct {
	// Frontier is the version of frontier that judged the run.
	Frontier string `json:"frontier,omitempty"`
	Python   string `json:"python"`
	Torch    string `json:"torch"`
	Threads  int    `json:"threads"`
	Device   string `json:"device"`
	Sandbox  string `json:"sandbox"`
	// BLAS names the CPU kernels of the full run's matrix products, where
	// OpenBLAS ran them: a CPU track's times compare only under the same.
	BLAS string `json:"blas,omitempty"`
}

// Phase is how one process (fast check or full run) went.
type Phase struct {
	Mode      string        `json:"mode"`
	Status    runner.Status `json:"status"`
	ExitCode  int           `json:"exit_code"`
	WallMs    float64       `json:"wall_ms"`
	Message   string        `json:"message,omitempty"`
	ErrorLine string        `json:"error_line,omitempty"`
	Steps     int           `json:"steps,omitempty"`
	ValLoss   float64       `json:"val_loss,omitempty"`
	// StderrTail is the end of the program's stderr, for failed phases.
	StderrTail string `json:"stderr_tail,omitempty"`
	// LimitMs is the wall-clock limit the phase ran under; LimitNote says
	// why it differs from the track's (sized from the fast check).
	LimitMs   float64 `json:"limit_ms,omitempty"`
	LimitNote string  `json:"limit_note,omitempty"`
	// SkippedLines counts telemetry lines that were not valid events.
	SkippedLines int `json:"skipped_lines,omitempty"`
	// Node is the machine the phase ran on; Sandbox how the program was
	// confined there; BLAS the kernels of its matrix products.
	Node    string `json:"node,omitempty"`
	Sandbox string `json:"sandbox,omitempty"`
	BLAS    string `json:"blas,omitempty"`
	// WaitMs is how long the phase waited for a node of a cluster, from
	// its submission to its start there; 0 on this machine.
	WaitMs float64 `json:"wait_ms,omitempty"`
	// Conditions are the node's state while the program ran: the load
	// average at the start and end, the program's own CPU time, and the
	// CPU time other processes and a hypervisor took meanwhile.
	Conditions *store.Conditions `json:"conditions,omitempty"`
	// TrainCPUMs is, on a track whose clock is CPU time, the CPU time the
	// program's processes took while the judge's clock ran (the run's
	// time); CPU the readings it came from.
	TrainCPUMs float64      `json:"train_cpu_ms,omitempty"`
	CPU        *CPUReadings `json:"cpu,omitempty"`
	// Scorer is how the scorer went: the fresh process of the program that
	// answered the final validation again from the state the program
	// exported at fh.finish(); nil when it did not run.
	Scorer *ScorerRun `json:"scorer,omitempty"`
}

// ScorerRun is how the scorer's process went.
type ScorerRun struct {
	Status     runner.Status `json:"status"`
	ExitCode   int           `json:"exit_code"`
	WallMs     float64       `json:"wall_ms"`
	Message    string        `json:"message,omitempty"`
	StderrTail string        `json:"stderr_tail,omitempty"`
}
