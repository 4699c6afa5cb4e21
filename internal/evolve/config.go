package evolve

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/stats"
)

// Config is the evolve section of frontier.yaml. Every field has a default
// (see Defaults and docs/evolve.md); the zero value means "all defaults".
// Fields whose zero is a meaningful setting are pointers, so that an unset
// key and an explicit 0 differ.
//
//	evolve:
//	  islands: 4
//	  branching_factor: 10
//	  objective: score
//	  meta_prompting: {start_iteration: 20}
//	  budget: {max_iterations: 100, max_usd: 25}
type Config struct {
	// Islands is the number of islands; programs evolve inside an island
	// and meet only through migration. Default 4.
	Islands int `yaml:"islands" json:"islands"`
	// BranchingFactor is the number of children each iteration creates
	// from one sampled parent and prompt context (the paper's B). Default 10.
	BranchingFactor int `yaml:"branching_factor" json:"branching_factor"`
	// ArchiveSize is the number of elite programs kept across islands; the
	// top set of every prompt is drawn from them. Default 20.
	ArchiveSize int `yaml:"archive_size" json:"archive_size"`
	// TopPrograms is |T|: elite programs shown in each prompt. Default 3.
	TopPrograms *int `yaml:"top_programs" json:"top_programs"`
	// DiversePrograms is |D|: non-elite programs shown in each prompt.
	// Default 2.
	DiversePrograms *int `yaml:"diverse_programs" json:"diverse_programs"`
	// Objective ranks programs of the same verdict class: "score" (the
	// paper's step_avg_ms x val_loss), "time" (train time) or "loss"
	// (validation loss); lower is better. Acceptable programs always
	// outrank the others. Default "score".
	Objective string `yaml:"objective" json:"objective"`
	// Migration moves top programs between islands.
	Migration MigrationConfig `yaml:"migration" json:"migration"`
	// Selection chooses parents.
	Selection SelectionConfig `yaml:"selection" json:"selection"`
	// MetaPrompting switches from templated prompts to the two-stage
	// idea-then-implementation prompts.
	MetaPrompting MetaConfig `yaml:"meta_prompting" json:"meta_prompting"`
	// FastFixes is N_fast: how many times a child that fails to apply or
	// fails the fast check goes back to its model with the error before it
	// is recorded as buggy. 0 turns the fix loop off. Default 3.
	FastFixes *int `yaml:"fast_fixes" json:"fast_fixes"`
	// Slots is the number of evaluations (fast checks and full runs) that
	// run at once. 0 means, for a CUDA track, as many runs as the machine's
	// GPUs hold (GPUs / the track's GPUs per run), else 1.
	Slots int `yaml:"slots" json:"slots"`
	// LLMConcurrency is the number of proposals (model calls) in flight at
	// once, across models. Default 4.
	LLMConcurrency int `yaml:"llm_concurrency" json:"llm_concurrency"`
	// Prefetch is how many proposed children may wait for an evaluation
	// slot; proposals stop when the queue holds this many. 0 means
	// 2 x slots.
	Prefetch int `yaml:"prefetch" json:"prefetch"`
	// MaxOpenIterations is how many iterations may be unfinished at once. 1
	// is generational: iteration i+1 is sampled when every child of i is
	// evaluated. 2 (the default) samples the next iteration when the
	// current one runs out of proposals to make, so slots never wait on a
	// model.
	MaxOpenIterations int `yaml:"max_open_iterations" json:"max_open_iterations"`
	// Proposer is "auto" (the models when any are configured, else
	// mutate), "llm" or "mutate". Default "auto".
	Proposer string `yaml:"proposer" json:"proposer"`
	// Models are the ensemble: names of models under llm.models, each with
	// a weight. Empty means every configured model with its llm weight.
	Models []ModelWeight `yaml:"models" json:"models"`
	// Bandit, when its strategy is set, learns which model yields
	// improvements per dollar and replaces the fixed weights.
	Bandit BanditConfig `yaml:"bandit" json:"bandit"`
	// Prompt tunes the prompts.
	Prompt PromptConfig `yaml:"prompt" json:"prompt"`
	// Budget ends the run cleanly when the first limit is reached.
	Budget BudgetConfig `yaml:"budget" json:"budget"`
	// Seed seeds every random choice of the search (parents, inspirations,
	// templates, models). 0 means pick one; it is recorded with the run.
	Seed uint64 `yaml:"seed" json:"seed"`
	// EvalSeed is the seed injected into every evaluated program, so that
	// programs are compared on the same data order. Default 0.
	EvalSeed int `yaml:"eval_seed" json:"eval_seed"`
	// MaxConsecutiveFailures stops the run when this many model calls in a
	// row fail (a wrong key, a server that is down). Default 20.
	MaxConsecutiveFailures int `yaml:"max_consecutive_failures" json:"max_consecutive_failures"`
	// Confirm says how a candidate record (a program that measured faster
	// than the standing record once) is tested before it is called a
	// record (docs/evolve.md, "The record rule").
	Confirm ConfirmConfig `yaml:"confirm" json:"confirm"`
}

// ConfirmConfig says how the search confirms candidate records.
type ConfirmConfig struct {
	// Enabled: the engine tests candidates itself, within the run's
	// budget. Off, candidates stay single timings (frontier runs confirm
	// tests them later). Default true.
	Enabled *bool `yaml:"enabled" json:"enabled"`
	// Pairs is the number of runs of each program in a series (the
	// candidate and the standing record, in alternation). 0 means the
	// smallest number for which the track's alpha is reachable at all
	// (stats.MinPairs: 5 at alpha 0.01).
	Pairs int `yaml:"pairs" json:"pairs"`
	// NoiseDF is how much measured noise (degrees of freedom of the
	// run-to-run variation, from earlier series) the engine needs before
	// it judges a single timing against the noise instead of running a
	// series. Default 4; negative: always run a series.
	NoiseDF int `yaml:"noise_df" json:"noise_df"`
}

// MigrationConfig says when and what migrates.
type MigrationConfig struct {
	// Interval: after every Interval completed iterations, each island
	// sends copies of its best programs to the next island in a ring. 0
	// means 10; a negative value turns migration off.
	Interval int `yaml:"interval" json:"interval"`
	// Count is how many programs each island sends (its top-k). Default 2.
	Count int `yaml:"count" json:"count"`
}

// SelectionConfig says how parents are sampled inside an island.
type SelectionConfig struct {
	// Strategy is "power_law" (the program of rank r, best first, is drawn
	// with weight (r+1)^-alpha), "softmax" (weight exp(-z/temperature) of
	// the objective's z-score among valid programs) or "uniform". Default
	// "power_law".
	Strategy string `yaml:"strategy" json:"strategy"`
	// Alpha is the power law's exponent: larger exploits more. Default 1.
	Alpha float64 `yaml:"alpha" json:"alpha"`
	// Temperature of the softmax strategy: larger explores more. Default 1.
	Temperature float64 `yaml:"temperature" json:"temperature"`
	// Exploration is the probability of drawing the parent uniformly from
	// the island instead. Default 0.1.
	Exploration *float64 `yaml:"exploration" json:"exploration"`
	// ChildPenalty divides a program's weight by (1 + children)^penalty,
	// so that programs already expanded often yield to others. Default 0.5.
	ChildPenalty *float64 `yaml:"child_penalty" json:"child_penalty"`
}

// MetaConfig controls two-stage meta-prompting.
type MetaConfig struct {
	// Enabled turns meta-prompting on (from StartIteration). Default true.
	Enabled *bool `yaml:"enabled" json:"enabled"`
	// StartIteration is the first iteration that uses it; earlier ones use
	// templated prompts only, to build a pool of working parents. Default 20.
	StartIteration *int `yaml:"start_iteration" json:"start_iteration"`
	// Probability that an iteration from StartIteration on uses it (the
	// rest stay templated). Default 1.
	Probability *float64 `yaml:"probability" json:"probability"`
}

// ModelWeight names an ensemble member.
type ModelWeight struct {
	// Name is a model's name under llm.models (or a model spec).
	Name string `yaml:"name" json:"name"`
	// Weight is its share of children; 0 means the model's llm weight, or 1.
	Weight float64 `yaml:"weight" json:"weight"`
}

// BanditConfig configures the model bandit.
type BanditConfig struct {
	// Strategy is "" (off: fixed weights), "ucb1" or "thompson".
	Strategy string `yaml:"strategy" json:"strategy"`
	// Exploration is UCB1's exploration coefficient. Default 1.
	Exploration float64 `yaml:"exploration" json:"exploration"`
	// CostFloorUSD is added to every child's cost when rewards are divided
	// by cost, so that free local models do not divide by zero. Default 0.01.
	CostFloorUSD float64 `yaml:"cost_floor_usd" json:"cost_floor_usd"`
}

// PromptConfig tunes prompts.
type PromptConfig struct {
	// Templates restricts the pool of templated prompts to these names
	// (see docs/evolve.md for the built-in ones). Empty means all.
	Templates []string `yaml:"templates" json:"templates"`
	// TemplateDir holds extra templates (NAME.tmpl, in the built-in
	// templates' format); a file with a built-in's name replaces it.
	TemplateDir string `yaml:"template_dir" json:"template_dir"`
	// MaxDiffChars caps each inspiration program's diff in a prompt.
	// Default 6000.
	MaxDiffChars int `yaml:"max_diff_chars" json:"max_diff_chars"`
	// MaxErrorChars caps error text (tracebacks) in a prompt. Default 3000.
	MaxErrorChars int `yaml:"max_error_chars" json:"max_error_chars"`
	// MaxOutputTokens is sent with every request; 0 leaves it to the
	// model's configuration.
	MaxOutputTokens int `yaml:"max_output_tokens" json:"max_output_tokens"`
	// Temperature is sent with every request when set; otherwise the
	// model's configuration decides.
	Temperature *float64 `yaml:"temperature" json:"temperature"`
}

// BudgetConfig limits a run. Zero means no limit, except MaxIterations
// (default 100). Resumed runs count their totals from the start.
type BudgetConfig struct {
	// MaxIterations is the total number of iterations sampled. Default 100;
	// negative means no limit.
	MaxIterations int `yaml:"max_iterations" json:"max_iterations"`
	// MaxEvaluations is the total number of full evaluations and confirmation series runs started
	// (fast checks are not counted).
	MaxEvaluations int `yaml:"max_evaluations" json:"max_evaluations"`
	// MaxDuration is the run's total active time, summed over sessions.
	MaxDuration llm.Duration `yaml:"max_duration" json:"max_duration"`
	// MaxUSD caps model spending; it takes precedence over llm.budget.max_usd.
	MaxUSD float64 `yaml:"max_usd" json:"max_usd"`
	// MaxTokens caps model input plus output tokens; it takes precedence
	// over llm.budget.max_tokens.
	MaxTokens int64 `yaml:"max_tokens" json:"max_tokens"`
}

// With returns b with every limit that ov sets (non-zero) in place of
// b's: the one place where a run's budget meets the command line's, for a
// new run, a resumed one and the model budget alike.
func (b BudgetConfig) With(ov BudgetConfig) BudgetConfig {
	if ov.MaxIterations != 0 {
		b.MaxIterations = ov.MaxIterations
	}
	if ov.MaxEvaluations != 0 {
		b.MaxEvaluations = ov.MaxEvaluations
	}
	if ov.MaxDuration != 0 {
		b.MaxDuration = ov.MaxDuration
	}
	if ov.MaxUSD != 0 {
		b.MaxUSD = ov.MaxUSD
	}
	if ov.MaxTokens != 0 {
		b.MaxTokens = ov.MaxTokens
	}
	return b
}

// Objectives (runs holds the vocabulary).
const (
	ObjectiveScore = runs.ObjectiveScore
	ObjectiveTime  = runs.ObjectiveTime
	ObjectiveLoss  = runs.ObjectiveLoss
)

// Proposer settings.
const (
	ProposerAuto   = "auto"
	ProposerLLM    = "llm"
	ProposerMutate = "mutate"
)

// Selection strategies.
const (
	SelectPowerLaw = "power_law"
	SelectSoftmax  = "softmax"
	SelectUniform  = "uniform"
)

// Bandit strategies.
const (
	BanditUCB1     = "ucb1"
	BanditThompson = "thompson"
)

func ptr[T any](v T) *T { return &v }

// Defaults returns the configuration with every default filled in.
func Defaults() Config {
	var c Config
	return c.Resolved()
}

// Resolved returns a copy of c with every unset field at its default. The
// engine works on, and records, the resolved configuration.
func (c Config) Resolved() Config {
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	setInt(&c.Islands, 4)
	setInt(&c.BranchingFactor, 10)
	setInt(&c.ArchiveSize, 20)
	if c.TopPrograms == nil {
		c.TopPrograms = ptr(3)
	}
	if c.DiversePrograms == nil {
		c.DiversePrograms = ptr(2)
	}
	if c.Objective == "" {
		c.Objective = ObjectiveScore
	}
	setInt(&c.Migration.Interval, 10)
	setInt(&c.Migration.Count, 2)
	if c.Selection.Strategy == "" {
		c.Selection.Strategy = SelectPowerLaw
	}
	setF(&c.Selection.Alpha, 1)
	setF(&c.Selection.Temperature, 1)
	if c.Selection.Exploration == nil {
		c.Selection.Exploration = ptr(0.1)
	}
	if c.Selection.ChildPenalty == nil {
		c.Selection.ChildPenalty = ptr(0.5)
	}
	if c.MetaPrompting.Enabled == nil {
		c.MetaPrompting.Enabled = ptr(true)
	}
	if c.MetaPrompting.StartIteration == nil {
		c.MetaPrompting.StartIteration = ptr(20)
	}
	if c.MetaPrompting.Probability == nil {
		c.MetaPrompting.Probability = ptr(1.0)
	}
	if c.FastFixes == nil {
		c.FastFixes = ptr(3)
	}
	setInt(&c.LLMConcurrency, 4)
	setInt(&c.MaxOpenIterations, 2)
	if c.Proposer == "" {
		c.Proposer = ProposerAuto
	}
	setF(&c.Bandit.Exploration, 1)
	setF(&c.Bandit.CostFloorUSD, 0.01)
	setInt(&c.Prompt.MaxDiffChars, 6000)
	setInt(&c.Prompt.MaxErrorChars, 3000)
	setInt(&c.Budget.MaxIterations, 100)
	setInt(&c.MaxConsecutiveFailures, 20)
	if c.Confirm.Enabled == nil {
		c.Confirm.Enabled = ptr(true)
	}
	setInt(&c.Confirm.NoiseDF, 4)
	c.Models = slices.Clone(c.Models)
	c.Prompt.Templates = slices.Clone(c.Prompt.Templates)
	return c
}

// Validate checks the section and returns every problem found, each naming
// its key under evolve.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("evolve."+format, args...)) }
	nonNeg := func(key string, v int) {
		if v < 0 {
			bad("%s: %d is negative; use 0 for the default", key, v)
		}
	}
	nonNeg("islands", c.Islands)
	nonNeg("branching_factor", c.BranchingFactor)
	nonNeg("archive_size", c.ArchiveSize)
	nonNeg("slots", c.Slots)
	nonNeg("llm_concurrency", c.LLMConcurrency)
	nonNeg("prefetch", c.Prefetch)
	nonNeg("max_open_iterations", c.MaxOpenIterations)
	nonNeg("migration.count", c.Migration.Count)
	nonNeg("max_consecutive_failures", c.MaxConsecutiveFailures)
	nonNeg("budget.max_evaluations", c.Budget.MaxEvaluations)
	nonNeg("prompt.max_diff_chars", c.Prompt.MaxDiffChars)
	nonNeg("prompt.max_error_chars", c.Prompt.MaxErrorChars)
	nonNeg("prompt.max_output_tokens", c.Prompt.MaxOutputTokens)
	if c.Islands > 64 {
		bad("islands: %d is more than 64", c.Islands)
	}
	if c.BranchingFactor > 1000 {
		bad("branching_factor: %d is more than 1000", c.BranchingFactor)
	}
	if c.TopPrograms != nil && (*c.TopPrograms < 0 || *c.TopPrograms > 20) {
		bad("top_programs: %d is outside 0..20", *c.TopPrograms)
	}
	if c.DiversePrograms != nil && (*c.DiversePrograms < 0 || *c.DiversePrograms > 20) {
		bad("diverse_programs: %d is outside 0..20", *c.DiversePrograms)
	}
	if c.FastFixes != nil && (*c.FastFixes < 0 || *c.FastFixes > 10) {
		bad("fast_fixes: %d is outside 0..10", *c.FastFixes)
	}
	switch c.Objective {
	case "", ObjectiveScore, ObjectiveTime, ObjectiveLoss:
	default:
		bad("objective: %q: use score (step_avg_ms x val_loss), time (train time) or loss (val loss)", c.Objective)
	}
	switch c.Selection.Strategy {
	case "", SelectPowerLaw, SelectSoftmax, SelectUniform:
	default:
		bad("selection.strategy: %q: use power_law, softmax or uniform", c.Selection.Strategy)
	}
	if c.Selection.Alpha < 0 {
		bad("selection.alpha: %g is negative", c.Selection.Alpha)
	}
	if c.Selection.Temperature < 0 {
		bad("selection.temperature: %g is negative", c.Selection.Temperature)
	}
	if p := c.Selection.Exploration; p != nil && (*p < 0 || *p > 1) {
		bad("selection.exploration: %g is not a probability (0..1)", *p)
	}
	if p := c.Selection.ChildPenalty; p != nil && *p < 0 {
		bad("selection.child_penalty: %g is negative", *p)
	}
	if p := c.MetaPrompting.StartIteration; p != nil && *p < 0 {
		bad("meta_prompting.start_iteration: %d is negative", *p)
	}
	if p := c.MetaPrompting.Probability; p != nil && (*p < 0 || *p > 1) {
		bad("meta_prompting.probability: %g is not a probability (0..1)", *p)
	}
	switch c.Proposer {
	case "", ProposerAuto, ProposerLLM, ProposerMutate:
	default:
		bad("proposer: %q: use auto, llm or mutate", c.Proposer)
	}
	seen := map[string]bool{}
	for i, m := range c.Models {
		switch {
		case strings.TrimSpace(m.Name) == "":
			bad("models[%d]: name is missing: name a model under llm.models", i)
		case seen[m.Name]:
			bad("models[%d]: %q is listed twice", i, m.Name)
		}
		seen[m.Name] = true
		if m.Weight < 0 {
			bad("models[%d] (%s): weight %g is negative", i, m.Name, m.Weight)
		}
	}
	switch c.Bandit.Strategy {
	case "", BanditUCB1, BanditThompson:
	default:
		bad("bandit.strategy: %q: use ucb1 or thompson, or leave it empty for fixed weights", c.Bandit.Strategy)
	}
	if c.Bandit.Exploration < 0 || c.Bandit.CostFloorUSD < 0 {
		bad("bandit: exploration and cost_floor_usd must not be negative")
	}
	if t := c.Prompt.Temperature; t != nil && (*t < 0 || *t > 2) {
		bad("prompt.temperature: %g is outside 0..2", *t)
	}
	if p := c.Confirm.Pairs; p < 0 || p == 1 || p > 50 {
		bad("confirm.pairs: %d: a series needs 2 to 50 runs of each program (0: the fewest that can reach the track's alpha)", p)
	}
	b := c.Budget
	if b.MaxDuration < 0 || b.MaxUSD < 0 || b.MaxTokens < 0 {
		bad("budget: limits must not be negative; use 0 for no limit")
	}
	return errors.Join(errs...)
}

// ConfirmPairs is the number of runs of each program in a series at
// alpha: the configured number, else the fewest that can reach alpha.
func (c Config) ConfirmPairs(alpha float64) int {
	if c.Confirm.Pairs > 0 {
		return c.Confirm.Pairs
	}
	return stats.MinPairs(alpha)
}

// slotsFor returns the number of evaluation slots: the configured number,
// else the executor's (a cluster's jobs in flight), else as many runs as
// the machine's GPUs hold for a CUDA track, else 1.
func (c Config) slotsFor(device string, machineGPUs, trackGPUs, executorSlots int) int {
	if c.Slots > 0 {
		return c.Slots
	}
	if executorSlots > 0 {
		return executorSlots
	}
	if device == "cuda" && machineGPUs > 0 {
		return max(1, machineGPUs/max(1, trackGPUs))
	}
	return 1
}

// plannedMetaStart is the first iteration planned for meta-prompting, as
// the run records it for its readers: -1 when it is off, never drawn
// (probability 0), or no model of the ensemble writes ideas.
func (c Config) plannedMetaStart(models []Model) int {
	start := c.metaStart()
	if p := c.MetaPrompting.Probability; p != nil && *p <= 0 {
		return -1
	}
	for _, m := range models {
		if m.Kind == propose.KindLLM {
			return start
		}
	}
	return -1
}

// metaStart is the first meta-prompted iteration, or -1 when off.
func (c Config) metaStart() int {
	if c.MetaPrompting.Enabled != nil && !*c.MetaPrompting.Enabled {
		return -1
	}
	if c.MetaPrompting.StartIteration == nil {
		return 20
	}
	return *c.MetaPrompting.StartIteration
}
