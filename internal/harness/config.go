package harness

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
	// The validation file is read only by the harness.
	TrainFiles []string `json:"train_files"`
	ValFile    string   `json:"val_file"`
	VocabSize  int      `json:"vocab_size"`
	BOSID      int      `json:"bos_id"`

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

	// Telemetry.
	TelemetryPath string `json:"telemetry_path"`
	LogEvery      int    `json:"log_every"`     // metrics every N steps (and the last)
	ValEvery      int    `json:"val_every"`     // 0: only the final validation
	ProfileSteps  []int  `json:"profile_steps"` // [first, last] profiled step; empty: none
	TopK          int    `json:"top_k"`

	// CompileBudgetMs bounds the untimed work before train_begin.
	CompileBudgetMs int64 `json:"compile_budget_ms"`

	// Probe configures the causality probe run by finish (full mode).
	Probe ProbeConfig `json:"probe"`
}

// ProbeConfig configures the causality probe.
type ProbeConfig struct {
	Enabled     bool `json:"enabled"`
	Sequences   int  `json:"sequences"`    // validation sequences probed
	Positions   int  `json:"positions"`    // perturbed positions per sequence
	DocIsolated bool `json:"doc_isolated"` // check that BOS isolates documents
}
