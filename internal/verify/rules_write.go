package verify

import (
	"regexp"
	"slices"
	"strings"
)

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
