package store

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// fullChunks is what chunks must give: every chunk cut and hashed.
func fullChunks(b []byte) ([]int, []byte) {
	ends := cut(b)
	var manifest []byte
	start := 0
	for _, e := range ends {
		sum := sha256.Sum256(b[start:e])
		manifest = append(manifest, sum[:]...)
		start = e
	}
	return ends, manifest
}

// program is text like a training program, n bytes long.
func program(rng *rand.Rand, n int) []byte {
	words := []string{"def", "return", "self", "torch", "x", "=", "+", "lr", "(", ")", ":", "\n", "    ", "model", "loss", "0.1", "for", "in", "range"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.Bytes()[:n]
}

// edit changes b the ways a proposal does: lines replaced, inserted or
// removed anywhere, text appended or cut at either end, nothing at all.
func edit(rng *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	for range 1 + rng.IntN(3) {
		at := rng.IntN(len(b) + 1)
		switch rng.IntN(6) {
		case 0: // insert
			b = slices.Insert(b, at, program(rng, 1+rng.IntN(300))...)
		case 1: // delete
			end := min(len(b), at+1+rng.IntN(3000))
			b = slices.Delete(b, at, end)
		case 2: // replace
			end := min(len(b), at+rng.IntN(200))
			b = slices.Replace(b, at, end, program(rng, rng.IntN(200))...)
		case 3: // append
			b = append(b, program(rng, 1+rng.IntN(100))...)
		case 4: // cut the start
			b = b[min(len(b), rng.IntN(5000)):]
		case 5: // the same
		}
	}
	return b
}

// chunks takes chunks from remembered contents and gives the same cuts and
// hashes as cutting and hashing everything, whatever the edits; the chunks
// it takes are the remembered content's.
func TestLayoutsSameAsFullCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ls layouts
	var taken, all int
	pool := [][]byte{program(rng, 100<<10)}
	for i := range 400 {
		parent := pool[rng.IntN(len(pool))]
		child := edit(rng, parent)
		if len(child) == 0 {
			continue
		}
		if i%50 == 0 { // now and then an unrelated content
			child = program(rng, 1+rng.IntN(60<<10))
		}
		ends, manifest, stored := ls.chunks(child)
		wantEnds, wantManifest := fullChunks(child)
		if !slices.Equal(ends, wantEnds) || !bytes.Equal(manifest, wantManifest) {
			t.Fatalf("content %d (%d bytes): %d chunks, want %d; ends %v, want %v", i, len(child), len(ends), len(wantEnds), ends, wantEnds)
		}
		for k, ok := range stored {
			if !ok {
				continue
			}
			taken++
			if !ls.has(manifest[k*hashLen : (k+1)*hashLen]) {
				t.Fatalf("content %d: chunk %d is taken as stored, but no remembered content has it", i, k)
			}
		}
		all += len(ends)
		ls.remember(child, ends, manifest)
		pool = append(pool, child)
		if len(pool) > 20 {
			pool = pool[1:]
		}
	}
	t.Logf("%d of %d chunks taken from remembered contents", taken, all)
	if taken < all/2 {
		t.Errorf("only %d of %d chunks taken: the layouts are not used", taken, all)
	}
}

// has says whether a remembered content has the chunk with hash k.
func (ls *layouts) has(k []byte) bool {
	for _, l := range ls.recent {
		for i := 0; i < len(l.manifest); i += hashLen {
			if bytes.Equal(l.manifest[i:i+hashLen], k) {
				return true
			}
		}
	}
	return false
}

// Edge cases: no base, a base equal to the content, contents shorter than
// a chunk, one content the end of another.
func TestLayoutsEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	big := program(rng, 50<<10)
	for _, c := range []struct {
		name       string
		base, next []byte
	}{
		{"same", big, big},
		{"tiny", []byte("x"), []byte("y")},
		{"short base", big[:100], big},
		{"tail", big, big[20000:]},
		{"head", big, big[:20000]},
		{"doubled", big, append(bytes.Clone(big), big...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ls layouts
			e, m, _ := ls.chunks(c.base)
			ls.remember(c.base, e, m)
			ends, manifest, _ := ls.chunks(c.next)
			wantEnds, wantManifest := fullChunks(c.next)
			if !slices.Equal(ends, wantEnds) || !bytes.Equal(manifest, wantManifest) {
				t.Errorf("ends %v, want %v", ends, wantEnds)
			}
		})
	}
}

// The cache stays within its bounds.
func TestLayoutsBounded(t *testing.T) {
	var ls layouts
	for i := range 3 * layoutsKept {
		b := []byte(fmt.Sprintf("content %d", i))
		e, m := fullChunks(b)
		ls.remember(b, e, m)
	}
	if len(ls.recent) != layoutsKept {
		t.Errorf("%d layouts kept, want %d", len(ls.recent), layoutsKept)
	}
	big := make([]byte, layoutsBytes/4)
	e, m := fullChunks(big)
	for range 5 {
		ls.remember(big, e, m)
	}
	if ls.size > layoutsBytes {
		t.Errorf("%d bytes kept, over %d", ls.size, layoutsBytes)
	}
}
