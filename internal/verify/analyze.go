package verify

import (
	"bytes"
	"regexp"
	"strings"
)

// The analysis reads each statement once, in order, and records what the
// rules ask about: imports, references to names through the program's
// aliases ("import time as t" makes t.perf_counter time.perf_counter),
// calls with their arguments, assignment targets, and string literals.
// It is lexical: no types, no data flow beyond simple aliases.

// chain is a reference such as torch._inductor.config.max_autotune, with
// its root resolved through imports and aliases. Path marks calls with
// "()" and subscripts with "[]": Path("/x").write_text is
// "pathlib.Path().write_text".
type chain struct {
	path  string
	known bool // the root is an imported module, an alias of one, or a builtin
	start int  // token indices [start, end) in the statement
	end   int
	line  int
}

// segments returns the dotted parts of the path.
func (c chain) segments() []string { return strings.Split(c.path, ".") }

type arg struct {
	kw   string // keyword name, "" for a positional argument
	star int    // 1 for *args, 2 for **kwargs
	toks []token
}

type call struct {
	callee chain // the called path, without the call's "()"
	args   []arg
	// recv are the arguments of the calls before this one in the same
	// chain: "/x" and "y" for Path("/x").joinpath("y").write_text(...).
	recv []arg
	st   *stmt
}

// arg returns the i-th positional argument, or the keyword argument kw,
// or nil.
func (c *call) arg(i int, kw string) *arg {
	n := 0
	for k := range c.args {
		a := &c.args[k]
		if a.kw == "" && a.star == 0 {
			if n == i {
				return a
			}
			n++
		}
		if kw != "" && a.kw == kw {
			return a
		}
	}
	return nil
}

type target struct {
	chain
	op string // "=", "+=" and the like, "del", "setattr", "delattr"
	st *stmt
}

type ref struct {
	chain
	st     *stmt
	called bool // the reference is called right away
}

type importRec struct {
	module string // the full dotted name: "os.path", "os.system" for from os import system
	line   int
	st     *stmt
	from   bool // from M import name: module is M.name
}

type strLit struct {
	text   string // the value; adjacent and "+"-joined literals are joined
	prefix string // the literal text before the first f-string field
	line   int
	st     *stmt
}

type program struct {
	src     []byte
	lineOff []int // byte offset of each line's start
	stmts   []*stmt
	imports []importRec
	refs    []ref
	calls   []call
	targets []target
	strs    []strLit
	coding  string          // a declared source encoding, "" when none
	callsOf map[*stmt][]int // indices into calls by statement, built when a rule needs it
	// state while reading
	alias   map[string]string // name -> canonical path, as of the current statement
	ever    map[string]string // every import binding in the program, for uses before the import
	removed map[string]bool   // names rebound at module level to something else
	defs    map[string]bool   // names the program defines with def or class
}

// builtinNames are the builtins the rules care about: a bare name resolves
// to builtins.NAME unless the program defines it.
var builtinNames = map[string]bool{
	"open": true, "exec": true, "eval": true, "compile": true, "__import__": true, "getattr": true,
	"setattr": true, "delattr": true, "hasattr": true, "vars": true, "globals": true, "locals": true, "breakpoint": true,
	"dir": true, "type": true, "str": true, "id": true,
	"__builtins__": true,
}

var keywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

var augOps = map[string]bool{
	"+=": true, "-=": true, "*=": true, "/=": true, "//=": true, "%=": true, "**=": true, ">>=": true,
	"<<=": true, "&=": true, "|=": true, "^=": true, "@=": true,
}

var codingRe = regexp.MustCompile(`^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`)

// maxTrailers bounds how many attributes, calls and subscripts of one
// chain are followed: real code has a handful, and a path rebuilt for each
// of thousands would cost quadratic time.
const maxTrailers = 64

// maxNesting bounds how deep code passed to exec as a literal is read.
const maxNesting = 4

// analyze reads a program.
func analyze(src []byte) *program {
	p := &program{
		src:     src,
		alias:   map[string]string{},
		ever:    map[string]string{},
		removed: map[string]bool{},
		defs:    map[string]bool{},
	}
	p.lineOff = append(p.lineOff, 0)
	for i, c := range src {
		if c == '\n' {
			p.lineOff = append(p.lineOff, i+1)
		}
	}
	for i := 0; i < 2 && i < len(p.lineOff); i++ {
		if m := codingRe.FindSubmatch(p.sourceLine(i + 1)); m != nil {
			p.coding = string(m[1])
			break
		}
	}
	p.stmts = scanStatements(src, 0, nil)
	assignScopes(p.stmts)
	// Module-level import bindings count for uses that come before them (a
	// function body runs after the module-level import below it).
	for _, st := range p.stmts {
		if st.scope == nil && !st.expr && len(st.toks) > 0 && st.toks[0].kind == tName && (st.toks[0].text == "import" || st.toks[0].text == "from") {
			for name, path := range importBindings(st.toks) {
				if _, ok := p.ever[name]; !ok {
					p.ever[name] = path
				}
			}
		}
		if !st.expr && len(st.toks) > 1 && st.toks[0].kind == tName && (st.toks[0].text == "def" || st.toks[0].text == "class") {
			p.defs[st.toks[1].text] = true
		}
	}
	for _, st := range p.stmts {
		p.statement(st, 0)
	}
	return p
}

// sourceLine returns a 1-based line of the source, without its newline.
func (p *program) sourceLine(n int) []byte {
	if n < 1 || n > len(p.lineOff) {
		return nil
	}
	end := len(p.src)
	if n < len(p.lineOff) {
		end = p.lineOff[n] - 1
	}
	return bytes.TrimRight(p.src[p.lineOff[n-1]:end], "\r")
}

// resolve maps a bare name, used in a statement, to its canonical path.
func (p *program) resolve(name string, st *stmt) (string, bool) {
	if st != nil && st.scope != nil {
		if path, known, found := st.scope.lookup(name); found {
			return path, known
		}
	}
	if path, ok := p.alias[name]; ok {
		return path, true
	}
	if !p.removed[name] {
		if path, ok := p.ever[name]; ok {
			return path, true
		}
	}
	if name == "__builtins__" {
		return "builtins", true
	}
	if builtinNames[name] && !p.defs[name] {
		return "builtins." + name, true
	}
	return name, false
}

// statement records what one statement does.
func (p *program) statement(st *stmt, nesting int) {
	toks := st.toks
	if len(toks) == 0 {
		return
	}
	if !st.expr && toks[0].kind == tName && (toks[0].text == "import" || toks[0].text == "from") {
		p.importStmt(st)
		return
	}
	p.strings(st)
	// A bare name being assigned is a binding of the program's own, not a
	// use of whatever the name meant before.
	bound := map[int]bool{}
	if !st.expr {
		for _, item := range assignedItems(toks) {
			if len(item) == 1 && item[0].kind == tName {
				bound[item[0].off] = true
			}
		}
		for _, t := range headerBindings(toks) {
			bound[t.off] = true
		}
		if k := defKeyword(toks); k >= 0 && toks[k].text == "def" {
			for _, off := range paramOffsets(toks[k:]) {
				bound[off] = true
			}
		}
	}
	// Every chain: a name not preceded by a dot, not a keyword, not a
	// keyword argument's name, not the name a def or class defines.
	for i, t := range toks {
		if t.kind != tName || keywords[t.text] {
			continue
		}
		if i > 0 && toks[i-1].kind == tOp && toks[i-1].text == "." {
			continue
		}
		if i > 0 && toks[i-1].kind == tName && (toks[i-1].text == "def" || toks[i-1].text == "class") {
			continue
		}
		if t.depth > 0 && i+1 < len(toks) && toks[i+1].kind == tOp && toks[i+1].text == "=" {
			continue
		}
		if bound[t.off] {
			continue
		}
		c := p.parseChain(st, toks, i, true, nesting)
		d := p.dottedAt(st, toks, i)
		called := d.end < len(toks) && toks[d.end].kind == tOp && toks[d.end].text == "("
		p.refs = append(p.refs, ref{chain: c, st: st, called: called})
	}
	if !st.expr {
		p.assignments(st)
	}
}

// parseChain reads the chain that starts with the name at toks[i]. When
// record is set, the calls along it are recorded.
func (p *program) parseChain(st *stmt, toks []token, i int, record bool, nesting int) chain {
	path, known := p.resolve(toks[i].text, st)
	c := chain{path: path, known: known, start: i, line: toks[i].line}
	var prev []arg
	j := i + 1
	for n := 0; j < len(toks) && n < maxTrailers; n++ {
		t := toks[j]
		if t.kind != tOp {
			break
		}
		switch t.text {
		case ".":
			if j+1 < len(toks) && toks[j+1].kind == tName {
				c.path += "." + toks[j+1].text
				j += 2
				continue
			}
		case "(":
			close := matchClose(toks, j)
			args := splitArgs(toks[j+1 : close])
			cl := call{callee: c, args: args, recv: prev, st: st}
			prev = append(prev[:len(prev):len(prev)], args...)
			if record {
				p.calls = append(p.calls, cl)
				p.callEffects(&cl, nesting)
			}
			c.path, c.known = p.callResult(&cl)
			j = close + 1
			continue
		case "[":
			close := matchClose(toks, j)
			inner := toks[j+1 : close]
			if c.known && (c.path == "builtins.globals()" || c.path == "builtins.locals()" || c.path == "builtins.vars()") {
				if lit, ok := literal(inner); ok {
					c.path, c.known = p.resolve(lit, st) // globals()["time"] is time
					j = close + 1
					continue
				}
			}
			if c.path == "sys.modules" && c.known {
				if record {
					p.refs = append(p.refs, ref{chain: chain{path: c.path, known: true, start: i, end: j, line: c.line}, st: st})
				}
				if lit, ok := literal(inner); ok {
					c.path = lit // sys.modules["time"] is the module time
					j = close + 1
					continue
				}
			}
			c.path += "[]"
			j = close + 1
			continue
		}
		break
	}
	c.end = min(j, len(toks))
	return c
}

// dottedAt reads the names-and-dots chain at toks[i] ("os.path.join"),
// resolved, stopping before any call or subscript.
func (p *program) dottedAt(st *stmt, toks []token, i int) chain {
	path, known := p.resolve(toks[i].text, st)
	c := chain{path: path, known: known, start: i, line: toks[i].line}
	j := i + 1
	for n := 0; n < maxTrailers && j+1 < len(toks) && toks[j].kind == tOp && toks[j].text == "." && toks[j+1].kind == tName; n++ {
		c.path += "." + toks[j+1].text
		j += 2
	}
	c.end = j
	return c
}

// callResult is the path of a call's value: the module for __import__ and
// import_module with a literal name, X.name for getattr(X, "name"), else
// the callee's path with "()".
func (p *program) callResult(cl *call) (string, bool) {
	switch cl.callee.path {
	case "builtins.__import__", "importlib.import_module", "importlib.__import__":
		if !cl.callee.known {
			break
		}
		if a := cl.arg(0, "name"); a != nil {
			if lit, ok := literal(a.toks); ok {
				return lit, true
			}
		}
	case "builtins.getattr":
		if !cl.callee.known || len(cl.args) < 2 {
			break
		}
		if x, ok := p.argChain(cl.st, cl.args[0]); ok {
			if lit, ok := literal(cl.args[1].toks); ok {
				return x.path + "." + lit, x.known
			}
		}
	}
	return cl.callee.path + "()", cl.callee.known
}

// argChain reads an argument of a call in st that is exactly one chain.
func (p *program) argChain(st *stmt, a arg) (chain, bool) {
	toks := a.toks
	if a.star != 0 || len(toks) == 0 || toks[0].kind != tName || keywords[toks[0].text] {
		return chain{}, false
	}
	c := p.parseChain(st, toks, 0, false, 0)
	return c, c.end == len(toks)
}

// callEffects records what some calls mean beyond being calls: an import
// (__import__("socket")), a target (setattr(time, "time", f)), and code
// that exec runs from a literal.
func (p *program) callEffects(cl *call, nesting int) {
	p.setattrDunder(cl)
	if !cl.callee.known {
		return
	}
	p.execLiteral(cl, nesting)
	switch cl.callee.path {
	case "builtins.__import__", "importlib.import_module", "importlib.__import__":
		if a := cl.arg(0, "name"); a != nil {
			if lit, ok := literal(a.toks); ok {
				p.imports = append(p.imports, importRec{module: lit, line: cl.callee.line, st: cl.st})
			}
		}
	case "builtins.setattr", "builtins.delattr":
		p.setattrTarget(cl, cl.args, strings.TrimPrefix(cl.callee.path, "builtins."))
	}
}

// setattrDunder records M.__setattr__("name", v) on a module, and
// object.__setattr__(M, "name", v), as targets.
func (p *program) setattrDunder(cl *call) {
	switch name := last(cl.callee.path); {
	case name != "__setattr__" && name != "__delattr__":
	case cl.callee.known && !strings.ContainsAny(cl.callee.path, "()[]"):
		recv := cl.callee
		recv.path = strings.TrimSuffix(recv.path, "."+name)
		if len(cl.args) > 0 {
			attr := "*"
			if lit, ok := literal(cl.args[0].toks); ok {
				attr = lit
			}
			recv.path += "." + attr
			p.targets = append(p.targets, target{chain: recv, op: name, st: cl.st})
		}
	default:
		p.setattrTarget(cl, cl.args, name)
	}
}

// setattrTarget records setattr(X, "name", v) as a target X.name (X.* for
// a computed name).
func (p *program) setattrTarget(cl *call, args []arg, op string) {
	if len(args) < 2 {
		return
	}
	x, ok := p.argChain(cl.st, args[0])
	if !ok {
		return
	}
	name := "*"
	if lit, ok := literal(args[1].toks); ok {
		name = lit
	}
	x.path += "." + name
	x.line = cl.callee.line
	p.targets = append(p.targets, target{chain: x, op: op, st: cl.st})
}

// execLiteral reads code passed to exec, eval or compile as a literal as
// part of the program.
func (p *program) execLiteral(cl *call, nesting int) {
	switch cl.callee.path {
	case "builtins.exec", "builtins.eval", "builtins.compile":
		if nesting >= maxNesting {
			return
		}
		a := cl.arg(0, "source")
		if a == nil {
			return
		}
		if code, ok := literal(a.toks); ok {
			// The literal is code: read it as part of the program, its
			// findings placed on the line of the call.
			for _, s := range scanStatements([]byte(code), cl.callee.line-1, cl.st) {
				s.atLine = cl.callee.line
				s.scope = cl.st.root().scope
				p.statement(s, nesting+1)
			}
		}
	}
}

// len(toks) when it is never closed (in toks).
