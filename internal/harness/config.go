package harness

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
)

// ConfigSchema is the version of the program's injected configuration. The
// Python client refuses a file with another version.
const ConfigSchema = 2

// Config is what the program is told: written by the evaluator as
// config.json (read-only) in the run folder and read by the harness client
// through FRONTIER_CONFIG. It holds nothing that decides a verdict (no
// validation data, no clock, no key): that is the judge's (JudgeConfig).
type Config struct {
	Schema int    `json:"schema"`
	Track  string `json:"track"`
	Mode   string `json:"mode"` // "fast" or "full"
	// Role is RoleProgram (or empty) for the process that trains, and
	// RoleScorer for the fresh process that answers the final validation
	// again from the state the training process exported at fh.finish().
	Role string `json:"role,omitempty"`
	// ExportMaxBytes bounds the tensors of that state (0: no bound).
	ExportMaxBytes int64 `json:"export_max_bytes,omitempty"`

	// TrainFiles are the training shards' base names. They appear in
	// DataDir/<rank>/ at fh.train_begin(), as links to descriptors the
	// judge sends then: before the clock the program has no training data.
	TrainFiles []string `json:"train_files"`
	DataDir    string   `json:"data_dir"`
	VocabSize  int      `json:"vocab_size"`
	BOSID      int      `json:"bos_id"`

	// The shape of validation calls: ValBatchSeqs sequences of ValSeqLen.
	ValSeqLen    int `json:"val_seq_len"`
	ValBatchSeqs int `json:"val_batch_seqs"`

	Seed    int    `json:"seed"`
	Device  string `json:"device"` // "cpu" or "cuda"
	Threads int    `json:"threads"`

	// Step limits: fh.steps(n) yields at most MaxSteps (when > 0), and in
	// fast mode FastSteps. The judge enforces them.
	MaxSteps  int `json:"max_steps"`
	FastSteps int `json:"fast_steps"`

	// WorldSize is the number of processes the launcher starts: 0 or 1 runs
	// one, more starts that many workers on one node with torchrun's
	// environment, each with its own socket to the judge.
	WorldSize int `json:"world_size"`

	// Telemetry the client measures (advisory): TelemetryLevel "full" (or
	// empty) or "off" (no sections, no profiler: to measure their cost).
	TelemetryLevel string `json:"telemetry_level,omitempty"`
	LogEvery       int    `json:"log_every"`     // the train loss every N steps (and the last)
	ValEvery       int    `json:"val_every"`     // designated validations; 0: only the final one
	ProfileSteps   []int  `json:"profile_steps"` // [first, last] profiled step; empty: none
	TopK           int    `json:"top_k"`

	// JudgeFD is the descriptor of the socket to the judge (one process;
	// the launcher gives worker r descriptor JudgeFD + r).
	JudgeFD int `json:"judge_fd"`
}

// Modes and telemetry levels.
const (
	ModeFast = "fast"
	ModeFull = "full"

	TelemetryFull = "full"
	TelemetryOff  = "off"

	RoleProgram = "program"
	RoleScorer  = "scorer"
)

// Validate reports every field that the Python client would refuse or
// misread, so that a bad config fails before a process is started.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Schema != ConfigSchema {
		bad("schema is %d; this harness reads schema %d", c.Schema, ConfigSchema)
	}
	if c.Mode != ModeFast && c.Mode != ModeFull {
		bad("mode is %q; want %q or %q", c.Mode, ModeFast, ModeFull)
	}
	if c.Role != "" && c.Role != RoleProgram && c.Role != RoleScorer {
		bad("role is %q; want %q or %q", c.Role, RoleProgram, RoleScorer)
	}
	if c.ExportMaxBytes < 0 {
		bad("export_max_bytes is %d; want >= 0", c.ExportMaxBytes)
	}
	if c.TelemetryLevel != "" && c.TelemetryLevel != TelemetryFull && c.TelemetryLevel != TelemetryOff {
		bad("telemetry_level is %q; want %q or %q", c.TelemetryLevel, TelemetryFull, TelemetryOff)
	}
	if c.VocabSize <= 0 || c.VocabSize > 1<<16 {
		bad("vocab_size is %d; want 1..65536 (tokens are uint16)", c.VocabSize)
	}
	if c.BOSID < 0 || c.BOSID >= c.VocabSize {
		bad("bos_id %d is outside the vocabulary [0, %d)", c.BOSID, c.VocabSize)
	}
	for _, f := range c.TrainFiles {
		if f == "" || f != filepath.Base(f) || f == "." || f == ".." {
			bad("train file %q is not a base name", f)
		}
	}
	if !filepath.IsAbs(c.DataDir) {
		bad("data_dir %q is not an absolute path", c.DataDir)
	}
	if c.ValSeqLen <= 0 || c.ValBatchSeqs <= 0 {
		bad("val_seq_len %d and val_batch_seqs %d must be > 0", c.ValSeqLen, c.ValBatchSeqs)
	}
	if c.Device != "cpu" && c.Device != "cuda" {
		bad("device is %q; want \"cpu\" or \"cuda\"", c.Device)
	}
	if c.Threads < 0 || c.WorldSize < 0 || c.MaxSteps < 0 || c.LogEvery < 0 || c.ValEvery < 0 || c.TopK < 0 {
		bad("threads, world_size, max_steps, log_every, val_every and top_k must not be negative")
	}
	if c.Mode == ModeFast && c.FastSteps <= 0 {
		bad("fast_steps is %d; the fast check needs at least one step", c.FastSteps)
	}
	switch {
	case len(c.ProfileSteps) == 0:
	case len(c.ProfileSteps) != 2 || c.ProfileSteps[0] < 0 || c.ProfileSteps[1] < c.ProfileSteps[0]:
		bad("profile_steps is %v; want [first, last] with 0 <= first <= last", c.ProfileSteps)
	}
	if c.JudgeFD < 3 {
		bad("judge_fd is %d; want an inherited descriptor >= 3", c.JudgeFD)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid harness config: %w", err)
	}
	return nil
}

// JudgeConfig is what the judge of one run reads: everything that decides
// the verdict. It is written outside the run folder, where the program
// cannot read it.
type JudgeConfig struct {
	Mode      string `json:"mode"`
	VocabSize int    `json:"vocab_size"`
	BOSID     int    `json:"bos_id"`
	Device    string `json:"device"`

	// ValFile is the validation shard. The final validation of a full run
	// scores its first ValTokens tokens (plus one target); the fast check,
	// intermediate validations and the clock-start check score the text
	// after them, so that the scored windows are shown only once, after
	// training.
	ValFile       string `json:"val_file"`
	ValTokens     int64  `json:"val_tokens"`
	FastValTokens int64  `json:"fast_val_tokens"`
	ValSeqLen     int    `json:"val_seq_len"`
	ValBatchSeqs  int    `json:"val_batch_seqs"`

	// TrainFiles are the training shards' paths, opened by the judge and
	// sent to each process at its train_begin.
	TrainFiles []string `json:"train_files"`

	WorldSize       int   `json:"world_size"`
	MaxSteps        int   `json:"max_steps"`
	FastSteps       int   `json:"fast_steps"`
	LogEvery        int   `json:"log_every"`
	ValEvery        int   `json:"val_every"`
	CompileBudgetMs int64 `json:"compile_budget_ms"`

	// Scorer asks for the scorer's sockets (one per process, like the
	// program's): the final validation is then answered again by a fresh
	// process of the program (see docs/threat-model.md). ExportMaxBytes
	// bounds the state the training process hands it (0: no bound).
	Scorer         bool  `json:"scorer"`
	ExportMaxBytes int64 `json:"export_max_bytes,omitempty"`

	Probe  ProbeConfig  `json:"probe"`
	Verify VerifyConfig `json:"verify"`

	// TelemetryFD and ClientFDs are the judge's inherited descriptors: the
	// pipe its telemetry goes to, and one socket per process of the run.
	TelemetryFD int   `json:"telemetry_fd"`
	ClientFDs   []int `json:"client_fds"`
	ScorerFDs   []int `json:"scorer_fds,omitempty"`
}

// DefaultMaxNoise is the judge's VerifyConfig.MaxNoise when it is 0.
const DefaultMaxNoise = 1e-3

// VerifyConfig configures the judge's checks (docs/harness.md).
type VerifyConfig struct {
	// MaxNoise is the largest difference allowed between the
	// log-probabilities of two calls on the same input, in nats; 0 means
	// DefaultMaxNoise. More noise than that fails the run
	// (ErrNondeterministic): the causality and state checks cannot tell a
	// leak smaller than the noise from the noise.
	MaxNoise float64 `json:"max_noise,omitempty"`
	// AllowNondeterministic accepts any noise; the checks then tolerate
	// four times the measured noise, and a leak smaller than that passes.
	AllowNondeterministic bool `json:"allow_nondeterministic,omitempty"`
	// MinInitialLoss is the lowest loss the model that starts the clock
	// may score on a batch of unscored text, when the program passes
	// logits_fn to fh.train_begin (an untrained model scores about
	// ln(vocab_size)); lower means it was fitted to data before the clock
	// (ErrPretrain). 0: no check.
	MinInitialLoss float64 `json:"min_initial_loss,omitempty"`
	// MaxValidationShare, MaxValidationTokenCost and ValidationAllowanceMs
	// bound the validations the judge runs outside the clock (designated
	// and final): a validation token may cost at most MaxValidationTokenCost
	// training tokens (by the program's reported tokens), all of them
	// together at most MaxValidationShare of the train time, and never
	// less than the allowance (ErrValidationCost). A share of 0: no limit;
	// a token cost of 0: the share alone.
	MaxValidationShare     float64 `json:"max_validation_share,omitempty"`
	MaxValidationTokenCost float64 `json:"max_validation_token_cost,omitempty"`
	ValidationAllowanceMs  int64   `json:"validation_allowance_ms,omitempty"`
}

// ProbeConfig configures the causality probe.
type ProbeConfig struct {
	Enabled     bool `json:"enabled"`
	Sequences   int  `json:"sequences"`    // validation sequences probed
	Positions   int  `json:"positions"`    // perturbed positions per sequence
	DocIsolated bool `json:"doc_isolated"` // check that BOS isolates documents
}

// Validate reports every field the judge would refuse or misread.
func (c JudgeConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Mode != ModeFast && c.Mode != ModeFull {
		bad("mode is %q; want %q or %q", c.Mode, ModeFast, ModeFull)
	}
	if c.VocabSize <= 1 || c.VocabSize > 1<<16 {
		bad("vocab_size is %d; want 2..65536", c.VocabSize)
	}
	if c.BOSID < 0 || c.BOSID >= c.VocabSize {
		bad("bos_id %d is outside the vocabulary [0, %d)", c.BOSID, c.VocabSize)
	}
	if !filepath.IsAbs(c.ValFile) {
		bad("val_file %q is not an absolute path", c.ValFile)
	}
	for _, f := range c.TrainFiles {
		if !filepath.IsAbs(f) {
			bad("train file %q is not an absolute path", f)
		}
	}
	if c.ValSeqLen <= 0 || c.ValBatchSeqs <= 0 {
		bad("val_seq_len %d and val_batch_seqs %d must be > 0", c.ValSeqLen, c.ValBatchSeqs)
	} else {
		if c.ValTokens <= 0 || c.ValTokens%int64(c.ValSeqLen) != 0 {
			bad("val_tokens %d is not a positive multiple of val_seq_len %d", c.ValTokens, c.ValSeqLen)
		}
		if c.Mode == ModeFast && (c.FastValTokens <= 0 || c.FastValTokens%int64(c.ValSeqLen) != 0) {
			bad("fast_val_tokens %d is not a positive multiple of val_seq_len %d", c.FastValTokens, c.ValSeqLen)
		}
	}
	if c.Device != "cpu" && c.Device != "cuda" {
		bad("device is %q; want \"cpu\" or \"cuda\"", c.Device)
	}
	if !(c.Verify.MinInitialLoss >= 0) || math.IsInf(c.Verify.MinInitialLoss, 0) {
		bad("verify.min_initial_loss is %v; want a loss >= 0 (0: no check)", c.Verify.MinInitialLoss)
	}
	if !(c.Verify.MaxNoise >= 0) || math.IsInf(c.Verify.MaxNoise, 0) {
		bad("verify.max_noise is %v; want nats >= 0 (0: the default %g)", c.Verify.MaxNoise, DefaultMaxNoise)
	}
	if !(c.Verify.MaxValidationShare >= 0) || math.IsInf(c.Verify.MaxValidationShare, 0) || c.Verify.ValidationAllowanceMs < 0 ||
		!(c.Verify.MaxValidationTokenCost >= 0) || math.IsInf(c.Verify.MaxValidationTokenCost, 0) {
		bad("verify.max_validation_share %v and validation_allowance_ms %d must not be negative", c.Verify.MaxValidationShare, c.Verify.ValidationAllowanceMs)
	}
	if c.WorldSize < 0 || c.MaxSteps < 0 || c.FastSteps < 0 || c.LogEvery < 0 || c.ValEvery < 0 || c.CompileBudgetMs < 0 {
		bad("world_size, max_steps, fast_steps, log_every, val_every and compile_budget_ms must not be negative")
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid judge config: %w", err)
	}
	return nil
}
