package data

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// File names of the tiny corpus: shard 0 is validation.
const (
	tinyPrefix = "tiny_"
	// TinyValFile is the tiny validation shard.
	TinyValFile = "tiny_val_000000.bin"
)

// TinyTrainFile is the name of training shard i (1-based: shard 0 is the
// validation shard).
func TinyTrainFile(i int) string { return fmt.Sprintf("tiny_train_%06d.bin", i) }

// TinyParams define the tiny synthetic corpus. Every table the generator
// uses is derived from them with integer arithmetic, so equal params give
// equal bytes everywhere. Changing any field changes the corpus and hence
// the SHA-256 pins of the tiny track.
type TinyParams struct {
	// The vocabulary is laid out in disjoint ranges, in this order: words,
	// markers, keys, values, then unused ids up to BOS = Vocab-1.
	Vocab   int
	Words   int
	Markers int
	Keys    int
	Values  int
	// Topics is the number of topics; each document draws one uniformly.
	Topics int

	// TableSeed seeds the language itself: topic word sets and transition
	// rows. It is shared by all shards.
	TableSeed uint64
	// HomeWords is how many words each topic favours.
	HomeWords int
	// SharedWords is how many candidate successors each state offers to
	// every topic, and SharedPicks how many of them each topic's row takes
	// (in its own choice and weights); topics overlap through them.
	SharedWords int
	SharedPicks int
	// MinSupport and MaxSupport bound the number of words a row can emit.
	MinSupport, MaxSupport int
	// WeightBits: a row's raw word weights are 1<<u with u uniform in
	// [0, WeightBits), which makes rows skewed, like natural text.
	WeightBits int
	// MarkerPermille is the chance, in thousandths, that a word is followed
	// by a marker (and then a key and a value). It is the same in every row
	// so that document lengths do not depend on the topic.
	MarkerPermille int
	// A document ends (BOS) at each chain position with probability
	// EndNum/EndDen, except right after BOS, so no document is empty.
	EndNum, EndDen int
	// KeyZipf scales the key weights: key k has weight KeyZipf/(k+1).
	KeyZipf int

	// Seed is the master seed of the shards; shard i is generated from
	// (Seed, i) alone, so shards are independent and reproducible.
	Seed uint64
	// ValShardTokens and TrainShardTokens are the shard sizes; there are
	// TrainShards training shards.
	ValShardTokens   int
	TrainShardTokens int
	TrainShards      int
}

// DefaultTinyParams returns the parameters of the tiny track's corpus.
func DefaultTinyParams() TinyParams {
	return TinyParams{
		Vocab: 256, Words: 192, Markers: 4, Keys: 16, Values: 32,
		Topics:    16,
		TableSeed: 0x7469_6e79_7461_626c, // "tinytabl"
		HomeWords: 40, SharedWords: 6, SharedPicks: 3,
		MinSupport: 8, MaxSupport: 16,
		WeightBits:     5,
		MarkerPermille: 60,
		EndNum:         1, EndDen: 256,
		KeyZipf:          720720,                // divisible by 1..16, so the Zipf weights are exact
		Seed:             0x7469_6e79_7365_6564, // "tinyseed"
		ValShardTokens:   1 << 18,
		TrainShardTokens: 1 << 20,
		TrainShards:      8,
	}
}

// rowTotal is the sum of the weights of every row, so a row's
// probabilities are exact rationals weight/rowTotal.
const rowTotal = 1 << 20

// Validate reports every parameter that is out of range.
func (p TinyParams) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(p.Words >= 1, "words = %d, need at least 1", p.Words)
	check(p.Markers >= 1, "markers = %d, need at least 1", p.Markers)
	check(p.Keys >= 1, "keys = %d, need at least 1", p.Keys)
	check(p.Values >= 1, "values = %d, need at least 1", p.Values)
	used := p.Words + p.Markers + p.Keys + p.Values + 1
	check(p.Vocab >= used && p.Vocab <= 1<<16, "vocab = %d, need %d..65536 (words+markers+keys+values+BOS)", p.Vocab, used)
	check(p.Topics >= 1 && p.Topics <= 1024, "topics = %d, need 1..1024", p.Topics)
	check(p.HomeWords >= 1 && p.HomeWords <= p.Words, "home words = %d, need 1..words (%d)", p.HomeWords, p.Words)
	check(p.SharedWords >= 0 && p.SharedWords <= p.Words, "shared words = %d, need 0..words (%d)", p.SharedWords, p.Words)
	check(p.SharedPicks >= 0 && p.SharedPicks <= p.SharedWords, "shared picks = %d, need 0..shared words (%d)", p.SharedPicks, p.SharedWords)
	check(p.MinSupport >= 1 && p.MinSupport <= p.MaxSupport, "support = %d..%d, need 1 <= min <= max", p.MinSupport, p.MaxSupport)
	check(p.MaxSupport <= p.Words, "max support = %d, need at most words (%d)", p.MaxSupport, p.Words)
	check(p.WeightBits >= 1 && p.WeightBits <= 12, "weight bits = %d, need 1..12", p.WeightBits)
	check(p.MarkerPermille >= 0 && p.MarkerPermille < 1000, "marker permille = %d, need 0..999", p.MarkerPermille)
	check(p.EndNum >= 1 && p.EndNum < p.EndDen, "end of document chance %d/%d, need 0 < num < den", p.EndNum, p.EndDen)
	check(p.KeyZipf >= p.Keys && p.KeyZipf <= 1<<30, "key zipf scale = %d, need keys..2^30", p.KeyZipf)
	check(p.ValShardTokens >= 2 && p.ValShardTokens <= MaxTokens, "val shard tokens = %d, need 2..%d", p.ValShardTokens, MaxTokens)
	check(p.TrainShardTokens >= 2 && p.TrainShardTokens <= MaxTokens, "train shard tokens = %d, need 2..%d", p.TrainShardTokens, MaxTokens)
	check(p.TrainShards >= 1, "train shards = %d, need at least 1", p.TrainShards)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tiny corpus parameters: %w", err)
	}
	return nil
}

// Token classes. The ranges are disjoint, so the class of the previous
// token alone says what kind of token comes next.
const (
	classWord = iota
	classMarker
	classKey
	classValue
	classBOS
	classUnused
	numClasses
)

var classNames = [numClasses]string{"word", "marker", "key", "value", "bos", "unused"}

// row is one sparse transition row: the tokens it can emit and the
// cumulative weights used to sample them.
type row struct {
	toks []uint16
	cum  []uint32 // cum[len-1] == rowTotal
}

// TinyModel is the generator's tables, derived from TinyParams. It is
// read-only after construction and safe for concurrent use.
type TinyModel struct {
	p TinyParams

	markerBase, keyBase, valueBase, bos int
	// chainToks is the number of tokens a chain row can emit: words then
	// markers.
	chainToks int

	// rows[z*(Words+1)+s] is topic z's row for state s: s = 0 is the START
	// row (after BOS or a value), s = 1+w follows word w.
	rows []row
	// weight[(z*(Words+1)+s)*chainToks+t] is the weight of token t in that
	// row, for the predictor's O(1) lookups.
	weight []uint32

	keyW     []uint32
	keyCum   []uint32
	keyTotal uint32
}

// NewTinyModel validates p and builds the generator's tables.
func NewTinyModel(p TinyParams) (*TinyModel, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	m := &TinyModel{
		p:          p,
		markerBase: p.Words,
		keyBase:    p.Words + p.Markers,
		valueBase:  p.Words + p.Markers + p.Keys,
		bos:        p.Vocab - 1,
		chainToks:  p.Words + p.Markers,
	}
	for k := range p.Keys {
		w := uint32(p.KeyZipf / (k + 1))
		m.keyW = append(m.keyW, w)
		m.keyTotal += w
		m.keyCum = append(m.keyCum, m.keyTotal)
	}

	// The second PCG seed separates the table stream from shard streams.
	src := rand.NewPCG(p.TableSeed, 0x7461_626c_6573)
	home := make([][]int, p.Topics)
	for z := range home {
		home[z] = sampleDistinct(src, p.Words, p.HomeWords)
	}
	states := p.Words + 1
	shared := make([][]int, states)
	for s := range shared {
		shared[s] = sampleDistinct(src, p.Words, p.SharedWords)
	}
	markerW := uint32(rowTotal / 1000 * p.MarkerPermille / p.Markers)
	m.rows = make([]row, p.Topics*states)
	m.weight = make([]uint32, p.Topics*states*m.chainToks)
	for z := range p.Topics {
		for s := range states {
			n := p.MinSupport + int(uniform(src, uint64(p.MaxSupport-p.MinSupport+1)))
			// Part of the row comes from the state's shared candidates, in
			// this topic's choice; the rest from the topic's home words.
			nShared := min(p.SharedPicks, n)
			picked := make([]int, 0, n)
			seen := make(map[int]bool, n)
			for _, i := range sampleDistinct(src, len(shared[s]), nShared) {
				picked = append(picked, shared[s][i])
				seen[shared[s][i]] = true
			}
			for _, i := range sampleDistinct(src, len(home[z]), len(home[z])) {
				if len(picked) == n {
					break
				}
				if w := home[z][i]; !seen[w] {
					picked = append(picked, w)
					seen[w] = true
				}
			}
			raw := make([]uint64, len(picked))
			var rawSum uint64
			for i := range raw {
				raw[i] = 1 << uniform(src, uint64(p.WeightBits))
				rawSum += raw[i]
			}
			wordMass := uint64(rowTotal)
			if s != 0 {
				wordMass -= uint64(markerW) * uint64(p.Markers)
			}
			ws := make([]uint32, len(raw))
			var given uint64
			for i, r := range raw {
				ws[i] = uint32(r * wordMass / rawSum)
				given += uint64(ws[i])
			}
			ws[0] += uint32(wordMass - given) // rounding remainder
			var r row
			var cum uint32
			base := (z*states + s) * m.chainToks
			for i, w := range picked {
				cum += ws[i]
				r.toks = append(r.toks, uint16(w))
				r.cum = append(r.cum, cum)
				m.weight[base+w] = ws[i]
			}
			if s != 0 {
				for mk := range p.Markers {
					cum += markerW
					r.toks = append(r.toks, uint16(m.markerBase+mk))
					r.cum = append(r.cum, cum)
					m.weight[base+m.markerBase+mk] = markerW
				}
			}
			if cum != rowTotal {
				return nil, fmt.Errorf("tiny model: row (topic %d, state %d) sums to %d, not %d", z, s, cum, rowTotal)
			}
			m.rows[z*states+s] = r
		}
	}
	return m, nil
}

// Params returns the parameters the model was built from.
func (m *TinyModel) Params() TinyParams { return m.p }

// BOS returns the document separator's id.
func (m *TinyModel) BOS() uint16 { return uint16(m.bos) }

// class returns the class of token t.
func (m *TinyModel) class(t uint16) int {
	switch i := int(t); {
	case i == m.bos:
		return classBOS
	case i < m.markerBase:
		return classWord
	case i < m.keyBase:
		return classMarker
	case i < m.valueBase:
		return classKey
	case i < m.valueBase+m.p.Values:
		return classValue
	}
	return classUnused
}

// rowIndex returns the row for topic z after token prev, which must be a
// word, a value or BOS.
func (m *TinyModel) rowIndex(z int, prev uint16) int {
	s := 0
	if int(prev) < m.markerBase {
		s = 1 + int(prev)
	}
	return z*(m.p.Words+1) + s
}

// rowWeight returns the weight of token t in row ri (0 if t cannot follow).
func (m *TinyModel) rowWeight(ri int, t uint16) uint32 {
	if int(t) >= m.chainToks {
		return 0
	}
	return m.weight[ri*m.chainToks+int(t)]
}

// uniform returns a uniform integer in [0, n) with integer arithmetic only
// (Lemire's multiply-and-reject). The generator uses only this and PCG's
// raw output, whose algorithm is fixed, rather than math/rand's helpers,
// so the corpus depends on nothing that could change between Go releases.
func uniform(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// sampleDistinct returns k distinct integers from [0, n) in random order
// (a partial Fisher-Yates shuffle).
func sampleDistinct(src *rand.PCG, n, k int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	for i := range k {
		j := i + int(uniform(src, uint64(n-i)))
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:k]
}

// splitmix64 spreads a shard index over 64 bits for the second PCG seed.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// tinyGen is the generator's state. Everything the next token depends on
// is here: the document's topic, its bindings, the last marker, and the
// previous token.
type tinyGen struct {
	m      *TinyModel
	src    *rand.PCG
	topic  int
	bound  []int16 // value bound to (marker, key) in this document, -1 if none
	marker int
	prev   uint16
}

func (g *tinyGen) newDocument() {
	g.topic = int(uniform(g.src, uint64(g.m.p.Topics)))
	for i := range g.bound {
		g.bound[i] = -1
	}
}

func (g *tinyGen) sampleRow(ri int) uint16 {
	r := &g.m.rows[ri]
	u := uint32(uniform(g.src, rowTotal))
	for i, c := range r.cum {
		if u < c {
			return r.toks[i]
		}
	}
	return r.toks[len(r.toks)-1] // unreachable: cum ends at rowTotal
}

func (g *tinyGen) next() uint16 {
	m := g.m
	var t uint16
	switch m.class(g.prev) {
	case classMarker:
		u := uint32(uniform(g.src, uint64(m.keyTotal)))
		k := 0
		for u >= m.keyCum[k] {
			k++
		}
		g.marker = int(g.prev) - m.markerBase
		t = uint16(m.keyBase + k)
	case classKey:
		pair := g.marker*m.p.Keys + int(g.prev) - m.keyBase
		v := g.bound[pair]
		if v < 0 {
			v = int16(uniform(g.src, uint64(m.p.Values)))
			g.bound[pair] = v
		}
		t = uint16(m.valueBase + int(v))
	case classBOS:
		t = g.sampleRow(m.rowIndex(g.topic, g.prev))
	default: // a word or a value: a chain position
		if uniform(g.src, uint64(m.p.EndDen)) < uint64(m.p.EndNum) {
			t = m.BOS()
			g.newDocument()
		} else {
			t = g.sampleRow(m.rowIndex(g.topic, g.prev))
		}
	}
	g.prev = t
	return t
}

// Generate returns shard index of n tokens: it starts with BOS and ends
// wherever n falls, usually inside a document.
func (m *TinyModel) Generate(index, n int) []uint16 {
	out := make([]uint16, n)
	m.generateInto(index, out)
	return out
}

func (m *TinyModel) generateInto(index int, out []uint16) {
	if len(out) == 0 {
		return
	}
	g := &tinyGen{
		m:     m,
		src:   rand.NewPCG(m.p.Seed, splitmix64(uint64(index))),
		bound: make([]int16, m.p.Markers*m.p.Keys),
		prev:  m.BOS(),
	}
	g.newDocument()
	out[0] = m.BOS()
	for i := 1; i < len(out); i++ {
		out[i] = g.next()
	}
}
