package runner

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCappedMatchesReference feeds random chunk sizes and checks head,
// tail and counts against slicing the whole stream.
func TestCappedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, caps := range [][2]int{{0, 0}, {0, 7}, {7, 0}, {5, 5}, {16, 3}, {64, 64}} {
		for trial := range 50 {
			c := newCapped(caps[0], caps[1])
			var all []byte
			for range rng.IntN(20) {
				p := make([]byte, rng.IntN(40))
				for i := range p {
					p[i] = byte('a' + rng.IntN(26)) // ASCII: no rune trimming
				}
				all = append(all, p...)
				if n, err := c.Write(p); n != len(p) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got := c.output()
			h := min(caps[0], len(all))
			wantHead := string(all[:h])
			wantTail := string(all[max(h, len(all)-caps[1]):])
			if got.Head != wantHead || got.Tail != wantTail || got.Total != int64(len(all)) ||
				got.Dropped != int64(len(all)-len(wantHead)-len(wantTail)) {
				t.Fatalf("caps %v trial %d: got %+v, want head %q tail %q total %d", caps, trial, got, wantHead, wantTail, len(all))
			}
			if got.Dropped == 0 && got.String() != string(all) {
				t.Fatalf("String() = %q, want %q", got.String(), all)
			}
		}
	}
}

func TestCappedRuneBoundaries(t *testing.T) {
	c := newCapped(5, 5)
	s := strings.Repeat("é", 20) // 2 bytes each: cuts at 5 fall inside runes
	c.Write([]byte(s))
	o := c.output()
	if !utf8.ValidString(o.Head) || !utf8.ValidString(o.Tail) {
		t.Fatalf("invalid UTF-8: head %q tail %q", o.Head, o.Tail)
	}
	if o.Head != "éé" || o.Tail != "éé" {
		t.Errorf("head %q tail %q, want éé and éé", o.Head, o.Tail)
	}
	if int64(len(o.Head))+o.Dropped+int64(len(o.Tail)) != o.Total || o.Total != int64(len(s)) {
		t.Errorf("counts do not add up: %+v", o)
	}
	if want := "éé\n[... 32 bytes dropped ...]\néé"; o.String() != want {
		t.Errorf("String() = %q, want %q", o.String(), want)
	}
}

func TestLineSplitter(t *testing.T) {
	var got []string
	s := &lineSplitter{max: 8, emitLine: func(l string) { got = append(got, l) }}
	for _, chunk := range []string{"one\ntw", "o\r\n", "\nprogress 1\rprog", "ress 2\r", "long line that goes on\n", "crlf\r", "\nsplit", "\r", "\n", "tail"} {
		s.Write([]byte(chunk))
	}
	s.close()
	want := []string{"one", "two", "", "progress", "progress", "long lin [... 14 more bytes in this line]", "crlf", "split", "tail"}
	want[3] = "progress [... 2 more bytes in this line]"
	want[4] = "progress [... 2 more bytes in this line]"
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines:\n got %q\nwant %q", got, want)
	}
}

func TestLineDispatcherSkipsWhenSlow(t *testing.T) {
	release := make(chan struct{})
	var got []string
	d := newLineDispatcher(func(stream, line string) {
		<-release
		got = append(got, line)
	})
	sp := d.splitter(StreamStdout, 100)
	n := lineQueue + 50
	for i := range n {
		sp.Write([]byte("x" + strings.Repeat("y", i%3) + "\n")) // must never block
	}
	close(release)
	d.close()
	var skipped bool
	for _, l := range got {
		if strings.Contains(l, "skipped: the line callback was too slow") {
			skipped = true
		}
	}
	if !skipped || len(got) >= n+1 || len(got) < lineQueue {
		t.Errorf("got %d lines (skipped notice %v) for %d written with a queue of %d", len(got), skipped, n, lineQueue)
	}
}

// BenchmarkCappedWrite measures the capture's throughput on 64 KiB reads,
// the size drain uses, once the head is full (the steady state of a
// program that prints a lot).
func BenchmarkCappedWrite(b *testing.B) {
	p := bytes.Repeat([]byte("step 100 loss 3.2841 time 12ms\n"), 64<<10/32)
	c := newCapped(64<<10, 64<<10)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		c.Write(p)
	}
}

// BenchmarkCappedWriteSmall is the other extreme: line-sized writes.
func BenchmarkCappedWriteSmall(b *testing.B) {
	p := []byte("step 100 loss 3.2841 time 12ms\n")
	c := newCapped(64<<10, 64<<10)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		c.Write(p)
	}
}

// BenchmarkLineSplitter measures the per-byte cost added when a live line
// callback is set.
func BenchmarkLineSplitter(b *testing.B) {
	p := bytes.Repeat([]byte("step 100 loss 3.2841 time 12ms\n"), 64<<10/32)
	s := &lineSplitter{max: 4096, emitLine: func(string) {}}
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		s.Write(p)
	}
}
