package importer

import (
	"strings"
)

// line is one physical line of a Python program with what a small lexer
// knows about it.
type line struct {
	text   string // without the line ending
	indent string // leading spaces and tabs
	code   string // text without its comment, right-trimmed
	// comment is the trailing comment including '#', or "".
	comment string
	// cont is true when the line continues a statement begun above (inside
	// brackets, a triple-quoted string, or after a backslash).
	cont bool
	// open is true when the statement continues on the next line.
	open bool
}

// stmt is a logical statement: physical lines [start, end).
type stmt struct {
	start, end int
	indent     string
}

// lexer state carried from line to line.
type lexState struct {
	depth  int    // open brackets
	quote  string // the open string's delimiter (' " ''' """), "" outside strings
	escape bool   // a backslash at the end of the previous line
}

// scanLines splits src into lines and finds, for each, its comment and
// whether it belongs to a statement begun on an earlier line. It knows
// strings (single, triple, with escapes), comments, brackets and backslash
// continuations: enough to find statement boundaries in ordinary code. It
// does not know the nested same-quote f-strings of Python 3.12.
func scanLines(src string) (lines []line, nl string) {
	nl = "\n"
	if strings.Contains(src, "\r\n") {
		nl = "\r\n"
	}
	raw := strings.Split(src, "\n")
	if len(raw) > 0 && raw[len(raw)-1] == "" {
		raw = raw[:len(raw)-1]
	}
	var st lexState
	for _, r := range raw {
		r = strings.TrimSuffix(r, "\r")
		l := line{text: r, cont: st.depth > 0 || st.quote != "" || st.escape}
		l.indent = r[:len(r)-len(strings.TrimLeft(r, " \t"))]
		commentAt := -1
		st.escape = false
		for i := 0; i < len(r); i++ {
			c := r[i]
			if st.quote != "" {
				switch {
				case c == '\\':
					i++ // the next character is escaped, even a quote
				case strings.HasPrefix(r[i:], st.quote):
					i += len(st.quote) - 1
					st.quote = ""
				}
				continue
			}
			switch c {
			case '#':
				commentAt = i
			case '"', '\'':
				q := string(c)
				if strings.HasPrefix(r[i:], strings.Repeat(q, 3)) {
					q = strings.Repeat(q, 3)
				}
				st.quote = q
				i += len(q) - 1
			case '(', '[', '{':
				st.depth++
			case ')', ']', '}':
				if st.depth > 0 {
					st.depth--
				}
			case '\\':
				if i == len(r)-1 {
					st.escape = true
				}
			}
			if commentAt >= 0 {
				break
			}
		}
		// A single-quoted string cannot span lines (without a backslash).
		if st.quote == "'" || st.quote == `"` {
			if !strings.HasSuffix(r, "\\") {
				st.quote = ""
			}
		}
		if commentAt >= 0 {
			l.code = strings.TrimRight(r[:commentAt], " \t")
			l.comment = r[commentAt:]
		} else {
			l.code = strings.TrimRight(r, " \t")
		}
		l.open = st.depth > 0 || st.quote != "" || st.escape
		lines = append(lines, l)
	}
	return lines, nl
}

// statements groups lines into logical statements. Blank and comment-only
// lines that are not inside a statement are left out.
func statements(lines []line) []stmt {
	var out []stmt
	for i := 0; i < len(lines); {
		l := lines[i]
		if l.cont || strings.TrimSpace(l.code) == "" && !l.open {
			i++
			continue
		}
		s := stmt{start: i, indent: l.indent}
		j := i
		for j < len(lines)-1 && lines[j].open {
			j++
		}
		s.end = j + 1
		out = append(out, s)
		i = j + 1
	}
	return out
}

// text joins the code of a statement's lines (comments removed) with
// single spaces, for pattern matching.
func (s stmt) text(lines []line) string {
	parts := make([]string, 0, s.end-s.start)
	for _, l := range lines[s.start:s.end] {
		parts = append(parts, strings.TrimSpace(l.code))
	}
	return strings.Join(parts, " ")
}

// splitAssign parses "name [: annotation] = expr" at the top level of a
// statement. ok is false for anything else (comparisons, calls, augmented
// assignments, several targets).
func splitAssign(code string) (name, annotation, expr string, ok bool) {
	code = strings.TrimSpace(code)
	i := 0
	for i < len(code) && (code[i] == '_' || isAlnum(code[i])) {
		i++
	}
	if i == 0 || isDigit(code[0]) {
		return "", "", "", false
	}
	name = code[:i]
	rest := strings.TrimLeft(code[i:], " \t")
	if strings.HasPrefix(rest, ":") {
		// The annotation runs to the first top-level '='.
		depth := 0
		for k := 1; k < len(rest); k++ {
			switch rest[k] {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth--
			case '=':
				if depth == 0 {
					annotation = strings.TrimSpace(rest[1:k])
					rest = rest[k:]
					k = len(rest)
				}
			}
		}
		if annotation == "" {
			return "", "", "", false // a bare annotation, no value
		}
	}
	if !strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "==") {
		return "", "", "", false
	}
	return name, annotation, strings.TrimSpace(rest[1:]), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// evalInt evaluates a constant integer expression of the kind speedrun
// scripts use for sizes ("4*64*1024", "10485760", "8 * 2048"): integers
// joined by *, //, + and -, without brackets. ok is false for anything else.
func evalInt(expr string) (v int64, ok bool) {
	expr = strings.ReplaceAll(strings.TrimSpace(expr), "_", "")
	if expr == "" {
		return 0, false
	}
	// Terms of + and -, each a product of factors.
	var total int64
	sign := int64(1)
	term := ""
	flush := func() bool {
		p, ok := evalProduct(term)
		if !ok {
			return false
		}
		total += sign * p
		return true
	}
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if (c == '+' || c == '-') && strings.TrimSpace(term) != "" {
			if !flush() {
				return 0, false
			}
			term = ""
			sign = 1
			if c == '-' {
				sign = -1
			}
			continue
		}
		term += string(c)
	}
	if !flush() {
		return 0, false
	}
	return total, true
}

func evalProduct(s string) (int64, bool) {
	s = strings.ReplaceAll(s, "//", "/")
	v := int64(1)
	op := byte('*')
	num := ""
	apply := func() bool {
		num = strings.TrimSpace(num)
		if num == "" {
			return false
		}
		var n int64
		for k := 0; k < len(num); k++ {
			if !isDigit(num[k]) {
				return false
			}
			n = n*10 + int64(num[k]-'0')
			if n > 1<<40 {
				return false
			}
		}
		if op == '*' {
			v *= n
		} else {
			if n == 0 {
				return false
			}
			v /= n
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '*' || s[i] == '/' {
			if !apply() {
				return 0, false
			}
			op, num = s[i], ""
			continue
		}
		num += string(s[i])
	}
	if !apply() {
		return 0, false
	}
	return v, true
}
