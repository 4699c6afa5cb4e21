package verify

// Python resolves a name in the function that uses it before the module:
// a parameter or a local variable named config is not the module imported
// as config. The scopes here are just enough for that: each def and class
// body knows the names it binds.

type scope struct {
	parent  *scope
	class   bool // a class body: its names are not visible in its methods
	indent  int
	locals  map[string]bool   // parameters and names assigned in the body
	alias   map[string]string // names bound to modules in the body (imports, t = time)
	globals map[string]bool   // names declared global or nonlocal
}

func newScope(parent *scope, indent int, class bool) *scope {
	return &scope{parent: parent, class: class, indent: indent, locals: map[string]bool{}, alias: map[string]string{}, globals: map[string]bool{}}
}

// lookup resolves a name in the scopes around a statement. found is false
// when the name is not bound in any of them (it is a module-level name).
func (sc *scope) lookup(name string) (path string, known, found bool) {
	for s, first := sc, true; s != nil; s, first = s.parent, false {
		if s.class && !first {
			continue
		}
		if s.globals[name] {
			return "", false, false
		}
		if p, ok := s.alias[name]; ok {
			return p, true, true
		}
		if s.locals[name] {
			return name, false, true
		}
	}
	return "", false, false
}

// assignScopes sets the scope of every statement and collects the names
// each function and class body binds.
func assignScopes(stmts []*stmt) {
	var stack []*scope
	for _, st := range stmts {
		if st.parent != nil {
			st.scope = st.root().scope
			continue
		}
		for len(stack) > 0 && st.indent <= stack[len(stack)-1].indent {
			stack = stack[:len(stack)-1]
		}
		var cur *scope
		if len(stack) > 0 {
			cur = stack[len(stack)-1]
		}
		st.scope = cur
		toks := st.toks
		if len(toks) == 0 {
			continue
		}
		if head := defKeyword(toks); head >= 0 {
			if cur != nil && head+1 < len(toks) {
				cur.locals[toks[head+1].text] = true
			}
			sc := newScope(cur, st.indent, toks[head].text == "class")
			if toks[head].text == "def" {
				for _, name := range params(toks[head:]) {
					sc.locals[name] = true
				}
			}
			stack = append(stack, sc)
			continue
		}
		if cur == nil {
			continue
		}
		bindNames(cur, toks)
	}
}

// defKeyword returns the index of "def" or "class" when a statement is a
// def or class header (async def too), else -1.
func defKeyword(toks []token) int {
	head := 0
	if len(toks) > 1 && toks[0].kind == tName && toks[0].text == "async" {
		head = 1
	}
	if len(toks) > head+1 && toks[head].kind == tName && (toks[head].text == "def" || toks[head].text == "class") {
		return head
	}
	return -1
}

// params returns the parameter names of a def header.
func params(toks []token) []string {
	var out []string
	for _, t := range paramTokens(toks) {
		out = append(out, t.text)
	}
	return out
}

// paramOffsets returns the offsets of a def header's parameter names.
func paramOffsets(toks []token) []int {
	var out []int
	for _, t := range paramTokens(toks) {
		out = append(out, t.off)
	}
	return out
}

func paramTokens(toks []token) []token {
	var out []token
	open := -1
	for i, t := range toks {
		if t.kind == tOp && t.text == "(" {
			open = i
			break
		}
	}
	if open < 0 {
		return nil
	}
	d := toks[open].depth + 1
	for i := open + 1; i < len(toks); i++ {
		t := toks[i]
		if t.depth < d {
			break
		}
		if t.kind != tName || t.depth != d {
			continue
		}
		prev := toks[i-1]
		if prev.kind == tOp && (prev.text == "(" || prev.text == "," || prev.text == "*" || prev.text == "**") {
			out = append(out, t)
		}
	}
	return out
}

// bindNames records the names a statement in a function or class body
// binds: assignment targets, loop and with targets, global declarations.
func bindNames(sc *scope, toks []token) {
	first := toks[0]
	switch {
	case first.kind == tName && (first.text == "global" || first.text == "nonlocal"):
		for _, t := range toks[1:] {
			if t.kind == tName {
				sc.globals[t.text] = true
			}
		}
		return
	case first.kind == tName && (first.text == "import" || first.text == "from"):
		for name := range importBindings(toks) {
			sc.locals[name] = true // the import binds the alias when it runs
		}
		return
	}
	for _, t := range headerBindings(toks) {
		sc.locals[t.text] = true
	}
	for _, item := range assignedItems(toks) {
		if len(item) == 1 && item[0].kind == tName {
			sc.locals[item[0].text] = true
		}
	}
}

// headerBindings returns the names a statement binds other than by
// assignment: the targets of a for loop, "with ... as NAME",
// "except ... as NAME" and "NAME := ...".
func headerBindings(toks []token) []token {
	var out []token
	if len(toks) > 0 && toks[0].kind == tName && (toks[0].text == "for" || (toks[0].text == "async" && len(toks) > 1 && toks[1].text == "for")) {
		for i := 1; i < len(toks) && !(toks[i].kind == tName && toks[i].text == "in" && toks[i].depth == 0); i++ {
			if toks[i].kind == tName && toks[i].text != "for" {
				out = append(out, toks[i])
			}
		}
		return out
	}
	if len(toks) > 0 && toks[0].kind == tName && (toks[0].text == "import" || toks[0].text == "from") {
		return nil // an import's "as" binds an alias, not a plain name
	}
	for i, t := range toks {
		if t.kind == tName && t.text == "as" && i+1 < len(toks) && toks[i+1].kind == tName {
			out = append(out, toks[i+1])
		}
		if t.kind == tOp && t.text == ":=" && i > 0 && toks[i-1].kind == tName {
			out = append(out, toks[i-1])
		}
	}
	return out
}
