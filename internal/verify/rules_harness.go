package verify

import (
	"path"
	"slices"
	"strings"
)

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
