package data

import (
	"container/heap"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// GPT-2's vocabulary: 50,256 byte-level BPE tokens and <|endoftext|>,
// which the speedrun puts before every document.
const (
	GPT2VocabSize = 50257
	GPT2BOS       = 50256
)

// gpt2RanksFile is the name of OpenAI's r50k_base vocabulary (GPT-2's) in
// tiktoken-go-loader's embedded assets.
const gpt2RanksFile = "r50k_base.tiktoken"

// GPT2 is GPT-2's tokenizer, identical to tiktoken's r50k_base ("gpt2")
// encode_ordinary: the text "<|endoftext|>" inside a document is encoded
// as ordinary text (seven tokens), never as the special token, exactly as
// the speedrun's data/fineweb.py does. Only the separator that Prepare puts
// before each document is 50256.
//
// The pre-tokenizer is GPT-2's regular expression
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// written out by hand (a regular-expression engine with look-ahead is five
// to ten times slower), and the merges are tiktoken's: repeatedly merge the
// adjacent pair whose concatenation has the lowest rank, leftmost first.
// Text must be valid UTF-8; Prepare makes sure it is.
//
// A GPT2 is immutable and safe for concurrent use; its Encoders are not.
type GPT2 struct {
	ranks   map[string]uint32
	decoder [][]byte
	// byteToken is the token of each single byte.
	byteToken [256]uint16
	// merges maps a pair of adjacent tokens, a<<16|b, to the token whose
	// bytes are theirs concatenated, when there is one: the merge loop
	// then works on token ids, never on strings.
	merges map[uint32]uint16
	// bytePair is merges for pairs of single-byte tokens, by the two
	// bytes: every merge starts with these, and a 128 KB table stays in
	// the processor's cache.
	bytePair *[1 << 16]uint16
}

// noPair marks two bytes that do not merge; no token has this id.
const noPair = math.MaxUint16

// noRank marks a byte sequence that is not a token.
const noRank = math.MaxUint32

// NewGPT2 loads GPT-2's vocabulary from the copy of r50k_base compiled
// into the binary; it needs no network and takes about 0.1 s of CPU.
func NewGPT2() (*GPT2, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(gpt2RanksFile)
	if err != nil {
		return nil, fmt.Errorf("load GPT-2 vocabulary %s: %w", gpt2RanksFile, err)
	}
	if len(ranks) != GPT2BOS {
		return nil, fmt.Errorf("load GPT-2 vocabulary %s: %d tokens, expected %d", gpt2RanksFile, len(ranks), GPT2BOS)
	}
	t := &GPT2{ranks: make(map[string]uint32, len(ranks)), decoder: make([][]byte, GPT2VocabSize)}
	for s, r := range ranks {
		if r < 0 || r >= GPT2BOS || t.decoder[r] != nil {
			return nil, fmt.Errorf("load GPT-2 vocabulary %s: bad or repeated rank %d", gpt2RanksFile, r)
		}
		t.ranks[s] = uint32(r)
		t.decoder[r] = []byte(s)
	}
	for b := range 256 {
		r, ok := t.ranks[string([]byte{byte(b)})]
		if !ok {
			return nil, fmt.Errorf("load GPT-2 vocabulary %s: byte %#x has no token", gpt2RanksFile, b)
		}
		t.byteToken[b] = uint16(r)
	}
	// Every way of cutting a token in two tokens is a merge that makes it.
	t.merges = make(map[uint32]uint16, 2*len(ranks))
	t.bytePair = new([1 << 16]uint16)
	for i := range t.bytePair {
		t.bytePair[i] = noPair
	}
	for id, b := range t.decoder[:GPT2BOS] {
		for k := 1; k < len(b); k++ {
			left, lok := t.ranks[string(b[:k])]
			right, rok := t.ranks[string(b[k:])]
			if lok && rok {
				t.merges[left<<16|right] = uint16(id)
				if len(b) == 2 {
					t.bytePair[uint16(b[0])<<8|uint16(b[1])] = uint16(id)
				}
			}
		}
	}
	t.decoder[GPT2BOS] = []byte("<|endoftext|>")
	return t, nil
}

// Name is "gpt2".
func (t *GPT2) Name() string { return "gpt2" }

// VocabSize is 50257.
func (t *GPT2) VocabSize() int { return GPT2VocabSize }

// BOS is 50256, <|endoftext|>.
func (t *GPT2) BOS() uint16 { return GPT2BOS }

// NewEncoder returns an encoder with its own cache of merged pieces.
func (t *GPT2) NewEncoder() Encoder {
	return &gpt2Encoder{t: t, hot: new([hotEntries]hotEntry), cache: make(map[string][]uint16, 1024)}
}

// Decode returns the bytes of tokens; 50256 decodes to "<|endoftext|>" and
// ids beyond the vocabulary to nothing.
func (t *GPT2) Decode(tokens []uint16) []byte {
	var out []byte
	for _, id := range tokens {
		if int(id) < len(t.decoder) {
			out = append(out, t.decoder[id]...)
		}
	}
	return out
}

// Encode is a convenience that tokenizes one text with a fresh encoder.
func (t *GPT2) Encode(text string) []uint16 {
	return t.NewEncoder().Encode(nil, []byte(text))
}

// Cache sizes: pieces longer than maxCachedPiece are rare and merged each
// time; the cache is emptied when it reaches maxCacheEntries, which bounds
// an encoder's memory to about 20 MB on any corpus. Web text has a long
// tail of words that are not one token; a smaller cache thrashes on it.
const (
	maxCachedPiece  = 64
	maxCacheEntries = 1 << 18
	// heapMergeMin is the piece length from which merging uses a heap:
	// the simple scan is quadratic, and a long run without spaces (a
	// base64 blob, a line of dashes) would take minutes.
	heapMergeMin = 256
)

type gpt2Encoder struct {
	t *GPT2
	// hot is a small direct-mapped cache of short pieces that stays in
	// the processor's cache: the vocabulary and merge maps are a few MB,
	// and looking them up for every piece is bound by memory latency.
	hot   *[hotEntries]hotEntry
	cache map[string][]uint16
	parts []bpePart
	heap  pairHeap
}

// hotEntries is the size of an encoder's hot cache (32 bytes each, 512 KB
// in all); with Zipf-distributed words, it holds the pieces that make up
// most running text.
const (
	hotEntries = 1 << 14
	hotKeyLen  = 23
)

// hotEntry holds a piece of up to hotKeyLen bytes and its up to three
// tokens; klen 0 is an empty slot (pieces are never empty).
type hotEntry struct {
	key  [hotKeyLen]byte
	klen uint8
	n    uint8
	toks [3]uint16
	_    byte
}

// hotSlot hashes a short piece (FNV-1a) to its slot in the hot cache.
func hotSlot(p []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range p {
		h = (h ^ uint32(c)) * 16777619
	}
	return (h ^ h>>15) & (hotEntries - 1)
}

// Encode appends the tokens of text (no BOS) to dst.
func (e *gpt2Encoder) Encode(dst []uint16, text []byte) []uint16 {
	for i := 0; i < len(text); {
		j := nextPiece(text, i)
		dst = e.encodePiece(dst, text[i:j])
		i = j
	}
	return dst
}

func (e *gpt2Encoder) encodePiece(dst []uint16, piece []byte) []uint16 {
	if len(piece) > hotKeyLen {
		return e.encodeCold(dst, piece)
	}
	ent := &e.hot[hotSlot(piece)]
	if int(ent.klen) == len(piece) && string(ent.key[:ent.klen]) == string(piece) {
		return append(dst, ent.toks[:ent.n]...)
	}
	n := len(dst)
	dst = e.encodeCold(dst, piece)
	if k := len(dst) - n; k <= len(ent.toks) {
		ent.klen, ent.n = uint8(copy(ent.key[:], piece)), uint8(k)
		copy(ent.toks[:], dst[n:])
	}
	return dst
}

// encodeCold tokenizes a piece the hot cache does not hold.
func (e *gpt2Encoder) encodeCold(dst []uint16, piece []byte) []uint16 {
	if r, ok := e.t.ranks[string(piece)]; ok {
		return append(dst, uint16(r))
	}
	if len(piece) <= maxCachedPiece {
		if toks, ok := e.cache[string(piece)]; ok {
			return append(dst, toks...)
		}
	}
	n := len(dst)
	if len(piece) >= heapMergeMin {
		dst = e.mergeHeap(dst, piece)
	} else {
		dst = e.mergeScan(dst, piece)
	}
	if len(piece) <= maxCachedPiece {
		if len(e.cache) >= maxCacheEntries {
			clear(e.cache)
		}
		e.cache[string(piece)] = append([]uint16(nil), dst[n:]...)
	}
	return dst
}

// merge returns the token made of a followed by b and its rank (the
// token id itself), or noRank when their bytes together are no token.
func (e *gpt2Encoder) merge(a, b uint16) uint32 {
	if m, ok := e.t.merges[uint32(a)<<16|uint32(b)]; ok {
		return uint32(m)
	}
	return noRank
}

// bpePart is one part of a piece during merging: its token, and the rank
// of the token it makes merged with the next part.
type bpePart struct {
	tok  uint16
	rank uint32
}

// mergeScan is tiktoken's byte-pair merge for short pieces: find the pair
// of adjacent parts with the lowest rank (the leftmost on ties), merge it,
// update the ranks of its neighbours, repeat until no pair is a token. A
// token's rank is its id, so the pair table gives both at once.
func (e *gpt2Encoder) mergeScan(dst []uint16, piece []byte) []uint16 {
	parts := e.parts[:0]
	for i, c := range piece {
		rank := uint32(noRank)
		if i+1 < len(piece) {
			if m := e.t.bytePair[uint16(c)<<8|uint16(piece[i+1])]; m != noPair {
				rank = uint32(m)
			}
		}
		parts = append(parts, bpePart{tok: e.t.byteToken[c], rank: rank})
	}
	for len(parts) > 1 {
		best, at := uint32(noRank), -1
		for i := 0; i+1 < len(parts); i++ {
			if parts[i].rank < best {
				best, at = parts[i].rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].tok = uint16(best)
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].rank = noRank
		if at+1 < len(parts) {
			parts[at].rank = e.merge(parts[at].tok, parts[at+1].tok)
		}
		if at > 0 {
			parts[at-1].rank = e.merge(parts[at-1].tok, parts[at].tok)
		}
	}
	for _, p := range parts {
		dst = append(dst, p.tok)
	}
	e.parts = parts
	return dst
}

// mergeHeap gives the same result as mergeScan in O(n log n): the parts
// are a linked list, and a heap ordered by (rank, position) yields the
// lowest-ranked, leftmost pair. Entries made stale by a merge are skipped.
func (e *gpt2Encoder) mergeHeap(dst []uint16, piece []byte) []uint16 {
	n := len(piece)
	tok := make([]uint16, n) // token of the part that starts at i
	next := make([]int, n)   // start of the part after the one at i
	prev := make([]int, n)
	ver := make([]uint32, n) // bumped whenever the pair at i changes
	alive := make([]bool, n)
	for i, c := range piece {
		tok[i], next[i], prev[i], alive[i] = e.t.byteToken[c], i+1, i-1, true
	}
	h := e.heap[:0]
	pairAt := func(i int) (uint32, bool) {
		if i < 0 || next[i] >= n {
			return noRank, false
		}
		r := e.merge(tok[i], tok[next[i]])
		return r, r != noRank
	}
	for i := 0; i+1 < n; i++ {
		if r, ok := pairAt(i); ok {
			h = append(h, pairEntry{rank: r, start: i})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		top := heap.Pop(&h).(pairEntry)
		i := top.start
		if !alive[i] || top.ver != ver[i] || next[i] >= n {
			continue
		}
		// Merge the part at i with the next one.
		j := next[i]
		alive[j] = false
		tok[i] = uint16(top.rank)
		next[i] = next[j]
		if next[j] < n {
			prev[next[j]] = i
		}
		ver[i]++
		if r, ok := pairAt(i); ok {
			heap.Push(&h, pairEntry{rank: r, start: i, ver: ver[i]})
		}
		if p := prev[i]; p >= 0 {
			ver[p]++
			if r, ok := pairAt(p); ok {
				heap.Push(&h, pairEntry{rank: r, start: p, ver: ver[p]})
			}
		}
	}
	e.heap = h[:0]
	for i := 0; i < n; i = next[i] {
		dst = append(dst, tok[i])
	}
	return dst
}

type pairEntry struct {
	rank  uint32
	start int
	ver   uint32
}

type pairHeap []pairEntry

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].start < h[b].start
}
func (h pairHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairEntry)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Character classes of the pre-tokenizer.
const (
	clsOther  = iota // [^\s\p{L}\p{N}]
	clsSpace         // \s: Unicode White_Space
	clsLetter        // \p{L}
	clsNumber        // \p{N}
)

// asciiClass holds the class of every ASCII byte.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		t[c] = runeClass(rune(c))
	}
	return t
}()

func runeClass(r rune) uint8 {
	switch {
	case unicode.IsSpace(r):
		return clsSpace
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	}
	return clsOther
}

// classAt returns the class and byte length of the rune at b[i].
func classAt(b []byte, i int) (uint8, int) {
	if c := b[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRune(b[i:])
	return runeClass(r), size
}

// scanRun returns the end of the run of class cls that continues at i.
func scanRun(b []byte, i int, cls uint8) int {
	for i < len(b) {
		c, size := classAt(b, i)
		if c != cls {
			break
		}
		i += size
	}
	return i
}

// nextPiece returns the end of the pre-token that starts at b[i]: the
// match GPT-2's regular expression finds there, trying its alternatives in
// order.
func nextPiece(b []byte, i int) int {
	n := len(b)
	c := b[i]
	// 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
	if c == '\'' && i+1 < n {
		switch b[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < n && b[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < n && b[i+2] == 'l' {
				return i + 3
			}
		}
	}
	// ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+' with the space
	if c == ' ' && i+1 < n {
		if cls, size := classAt(b, i+1); cls != clsSpace {
			return scanRun(b, i+1+size, cls)
		}
	}
	cls, size := classAt(b, i)
	if cls != clsSpace {
		return scanRun(b, i+size, cls)
	}
	// '\s+(?!\S)|\s+': a run of white space up to the end of the text is
	// one piece; otherwise its last character is left to start the next
	// piece (as " word" when it is a space), unless it is the only one.
	last, j := i, i+size
	for j < n {
		cls, size := classAt(b, j)
		if cls != clsSpace {
			break
		}
		last, j = j, j+size
	}
	if j == n || last == i {
		return j
	}
	return last
}

// safeSplit reports whether a text may be cut before b[i] without
// changing its tokens: the character before is not white space and b[i]
// is, so every pre-token ends at i whatever follows, and the pieces after
// i do not depend on what came before.
func safeSplit(b []byte, i int) bool {
	if i <= 0 || i >= len(b) || b[i] >= utf8.RuneSelf || asciiClass[b[i]] != clsSpace {
		return false
	}
	r, _ := utf8.DecodeLastRune(b[:i])
	return !unicode.IsSpace(r)
}
