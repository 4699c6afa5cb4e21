package runview

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/frontier-bench/frontier/internal/store"
)

// Settings are the parts of a run's stored configuration that its views
// show. The engine records its resolved configuration with the run; a key
// that a run from an older version did not record reads as the default the
// engine gives it (docs/evolve.md), so an old run shows what it ran with.
type Settings struct {
	Islands         int    `json:"islands"`
	BranchingFactor int    `json:"branching_factor"`
	ArchiveSize     int    `json:"archive_size"`
	TopPrograms     int    `json:"top_programs"`
	DiversePrograms int    `json:"diverse_programs"`
	Objective       string `json:"objective"`
	FastFixes       int    `json:"fast_fixes"`
	// Slots is 0 when the engine sized them from the machine's GPUs.
	Slots          int `json:"slots"`
	LLMConcurrency int `json:"llm_concurrency"`
	Migration      struct {
		Interval int `json:"interval"`
		Count    int `json:"count"`
	} `json:"migration"`
	Selection struct {
		Strategy string `json:"strategy"`
	} `json:"selection"`
	MetaPrompting struct {
		Enabled        bool `json:"enabled"`
		StartIteration int  `json:"start_iteration"`
	} `json:"meta_prompting"`
	Bandit struct {
		Strategy string `json:"strategy"`
	} `json:"bandit"`
	Budget  Budget `json:"budget"`
	Confirm struct {
		Enabled bool `json:"enabled"`
		// Pairs is 0 when a series has the fewest runs that can reach the
		// track's alpha.
		Pairs int `json:"pairs"`
	} `json:"confirm"`
}

// Budget is a run's budget: zero means no limit, and so does a negative
// MaxIterations.
type Budget struct {
	MaxIterations  int      `json:"max_iterations"`
	MaxEvaluations int      `json:"max_evaluations"`
	MaxDuration    duration `json:"max_duration"`
	MaxUSD         float64  `json:"max_usd"`
	MaxTokens      int64    `json:"max_tokens"`
}

// duration reads the engine's durations, written as Go durations ("1h30m0s").
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func (d duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D is the duration.
func (d duration) D() time.Duration { return time.Duration(d) }

// defaultSettings are the engine's defaults (evolve.Defaults) for what
// Settings holds; a test keeps the two the same.
func defaultSettings() Settings {
	var s Settings
	s.Islands, s.BranchingFactor, s.ArchiveSize = 4, 10, 20
	s.TopPrograms, s.DiversePrograms, s.FastFixes, s.LLMConcurrency = 3, 2, 3, 4
	s.Objective = "score"
	s.Migration.Interval, s.Migration.Count = 10, 2
	s.Selection.Strategy = "power_law"
	s.MetaPrompting.Enabled, s.MetaPrompting.StartIteration = true, 20
	s.Budget.MaxIterations = 100
	s.Confirm.Enabled = true
	return s
}

// SettingsOf decodes a run's stored configuration over the defaults.
func SettingsOf(run *store.Run) (Settings, error) {
	s := defaultSettings()
	if run.Objective != "" {
		s.Objective = run.Objective
	}
	if len(run.Config) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(run.Config, &s); err != nil {
		return s, fmt.Errorf("run %s: its stored configuration is unreadable: %w", run.Name, err)
	}
	if run.Objective != "" { // the run's column, written with the configuration
		s.Objective = run.Objective
	}
	return s, nil
}
