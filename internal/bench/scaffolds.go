package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/frontier-bench/frontier/internal/bench/scaffold"
	"github.com/frontier-bench/frontier/internal/evolve"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
	"github.com/frontier-bench/frontier/internal/track"
)

// searchKind is one kind of search a bench run may use (--scaffold). A new
// kind is a new type in kinds: the run's settings and its attempts know
// none by name.
type searchKind interface {
	// name is what --scaffold calls it; help says what it is, or "".
	name() string
	help() string
	// settle fills in the settings this kind reads and clears the
	// others'.
	settle(c *Config) error
	// search runs (or resumes) one attempt.
	search(ctx context.Context, b *Bench, at attemptStart) (*result, error)
}

// attemptStart is what an attempt's search starts from.
type attemptStart struct {
	a     *store.BenchAttempt
	spec  *track.Spec
	start []byte
	// rootMs is the start program's time.
	rootMs float64
	hints  []Hint
}

// Evolve is the scaffold that runs frontier's own evolutionary search
// (internal/evolve) from the task's start program.
const Evolve = "evolve"

// kinds lists every search a run may use, in the order the help names
// them: the published benchmark's scaffolds, then frontier's own.
var kinds = func() []searchKind {
	var ks []searchKind
	for _, n := range scaffold.Names {
		ks = append(ks, policySearch(n))
	}
	return append(ks, evolveSearch{})
}()

// Scaffolds lists every scaffold a run may use.
func Scaffolds() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name()
	}
	return out
}

// ScaffoldHelp lists the scaffolds as the help says them: each name, with
// what it is where that is not plain from its name.
func ScaffoldHelp() string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name()
		if h := k.help(); h != "" {
			out[i] += " (" + h + ")"
		}
	}
	return strings.Join(out, ", ")
}

func kindOf(name string) (searchKind, error) {
	for _, k := range kinds {
		if k.name() == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("scaffold %q: use %s", name, strings.Join(Scaffolds(), ", "))
}

// policySearch is a search of internal/bench/scaffold, shaped by its
// policy (flat, tree, forest, aide, multi-aide).
type policySearch string

func (p policySearch) name() string { return string(p) }

func (p policySearch) help() string {
	if p == scaffold.Flat {
		return "best-of-N"
	}
	return ""
}

func (p policySearch) settle(c *Config) error {
	pol, err := scaffold.PolicyFor(string(p))
	if err != nil {
		return err
	}
	c.Policy, c.Evolve = &pol, nil
	return nil
}

// search runs the policy's tree search over the attempt (scaffold.Search).
func (policySearch) search(ctx context.Context, b *Bench, at attemptStart) (*result, error) {
	a, spec, start, rootMs, hints := at.a, at.spec, at.start, at.rootMs, at.hints
	// While the search runs, the acceptable nodes so far: when the first
	// few are all far slower than the start, it says so at once.
	var slow struct {
		timed   int
		fastest float64
		warned  bool
	}
	var sh []scaffold.Hint
	for _, h := range hints {
		sh = append(sh, scaffold.Hint{Level: h.Level, Name: h.Name, Text: h.Text})
	}
	m := scaffold.Model{Name: b.model.Name, Proposer: b.model.Proposer}
	if b.model.Kind == propose.KindLLM {
		m.Client = b.model.Client
	}
	s := &scaffold.Search{
		Store: b.env.Store, Evaluator: b.env.Evaluator, Model: m, Policy: *b.cfg.Policy, Budget: b.cfg.Nodes,
		Track: spec, Hardware: b.suite.Hardware, ProgramName: programName(spec), Hints: sh, Seed: b.cfg.Seed ^ uint64(a.ID)*0x9e3779b97f4a7c15,
		EvalSeed: a.Seed, ApplyFixes: b.cfg.ApplyFixes, Prompt: b.cfg.Prompt, Redact: b.env.Redact, Log: b.env.Log,
		Stop: func() string { r, d := b.stopReason(ctx); return joinReason(r, d) },
		OnNode: func(n *store.BenchNode) {
			b.progress("  node %d (%s): %s", n.Seq, n.Kind, nodeText(n))
			if n.Verdict != runs.Acceptable || !(n.TrainTimeMs > 0) || n.Seq == 0 {
				return
			}
			slow.timed++
			if slow.fastest == 0 || n.TrainTimeMs < slow.fastest {
				slow.fastest = n.TrainTimeMs
			}
			if slow.timed == slowAfter && !slow.warned {
				if note := slowNote(b.suite.Name, b.startTimes(ctx, a), rootMs, slow.fastest, slow.timed, b.env.loadAvg()); note != "" {
					slow.warned = true
					b.progress("  warning: %s", note)
					b.env.Log.Warn("bench: " + note)
				}
			}
		},
	}
	out, err := s.Run(ctx, a.ID, start, rootMs)
	if err != nil {
		return nil, err
	}
	res := &result{stopped: out.Stopped}
	for _, n := range out.Nodes[1:] {
		res.tally(n.Verdict, n.TrainTimeMs, n.EvaluationID)
		res.costUSD += n.CostUSD
		res.tokens += n.InputTokens + n.OutputTokens
	}
	if out.Best != nil && out.Best.Seq != 0 {
		res.bestMs, res.bestNode, res.bestHash = out.Best.TrainTimeMs, out.Best.ID, out.Best.ProgramHash
	}
	return res, nil
}

// evolveSearch is frontier's own evolutionary search (evolve.go).
type evolveSearch struct{}

func (evolveSearch) name() string { return Evolve }
func (evolveSearch) help() string { return "frontier's own search" }

func (evolveSearch) settle(c *Config) error {
	c.Policy = nil
	if c.Evolve == nil {
		c.Evolve = &evolve.Config{}
	}
	return nil
}
