package track

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/frontier-bench/frontier/internal/yamlfile"
)

// SpecFile is the name of a track's specification inside its folder.
const SpecFile = "track.yaml"

// FieldError is one invalid value, located in the source file.
type FieldError = yamlfile.Error

// Parse decodes and validates a spec. file names the source in errors.
// Unknown keys, wrong types and invalid values are errors with line:column.
func Parse(file string, b []byte) (*Spec, error) {
	s := &Spec{}
	if err := yamlfile.Decode(file, b, s, "the track spec is empty: it needs at least name, reference, data and target_val_loss"); err != nil {
		return nil, err
	}
	s.applyDefaults()
	if errs := s.validate(); len(errs) > 0 {
		yamlfile.Locate(file, b, errs)
		return nil, yamlfile.Join(errs)
	}
	return s, nil
}

// Bounds on values no track needs more of; past them a value is a typo
// (threads: 100000) that would surface much later, as a hang or a crash.
const (
	MaxThreads = 1024
	MaxGPUs    = 64
	// MaxLimit bounds every time limit: a week (full_run_max defaults to
	// four times full_run, which must not overflow).
	MaxLimit = Duration(7 * 24 * time.Hour)
)

// fileName says what is wrong with name as a file (glob: a pattern of
// files) inside the data folder: "" when nothing is.
func fileName(name string, glob bool) string {
	switch {
	case strings.ContainsAny(name, `/\`):
		return "a file name inside the data folder, without slashes"
	case name == "." || name == "..":
		return "a file name inside the data folder, not a folder"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "a file name without control characters"
	}
	if glob {
		if _, err := filepath.Match(name, ""); err != nil {
			return "not a valid pattern: " + err.Error()
		}
	}
	return ""
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
var hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (s *Spec) applyDefaults() {
	if s.Contract == "" {
		s.Contract = "harness"
	}
	if s.Launcher.Kind == "" {
		s.Launcher.Kind = "python"
	}
	if s.Launcher.NProcPerNode == 0 {
		s.Launcher.NProcPerNode = 1
	}
	if s.Data.Format == "" {
		s.Data.Format = "speedrun-u16"
	}
	if s.Data.ValBatchSeqs == 0 {
		s.Data.ValBatchSeqs = 16
	}
	if s.Limits.FastCheck == 0 {
		s.Limits.FastCheck = Duration(120e9)
	}
	if s.Limits.CompileBudget == 0 {
		s.Limits.CompileBudget = Duration(600e9)
	}
	if s.Limits.FastSteps == 0 {
		s.Limits.FastSteps = 5
	}
	if s.Limits.MaxTasks == 0 {
		s.Limits.MaxTasks = 4096
	}
	if s.Limits.FullRunMax == 0 {
		s.Limits.FullRunMax = 4 * s.Limits.FullRun
	}
	if s.Limits.Disk == 0 {
		s.Limits.Disk = 1 << 30
	}
	if s.Telemetry.LogEvery == 0 {
		s.Telemetry.LogEvery = 25
	}
	if s.Telemetry.TopK == 0 {
		s.Telemetry.TopK = 15
	}
	if s.Hardware.Device == "" {
		s.Hardware.Device = "cpu"
	}
	if s.Hardware.Clock == "" {
		s.Hardware.Clock = ClockWall
	}
	if s.Verification.Repeats == 0 {
		s.Verification.Repeats = 1
	}
	if s.Verification.Alpha == 0 {
		s.Verification.Alpha = 0.01
	}
	if s.Verification.MaxValidationTokenCost == 0 {
		s.Verification.MaxValidationTokenCost = 6
	}
}

func (s *Spec) validate() []*FieldError {
	var errs []*FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Name == "" {
		bad("name", "required: a short lower-case name like tiny or nanogpt")
	} else if !nameRE.MatchString(s.Name) {
		bad("name", "%q: use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", s.Name)
	}
	if s.Reference == "" {
		bad("reference", "required: the reference program's file name, relative to the track folder")
	} else if strings.HasPrefix(s.Reference, "/") || strings.Contains(s.Reference, "..") {
		bad("reference", "%q: must be a path inside the track folder", s.Reference)
	}
	switch s.Contract {
	case "harness", "log":
	default:
		bad("contract", "%q: use harness (the program uses frontier_harness) or log (an unmodified speedrun script)", s.Contract)
	}
	if s.Launcher.NProcPerNode > MaxGPUs {
		bad("launcher.nproc_per_node", "%d: at most %d processes on a node", s.Launcher.NProcPerNode, MaxGPUs)
	}
	switch s.Launcher.Kind {
	case "python":
		if s.Launcher.NProcPerNode != 1 {
			bad("launcher.nproc_per_node", "%d: the python launcher runs one process; use kind: torchrun for more", s.Launcher.NProcPerNode)
		}
	case "torchrun":
		if s.Launcher.NProcPerNode < 1 {
			bad("launcher.nproc_per_node", "%d: must be at least 1", s.Launcher.NProcPerNode)
		}
	default:
		bad("launcher.kind", "%q: use python or torchrun", s.Launcher.Kind)
	}

	d := &s.Data
	if d.Builtin != "" && d.Builtin != "tiny" {
		bad("data.builtin", "%q: the only built-in data generator is tiny", d.Builtin)
	}
	if d.Format != "speedrun-u16" {
		bad("data.format", "%q: the only supported format is speedrun-u16 (256 x int32 header, uint16 tokens)", d.Format)
	}
	if d.Train == "" {
		bad("data.train", "required: a glob of training shards, like fineweb_train_*.bin")
	} else if msg := fileName(d.Train, true); msg != "" {
		bad("data.train", "%q: %s", d.Train, msg)
	}
	if d.Val == "" {
		bad("data.val", "required: the validation shard, like fineweb_val_000000.bin")
	} else if msg := fileName(d.Val, false); msg != "" {
		bad("data.val", "%q: %s", d.Val, msg)
	}
	switch {
	case d.Dir == "":
	case d.Builtin != "" && filepath.IsAbs(d.Dir):
		// frontier writes the built-in data itself: never outside its own
		// data root.
		bad("data.dir", "%q: frontier generates the built-in %s data under its data root; name a folder there (or leave dir out), or give the track's folder with data: in frontier.yaml", d.Dir, d.Builtin)
	case !filepath.IsAbs(d.Dir) && !filepath.IsLocal(d.Dir):
		bad("data.dir", "%q: a folder under the data root (without '..'), or an absolute path", d.Dir)
	case strings.ContainsFunc(d.Dir, unicode.IsControl):
		bad("data.dir", "%q: a folder name without control characters", d.Dir)
	}
	if d.VocabSize < 2 || d.VocabSize > 65536 {
		bad("data.vocab_size", "%d: must be between 2 and 65536 (tokens are uint16)", d.VocabSize)
	} else if d.BOSID < 0 || d.BOSID >= d.VocabSize {
		bad("data.bos_id", "%d: must be a token id below vocab_size (%d)", d.BOSID, d.VocabSize)
	}
	if d.ValSeqLen <= 0 {
		bad("data.val_seq_len", "%d: must be positive", d.ValSeqLen)
	}
	if d.ValTokens <= 0 {
		bad("data.val_tokens", "%d: must be positive", d.ValTokens)
	} else if d.ValSeqLen > 0 && d.ValTokens%int64(d.ValSeqLen) != 0 {
		bad("data.val_tokens", "%d: must be a multiple of val_seq_len (%d) so that every window is whole", d.ValTokens, d.ValSeqLen)
	}
	if d.ValBatchSeqs < 1 {
		bad("data.val_batch_seqs", "%d: must be at least 1", d.ValBatchSeqs)
	}
	seen := map[string]bool{}
	for i, sh := range d.Shards {
		p := fmt.Sprintf("data.shards[%d]", i)
		switch {
		case sh.File == "":
			bad(p+".file", "required")
		case fileName(sh.File, false) != "":
			bad(p+".file", "%q: %s", sh.File, fileName(sh.File, false))
		case seen[sh.File]:
			bad(p+".file", "%q is pinned twice", sh.File)
		}
		seen[sh.File] = true
		if sh.File == d.Val {
			if d.ValTokens+1 > sh.Tokens && sh.Tokens > 0 {
				bad("data.val_tokens", "%d: the validation shard %s has only %d tokens; at most %d can be evaluated", d.ValTokens, sh.File, sh.Tokens, sh.Tokens-1)
			}
		}
		if !hexRE.MatchString(sh.SHA256) {
			bad(p+".sha256", "%q: must be 64 lower-case hex digits (sha256sum output), in quotes so YAML keeps it a string", sh.SHA256)
		}
		if sh.Tokens <= 0 {
			bad(p+".tokens", "%d: must be positive", sh.Tokens)
		}
	}
	if math.IsNaN(d.LossFloor) || d.LossFloor < 0 {
		bad("data.loss_floor", "%v: must be zero (unknown) or positive", d.LossFloor)
	}

	if !(s.TargetValLoss > 0) || math.IsInf(s.TargetValLoss, 0) {
		bad("target_val_loss", "%v: required and positive, like 3.28", s.TargetValLoss)
	} else if d.LossFloor > 0 && d.LossFloor >= s.TargetValLoss {
		bad("target_val_loss", "%v: must be above the loss floor %v, which no program can beat", s.TargetValLoss, d.LossFloor)
	}

	l := &s.Limits
	if l.FullRun <= 0 {
		bad("limits.full_run", "required: the wall-clock limit of a full run, like 10m")
	}
	for _, lim := range []struct {
		key string
		d   Duration
	}{{"limits.fast_check", l.FastCheck}, {"limits.full_run", l.FullRun}, {"limits.full_run_max", l.FullRunMax}, {"limits.compile_budget", l.CompileBudget}, {"verification.validation_allowance", s.Verification.ValidationAllowance}} {
		if lim.d > MaxLimit {
			bad(lim.key, "%v: at most %v", lim.d.D(), MaxLimit.D())
		}
	}
	if l.FastCheck < 0 {
		bad("limits.fast_check", "must be positive")
	}
	if l.CompileBudget < 0 {
		bad("limits.compile_budget", "must be positive")
	}
	if l.FastSteps < 1 || l.FastSteps > 10000 {
		bad("limits.fast_steps", "%d: must be between 1 and 10000: the fast check is a few steps", l.FastSteps)
	}
	if l.FastValTokens < 0 || (l.FastValTokens > 0 && d.ValSeqLen > 0 && l.FastValTokens%int64(d.ValSeqLen) != 0) {
		bad("limits.fast_val_tokens", "%d: must be a positive multiple of val_seq_len (%d), or 0 for one batch", l.FastValTokens, d.ValSeqLen)
	}
	if l.MaxTasks < 16 || l.MaxTasks > 1<<22 {
		bad("limits.max_tasks", "%d: must be between 16 (it counts threads too: PyTorch starts several) and 4194304 (the kernel's own limit)", l.MaxTasks)
	}
	if l.FullRunMax < l.FullRun {
		bad("limits.full_run_max", "%v: must be at least full_run (%v)", l.FullRunMax, l.FullRun)
	}
	if l.Disk < 1<<20 {
		bad("limits.disk", "%d bytes: a run folder needs room for the program and its temporary files; use at least 1MiB", l.Disk)
	}
	if l.Memory != 0 && l.Memory < 64<<20 {
		bad("limits.memory", "%d bytes: too small for a Python process with PyTorch; use at least 64MiB, or 0 for no limit", l.Memory)
	}
	if l.MaxSteps < 0 {
		bad("limits.max_steps", "%d: must be 0 (no cap) or positive", l.MaxSteps)
	}

	t := &s.Telemetry
	if t.LogEvery < 1 {
		bad("telemetry.log_every", "%d: must be at least 1", t.LogEvery)
	}
	if t.ValEvery < 0 {
		bad("telemetry.val_every", "%d: must be 0 (final validation only) or positive", t.ValEvery)
	}
	if len(t.ProfileSteps) != 0 && (len(t.ProfileSteps) != 2 || t.ProfileSteps[0] < 0 || t.ProfileSteps[1] < t.ProfileSteps[0]) {
		bad("telemetry.profile_steps", "%v: use [first, last] with 0 <= first <= last, or leave it out", t.ProfileSteps)
	}
	if t.TopK < 1 || t.TopK > 100 {
		bad("telemetry.top_k", "%d: must be between 1 and 100", t.TopK)
	}

	h := &s.Hardware
	switch h.Device {
	case "cpu":
		if h.GPUs != 0 {
			bad("hardware.gpus", "%d: a cpu track uses no GPUs", h.GPUs)
		}
	case "cuda":
		if h.GPUs < 1 {
			bad("hardware.gpus", "%d: a cuda track needs at least one GPU", h.GPUs)
		} else if s.Launcher.Kind == "torchrun" && s.Launcher.NProcPerNode != h.GPUs {
			bad("launcher.nproc_per_node", "%d: must equal hardware.gpus (%d): one process per GPU", s.Launcher.NProcPerNode, h.GPUs)
		}
	default:
		bad("hardware.device", "%q: use cpu or cuda", h.Device)
	}
	if h.Threads < 0 || h.Threads > MaxThreads {
		bad("hardware.threads", "%d: must be 0 (torch's default) or a number of threads up to %d", h.Threads, MaxThreads)
	}
	switch h.Clock {
	case ClockWall:
	case ClockCPU:
		if h.Device != "cpu" || s.Contract != "harness" {
			bad("hardware.clock", "cpu: only a cpu track of the harness contract can be timed by CPU time (this one is %s, %s contract); use wall", h.Device, s.Contract)
		}
	default:
		bad("hardware.clock", "%q: use wall (the default) or cpu", h.Clock)
	}
	if h.GPUs > MaxGPUs {
		bad("hardware.gpus", "%d: at most %d GPUs on a node", h.GPUs, MaxGPUs)
	}
	if !(h.ReferenceStepMs >= 0) || math.IsInf(h.ReferenceStepMs, 0) {
		bad("hardware.reference_step_ms", "%v: want the reference's milliseconds per step on the calibration machine (0: not given)", h.ReferenceStepMs)
	}

	v := &s.Verification
	if v.Repeats < 1 || v.Repeats > 1000 {
		bad("verification.repeats", "%d: must be between 1 and 1000", v.Repeats)
	}
	if !(v.Alpha > 0 && v.Alpha < 0.5) {
		bad("verification.alpha", "%v: must be between 0 and 0.5, like 0.01", v.Alpha)
	}
	if !(v.MaxNoise >= 0 && v.MaxNoise < 1) {
		bad("verification.max_noise", "%v: must be in nats of log-probability in [0, 1), like 1e-2 (0: the judge's default, 1e-3)", v.MaxNoise)
	}
	if math.IsNaN(v.MaxValidationShare) || math.IsInf(v.MaxValidationShare, 0) || v.MaxValidationShare > 10 {
		bad("verification.max_validation_share", "%v: want a share of the train time like 0.5 (0 or negative: no bound)", v.MaxValidationShare)
	}
	if math.IsNaN(v.MaxValidationTokenCost) || math.IsInf(v.MaxValidationTokenCost, 0) || v.MaxValidationTokenCost < 0 {
		bad("verification.max_validation_token_cost", "%v: want training tokens a validation token may cost, like 3", v.MaxValidationTokenCost)
	}
	if v.ValidationAllowance < 0 {
		bad("verification.validation_allowance", "%v: must not be negative", v.ValidationAllowance)
	}
	if math.IsNaN(v.MinInitialLoss) || math.IsInf(v.MinInitialLoss, 0) {
		bad("verification.min_initial_loss", "%v: want a loss in nats (0: the default, negative: off)", v.MinInitialLoss)
	}
	if v.Probe.Enabled && (v.Probe.Sequences < 1 || v.Probe.Positions < 1) {
		bad("verification.probe", "an enabled probe needs sequences >= 1 and positions >= 1")
	}
	if _, ruleErrs := resolveStaticRules(s.Contract, v.StaticRules); ruleErrs != nil {
		for i := range v.StaticRules {
			if msg, ok := ruleErrs[i]; ok {
				bad(fmt.Sprintf("verification.static_rules[%d]", i), "%s", msg)
			}
		}
	}
	return errs
}
