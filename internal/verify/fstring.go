package verify

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// fieldSpan is one replacement field of an f-string body: the expression's
// bytes body[start:end].
type fieldSpan struct{ start, end int }

// fstringParts splits an f-string body into its literal text (with "*"
// for each replacement field) and the spans of the fields' expressions.
// Nested fields in a format spec ("{x:{width}}") are fields too.
func fstringParts(body string) (lit []string, fields []fieldSpan) {
	var cur strings.Builder
	i := 0
	for i < len(body) {
		c := body[i]
		switch {
		case c == '{' && i+1 < len(body) && body[i+1] == '{':
			cur.WriteByte('{')
			i += 2
		case c == '}' && i+1 < len(body) && body[i+1] == '}':
			cur.WriteByte('}')
			i += 2
		case c == '{':
			lit = append(lit, cur.String())
			cur.Reset()
			end, fs := fstringField(body, i+1)
			fields = append(fields, fs...)
			i = end
		default:
			cur.WriteByte(c)
			i++
		}
	}
	lit = append(lit, cur.String())
	return lit, fields
}

// fstringField reads the field that starts after the "{" at body[from-1].
// It returns the index after the closing "}" and the field's expression
// span with the spans of any fields nested in its format spec.
func fstringField(body string, from int) (int, []fieldSpan) {
	depth := 0
	exprEnd := -1
	var quote byte
	var fields []fieldSpan
	i := from
	for i < len(body) {
		c := body[i]
		if quote != 0 {
			if c == '\\' {
				i += 2
				continue
			}
			if c == quote {
				quote = 0
			}
			i++
			continue
		}
		switch {
		case c == '\'' || c == '"':
			if exprEnd < 0 {
				quote = c
			}
		case c == '(' || c == '[' || c == '{':
			if exprEnd >= 0 && c == '{' {
				// a field nested in the format spec
				end, nested := fstringField(body, i+1)
				fields = append(fields, nested...)
				i = end
				continue
			}
			depth++
		case c == ')' || c == ']':
			if depth > 0 {
				depth--
			}
		case c == '}':
			if depth > 0 {
				depth--
				break
			}
			if exprEnd < 0 {
				exprEnd = i
			}
			return i + 1, append([]fieldSpan{{from, exprEnd}}, fields...)
		case depth == 0 && exprEnd < 0 && (c == ':' || (c == '!' && !(i+1 < len(body) && body[i+1] == '='))):
			exprEnd = i
		}
		i++
	}
	if exprEnd < 0 {
		exprEnd = len(body)
	}
	return len(body), append([]fieldSpan{{from, exprEnd}}, fields...)
}

// fstringText returns an f-string's value with "*" for each field, and the
// literal text before the first field.
func fstringText(body []byte, raw bool) (text, prefix string) {
	lit, _ := fstringParts(string(body))
	if !raw {
		for i := range lit {
			lit[i] = unescape(lit[i])
		}
	}
	return strings.Join(lit, "*"), lit[0]
}

// fstringFields returns the replacement fields of an f-string token as
// expression statements, children of the statement st that holds it.
func fstringFields(t token, st *stmt) []*stmt {
	_, fields := fstringParts(t.fbody)
	var out []*stmt
	for _, f := range fields {
		expr := strings.TrimRight(t.fbody[f.start:f.end], " =")
		if strings.TrimSpace(expr) == "" {
			continue
		}
		line0 := t.line - 1 + strings.Count(t.fbody[:f.start], "\n")
		// Inside a field, code is code again, nested strings and all.
		for _, s := range scanStatements([]byte(expr), line0, st) {
			s.expr = true
			out = append(out, s)
		}
	}
	return out
}

// unescape decodes the backslash escapes of a Python string literal's body,
// so that "\x2fetc" reads as "/etc". Unknown escapes stay as written.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := 2
			switch e {
			case 'u':
				n = 4
			case 'U':
				n = 8
			}
			if i+1+n <= len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil && v <= utf8.MaxRune {
					b.WriteRune(rune(v))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 32)
			b.WriteRune(rune(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}
