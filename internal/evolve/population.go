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
//
// Members in flight are kept whole (live): the engine changes them in
// place as they go. A member that settles is packed (packed.go), and
// member returns a new copy of it each time: a settled member is not
// changed, except through the population (restamp).
type population struct {
	objective   string
	islands     int
	archiveSize int

	live map[int64]*store.Child
	// chunks holds the settled members in the order they settled, n of
	// them, in chunks of a fixed size (a chunk is never copied as the
	// population grows); at maps an id to its index (packedAt). The lists
	// below hold such indexes.
	chunks [][]packed
	n      int32
	at     map[int64]int32
	packing
	// ref is the track's reference program, the run's first member, kept
	// whole when settled too.
	ref *store.Child
	// onIsland lists, per island, the settled members that hold a program
	// (originals and copies), in the order they settled; norms holds their
	// normalized hashes, and valid those of them with a valid verdict,
	// best first, with validExpanded their counts in expanded, index for
	// index: the parent's draw weighs every valid member of an island,
	// and reading the counts beside them costs a tenth of a map lookup
	// each (at 25,000 members an island, 0.05 ms a child of 1.7).
	onIsland      [][]int32
	norms         []hashMap[bool]
	valid         [][]int32
	validExpanded [][]int32
	// programs lists settled originals that hold a program, for the
	// diverse set.
	programs []int32
	// byNorm maps a normalized program hash to the first member that had
	// it, candidates in flight included: the dedup index.
	byNorm hashMap[int64]
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
		live:          map[int64]*store.Child{},
		at:            map[int64]int32{},
		packing:       newPacking(),
		onIsland:      make([][]int32, islands),
		norms:         make([]hashMap[bool], islands),
		valid:         make([][]int32, islands),
		validExpanded: make([][]int32, islands),
		byNorm:        newHashMap[int64](),
		inArch:        map[int64]bool{},
		expanded:      map[int64]int{},
	}
	for i := range p.norms {
		p.norms[i] = newHashMap[bool]()
	}
	return p
}

// hashMap maps program hashes to values: a lowercase hex SHA-256 (every
// hash the engine makes) by its bytes, in a map the garbage collector does
// not scan, and any other string as it is.
type hashMap[V any] struct {
	sha   map[[32]byte]V
	other map[string]V
}

func newHashMap[V any]() hashMap[V] {
	return hashMap[V]{sha: map[[32]byte]V{}, other: map[string]V{}}
}

func (m hashMap[V]) get(s string) (V, bool) {
	if h, ok := hexHash(s); ok {
		v, ok := m.sha[h]
		return v, ok
	}
	v, ok := m.other[s]
	return v, ok
}

func (m hashMap[V]) set(s string, v V) {
	if h, ok := hexHash(s); ok {
		m.sha[h] = v
		return
	}
	m.other[s] = v
}

// add indexes a member row (any state); the reference is the run's
// reference program.
func (p *population) add(c *store.Child) {
	p.live[c.ID] = c
	if c.Origin == runs.OriginReference {
		p.ref = c
	}
}

// expand counts an iteration that sampled member id as its parent.
func (p *population) expand(id int64) {
	p.expanded[id]++
	i, ok := p.at[id]
	if !ok {
		return // in flight: in no ranking
	}
	m := p.packedAt(i)
	if m.flags&flagValid == 0 || m.island < 0 || m.island >= int64(p.islands) {
		return
	}
	list := p.valid[m.island]
	if j := p.rankedIndex(list, m.key()); j < len(list) && p.packedAt(list[j]).id == id {
		p.validExpanded[m.island][j]++
	}
}

// elite is the archive, best first; the caller must not change it.
func (p *population) elite() []int64 { return p.archive }

// member returns the member with id, or nil: the member itself while in
// flight (and the reference), a new copy of it once settled.
func (p *population) member(id int64) *store.Child {
	if c, ok := p.live[id]; ok {
		return c
	}
	if p.ref != nil && id == p.ref.ID {
		return p.ref
	}
	if i, ok := p.at[id]; ok {
		return p.unpack(p.packedAt(i))
	}
	return nil
}

// inFlight returns the member with id while it is in flight (not
// settled), or nil: the record the engine changes as the member goes.
func (p *population) inFlight(id int64) *store.Child { return p.live[id] }

// get returns settled member i: a new copy (the reference itself).
func (p *population) get(i int32) *store.Child {
	m := p.packedAt(i)
	if p.ref != nil && m.id == p.ref.ID {
		return p.ref
	}
	return p.unpack(m)
}

// chunkBits sets the size of a chunk of packed members: 4,096 of them,
// 1.3 MB.
const chunkBits = 12

// packedAt is settled member i.
func (p *population) packedAt(i int32) *packed { return &p.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

// keyOf is settled member i's rankKey.
func (p *population) keyOf(i int32) key { return p.packedAt(i).key() }

// meta returns member id's origin and source, and whether it is a member.
func (p *population) meta(id int64) (runs.Origin, int64, bool) {
	if c, ok := p.live[id]; ok {
		return c.Origin, c.SourceID, true
	}
	if i, ok := p.at[id]; ok {
		m := p.packedAt(i)
		return runs.Origin(p.words[m.words[wordOrigin]]), m.sourceID, true
	}
	return "", 0, false
}

// restamp takes the times of settled member c's row as the store wrote
// them after it settled (the row's update time): nothing else of a settled
// member changes.
func (p *population) restamp(c *store.Child) {
	if i, ok := p.at[c.ID]; ok {
		p.stamp(p.packedAt(i), c)
	}
}

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
	if c, ok := p.live[id]; ok {
		return holdsProgram(c) && !c.Origin.IsCopy()
	}
	i, ok := p.at[id]
	return ok && p.packedAt(i).flags&(flagProgram|flagCopy) == flagProgram
}

// settledPrograms returns the settled originals that hold a program, in
// the order they settled: copies, made anew.
func (p *population) settledPrograms() []*store.Child {
	out := make([]*store.Child, 0, len(p.programs))
	for _, i := range p.programs {
		out = append(out, p.get(i))
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
		origin, _, ok := p.meta(a.ChildID)
		if a.ProgramHash == "" || !ok || origin.IsCopy() {
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
	return store.Standing(claims, p.member, p.ref)
}

// claim registers a candidate program of member id under its normalized
// hash. It returns the member that had the program first, or 0 when the
// program is new to the run.
func (p *population) claim(norm string, id int64) int64 {
	if norm == "" {
		return 0
	}
	if first, ok := p.byNorm.get(norm); ok && first != id {
		return first
	}
	p.byNorm.set(norm, id)
	return 0
}

// originalID follows copies (seed, migrant) to the member they copy, and
// returns its id.
func (p *population) originalID(c *store.Child) int64 {
	id, origin, source := c.ID, c.Origin, c.SourceID
	for i := 0; i < 8 && (origin == runs.OriginSeed || origin == runs.OriginMigrant) && source != 0; i++ {
		o, s, ok := p.meta(source)
		if !ok {
			break
		}
		id, origin, source = source, o, s
	}
	return id
}

// holdsProgram reports whether a settled member stands for a program of
// its own in the population (not a duplicate, and a program exists).
func holdsProgram(c *store.Child) bool {
	return c.State == runs.Done && c.ProgramHash != "" &&
		c.Verdict != runs.Duplicate && c.Verdict != runs.NoProposal && c.Verdict != runs.ApplyFailed
}

// settle adds a member that reached its final verdict to its island and
// to the archive, packed: the population keeps no reference to c. It
// reports whether the archive changed.
func (p *population) settle(c *store.Child) bool {
	delete(p.live, c.ID)
	i := p.n
	if int(i>>chunkBits) == len(p.chunks) {
		p.chunks = append(p.chunks, make([]packed, 0, 1<<chunkBits))
	}
	last := &p.chunks[len(p.chunks)-1]
	*last = append(*last, p.pack(c, p.objective))
	p.n++
	p.at[c.ID] = i
	m := p.packedAt(i)
	if m.flags&flagProgram == 0 {
		return false
	}
	if c.Island >= 0 && c.Island < p.islands {
		p.onIsland[c.Island] = append(p.onIsland[c.Island], i)
		p.norms[c.Island].set(c.NormHash, true)
		if m.flags&flagValid != 0 {
			j := p.rankedIndex(p.valid[c.Island], m.key())
			p.valid[c.Island] = slices.Insert(p.valid[c.Island], j, i)
			p.validExpanded[c.Island] = slices.Insert(p.validExpanded[c.Island], j, int32(p.expanded[c.ID]))
		}
	}
	if m.flags&flagCopy != 0 {
		return false
	}
	p.programs = append(p.programs, i)
	return p.offerArchive(m)
}

// offerArchive inserts settled member m into the archive if it is among
// the best.
func (p *population) offerArchive(m *packed) bool {
	if m.flags&flagValid == 0 || p.archiveSize <= 0 || p.inArch[m.id] {
		return false
	}
	k := m.key()
	i := len(p.archive)
	for i > 0 && k.less(p.keyOf(p.at[p.archive[i-1]])) {
		i--
	}
	if i >= p.archiveSize {
		return false
	}
	p.archive = slices.Insert(p.archive, i, m.id)
	p.inArch[m.id] = true
	if len(p.archive) > p.archiveSize {
		delete(p.inArch, p.archive[len(p.archive)-1])
		p.archive = p.archive[:p.archiveSize]
	}
	return true
}

// rankedIndex is where a member of key k goes in list (settled members),
// which is sorted best first: where it is, when it is there (keys are
// unique: they end with the ID).
func (p *population) rankedIndex(list []int32, k key) int {
	i, _ := slices.BinarySearchFunc(list, k, func(m int32, k key) int {
		if p.keyOf(m).less(k) {
			return -1
		}
		return 1
	})
	return i
}

// best returns the best original program, or nil.
func (p *population) best() *store.Child {
	if len(p.archive) > 0 {
		return p.member(p.archive[0])
	}
	b := int32(-1)
	for _, i := range p.programs {
		if b < 0 || p.keyOf(i).less(p.keyOf(b)) {
			b = i
		}
	}
	if b < 0 {
		return nil
	}
	return p.get(b)
}

// ranked returns the island's settled members (indexes into settled),
// best first: the valid ones if any, else all of them (so that an island
// of failures still yields a parent, whose error the prompt shows). The
// caller must not change the slice.
func (p *population) ranked(island int) []int32 {
	if len(p.valid[island]) > 0 {
		return p.valid[island]
	}
	out := slices.Clone(p.onIsland[island])
	slices.SortFunc(out, func(a, b int32) int {
		if p.keyOf(a).less(p.keyOf(b)) {
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
		return p.get(cands[r.IntN(len(cands))])
	}
	penalty := 0.5
	if sel.ChildPenalty != nil {
		penalty = *sel.ChildPenalty
	}
	w := slices.Grow(p.weights[:0], len(cands))[:len(cands)]
	p.weights = w
	switch sel.Strategy {
	case SelectSoftmax:
		z := p.softmaxUtilities(cands)
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
			if n := p.expanded[p.packedAt(c).id]; n != 0 {
				w[i] /= math.Pow(1+float64(n), penalty)
			}
		}
	}
	return p.get(cands[weighted(r, w)])
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

// softmaxUtilities returns, per candidate (settled members, best
// first), the standardized negative log of the objective, shifted down by
// 3 for each verdict class below the best candidate's, and shifted so the
// best is 0.
func (p *population) softmaxUtilities(cands []int32) []float64 {
	u := make([]float64, len(cands))
	var sum, sq float64
	n := 0
	for i, c := range cands {
		v := p.packedAt(c).value
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
	top := p.packedAt(cands[0]).rank
	maxU := math.Inf(-1)
	for i, c := range cands {
		z := -3.0
		if !math.IsNaN(u[i]) {
			z = (u[i] - mean) / sd
		}
		z -= 3 * float64(p.packedAt(c).rank-top)
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
	skip := p.originalID(parent)
	others := len(p.programs)
	if p.isProgram(skip) {
		others--
	}
	if wantDiverse && others >= 2 {
		k = min(k, others-1)
	}
	acceptable := p.word(string(runs.Acceptable))
	var good, rest []int32
	for _, id := range p.archive {
		i := p.at[id]
		switch {
		case id == skip:
		case p.packedAt(i).words[wordVerdict] == acceptable:
			good = append(good, i)
		default:
			rest = append(rest, i)
		}
	}
	if len(good) > k {
		return p.pick(r, good[:min(len(good), 2*k)], k)
	}
	out := p.pick(r, good, k)
	for _, i := range rest {
		if len(out) == k {
			break
		}
		out = append(out, p.get(i))
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
	skip := map[int64]bool{p.originalID(parent): true}
	for _, c := range top {
		skip[c.ID] = true
	}
	ok := func(id int64) bool { return !skip[id] }
	n := len(p.programs)
	chosen := map[int64]bool{}
	var out []*store.Child
	for tries := 0; tries < 8*k && len(out) < k && n > 0; tries++ {
		i := p.programs[r.IntN(n)]
		if id := p.packedAt(i).id; ok(id) && !chosen[id] {
			chosen[id] = true
			out = append(out, p.get(i))
		}
	}
	if len(out) < k {
		var rest []int32
		for _, i := range p.programs {
			if id := p.packedAt(i).id; ok(id) && !chosen[id] {
				rest = append(rest, i)
			}
		}
		out = append(out, p.pick(r, rest, k-len(out))...)
	}
	return out
}

// pick draws up to k distinct settled members uniformly.
func (p *population) pick(r *rand.Rand, idx []int32, k int) []*store.Child {
	if k <= 0 || len(idx) == 0 {
		return nil
	}
	idx = slices.Clone(idx)
	r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	if len(idx) > k {
		idx = idx[:k]
	}
	out := make([]*store.Child, len(idx))
	for i, x := range idx {
		out[i] = p.get(x)
	}
	return out
}

// emigrants returns the best count valid members of island from that are
// originals (copies do not migrate again) and whose program the island to
// does not hold yet.
func (p *population) emigrants(from, to, count int) []*store.Child {
	have := p.norms[to]
	var out []*store.Child
	for _, i := range p.ranked(from) {
		if len(out) == count {
			break
		}
		m := p.packedAt(i)
		if m.flags&(flagValid|flagCopy) != flagValid || p.holds(have, m) {
			continue
		}
		out = append(out, p.get(i))
	}
	return out
}

// holds reports whether set holds settled member m's normalized hash.
func (p *population) holds(set hashMap[bool], m *packed) bool {
	if m.flags&flagNormHex != 0 {
		return set.sha[m.normHash]
	}
	return set.other[p.text(m, textNormHash)]
}
