package edit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// Hash returns the SHA-256 of src in hex.
func Hash(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// NormalizedHash returns the SHA-256, in hex, of src with layout noise
// removed, so that programs differing only in it deduplicate: CRLF and CR
// become LF, trailing white space is stripped from every line, runs of
// blank lines become one blank line, and blank lines at the start and end
// are dropped. Comments and indentation are kept: they can matter.
//
// It hashes the normalized text as it is found, without a copy of it: the
// engine hashes every child, and a program of 100 KB is mostly runs of
// lines that normalizing keeps as they are.
func NormalizedHash(src []byte) string {
	h := spanHasher{h: sha256.New()}
	normalize(src, &h)
	h.flush()
	return hex.EncodeToString(h.h.Sum(nil))
}

// Normalize returns src with the layout noise NormalizedHash ignores
// removed.
func Normalize(src []byte) []byte {
	b := spanBuffer{out: make([]byte, 0, len(src)+1)}
	normalize(src, &b)
	return b.out
}

// spanSink receives the normalized text: span(text, a, b) is the bytes
// text[a:b], newline a line feed of its own. The spans of one normalize
// are of one text.
type spanSink interface {
	span(text []byte, a, b int)
	newline()
}

// normalize gives sink the text NormalizedHash hashes, in order.
func normalize(src []byte, sink spanSink) {
	if bytes.IndexByte(src, '\r') >= 0 {
		src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
		src = bytes.ReplaceAll(src, []byte("\r"), []byte("\n"))
	}
	blank := false
	started := false
	for i := 0; i <= len(src); {
		end := bytes.IndexByte(src[i:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += i
		}
		k := end
		for k > i && isTrailingSpace(src[k-1]) {
			k--
		}
		if k == i {
			blank = started
			i = end + 1
			continue
		}
		if blank {
			// The line feed of the blank line before this one, as it is
			// in src when that line is the only one.
			if src[i-1] == '\n' {
				sink.span(src, i-1, i)
			} else {
				sink.newline()
			}
			blank = false
		}
		if k == end && end < len(src) {
			sink.span(src, i, end+1) // the line and its own line feed
		} else {
			sink.span(src, i, k)
			sink.newline()
		}
		started = true
		i = end + 1
	}
}

// isTrailingSpace says whether c is white space normalizing strips from
// the end of a line.
func isTrailingSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\f' || c == '\v'
}

// spanHasher hashes spans, those that follow each other in their text
// with one write.
type spanHasher struct {
	h          hash.Hash
	text       []byte
	start, end int
}

func (s *spanHasher) span(text []byte, a, b int) {
	if s.text != nil && a == s.end {
		s.end = b
		return
	}
	s.flush()
	s.text, s.start, s.end = text, a, b
}

func (s *spanHasher) newline() {
	s.flush()
	s.h.Write([]byte{'\n'})
}

func (s *spanHasher) flush() {
	if s.text != nil {
		s.h.Write(s.text[s.start:s.end])
		s.text = nil
	}
}

// spanBuffer collects spans in a buffer.
type spanBuffer struct{ out []byte }

func (s *spanBuffer) span(text []byte, a, b int) { s.out = append(s.out, text[a:b]...) }
func (s *spanBuffer) newline()                   { s.out = append(s.out, '\n') }
