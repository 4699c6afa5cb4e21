package report

import (
	"math"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/harness"
	"github.com/frontier-bench/frontier/internal/runs"
)

// Data is everything a run report shows. It is plain data: the engine
// fills it from its database and Write renders it.
//
// Measurements that were not taken are 0. Write also treats NaN and ±Inf
// as not measured, but encoding/json cannot encode them, so a loader
// should store 0.
type Data struct {
	Run Run `json:"run"`
	// Reference is the track's reference program as measured in this run
	// (same machine class), the baseline every speedup is against.
	Reference Point `json:"reference"`
	// Programs holds every child the run created, in any order, including
	// duplicates and children still being evaluated.
	Programs []Program `json:"programs"`
	// Best is the run's record program (what `frontier runs best`
	// writes: the program of the confirmed claim, else the reference)
	// with its source and telemetry; nil when there is none.
	Best *Best `json:"best,omitempty"`
	// Record is the run's record and what it rests on; nil when unknown.
	Record *Record `json:"record,omitempty"`
	// Claims are the candidate records and what testing them found, in
	// the order made, failed and rejected ones included.
	Claims []Claim `json:"claims,omitempty"`
	// GeneratedAt is when the data was read from the database; the report
	// shows it in its footer. Zero leaves it out.
	GeneratedAt time.Time `json:"generated_at,omitzero"`
}

// Run describes the evolution run.
type Run struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	Track string `json:"track"`
	// TargetValLoss is the track's target: a program is acceptable when its
	// validation loss is at or under it.
	TargetValLoss float64 `json:"target_val_loss"`
	// LossFloor is the lowest loss the track's data allows (the tiny
	// track's entropy floor); 0 when unknown.
	LossFloor float64   `json:"loss_floor,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// EndedAt is zero while the run is still going.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// StopReason says why the run ended: the budget reached first
	// ("iterations", "evaluations", "wall_time", "usd", "tokens"),
	// "interrupted", or "" while it runs.
	StopReason string `json:"stop_reason,omitempty"`
	// StopDetail says it in a sentence ("all 30 iterations are done").
	StopDetail string `json:"stop_detail,omitempty"`
	// Models are the proposer's models as configured ("mutate" for the
	// non-LLM baseline).
	Models []string `json:"models,omitempty"`
	// Objective is what ranks programs in the database, e.g. "score"
	// (step_avg_ms × val_loss, the paper's) or "time".
	Objective string `json:"objective,omitempty"`
	// MetaPromptFrom is the first iteration that used meta-prompting, -1
	// when the run never did. Note that 0 is an iteration, not "unset".
	MetaPromptFrom int `json:"meta_prompt_from"`
	// FingerprintClass is the hardware and software class every time in
	// the run was measured on.
	FingerprintClass string `json:"fingerprint_class,omitempty"`
	// Sessions is the number of sessions that ran the run: more than one
	// means it was stopped (or killed) and resumed.
	Sessions int `json:"sessions,omitempty"`
}

// Record is the run's record: the program of the confirmed claim with the
// shortest time, else the reference.
type Record struct {
	// ID is the program; Reference is true when it is the reference.
	ID        int64 `json:"id"`
	Reference bool  `json:"reference,omitempty"`
	// TrainTimeMs is the best estimate of its time: a series' mean, else
	// its single timing.
	TrainTimeMs float64 `json:"train_time_ms"`
	// Evidence says what the record rests on (runs.Claim.Evidence).
	Evidence string `json:"evidence"`
}

// Claim is a candidate record (a program that measured faster than the
// standing record once) and what testing it found; see runs.Claim. Times
// are means over a series (single timings for method "noise"); 0 is not
// measured, and a missing p-value or interval means no test ran.
type Claim struct {
	ID         int64    `json:"id"`
	ChildID    int64    `json:"child_id"`
	BaselineID int64    `json:"baseline_id"`
	Method     string   `json:"method"`
	State      string   `json:"state"`
	Source     string   `json:"source,omitempty"`
	Pairs      int      `json:"pairs"`
	Alpha      float64  `json:"alpha,omitempty"`
	SingleMs   float64  `json:"single_ms,omitempty"`
	TimeMs     float64  `json:"time_ms,omitempty"`
	BaselineMs float64  `json:"baseline_ms,omitempty"`
	Speedup    *float64 `json:"speedup,omitempty"`
	SpeedupLo  *float64 `json:"speedup_lo,omitempty"`
	SpeedupHi  *float64 `json:"speedup_hi,omitempty"`
	TimeP      *float64 `json:"time_p,omitempty"`
	LossP      *float64 `json:"loss_p,omitempty"`
	Evidence   string   `json:"evidence,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// Point is one measured program in the loss/time plane.
type Point struct {
	ValLoss     float64 `json:"val_loss"`
	TrainTimeMs float64 `json:"train_time_ms"`
	StepAvgMs   float64 `json:"step_avg_ms"`
	// Conditions are the machine's state while it was timed.
	Conditions *runs.Conditions `json:"conditions,omitempty"`
}

// Stages a child can come from. Other values are shown as given.
const (
	StageTemplate = "template" // one prompt from the template pool
	StageMeta     = "meta"     // a meta-prompted idea, then its implementation
	StageFix      = "fix"      // repaired by the fast error catcher's fix loop
	StageMutate   = "mutate"   // the non-LLM mutate baseline
)

// Program is one child of the run and the outcome of its evaluation.
type Program struct {
	ID        int64  `json:"id"`
	Hash      string `json:"hash"`
	Iteration int    `json:"iteration"`
	Island    int    `json:"island"`
	// ParentID is 0 for a child of the reference program.
	ParentID int64  `json:"parent_id,omitempty"`
	Model    string `json:"model"`
	// Stage is one of the Stage constants: "fix" for a child that reached
	// its full run after the fix loop repaired it, whatever prompted it
	// first (PromptStage says what did).
	Stage       string `json:"stage"`
	PromptStage string `json:"prompt_stage,omitempty"`
	// Verdict is the evaluation's verdict ("acceptable", "loss_too_high",
	// "error", "timeout", "invalid", "no_result"), the engine's own
	// ("apply_failed": buggy; "duplicate"; "no_proposal"), or "" while the
	// child waits for or is in its evaluation. See Classify.
	Verdict string `json:"verdict"`
	// Reason is the verdict's one-line explanation.
	Reason      string  `json:"reason,omitempty"`
	ValLoss     float64 `json:"val_loss,omitempty"`
	TrainTimeMs float64 `json:"train_time_ms,omitempty"`
	StepAvgMs   float64 `json:"step_avg_ms,omitempty"`
	// Conditions are the machine's state while its full run was timed:
	// the load behind TrainTimeMs.
	Conditions *runs.Conditions `json:"conditions,omitempty"`
	// Score is the database's ranking value (lower is better).
	Score float64 `json:"score,omitempty"`
	// Token counts and cost cover every model call made for this child:
	// idea, implementation and fix attempts.
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	FixAttempts  int     `json:"fix_attempts,omitempty"`
	// Duplicate marks a child whose first program was identical to a
	// known one (after normalizing whitespace), like the verdict
	// "duplicate"; it was not evaluated again, so the report leaves it out
	// of every measured figure.
	Duplicate bool `json:"duplicate,omitempty"`
	// SourceID is the program a duplicate copies, or the known program a
	// child's fix came back to after a program of its own failed (it then
	// counts by that failure, not as a duplicate).
	SourceID  int64     `json:"source_id,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Best is the best program with what the report shows about it.
type Best struct {
	Program Program `json:"program"`
	Source  string  `json:"source"`
	// ReferenceSource is the track's reference program; the report shows
	// the best program's diff against it. Empty leaves the diff out.
	ReferenceSource string `json:"reference_source,omitempty"`
	// Sections is the best program's section profile (full run).
	Sections []harness.Section `json:"sections,omitempty"`
	// ReferenceSections is the reference's profile in this run, if
	// known; the sections table then compares the two.
	ReferenceSections []harness.Section `json:"reference_sections,omitempty"`
	// TopOps holds the profiler's top operators (one table per kind).
	TopOps []harness.TopOps `json:"top_ops,omitempty"`
	// Curve is the best program's metrics at the designated steps.
	Curve []harness.Step `json:"curve,omitempty"`
	// ReferenceCurve is the reference's curve, if known, drawn for
	// comparison.
	ReferenceCurve []harness.Step `json:"reference_curve,omitempty"`
	// Vals are the best program's validation passes.
	Vals []harness.Val `json:"vals,omitempty"`
}

// Classify maps a verdict to its class: runs.ClassOf, the one
// classification of a run's verdicts (the paper's breakdown, Fig. 3c, plus
// the children that were never evaluated). Verdicts it does not know
// count as buggy: they are not a completed, valid run. A
// fast-check-only verdict ("fast_ok") is not a final result.
func Classify(verdict string) runs.Class {
	return runs.ClassOf(canonical(verdict))
}

// canonical is a verdict as the report reads it: trimmed, lower case.
func canonical(verdict string) runs.Verdict {
	return runs.Verdict(strings.TrimSpace(strings.ToLower(verdict)))
}

// classCounts counts programs by class. Only runs.Buggy, runs.TooHigh and
// runs.ClassAcceptable are evaluated programs; rates and the breakdown
// figure count those alone.
type classCounts map[runs.Class]int

// NeverRan reports whether the child's verdict is one no process gave: an
// edit that never applied (buggy, but not evaluated).
func (p *Program) NeverRan() bool { return runs.Verdict(p.Verdict) == runs.ApplyFailed }

// Class classifies the program: a duplicate by its flag or verdict,
// anything else by its verdict.
func (p *Program) Class() runs.Class { return runs.ClassOf(p.verdict()) }

// verdict is the program's verdict as the report classifies it: canonical,
// and duplicate for a child flagged as one.
func (p *Program) verdict() runs.Verdict {
	if p.Duplicate {
		return runs.Duplicate
	}
	return canonical(p.Verdict)
}

// outcome is what the run's aggregates (runs.Tally) read of the program:
// its verdict as Class classifies it, and seq, its place in the
// report's order (1 for the first), in place of its ID, so that the tally
// breaks ties as the report does (the first in order wins), whatever the
// IDs of hand-made data.
func (p *Program) outcome(seq int) runs.Outcome {
	return runs.Outcome{
		ID: int64(seq), Verdict: p.verdict(), ValLoss: p.ValLoss, TrainTimeMs: p.TrainTimeMs, Score: p.Score,
		InputTokens: p.InputTokens, OutputTokens: p.OutputTokens, CostUSD: p.CostUSD,
	}
}

// measured reports whether x is a measurement (runs.Measured).
func measured(x float64) bool { return runs.Measured(x) }

// finite reports whether x is an ordinary number (costs may be zero).
func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }
