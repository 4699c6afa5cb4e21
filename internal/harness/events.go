package harness

import "encoding/json"

// Telemetry event kinds, one JSON object per line in the run's telemetry
// file. Every line carries "event" (one of these) and "t_ms", the
// milliseconds since the harness started (wall clock, not the train clock).
const (
	EventRunStart = "run_start" // versions, device, threads, fingerprint
	EventStep     = "step"      // metrics at a designated step
	EventVal      = "val"       // an env-owned validation
	EventSections = "sections"  // section profile, cumulative
	EventTopOps   = "top_ops"   // torch.profiler window: top-k ops or kernels
	EventMemory   = "memory"    // peak memory
	EventProbe    = "probe"     // causality probe result
	EventChecks   = "checks"    // what the behavioural checks saw and cost
	EventWarning  = "warning"   // something the user should know, not fatal
	EventError    = "error"     // the program raised; traceback included
	EventFinal    = "final"     // the run reached finish(): the result
	// EventHandoff says the final validation's scored answers are in: the
	// training process may be ended and the scorer started.
	EventHandoff = "handoff"
	// EventClock marks the moment the judge's clock began, paused for a
	// designated validation, resumed or ended: frontier reads the
	// program's CPU time on each (a track timed by CPU time).
	EventClock = "clock"
)

// ClockMark is one EventClock line.
type ClockMark struct {
	Mark string  `json:"mark"`  // begin, pause, resume or end
	AtMs float64 `json:"at_ms"` // the moment, in ms since the judge started
}

// Event is one decoded telemetry line. Raw keeps the whole object so that
// fields this version does not know survive a round trip to the store.
type Event struct {
	Event string          `json:"event"`
	TMs   float64         `json:"t_ms"`
	Raw   json.RawMessage `json:"-"`
}

// RunStart describes the process and machine.
type RunStart struct {
	Mode        string      `json:"mode"` // "fast" or "full"
	Python      string      `json:"python"`
	Torch       string      `json:"torch"`
	Numpy       string      `json:"numpy,omitempty"`
	Device      string      `json:"device"`
	Threads     int         `json:"threads"`
	BLAS        string      `json:"blas,omitempty"`
	Fingerprint Fingerprint `json:"fingerprint"`
	PID         int         `json:"pid"`
	WorldSize   int         `json:"world_size"`
	// TelemetryLevel is "full" or "off" (see Config.TelemetryLevel).
	TelemetryLevel string `json:"telemetry_level,omitempty"`
}

// Fingerprint names the hardware and software class a result was measured
// on. Results are compared only within one class (see Class).
type Fingerprint struct {
	CPU      string   `json:"cpu,omitempty"`
	GPUs     []string `json:"gpus,omitempty"`
	Driver   string   `json:"driver,omitempty"`
	CUDA     string   `json:"cuda,omitempty"`
	Torch    string   `json:"torch,omitempty"`
	Triton   string   `json:"triton,omitempty"`
	Python   string   `json:"python,omitempty"`
	Threads  int      `json:"threads,omitempty"`
	Hostname string   `json:"hostname,omitempty"`
}

// Step holds the metrics at a designated step.
type Step struct {
	Step        int      `json:"step"`
	TrainTimeMs float64  `json:"train_time_ms"`
	StepAvgMs   float64  `json:"step_avg_ms"`
	Tokens      int64    `json:"tokens"` // cumulative training tokens
	TokensPerS  float64  `json:"tokens_per_s"`
	TrainLoss   *float64 `json:"train_loss,omitempty"`
}

// Val is one env-owned validation pass.
type Val struct {
	Step    int     `json:"step"`
	ValLoss float64 `json:"val_loss"`
	Tokens  int64   `json:"tokens"`
	SeqLen  int     `json:"seq_len"`
	Ms      float64 `json:"ms"` // duration of the pass (not train time)
	// Final marks the validation run by finish(): the one that decides.
	Final bool `json:"final,omitempty"`
	// Slice is "scored" for the first val_tokens + 1 tokens of the shard,
	// the windows of the result, and "practice" for the next ones, which the
	// fast check and intermediate validations score so that the program
	// does not see the scored windows before training is over.
	Slice string `json:"slice,omitempty"`
	// Timed marks a validation the program started on its own, not on one
	// of the track's designated steps: its time is train time.
	Timed bool `json:"timed,omitempty"`
	// ChargedMs is the part of the pass counted as train time (calls that
	// took longer than a forward pass).
	ChargedMs float64 `json:"charged_ms,omitempty"`
}

// Section is the cumulative profile of one named section.
type Section struct {
	Name    string  `json:"name"`
	TotalMs float64 `json:"total_ms"`
	AvgMs   float64 `json:"avg_ms"`
	Pct     float64 `json:"pct"` // percent of train time
	Calls   int64   `json:"calls"`
}

// Sections is the section table at the end of the run.
type Sections struct {
	Sections []Section `json:"sections"`
}

// Op is one row of the profiler's table.
type Op struct {
	Name    string  `json:"name"`
	TotalMs float64 `json:"total_ms"`
	Calls   int64   `json:"calls"`
}

// TopOps is the torch.profiler result for the profiled steps.
type TopOps struct {
	Kind  string `json:"kind"`  // "cpu" or "cuda"
	Steps []int  `json:"steps"` // first and last profiled step
	Ops   []Op   `json:"ops"`
}

// Memory is the peak memory of the run.
type Memory struct {
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	CUDAAllocatedMB float64 `json:"cuda_allocated_mb,omitempty"`
	CUDAReservedMB  float64 `json:"cuda_reserved_mb,omitempty"`
}

// Warning is a non-fatal notice from the harness.
type Warning struct {
	Code    string `json:"code,omitempty"` // one of the Warn* codes
	Message string `json:"message"`
}

// Warning codes.
const (
	// WarnCompileBudget was written by harnesses that only warned about
	// setup over the compile budget; this one stops the run with
	// ErrCompileBudget instead. Telemetry stored earlier may still hold it.
	WarnCompileBudget = "compile_budget"
	WarnProfiler      = "profiler"      // torch.profiler failed; no top_ops
	WarnValUnsharded  = "val_unsharded" // several ranks without torch.distributed
	WarnNoSteps       = "no_steps"      // fh.step was never called
	WarnTelemetry     = "telemetry"     // an event could not be encoded
	WarnValPractice   = "val_practice"  // no practice slice in the shard: early validations score the scored windows
)

// Error is written when the run fails: the exception type, message and the
// formatted traceback, or a harness condition named by Code.
type Error struct {
	Kind      string `json:"kind"` // exception class name ("ValueError", "HarnessError", "SIGTERM", ...)
	Code      string `json:"code"` // one of the Err* codes
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
	Step      int    `json:"step"`           // steps completed when it happened
	Rank      int    `json:"rank,omitempty"` // the failing process under torchrun
	// Judge marks what the judge found itself; the other errors are the
	// program's own account of how it failed (its traceback).
	Judge bool `json:"judge,omitempty"`
	// Scorer marks an error of the scorer (the fresh process of the
	// program that answered the final validation again), or about it.
	Scorer bool `json:"scorer,omitempty"`
}

// Error codes: what kind of failure an Error event reports.
const (
	ErrException   = "exception"    // the program raised
	ErrNaNLoss     = "nan_loss"     // train or validation loss not finite
	ErrLogitsShape = "logits_shape" // logits_fn returned a wrong shape or type
	ErrContract    = "contract"     // the harness API was misused (order, step numbering, limits)
	ErrConfig      = "config"       // the injected config is missing or invalid
	ErrShard       = "shard"        // a data shard is missing or corrupt
	ErrSetup       = "setup"        // the harness could not load (torch missing)
	ErrProgram     = "program"      // the program file does not exist
	ErrNoFinish    = "no_finish"    // the program returned without fh.finish()
	ErrTerminated  = "terminated"   // SIGTERM: a time limit or a cancel
	ErrExit        = "exit"         // the program called sys.exit with a non-zero code
	ErrHarness     = "harness"      // an internal harness check failed
	ErrJudge       = "judge"        // the judge is gone or answered out of turn
	ErrState       = "state"        // the state logits_fn reaches could not be exported or imported
	ErrScorer      = "scorer"       // the scorer ended before it answered the final validation

	// ErrDataBeforeClock: the program opened a training shard before
	// fh.train_begin(), when the training data is not there yet.
	ErrDataBeforeClock = "data_before_clock"

	// Behavioural checks. Each makes the verdict invalid (see VerdictCode);
	// the harness writes the error event the moment it finds the fault.
	ErrPretrain         = "pretrain"              // weights or optimizer state changed by training before train_begin
	ErrStatefulEval     = "stateful_eval"         // backward passes, optimizer steps or changed weights or logits during validation
	ErrNondeterministic = "nondeterministic_eval" // the same input gave different logits beyond the allowed noise
	ErrCompileBudget    = "compile_budget"        // setup before train_begin took longer than the compile budget
	ErrValidationCost   = "validation_cost"       // validations outside the clock took more than the track allows
	ErrProtocol         = "protocol"              // the program's process sent the judge what the harness client never sends
)

// VerdictCode reports whether an error code is a finding of the harness's
// behavioural checks (the program broke a rule) rather than a failure of
// the program (it crashed).
func VerdictCode(code string) bool {
	switch code {
	case ErrPretrain, ErrStatefulEval, ErrNondeterministic, ErrCompileBudget, ErrValidationCost, ErrProtocol:
		return true
	}
	return false
}

// Probe is the causality probe's result: whether logits at a position moved
// when only later tokens (or, with DocIsolated, tokens of an earlier
// document, or another row of the batch) were changed.
type Probe struct {
	OK bool `json:"ok"`
	// Fault says why the probe failed: ProbeFaultLeak or
	// ProbeFaultInsensitive; empty when OK. (Noisy logits stop the run
	// before the probe is judged: ErrNondeterministic.)
	Fault string `json:"fault,omitempty"`
	// Sequences is the number of rows of the probe's batch (a batch of the
	// validation pass, chosen at random), Perturbations the number of
	// single-token changes tried in them.
	Sequences     int     `json:"sequences"`
	Perturbations int     `json:"perturbations"`
	NoiseFloor    float64 `json:"noise_floor"` // largest logit change between two identical calls
	NoiseLimit    float64 `json:"noise_limit"` // the largest noise floor allowed (see VerifyConfig)
	Tolerance     float64 `json:"tolerance"`
	// Sensitive is the fraction of perturbations that moved the logits at
	// or after the perturbed position; 0 means the probe learned nothing.
	Sensitive   float64    `json:"sensitive"`
	Leak        *ProbeLeak `json:"leak,omitempty"`
	DocIsolated bool       `json:"doc_isolated"`
	// RowCheck is the number of rows in the batch of the cross-row check
	// (0: not run, a batch of one row).
	RowCheck int     `json:"row_check"`
	Calls    int     `json:"calls"` // logits_fn calls the probe made
	Message  string  `json:"message"`
	Ms       float64 `json:"ms"` // judging the calls (the calls are in Checks.ExtraMs)
	// Scorer says the comparison is the scorer's: every scored row
	// answered again, as a twin, by a fresh process of the program.
	Scorer bool `json:"scorer,omitempty"`
}

// Probe faults.
const (
	ProbeFaultLeak        = "leak"        // logits moved where they must not
	ProbeFaultInsensitive = "insensitive" // no change of the input changed the logits
)

// ProbeLeak is the first leak the probe found.
type ProbeLeak struct {
	Kind      string  `json:"kind"`      // "future", "document" or "row"
	Row       int     `json:"row"`       // row of the probe batch whose logits moved
	Perturbed int     `json:"perturbed"` // position of the changed token (0 for "row": the whole row changed)
	Position  int     `json:"position"`  // first position whose logits moved
	Size      float64 `json:"size"`      // largest logit change where none is allowed
	// SourceRow is the row replaced in the same call: for a "row" leak, the
	// row whose change moved Row.
	SourceRow int `json:"source_row,omitempty"`
}

// Checks is what the judge's checks saw and what they cost. Times are
// milliseconds of the judge's clock.
type Checks struct {
	// Validation passes: all of them, those on the track's designated
	// steps (outside the clock), and those the program started on its own
	// (timed).
	Validations           int `json:"validations"`
	DesignatedValidations int `json:"designated_validations"`
	ProgramValidations    int `json:"program_validations"`
	// Calls is every logits_fn call the judge made; ExtraCalls those of
	// the checks (rechecks, the probe), which took ExtraMs.
	Calls      int     `json:"calls"`
	ExtraCalls int     `json:"extra_calls"`
	ExtraMs    float64 `json:"extra_ms"`
	// The largest difference of log-probabilities seen between two
	// identical calls (noise) and between a batch's answers when scored
	// and when called again (drift).
	Noise *float64 `json:"noise"`
	Drift *float64 `json:"drift"`
	// ChargedMs is validation time counted as training: calls that took
	// longer than a forward pass (work queued before the request, training
	// inside a call). ExcludedMs is the time of designated validations,
	// outside the clock. ValidationMs is every validation's time;
	// ValidationBudgetMs the most that designated and final validations
	// may take outside the clock (0: no limit).
	ChargedMs          float64  `json:"charged_ms"`
	ExcludedMs         float64  `json:"excluded_ms"`
	ValidationMs       float64  `json:"validation_ms"`
	ValidationBudgetMs *float64 `json:"validation_budget_ms"`
	// The model that started the clock, scored on unscored text at
	// fh.train_begin(logits_fn): its loss, the lowest allowed, the call's
	// time (inside the clock), and why it was not scored when it was not.
	InitialLoss    *float64 `json:"initial_loss"`
	InitialLossMin float64  `json:"initial_loss_min"`
	InitialMs      *float64 `json:"initial_ms"`
	InitialSkipped string   `json:"initial_skipped,omitempty"`
	// SetupMs is the untimed setup: from the process's first message to
	// train_begin.
	SetupMs *float64 `json:"setup_ms"`
	// LogitsVia says how the logits reached the judge: "host-memory" (a
	// sealed memory file per call) or "cuda-ipc" (a device buffer of the
	// judge's).
	LogitsVia string `json:"logits_via,omitempty"`
	// StateBytes is the size of the state the program exported at
	// fh.finish() for the scorer; ScorerCalls the scorer's logits_fn
	// calls, which took ScorerMs (from its first to its last answer) after
	// ScorerSetupMs of setup up to its fh.train_begin().
	StateBytes    *int64   `json:"state_bytes"`
	ScorerCalls   int      `json:"scorer_calls"`
	ScorerMs      *float64 `json:"scorer_ms"`
	ScorerSetupMs *float64 `json:"scorer_setup_ms"`
}

// Final is the result of a run that reached finish().
type Final struct {
	Steps       int     `json:"steps"`
	TrainTimeMs float64 `json:"train_time_ms"`
	StepAvgMs   float64 `json:"step_avg_ms"`
	Tokens      int64   `json:"tokens"`
	TokensPerS  float64 `json:"tokens_per_s"`
	ValLoss     float64 `json:"val_loss"`
	ValTokens   int64   `json:"val_tokens"`
	PreTrainMs  float64 `json:"pre_train_ms"` // from start to train_begin
	// Probe says the causality probe ran in the final validation.
	Probe bool `json:"probe"`
	// PlannedSteps is the loop length the program asked fh.steps for,
	// capped by the track (0: unknown); ValMs the final validation's time.
	// Both size the full run's time limit after a fast check.
	PlannedSteps int     `json:"planned_steps,omitempty"`
	ValMs        float64 `json:"val_ms,omitempty"`
}
