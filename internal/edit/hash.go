package edit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
func NormalizedHash(src []byte) string {
	return Hash(Normalize(src))
}

// Normalize returns src with the layout noise NormalizedHash ignores
// removed.
func Normalize(src []byte) []byte {
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	src = bytes.ReplaceAll(src, []byte("\r"), []byte("\n"))
	var out bytes.Buffer
	out.Grow(len(src))
	blank := false
	started := false
	for _, l := range bytes.Split(src, []byte("\n")) {
		l = bytes.TrimRight(l, " \t\f\v")
		if len(l) == 0 {
			blank = started
			continue
		}
		if blank {
			out.WriteByte('\n')
			blank = false
		}
		out.Write(l)
		out.WriteByte('\n')
		started = true
	}
	return out.Bytes()
}
