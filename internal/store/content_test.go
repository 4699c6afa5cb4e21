package store

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// cutEveryByte is cut as first written: the hash rolled over every byte.
// Where contents are cut must never change (a new cut would share no
// chunk with what databases hold).
func cutEveryByte(b []byte) []int {
	const mask = (1<<chunkBits - 1) << (64 - chunkBits)
	var ends []int
	var h uint64
	start := 0
	for i, c := range b {
		h = h<<1 + gear[c]
		n := i + 1 - start
		if n >= chunkMax || (n >= chunkMin && h&mask == 0) {
			ends = append(ends, i+1)
			start = i + 1
		}
	}
	if start < len(b) {
		ends = append(ends, len(b))
	}
	return ends
}

func TestCutAsRollingOverEveryByte(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := []byte("for step in range(steps):\n    loss = model(x).mean()\n    loss.backward()\n")
	for n := range 400 {
		size := r.IntN(200 << 10)
		if n < 70 {
			size = n * 10 // around and below chunkMin
		}
		b := make([]byte, size)
		switch n % 3 {
		case 0:
			for i := range b {
				b[i] = byte(r.Uint32())
			}
		case 1: // text that repeats: cuts by the hash
			for i := range b {
				b[i] = text[(i+r.IntN(2))%len(text)]
			}
		case 2: // one byte: no cut by the hash, chunkMax each
			for i := range b {
				b[i] = 'x'
			}
		}
		if got, want := cut(b), cutEveryByte(b); !slices.Equal(got, want) {
			t.Fatalf("%d bytes (kind %d): cut at %v, want %v", size, n%3, got, want)
		}
	}
}

// A set of known chunks that would grow past its bound starts again
// empty, with what was being added.
func TestChunkSetBounded(t *testing.T) {
	var c chunkSet
	var nilSet *chunkSet
	nilSet.add("x")
	if nilSet.has("x") {
		t.Fatal("a nil set knows a chunk")
	}
	for i := range chunkSetMax {
		c.add(strconv.Itoa(i))
	}
	if !c.has("0") || len(c.m) != chunkSetMax {
		t.Fatalf("a full set holds %d chunks", len(c.m))
	}
	c.add("new", "newer")
	if c.has("0") || !c.has("new") || !c.has("newer") || len(c.m) != 2 {
		t.Errorf("past its bound the set holds %d chunks, want only the 2 added", len(c.m))
	}
}
