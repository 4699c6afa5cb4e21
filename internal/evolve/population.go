package evolve

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/frontier-bench/frontier/internal/edit"
	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// population is the in-memory index of a run's members: metadata only,
// never program sources, so that its size does not grow with program
// size. Its indexes are kept as members settle, so that what an iteration
// asks of it (a parent, the top and diverse sets, migrants) costs the same
// at a thousand members as at a hundred thousand. Only the coordinator
// goroutine touches it.
type population struct {
	objective   string
	islands     int
	archiveSize int

	members map[int64]*store.Child
	// ref is the track's reference program, the run's first member.
	ref *store.Child
	// onIsland lists, per island, the settled members that hold a program
	// (originals and copies), in the order they settled; norms holds their
	// normalized hashes, and valid those of them with a valid verdict,
	// best first, with validExpanded their counts in expanded, index for
	// index: the parent's draw weighs every valid member of an island,
	// and reading the counts beside them costs a tenth of a map lookup
	// each (at 25,000 members an island, 0.05 ms a child of 1.7).
	onIsland      [][]int64
	norms         []map[string]bool
	valid         [][]*store.Child
	validExpanded [][]int32
	// programs lists settled originals that hold a program, for the
	// diverse set.
	programs []int64
	// byNorm maps a normalized program hash to the first member that had
	// it, candidates in flight included: the dedup index.
	byNorm map[string]int64
	// archive holds the elite originals, best first.
	archive  []int64
	inArch   map[int64]bool
	expanded map[int64]int // iterations that sampled the member as parent

	// rankWeights holds (i+1)^-alpha by rank for the power law of
	// alpha weightAlpha; weights is sampleParent's scratch.
	weightAlpha float64
	rankWeights []float64
	weights     []float64
}

func newPopulation(objective string, islands, archiveSize int) *population {
	p := &population{
		objective: objective, islands: islands, archiveSize: archiveSize,
		members:       map[int64]*store.Child{},
		onIsland:      make([][]int64, islands),
		norms:         make([]map[string]bool, islands),
		valid:         make([][]*store.Child, islands),
		validExpanded: make([][]int32, islands),
		byNorm:        map[string]int64{},
		inArch:        map[int64]bool{},
		expanded:      map[int64]int{},
	}
	for i := range p.norms {
		p.norms[i] = map[string]bool{}
	}
	return p
}

// add indexes a member row (any state); the reference is the run's
// reference program.
func (p *population) add(c *store.Child) {
	p.members[c.ID] = c
	if c.Origin == runs.OriginReference {
		p.ref = c
	}
}

// expand counts an iteration that sampled member id as its parent.
func (p *population) expand(id int64) {
	p.expanded[id]++
	c := p.members[id]
	if c == nil || !c.Verdict.Valid() || c.Island < 0 || c.Island >= p.islands {
		return
	}
	if i, ok := p.validIndex(c); ok {
		p.validExpanded[c.Island][i]++
	}
}

// validIndex finds c in its island's valid members.
func (p *population) validIndex(c *store.Child) (int, bool) {
	list := p.valid[c.Island]
	i := p.rankedIndex(list, c)
	return i, i < len(list) && list[i].ID == c.ID
}

// elite is the archive, best first; the caller must not change it.
func (p *population) elite() []int64 { return p.archive }

// member returns the member with id, or nil.
func (p *population) member(id int64) *store.Child { return p.members[id] }

// reference is the track's reference program, nil before it is added.
func (p *population) reference() *store.Child { return p.ref }

// referenceDone reports whether the reference has its final verdict (the
// run samples no iteration before).
func (p *population) referenceDone() bool {
	return p.ref == nil || p.ref.State == runs.Done
}

// isProgram reports whether member id is a settled original that holds a
// program (one of programs).
func (p *population) isProgram(id int64) bool {
	c := p.members[id]
	return c != nil && holdsProgram(c) && !c.Origin.IsCopy()
}

// settledPrograms returns the settled originals that hold a program, in
// the order they settled.
func (p *population) settledPrograms() []*store.Child {
	out := make([]*store.Child, 0, len(p.programs))
	for _, id := range p.programs {
		out = append(out, p.members[id])
	}
	return out
}

// restoreIndex rebuilds the index of programs a resumed run has seen
// (claim) from what it recorded, whose members add has indexed; program
// reads a program's source. Every program a child of the run had counts,
// in the order the run saw them (attempts in creation order), duplicates'
// earlier programs included: a program that failed its fast check and was
// then fixed, or whose fix came back to a known program, was evaluated,
// and while running the engine would not evaluate it again.
func (p *population) restoreIndex(ctx context.Context, rec *recorded, program func(context.Context, string) ([]byte, error)) error {
	norms := map[string]string{}
	byCreation := slices.Clone(rec.attempts)
	slices.SortFunc(byCreation, func(a, b *store.Attempt) int { return cmp.Compare(a.ID, b.ID) })
	for _, a := range byCreation {
		c := p.members[a.ChildID]
		if a.ProgramHash == "" || c == nil || c.Origin.IsCopy() {
			continue
		}
		norm, ok := norms[a.ProgramHash]
		if !ok {
			src, err := program(ctx, a.ProgramHash)
			if err != nil {
				return fmt.Errorf("program of attempt %d of child %d: %w", a.Attempt, a.ChildID, err)
			}
			norm = edit.NormalizedHash(src)
			norms[a.ProgramHash] = norm
		}
		p.claim(norm, a.ChildID)
	}
	for _, c := range rec.kids {
		if !c.Origin.IsCopy() && c.NormHash != "" {
			p.claim(c.NormHash, c.ID) // a child whose attempts were not recorded (an older run)
		}
	}
	return nil
}

// restoreExpanded counts, for a resumed run, the iterations that sampled
// each member as parent: the closed ones recorded, and those still open
// (open returns an open iteration, or nil).
func (p *population) restoreExpanded(iterations []*store.Iteration, open func(n int) *iterState) {
	for _, it := range iterations {
		if !it.DoneAt.IsZero() {
			if it.ParentID != 0 {
				p.expand(it.ParentID)
			}
			continue
		}
		if st := open(it.Iteration); st != nil && st.parent != nil {
			p.expand(st.parent.ID)
		}
	}
}

// record is the run's record as a member (standingOf), given the run's
// claims.
func (p *population) record(claims []*store.Confirmation) (*store.Child, runs.Record) {
	return store.Standing(claims, func(id int64) *store.Child { return p.members[id] }, p.ref)
}

// claim registers a candidate program of member id under its normalized
// hash. It returns the member that had the program first, or 0 when the
// program is new to the run.
func (p *population) claim(norm string, id int64) int64 {
	if norm == "" {
		return 0
	}
	if first, ok := p.byNorm[norm]; ok && first != id {
		return first
	}
	p.byNorm[norm] = id
	return 0
}

// original follows copies (seed, migrant) to the member they copy.
func (p *population) original(c *store.Child) *store.Child {
	for i := 0; i < 8 && (c.Origin == runs.OriginSeed || c.Origin == runs.OriginMigrant) && c.SourceID != 0; i++ {
		src, ok := p.members[c.SourceID]
		if !ok {
			break
		}
		c = src
	}
	return c
}

// holdsProgram reports whether a settled member stands for a program of
// its own in the population (not a duplicate, and a program exists).
func holdsProgram(c *store.Child) bool {
	return c.State == runs.Done && c.ProgramHash != "" &&
		c.Verdict != runs.Duplicate && c.Verdict != runs.NoProposal && c.Verdict != runs.ApplyFailed
}

// settle adds a member that reached its final verdict to its island and
// to the archive. It reports whether the archive changed.
func (p *population) settle(c *store.Child) bool {
	p.members[c.ID] = c
	if !holdsProgram(c) {
		return false
	}
	if c.Island >= 0 && c.Island < p.islands {
		p.onIsland[c.Island] = append(p.onIsland[c.Island], c.ID)
		p.norms[c.Island][c.NormHash] = true
		if c.Verdict.Valid() {
			i := p.rankedIndex(p.valid[c.Island], c)
			p.valid[c.Island] = slices.Insert(p.valid[c.Island], i, c)
			p.validExpanded[c.Island] = slices.Insert(p.validExpanded[c.Island], i, int32(p.expanded[c.ID]))
		}
	}
	if c.Origin.IsCopy() {
		return false
	}
	p.programs = append(p.programs, c.ID)
	return p.offerArchive(c)
}

// offerArchive inserts c into the archive if it is among the best.
func (p *population) offerArchive(c *store.Child) bool {
	if !c.Verdict.Valid() || p.archiveSize <= 0 || p.inArch[c.ID] {
		return false
	}
	k := rankKey(p.objective, c)
	i := len(p.archive)
	for i > 0 && k.less(rankKey(p.objective, p.members[p.archive[i-1]])) {
		i--
	}
	if i >= p.archiveSize {
		return false
	}
	p.archive = slices.Insert(p.archive, i, c.ID)
	p.inArch[c.ID] = true
	if len(p.archive) > p.archiveSize {
		delete(p.inArch, p.archive[len(p.archive)-1])
		p.archive = p.archive[:p.archiveSize]
	}
	return true
}

// rankedIndex is where c goes in list, which is sorted best first: where
// it is, when it is there (keys are unique: they end with the ID).
func (p *population) rankedIndex(list []*store.Child, c *store.Child) int {
	k := rankKey(p.objective, c)
	i, _ := slices.BinarySearchFunc(list, k, func(m *store.Child, k key) int {
		if rankKey(p.objective, m).less(k) {
			return -1
		}
		return 1
	})
	return i
}

// best returns the best original program, or nil.
func (p *population) best() *store.Child {
	if len(p.archive) > 0 {
		return p.members[p.archive[0]]
	}
	var b *store.Child
	for _, id := range p.programs {
		c := p.members[id]
		if b == nil || rankKey(p.objective, c).less(rankKey(p.objective, b)) {
			b = c
		}
	}
	return b
}

// ranked returns the island's settled members, best first: the valid ones
// if any, else all of them (so that an island of failures still yields a
// parent, whose error the prompt shows). The caller must not change the
// slice.
func (p *population) ranked(island int) []*store.Child {
	if len(p.valid[island]) > 0 {
		return p.valid[island]
	}
	out := make([]*store.Child, 0, len(p.onIsland[island]))
	for _, id := range p.onIsland[island] {
		out = append(out, p.members[id])
	}
	slices.SortFunc(out, func(a, b *store.Child) int {
		if rankKey(p.objective, a).less(rankKey(p.objective, b)) {
			return -1
		}
		return 1
	})
	return out
}

// sampleParent draws a parent on an island (see SelectionConfig).
func (p *population) sampleParent(r *rand.Rand, island int, sel SelectionConfig) *store.Child {
	cands := p.ranked(island)
	if len(cands) == 0 {
		// An island that lost all its members cannot happen (copies of the
		// reference seed every island), but fall back to the best program.
		return p.best()
	}
	explore := 0.1
	if sel.Exploration != nil {
		explore = *sel.Exploration
	}
	if sel.Strategy == SelectUniform || r.Float64() < explore {
		return cands[r.IntN(len(cands))]
	}
	penalty := 0.5
	if sel.ChildPenalty != nil {
		penalty = *sel.ChildPenalty
	}
	w := slices.Grow(p.weights[:0], len(cands))[:len(cands)]
	p.weights = w
	switch sel.Strategy {
	case SelectSoftmax:
		z := softmaxUtilities(p.objective, cands)
		temp := math.Max(sel.Temperature, 1e-6)
		for i := range cands {
			w[i] = math.Exp(z[i] / temp)
		}
	default: // power law over the rank
		copy(w, p.powerLaw(sel.Alpha, len(cands)))
	}
	// Dividing by (1+0)^penalty = 1 changes nothing: only expanded
	// members pay for the power.
	if len(p.valid[island]) > 0 {
		for i, n := range p.validExpanded[island] {
			if n != 0 {
				w[i] /= math.Pow(1+float64(n), penalty)
			}
		}
	} else {
		for i, c := range cands {
			if n := p.expanded[c.ID]; n != 0 {
				w[i] /= math.Pow(1+float64(n), penalty)
			}
		}
	}
	return cands[weighted(r, w)]
}

// powerLaw returns the first n weights (i+1)^-alpha, computed once.
func (p *population) powerLaw(alpha float64, n int) []float64 {
	if alpha != p.weightAlpha || p.rankWeights == nil {
		p.weightAlpha, p.rankWeights = alpha, nil
	}
	for i := len(p.rankWeights); i < n; i++ {
		p.rankWeights = append(p.rankWeights, math.Pow(float64(i+1), -alpha))
	}
	return p.rankWeights[:n]
}

// softmaxUtilities returns, per candidate (best first), the standardized
// negative log of the objective, shifted down by 3 for each verdict class
// below the best candidate's, and shifted so the best is 0.
func softmaxUtilities(objective string, cands []*store.Child) []float64 {
	u := make([]float64, len(cands))
	var sum, sq float64
	n := 0
	for i, c := range cands {
		v := objectiveValue(objective, c)
		if math.IsInf(v, 1) {
			u[i] = math.NaN()
			continue
		}
		u[i] = -math.Log(v)
		sum += u[i]
		sq += u[i] * u[i]
		n++
	}
	sd := 1.0
	mean := 0.0
	if n > 0 {
		mean = sum / float64(n)
		if v := sq/float64(n) - mean*mean; v > 1e-12 {
			sd = math.Sqrt(v)
		}
	}
	top := verdictRank(cands[0].Verdict)
	maxU := math.Inf(-1)
	for i, c := range cands {
		z := -3.0
		if !math.IsNaN(u[i]) {
			z = (u[i] - mean) / sd
		}
		z -= 3 * float64(verdictRank(c.Verdict)-top)
		u[i] = z
		maxU = math.Max(maxU, z)
	}
	for i := range u {
		u[i] -= maxU
	}
	return u
}

// weighted draws an index with probability proportional to w.
func weighted(r *rand.Rand, w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	if total <= 0 || math.IsNaN(total) || math.IsInf(total, 0) {
		return r.IntN(len(w))
	}
	x := r.Float64() * total
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}

// sampleTop draws the top set T of an iteration: up to k programs other
// than the parent's, drawn uniformly from the 2k best acceptable ones of
// the archive (best first), and when fewer than k are acceptable, all of
// them and then the next programs of the archive in rank order (loss too
// high). When the diverse set wants programs too (wantDiverse), T leaves
// at least one program of the run for it, so that both sets are non-empty
// whenever the run has two programs besides the parent.
func (p *population) sampleTop(r *rand.Rand, k int, parent *store.Child, wantDiverse bool) []*store.Child {
	if k <= 0 {
		return nil
	}
	skip := p.original(parent).ID
	others := len(p.programs)
	if p.isProgram(skip) {
		others--
	}
	if wantDiverse && others >= 2 {
		k = min(k, others-1)
	}
	var acceptable, rest []int64
	for _, id := range p.archive {
		switch {
		case id == skip:
		case p.members[id].Verdict == runs.Acceptable:
			acceptable = append(acceptable, id)
		default:
			rest = append(rest, id)
		}
	}
	if len(acceptable) > k {
		return p.pick(r, acceptable[:min(len(acceptable), 2*k)], k)
	}
	out := p.pick(r, acceptable, k)
	for _, id := range rest {
		if len(out) == k {
			break
		}
		out = append(out, p.members[id])
	}
	return out
}

// sampleDiverse draws the diverse set D: up to k programs uniformly from
// every settled program of the run (failed ones included: they show what
// did not work) that is neither the parent's nor in the top set. The pool
// may be large, so it draws by rejection and falls back to a scan only when
// most candidates are excluded.
func (p *population) sampleDiverse(r *rand.Rand, k int, parent *store.Child, top []*store.Child) []*store.Child {
	if k <= 0 {
		return nil
	}
	skip := map[int64]bool{p.original(parent).ID: true}
	for _, c := range top {
		skip[c.ID] = true
	}
	ok := func(id int64) bool { return !skip[id] }
	n := len(p.programs)
	chosen := map[int64]bool{}
	var out []*store.Child
	for tries := 0; tries < 8*k && len(out) < k && n > 0; tries++ {
		id := p.programs[r.IntN(n)]
		if ok(id) && !chosen[id] {
			chosen[id] = true
			out = append(out, p.members[id])
		}
	}
	if len(out) < k {
		var rest []int64
		for _, id := range p.programs {
			if ok(id) && !chosen[id] {
				rest = append(rest, id)
			}
		}
		out = append(out, p.pick(r, rest, k-len(out))...)
	}
	return out
}

// pick draws up to k distinct ids uniformly.
func (p *population) pick(r *rand.Rand, ids []int64, k int) []*store.Child {
	if k <= 0 || len(ids) == 0 {
		return nil
	}
	ids = slices.Clone(ids)
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	if len(ids) > k {
		ids = ids[:k]
	}
	out := make([]*store.Child, len(ids))
	for i, id := range ids {
		out[i] = p.members[id]
	}
	return out
}

// emigrants returns the best count valid members of island from that are
// originals (copies do not migrate again) and whose program the island to
// does not hold yet.
func (p *population) emigrants(from, to, count int) []*store.Child {
	have := p.norms[to]
	var out []*store.Child
	for _, c := range p.ranked(from) {
		if len(out) == count {
			break
		}
		if !c.Verdict.Valid() || c.Origin.IsCopy() || have[c.NormHash] {
			continue
		}
		out = append(out, c)
	}
	return out
}
