package verify

import (
	"fmt"
	"slices"
	"strings"
)

// ---------------------------------------------------------------------------
// compile-options

var compileConfigs = []string{"torch._inductor.config", "torch._dynamo.config", "torch._functorch.config"}

// compilerModules are the compiler's packages: replacing anything in them
// changes compilation, which is the compile-options rule's business.
var compilerModules = []string{"torch._inductor", "torch._dynamo", "torch._functorch"}

// configReads are the calls on a config module that only read it.
var configReads = []string{"get_config_copy", "save_config", "save_config_portable", "codegen_config", "get_hash", "shallow_copy_dict"}

func compileOptions(c *checker) {
	for i := range c.p.calls {
		cl := &c.p.calls[i]
		p := cl.callee.path
		switch {
		case cl.callee.known && p == "torch.compile":
			c.compileArgs(cl, 1)
		case cl.callee.known && (p == "functools.partial") && len(cl.args) > 0:
			if x, ok := c.p.argChain(cl.st, cl.args[0]); ok && x.known && x.path == "torch.compile" {
				c.compileArgs(&call{callee: x, args: cl.args[1:], st: cl.st}, 1)
			}
		case !cl.callee.known && strings.HasSuffix(p, ".compile"):
			// nn.Module.compile passes its arguments to torch.compile
			c.compileArgs(cl, 0)
		case cl.callee.known && underAny(p, compileConfigs...) && !slices.Contains(configReads, last(p)):
			c.add(cl.st, cl.callee.line, "changes the compiler's configuration through %s()", p)
		}
	}
	for _, t := range c.p.targets {
		if t.known && underAny(t.path, compilerModules...) {
			c.add(t.st, t.line, "changes %s", t.path)
		}
	}
	for _, r := range c.p.refs {
		if m, ok := namespaceOf(r.chain); ok && underAny(m, compilerModules...) {
			c.add(r.st, r.line, "reaches into the namespace of %s", m)
		}
	}
	c.varsOf(compileConfigs, "changes the compiler's configuration through vars(%s)")
	c.moduleValues(compileConfigs, "uses the module %s as a value, which hides what is done with it")
	for _, s := range c.p.strs {
		for _, env := range []string{"TORCHINDUCTOR_", "TORCHDYNAMO_", "TORCH_COMPILE_"} {
			if strings.HasPrefix(s.text, env) {
				c.add(s.st, s.line, "names the compiler's environment variable %s", s.text)
				break
			}
		}
	}
}

// compileArgs checks the arguments of a torch.compile call. skip is the
// number of leading positional arguments that are the model.
func (c *checker) compileArgs(cl *call, skip int) {
	pos := 0
	for _, a := range cl.args {
		switch {
		case a.star != 0:
			if skip == 0 && a.star == 1 {
				continue
			}
			c.add(cl.st, cl.callee.line, "passes %s to torch.compile, whose options the rule cannot read", strings.Repeat("*", a.star)+"args")
		case a.kw == "":
			pos++
			if pos > skip {
				c.add(cl.st, cl.callee.line, "passes an extra positional argument to torch.compile")
			}
		case a.kw == "dynamic" || a.kw == "fullgraph" || a.kw == "disable":
		case a.kw == "mode":
			if v, ok := literal(a.toks); (ok && v == "default") || isNone(a.toks) {
				continue
			}
			c.add(cl.st, cl.callee.line, "sets torch.compile mode=%s", tokText(a.toks))
		case a.kw == "backend":
			if v, ok := literal(a.toks); ok && v == "inductor" {
				continue
			}
			c.add(cl.st, cl.callee.line, "sets torch.compile backend=%s", tokText(a.toks))
		default:
			if skip == 0 && a.kw != "options" {
				// a method named compile on something that is not a module: only
				// torch.compile's option keywords are the rule's business
				continue
			}
			c.add(cl.st, cl.callee.line, "passes %s= to torch.compile", a.kw)
		}
	}
}

func isNone(toks []token) bool {
	return len(toks) == 1 && toks[0].kind == tName && toks[0].text == "None"
}

// tokText renders tokens briefly, for messages.
func tokText(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && (t.kind == tName || toks[i-1].kind == tName) && t.kind != tOp && toks[i-1].kind != tOp {
			b.WriteByte(' ')
		}
		if t.kind == tString {
			fmt.Fprintf(&b, "%q", t.text)
			continue
		}
		b.WriteString(t.text)
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:39] + "…"
	}
	return s
}

// varsOf flags vars(M) for modules M under the prefixes.
func (c *checker) varsOf(prefixes []string, format string) {
	for i := range c.p.calls {
		cl := &c.p.calls[i]
		if !cl.callee.known || cl.callee.path != "builtins.vars" || len(cl.args) == 0 {
			continue
		}
		if x, ok := c.p.argChain(cl.st, cl.args[0]); ok && x.known && !strings.ContainsAny(x.path, "()[]") && underAny(x.path, prefixes...) {
			c.add(cl.st, cl.callee.line, format, x.path)
		}
	}
}
