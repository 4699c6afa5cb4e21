package verify

import (
	"slices"
	"strings"
)

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
