package verify

import (
	"strings"
)

// importStmt records an import statement and its bindings.
func (p *program) importStmt(st *stmt) {
	toks := st.toks
	line := toks[0].line
	if toks[0].text == "import" {
		for _, item := range splitDepth0(toks[1:], ",") {
			mod, _ := dottedName(item)
			if mod != "" {
				p.imports = append(p.imports, importRec{module: mod, line: line, st: st})
			}
		}
	} else {
		mod, n := dottedName(toks[1:])
		if mod == "" {
			return
		}
		p.imports = append(p.imports, importRec{module: mod, line: line, st: st})
		rest := toks[1+n:]
		if len(rest) > 0 && rest[0].kind == tName && rest[0].text == "import" {
			for _, item := range splitDepth0(stripParens(rest[1:]), ",") {
				if len(item) > 0 && item[0].kind == tName {
					p.imports = append(p.imports, importRec{module: mod + "." + item[0].text, line: line, st: st, from: true})
				}
			}
		}
	}
	for name, path := range importBindings(toks) {
		if st.scope != nil {
			st.scope.alias[name] = path
			continue
		}
		p.alias[name] = path
		delete(p.removed, name)
	}
}

// importBindings returns the names an import statement binds and the
// canonical path of each.
func importBindings(toks []token) map[string]string {
	out := map[string]string{}
	if len(toks) == 0 {
		return out
	}
	if toks[0].text == "import" {
		for _, item := range splitDepth0(toks[1:], ",") {
			mod, n := dottedName(item)
			if mod == "" {
				continue
			}
			if n+1 < len(item) && item[n].text == "as" && item[n+1].kind == tName {
				out[item[n+1].text] = mod
			} else {
				first, _, _ := strings.Cut(mod, ".")
				out[first] = first
			}
		}
		return out
	}
	mod, n := dottedName(toks[1:])
	rest := toks[1+n:]
	if mod == "" || len(rest) == 0 || rest[0].text != "import" {
		return out
	}
	for _, item := range splitDepth0(stripParens(rest[1:]), ",") {
		if len(item) == 0 || item[0].kind != tName || item[0].text == "*" {
			continue
		}
		name := item[0].text
		if len(item) >= 3 && item[1].text == "as" && item[2].kind == tName {
			out[item[2].text] = mod + "." + name
		} else {
			out[name] = mod + "." + name
		}
	}
	return out
}

// dottedName reads "a.b.c" (or relative ".a", "..") from the start of
// toks, returning it and the number of tokens read.
func dottedName(toks []token) (string, int) {
	var b strings.Builder
	n := 0
	for n < len(toks) {
		t := toks[n]
		switch {
		case t.kind == tOp && (t.text == "." || t.text == "..."):
			b.WriteString(t.text)
		case t.kind == tName && t.text != "import" && t.text != "as" && (n == 0 || toks[n-1].kind == tOp):
			b.WriteString(t.text)
		default:
			return b.String(), n
		}
		n++
	}
	return b.String(), n
}

// assignments records the targets of an assignment, augmented assignment
// or del statement, and keeps the alias table current.
func (p *program) assignments(st *stmt) {
	toks := st.toks
	if toks[0].kind == tName && toks[0].text == "del" {
		for _, item := range targetItems(toks[1:]) {
			p.addTarget(st, item, "del")
		}
		return
	}
	if toks[0].kind == tName && (toks[0].text == "def" || toks[0].text == "class") && len(toks) > 1 && st.top && st.scope == nil {
		delete(p.alias, toks[1].text)
		p.removed[toks[1].text] = true
		return
	}
	if st.top && st.scope == nil {
		// for, with ... as, except ... as and := rebind names at module level
		for _, t := range headerBindings(toks) {
			delete(p.alias, t.text)
			p.removed[t.text] = true
		}
	}
	eqs, op := assignOps(toks)
	if len(eqs) == 0 {
		return
	}
	value := toks[eqs[len(eqs)-1]+1:]
	from := 0
	for _, e := range eqs {
		seg := annotationCut(toks[from:e])
		from = e + 1
		items := targetItems(seg)
		for _, item := range items {
			p.addTarget(st, item, op)
		}
		if op != "=" || len(items) != 1 || len(items[0]) != 1 || items[0][0].kind != tName {
			if st.top && st.scope == nil {
				for _, item := range items {
					if len(item) == 1 && item[0].kind == tName {
						delete(p.alias, item[0].text)
						p.removed[item[0].text] = true
					}
				}
			}
			continue
		}
		name := items[0][0].text
		if len(value) > 0 && value[0].kind == tName && !keywords[value[0].text] {
			if c := p.parseChain(st, value, 0, false, 0); c.end == len(value) && c.known {
				// t = time; cfg = fh.config()
				if st.scope != nil && !st.scope.globals[name] {
					st.scope.alias[name] = c.path
				} else {
					p.alias[name] = c.path
					delete(p.removed, name)
				}
				continue
			}
			if st.scope != nil {
				delete(st.scope.alias, name)
			}
		}
		if st.top && st.scope == nil {
			delete(p.alias, name)
			p.removed[name] = true
		}
	}
}

// assignOps returns the indices of the "=" operators of an assignment
// statement (several for a = b = c), or of its augmented operator, and the
// operator.
func assignOps(toks []token) ([]int, string) {
	var eqs []int
	op := ""
	for i, t := range toks {
		if t.kind != tOp || t.depth != 0 {
			continue
		}
		if t.text == "=" {
			eqs = append(eqs, i)
			op = "="
		} else if augOps[t.text] && op == "" {
			return []int{i}, t.text
		}
	}
	return eqs, op
}

// annotationCut drops the annotation of a target: "x: int" is x.
func annotationCut(seg []token) []token {
	for k, t := range seg {
		if t.kind == tOp && t.text == ":" && t.depth == 0 {
			return seg[:k]
		}
	}
	return seg
}

// assignedItems returns the single targets of an assignment statement, or
// of an annotation without a value ("x: int").
func assignedItems(toks []token) [][]token {
	eqs, _ := assignOps(toks)
	if len(eqs) == 0 {
		if len(toks) > 1 && toks[0].kind == tName && toks[1].kind == tOp && toks[1].text == ":" && !compoundKeywords[toks[0].text] {
			return [][]token{toks[:1]}
		}
		return nil
	}
	var out [][]token
	from := 0
	for _, e := range eqs {
		out = append(out, targetItems(annotationCut(toks[from:e]))...)
		from = e + 1
	}
	return out
}

func (p *program) addTarget(st *stmt, item []token, op string) {
	if len(item) < 2 || item[0].kind != tName || keywords[item[0].text] {
		return // a bare name is the program's own binding
	}
	c := p.parseChain(st, item, 0, false, 0)
	if c.end != len(item) {
		return
	}
	p.targets = append(p.targets, target{chain: c, op: op, st: st})
}

// targetItems splits an assignment's target list into single targets,
// unpacking tuples and lists and dropping stars.
func targetItems(toks []token) [][]token {
	var out [][]token
	for _, item := range splitDepth0(toks, ",") {
		if len(item) > 0 && item[0].kind == tOp && item[0].text == "*" {
			item = item[1:]
		}
		if len(item) >= 2 && item[0].kind == tOp && (item[0].text == "(" || item[0].text == "[") && matchClose(item, 0) == len(item)-1 {
			inner := item[1 : len(item)-1]
			out = append(out, targetItems(inner)...)
			continue
		}
		out = append(out, item)
	}
	return out
}

// strings records the string literals of a statement, joining adjacent
// literals and literals joined with "+" ("fineweb_" "val_" is one).
func (p *program) strings(st *stmt) {
	toks := st.toks
	for i := 0; i < len(toks); i++ {
		if toks[i].kind != tString {
			continue
		}
		lit := strLit{text: toks[i].text, prefix: toks[i].prefix, line: toks[i].line, st: st}
		whole := !toks[i].fstr
		for i+1 < len(toks) {
			next := i + 1
			if toks[next].kind == tOp && toks[next].text == "+" && next+1 < len(toks) && toks[next+1].kind == tString {
				next++
			}
			if toks[next].kind != tString {
				break
			}
			if whole {
				lit.prefix += toks[next].prefix
			}
			whole = whole && !toks[next].fstr
			lit.text += toks[next].text
			i = next
		}
		p.strs = append(p.strs, lit)
	}
}

// matchClose returns the index of the bracket closing toks[open], or
