package evolve

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/frontier-bench/frontier/internal/llm"
	"github.com/frontier-bench/frontier/internal/propose"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// sampler makes every random choice of the search from the run's seed:
// an iteration's island, parent, top and diverse sets and stage, and its
// children's models (the ensemble, with its bandit), templates and seeds.
// Its generator and the bandit are recorded with the run, so that a
// resumed run makes the choices it would have made.
type sampler struct {
	cfg     Config
	pcg     *rand.PCG
	rng     *rand.Rand
	ens     *ensemble
	models  map[string]*Model
	prompts *prompts
}

func newSampler(cfg Config, models []Model, pr *prompts) *sampler {
	s := &sampler{cfg: cfg, ens: newEnsemble(models, cfg.Bandit), models: map[string]*Model{}, prompts: pr}
	for i := range models {
		m := models[i]
		s.models[m.Name] = &m
	}
	return s
}

// seed starts the generator from the run's seed.
func (s *sampler) seed(seed uint64) {
	s.pcg = rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	s.rng = rand.New(s.pcg)
}

// restore continues the generator and the bandit where the run left them.
func (s *sampler) restore(run *store.Run) error {
	s.seed(run.Seed)
	if len(run.RNG) > 0 {
		if err := s.pcg.UnmarshalBinary(run.RNG); err != nil {
			return fmt.Errorf("run %s: restore the random generator: %w", run.Name, err)
		}
	}
	if err := s.ens.load(run.Bandit); err != nil {
		return fmt.Errorf("run %s: restore the bandit: %w", run.Name, err)
	}
	return nil
}

// save returns the generator's and the bandit's state, for the run row.
func (s *sampler) save() (rng, bandit []byte) {
	rng, _ = s.pcg.MarshalBinary()
	return rng, s.ens.save()
}

// useBudget makes the language models' clients draw from b.
func (s *sampler) useBudget(b *llm.Budget) {
	for _, m := range s.models {
		if m.Kind == propose.KindLLM && m.Client != nil {
			m.Client = b.Wrap(m.Client)
		}
	}
}

// model is the ensemble's model called name, or nil.
func (s *sampler) model(name string) *Model { return s.models[name] }

// names lists the ensemble's models.
func (s *sampler) names() []string { return s.ens.modelNames() }

// credit tells the bandit how a settled child of model did against its
// parent.
func (s *sampler) credit(c, parent *store.Child) {
	if parent != nil && c.Origin != runs.OriginReference && s.ens.has(c.Model) {
		s.ens.record(c.Model, beats(s.cfg.Objective, c, parent), c.CostUSD)
	}
}

// iteration draws iteration n of run runID from pop: its island (in
// turn), parent, top and diverse sets and stage, and its children's
// models, templates and seeds.
func (s *sampler) iteration(runID int64, n int, pop *population) (*iterState, []*store.Child, error) {
	cfg := s.cfg
	island := (n - 1) % cfg.Islands
	parent := pop.sampleParent(s.rng, island, cfg.Selection)
	if parent == nil {
		return nil, nil, errors.New("no program to sample a parent from")
	}
	top := pop.sampleTop(s.rng, *cfg.TopPrograms, parent, *cfg.DiversePrograms > 0)
	div := pop.sampleDiverse(s.rng, *cfg.DiversePrograms, parent, top)
	stage := runs.StageTemplate
	if ms := cfg.metaStart(); ms >= 0 && n >= ms && s.rng.Float64() < *cfg.MetaPrompting.Probability {
		stage = runs.StageMeta
	}
	it := &store.Iteration{RunID: runID, Iteration: n, Island: island, ParentID: parent.ID, Stage: stage,
		TopIDs: ids(top), DiverseIDs: ids(div)}
	var kids []*store.Child
	pool := s.prompts.drawable(map[string]bool{NeedTop: len(top) > 0, NeedDiverse: len(div) > 0, NeedProfile: parent.Summary != ""})
	for slot := 0; slot < cfg.BranchingFactor; slot++ {
		m := s.models[s.ens.choose(s.rng)]
		c := &store.Child{RunID: runID, Iteration: n, Slot: slot, Island: island, ParentID: parent.ID,
			Origin: runs.Origin(m.Kind), Model: m.Name, State: runs.Queued, Seed: s.rng.Uint64() >> 1}
		c.Template = pool[s.rng.IntN(len(pool))]
		switch {
		case m.Kind == propose.KindMutate:
			c.Stage, c.Template = runs.StageMutate, ""
		case stage == runs.StageMeta && m.ideas():
			c.Stage, c.Template = runs.StageMeta, promptIdea
		default:
			c.Stage = runs.StageTemplate
		}
		kids = append(kids, c)
	}
	return &iterState{it: it, parent: parent, top: top, diverse: div, pending: len(kids)}, kids, nil
}

// reassign gives child c, whose model left the ensemble since it was
// sampled (a resumed run with another config), to another model, with
// the stage and template that model can take; it of c's iteration (nil
// when closed).
func (s *sampler) reassign(c *store.Child, it *iterState) *Model {
	m := s.models[s.ens.choose(s.rng)]
	c.Model = m.Name
	if m.Kind == propose.KindMutate {
		c.Stage, c.Template = runs.StageMutate, ""
	} else if c.Stage == runs.StageMutate || (c.Stage == runs.StageMeta && !m.ideas()) {
		c.Stage, c.Template = runs.StageTemplate, s.fallbackTemplate(c, it)
	}
	return m
}

// fallbackTemplate is the templated prompt a child gets when its stage
// cannot be what it was drawn as (its model writes no ideas, or no idea
// came): one its iteration (it, nil when closed) has what it needs for,
// chosen by the child's seed.
func (s *sampler) fallbackTemplate(c *store.Child, it *iterState) string {
	have := map[string]bool{}
	if it != nil {
		have[NeedTop], have[NeedDiverse] = len(it.top) > 0, len(it.diverse) > 0
		have[NeedProfile] = it.parent != nil && it.parent.Summary != ""
	}
	pool := s.prompts.drawable(have)
	return pool[c.Seed%uint64(len(pool))]
}

func ids(cs []*store.Child) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}
