package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/bench/scaffold"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/llm"
)

// Orders of a run's attempts.
const (
	// OrderSuite works through the attempts seed by seed, each seed in the
	// suite's task order.
	OrderSuite = "suite"
	// OrderLearnable runs next the attempt whose task is the most
	// learnable now (see Learnability).
	OrderLearnable = "learnable"
)

// DefaultNodes is the node budget of every search: the published
// benchmark's max_n_nodes.
const DefaultNodes = 20

// Config is a bench run's settings, recorded with the run (resolved: with
// every default) so that a resumed run works exactly as it started.
type Config struct {
	Suite string `json:"suite"`
	// SuiteDir is the suite's folder; empty for a built-in suite.
	SuiteDir string `json:"suite_dir,omitempty"`
	Scaffold string `json:"scaffold"`
	// Policy is the scaffold's shape (not for evolve).
	Policy *scaffold.Policy `json:"policy,omitempty"`
	// Model is the one model that proposes: a language model, the mutate
	// baseline, or recorded answers.
	Model evolve.ModelsRecord `json:"model"`
	Hints string              `json:"hints"`
	// Tasks restricts the run to these tasks; empty means all, in the
	// suite's order.
	Tasks []string `json:"tasks,omitempty"`
	// Seeds is the number of attempts per task, with seeds 0..Seeds-1.
	Seeds int `json:"seeds"`
	// Nodes is each search's budget of nodes (proposed programs).
	Nodes int `json:"nodes"`
	// Cumulative chains the tasks of a seed: the best program of task i
	// starts task i+1.
	Cumulative bool   `json:"cumulative,omitempty"`
	Order      string `json:"order"`
	// Success is the FSR an attempt must reach to count as a success for
	// the learnable order (default 1: the goal's time reached).
	Success float64 `json:"success,omitempty"`
	// Retime, when positive, re-times each attempt's best node Retime
	// times in alternation with its start program, and scores FSR from
	// that series instead of the search's single timing.
	Retime int    `json:"retime,omitempty"`
	Budget Budget `json:"budget"`
	// ApplyFixes is how often an answer that does not apply goes back to
	// its model (default 2).
	ApplyFixes int                     `json:"apply_fixes"`
	Prompt     scaffold.PromptSettings `json:"prompt"`
	// Evolve is the evolution engine's configuration for the evolve
	// scaffold, before the bench's own settings are applied to it.
	Evolve *evolve.Config `json:"evolve,omitempty"`
	// Seed draws every random choice of the run's searches.
	Seed uint64 `json:"seed"`
}

// Budget ends a run cleanly when the first limit is reached; zero means no
// limit. Totals count from the run's start, over every session.
type Budget struct {
	MaxUSD      float64      `json:"max_usd,omitempty"`
	MaxTokens   int64        `json:"max_tokens,omitempty"`
	MaxDuration llm.Duration `json:"max_duration,omitempty"`
}

// With returns b with every limit ov sets in place of b's.
func (b Budget) With(ov Budget) Budget {
	if ov.MaxUSD != 0 {
		b.MaxUSD = ov.MaxUSD
	}
	if ov.MaxTokens != 0 {
		b.MaxTokens = ov.MaxTokens
	}
	if ov.MaxDuration != 0 {
		b.MaxDuration = ov.MaxDuration
	}
	return b
}

// LLM is the budget as the model clients' budget sees it.
func (b Budget) LLM() llm.BudgetConfig {
	return llm.BudgetConfig{MaxUSD: b.MaxUSD, MaxTokens: b.MaxTokens}
}

// Resolve fills in the defaults and checks the settings against the
// suite.
func (c *Config) Resolve(s *Suite) error {
	var errs []error
	c.Suite = s.Name
	if !s.Builtin {
		c.SuiteDir = s.Dir
	}
	if c.Scaffold == "" {
		c.Scaffold = scaffold.Flat
	}
	if k, err := kindOf(c.Scaffold); err != nil {
		errs = append(errs, fmt.Errorf("--scaffold: %w", err))
	} else if err := k.settle(c); err != nil {
		errs = append(errs, fmt.Errorf("--scaffold: %w", err))
	}
	h, err := ParseHints(c.Hints)
	if err != nil {
		errs = append(errs, fmt.Errorf("--hints: %w", err))
	}
	c.Hints = h.String()
	if len(c.Tasks) == 0 {
		for _, t := range s.Tasks {
			c.Tasks = append(c.Tasks, t.Name)
		}
	}
	for _, name := range c.Tasks {
		t, err := s.Task(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, l := range h {
			if t.Hints.File(l) == "" {
				errs = append(errs, fmt.Errorf("--hints %s: task %s has no level %d hint (%s)", c.Hints, t.Name, l, LevelName(l)))
			}
		}
	}
	if c.Seeds == 0 {
		c.Seeds = 1
	}
	if c.Seeds < 0 {
		errs = append(errs, fmt.Errorf("--seeds %d: must be at least 1", c.Seeds))
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.Nodes < 1 {
		errs = append(errs, fmt.Errorf("--nodes %d: must be at least 1", c.Nodes))
	}
	if c.Order == "" {
		c.Order = OrderSuite
	}
	switch c.Order {
	case OrderSuite:
	case OrderLearnable:
		if c.Cumulative {
			errs = append(errs, errors.New("--order learnable and --cumulative: a chain runs its tasks in order"))
		}
	default:
		errs = append(errs, fmt.Errorf("--order %q: use %s or %s", c.Order, OrderSuite, OrderLearnable))
	}
	if c.Cumulative {
		if err := chainable(s, c.Tasks); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Success == 0 {
		c.Success = 1
	}
	if c.Retime < 0 || c.Retime == 1 {
		errs = append(errs, fmt.Errorf("--retime %d: 0 (off), or at least 2 runs of each program", c.Retime))
	}
	if c.ApplyFixes == 0 {
		c.ApplyFixes = 2
	}
	if c.ApplyFixes < 0 {
		c.ApplyFixes = 0
	}
	if c.Budget.MaxUSD < 0 || c.Budget.MaxTokens < 0 || c.Budget.MaxDuration < 0 {
		errs = append(errs, errors.New("budgets must not be negative"))
	}
	if c.Model.Name == "" {
		errs = append(errs, errors.New("no model: name one with --model, or use --proposer mutate"))
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())>>1 | 1
	}
	return errors.Join(errs...)
}

// chainable checks that each task of a cumulative run starts where the one
// before it ends.
func chainable(s *Suite, tasks []string) error {
	var prev *Task
	for _, name := range tasks {
		t, err := s.Task(name)
		if err != nil {
			return err
		}
		if prev != nil && t.Start != prev.Goal {
			return fmt.Errorf("--cumulative: task %s starts from %s, not from %s where task %s ends; name tasks that chain with --task", t.Name, t.Start, prev.Goal, prev.Name)
		}
		prev = t
	}
	return nil
}

// ParseConfig decodes a run's recorded settings.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("the bench run's recorded settings are unreadable: %w", err)
	}
	return c, nil
}
