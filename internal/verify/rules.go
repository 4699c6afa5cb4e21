package verify

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ruleDef is one static rule: its id, its one-line summary and the
// function that reads an analyzed program.
type ruleDef struct {
	id, summary string
	run         func(c *checker)
}

// ruleDefs are the rules, in the order of track.StaticRuleIDs.
var ruleDefs = []ruleDef{
	{"compile-options", "extra torch.compile options (mode, options, a backend other than inductor) or changes to torch._inductor / torch._dynamo configuration, which the speedrun bans", compileOptions},
	{"val-data", "reads validation data or data the track did not give: names of validation shards, cfg.val_* fields other than val_seq_len and val_batch_seqs, listing the data folder, literal data paths", valData},
	{"harness-internals", "reaches into the harness (fh._anything, frontier_boot, its config and telemetry files, sys.modules) or replaces functions of modules it shares (fh.step = ..., F.cross_entropy = ..., changes to cfg)", harnessInternals},
	{"introspection", "introspection that can reach the harness's state: gc.get_objects/get_referrers, inspect.stack/currentframe, sys._getframe, settrace, frame attributes (f_back, f_locals, f_globals), __globals__, __subclasses__", introspection},
	{"clock-patch", "replaces time functions or CUDA synchronization and events (time.perf_counter = ..., torch.cuda.synchronize = ..., setattr(torch.cuda, ...))", clockPatch},
	{"network", "network access: socket, ssl, urllib, http, requests, aiohttp, httpx and the like, torch.hub, from_pretrained downloads", network},
	{"subprocess", "starts or signals processes: subprocess, os.system, os.popen, os.exec*, os.spawn*, os.fork, os.kill, pty, multiprocessing", subprocessRule},
	{"native-code", "loads native code: ctypes, cffi, torch.utils.cpp_extension (load_inline), torch.ops.load_library", nativeCode},
	{"write-outside", "writes outside the run folder: open(..., 'w'/'a'/'x'), shutil, os, pathlib, torch.save, numpy.save with an absolute path, ~ or '..'; os.chdir", writeOutside},
	{"dynamic-code", "code the rules cannot read: exec, eval, compile, __import__ or import_module of computed code or names, getattr of computed names on sensitive modules, __builtins__, marshal, loading code from files, source encodings that turn comments into code", dynamicCode},
}

// finding is a rule's finding before it becomes an eval.Finding.
type finding struct {
	rule string
	line int
	msg  string
	st   *stmt
}

// checker runs one rule over a program.
type checker struct {
	p       *program
	rule    string
	valFile string
	out     []finding
}

// add records a finding on the line, quoting the line's code.
func (c *checker) add(st *stmt, line int, format string, args ...any) {
	for s := st; s != nil; s = s.parent {
		if s.atLine != 0 {
			line = s.atLine
			format += " (in code passed to exec as a string)"
			break
		}
	}
	msg := fmt.Sprintf(format, args...)
	if q := quote(c.p.sourceLine(line)); q != "" {
		msg += ": `" + q + "`"
	}
	c.out = append(c.out, finding{rule: c.rule, line: line, msg: msg, st: st})
}

// quote returns a line's code, trimmed and cut short.
func quote(b []byte) string {
	b = bytes.TrimLeft(b, " \t")
	if len(b) > 4*80 {
		b = b[:4*80] // enough bytes for 80 runes; a huge line is not copied whole
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	const max = 80
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return strings.ReplaceAll(s, "`", "'")
}

// under reports whether a path is the prefix or lies below it:
// under("torch.cuda.synchronize", "torch.cuda") is true.
func under(p, prefix string) bool {
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	if len(p) == len(prefix) {
		return true
	}
	switch p[len(prefix)] {
	case '.', '(', '[':
		return true
	}
	return false
}

func underAny(p string, prefixes ...string) bool {
	for _, x := range prefixes {
		if under(p, x) {
			return true
		}
	}
	return false
}

// moduleAttr reports whether a known path is an attribute of a module (or
// of something inside one) reached by names only: torch.nn.functional.x,
// not model().x or os.environ["x"].
func moduleAttr(c chain) bool {
	if !c.known || !strings.Contains(c.path, ".") {
		return false
	}
	return !strings.ContainsAny(c.path, "()[]")
}

// namespaceOf returns M when a path reaches into the namespace of a module
// M by names (M.__dict__, M.__dict__["x"], M.__dict__.update).
func namespaceOf(c chain) (string, bool) {
	if !c.known {
		return "", false
	}
	i := strings.Index(c.path, ".__dict__")
	if i < 0 {
		return "", false
	}
	if rest := c.path[i+len(".__dict__"):]; rest != "" && !strings.ContainsAny(rest[:1], ".([") {
		return "", false
	}
	m := c.path[:i]
	if strings.ContainsAny(m, "()[]") {
		return "", false
	}
	return m, true
}

// last returns the last dotted segment of a path.
func last(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// imported returns the import records and the known references, as paths
// with their statements, for rules that ask "does the program use X".
type use struct {
	path string
	line int
	st   *stmt
	imp  bool // from an import statement (or __import__ of a literal)
}

func (c *checker) uses() []use {
	var out []use
	for _, im := range c.p.imports {
		out = append(out, use{im.module, im.line, im.st, true})
	}
	for _, r := range c.p.refs {
		if r.known {
			out = append(out, use{r.path, r.line, r.st, false})
		}
	}
	return out
}

// useRule flags imports of the modules and uses of the paths, once per
// statement and module. allow lists paths that are fine although under a
// flagged one.
func (c *checker) useRule(what string, modules, allow []string) {
	type key struct {
		st *stmt
		m  string
	}
	seen := map[key]bool{}
	for _, u := range c.uses() {
		if underAny(u.path, allow...) {
			continue
		}
		for _, m := range modules {
			if !under(u.path, m) {
				continue
			}
			if k := (key{u.st.root(), m}); !seen[k] {
				seen[k] = true
				verb := "uses"
				if u.imp {
					verb = "imports"
				}
				c.add(u.st, u.line, "%s %s (%s)", verb, plainPath(u.path), what)
			}
			break
		}
	}
}

// plainPath cuts a path at its first call or subscript:
// subprocess.run().stdout is subprocess.run.
func plainPath(p string) string {
	if i := strings.IndexAny(p, "(["); i >= 0 {
		return p[:i]
	}
	return p
}

// moduleValues flags references to the modules themselves used as values
// (passed to a function, put in a list): what is then done with them is
// out of the rules' sight. An alias ("t = time") and getattr or hasattr
// with a literal name are followed, so they are fine.
func (c *checker) moduleValues(modules []string, format string) {
	for _, r := range c.p.refs {
		if !r.known || !slices.Contains(modules, r.path) {
			continue
		}
		toks := r.st.toks
		if r.end < len(toks) && toks[r.end].kind == tOp && (toks[r.end].text == "." || toks[r.end].text == "[") {
			continue // an attribute path that parseChain could not follow
		}
		if r.start >= 2 && toks[r.start-1].kind == tOp && toks[r.start-1].text == "(" && toks[r.start-2].kind == tName {
			if fn, known := c.p.resolve(toks[r.start-2].text, r.st); known && slices.Contains([]string{"builtins.getattr", "builtins.hasattr", "builtins.setattr", "builtins.delattr", "builtins.vars"}, fn) {
				continue // judged where getattr and setattr are
			}
		}
		if r.end == len(toks) && r.start >= 2 && toks[r.start-1].kind == tOp && toks[r.start-1].text == "=" && toks[r.start-1].depth == 0 {
			if items := assignedItems(toks); len(items) == 1 && len(items[0]) == 1 {
				continue // an alias, followed by the analysis
			}
		}
		c.add(r.st, r.line, format, r.path)
	}
}
