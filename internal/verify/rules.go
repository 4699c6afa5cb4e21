package verify

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
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

// ---------------------------------------------------------------------------
// val-data

var (
	valNumRe    = regexp.MustCompile(`(?i)(^|[^a-z])val(idation)?[_.-]?\d{4,}`)
	valWordRe   = regexp.MustCompile(`(?i)(^|[^a-z])val(idation)?([^a-z]|$)`)
	valPrefixRe = regexp.MustCompile(`(?i)_val(idation)?_(\*|\d|$)`)
)

// valEvidence says whether a string names a validation shard.
func valEvidence(s, valFile string) bool {
	if valNumRe.MatchString(s) || valPrefixRe.MatchString(s) {
		return true
	}
	if strings.Contains(strings.ToLower(s), ".bin") && valWordRe.MatchString(s) {
		return true
	}
	if valFile != "" {
		base := path.Base(valFile)
		stem := strings.TrimSuffix(base, path.Ext(base))
		if strings.Contains(s, base) || (len(stem) >= 4 && strings.Contains(s, stem)) {
			return true
		}
	}
	return false
}

// cfgVal are the cfg fields about validation that a program may read.
var cfgVal = []string{"val_seq_len", "val_batch_seqs"}

// listing are calls that list a folder.
var listing = []string{"glob.glob", "glob.iglob", "glob.glob0", "glob.glob1", "os.listdir", "os.scandir", "os.walk", "os.fwalk"}

// fdReaders read files by descriptor number.
var fdReaders = []string{"os.pread", "os.preadv", "os.read", "os.readv", "os.fdopen", "os.fstat", "os.dup", "os.dup2", "os.lseek", "os.sendfile", "mmap.mmap"}

// dataReaders read a file named by their first argument.
var dataReaders = []string{"builtins.open", "io.open", "codecs.open", "os.open", "numpy.fromfile", "numpy.memmap", "numpy.load", "torch.load", "torch.from_file", "frontier_harness.read_shard"}

// pathMakers build a path from their arguments.
var pathMakers = []string{"os.path.dirname", "os.path.split", "os.path.join", "os.path.normpath", "os.path.abspath", "os.path.realpath", "os.path.commonpath", "os.path.commonprefix", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"}

// pathSurgery are methods that cut a path into pieces.
var pathSurgery = []string{"parent", "parents", "rsplit", "rpartition", "partition", "replace", "split", "rstrip", "removesuffix", "with_name", "with_stem", "with_suffix", "rfind", "rindex"}

var pathlibRoots = []string{"pathlib.Path()", "pathlib.PurePath()", "pathlib.PosixPath()"}

func valData(c *checker) {
	for _, s := range c.p.strs {
		if valEvidence(s.text, c.valFile) {
			c.add(s.st, s.line, "names a validation shard (%q): the harness alone reads validation data", s.text)
		}
	}
	for _, r := range c.p.refs {
		if r.known && under(r.path, "frontier_harness.config()") {
			rest := strings.TrimPrefix(r.path, "frontier_harness.config().")
			field, _, _ := strings.Cut(rest, ".")
			field = strings.TrimRight(field, "()[]")
			if strings.HasPrefix(field, "val") && !slices.Contains(cfgVal, field) {
				c.add(r.st, r.line, "reads cfg.%s: the harness alone reads validation data", field)
			}
		}
		if segs := r.segments(); slices.IndexFunc(segs, isTrainFiles) >= 0 {
			k := slices.IndexFunc(segs, isTrainFiles)
			for _, s := range segs[k+1:] {
				if slices.Contains(pathSurgery, strings.TrimRight(s, "()[]")) {
					c.add(r.st, r.line, "cuts a path out of the training file names (.%s): the validation shard lies beside them", strings.TrimRight(s, "()[]"))
					break
				}
			}
		}
	}
	c.useRule("reads inherited file descriptors, which may hold the validation shard", fdReaders, nil)
	for _, s := range c.p.strs {
		if strings.HasPrefix(s.text, "/proc/self/fd") || strings.HasPrefix(s.text, "/dev/fd") || strings.HasPrefix(s.text, "/proc/self/map_files") {
			c.add(s.st, s.line, "names the process's open files (%q), among them the validation shard", s.text)
		}
	}
	for i := range c.p.calls {
		cl := &c.p.calls[i]
		p := cl.callee.path
		switch {
		case cl.callee.known && slices.Contains(listing, p):
			if !allPlainRelative(cl.args) {
				c.add(cl.st, cl.callee.line, "lists a folder with %s: the data folder holds the validation shard", p)
			}
		case cl.callee.known && underAny(p, pathlibRoots...) && slices.Contains([]string{"glob", "rglob", "iterdir", "walk"}, last(p)):
			if !allPlainRelative(cl.recv) || !allPlainRelative(cl.args) {
				c.add(cl.st, cl.callee.line, "lists a folder with Path.%s: the data folder holds the validation shard", last(p))
			}
		case cl.callee.known && slices.Contains(dataReaders, p):
			a := cl.arg(0, "file")
			if a == nil || createsAnew(cl, p) {
				break
			}
			if lit, ok := literal(a.toks); ok && ownFile(lit) {
				// A bare name is a file of the program's working folder, its
				// run folder (a checkpoint it wrote): the track's data is
				// elsewhere, and the sandbox hides it anyway.
				break
			}
			for _, pl := range pathLiterals(c.p, cl.st, a.toks) {
				low := strings.ToLower(pl.text)
				if strings.Contains(low, ".bin") || strings.Contains(low, "fineweb") || strings.Contains(low, "data/") || strings.HasPrefix(low, "/") && strings.Contains(low, "/data") {
					c.add(cl.st, cl.callee.line, "reads data from a path the track did not give (%q): read cfg.train_files", pl.text)
					break
				}
			}
		case cl.callee.known && slices.Contains(pathMakers, p):
			for _, a := range cl.args {
				if mentionsTrainFiles(a.toks) {
					c.add(cl.st, cl.callee.line, "derives a path from the training file names with %s: the validation shard lies beside them", p)
					break
				}
			}
		case last(p) == "replace" && len(cl.args) >= 2:
			from, ok1 := literal(cl.args[0].toks)
			to, ok2 := literal(cl.args[1].toks)
			if ok1 && ok2 && strings.Contains(strings.ToLower(from), "train") && strings.Contains(strings.ToLower(to), "val") {
				c.add(cl.st, cl.callee.line, "turns a training path into a validation path (%q -> %q)", from, to)
			}
		}
	}
}

// ownFile reports whether a path literal is a bare file name: one in the
// program's working folder.
func ownFile(name string) bool {
	return name != "" && !strings.ContainsAny(name, `/\~$`) && name != "." && name != ".."
}

func isTrainFiles(s string) bool { return strings.TrimRight(s, "()[]") == "train_files" }

func mentionsTrainFiles(toks []token) bool { return hasName(toks, "train_files") }

// allPlainRelative reports whether every argument is a literal relative
// path inside the current folder (or there are none).
func allPlainRelative(args []arg) bool {
	for _, a := range args {
		if a.kw != "" && a.kw != "pathname" && a.kw != "path" && a.kw != "top" && a.kw != "pattern" {
			continue // recursive=True, root_dir=... are checked below when literal
		}
		v, ok := literal(a.toks)
		if !ok || outside(v, v) {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// write-outside

var dotdotRe = regexp.MustCompile(`(^|[/\\])\.\.([/\\]|$)`)

// outside reports whether a path literal (its literal prefix and its whole
// text) points outside the current folder.
func outside(prefix, text string) bool {
	if prefix == text && slices.Contains(nullDevices, text) {
		return false
	}
	if strings.HasPrefix(prefix, "/") || strings.HasPrefix(prefix, "~") || strings.HasPrefix(prefix, `\`) || strings.HasPrefix(prefix, "$") {
		return true
	}
	if len(prefix) >= 2 && prefix[1] == ':' && (prefix[0]|0x20 >= 'a' && prefix[0]|0x20 <= 'z') {
		return true // C:\ or C:/
	}
	return dotdotRe.MatchString(text)
}

// nullDevices are absolute paths every program may write to.
var nullDevices = []string{"/dev/null", "/dev/stdout", "/dev/stderr"}

// pathLit is a string literal that takes part in a path.
type pathLit struct{ prefix, text string }

// pathLiterals returns the string literals that make up a path expression:
// the literal it starts with, the arguments of os.path.join, Path(...) and
// the like inside it, and the operands of pathlib's "/".
func pathLiterals(p *program, st *stmt, toks []token) []pathLit {
	return appendPathLiterals(nil, p, st, toks, 0)
}

func appendPathLiterals(out []pathLit, p *program, st *stmt, toks []token, depth int) []pathLit {
	if depth > 8 {
		return out // os.path.join nested deeper than this is not a path anyone writes
	}
	toks = stripParens(toks)
	if len(toks) > 0 && toks[0].kind == tString {
		out = append(out, pathLit{toks[0].prefix, toks[0].text})
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tString && i > 0 && toks[i-1].kind == tOp && (toks[i-1].text == "/" || toks[i-1].text == "+") {
			out = append(out, pathLit{t.prefix, t.text})
		}
		if t.kind != tName || keywords[t.text] || (i > 0 && toks[i-1].kind == tOp && toks[i-1].text == ".") {
			continue
		}
		c := p.dottedAt(st, toks, i)
		if !c.known || c.end >= len(toks) || toks[c.end].text != "(" {
			continue
		}
		if !slices.Contains(pathMakers, c.path) && c.path != "os.path.expanduser" && c.path != "os.path.expandvars" && c.path != "builtins.str" {
			continue
		}
		cl := matchClose(toks, c.end)
		for _, a := range splitArgs(toks[c.end+1 : min(cl, len(toks))]) {
			out = appendPathLiterals(out, p, st, a.toks, depth+1)
		}
		i = cl // the arguments are read
	}
	return out
}

// writers maps a call to the arguments that name what it writes: the
// index of a positional argument and its keyword name.
type pathArg struct {
	i  int
	kw string
}

var writers = map[string][]pathArg{
	"shutil.copy": {{1, "dst"}}, "shutil.copy2": {{1, "dst"}}, "shutil.copyfile": {{1, "dst"}},
	"shutil.copytree": {{1, "dst"}}, "shutil.move": {{1, "dst"}}, "shutil.copymode": {{1, "dst"}},
	"shutil.copystat": {{1, "dst"}}, "shutil.rmtree": {{0, "path"}}, "shutil.make_archive": {{0, "base_name"}},
	"shutil.unpack_archive": {{1, "extract_dir"}}, "shutil.chown": {{0, "path"}},
	"os.remove": {{0, "path"}}, "os.unlink": {{0, "path"}}, "os.rmdir": {{0, "path"}}, "os.removedirs": {{0, "name"}},
	"os.mkdir": {{0, "path"}}, "os.makedirs": {{0, "name"}}, "os.chmod": {{0, "path"}}, "os.chown": {{0, "path"}},
	"os.lchown": {{0, "path"}}, "os.truncate": {{0, "path"}}, "os.utime": {{0, "path"}}, "os.mkfifo": {{0, "path"}},
	"os.mknod": {{0, "path"}}, "os.rename": {{0, "src"}, {1, "dst"}}, "os.renames": {{0, "old"}, {1, "new"}},
	"os.replace": {{0, "src"}, {1, "dst"}}, "os.link": {{0, "src"}, {1, "dst"}}, "os.symlink": {{0, "src"}, {1, "dst"}},
	"torch.save": {{1, "f"}}, "numpy.save": {{0, "file"}}, "numpy.savez": {{0, "file"}},
	"numpy.savez_compressed": {{0, "file"}}, "numpy.savetxt": {{0, "fname"}},
}

var openers = []string{"builtins.open", "io.open", "codecs.open"}

// pathDecoders turn hidden text into a path.
var pathDecoders = []string{"fromhex", "b64decode", "b32decode", "b16decode", "b85decode", "a85decode", "urlsafe_b64decode", "unhexlify", "decompress", "rot13"}

var pathlibWriters = []string{"write_text", "write_bytes", "touch", "mkdir", "unlink", "rename", "replace", "symlink_to", "hardlink_to", "rmdir", "chmod", "open"}

func writeOutside(c *checker) {
	check := func(cl *call, toks []token, what string) {
		for _, pl := range pathLiterals(c.p, cl.st, toks) {
			if outside(pl.prefix, pl.text) {
				c.add(cl.st, cl.callee.line, "%s %q, outside the run folder", what, pl.text)
				return
			}
		}
		for _, t := range toks {
			if t.kind == tName && slices.Contains(pathDecoders, t.text) {
				c.add(cl.st, cl.callee.line, "%s a path decoded at run time (%s), which hides where it writes", what, t.text)
				return
			}
		}
	}
	for _, s := range c.p.strs {
		if strings.HasSuffix(s.text, "_CACHE_DIR") {
			c.add(s.st, s.line, "names the cache folder variable %s: the caches lie outside the run folder and outlive it", s.text)
		}
	}
	for i := range c.p.calls {
		cl := &c.p.calls[i]
		p := cl.callee.path
		switch {
		case cl.callee.known && slices.Contains(openers, p):
			if a := cl.arg(0, "file"); a != nil && writeMode(cl.arg(1, "mode")) {
				check(cl, a.toks, "opens for writing")
			}
		case cl.callee.known && p == "os.open":
			if a := cl.arg(0, "path"); a != nil {
				check(cl, a.toks, "opens")
			}
		case cl.callee.known && p == "os.chdir":
			a := cl.arg(0, "path")
			if a == nil {
				break
			}
			if v, ok := literal(a.toks); !ok || outside(v, v) {
				c.add(cl.st, cl.callee.line, "changes the working folder, so that relative writes may land outside the run folder")
			}
		case cl.callee.known && writers[p] != nil:
			for _, pa := range writers[p] {
				if a := cl.arg(pa.i, pa.kw); a != nil {
					check(cl, a.toks, "writes")
				}
			}
		case cl.callee.known && underAny(p, pathlibRoots...) && slices.Contains(pathlibWriters, last(p)):
			if last(p) == "open" && !writeMode(cl.arg(0, "mode")) {
				break
			}
			for _, a := range cl.recv {
				if a.kw == "" {
					check(cl, a.toks, "writes")
				}
			}
			if last(p) == "rename" || last(p) == "replace" || last(p) == "symlink_to" || last(p) == "hardlink_to" {
				if a := cl.arg(0, "target"); a != nil {
					check(cl, a.toks, "writes")
				}
			}
		case !cl.callee.known && last(p) == "tofile":
			if a := cl.arg(0, "file"); a != nil {
				check(cl, a.toks, "writes")
			}
		}
	}
}

// createsAnew reports whether a call to the data reader p opens its file
// only to write it from scratch, so that it reads nothing that was there:
// open(name, "wb") of a file in the program's own folder is a write
// (write-outside judges where), not a read of data the track did not
// give. An append, "+", "r" or a mode the rule cannot read may read.
func createsAnew(cl *call, p string) bool {
	var mode *arg
	switch p {
	case "builtins.open", "io.open", "codecs.open":
		mode = cl.arg(1, "mode")
	case "numpy.memmap":
		mode = cl.arg(2, "mode")
	default:
		return false
	}
	if mode == nil {
		return false
	}
	v, ok := literal(mode.toks)
	return ok && strings.ContainsAny(v, "wx")
}

// writeMode reports whether an open mode argument may write: a literal
// with w, a, x or +, or anything the rule cannot read. No mode reads.
func writeMode(a *arg) bool {
	if a == nil {
		return false
	}
	v, ok := literal(a.toks)
	if !ok {
		return true
	}
	return strings.ContainsAny(v, "wax+")
}

// ---------------------------------------------------------------------------
// harness-internals

// harnessModule is the harness's public module; the others are internal.
const harnessModule = "frontier_harness"

var harnessInternalModules = []string{"frontier_boot", "frontier_launch", "_frontier"}

// harnessDunders are the module attributes of the harness a program may read.
var harnessDunders = []string{"__name__", "__doc__", "__all__"}

// harnessFiles are names of the harness's files and environment.
var harnessFiles = []string{"config.json", "telemetry.jsonl", "frontier_harness.py", "frontier_boot.py", "frontier_launch.py", "_frontier"}

// settingsAllowed are module attributes a program may set: torch's
// backend switches and where print goes.
var settingsAllowed = []string{"torch.backends", "sys.stdout", "sys.stderr"}

// clockModules are the modules whose attributes the clock-patch rule owns.
var clockModules = []string{"time", "datetime", "torch.cuda"}

func harnessInternals(c *checker) {
	for _, im := range c.p.imports {
		switch {
		case underAny(im.module, harnessInternalModules...):
			c.add(im.st, im.line, "imports %s, a part of the harness that is not its API", im.module)
		case im.from && under(im.module, harnessModule) && strings.HasPrefix(last(im.module), "_") && !slices.Contains(harnessDunders, last(im.module)):
			c.add(im.st, im.line, "imports %s, a harness internal", im.module)
		case underAny(im.module, "unittest.mock", "mock"):
			c.add(im.st, im.line, "imports %s, which replaces functions at run time", im.module)
		case im.module == "sys.modules":
			c.add(im.st, im.line, "imports sys.modules, through which a program can replace the harness module")
		}
	}
	for _, r := range c.p.refs {
		if !r.known {
			continue
		}
		switch {
		case under(r.path, harnessModule) && len(r.segments()) > 1:
			seg := strings.TrimRight(r.segments()[1], "()[]")
			if strings.HasPrefix(seg, "_") && !slices.Contains(harnessDunders, seg) {
				c.add(r.st, r.line, "reaches into the harness (fh.%s): only its documented functions are its API", seg)
			}
		case under(r.path, "sys.modules"):
			c.add(r.st, r.line, "uses sys.modules, through which a program can replace or reach the harness module")
		case under(r.path, "importlib.reload"):
			c.add(r.st, r.line, "reloads a module, which can replace the harness's state")
		}
		if m, ok := namespaceOf(r.chain); ok && !underAny(m, clockModules...) && !underAny(m, compilerModules...) && m != "builtins" {
			c.add(r.st, r.line, "reaches into the namespace of module %s", m)
		}
	}
	for _, t := range c.p.targets {
		if !t.known {
			continue
		}
		switch {
		case under(t.path, harnessModule+".config()"):
			c.add(t.st, t.line, "changes the harness's config (%s): the harness reads it too", strings.Replace(t.path, harnessModule+".config()", "cfg", 1))
		case under(t.path, harnessModule) && !strings.ContainsAny(t.path, "()[]"):
			c.add(t.st, t.line, "replaces %s, a part of the harness", strings.Replace(t.path, harnessModule, "fh", 1))
		case moduleAttr(t.chain) && !underAny(t.path, settingsAllowed...) && !underAny(t.path, clockModules...) && !underAny(t.path, compilerModules...):
			c.add(t.st, t.line, "replaces %s: the harness shares that module (define a function of your own instead)", t.path)
		}
	}
	var notHarness []string
	for _, im := range c.p.imports {
		root, _, _ := strings.Cut(im.module, ".")
		if root != "" && !slices.Contains(notHarness, root) && !underAny(root, clockModules...) {
			notHarness = append(notHarness, root)
		}
	}
	c.varsOf(append(notHarness, harnessModule), "reaches into the namespace of module %s with vars()")
	c.moduleValues([]string{harnessModule, "builtins"}, "uses the module %s as a value, which hides what is done with it")
	for _, s := range c.p.strs {
		switch {
		case strings.HasPrefix(s.text, "FRONTIER_"):
			c.add(s.st, s.line, "names the harness's environment variable %s", s.text)
		case slices.ContainsFunc(harnessFiles, func(f string) bool { return path.Base(s.text) == f || strings.HasSuffix(s.text, "/"+f) }):
			c.add(s.st, s.line, "names a file of the harness (%q)", s.text)
		case s.text == "frontier_boot" || s.text == "frontier_launch" || strings.HasPrefix(s.text, "frontier_harness._"):
			c.add(s.st, s.line, "names a part of the harness that is not its API (%q)", s.text)
		}
	}
}

// ---------------------------------------------------------------------------
// introspection

var introspectionCalls = []string{
	"gc.get_objects", "gc.get_referrers", "gc.get_referents",
	"inspect.stack", "inspect.currentframe", "inspect.getouterframes", "inspect.getinnerframes", "inspect.trace",
	"inspect.getmembers", "inspect.getclosurevars",
	"sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.monitoring",
	"sys._getframemodulename",
	"threading.settrace", "threading.setprofile", "threading.settrace_all_threads", "threading.setprofile_all_threads",
	"traceback.walk_stack", "traceback.walk_tb",
}

// frameAttrs are attributes that lead from an object to frames, globals
// or code.
var frameAttrs = []string{"f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "__globals__", "__closure__", "__code__", "__subclasses__"}

func introspection(c *checker) {
	c.useRule("introspection that can reach the harness's state", introspectionCalls, nil)
	seen := map[*stmt]map[string]bool{}
	for _, r := range c.p.refs {
		for _, s := range r.segments()[1:] {
			s = strings.TrimRight(s, "()[]")
			if slices.Contains(frameAttrs, s) {
				if seen[r.st] == nil {
					seen[r.st] = map[string]bool{}
				}
				if !seen[r.st][s] {
					seen[r.st][s] = true
					c.add(r.st, r.line, "reads .%s, which reaches frames, globals or code (the harness's too)", s)
				}
				break
			}
		}
	}
}

// ---------------------------------------------------------------------------
// clock-patch

func clockPatch(c *checker) {
	for _, t := range c.p.targets {
		if t.known && !strings.ContainsAny(t.path, "()[]") && underAny(t.path, clockModules...) && strings.Contains(t.path, ".") {
			c.add(t.st, t.line, "replaces %s: the clock belongs to the harness", t.path)
		}
	}
	for _, r := range c.p.refs {
		if m, ok := namespaceOf(r.chain); ok && underAny(m, clockModules...) {
			c.add(r.st, r.line, "reaches into the namespace of %s", m)
		}
	}
	c.varsOf(clockModules, "reaches into the namespace of %s with vars()")
	c.moduleValues([]string{"time", "torch.cuda"}, "uses the module %s as a value, which hides what is done with it")
	for i := range c.p.calls {
		cl := &c.p.calls[i]
		if !strings.Contains(strings.ToLower(last(cl.callee.path)), "patch") && !strings.Contains(strings.ToLower(cl.callee.path), "patch") {
			continue
		}
		if len(cl.args) == 0 {
			continue
		}
		if v, ok := literal(cl.args[0].toks); ok && (strings.HasPrefix(v, "time.") || strings.HasPrefix(v, "torch.cuda.") || strings.HasPrefix(v, "datetime.")) {
			c.add(cl.st, cl.callee.line, "patches %s: the clock belongs to the harness", v)
			continue
		}
		if x, ok := c.p.argChain(cl.st, cl.args[0]); ok && x.known && underAny(x.path, clockModules...) {
			c.add(cl.st, cl.callee.line, "patches %s: the clock belongs to the harness", x.path)
		}
	}
}

// ---------------------------------------------------------------------------
// network, subprocess, native-code

var networkModules = []string{
	"socket", "_socket", "ssl", "urllib", "urllib2", "urllib3", "http", "httplib", "requests", "aiohttp", "httpx",
	"websocket", "websockets", "ftplib", "smtplib", "poplib", "imaplib", "nntplib", "telnetlib", "xmlrpc",
	"socketserver", "paramiko", "pycurl", "grpc", "zmq", "boto3", "botocore", "huggingface_hub", "webbrowser",
	"asyncssh", "wget", "gdown", "torch.hub", "asyncio.open_connection", "asyncio.start_server",
	"asyncio.open_unix_connection", "datasets.load_dataset",
}

func network(c *checker) {
	c.useRule("network access", networkModules, []string{"urllib.parse"})
	for i := range c.p.calls {
		cl := &c.p.calls[i]
		switch last(cl.callee.path) {
		case "from_pretrained":
			c.add(cl.st, cl.callee.line, "calls %s, which downloads weights (network access)", last(cl.callee.path))
		case "create_connection", "sock_connect", "create_server", "getaddrinfo":
			if under(cl.callee.path, "asyncio") || under(cl.callee.path, "loop") || !cl.callee.known {
				c.add(cl.st, cl.callee.line, "calls %s (network access)", last(cl.callee.path))
			}
		}
	}
}

var subprocessModules = []string{
	"subprocess", "_posixsubprocess", "pty", "multiprocessing", "torch.multiprocessing", "pexpect", "sh", "plumbum",
	"os.system", "os.popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp", "os.kill", "os.killpg",
	"os.startfile", "os.execl", "os.execle", "os.execlp", "os.execlpe", "os.execv", "os.execve", "os.execvp",
	"os.execvpe", "os.spawnl", "os.spawnle", "os.spawnlp", "os.spawnlpe", "os.spawnv", "os.spawnve", "os.spawnvp",
	"os.spawnvpe", "os.pidfd_open", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
	"concurrent.futures.ProcessPoolExecutor", "platform.popen", "signal.pthread_kill",
}

func subprocessRule(c *checker) {
	c.useRule("starting or signalling processes", subprocessModules, nil)
}

var nativeModules = []string{
	"ctypes", "_ctypes", "cffi", "_cffi_backend", "cppyy", "pyximport", "Cython", "cython",
	"torch.utils.cpp_extension", "torch.ops.load_library", "torch.classes.load_library",
	"importlib.machinery.ExtensionFileLoader", "imp.load_dynamic", "torch.cuda.memory.CUDAPluggableAllocator",
	"torch.cuda.CUDAPluggableAllocator",
}

func nativeCode(c *checker) {
	c.useRule("native code", nativeModules, nil)
}

// ---------------------------------------------------------------------------
// dynamic-code

// utf8Codings are the source encodings that read a file as what it looks
// like; others (raw_unicode_escape, utf-7, ...) can turn a comment into code.
var utf8Codings = []string{"utf-8", "utf8", "utf-8-sig", "ascii", "us-ascii", "latin-1", "latin1", "iso-8859-1", "iso8859-1", "iso-latin-1", "l1", "cp1252"}

// sensitiveModules are the modules on which getattr with a computed name
// hides what is used.
var sensitiveModules = []string{
	"os", "sys", "builtins", "time", "datetime", "importlib", "subprocess", "socket", "ctypes", "gc", "inspect",
	"shutil", "io", "pathlib", "pty", "multiprocessing", "signal", "threading", "types", "marshal", "runpy",
	"codecs", "frontier_harness", "torch.cuda", "torch._dynamo", "torch._inductor", "torch.utils.cpp_extension",
	"torch.hub", "unittest",
}

var codeLoaders = []string{
	"marshal.loads", "marshal.load", "types.CodeType", "types.FunctionType", "runpy", "imp.load_source",
	"imp.load_module", "importlib.util.spec_from_file_location", "importlib.util.spec_from_loader",
	"importlib.util.module_from_spec", "importlib.machinery.SourceFileLoader",
	"importlib.machinery.SourcelessFileLoader", "zipimport", "importlib.invalidate_caches", "code.InteractiveInterpreter",
	"code.InteractiveConsole", "code.interact", "codeop", "pdb", "timeit", "cProfile.run", "cProfile.runctx",
	"profile.run", "profile.runctx", "doctest",
}

var decoders = []string{"base64", "codecs", "zlib", "bz2", "lzma", "binascii", "b64decode", "decode", "fromhex", "decompress", "rot13", "bytes"}

func dynamicCode(c *checker) {
	if c.p.coding != "" && !slices.Contains(utf8Codings, strings.ReplaceAll(strings.ToLower(c.p.coding), "_", "-")) {
		line := 1
		if codingRe.Match(c.p.sourceLine(2)) && !codingRe.Match(c.p.sourceLine(1)) {
			line = 2
		}
		c.add(nil, line, "declares the source encoding %s, which can turn what reads as comments or strings into code", c.p.coding)
	}
	for i := range c.p.calls {
		cl := &c.p.calls[i]
		if !cl.callee.known {
			continue
		}
		p := cl.callee.path
		switch p {
		case "builtins.exec", "builtins.eval", "builtins.compile":
			a := cl.arg(0, "source")
			if a == nil {
				break
			}
			if _, ok := literal(a.toks); ok {
				break // read as code by the analysis
			}
			what := "code built at run time"
			for _, t := range a.toks {
				if t.kind == tName && slices.Contains(decoders, t.text) {
					what = "code decoded at run time (" + t.text + ")"
					break
				}
			}
			c.add(cl.st, cl.callee.line, "runs %s with %s, which the rules cannot read", what, last(p))
		case "builtins.__import__", "importlib.import_module", "importlib.__import__":
			a := cl.arg(0, "name")
			if a == nil {
				break
			}
			if _, ok := literal(a.toks); !ok {
				c.add(cl.st, cl.callee.line, "imports a module whose name is computed (%s)", last(p))
			}
		case "builtins.getattr", "builtins.setattr", "builtins.delattr":
			if len(cl.args) < 2 {
				break
			}
			if _, ok := literal(cl.args[1].toks); ok {
				break
			}
			if x, ok := c.p.argChain(cl.st, cl.args[0]); ok && x.known && !strings.ContainsAny(x.path, "()[]") && underAny(x.path, sensitiveModules...) {
				c.add(cl.st, cl.callee.line, "%s on module %s with a computed name, which hides what it uses", last(p), x.path)
			}
		}
	}
	for _, r := range c.p.refs {
		if !r.known {
			continue
		}
		switch {
		case !r.called && slices.Contains([]string{"builtins.exec", "builtins.eval", "builtins.__import__", "importlib.import_module"}, plainPath(r.path)):
			// (compile as a value is harmless: its code objects still need exec or eval)
			c.add(r.st, r.line, "takes %s as a value, which hides where it is called", strings.TrimPrefix(plainPath(r.path), "builtins."))
		case r.path == "builtins" || under(r.path, "builtins.__dict__"):
			if r.st != nil && hasName(r.st.toks, "__builtins__") {
				c.add(r.st, r.line, "uses __builtins__, which reaches every builtin by a computed name")
			} else if m, ok := namespaceOf(r.chain); ok && m == "builtins" {
				c.add(r.st, r.line, "reaches into the namespace of builtins, which holds exec and eval by name")
			}
		}
	}
	c.useRule("loads code the rules cannot read", codeLoaders, nil)
	var values []string
	for _, m := range sensitiveModules {
		if !slices.Contains([]string{"time", "datetime", "torch.cuda", harnessModule}, m) {
			values = append(values, m) // those are the clock's and the harness's rules'
		}
	}
	c.moduleValues(values, "uses the module %s as a value, which hides what is done with it")
	for _, s := range c.p.strs {
		low := strings.ToLower(s.text)
		for _, ext := range []string{".py", ".pyc", ".so", ".pth"} {
			if strings.HasSuffix(low, ext) && writtenHere(c.p, s) {
				c.add(s.st, s.line, "writes a file named %q, code it could then import", s.text)
				break
			}
		}
	}
}

// writtenHere reports whether a string literal is the path argument of a
// call that writes.
func writtenHere(p *program, s strLit) bool {
	if p.callsOf == nil {
		p.callsOf = map[*stmt][]int{}
		for i := range p.calls {
			p.callsOf[p.calls[i].st] = append(p.callsOf[p.calls[i].st], i)
		}
	}
	for _, i := range p.callsOf[s.st] {
		cl := &p.calls[i]
		if !cl.callee.known {
			continue
		}
		var a *arg
		switch {
		case slices.Contains(openers, cl.callee.path):
			if writeMode(cl.arg(1, "mode")) {
				a = cl.arg(0, "file")
			}
		case writers[cl.callee.path] != nil:
			for _, pa := range writers[cl.callee.path] {
				if x := cl.arg(pa.i, pa.kw); x != nil {
					a = x
				}
			}
		case underAny(cl.callee.path, pathlibRoots...) && slices.Contains(pathlibWriters, last(cl.callee.path)):
			for _, pl := range cl.recv {
				for _, t := range pl.toks {
					if t.kind == tString && t.text == s.text {
						return true
					}
				}
			}
		}
		if a == nil {
			continue
		}
		for _, t := range a.toks {
			if t.kind == tString && strings.HasSuffix(s.text, t.text) {
				return true
			}
		}
	}
	return false
}
