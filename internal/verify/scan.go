package verify

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/frontier-bench/frontier/internal/edit/pysrc"
)

// The scanner turns Python source into tokens and logical statements. It
// uses pysrc to tell code from strings and comments, then reads the code
// bytes itself. Like pysrc it never fails: on source that is not Python it
// returns its best reading, and a rule that cannot read something does not
// find it (the docs say so).

type tokKind uint8

const (
	tName tokKind = iota + 1
	tNumber
	tString
	tOp
)

type token struct {
	kind  tokKind
	text  string // a name (NFKC-folded as Python folds it), an operator, a number, or a string's value
	line  int    // 1-based line of the token's first byte
	off   int    // byte offset of the token in its source (unique within a statement)
	col   int    // column of the token's first byte
	idx   int    // index of the token in its source's token list
	pair  int    // for brackets, idx of the matching bracket; -1 when there is none
	depth int    // bracket depth before the token
	// Strings only.
	raw    bool   // a raw string: escapes were not decoded
	fstr   bool   // an f-string: text holds "*" where each replacement field was
	prefix string // for f-strings, the literal text before the first field; else text
	fbody  string // for f-strings, the source of the body (fields and all)
}

// stmt is one logical statement: a line, the part of a line between
// semicolons, or the header or the body of a one-line compound statement.
type stmt struct {
	toks   []token
	line   int  // line of the first token
	top    bool // at module level: not indented, not the body of a compound statement
	parent *stmt
	expr   bool   // an f-string's replacement field: an expression, never an assignment or import
	atLine int    // for code passed to exec as a literal: the line of the exec call
	indent int    // column of the first token
	scope  *scope // the function or class body the statement is in; nil at module level
	key    string // the statement's code, normalized, for comparing with the reference
}

// root returns the outermost statement: for code inside an f-string or an
// exec'd literal, the statement holding it.
func (s *stmt) root() *stmt {
	for s.parent != nil {
		s = s.parent
	}
	return s
}

// compound statements whose header ends at the first colon at bracket
// depth 0 (not counting lambdas' colons).
var compoundKeywords = map[string]bool{
	"if": true, "elif": true, "else": true, "for": true, "while": true, "with": true, "try": true,
	"except": true, "finally": true, "def": true, "class": true, "async": true,
}

// threeCharOps and twoCharOps are Python's multi-character operators.
var (
	threeCharOps = []string{"**=", "//=", ">>=", "<<=", "..."}
	twoCharOps   = []string{"->", ":=", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "**", "//", "<<", ">>"}
)

// stringPrefixes are the letters that may precede a string's quote.
var stringPrefixes = map[string]bool{
	"r": true, "u": true, "b": true, "f": true, "br": true, "rb": true, "fr": true, "rf": true,
	"t": true, "tr": true, "rt": true,
}

// scanStatements tokenizes src and splits it into statements. line0 is
// added to every line (for nested code); parent is set on every statement.
func scanStatements(src []byte, line0 int, parent *stmt) []*stmt {
	toks := tokenize(src, line0)
	var out []*stmt
	start := 0
	flush := func(end int, top bool) {
		if end > start {
			st := &stmt{toks: toks[start:end:end], line: toks[start].line, top: top, parent: parent, indent: toks[start].col}
			st.key = stmtKey(st.toks)
			out = append(out, st)
		}
		start = end
	}
	lineStartTop := true
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tOp || t.depth != 0 {
			continue
		}
		switch t.text {
		case "\n":
			flush(i, lineStartTop)
			start = i + 1
			// The next statement is at module level when its first token
			// starts its line at column 0; tokenize marks that with the
			// newline's prefix.
			lineStartTop = t.prefix == "top"
		case ";":
			flush(i, lineStartTop)
			start = i + 1
		case ":":
			if i > start && toks[start].kind == tName && compoundKeywords[toks[start].text] && !lambdaColon(toks[start:i]) {
				flush(i, lineStartTop)
				start = i + 1
				lineStartTop = false // the body of a one-line compound statement
			}
		}
	}
	flush(len(toks), lineStartTop)
	// Drop the newline tokens that ended statements. The replacement
	// fields of f-strings are code: they become expression statements of
	// their own, children of the statement that holds the string.
	all := make([]*stmt, 0, len(out))
	for _, st := range out {
		if n := len(st.toks); n > 0 && st.toks[n-1].kind == tOp && st.toks[n-1].text == "\n" {
			st.toks = st.toks[:n-1]
		}
		all = append(all, st)
		for _, t := range st.toks {
			if t.kind == tString && t.fstr {
				all = append(all, fstringFields(t, st)...)
			}
		}
	}
	return all
}

// lambdaColon reports whether a header's tokens (before a colon at depth 0)
// leave a lambda waiting for that colon.
func lambdaColon(toks []token) bool {
	open := 0
	for _, t := range toks {
		if t.depth != 0 {
			continue
		}
		switch {
		case t.kind == tName && t.text == "lambda":
			open++
		case t.kind == tOp && t.text == ":" && open > 0:
			open--
		}
	}
	return open > 0
}

// stmtKey is a statement's code with comments gone and spacing
// normalized: two statements with the same key are the same code.
func stmtKey(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		if t.kind == tString {
			b.WriteString(strconv.Quote(t.text))
			continue
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// tokenize reads the tokens of src. A logical line ends with a "\n"
// operator token at depth 0, whose prefix is "top" when the next line
// starts at column 0.
func tokenize(src []byte, line0 int) []token {
	m, _ := pysrc.Mask(src)
	var (
		toks  = make([]token, 0, len(src)/5+16) // about one token per five bytes of Python
		depth int
		line  = 1 + line0
		i     int
		bol   int // offset of the current line's first byte
	)
	var open []int // indices of the brackets still open
	emit := func(t token) {
		t.line = line
		t.off = i
		t.col = i - bol
		t.depth = depth
		t.idx = len(toks)
		t.pair = -1
		toks = append(toks, t)
	}
	endLine := func(at int) {
		if depth != 0 {
			return
		}
		if n := len(toks); n == 0 || (toks[n-1].kind == tOp && toks[n-1].text == "\n") {
			// blank line: only update whether the next statement is at the top
			if n > 0 {
				toks[n-1].prefix = topAfter(m, at)
			}
			return
		}
		emit(token{kind: tOp, text: "\n", prefix: topAfter(m, at)})
	}
	for i < len(m) {
		c := m[i]
		switch {
		case c == '\n':
			endLine(i)
			line++
			i++
			bol = i
		case c == '\\' && i+1 < len(m) && (m[i+1] == '\n' || (m[i+1] == '\r' && i+2 < len(m) && m[i+2] == '\n')):
			// explicit line joining
			if m[i+1] == '\r' {
				i++
			}
			i += 2
			line++
			bol = i
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case isIdentStart(m, i):
			j := i
			for j < len(m) && isIdentByte(m[j]) {
				j++
			}
			word := string(m[i:j])
			if j < len(m) && (m[j] == '"' || m[j] == '\'') && stringPrefixes[strings.ToLower(word)] {
				t, next, lines := readString(src, m, i, j, strings.ToLower(word))
				emit(t)
				if lines > 0 {
					line += lines
					bol = bytes.LastIndexByte(m[:next], '\n') + 1
				}
				i = next
				continue
			}
			if !isASCII(word) {
				// Python folds identifiers with NFKC: a full-width "ｅｘｅｃ" is exec.
				word = norm.NFKC.String(word)
			}
			emit(token{kind: tName, text: word})
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(m) && m[i+1] >= '0' && m[i+1] <= '9'):
			j := i + 1
			for j < len(m) {
				d := m[j]
				if isIdentByte(d) || d == '.' || ((d == '+' || d == '-') && (m[j-1] == 'e' || m[j-1] == 'E') && !bytes.HasPrefix(m[i:], []byte("0x")) && !bytes.HasPrefix(m[i:], []byte("0X"))) {
					j++
					continue
				}
				break
			}
			emit(token{kind: tNumber, text: string(m[i:j])})
			i = j
		case c == '"' || c == '\'':
			t, next, lines := readString(src, m, i, i, "")
			emit(t)
			if lines > 0 {
				line += lines
				bol = bytes.LastIndexByte(m[:next], '\n') + 1
			}
			i = next
		default:
			op := ""
			for _, o := range threeCharOps {
				if bytes.HasPrefix(m[i:], []byte(o)) {
					op = o
					break
				}
			}
			if op == "" {
				for _, o := range twoCharOps {
					if bytes.HasPrefix(m[i:], []byte(o)) {
						op = o
						break
					}
				}
			}
			if op == "" {
				op = string(c)
			}
			switch op {
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			emit(token{kind: tOp, text: op})
			switch op {
			case "(", "[", "{":
				depth++
				open = append(open, len(toks)-1)
			case ")", "]", "}":
				if n := len(open); n > 0 {
					o := open[n-1]
					open = open[:n-1]
					toks[o].pair, toks[len(toks)-1].pair = len(toks)-1, o
				}
			}
			i += len(op)
		}
	}
	endLine(len(m))
	return toks
}

// topAfter says whether the line after the newline at m[at] starts with
// code at column 0 ("top"), for module-level detection.
func topAfter(m []byte, at int) string {
	j := at + 1
	if j < len(m) && m[j] != ' ' && m[j] != '\t' && m[j] != '\n' && m[j] != '\r' {
		return "top"
	}
	// a blank line keeps the question open: the next non-blank line decides
	for j < len(m) && (m[j] == ' ' || m[j] == '\t' || m[j] == '\r') {
		j++
	}
	if j < len(m) && m[j] == '\n' {
		return topAfter(m, j)
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= utf8.RuneSelf
}

func isIdentStart(m []byte, i int) bool {
	c := m[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf
}

// readString reads the string literal whose prefix starts at m[start] and
// whose opening quote is at m[q]. It returns the token, the index after the
// literal and the number of newlines inside it. The masked source m locates
// the closing quote (pysrc blanked the body); the body is read from src.
func readString(src, m []byte, start, q int, prefix string) (token, int, int) {
	quote := m[q]
	triple := q+2 < len(m) && m[q+1] == quote && m[q+2] == quote
	bodyStart := q + 1
	if triple {
		bodyStart = q + 3
	}
	end, next := len(m), len(m)
	for j := bodyStart; j < len(m); j++ {
		if triple {
			if m[j] == quote && j+2 < len(m) && m[j+1] == quote && m[j+2] == quote {
				end, next = j, j+3
				break
			}
			continue
		}
		if m[j] == '\n' && !(j > 0 && src[j-1] == '\\') {
			end, next = j, j // unterminated: the string ends with the line
			break
		}
		if m[j] == quote {
			end, next = j, j+1
			break
		}
	}
	body := src[bodyStart:end]
	lines := bytes.Count(src[start:next], []byte("\n"))
	raw := strings.Contains(prefix, "r")
	t := token{kind: tString, raw: raw}
	if strings.ContainsAny(prefix, "ft") {
		t.fstr = true
		t.text, t.prefix = fstringText(body, raw)
		// Keep the body for fstringFields; its line is the token's line.
		t.fbody = string(body)
	} else {
		if raw {
			t.text = string(body)
		} else {
			t.text = unescape(string(body))
		}
		t.prefix = t.text
	}
	return t, next, lines
}
