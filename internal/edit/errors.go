package edit

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorKind says why an answer could not be turned into a program.
type ErrorKind string

// Failure kinds. Parse reports the first four, Apply the rest (and Truncated
// or Elided for full rewrites it finds cut against the parent).
const (
	// NoEdit: the answer holds neither a SEARCH/REPLACE block nor a program.
	NoEdit ErrorKind = "no_edit"
	// Malformed: a block is broken (a marker is missing or out of order).
	Malformed ErrorKind = "malformed"
	// Truncated: the answer was cut off (at the model's output limit, inside a
	// block, inside a code fence or inside an open bracket).
	Truncated ErrorKind = "truncated"
	// Elided: a full rewrite leaves code out behind placeholders such as
	// "# ... rest unchanged".
	Elided ErrorKind = "elided"
	// NotFound: a block's SEARCH text is not in the program.
	NotFound ErrorKind = "not_found"
	// Ambiguous: a block's SEARCH text matches more than one place.
	Ambiguous ErrorKind = "ambiguous"
	// Protected: the edit would change a protected region.
	Protected ErrorKind = "protected"
	// NoChange: the edit leaves the program exactly as it was.
	NoChange ErrorKind = "no_change"
)

// KindOf returns the kind of the first *ParseError or *ApplyError in err's
// tree, or "" if there is none.
func KindOf(err error) ErrorKind {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Kind
	}
	var ae *ApplyError
	if errors.As(err, &ae) {
		return ae.Kind
	}
	return ""
}

// ParseError is returned by Parse when an answer cannot be read as an edit.
type ParseError struct {
	Kind ErrorKind
	// Block is the 1-based number of the block at fault, or 0.
	Block int
	// Line is the 1-based line of the answer where the problem is, or 0.
	Line int
	// Reason says what is wrong, in one sentence.
	Reason string
	// Hint says what to do about it.
	Hint string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	switch {
	case e.Block > 0 && e.Line > 0:
		fmt.Fprintf(&b, "SEARCH/REPLACE block %d (answer line %d): ", e.Block, e.Line)
	case e.Line > 0:
		fmt.Fprintf(&b, "answer line %d: ", e.Line)
	}
	b.WriteString(e.Reason)
	if e.Hint != "" {
		b.WriteString("\n")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Line is one numbered line of a program, for error reports.
type Line struct {
	Num  int // 1-based
	Text string
}

// ApplyError is returned by Apply when an edit does not apply. When several
// blocks fail, Apply joins one ApplyError per block with errors.Join.
type ApplyError struct {
	Kind ErrorKind
	// Block is the 1-based number of the failed block and Blocks the number
	// of blocks in the edit; both are 0 when the failure concerns the whole
	// edit (a full rewrite, or an edit that changes nothing).
	Block, Blocks int
	// AnswerLine is the line of the answer where the block began, or 0.
	AnswerLine int
	// Reason says what went wrong, in one sentence.
	Reason string
	// Matches holds the 1-based first lines of every match of an ambiguous
	// SEARCH.
	Matches []int
	// Nearest holds the program lines closest to the SEARCH text (for
	// NotFound), or the lines around the matches or the region at fault.
	Nearest []Line
	// Similarity of the nearest lines to the SEARCH text, in [0, 1], when
	// known.
	Similarity float64
	// Region names the protected region at fault.
	Region string
	// Hint says what to do about it.
	Hint string
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	switch {
	case e.Block > 0 && e.AnswerLine > 0:
		fmt.Fprintf(&b, "SEARCH/REPLACE block %d of %d (answer line %d): ", e.Block, e.Blocks, e.AnswerLine)
	case e.Block > 0:
		fmt.Fprintf(&b, "SEARCH/REPLACE block %d of %d: ", e.Block, e.Blocks)
	}
	b.WriteString(e.Reason)
	if len(e.Nearest) > 0 {
		b.WriteString("\n")
		width := len(fmt.Sprint(e.Nearest[len(e.Nearest)-1].Num))
		for k, l := range e.Nearest {
			if k > 0 && l.Num > e.Nearest[k-1].Num+1 {
				fmt.Fprintf(&b, "%*s | ...\n", width, "")
			}
			fmt.Fprintf(&b, "%*d | %s\n", width, l.Num, l.Text)
		}
	} else {
		b.WriteString("\n")
	}
	if e.Hint != "" {
		b.WriteString(e.Hint)
	}
	return strings.TrimRight(b.String(), "\n")
}

// ApplyErrors returns every *ApplyError in err's tree, in order.
func ApplyErrors(err error) []*ApplyError {
	var out []*ApplyError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ae, ok := err.(*ApplyError); ok {
			out = append(out, ae)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
