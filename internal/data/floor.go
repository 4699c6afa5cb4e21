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
	ValTokens int64 `json:"val_tokens"`
	SeqLen    int   `json:"val_seq_len"`
	// Floor is the Bayes-optimal loss of a predictor that, like the model
	// under evaluation, sees only the tokens of its window: for target j
	// of window i, the inputs val[i*SeqLen .. i*SeqLen+j]. No program can
	// beat it in expectation.
	Floor float64 `json:"floor"`
	// FullContext is the same predictor with every earlier token of the
	// shard in view: the entropy rate of the val slice.
	FullContext float64 `json:"full_context"`
	// Bigram is the Bayes-optimal predictor that sees only the previous
	// token.
	Bigram float64 `json:"bigram"`
	// Unigram predicts every token with its stationary frequency.
	Unigram float64 `json:"unigram"`
	// Classes splits the losses by the class of the target token.
	Classes []ClassLoss `json:"classes"`
}

// ClassLoss is the part of each loss that falls on one class of target
// tokens (function, content, key, value, bos).
type ClassLoss struct {
	Class string `json:"class"`
	// Targets is the number of targets of this class.
	Targets int64 `json:"targets"`
	// Mean losses over those targets, in nats.
	Floor       float64 `json:"floor"`
	FullContext float64 `json:"full_context"`
	Bigram      float64 `json:"bigram"`
	Unigram     float64 `json:"unigram"`
}

// TinyFloor computes the Floor of the tiny corpus drawn from (p, secret)
// on the validation tokens val (the val shard, or at least its first
// valTokens+1 tokens), evaluated as the harness does: valTokens/seqLen
// windows of seqLen consecutive inputs, each predicting the next token.
func TinyFloor(val []uint16, valTokens int64, seqLen int, p TinyParams, secret TinySecret) (Floor, error) {
	m, err := NewTinyModel(p, secret)
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
	// score runs a predictor over windows of length T (the last one may
	// be shorter) and adds each target's loss to sum.
	pr := newPredictor(m)
	score := func(T int64, sum *[numClasses]float64, what string) error {
		for start := int64(0); start+1 < int64(len(val)); start += T {
			pr.begin(val[start])
			for j := start + 1; j <= min(start+T, int64(len(val))-1); j++ {
				nll, err := pr.step(val[j], j)
				if err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
				sum[m.class(val[j])] += nll
			}
		}
		return nil
	}
	// The windows the harness evaluates; one window over the whole slice;
	// windows of one input token, which is the bigram reference.
	if err := score(int64(seqLen), &sums[0], "loss floor"); err != nil {
		return f, err
	}
	if err := score(valTokens, &sums[1], "full-context entropy"); err != nil {
		return f, err
	}
	if err := score(1, &sums[2], "bigram reference"); err != nil {
		return f, err
	}
	uni := m.stationary()
	for j := 1; j < len(val); j++ {
		sums[3][m.class(val[j])] -= math.Log(uni[val[j]])
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

// endProb is q, the chance that a document ends after a function word, a
// content token or a value.
func (m *TinyModel) endProb() float64 { return float64(m.p.EndNum) / float64(m.p.EndDen) }

// alpha is the concentration of the content caches.
func (m *TinyModel) alpha() float64 { return float64(m.p.AlphaNum) / float64(m.p.AlphaDen) }

// predictor is the Bayes-optimal next-token predictor of the tiny corpus
// given the tokens since it began. The hidden state of the generator is
// the document's content tokens and bindings so far; the predictor needs
// only what is in view:
//
//   - Content tokens. Given the topic, the concepts of class c drawn in a
//     document form an exchangeable sequence (a Chinese restaurant
//     process), and where the slots fall never depends on which concepts
//     fill them, nor which form each takes. So the concepts in view are
//     distributed like the first ones of the sequence, and the next is k
//     with (n_k + alpha*beta_k)/(n + alpha), n_k the count of k among the
//     n concepts of its class in view since the last BOS: the tokens out
//     of view drop out. Its form is uniform.
//   - Bindings. A key in view with its value fixes that value. A value
//     bound out of view is uniform and independent of everything in view,
//     except in one case: a view that opens on a value sees a value whose
//     key is out of view. The predictor keeps the posterior over which key
//     it was (unkPost).
//
// Nothing else is hidden: rows depend only on the previous token.
type predictor struct {
	m     *TinyModel
	q     float64
	alpha float64
	count []int32   // count[t-contentBase]: content token t in view since the last BOS
	total []int32   // total[c]: tokens of class c in view since the last BOS
	post  []float64 // posterior over the document's topic
	bound []int16   // value bound to each key in view, -1 if none
	prev  uint16

	// When the view opens on a value, that value is bound to a key out of
	// view. unkPost is the posterior over which key it is.
	unkActive bool
	unkValue  int
	unkPost   []float64
}

func newPredictor(m *TinyModel) *predictor {
	return &predictor{
		m:       m,
		q:       m.endProb(),
		alpha:   m.alpha(),
		count:   make([]int32, m.p.Classes*m.concepts),
		total:   make([]int32, m.p.Classes),
		post:    make([]float64, m.p.Topics),
		bound:   make([]int16, m.p.Keys),
		unkPost: make([]float64, m.p.Keys),
	}
}

func (pr *predictor) newDocument() {
	for z := range pr.post {
		pr.post[z] = 1 / float64(len(pr.post))
	}
	clear(pr.count)
	clear(pr.total)
	for i := range pr.bound {
		pr.bound[i] = -1
	}
	pr.unkActive = false
}

// errImpossible marks a token the model gives probability zero: the data
// was not made by this generator with these parameters and this secret.
var errImpossible = errors.New("token has probability 0 under the tiny model: the data was not made by this generator with these parameters and this secret")

// begin starts a view whose first token is x0.
func (pr *predictor) begin(x0 uint16) {
	m := pr.m
	pr.newDocument()
	pr.prev = x0
	switch m.class(x0) {
	case classContent:
		pr.observeContent(x0)
	case classValue:
		// Bound to the key just before the view, drawn from the key table.
		pr.unkActive = true
		pr.unkValue = int(x0) - m.valueBase
		for k := range pr.unkPost {
			pr.unkPost[k] = float64(m.keyW[k]) / float64(m.keyTotal)
		}
	}
}

// beta returns topic z's base probability of concept k.
func (m *TinyModel) beta(z, k int) float64 {
	c := k / m.concepts
	zc := z*m.p.Classes + c
	return float64(m.base[zc*m.concepts+k-c*m.concepts]) / float64(m.baseTotal[zc])
}

// contentProb is the probability of content token t given that a content
// slot of its class comes: its concept's (n_k + alpha*beta_k)/(n +
// alpha), with beta_k averaged over the topic posterior, times 1/Forms.
func (pr *predictor) contentProb(t uint16) float64 {
	m := pr.m
	k := m.concept(t)
	var beta float64
	for z, pz := range pr.post {
		if pz != 0 {
			beta += pz * m.beta(z, k)
		}
	}
	return (float64(pr.count[k]) + pr.alpha*beta) / (float64(pr.total[m.contentClass(t)]) + pr.alpha) / float64(m.p.Forms)
}

// observeContent takes content token t into view: the topic posterior is
// multiplied by each topic's chance of t's concept given the class's
// concepts in view, (n_k + alpha*beta_z(k))/(n + alpha), whose
// denominator is the same for every topic (and so is the form's chance);
// then the concept is counted.
func (pr *predictor) observeContent(t uint16) {
	m := pr.m
	k := m.concept(t)
	if len(pr.post) > 1 {
		n := float64(pr.count[k])
		var sum float64
		for z, pz := range pr.post {
			pz *= n + pr.alpha*m.beta(z, k)
			pr.post[z] = pz
			sum += pz
		}
		for z := range pr.post {
			pr.post[z] /= sum
		}
	}
	pr.count[k]++
	pr.total[m.contentClass(t)]++
}

// prob returns P(next = t | the tokens in view).
func (pr *predictor) prob(t uint16) float64 {
	m := pr.m
	switch m.class(pr.prev) {
	case classKey:
		if m.class(t) != classValue {
			return 0
		}
		v := int(t) - m.valueBase
		uniformV := 1 / float64(m.p.Values)
		k := int(pr.prev) - m.keyBase
		if b := pr.bound[k]; b >= 0 {
			if int(b) == v {
				return 1
			}
			return 0
		}
		if pr.unkActive {
			p0 := pr.unkPost[k]
			if v == pr.unkValue {
				return p0 + (1-p0)*uniformV
			}
			return (1 - p0) * uniformV
		}
		return uniformV
	case classUnused:
		return 0
	}
	scale := 1.0
	if m.class(pr.prev) != classBOS {
		if t == m.BOS() {
			return pr.q
		}
		scale = 1 - pr.q
	}
	e := m.event(t)
	if e < 0 {
		return 0
	}
	p := scale * float64(m.rowWeight(m.state(pr.prev), e)) / rowTotal
	switch m.class(t) {
	case classContent:
		p *= pr.contentProb(t)
	case classKey:
		p *= float64(m.keyW[int(t)-m.keyBase]) / float64(m.keyTotal)
	}
	return p
}

// dist writes the whole predictive distribution into dst (len Vocab).
func (pr *predictor) dist(dst []float64) {
	clear(dst)
	for t := range dst {
		dst[t] = pr.prob(uint16(t))
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
	switch m.class(t) {
	case classBOS:
		pr.newDocument()
	case classContent:
		pr.observeContent(t)
	case classValue:
		if m.class(pr.prev) != classKey {
			break // only the first token of a view has no key before it
		}
		v := int(t) - m.valueBase
		k := int(pr.prev) - m.keyBase
		if pr.bound[k] >= 0 {
			break
		}
		if pr.unkActive {
			// Likelihood of v: the half-seen key would force unkValue;
			// any other key draws (or was bound to) a uniform value.
			var sum float64
			for h, ph := range pr.unkPost {
				l := 1 / float64(m.p.Values)
				if h == k {
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
		pr.bound[k] = int16(v)
	}
	pr.prev = t
}

// stationary returns the stationary frequency of every token: the chain
// of rows run to equilibrium, with content tokens at their base
// frequencies (a cache only reorders a class's draws: each draw is
// marginally from the base), keys at the key table's and values uniform.
func (m *TinyModel) stationary() []float64 {
	p := m.p
	q := m.endProb()
	// Chain states: the rows, plus "after a key" (always a value).
	S := m.numStates()
	afterKey, afterValue := S, S-1
	cur := make([]float64, S+1)
	next := make([]float64, S+1)
	cur[0] = 1
	// The lazy chain (stay put with probability 1/2) has the same
	// stationary distribution and cannot be periodic.
	for range 1 << 16 {
		for i := range next {
			next[i] = cur[i] / 2
		}
		next[afterValue] += cur[afterKey] / 2
		for s := range S {
			mass := cur[s] / 2
			if mass == 0 {
				continue
			}
			if s != 0 {
				next[0] += q * mass // BOS
				mass *= 1 - q
			}
			r := &m.rows[s]
			prev := uint32(0)
			for i, e := range r.events {
				w := mass * float64(r.cum[i]-prev) / rowTotal
				prev = r.cum[i]
				switch e := int(e); {
				case e < p.Function:
					next[1+e] += w
				case e < m.keyEvent:
					next[1+e] += w // 1+Function+c
				default:
					next[afterKey] += w
				}
			}
		}
		var change float64
		for i := range cur {
			change = max(change, math.Abs(next[i]-cur[i]))
		}
		cur, next = next, cur
		if change < 1e-16 {
			break
		}
	}
	// cur[s] is the frequency of tokens that lead to row s: BOS for 0, a
	// function word for 1+f, a content token of class c for 1+Function+c,
	// a value for afterValue; cur[afterKey] is the keys'.
	uni := make([]float64, p.Vocab)
	uni[m.bos] = cur[0]
	for f := range p.Function {
		uni[f] = cur[1+f]
	}
	for c := range p.Classes {
		for i := range p.ClassSize {
			t := c*p.ClassSize + i
			for z := range p.Topics {
				uni[m.contentBase+t] += cur[1+p.Function+c] * m.beta(z, m.concept(uint16(m.contentBase+t))) / float64(p.Topics*p.Forms)
			}
		}
	}
	for k := range p.Keys {
		uni[m.keyBase+k] = cur[afterKey] * float64(m.keyW[k]) / float64(m.keyTotal)
	}
	for v := range p.Values {
		uni[m.valueBase+v] = cur[afterValue] / float64(p.Values)
	}
	return uni
}
