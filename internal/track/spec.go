// Package track holds track specifications: what a candidate program is
// trained on, against which target, under which limits, and how it is
// verified. Specs are strict YAML; built-in tracks are embedded in the binary
// and user tracks are read from folders.
package track

import (
	"fmt"
	"io/fs"
)

// Spec is one track, as written in track.yaml.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Reference is the reference program, relative to the track folder.
	Reference string `yaml:"reference"`
	// Contract is "harness" (the program uses frontier_harness) or "log"
	// (an unmodified speedrun script whose log lines are parsed).
	Contract string   `yaml:"contract"`
	Launcher Launcher `yaml:"launcher"`
	Data     Data     `yaml:"data"`
	// TargetValLoss is the validation loss a run must reach.
	TargetValLoss float64      `yaml:"target_val_loss"`
	Limits        Limits       `yaml:"limits"`
	Telemetry     Telemetry    `yaml:"telemetry"`
	Hardware      Hardware     `yaml:"hardware"`
	Verification  Verification `yaml:"verification"`

	// Dir is the folder the spec was read from; empty for built-in tracks,
	// whose files live in FS.
	Dir string `yaml:"-"`
	// Builtin is true for tracks embedded in the binary.
	Builtin bool `yaml:"-"`

	fsys fs.FS // the track's files when built in
}

// Launcher says how the program is started.
type Launcher struct {
	Kind         string `yaml:"kind"` // "python" or "torchrun"
	NProcPerNode int    `yaml:"nproc_per_node"`
}

// Data describes the data slice.
type Data struct {
	// Builtin names a generator that writes the data ("tiny"); empty when
	// the data comes from the user's data folder.
	Builtin string `yaml:"builtin"`
	// Dir is the data folder; relative paths are resolved against the
	// user's data root. Empty means <data root>/<track name>.
	Dir       string `yaml:"dir"`
	Train     string `yaml:"train"` // glob of training shards, inside Dir
	Val       string `yaml:"val"`   // the validation shard, inside Dir
	Format    string `yaml:"format"`
	VocabSize int    `yaml:"vocab_size"`
	BOSID     int    `yaml:"bos_id"`
	// ValTokens tokens of the validation shard are evaluated, as sequences
	// of ValSeqLen, ValBatchSeqs at a time.
	ValTokens    int64 `yaml:"val_tokens"`
	ValSeqLen    int   `yaml:"val_seq_len"`
	ValBatchSeqs int   `yaml:"val_batch_seqs"`
	// Shards pins every shard the track uses. Built-in data is drawn per
	// installation and pinned by the manifest the build writes next to it,
	// so a built-in track lists none (see Notes).
	Shards []Shard `yaml:"shards"`
	// LossFloor is the Bayes-optimal loss on the validation slice, 0 when
	// unknown. Built-in data has its floor computed from the corpus drawn
	// on this installation, recorded in its manifest, so a built-in track
	// leaves it out (see Notes).
	LossFloor float64 `yaml:"loss_floor"`
}

// Shard pins one data file.
type Shard struct {
	File   string `yaml:"file"`
	SHA256 string `yaml:"sha256"`
	Tokens int64  `yaml:"tokens"`
}

// Limits are wall-clock limits.
type Limits struct {
	FastCheck Duration `yaml:"fast_check"`
	FullRun   Duration `yaml:"full_run"`
	// FullRunMax caps the full run's limit when the fast check shows this
	// machine, or this program, needs more than FullRun (default 4x
	// FullRun): the limit is sized from the fast check's step time.
	FullRunMax    Duration `yaml:"full_run_max"`
	CompileBudget Duration `yaml:"compile_budget"`
	FastSteps     int      `yaml:"fast_steps"`
	FastValTokens int64    `yaml:"fast_val_tokens"`
	MaxSteps      int      `yaml:"max_steps"`
	// Memory bounds the resident memory of a run's processes (0: none);
	// MaxTasks bounds their processes and threads together.
	Memory   ByteSize `yaml:"memory"`
	MaxTasks int      `yaml:"max_tasks"`
	// Disk bounds what a run may write into its folder (default 1GiB): a
	// size-capped tmpfs under bubblewrap, measured otherwise.
	Disk ByteSize `yaml:"disk"`
}

// Telemetry says what the harness measures.
type Telemetry struct {
	LogEvery     int   `yaml:"log_every"`
	ValEvery     int   `yaml:"val_every"`
	ProfileSteps []int `yaml:"profile_steps"`
	TopK         int   `yaml:"top_k"`
}

// Hardware is the class of machine the track is timed on.
type Hardware struct {
	Device  string `yaml:"device"` // "cpu" or "cuda"
	GPUs    int    `yaml:"gpus"`
	Threads int    `yaml:"threads"`
	// ReferenceStepMs is the reference program's time per step on the
	// machine the track was calibrated on (0: not given), so that a slow
	// run can say how much slower this machine is.
	ReferenceStepMs float64 `yaml:"reference_step_ms"`
	// Clock is what a run's time measures: "wall" (the default), the
	// judge's wall clock over the training; or "cpu", the CPU time the
	// program's processes took over the same stretch, which moves far less
	// with the load of a shared machine (cpu tracks of the harness
	// contract only; docs/tracks.md has the figures).
	Clock string `yaml:"clock"`
}

// Clocks a track may be timed by (Hardware.Clock).
const (
	ClockWall = "wall"
	ClockCPU  = "cpu"
)

// Verification configures the anti-gaming checks.
type Verification struct {
	ProtectedRegions bool     `yaml:"protected_regions"`
	StaticRules      []string `yaml:"static_rules"`
	Probe            Probe    `yaml:"probe"`
	Repeats          int      `yaml:"repeats"`
	Alpha            float64  `yaml:"alpha"`
	// MaxNoise is how far the log-probabilities of two logits_fn calls on
	// the same input may differ, in nats; 0 means the judge's default
	// (1e-3). Tracks whose hardware has nondeterministic forward kernels
	// raise it; the probe's tolerances grow with it, so a leak smaller than
	// the noise passes.
	MaxNoise float64 `yaml:"max_noise"`
	// AllowNondeterministic accepts any noise (the checks still run, with
	// tolerances of four times the noise measured).
	AllowNondeterministic bool `yaml:"allow_nondeterministic"`
	// MinInitialLoss is the lowest validation loss the model that starts
	// the clock may score (see harness.VerifyConfig.MinInitialLoss). 0
	// means ln(V) - (ln(V) - target_val_loss)/4; a negative value turns
	// the check off.
	MinInitialLoss float64 `yaml:"min_initial_loss"`
	// MaxValidationTokenCost bounds the validations the judge runs outside
	// the clock (those on the track's designated steps; the final one is
	// timed): a validation token may cost at most this many training
	// tokens of the same run, on the same machine (default 6; a forward
	// pass costs about a third of one). More is computation the clock does
	// not see (rule validation-cost). Measured against the run's own
	// training, the bound moves with the machine's load. MaxValidationShare
	// (a share of the train time, 0: none) and ValidationAllowance (a
	// floor, 0: none) add bounds a track may want; neither is set by
	// default.
	MaxValidationTokenCost float64  `yaml:"max_validation_token_cost"`
	MaxValidationShare     float64  `yaml:"max_validation_share"`
	ValidationAllowance    Duration `yaml:"validation_allowance"`
}

// Probe configures the causality probe.
type Probe struct {
	Enabled     bool `yaml:"enabled"`
	Sequences   int  `yaml:"sequences"`
	Positions   int  `yaml:"positions"`
	DocIsolated bool `yaml:"doc_isolated"`
}

// Notes returns what the spec says that the data overrides, one line
// each, for `frontier track check` and `track show` to print. A built-in
// corpus is drawn from a secret per installation: shard pins and a loss
// floor written in the spec describe some other installation's corpus.
// They are accepted, so that older specs still load, and superseded: the
// corpus's own manifest pins its shards and records its floor.
func (s *Spec) Notes() []string {
	var notes []string
	if s.Data.Builtin != "" && len(s.Data.Shards) > 0 {
		notes = append(notes, fmt.Sprintf("data.shards: ignored: the built-in %s corpus differs per installation, and the manifest written next to it pins its shards; remove them", s.Data.Builtin))
	}
	if s.Data.Builtin != "" && s.Data.LossFloor > 0 {
		notes = append(notes, fmt.Sprintf("data.loss_floor: superseded: the floor of the built-in %s corpus is computed from the corpus drawn on this installation; remove it", s.Data.Builtin))
	}
	return notes
}
