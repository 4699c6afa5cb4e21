package store

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"sync"
)

// A new program is nearly always a few lines away from one the store has
// just read or written: its parent, read for the prompt, or a sibling.
// Cutting and hashing all of it again was about a fifth of the engine's
// CPU per child (BenchmarkEngine, 100 KB programs). layouts remembers how
// the last contents were cut, so that a new content takes the chunks it
// shares with them as they are, and cuts and hashes only the bytes around
// what changed.
//
// The chunks it takes are those content-defined chunking would cut
// anyway, so the chunks and the manifest are the same as without it.
// Where a chunk starts, the next cut depends only on the bytes from there
// to the cut, and on the content's end when the chunk reaches it (see
// nextCut). So when the bytes at a cut of the new content are the whole
// of a remembered chunk, that chunk is the new content's next chunk too,
// unless the remembered chunk ended where its content ended and the new
// content goes on. After an edit the cuts fall where the remembered ones
// did within a chunk or two, and the rest is taken again.
//
// Only contents committed to the database are remembered, so the chunks
// taken from them are known to be stored.

// layout is a stored content as it was cut.
type layout struct {
	b        []byte // the content; never changed
	ends     []int  // its chunks' end offsets
	manifest []byte // its chunks' hashes, hashLen bytes each
}

// chunk returns the bytes of chunk k.
func (l *layout) chunk(k int) []byte {
	start := 0
	if k > 0 {
		start = l.ends[k-1]
	}
	return l.b[start:l.ends[k]]
}

// chunkRef is a chunk of a remembered content.
type chunkRef struct {
	l *layout
	k int
}

// layouts are the contents last remembered, the newest last, and their
// chunks by their first bytes.
type layouts struct {
	mu      sync.Mutex
	recent  []*layout
	size    int
	anchors map[string]chunkRef
	// spare is the copy of a content no longer remembered, for the next
	// one: copying into fresh memory was 0.11 s of a 3,000-child
	// BenchmarkEngine run's 4.3 s of CPU (one profile).
	spare []byte
}

// layoutsKept and layoutsBytes bound what layouts holds: the programs and
// prompts of the last few children, of a few hundred KB each. anchorLen is
// how many of a chunk's first bytes find it.
const (
	layoutsKept  = 16
	layoutsBytes = 32 << 20
	anchorLen    = 32
)

func anchor(b []byte, start int) []byte { return b[start:min(len(b), start+anchorLen)] }

// remember keeps b's layout; b is copied.
func (ls *layouts) remember(b []byte, ends []int, manifest []byte) {
	if ls == nil || len(b) == 0 || len(b) > layoutsBytes/4 || len(manifest) != len(ends)*hashLen {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	buf := ls.spare
	if cap(buf) < len(b) {
		buf = make([]byte, 0, len(b)+len(b)/8)
	}
	ls.spare = nil
	l := &layout{b: append(buf[:0], b...), ends: slices.Clone(ends), manifest: slices.Clone(manifest)}
	if ls.anchors == nil {
		ls.anchors = map[string]chunkRef{}
	}
	ls.recent = append(ls.recent, l)
	ls.size += len(b)
	start := 0
	for k, e := range l.ends {
		ls.anchors[string(anchor(l.b, start))] = chunkRef{l, k}
		start = e
	}
	for len(ls.recent) > layoutsKept || ls.size > layoutsBytes {
		old := ls.recent[0]
		start := 0
		for _, e := range old.ends {
			key := string(anchor(old.b, start))
			if ls.anchors[key].l == old {
				delete(ls.anchors, key)
			}
			start = e
		}
		ls.size -= len(old.b)
		if cap(old.b) > cap(ls.spare) {
			ls.spare = old.b
		}
		ls.recent[0] = nil
		ls.recent = ls.recent[1:]
	}
}

// find returns the length and hash of the remembered chunk that is the
// chunk of b starting at start, if there is one.
func (ls *layouts) find(b []byte, start int) (n int, sum []byte, ok bool) {
	if ls == nil {
		return 0, nil, false
	}
	// Under the lock: a content no longer remembered lends its memory to
	// the next one.
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ref, ok := ls.anchors[string(anchor(b, start))]
	if !ok {
		return 0, nil, false
	}
	c := ref.l.chunk(ref.k)
	end := start + len(c)
	switch {
	case end > len(b) || !bytes.Equal(c, b[start:end]):
		return 0, nil, false
	case ref.l.ends[ref.k] == len(ref.l.b) && end != len(b):
		// Its content ended there; b goes on, and its chunk may too.
		return 0, nil, false
	}
	return len(c), ref.l.manifest[ref.k*hashLen : (ref.k+1)*hashLen], true
}

// chunks cuts b into chunks and hashes them, taking what it can from the
// remembered contents. It returns the chunks' end offsets, the manifest,
// and for each chunk whether it is known to be stored.
func (ls *layouts) chunks(b []byte) (ends []int, manifest []byte, stored []bool) {
	for start := 0; start < len(b); {
		if n, sum, ok := ls.find(b, start); ok {
			start += n
			ends = append(ends, start)
			manifest = append(manifest, sum...)
			stored = append(stored, true)
			continue
		}
		end := nextCut(b, start)
		sum := sha256.Sum256(b[start:end])
		ends = append(ends, end)
		manifest = append(manifest, sum[:]...)
		stored = append(stored, false)
		start = end
	}
	return ends, manifest, stored
}
