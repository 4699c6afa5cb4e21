package data

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The n-gram baseline: interpolated modified Kneser-Ney (Chen and
// Goodman, 1998) counted from training shards and scored on the
// validation slice the way the harness scores a model, window by window.
// It is what counting alone achieves; a track whose target it reaches
// measures counting, not learning. The tiny track's claim is that this
// baseline, tuned on the validation slice itself, stays well above the
// target.

// NGramLM holds the counts of every order up to MaxOrder.
type NGramLM struct {
	vocab    int
	bitsPer  int
	maxOrder int
	// orders[n-1] holds the n-grams: raw counts (the top order at a
	// position) and continuation counts (an order backed off to).
	orders []ngramOrder
}

// ngramTable is a sorted set of n-grams with one count each, and the
// aggregates of every context (the n-gram minus its last token) that
// Kneser-Ney needs.
type ngramTable struct {
	keys   []uint64
	counts []uint32
	// ctxKeys are the distinct contexts, sorted; for each: the sum of the
	// counts of its n-grams and how many of them have count 1, 2 and 3
	// or more.
	ctxKeys             []uint64
	ctxTotal            []uint64
	ctxN1, ctxN2, ctxN3 []uint32
	// d[i] is the discount of a count of i+1 (3 for 3 or more),
	// estimated from the counts of counts.
	d [3]float64
}

type ngramOrder struct {
	raw, cont ngramTable
}

// NGramOrderLoss is the best loss of one maximum order.
type NGramOrderLoss struct {
	Order int `json:"order"`
	// Scale multiplies the estimated discounts; the best on the slice.
	Scale float64 `json:"discount_scale"`
	Loss  float64 `json:"loss"`
}

// NGramResult is the n-gram baseline's loss on a validation slice.
type NGramResult struct {
	// Best is the best maximum order and discount scale, chosen on the
	// slice it is scored on (generous to the baseline).
	Best NGramOrderLoss `json:"best"`
	// Orders lists the best loss of each maximum order.
	Orders []NGramOrderLoss `json:"orders"`
	// WithCache is the best model mixed with a cache of the window (Kuhn
	// and De Mori, 1990): (1-lambda) P_ngram(t) + lambda n_t/n, where n_t
	// of the n tokens in view are t, lambda chosen on the slice. It is
	// what counting gains from the text in view without learning anything
	// about how it relates.
	WithCache CacheLoss `json:"with_cache"`
	// TrainTokens is the number of tokens counted.
	TrainTokens int64 `json:"train_tokens"`
}

// CountNGrams counts the n-grams of orders 1..maxOrder of every shard in
// train (n-grams do not cross from one shard to the next).
func CountNGrams(ctx context.Context, train [][]uint16, vocab, maxOrder int) (*NGramLM, error) {
	bitsPer := bits.Len(uint(max(vocab-1, 1)))
	switch {
	case vocab < 2 || vocab > 1<<16:
		return nil, fmt.Errorf("n-gram counts: vocab %d, need 2..65536", vocab)
	case maxOrder < 1 || maxOrder*bitsPer > 64:
		return nil, fmt.Errorf("n-gram counts: order %d, need 1..%d for a vocabulary of %d", maxOrder, 64/bitsPer, vocab)
	}
	lm := &NGramLM{vocab: vocab, bitsPer: bitsPer, maxOrder: maxOrder, orders: make([]ngramOrder, maxOrder)}
	total := 0
	for _, toks := range train {
		total += len(toks)
	}
	keys := make([]uint64, 0, total)
	var scratch []uint64
	for n := maxOrder; n >= 1; n-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		keys = keys[:0]
		for _, toks := range train {
			var k uint64
			mask := lm.mask(n)
			for i, t := range toks {
				if int(t) >= vocab {
					return nil, fmt.Errorf("n-gram counts: token %d is not below the vocabulary size %d", t, vocab)
				}
				k = (k<<bitsPer | uint64(t)) & mask
				if i+1 >= n {
					keys = append(keys, k)
				}
			}
		}
		scratch = radixSort(keys, scratch, n*bitsPer)
		o := &lm.orders[n-1]
		o.raw = lm.newTable(runs(keys))
		if n < maxOrder {
			// The continuation count of an n-gram is the number of distinct
			// tokens that precede it: the distinct (n+1)-grams it ends.
			up := lm.orders[n].raw.keys
			suffix := make([]uint64, len(up))
			for i, k := range up {
				suffix[i] = k & lm.mask(n)
			}
			scratch = radixSort(suffix, scratch, n*bitsPer)
			o.cont = lm.newTable(runs(suffix))
		}
	}
	return lm, nil
}

func (lm *NGramLM) mask(n int) uint64 {
	if n*lm.bitsPer >= 64 {
		return math.MaxUint64
	}
	return 1<<(n*lm.bitsPer) - 1
}

// runs turns sorted keys into distinct keys and their counts.
func runs(sorted []uint64) ([]uint64, []uint32) {
	n := 0
	for i := range sorted {
		if i == 0 || sorted[i] != sorted[i-1] {
			n++
		}
	}
	keys := make([]uint64, 0, n)
	counts := make([]uint32, 0, n)
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j] == sorted[i] {
			j++
		}
		keys = append(keys, sorted[i])
		counts = append(counts, uint32(j-i))
		i = j
	}
	return keys, counts
}

// newTable computes the context aggregates and discounts of n-grams.
func (lm *NGramLM) newTable(keys []uint64, counts []uint32) ngramTable {
	t := ngramTable{keys: keys, counts: counts}
	nctx := 0
	for i, k := range keys {
		if i == 0 || k>>lm.bitsPer != keys[i-1]>>lm.bitsPer {
			nctx++
		}
	}
	t.ctxKeys = make([]uint64, 0, nctx)
	t.ctxTotal = make([]uint64, 0, nctx)
	t.ctxN1 = make([]uint32, 0, nctx)
	t.ctxN2 = make([]uint32, 0, nctx)
	t.ctxN3 = make([]uint32, 0, nctx)
	var coc [5]float64 // counts of counts 1..4
	for i, k := range keys {
		c := counts[i]
		if c <= 4 {
			coc[c]++
		}
		ctx := k >> lm.bitsPer
		if j := len(t.ctxKeys) - 1; j < 0 || t.ctxKeys[j] != ctx {
			t.ctxKeys = append(t.ctxKeys, ctx)
			t.ctxTotal = append(t.ctxTotal, 0)
			t.ctxN1 = append(t.ctxN1, 0)
			t.ctxN2 = append(t.ctxN2, 0)
			t.ctxN3 = append(t.ctxN3, 0)
		}
		j := len(t.ctxKeys) - 1
		t.ctxTotal[j] += uint64(c)
		switch c {
		case 1:
			t.ctxN1[j]++
		case 2:
			t.ctxN2[j]++
		default:
			t.ctxN3[j]++
		}
	}
	// Chen and Goodman's estimates; a degenerate table (no singletons,
	// say) falls back to 0.5, 1, 1.5.
	t.d = [3]float64{0.5, 1, 1.5}
	if coc[1] > 0 && coc[2] > 0 && coc[3] > 0 && coc[4] > 0 {
		y := coc[1] / (coc[1] + 2*coc[2])
		t.d = [3]float64{
			1 - 2*y*coc[2]/coc[1],
			2 - 3*y*coc[3]/coc[2],
			3 - 4*y*coc[4]/coc[3],
		}
		for i := range t.d {
			t.d[i] = min(max(t.d[i], 0.05), float64(i+1))
		}
	}
	return t
}

// radixSort sorts keys in place on their low width bits, 16 bits per
// pass, using scratch (grown as needed) as the second buffer, and returns
// scratch. It is several times faster than a comparison sort on the
// millions of keys of a corpus.
func radixSort(keys, scratch []uint64, width int) []uint64 {
	if cap(scratch) < len(keys) {
		scratch = make([]uint64, len(keys))
	}
	scratch = scratch[:len(keys)]
	src, dst := keys, scratch
	count := make([]int, 1<<16+1)
	passes := 0
	for shift := 0; shift < width; shift += 16 {
		clear(count)
		for _, k := range src {
			count[(k>>shift)&0xffff+1]++
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, k := range src {
			b := (k >> shift) & 0xffff
			dst[count[b]] = k
			count[b]++
		}
		src, dst = dst, src
		passes++
	}
	if passes%2 == 1 {
		copy(keys, src)
	}
	return scratch
}

// CacheLoss is the n-gram baseline with a cache of the window.
type CacheLoss struct {
	Lambda float64 `json:"lambda"`
	Loss   float64 `json:"loss"`
}

// ngramStats is what one order contributes to one target's probability.
type ngramStats struct {
	count      float64 // c(h w): raw or continuation
	ctxTotal   float64 // sum over w of c(h w); 0 if h was never seen
	n1, n2, n3 float64 // distinct w after h with count 1, 2, 3+
}

func (t *ngramTable) lookup(key uint64, bitsPer int) ngramStats {
	var s ngramStats
	ctx := key >> bitsPer
	j, ok := slices.BinarySearch(t.ctxKeys, ctx)
	if !ok {
		return s
	}
	s.ctxTotal = float64(t.ctxTotal[j])
	s.n1, s.n2, s.n3 = float64(t.ctxN1[j]), float64(t.ctxN2[j]), float64(t.ctxN3[j])
	if i, ok := slices.BinarySearch(t.keys, key); ok {
		s.count = float64(t.counts[i])
	}
	return s
}

// ngramTarget holds the stats of every order for one target, so that
// trying another discount costs arithmetic only.
type ngramTarget struct {
	// ctxLen is the number of tokens of context in view (at most
	// maxOrder-1).
	ctxLen int
	// raw[n-1] and cont[n-1] are the order-n stats.
	raw, cont []ngramStats
}

// Evaluate scores the slice val[1..valTokens] in windows of seqLen, as the
// harness does (a target sees only the inputs of its window), for every
// maximum order up to the counted one and a grid of discount scales, and
// returns the best of each order and overall.
func (lm *NGramLM) Evaluate(ctx context.Context, val []uint16, valTokens int64, seqLen int) (NGramResult, error) {
	var res NGramResult
	switch {
	case seqLen < 1 || valTokens < int64(seqLen) || valTokens%int64(seqLen) != 0:
		return res, fmt.Errorf("n-gram baseline: val_tokens = %d must be a positive multiple of val_seq_len = %d", valTokens, seqLen)
	case int64(len(val)) < valTokens+1:
		return res, fmt.Errorf("n-gram baseline: val_tokens = %d needs %d tokens of the val shard, it has %d", valTokens, valTokens+1, len(val))
	}
	for j := int64(1); j <= valTokens; j++ {
		if int(val[j]) >= lm.vocab {
			return res, fmt.Errorf("n-gram baseline: val token %d at position %d is not below the vocabulary size %d", val[j], j, lm.vocab)
		}
	}
	targets := make([]ngramTarget, 0, valTokens)
	T := int(seqLen)
	for start := 0; start < int(valTokens); start += T {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for j := start + 1; j <= start+T; j++ {
			targets = append(targets, lm.target(val, j, start))
		}
	}
	scales := []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.35, 1.5, 1.75, 2, 2.5}
	for order := 1; order <= lm.maxOrder; order++ {
		best := NGramOrderLoss{Order: order, Loss: math.Inf(1)}
		for _, s := range scales {
			var sum float64
			for i := range targets {
				sum -= math.Log(lm.prob(&targets[i], order, s))
			}
			if loss := sum / float64(len(targets)); loss < best.Loss {
				best.Loss, best.Scale = loss, s
			}
		}
		res.Orders = append(res.Orders, best)
		if order == 1 || best.Loss < res.Best.Loss {
			res.Best = best
		}
	}

	pNGram := make([]float64, len(targets))
	for i := range targets {
		pNGram[i] = lm.prob(&targets[i], res.Best.Order, res.Best.Scale)
	}
	res.WithCache.Loss = math.Inf(1)
	count := make([]float64, lm.vocab)
	for _, lambda := range []float64{0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5} {
		var sum float64
		i := 0
		for start := 0; start < int(valTokens); start += T {
			clear(count)
			for j := start + 1; j <= start+T; j++ {
				count[val[j-1]]++
				p := (1-lambda)*pNGram[i] + lambda*count[val[j]]/float64(j-start)
				sum -= math.Log(p)
				i++
			}
		}
		if loss := sum / float64(len(targets)); loss < res.WithCache.Loss {
			res.WithCache = CacheLoss{Lambda: lambda, Loss: loss}
		}
	}
	return res, nil
}

// target gathers what every order knows about seq[j] given the tokens
// seq[start:j] (a window's inputs, at most maxOrder-1 of them used).
func (lm *NGramLM) target(seq []uint16, j, start int) ngramTarget {
	N := lm.maxOrder
	tg := ngramTarget{ctxLen: min(j-start, N-1), raw: make([]ngramStats, N), cont: make([]ngramStats, N)}
	var key uint64
	for n := 1; n <= tg.ctxLen+1; n++ {
		key |= uint64(seq[j-n+1]) << ((n - 1) * lm.bitsPer)
		o := &lm.orders[n-1]
		tg.raw[n-1] = o.raw.lookup(key, lm.bitsPer)
		if n < N {
			tg.cont[n-1] = o.cont.lookup(key, lm.bitsPer)
		}
	}
	return tg
}

// prob is the interpolated modified Kneser-Ney probability of a target
// under a model of maximum order, with the discounts scaled by scale.
// The top order in view uses raw counts; the orders it backs off to use
// continuation counts; below order 1 is the uniform distribution.
func (lm *NGramLM) prob(tg *ngramTarget, order int, scale float64) float64 {
	top := min(order, tg.ctxLen+1)
	p := 1 / float64(lm.vocab)
	for n := 1; n <= top; n++ {
		st, d := tg.cont[n-1], lm.orders[n-1].cont.d
		if n == top {
			st, d = tg.raw[n-1], lm.orders[n-1].raw.d
		}
		if st.ctxTotal == 0 {
			continue // context never seen: keep the lower order's estimate
		}
		// A discount never exceeds the count it applies to, so the mass
		// taken from the seen tokens is exactly what gamma gives back.
		e := [3]float64{min(d[0]*scale, 1), min(d[1]*scale, 2), min(d[2]*scale, 3)}
		var disc float64
		switch c := st.count; {
		case c == 0:
		case c == 1:
			disc = e[0]
		case c == 2:
			disc = e[1]
		default:
			disc = e[2]
		}
		gamma := (e[0]*st.n1 + e[1]*st.n2 + e[2]*st.n3) / st.ctxTotal
		p = (st.count-disc)/st.ctxTotal + gamma*p
	}
	return p
}
