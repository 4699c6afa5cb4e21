package data

import (
	"errors"
	"fmt"
	"math"
)

// Floor is the loss floor of the tiny track and the references that show
// how much context is worth. Every loss is a mean negative log-likelihood in
// nats over the same targets: val[1 .. ValTokens].
type Floor struct {
	ValTokens int64
	SeqLen    int
	// Floor is the Bayes-optimal loss of a predictor that, like the model
	// under evaluation, sees only the tokens of its window: for target j
	// of window i, the inputs val[i*SeqLen .. i*SeqLen+j]. No program can
	// beat it in expectation.
	Floor float64
	// FullContext is the same predictor with every earlier token of the
	// shard in view: the entropy rate of the val slice.
	FullContext float64
	// Bigram is the Bayes-optimal predictor that sees only the previous
	// token (topics averaged with their stationary weights, bindings
	// unknown).
	Bigram float64
	// Unigram predicts every token with its stationary frequency.
	Unigram float64
	// Classes splits the losses by the class of the target token.
	Classes []ClassLoss
}

// ClassLoss is the part of each loss that falls on one class of target
// tokens (word, marker, key, value, bos).
type ClassLoss struct {
	Class string
	// Targets is the number of targets of this class.
	Targets int64
	// Mean losses over those targets, in nats.
	Floor, FullContext, Bigram, Unigram float64
}

// TinyFloor computes the Floor of the tiny corpus with parameters p on the
// validation tokens val (the val shard, or at least its first
// valTokens+1 tokens), evaluated as the harness does: valTokens/seqLen
// windows of seqLen consecutive inputs, each predicting the next token.
func TinyFloor(val []uint16, valTokens int64, seqLen int, p TinyParams) (Floor, error) {
	m, err := NewTinyModel(p)
	if err != nil {
		return Floor{}, err
	}
	return m.Floor(val, valTokens, seqLen)
}

// Floor is TinyFloor for an existing model.
func (m *TinyModel) Floor(val []uint16, valTokens int64, seqLen int) (Floor, error) {
	f := Floor{ValTokens: valTokens, SeqLen: seqLen}
	switch {
	case seqLen < 1:
		return f, fmt.Errorf("loss floor: val_seq_len = %d, need at least 1", seqLen)
	case valTokens < int64(seqLen) || valTokens%int64(seqLen) != 0:
		return f, fmt.Errorf("loss floor: val_tokens = %d must be a positive multiple of val_seq_len = %d", valTokens, seqLen)
	case int64(len(val)) < valTokens+1:
		return f, fmt.Errorf("loss floor: val_tokens = %d needs %d tokens of the val shard, it has %d", valTokens, valTokens+1, len(val))
	}
	val = val[:valTokens+1]
	for i, t := range val {
		if m.class(t) == classUnused {
			return f, fmt.Errorf("loss floor: val token %d at position %d is outside the tiny vocabulary: the val shard was not made by this generator", t, i)
		}
	}

	var sums [4][numClasses]float64
	var counts [numClasses]int64
	for j := 1; j < len(val); j++ {
		counts[m.class(val[j])]++
	}
	// Windowed: the predictor restarts at every window, with the prior the
	// window's first token implies at its position.
	fw := newForward(m)
	pr := newPredictor(m)
	T := int64(seqLen)
	for i := int64(0); i < valTokens/T; i++ {
		start := i * T
		fw.advance(start)
		if err := pr.begin(val[start], fw); err != nil {
			return f, fmt.Errorf("loss floor: window %d: %w", i, err)
		}
		for j := start; j < start+T; j++ {
			nll, err := pr.step(val[j+1], j+1)
			if err != nil {
				return f, fmt.Errorf("loss floor: window %d: %w", i, err)
			}
			sums[0][m.class(val[j+1])] += nll
		}
	}
	// Full context: one predictor over the whole slice.
	fw0 := newForward(m)
	if err := pr.begin(val[0], fw0); err != nil {
		return f, fmt.Errorf("full-context entropy: %w", err)
	}
	for j := 1; j < len(val); j++ {
		nll, err := pr.step(val[j], int64(j))
		if err != nil {
			return f, fmt.Errorf("full-context entropy: %w", err)
		}
		sums[1][m.class(val[j])] += nll
	}
	// References from the stationary distribution.
	ref := newReferences(m)
	for j := 1; j < len(val); j++ {
		c := m.class(val[j])
		pb := ref.bigram(val[j-1], val[j])
		pu := ref.unigram(val[j])
		if pb <= 0 || pu <= 0 {
			return f, fmt.Errorf("bigram reference: token %d at position %d cannot follow %d: the val shard was not made by this generator", val[j], j, val[j-1])
		}
		sums[2][c] -= math.Log(pb)
		sums[3][c] -= math.Log(pu)
	}

	n := float64(valTokens)
	total := func(k int) float64 {
		var s float64
		for _, v := range sums[k] {
			s += v
		}
		return s / n
	}
	f.Floor, f.FullContext, f.Bigram, f.Unigram = total(0), total(1), total(2), total(3)
	for c := range numClasses {
		if counts[c] == 0 {
			continue
		}
		k := float64(counts[c])
		f.Classes = append(f.Classes, ClassLoss{
			Class: classNames[c], Targets: counts[c],
			Floor: sums[0][c] / k, FullContext: sums[1][c] / k, Bigram: sums[2][c] / k, Unigram: sums[3][c] / k,
		})
	}
	return f, nil
}

// Forward states: one per word and per marker, then the key class, the
// value class and BOS. Keys and values are classes because, given the
// topic, which key or value appears carries no information about it.
func (m *TinyModel) fwState(t uint16) int {
	switch m.class(t) {
	case classWord, classMarker:
		return int(t)
	case classKey:
		return m.chainToks
	case classValue:
		return m.chainToks + 1
	}
	return m.chainToks + 2
}

// forward holds, for each topic z, the distribution of the token at
// position t of a shard given that the document covering t has topic z.
// A window that starts mid-document sees its first token, and that token
// already says something about the topic: the Bayes-optimal prior is
// P(z | x_t) ∝ P_t(x_t | z). Shards start with BOS, so P_0 is a point mass
// on BOS, and P_t converges to the stationary distribution within a few
// hundred positions; after that it is not recomputed.
type forward struct {
	m         *TinyModel
	t         int64
	p, next   [][]float64
	converged bool
}

func newForward(m *TinyModel) *forward {
	n := m.chainToks + 3
	f := &forward{m: m, p: make([][]float64, m.p.Topics), next: make([][]float64, m.p.Topics)}
	for z := range f.p {
		f.p[z] = make([]float64, n)
		f.next[z] = make([]float64, n)
		f.p[z][n-1] = 1 // BOS at position 0
	}
	return f
}

// convergedAt is the largest change of any probability below which P_t
// is taken to be stationary; it is far below what float64 losses resolve.
const convergedAt = 1e-17

func (f *forward) advance(to int64) {
	m := f.m
	q := m.endProb()
	W, kState, vState, bState := m.p.Words, m.chainToks, m.chainToks+1, m.chainToks+2
	for ; f.t < to && !f.converged; f.t++ {
		var change float64
		for z := range f.p {
			p, np := f.p[z], f.next[z]
			clear(np)
			for mk := range m.p.Markers {
				np[kState] += p[m.markerBase+mk]
			}
			np[vState] = p[kState]
			np[bState] = q * p[vState]
			spread := func(ri int, mass float64) {
				if mass == 0 {
					return
				}
				r := &m.rows[ri]
				prev := uint32(0)
				for i, tok := range r.toks {
					np[tok] += mass * float64(r.cum[i]-prev) / rowTotal
					prev = r.cum[i]
				}
			}
			spread(z*(W+1), p[bState]+(1-q)*p[vState])
			for w := range W {
				np[bState] += q * p[w]
				spread(z*(W+1)+1+w, (1-q)*p[w])
			}
			for s := range np {
				change = max(change, math.Abs(np[s]-p[s]))
			}
			f.p[z], f.next[z] = np, p
		}
		if change < convergedAt {
			f.converged = true
		}
	}
}

// endProb is q, the chance that a chain position ends the document.
func (m *TinyModel) endProb() float64 { return float64(m.p.EndNum) / float64(m.p.EndDen) }

// predictor is the Bayes-optimal next-token predictor of the tiny corpus
// given the tokens since it began. Its hidden state is exactly what the
// visible tokens leave unknown: the topic (a posterior), the values bound
// before it began (uniform, except one pair it may have half seen), and
// nothing else.
type predictor struct {
	m      *TinyModel
	q      float64
	post   []float64 // topic posterior
	bound  []int16   // value bound to each (marker, key) pair in view, -1 if none
	marker int       // the last marker in view, -1 if none
	prev   uint16

	// When the view opens on a value, or on a key (whose value comes next),
	// that value is bound to a pair whose marker (and, for a value, key)
	// is out of view. unkPost is the posterior over which pair it is.
	unkActive bool
	unkValue  int
	unkPost   []float64
}

func newPredictor(m *TinyModel) *predictor {
	return &predictor{
		m:       m,
		q:       m.endProb(),
		post:    make([]float64, m.p.Topics),
		bound:   make([]int16, m.p.Markers*m.p.Keys),
		unkPost: make([]float64, m.p.Markers*m.p.Keys),
	}
}

func (pr *predictor) newDocument() {
	for z := range pr.post {
		pr.post[z] = 1 / float64(len(pr.post))
	}
	for i := range pr.bound {
		pr.bound[i] = -1
	}
	pr.marker = -1
	pr.unkActive = false
}

// errImpossible marks a token the model gives probability zero: the data
// was not made by this generator with these parameters.
var errImpossible = errors.New("token has probability 0 under the tiny model: the data was not made by this generator with these parameters")

// begin starts a view whose first token is x0, at the position fw has
// advanced to.
func (pr *predictor) begin(x0 uint16, fw *forward) error {
	m := pr.m
	pr.newDocument()
	pr.prev = x0
	s := m.fwState(x0)
	var sum float64
	for z := range pr.post {
		pr.post[z] = fw.p[z][s]
		sum += pr.post[z]
	}
	if sum <= 0 {
		return fmt.Errorf("first token %d at position %d: %w", x0, fw.t, errImpossible)
	}
	for z := range pr.post {
		pr.post[z] /= sum
	}
	switch m.class(x0) {
	case classMarker:
		pr.marker = int(x0) - m.markerBase
	case classValue:
		// Bound to the pair just before the view: any marker, a key drawn
		// from the key table.
		pr.unkActive = true
		pr.unkValue = int(x0) - m.valueBase
		for mk := range m.p.Markers {
			for k := range m.p.Keys {
				pr.unkPost[mk*m.p.Keys+k] = float64(m.keyW[k]) / float64(m.keyTotal) / float64(m.p.Markers)
			}
		}
	}
	return nil
}

// prob returns P(next = t | the tokens in view).
func (pr *predictor) prob(t uint16) float64 {
	m := pr.m
	switch m.class(pr.prev) {
	case classMarker:
		if m.class(t) != classKey {
			return 0
		}
		return float64(m.keyW[int(t)-m.keyBase]) / float64(m.keyTotal)
	case classKey:
		if m.class(t) != classValue {
			return 0
		}
		v := int(t) - m.valueBase
		uniformV := 1 / float64(m.p.Values)
		if pr.marker < 0 {
			return uniformV // the pair's marker is out of view
		}
		pair := pr.marker*m.p.Keys + int(pr.prev) - m.keyBase
		if b := pr.bound[pair]; b >= 0 {
			if int(b) == v {
				return 1
			}
			return 0
		}
		if pr.unkActive {
			p0 := pr.unkPost[pair]
			if v == pr.unkValue {
				return p0 + (1-p0)*uniformV
			}
			return (1 - p0) * uniformV
		}
		return uniformV
	case classUnused:
		return 0
	}
	// A chain position: after BOS, a value or a word.
	scale := 1.0
	if m.class(pr.prev) != classBOS {
		if t == m.BOS() {
			return pr.q
		}
		scale = 1 - pr.q
	}
	var p float64
	for z, pz := range pr.post {
		if pz != 0 {
			p += pz * float64(m.rowWeight(m.rowIndex(z, pr.prev), t))
		}
	}
	return scale * p / rowTotal
}

// dist writes the whole predictive distribution into dst (len Vocab).
func (pr *predictor) dist(dst []float64) {
	clear(dst)
	m := pr.m
	switch c := m.class(pr.prev); c {
	case classMarker, classKey:
		lo, hi := m.keyBase, m.valueBase
		if c == classKey {
			lo, hi = m.valueBase, m.valueBase+m.p.Values
		}
		for t := lo; t < hi; t++ {
			dst[t] = pr.prob(uint16(t))
		}
	case classUnused:
	default:
		scale := 1.0
		if c != classBOS {
			dst[m.bos] = pr.q
			scale = 1 - pr.q
		}
		for z, pz := range pr.post {
			if pz == 0 {
				continue
			}
			r := &m.rows[m.rowIndex(z, pr.prev)]
			prev := uint32(0)
			for i, tok := range r.toks {
				dst[tok] += scale * pz * float64(r.cum[i]-prev) / rowTotal
				prev = r.cum[i]
			}
		}
	}
}

// step scores target t (at shard position pos, for messages), then takes
// it into view. It returns -ln P(t | view).
func (pr *predictor) step(t uint16, pos int64) (float64, error) {
	p := pr.prob(t)
	if !(p > 0) {
		return 0, fmt.Errorf("token %d at position %d after %d: %w", t, pos, pr.prev, errImpossible)
	}
	pr.observe(t)
	return -math.Log(p), nil
}

// observe takes t into view.
func (pr *predictor) observe(t uint16) {
	m := pr.m
	switch m.class(pr.prev) {
	case classMarker:
		// The key's weight does not depend on the topic.
	case classKey:
		v := int(t) - m.valueBase
		k := int(pr.prev) - m.keyBase
		if pr.marker < 0 {
			// The view opened on this key: its value is now known, its
			// marker is not, and all markers are equally likely.
			pr.unkActive = true
			pr.unkValue = v
			clear(pr.unkPost)
			for mk := range m.p.Markers {
				pr.unkPost[mk*m.p.Keys+k] = 1 / float64(m.p.Markers)
			}
			break
		}
		pair := pr.marker*m.p.Keys + k
		if pr.bound[pair] >= 0 {
			break
		}
		if pr.unkActive {
			// Likelihood of v: the half-seen pair would force unkValue;
			// any other pair draws (or was bound to) a uniform value.
			uniformV := 1 / float64(m.p.Values)
			var sum float64
			for h, ph := range pr.unkPost {
				l := uniformV
				if h == pair {
					l = 0
					if v == pr.unkValue {
						l = 1
					}
				}
				pr.unkPost[h] = ph * l
				sum += pr.unkPost[h]
			}
			for h := range pr.unkPost {
				pr.unkPost[h] /= sum
			}
		}
		pr.bound[pair] = int16(v)
	default:
		if t == m.BOS() {
			pr.newDocument()
			break
		}
		ri0 := m.rowIndex(0, pr.prev)
		stride := m.p.Words + 1
		var sum float64
		for z, pz := range pr.post {
			pz *= float64(m.rowWeight(ri0+z*stride, t))
			pr.post[z] = pz
			sum += pz
		}
		for z := range pr.post {
			pr.post[z] /= sum
		}
		if m.class(t) == classMarker {
			pr.marker = int(t) - m.markerBase
		}
	}
	pr.prev = t
}

// references are the context-free baselines, from the stationary
// distribution of the corpus.
type references struct {
	m *TinyModel
	// uni[t] is the stationary frequency of token t.
	uni []float64
	// topicGivenWord[w*Topics+z] is P(z | previous token w).
	topicGivenWord []float64
}

func newReferences(m *TinyModel) *references {
	fw := newForward(m)
	// The chain mixes within a few hundred steps; the cap only guards
	// against parameters that mix very slowly.
	fw.advance(1 << 20)
	Z := m.p.Topics
	r := &references{m: m, uni: make([]float64, m.p.Vocab), topicGivenWord: make([]float64, m.p.Words*Z)}
	for t := range m.p.Vocab {
		tok := uint16(t)
		c := m.class(tok)
		if c == classUnused {
			continue
		}
		share := 1.0
		switch c {
		case classKey:
			share = float64(m.keyW[t-m.keyBase]) / float64(m.keyTotal)
		case classValue:
			share = 1 / float64(m.p.Values)
		}
		s := m.fwState(tok)
		for z := range Z {
			r.uni[t] += fw.p[z][s] * share / float64(Z)
		}
	}
	for w := range m.p.Words {
		var sum float64
		for z := range Z {
			sum += fw.p[z][w]
		}
		for z := range Z {
			if sum > 0 {
				r.topicGivenWord[w*Z+z] = fw.p[z][w] / sum
			}
		}
	}
	return r
}

func (r *references) unigram(t uint16) float64 { return r.uni[t] }

// bigram returns P(t | prev) for the stationary process.
func (r *references) bigram(prev, t uint16) float64 {
	m := r.m
	Z := m.p.Topics
	q := m.endProb()
	switch m.class(prev) {
	case classMarker:
		if m.class(t) != classKey {
			return 0
		}
		return float64(m.keyW[int(t)-m.keyBase]) / float64(m.keyTotal)
	case classKey:
		if m.class(t) != classValue {
			return 0
		}
		return 1 / float64(m.p.Values)
	case classBOS, classValue:
		// A new document, or one whose value said nothing about its topic.
		scale := 1.0
		if m.class(prev) == classValue {
			if t == m.BOS() {
				return q
			}
			scale = 1 - q
		}
		var p float64
		for z := range Z {
			p += float64(m.rowWeight(m.rowIndex(z, prev), t)) / float64(Z)
		}
		return scale * p / rowTotal
	case classWord:
		if t == m.BOS() {
			return q
		}
		var p float64
		for z := range Z {
			p += r.topicGivenWord[int(prev)*Z+z] * float64(m.rowWeight(m.rowIndex(z, prev), t))
		}
		return (1 - q) * p / rowTotal
	}
	return 0
}
