package runner

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"unicode/utf8"
)

// capped keeps the first len(head) and the last len(ring) bytes written to
// it and counts the rest, so a program printing gigabytes costs a fixed
// amount of memory. It never fails and never blocks: the reader that feeds
// it must keep draining the child's pipe whatever the child prints.
//
// capped is not safe for concurrent use; each stream has its own, fed by
// one goroutine.
type capped struct {
	head  []byte // len grows up to cap
	ring  []byte // fixed size; the tail
	pos   int    // next write position in ring
	full  bool   // ring has wrapped at least once
	total int64
}

func newCapped(headBytes, tailBytes int) *capped {
	return &capped{
		head: make([]byte, 0, headBytes),
		ring: make([]byte, tailBytes),
	}
}

// Write implements io.Writer.
func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := cap(c.head) - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || len(c.ring) == 0 {
		return n, nil
	}
	if len(p) >= len(c.ring) {
		copy(c.ring, p[len(p)-len(c.ring):])
		c.pos, c.full = 0, true
		return n, nil
	}
	k := copy(c.ring[c.pos:], p)
	if k < len(p) {
		copy(c.ring, p[k:])
		c.full = true
	}
	c.pos = (c.pos + len(p)) % len(c.ring)
	if c.pos == 0 {
		c.full = true
	}
	return n, nil
}

// output returns the capture as an Output. When bytes were dropped, the cut
// points are moved to UTF-8 rune boundaries (the bytes skipped are counted
// as dropped) so that Head and Tail are valid text when the program wrote
// valid text; len(Head)+Dropped+len(Tail) == Total always holds.
func (c *capped) output() Output {
	var tail []byte
	if c.full {
		tail = make([]byte, 0, len(c.ring))
		tail = append(tail, c.ring[c.pos:]...)
		tail = append(tail, c.ring[:c.pos]...)
	} else {
		tail = c.ring[:c.pos]
	}
	head := c.head
	dropped := c.total - int64(len(head)) - int64(len(tail))
	if dropped > 0 {
		h := trimPartialRuneEnd(head)
		t := trimPartialRuneStart(tail)
		dropped += int64(len(head)-len(h)) + int64(len(tail)-len(t))
		head, tail = h, t
	}
	return Output{Head: string(head), Tail: string(tail), Dropped: dropped, Total: c.total}
}

// trimPartialRuneEnd drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRuneEnd(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// trimPartialRuneStart drops UTF-8 continuation bytes at the start of b.
func trimPartialRuneStart(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// lineSplitter cuts a byte stream into lines for Job.OnLine. A line ends at
// '\n' or at '\r' (progress bars redraw with '\r'); "\r\n" counts once. A
// line longer than max is cut to max bytes and marked, and the rest of it
// is skipped, so one endless line costs max bytes.
type lineSplitter struct {
	max      int
	buf      []byte
	over     int64 // bytes of the current line beyond max
	afterCR  bool
	emitLine func(string)
}

func (s *lineSplitter) Write(p []byte) (int, error) {
	// Terminators are found with IndexByte (vectorized) and each search
	// result is reused until passed, so a chunk is scanned about twice
	// whatever its line count.
	nextNL, nextCR := indexFrom(p, 0, '\n'), indexFrom(p, 0, '\r')
	for pos := 0; pos < len(p); {
		if s.afterCR {
			s.afterCR = false
			if p[pos] == '\n' {
				pos++
				continue
			}
		}
		if nextNL >= 0 && nextNL < pos {
			nextNL = indexFrom(p, pos, '\n')
		}
		if nextCR >= 0 && nextCR < pos {
			nextCR = indexFrom(p, pos, '\r')
		}
		end := nextNL
		if end < 0 || (nextCR >= 0 && nextCR < end) {
			end = nextCR
		}
		if end < 0 {
			s.add(p[pos:])
			break
		}
		s.add(p[pos:end])
		s.flush()
		s.afterCR = p[end] == '\r'
		pos = end + 1
	}
	return len(p), nil
}

// add appends to the pending line what fits under max and counts the rest.
func (s *lineSplitter) add(b []byte) {
	k := min(len(b), s.max-len(s.buf))
	s.buf = append(s.buf, b[:k]...)
	s.over += int64(len(b) - k)
}

func indexFrom(p []byte, from int, c byte) int {
	if i := bytes.IndexByte(p[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// flush emits the pending line, even an empty one.
func (s *lineSplitter) flush() {
	line := string(s.buf)
	if s.over > 0 {
		kept := trimPartialRuneEnd(s.buf)
		cut := s.over + int64(len(s.buf)-len(kept))
		line = string(kept) + " [... " + strconv.FormatInt(cut, 10) + " more bytes in this line]"
	}
	s.buf, s.over = s.buf[:0], 0
	s.emitLine(line)
}

// close emits a final line that had no terminator.
func (s *lineSplitter) close() {
	if len(s.buf) > 0 || s.over > 0 {
		s.flush()
	}
}

// lineDispatcher delivers lines to Job.OnLine from its own goroutine, so
// that a slow callback never stalls the readers and thus the child. Lines
// arriving while the queue is full are counted and skipped.
type lineDispatcher struct {
	fn      func(stream, line string)
	ch      chan lineMsg
	skipped atomic.Int64
	done    chan struct{}
}

type lineMsg struct{ stream, line string }

// lineQueue is how many lines may wait for a slow OnLine.
const lineQueue = 1024

// newLineDispatcher returns nil when fn is nil; the nil dispatcher's
// methods do nothing.
func newLineDispatcher(fn func(stream, line string)) *lineDispatcher {
	if fn == nil {
		return nil
	}
	d := &lineDispatcher{fn: fn, ch: make(chan lineMsg, lineQueue), done: make(chan struct{})}
	go d.loop()
	return d
}

func (d *lineDispatcher) loop() {
	defer close(d.done)
	for m := range d.ch {
		d.reportSkipped(m.stream)
		d.fn(m.stream, m.line)
	}
	d.reportSkipped(StreamStderr)
}

func (d *lineDispatcher) reportSkipped(stream string) {
	if n := d.skipped.Swap(0); n > 0 {
		d.fn(stream, "[... "+plural(n, "line")+" skipped: the line callback was too slow ...]")
	}
}

func (d *lineDispatcher) splitter(stream string, max int) *lineSplitter {
	if d == nil {
		return nil
	}
	return &lineSplitter{max: max, emitLine: func(line string) {
		select {
		case d.ch <- lineMsg{stream, line}:
		default:
			d.skipped.Add(1)
		}
	}}
}

// close waits until every queued line has been delivered. It must be
// called after the last splitter write.
func (d *lineDispatcher) close() {
	if d == nil {
		return
	}
	close(d.ch)
	<-d.done
}
