package evolve

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
)

// ensemble chooses the model of each child: by fixed weights, or by a
// bandit that learns which model yields improvements per dollar.
//
// A child "improves" when it beats its parent (a better verdict, or the
// same valid verdict and a better objective). Each model's record is the
// number of finished children, how many improved, and what they cost.
// UCB1 picks the model with the highest
//
//	eff_i / max_j eff_j + c * sqrt(2 ln N / n_i),  eff_i = improved_i / (cost_i + n_i * floor)
//
// where floor (cost_floor_usd) keeps free models finite, and untried
// models first. Thompson sampling draws theta_i ~ Beta(1 + improved_i,
// 1 + n_i - improved_i) and picks the highest theta_i / mean cost_i. The
// record is updated when a child finishes, so choices made while children
// are in flight use what is known then.
type ensemble struct {
	names    []string
	weights  []float64
	strategy string
	explore  float64
	floor    float64
	stats    map[string]*armStats
}

// armStats is one model's record; it is persisted with the run.
type armStats struct {
	Children int     `json:"children"`
	Improved int     `json:"improved"`
	CostUSD  float64 `json:"cost_usd"`
}

func newEnsemble(models []Model, cfg BanditConfig) *ensemble {
	e := &ensemble{strategy: cfg.Strategy, explore: cfg.Exploration, floor: cfg.CostFloorUSD, stats: map[string]*armStats{}}
	for _, m := range models {
		e.names = append(e.names, m.Name)
		w := m.Weight
		if w <= 0 {
			w = 1
		}
		e.weights = append(e.weights, w)
		e.stats[m.Name] = &armStats{}
	}
	return e
}

// load restores a saved record. Models no longer in the ensemble are
// dropped; new ones start fresh.
func (e *ensemble) load(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var saved map[string]*armStats
	if err := json.Unmarshal(b, &saved); err != nil {
		return err
	}
	for name, s := range saved {
		if _, ok := e.stats[name]; ok && s != nil {
			e.stats[name] = s
		}
	}
	return nil
}

func (e *ensemble) save() []byte {
	b, _ := json.Marshal(e.stats)
	return b
}

// modelNames lists the ensemble's models, in their configured order.
func (e *ensemble) modelNames() []string { return e.names }

func (e *ensemble) has(name string) bool { return slices.Contains(e.names, name) }

// choose picks a model name.
func (e *ensemble) choose(r *rand.Rand) string {
	if len(e.names) == 1 {
		return e.names[0]
	}
	switch e.strategy {
	case BanditUCB1:
		return e.ucb1()
	case BanditThompson:
		return e.thompson(r)
	}
	return e.names[weighted(r, e.weights)]
}

func (e *ensemble) eff(s *armStats) float64 {
	return float64(s.Improved) / (s.CostUSD + float64(s.Children)*e.floor)
}

func (e *ensemble) ucb1() string {
	total, maxEff := 0, 0.0
	for _, n := range e.names {
		s := e.stats[n]
		if s.Children == 0 {
			return n
		}
		total += s.Children
		maxEff = math.Max(maxEff, e.eff(s))
	}
	best, bestV := e.names[0], math.Inf(-1)
	for _, n := range e.names {
		s := e.stats[n]
		v := 0.0
		if maxEff > 0 {
			v = e.eff(s) / maxEff
		}
		v += e.explore * math.Sqrt(2*math.Log(float64(total))/float64(s.Children))
		if v > bestV {
			best, bestV = n, v
		}
	}
	return best
}

func (e *ensemble) thompson(r *rand.Rand) string {
	best, bestV := e.names[0], math.Inf(-1)
	for _, n := range e.names {
		s := e.stats[n]
		theta := betaSample(r, 1+float64(s.Improved), 1+float64(s.Children-s.Improved))
		cost := e.floor
		if s.Children > 0 {
			cost = s.CostUSD/float64(s.Children) + e.floor
		}
		if v := theta / cost; v > bestV {
			best, bestV = n, v
		}
	}
	return best
}

// record adds a finished child to its model's record.
func (e *ensemble) record(model string, improved bool, cost float64) {
	s, ok := e.stats[model]
	if !ok {
		return
	}
	s.Children++
	s.CostUSD += cost
	if improved {
		s.Improved++
	}
}

// betaSample draws from Beta(a, b) as X/(X+Y) with gamma variates.
func betaSample(r *rand.Rand, a, b float64) float64 {
	x, y := gammaSample(r, a), gammaSample(r, b)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gammaSample draws from Gamma(k, 1) by Marsaglia and Tsang's method.
func gammaSample(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaSample(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}
