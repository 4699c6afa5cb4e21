// Package pysrc is a small lexical scanner for Python source. It knows just
// enough of the language to tell code from string literals and comments, and
// to track bracket nesting, so that callers can search code with regular
// expressions without matching inside strings, and can tell whether a program
// ends in the middle of an expression.
//
// It is not a parser: it never fails, and on source that is not valid Python
// it returns its best reading.
package pysrc

// Summary describes the state the scanner was in at the end of the source.
type Summary struct {
	// Depth is the number of brackets ( [ { still open at the end. It is
	// negative when there were more closing brackets than opening ones.
	Depth int
	// OpenBracketLine is the 1-based line of the outermost bracket still
	// open at the end, or 0.
	OpenBracketLine int
	// OpenString is true when the source ends inside a string literal.
	OpenString bool
	// OpenStringLine is the 1-based line where that string began, or 0.
	OpenStringLine int
}

// Mask returns a copy of src in which the contents of string literals and
// whole comments are replaced by spaces. Quote characters, newlines and all
// other bytes are kept, so byte offsets and line numbers in the result match
// src. It also reports where the scan ended.
func Mask(src []byte) ([]byte, Summary) {
	out := make([]byte, len(src))
	copy(out, src)
	var (
		sum   Summary
		stack []int // lines of open brackets
		line  = 1
	)
	blank := func(from, to int) {
		for k := from; k < to && k < len(out); k++ {
			if out[k] != '\n' {
				out[k] = ' '
			}
		}
	}
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == '#':
			j := i
			for j < len(src) && src[j] != '\n' {
				j++
			}
			blank(i, j)
			i = j
		case c == '\'' || c == '"':
			startLine := line
			q := c
			triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
			if triple {
				i += 3
			} else {
				i++
			}
			bodyStart := i
			closed := false
			for i < len(src) {
				d := src[i]
				if d == '\\' {
					if i+1 < len(src) && src[i+1] == '\n' {
						line++
					}
					i += 2
					continue
				}
				if d == '\n' {
					if !triple {
						break // unterminated single-line string ends at the newline
					}
					line++
					i++
					continue
				}
				if d == q {
					if !triple {
						blank(bodyStart, i)
						i++
						closed = true
						break
					}
					if i+2 < len(src) && src[i+1] == q && src[i+2] == q {
						blank(bodyStart, i)
						i += 3
						closed = true
						break
					}
				}
				i++
			}
			if i > len(src) {
				i = len(src)
			}
			if !closed {
				blank(bodyStart, i)
				if triple || i >= len(src) {
					sum.OpenString = true
					sum.OpenStringLine = startLine
				}
			}
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, line)
			i++
		case c == ')' || c == ']' || c == '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			} else {
				sum.Depth--
			}
			i++
		default:
			i++
		}
	}
	if !sum.OpenString {
		sum.OpenStringLine = 0
	}
	sum.Depth += len(stack)
	if len(stack) > 0 {
		sum.OpenBracketLine = stack[0]
	}
	return out, sum
}
