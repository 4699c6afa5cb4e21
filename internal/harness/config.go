package harness

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
)

// ConfigSchema is the version of the injected configuration. The Python
// harness refuses a file with another version.
const ConfigSchema = 1

// Config is what the environment injects into a run: written by the
// evaluator as config.json (read-only) in the run folder and read by the
// Python harness through FRONTIER_CONFIG. Whatever the program sets, these
// values win.
type Config struct {
	Schema int    `json:"schema"`
	Track  string `json:"track"`
	Mode   string `json:"mode"` // "fast" or "full"

	// Data. Train files are absolute paths; the program reads them itself.
	// The validation shard is read only by the harness, at import, before
	// any program code runs: from ValFD, a descriptor the process inherits
	// (the harness closes it after reading, so the program has neither the
	// path nor the descriptor; the evaluator hides the path in the
	// sandbox), or else from ValFile, a path (for runs started by hand and
	// tests: the program could open it too).
	TrainFiles []string `json:"train_files"`
	ValFile    string   `json:"val_file,omitempty"`
	ValFD      int      `json:"val_fd,omitempty"`
	// KeyFD is an inherited descriptor holding the telemetry key (64 hex
	// digits), read and closed by the harness before the program runs;
	// every line it writes then carries a MAC (see ReadAuthenticated).
	// 0: unauthenticated telemetry (runs started by hand, tests).
	KeyFD     int `json:"key_fd,omitempty"`
	VocabSize int `json:"vocab_size"`
	BOSID     int `json:"bos_id"`

	// Validation: exactly ValTokens tokens of the validation file, cut into
	// sequences of ValSeqLen, ValBatchSeqs sequences per logits_fn call.
	ValTokens    int64 `json:"val_tokens"`
	ValSeqLen    int   `json:"val_seq_len"`
	ValBatchSeqs int   `json:"val_batch_seqs"`

	Seed    int    `json:"seed"`
	Device  string `json:"device"` // "cpu" or "cuda"
	Threads int    `json:"threads"`

	// Step limits. MaxSteps caps fh.steps(n) when > 0. In fast mode the
	// harness yields FastSteps steps and validates on FastValTokens.
	MaxSteps      int   `json:"max_steps"`
	FastSteps     int   `json:"fast_steps"`
	FastValTokens int64 `json:"fast_val_tokens"`

	// WorldSize is the number of processes the launcher starts: 0 or 1 runs
	// one python process, more starts that many workers on one node with
	// torchrun's environment. The harness refuses a WORLD_SIZE that differs.
	WorldSize int `json:"world_size"`

	// Telemetry. TelemetryLevel "full" (or empty) measures everything;
	// "off" keeps only what decides the result (clock, validation, final)
	// and exists to measure the telemetry's own overhead.
	TelemetryPath  string `json:"telemetry_path"`
	TelemetryLevel string `json:"telemetry_level,omitempty"`
	LogEvery       int    `json:"log_every"`     // metrics every N steps (and the last)
	ValEvery       int    `json:"val_every"`     // 0: only the final validation
	ProfileSteps   []int  `json:"profile_steps"` // [first, last] profiled step; empty: none
	TopK           int    `json:"top_k"`

	// CompileBudgetMs bounds the untimed work before train_begin.
	CompileBudgetMs int64 `json:"compile_budget_ms"`

	// Probe configures the causality probe run by finish (full mode).
	Probe ProbeConfig `json:"probe"`

	// Verify configures the behavioural checks around validation.
	Verify VerifyConfig `json:"verify,omitzero"`
}

// DefaultMaxNoise is the harness's VerifyConfig.MaxNoise when it is 0.
const DefaultMaxNoise = 1e-4

// VerifyConfig configures the behavioural checks (docs/harness.md).
type VerifyConfig struct {
	// MaxNoise is the largest difference allowed between the logits of two
	// calls on the same input, as a fraction of the logit scale (the
	// largest |logit|, at least 1); 0 means DefaultMaxNoise. More noise
	// than that fails the run (ErrNondeterministic): the causality and
	// state checks cannot tell a leak smaller than the noise from the
	// noise.
	MaxNoise float64 `json:"max_noise,omitempty"`
	// AllowNondeterministic accepts any noise; the checks then tolerate
	// four times the measured noise, and a leak smaller than that passes.
	AllowNondeterministic bool `json:"allow_nondeterministic,omitempty"`
	// MinInitialLoss is the lowest loss the model that started the clock
	// may score on a batch of unscored text (an untrained model scores
	// about ln(vocab_size)); lower means its parameters were fitted to data
	// before train_begin (ErrPretrain). 0: no check.
	MinInitialLoss float64 `json:"min_initial_loss,omitempty"`
}

// ProbeConfig configures the causality probe.
type ProbeConfig struct {
	Enabled     bool `json:"enabled"`
	Sequences   int  `json:"sequences"`    // validation sequences probed
	Positions   int  `json:"positions"`    // perturbed positions per sequence
	DocIsolated bool `json:"doc_isolated"` // check that BOS isolates documents
}

// Modes and telemetry levels.
const (
	ModeFast = "fast"
	ModeFull = "full"

	TelemetryFull = "full"
	TelemetryOff  = "off"
)

// Validate reports every field that the Python harness would refuse or
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
	if c.TelemetryLevel != "" && c.TelemetryLevel != TelemetryFull && c.TelemetryLevel != TelemetryOff {
		bad("telemetry_level is %q; want %q or %q", c.TelemetryLevel, TelemetryFull, TelemetryOff)
	}
	if c.VocabSize <= 0 || c.VocabSize > 1<<16 {
		bad("vocab_size is %d; want 1..65536 (tokens are uint16)", c.VocabSize)
	}
	if c.BOSID < 0 || c.BOSID >= c.VocabSize {
		bad("bos_id %d is outside the vocabulary [0, %d)", c.BOSID, c.VocabSize)
	}
	switch {
	case c.ValFD < 0 || c.ValFD > 0 && c.ValFD < 3:
		bad("val_fd is %d; want an inherited descriptor >= 3 (or 0: read val_file)", c.ValFD)
	case c.KeyFD < 0 || c.KeyFD > 0 && c.KeyFD < 3 || c.KeyFD > 0 && c.KeyFD == c.ValFD:
		bad("key_fd is %d; want an inherited descriptor >= 3 other than val_fd (or 0: no key)", c.KeyFD)
	case c.ValFD == 0 && c.ValFile == "":
		bad("neither val_fd nor val_file is set: the harness has no validation data")
	}
	if !(c.Verify.MinInitialLoss >= 0) || math.IsInf(c.Verify.MinInitialLoss, 0) {
		bad("verify.min_initial_loss is %v; want a loss >= 0 (0: no check)", c.Verify.MinInitialLoss)
	}
	if c.Verify.MaxNoise < 0 || math.IsNaN(c.Verify.MaxNoise) {
		bad("verify.max_noise is %v; want a fraction >= 0 (0: the default %g)", c.Verify.MaxNoise, DefaultMaxNoise)
	}
	if c.ValSeqLen <= 0 {
		bad("val_seq_len is %d; want > 0", c.ValSeqLen)
	} else {
		if c.ValTokens <= 0 || c.ValTokens%int64(c.ValSeqLen) != 0 {
			bad("val_tokens %d is not a positive multiple of val_seq_len %d", c.ValTokens, c.ValSeqLen)
		}
		if c.Mode == ModeFast && (c.FastValTokens <= 0 || c.FastValTokens%int64(c.ValSeqLen) != 0) {
			bad("fast_val_tokens %d is not a positive multiple of val_seq_len %d", c.FastValTokens, c.ValSeqLen)
		}
	}
	if c.ValBatchSeqs <= 0 {
		bad("val_batch_seqs is %d; want > 0", c.ValBatchSeqs)
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
	if !filepath.IsAbs(c.TelemetryPath) {
		bad("telemetry_path %q is not an absolute path", c.TelemetryPath)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid harness config: %w", err)
	}
	return nil
}
