package verify

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

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
