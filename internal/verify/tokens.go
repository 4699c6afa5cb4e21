package verify

import (
	"strings"
)

func matchClose(toks []token, open int) int {
	t := toks[open]
	if t.pair < 0 {
		return len(toks)
	}
	k := open + (t.pair - t.idx)
	if k <= open || k >= len(toks) {
		return len(toks)
	}
	return k
}

// splitArgs splits the tokens between a call's brackets into arguments.
func splitArgs(toks []token) []arg {
	var out []arg
	for _, item := range splitDepth0(toks, ",") {
		if len(item) == 0 {
			continue
		}
		a := arg{toks: item}
		switch {
		case item[0].kind == tOp && item[0].text == "**":
			a.star, a.toks = 2, item[1:]
		case item[0].kind == tOp && item[0].text == "*":
			a.star, a.toks = 1, item[1:]
		case len(item) >= 2 && item[0].kind == tName && item[1].kind == tOp && item[1].text == "=":
			a.kw, a.toks = item[0].text, item[2:]
		}
		out = append(out, a)
	}
	return out
}

// splitDepth0 splits toks at the separator op found at the tokens' lowest
// depth (the depth of the first token), stepping over bracketed groups so
// that nested calls cost nothing.
func splitDepth0(toks []token, sep string) [][]token {
	if len(toks) == 0 {
		return nil
	}
	var out [][]token
	start := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tOp {
			continue
		}
		switch t.text {
		case sep:
			out = append(out, toks[start:i])
			start = i + 1
		case "(", "[", "{":
			if k := matchClose(toks, i); k < len(toks) {
				i = k
			} else {
				return append(out, toks[start:])
			}
		}
	}
	return append(out, toks[start:])
}

// stripParens drops one pair of brackets around a whole token list.
func stripParens(toks []token) []token {
	if len(toks) >= 2 && toks[0].kind == tOp && toks[0].text == "(" && matchClose(toks, 0) == len(toks)-1 {
		return toks[1 : len(toks)-1]
	}
	return toks
}

// literal returns the value of tokens that are string literals only
// (joined by adjacency or "+", possibly in parentheses), and false for
// anything else, f-strings included.
func literal(toks []token) (string, bool) {
	toks = stripParens(toks)
	if len(toks) == 0 {
		return "", false
	}
	var b strings.Builder
	wantString := true
	for _, t := range toks {
		switch {
		case t.kind == tString && !t.fstr:
			b.WriteString(t.text)
			wantString = false
		case t.kind == tOp && t.text == "+" && !wantString:
			wantString = true
		default:
			return "", false
		}
	}
	if wantString {
		return "", false
	}
	return b.String(), true
}

// hasName reports whether toks mention the name.
func hasName(toks []token, name string) bool {
	for _, t := range toks {
		if t.kind == tName && t.text == name {
			return true
		}
	}
	return false
}
