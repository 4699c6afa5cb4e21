package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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

// TinySecret is the 32 random bytes an installation draws the tiny corpus
// from: its tables (the "language") and its sample (every shard). The
// generator's structure and TinyParams are public; without the secret
// nobody can regenerate the shards or write down the generator's tables.
type TinySecret [32]byte

// tinyVersion names the generator in every seed derived from a secret, so
// a later generator with the same secret draws unrelated tables.
const tinyVersion = "frontier tiny corpus v2"

// stream returns the PCG stream the secret gives for label: the first 16
// bytes of SHA-256(version, label, secret) seed it. Distinct labels give
// independent streams, and no stream reveals the secret.
func (s TinySecret) stream(label string) *rand.PCG {
	h := sha256.New()
	h.Write([]byte(tinyVersion))
	h.Write([]byte{0})
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write(s[:])
	sum := h.Sum(nil)
	return rand.NewPCG(binary.LittleEndian.Uint64(sum[0:8]), binary.LittleEndian.Uint64(sum[8:16]))
}

// Fingerprint names the secret without revealing it: 16 hex digits of a
// hash under a label that no stream uses. Two folders with the same
// fingerprint hold the same corpus.
func (s TinySecret) Fingerprint() string {
	h := sha256.New()
	h.Write([]byte(tinyVersion))
	h.Write([]byte{0})
	h.Write([]byte("fingerprint"))
	h.Write([]byte{0})
	h.Write(s[:])
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// TinyParams are the public structure of the tiny corpus: vocabulary
// layout, table shapes, and the rates that set how much of the corpus
// each mechanism carries. Together with a TinySecret they determine every
// byte; all sampling is integer arithmetic, so equal inputs give equal
// bytes on every machine.
type TinyParams struct {
	// The vocabulary is laid out in disjoint ranges, in this order:
	// function words, Classes content classes of ClassSize tokens each,
	// keys, values, then unused ids up to BOS = Vocab-1.
	Vocab     int `json:"vocab"`
	Function  int `json:"function_words"`
	Classes   int `json:"content_classes"`
	ClassSize int `json:"class_size"`
	Keys      int `json:"keys"`
	Values    int `json:"values"`
	// Forms is the number of surface forms of each concept: content token
	// i of a class is form i mod Forms of concept i / Forms. Documents
	// repeat concepts, and every occurrence picks its form uniformly, so
	// what predicts a content word is having seen its concept in any form:
	// a model must learn which forms belong together, and a cache of the
	// exact tokens seen catches only some of it.
	Forms int `json:"forms"`

	// Every token but a value is drawn from a row chosen by the previous
	// token: START after BOS, one row per function word, one per content
	// class (after any token of the class) and one after a value. A row
	// emits events: a function word, a content slot of some class, or a
	// key slot.
	//
	// A row emits Support function words and ClassPicks content classes,
	// the secret choosing which. Within each part the weights follow
	// Zipf's law (the i-th choice has weight proportional to 1/i), so
	// rows are skewed like natural text and every row, whatever the
	// secret, has the same entropy: the corpus's figures do not depend on
	// the luck of the draw.
	Support    int `json:"support"`
	ClassPicks int `json:"class_picks"`
	// ContentPermille is the mass, in thousandths, that a row gives to
	// content slots; rows after a content token give AfterContentPermille
	// instead, so content tokens are mostly separated by function words.
	// KeyPermille is every row's mass of the key slot.
	ContentPermille      int `json:"content_permille"`
	AfterContentPermille int `json:"after_content_permille"`
	KeyPermille          int `json:"key_permille"`

	// Each document draws one of Topics topics uniformly. A content slot
	// of class c draws the document's next concept of class c from a
	// Chinese restaurant process (a Dirichlet-multinomial cache): with n
	// concepts of class c drawn so far in the document, it repeats one of
	// them chosen uniformly with probability n/(n+alpha), and otherwise
	// draws a fresh concept from the topic's base distribution over the
	// class; then a form of the concept, uniformly. The i-th concept of a
	// class in a topic's secret order has base weight 1<<(i mod BaseBits),
	// so every base distribution has the same entropy. alpha =
	// AlphaNum/AlphaDen.
	Topics   int `json:"topics"`
	BaseBits int `json:"base_bits"`
	AlphaNum int `json:"alpha_num"`
	AlphaDen int `json:"alpha_den"`

	// A key slot draws a key from a Zipf table (the key of rank r has
	// weight KeyZipf/(r+1); ranks are a secret permutation). The token
	// after a key is a value: the one bound to the key in this document,
	// or, at the key's first use, a uniform value, which becomes its
	// binding until the document ends.
	KeyZipf int `json:"key_zipf"`

	// A document ends (BOS) after a function word, a content token or a
	// value with probability EndNum/EndDen, the same everywhere, so no
	// position in a document is special.
	EndNum int `json:"end_num"`
	EndDen int `json:"end_den"`

	// ValShardTokens and TrainShardTokens are the shard sizes; there are
	// TrainShards training shards.
	ValShardTokens   int `json:"val_shard_tokens"`
	TrainShardTokens int `json:"train_shard_tokens"`
	TrainShards      int `json:"train_shards"`
}

// DefaultTinyParams returns the parameters of the tiny track's corpus.
func DefaultTinyParams() TinyParams {
	return TinyParams{
		Vocab: 256, Function: 64, Classes: 1, ClassSize: 128, Keys: 16, Values: 32, Forms: 4,
		Support: 8, ClassPicks: 1,
		ContentPermille: 650, AfterContentPermille: 200, KeyPermille: 60,
		Topics: 16, BaseBits: 4, AlphaNum: 1, AlphaDen: 1,
		KeyZipf: 720720, // divisible by 1..16, so the Zipf weights are exact
		EndNum:  1, EndDen: 256,
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
	check(p.Function >= 1, "function words = %d, need at least 1", p.Function)
	check(p.Classes >= 1, "content classes = %d, need at least 1", p.Classes)
	check(p.ClassSize >= 1, "class size = %d, need at least 1", p.ClassSize)
	check(p.Forms >= 1 && p.ClassSize%max(p.Forms, 1) == 0, "forms = %d, need at least 1 and a divisor of the class size (%d)", p.Forms, p.ClassSize)
	check(p.Keys >= 1, "keys = %d, need at least 1", p.Keys)
	check(p.Values >= 1, "values = %d, need at least 1", p.Values)
	used := p.Function + p.Classes*p.ClassSize + p.Keys + p.Values + 1
	check(p.Vocab >= used && p.Vocab <= 1<<16, "vocab = %d, need %d..65536 (function + content + keys + values + BOS)", p.Vocab, used)
	check(p.Support >= 1 && p.Support <= min(p.Function, zipfMax), "support = %d, need 1..%d and at most the function words (%d)", p.Support, zipfMax, p.Function)
	check(p.ClassPicks >= 1 && p.ClassPicks <= min(p.Classes, zipfMax), "class picks = %d, need 1..%d and at most the classes (%d)", p.ClassPicks, zipfMax, p.Classes)
	check(p.Topics >= 1 && p.Topics <= 1024, "topics = %d, need 1..1024", p.Topics)
	check(p.BaseBits >= 1 && p.BaseBits <= 12, "base bits = %d, need 1..12", p.BaseBits)
	check(p.ContentPermille >= 0 && p.AfterContentPermille >= 0 && p.KeyPermille >= 0 &&
		p.ContentPermille+p.KeyPermille < 1000 && p.AfterContentPermille+p.KeyPermille < 1000,
		"content %d, after content %d and key %d permille: each row needs some mass left for function words", p.ContentPermille, p.AfterContentPermille, p.KeyPermille)
	check(p.AlphaNum >= 1 && p.AlphaDen >= 1 && p.AlphaNum <= 1<<20 && p.AlphaDen <= 1<<20, "alpha = %d/%d, need numerator and denominator in 1..2^20", p.AlphaNum, p.AlphaDen)
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

// Token classes. The ranges are disjoint, so every token says which class
// it is, and the previous token alone says which row the next comes from.
const (
	classFunction = iota
	classContent
	classKey
	classValue
	classBOS
	classUnused
	numClasses
)

var classNames = [numClasses]string{"function", "content", "key", "value", "bos", "unused"}

// row is one sparse row: the events it can emit and the cumulative
// weights used to sample them.
type row struct {
	events []uint16
	cum    []uint32 // cum[len-1] == rowTotal
}

// TinyModel is the generator's tables, derived from TinyParams and a
// secret. It is read-only after construction and safe for concurrent use.
type TinyModel struct {
	p      TinyParams
	secret TinySecret

	contentBase, keyBase, valueBase, bos int
	// Events of a row: function word f is event f, a content slot of class
	// c is event Function+c, the key slot is event Function+Classes.
	events, keyEvent int

	// rows[s]: s = 0 is START (after BOS), 1+f follows function word f,
	// 1+Function+c follows any content token of class c, and the last
	// follows a value.
	rows []row
	// weight[s*events+e] is the weight of event e in row s, for the
	// predictor's O(1) lookups.
	weight []uint32

	// concepts is the number of concepts of a class, ClassSize/Forms.
	concepts int
	// base[(z*Classes+c)*concepts+i] is topic z's base weight of concept
	// i of class c; baseCum its running sum within the class,
	// baseTotal[z*Classes+c] the class's sum.
	base, baseCum, baseTotal []uint32

	keyW     []uint32
	keyCum   []uint32
	keyTotal uint32
}

// NewTinyModel validates p and draws the generator's tables from secret.
func NewTinyModel(p TinyParams, secret TinySecret) (*TinyModel, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	m := &TinyModel{
		p:           p,
		secret:      secret,
		contentBase: p.Function,
		keyBase:     p.Function + p.Classes*p.ClassSize,
		valueBase:   p.Function + p.Classes*p.ClassSize + p.Keys,
		bos:         p.Vocab - 1,
		events:      p.Function + p.Classes + 1,
		keyEvent:    p.Function + p.Classes,
		concepts:    p.ClassSize / p.Forms,
	}
	src := secret.stream("tables")

	// Keys: Zipf weights over a secret order.
	m.keyW = make([]uint32, p.Keys)
	for rank, k := range sampleDistinct(src, p.Keys, p.Keys) {
		m.keyW[k] = uint32(p.KeyZipf / (rank + 1))
	}
	for _, w := range m.keyW {
		m.keyTotal += w
		m.keyCum = append(m.keyCum, m.keyTotal)
	}

	// Base distributions of the topics over the content classes: the
	// same weights in a secret order for each topic and class.
	K := m.concepts
	m.base = make([]uint32, p.Topics*p.Classes*K)
	m.baseCum = make([]uint32, len(m.base))
	m.baseTotal = make([]uint32, p.Topics*p.Classes)
	for zc := range p.Topics * p.Classes {
		w := m.base[zc*K : (zc+1)*K]
		for rank, i := range sampleDistinct(src, K, K) {
			w[i] = 1 << (rank % p.BaseBits)
		}
		var sum uint32
		for i := range w {
			sum += w[i]
			m.baseCum[zc*K+i] = sum
		}
		m.baseTotal[zc] = sum
	}

	states := m.numStates()
	m.rows = make([]row, states)
	m.weight = make([]uint32, states*m.events)
	keyMass := uint64(rowTotal / 1000 * p.KeyPermille)
	for s := range states {
		contentMass := uint64(rowTotal / 1000 * p.ContentPermille)
		if m.stateIsContent(s) {
			contentMass = uint64(rowTotal / 1000 * p.AfterContentPermille)
		}
		funcMass := rowTotal - contentMass - keyMass
		funcs := sampleDistinct(src, p.Function, p.Support)
		classes := sampleDistinct(src, p.Classes, p.ClassPicks)
		var r row
		var cum uint32
		add := func(event int, w uint32) {
			if w == 0 {
				return
			}
			cum += w
			r.events = append(r.events, uint16(event))
			r.cum = append(r.cum, cum)
			m.weight[s*m.events+event] = w
		}
		for i, w := range zipfSplit(len(funcs), funcMass) {
			add(funcs[i], w)
		}
		for i, w := range zipfSplit(len(classes), contentMass) {
			add(p.Function+classes[i], w)
		}
		add(m.keyEvent, uint32(keyMass))
		if cum != rowTotal {
			return nil, fmt.Errorf("tiny model: row %d sums to %d, not %d", s, cum, rowTotal)
		}
		m.rows[s] = r
	}
	return m, nil
}

// zipfMax is the most weights zipfSplit can make exactly: 720720 is
// divisible by 1..16.
const zipfMax = 16

// zipfSplit splits mass into n integer weights proportional to 1/(i+1);
// the rounding remainder goes to the first.
func zipfSplit(n int, mass uint64) []uint32 {
	raw := make([]uint64, n)
	var rawSum uint64
	for i := range raw {
		raw[i] = 720720 / uint64(i+1)
		rawSum += raw[i]
	}
	ws := make([]uint32, n)
	var given uint64
	for i, r := range raw {
		ws[i] = uint32(r * mass / rawSum)
		given += uint64(ws[i])
	}
	if n > 0 {
		ws[0] += uint32(mass - given)
	}
	return ws
}

// Params returns the parameters the model was built from.
func (m *TinyModel) Params() TinyParams { return m.p }

// BOS returns the document separator's id.
func (m *TinyModel) BOS() uint16 { return uint16(m.bos) }

func (m *TinyModel) numStates() int { return m.p.Function + m.p.Classes + 2 }

func (m *TinyModel) stateIsContent(s int) bool {
	return s > m.p.Function && s <= m.p.Function+m.p.Classes
}

// class returns the class of token t.
func (m *TinyModel) class(t uint16) int {
	switch i := int(t); {
	case i == m.bos:
		return classBOS
	case i < m.contentBase:
		return classFunction
	case i < m.keyBase:
		return classContent
	case i < m.valueBase:
		return classKey
	case i < m.valueBase+m.p.Values:
		return classValue
	}
	return classUnused
}

// contentClass returns the content class of content token t.
func (m *TinyModel) contentClass(t uint16) int { return (int(t) - m.contentBase) / m.p.ClassSize }

// concept returns the concept of content token t, numbered across
// classes: class c holds concepts c*concepts .. (c+1)*concepts-1.
func (m *TinyModel) concept(t uint16) int { return (int(t) - m.contentBase) / m.p.Forms }

// state returns the row that follows token prev, which must be BOS, a
// function word, a content token or a value.
func (m *TinyModel) state(prev uint16) int {
	switch m.class(prev) {
	case classFunction:
		return 1 + int(prev)
	case classContent:
		return 1 + m.p.Function + m.contentClass(prev)
	case classValue:
		return 1 + m.p.Function + m.p.Classes
	}
	return 0
}

// event returns the row event that emits token t (a function word, a
// content token or a key), or -1.
func (m *TinyModel) event(t uint16) int {
	switch m.class(t) {
	case classFunction:
		return int(t)
	case classContent:
		return m.p.Function + m.contentClass(t)
	case classKey:
		return m.keyEvent
	}
	return -1
}

// rowWeight returns the weight of event e in row s.
func (m *TinyModel) rowWeight(s, e int) uint32 { return m.weight[s*m.events+e] }

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

// pick returns the index of the first cumulative weight above a uniform
// draw below cum[len-1].
func pick(src *rand.PCG, cum []uint32) int {
	u := uint32(uniform(src, uint64(cum[len(cum)-1])))
	for i, c := range cum {
		if u < c {
			return i
		}
	}
	return len(cum) - 1 // unreachable: u < cum[len-1]
}

// tinyGen is the generator's state. Everything the next token depends on
// is here: the document's content tokens so far (per class), its
// bindings, and the previous token.
type tinyGen struct {
	m     *TinyModel
	src   *rand.PCG
	topic int
	drawn [][]int // concepts of each class drawn in this document
	bound []int16 // value bound to each key in this document, -1 if none
	prev  uint16
}

func (g *tinyGen) newDocument() {
	g.topic = int(uniform(g.src, uint64(g.m.p.Topics)))
	for c := range g.drawn {
		g.drawn[c] = g.drawn[c][:0]
	}
	for i := range g.bound {
		g.bound[i] = -1
	}
}

// content draws the document's next token of class c: a concept from the
// cache or the topic's base, then one of its forms.
func (g *tinyGen) content(c int) uint16 {
	m := g.m
	p := &m.p
	drawn := g.drawn[c]
	n := uint64(len(drawn))
	u := uniform(g.src, n*uint64(p.AlphaDen)+uint64(p.AlphaNum))
	var concept int
	if u < n*uint64(p.AlphaDen) {
		concept = drawn[u/uint64(p.AlphaDen)]
	} else {
		lo := (g.topic*p.Classes + c) * m.concepts
		concept = c*m.concepts + pick(g.src, m.baseCum[lo:lo+m.concepts])
	}
	g.drawn[c] = append(drawn, concept)
	return uint16(m.contentBase + concept*p.Forms + int(uniform(g.src, uint64(p.Forms))))
}

func (g *tinyGen) next() uint16 {
	m := g.m
	var t uint16
	switch c := m.class(g.prev); {
	case c == classKey:
		k := int(g.prev) - m.keyBase
		v := g.bound[k]
		if v < 0 {
			v = int16(uniform(g.src, uint64(m.p.Values)))
			g.bound[k] = v
		}
		t = uint16(m.valueBase + int(v))
	case c != classBOS && uniform(g.src, uint64(m.p.EndDen)) < uint64(m.p.EndNum):
		t = m.BOS()
		g.newDocument()
	default:
		r := &m.rows[m.state(g.prev)]
		switch e := int(r.events[pick(g.src, r.cum)]); {
		case e < m.p.Function:
			t = uint16(e)
		case e < m.keyEvent:
			t = g.content(e - m.p.Function)
		default:
			t = uint16(m.keyBase + pick(g.src, m.keyCum))
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
		src:   m.secret.stream(fmt.Sprintf("shard %d", index)),
		drawn: make([][]int, m.p.Classes),
		bound: make([]int16, m.p.Keys),
		prev:  m.BOS(),
	}
	g.newDocument()
	out[0] = m.BOS()
	for i := 1; i < len(out); i++ {
		out[i] = g.next()
	}
}
