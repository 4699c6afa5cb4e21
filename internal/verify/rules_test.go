package verify

import (
	"strings"
	"testing"
)

// ruleCase is one snippet for one rule: line is the 1-based line of the
// expected finding, 0 when the snippet must pass; want is a substring of
// the finding's message.
type ruleCase struct {
	name string
	src  string
	line int
	want string
}

func runRuleCases(t *testing.T, rule string, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.TrimPrefix(c.src, "\n")
			fs, err := Inspect([]byte(src), Options{Rules: []string{rule}, ValFile: "tiny_val_000000.bin"})
			if err != nil {
				t.Fatal(err)
			}
			if c.line == 0 {
				for _, f := range fs {
					t.Errorf("unexpected finding: %s", f)
				}
				return
			}
			if len(fs) == 0 {
				t.Fatalf("no finding; want one on line %d containing %q", c.line, c.want)
			}
			f := fs[0]
			if f.Rule != rule || f.Line != c.line || !strings.Contains(f.Message, c.want) || f.Severity != "invalid" {
				t.Errorf("got %s (severity %s); want %s on line %d containing %q", f, f.Severity, rule, c.line, c.want)
			}
		})
	}
}

func TestCompileOptions(t *testing.T) {
	runRuleCases(t, "compile-options", []ruleCase{
		{"plain compile", "import torch\nmodel = torch.compile(model)\n", 0, ""},
		{"dynamic and fullgraph", "import torch\nmodel = torch.compile(model, dynamic=False, fullgraph=True)\n", 0, ""},
		{"default mode and backend", "import torch\nm = torch.compile(m, mode='default', backend=\"inductor\")\nm2 = torch.compile(m, mode=None)\n", 0, ""},
		{"decorator without options", "import torch\n@torch.compile\ndef f(x):\n    return x\n", 0, ""},
		{"reading a config", "import torch\nn = torch._dynamo.config.cache_size_limit\n", 0, ""},
		{"re.compile", "import re\nr = re.compile('x', re.I)\n", 0, ""},
		{"option names in comments and strings", "import torch\n# torch._inductor.config.max_autotune = True\nprint(\"torch.compile(model, mode='max-autotune')\")\n", 0, ""},
		{"mode", "import torch\nmodel = torch.compile(model, mode=\"max-autotune\")\n", 2, `mode="max-autotune"`},
		{"mode on a later line", "import torch\nmodel = torch.compile(\n    model,\n    mode='max-autotune-no-cudagraphs',\n)\n", 2, "max-autotune-no-cudagraphs"},
		{"options", "import torch\nmodel = torch.compile(model, options={'triton.cudagraphs': True})\n", 2, "options="},
		{"backend", "import torch\nmodel = torch.compile(model, backend='cudagraphs')\n", 2, "backend="},
		{"kwargs splat", "import torch\nkw = {}\nmodel = torch.compile(model, **kw)\n", 3, "**args"},
		{"decorator with mode", "import torch\n@torch.compile(mode='reduce-overhead')\ndef f(x):\n    return x\n", 2, "reduce-overhead"},
		{"aliased compile", "from torch import compile as tc\nm = tc(m, mode='max-autotune')\n", 2, "mode="},
		{"module method", "model.compile(mode='max-autotune')\n", 1, "mode="},
		{"partial", "import functools, torch\nc = functools.partial(torch.compile, mode='max-autotune')\n", 2, "mode="},
		{"inductor config", "import torch\ntorch._inductor.config.coordinate_descent_tuning = True\n", 2, "torch._inductor.config.coordinate_descent_tuning"},
		{"inductor config alias", "import torch._inductor.config as config\nconfig.max_autotune = True\n", 2, "torch._inductor.config.max_autotune"},
		{"from import config", "from torch._inductor import config as ic\nic.triton.cudagraphs = True\n", 2, "torch._inductor.config.triton.cudagraphs"},
		{"dynamo alias", "import torch._dynamo as dynamo\ndynamo.config.recompile_limit = 64\n", 2, "torch._dynamo.config.recompile_limit"},
		{"setattr on config", "import torch\nsetattr(torch._inductor.config, 'max_autotune', True)\n", 2, "max_autotune"},
		{"config patch", "import torch\nwith torch._inductor.config.patch(max_autotune=True):\n    pass\n", 2, "patch"},
		{"environment variable", "import os\nos.environ['TORCHINDUCTOR_MAX_AUTOTUNE'] = '1'\n", 2, "TORCHINDUCTOR_MAX_AUTOTUNE"},
		{"patched inductor internals", "import torch\ntorch._inductor.codecache.trace_structured = lambda *a, **k: None\n", 2, "torch._inductor.codecache"},
		{"config as a value", "import torch._inductor.config as cfgmod\ndef f(m):\n    m.max_autotune = True\nf(cfgmod)\n", 4, "as a value"},
		{"parameter shadows the alias", "import torch._inductor.config as config\nclass GPT:\n    def __init__(self, config):\n        config.n_layer = 12\n        self.config = config\n", 0, ""},
	})
}

func TestValData(t *testing.T) {
	runRuleCases(t, "val-data", []ruleCase{
		{"train files and cfg.val_seq_len", "import frontier_harness as fh\ncfg = fh.config()\nx = fh.read_shard(cfg.train_files[0])\nT = cfg.val_seq_len\nB = cfg.val_batch_seqs\n", 0, ""},
		{"val in other words", "best_val_loss = 1.0\nd = {'val_loss': 1, 'interval_0001': 2}\nprint(f'{best_val_loss} best_val_loss')\n", 0, ""},
		{"val shard in a comment", "# reads fineweb_val_000000.bin? no\nx = 1\n", 0, ""},
		{"listing the current folder", "import os, glob\nfiles = os.listdir('.')\nckpts = glob.glob('*.pt')\n", 0, ""},
		{"val shard literal", "import numpy as np\nx = np.fromfile('data/fineweb_val_000000.bin', dtype=np.uint16)\n", 2, "validation shard"},
		{"val glob", "import glob\nfiles = glob.glob(\"fineweb_val_*.bin\")\n", 2, "validation shard"},
		{"the track's val file", "name = 'tiny_val_000000'\n", 1, "validation shard"},
		{"joined literal", "name = 'fineweb_' + 'val_' + str(0).zfill(6)\n", 1, "fineweb_val_"},
		{"implicit concatenation", "name = ('fineweb_'\n        'val_000000.bin')\n", 1, "fineweb_val_000000.bin"},
		{"escaped literal", "name = 'fineweb_\\x76al_000000.bin'\n", 1, "validation shard"},
		{"f-string", "i = 0\nname = f'fineweb_val_{i:06d}.bin'\n", 2, "validation shard"},
		{"cfg.val_file", "import frontier_harness as fh\ncfg = fh.config()\np = cfg.val_file\n", 3, "cfg.val_file"},
		{"cfg val without alias", "import frontier_harness as fh\np = fh.config().val_files\n", 2, "cfg.val_files"},
		{"listing the data folder", "import os\nimport frontier_harness as fh\ncfg = fh.config()\nd = os.path.dirname(cfg.train_files[0])\n", 4, "os.path.dirname"},
		{"glob of a computed folder", "import glob\nfiles = glob.glob(folder + '/*')\n", 2, "glob.glob"},
		{"pathlib listing", "from pathlib import Path\nfor p in Path('/data').iterdir():\n    pass\n", 2, "Path.iterdir"},
		{"train to val", "p = files[0].replace('train', 'val')\n", 1, "turns a training path"},
		{"path surgery", "import frontier_harness as fh\nd = fh.config().train_files[0].rsplit('/', 1)[0]\n", 2, ".rsplit"},
		{"inherited descriptor", "import os\nhead = os.pread(fd, 12, 0)\n", 2, "os.pread"},
		{"proc fd", "import os\nfds = os.listdir('/proc/self/fd')\n", 2, "/proc/self/fd"},
		{"literal data path", "import numpy as np\nx = np.memmap('/data/fineweb10B/shard.bin')\n", 2, "did not give"},
		// Writing a file of its own is not reading data (the issue's
		// false positive); reading it back, appending to it or an unknown
		// mode still count.
		{"writing its own .bin", "import numpy as np\nwith open('x.bin', 'wb') as f:\n    f.write(b'')\nopen(file='y.bin', mode='xb')\nm = np.memmap('z.bin', np.uint8, 'w+', shape=(4,))\n", 0, ""},
		{"reading its own .bin", "import torch\nwith open('x.bin', 'rb') as f:\n    pass\nstate = torch.load('checkpoint.bin')\n", 0, ""},
		{"reading a .bin in a folder", "with open('shards/x.bin', 'rb') as f:\n    pass\n", 1, "did not give"},
		{"appending reads", "open('../x.bin', 'ab+')\n", 1, "did not give"},
		{"unknown mode", "open('data/x.bin', mode)\n", 1, "did not give"},
	})
}

func TestHarnessInternals(t *testing.T) {
	runRuleCases(t, "harness-internals", []ruleCase{
		{"the API", "import frontier_harness as fh\ncfg = fh.config()\nfh.train_begin()\nfor step in fh.steps(10):\n    fh.step(step, tokens=1)\nfh.finish(f)\nprint(fh.__name__)\n", 0, ""},
		{"torch backends and stdout", "import sys, torch\ntorch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.benchmark = True\nsys.stdout = open('out.txt', 'w')\n", 0, ""},
		{"own attributes", "class A: pass\na = A()\na.x = 1\nself_x = {}\nimport os\nos.environ['X'] = '1'\n", 0, ""},
		{"private attribute", "import frontier_harness as fh\nh = fh._H\n", 2, "fh._H"},
		{"private attribute through an alias", "import frontier_harness\nh = frontier_harness\nh._H._clock = None\n", 3, "fh._H"},
		{"replacing a function", "import frontier_harness as fh\nfh.step = lambda *a, **k: None\n", 2, "replaces fh.step"},
		{"setattr on the harness", "import frontier_harness as fh\nsetattr(fh, 'validate', f)\n", 2, "replaces fh.validate"},
		{"changing cfg", "import frontier_harness as fh\ncfg = fh.config()\ncfg.bos_id = 3\n", 3, "cfg.bos_id"},
		{"sys.modules", "import sys\nh = sys.modules['frontier_harness']\n", 2, "sys.modules"},
		{"boot", "import frontier_boot\n", 1, "frontier_boot"},
		{"private import", "from frontier_harness import _H\n", 1, "frontier_harness._H"},
		{"replacing the loss", "import torch.nn.functional as F\nF.cross_entropy = my_loss\n", 2, "torch.nn.functional.cross_entropy"},
		{"replacing a torch method", "import torch\ntorch.Tensor.item = lambda self: 0.0\n", 2, "torch.Tensor.item"},
		{"the config file", "import json\nc = json.load(open('config.json'))\n", 2, "config.json"},
		{"the config variable", "import os\np = os.environ['FRONTIER_CONFIG']\n", 2, "FRONTIER_CONFIG"},
		{"module namespace", "import torch.nn.functional as F\nF.__dict__['cross_entropy'] = f\n", 2, "namespace"},
		{"mock", "from unittest import mock\n", 1, "unittest.mock"},
		{"the harness as a value", "import frontier_harness as fh\npatch(fh)\n", 2, "as a value"},
	})
}

func TestIntrospection(t *testing.T) {
	runRuleCases(t, "introspection", []ruleCase{
		{"gc.collect", "import gc\ngc.collect()\n", 0, ""},
		{"inspect in a string", "s = 'inspect.stack()'\n# sys._getframe(1)\n", 0, ""},
		{"gc.get_objects", "import gc\nfor o in gc.get_objects():\n    pass\n", 2, "gc.get_objects"},
		{"gc.get_referrers", "import gc as g\nr = g.get_referrers(x)\n", 2, "gc.get_referrers"},
		{"inspect.stack", "import inspect\nframes = inspect.stack()\n", 2, "inspect.stack"},
		{"currentframe from-import", "from inspect import currentframe\nf = currentframe()\n", 1, "inspect.currentframe"},
		{"sys._getframe", "import sys\nf = sys._getframe(1)\n", 2, "sys._getframe"},
		{"settrace", "import sys\nsys.settrace(tracer)\n", 2, "sys.settrace"},
		{"f_back", "def f(frame):\n    return frame.f_back.f_locals\n", 2, "f_back"},
		{"globals of a function", "g = fn.__globals__\n", 1, "__globals__"},
		{"tb_frame", "try:\n    1/0\nexcept Exception as e:\n    fr = e.__traceback__.tb_frame\n", 4, "tb_frame"},
		{"subclasses", "cls = object.__subclasses__()\n", 1, "__subclasses__"},
		{"getattr of a frame attribute", "x = getattr(frame, 'f_globals')\n", 1, "f_globals"},
	})
}

func TestClockPatch(t *testing.T) {
	runRuleCases(t, "clock-patch", []ruleCase{
		{"reading the clock", "import time, torch\nt0 = time.perf_counter()\nt1 = time.time()\ntorch.cuda.synchronize()\ne = torch.cuda.Event(enable_timing=True)\n", 0, ""},
		{"local rebinding of a from-import", "from time import perf_counter\nperf_counter = lambda: 0.0\n", 0, ""},
		{"a local variable named time", "def f():\n    time = 3\n    return time\n", 0, ""},
		{"a loop variable shadows an alias", "import time as t\nfor t in tensors:\n    t.grad = None\n", 0, ""},
		{"with-as shadows an alias", "import time as t\nwith timer() as t:\n    t.elapsed = 0\n", 0, ""},
		{"module through a loop", "for tm in [__import__('time')]:\n    tm.perf_counter = f\n", 1, "as a value"},
		{"perf_counter", "import time\ntime.perf_counter = lambda: 0.0\n", 2, "time.perf_counter"},
		{"time.time", "import time\ntime.time = fake\n", 2, "time.time"},
		{"alias", "import time as t\nt.perf_counter = lambda: 0.0\n", 2, "time.perf_counter"},
		{"assigned alias", "import time\nclock = time\nclock.perf_counter = f\n", 3, "time.perf_counter"},
		{"alias used before the import", "def cheat():\n    t.perf_counter = f\nimport time as t\n", 2, "time.perf_counter"},
		{"synchronize", "import torch\ntorch.cuda.synchronize = lambda *a: None\n", 2, "torch.cuda.synchronize"},
		{"from torch import cuda", "from torch import cuda\ncuda.synchronize = noop\n", 2, "torch.cuda.synchronize"},
		{"event", "import torch\ntorch.cuda.Event = FakeEvent\n", 2, "torch.cuda.Event"},
		{"event method", "import torch\ntorch.cuda.Event.elapsed_time = lambda self, other: 1.0\n", 2, "torch.cuda.Event.elapsed_time"},
		{"setattr", "import time\nsetattr(time, 'perf_counter', f)\n", 2, "time.perf_counter"},
		{"setattr multi-line", "import torch\nsetattr(\n    torch.cuda,\n    'synchronize',\n    f,\n)\n", 2, "torch.cuda.synchronize"},
		{"setattr computed", "import time\nsetattr(time, name, f)\n", 2, "time.*"},
		{"__import__", "__import__('time').perf_counter = f\n", 1, "time.perf_counter"},
		{"mock.patch", "from unittest import mock\nwith mock.patch('time.perf_counter', f):\n    pass\n", 2, "time.perf_counter"},
		{"namespace", "import time\ntime.__dict__['time'] = f\n", 2, "namespace"},
		{"module passed", "import time\npatch_all(time)\n", 2, "as a value"},
		{"module __setattr__", "import torch\ntorch.cuda.__setattr__('synchronize', f)\n", 2, "torch.cuda.synchronize"},
		{"object.__setattr__", "import time\nobject.__setattr__(time, 'time', f)\n", 2, "time.time"},
		{"globals lookup", "import time\nglobals()['time'].perf_counter = f\n", 2, "time.perf_counter"},
		{"sys.modules lookup", "import sys\nsys.modules['time'].perf_counter = f\n", 2, "time.perf_counter"},
		{"in a function with a local import", "def cheat():\n    import time as clock\n    clock.monotonic = f\n", 3, "time.monotonic"},
		{"module in brackets", "import time\n(time).perf_counter = f\n", 2, "as a value"},
		{"one line compound", "import time\nif True: time.perf_counter = f\n", 2, "time.perf_counter"},
		{"after a semicolon", "import time; time.time = f\n", 1, "time.time"},
		{"exec'd literal", "exec('import time\\ntime.time = f')\n", 1, "time.time"},
		{"full-width name", "import time\ntime.ｐｅｒｆ_counter = f\n", 2, "time.perf_counter"},
	})
}

func TestNetwork(t *testing.T) {
	runRuleCases(t, "network", []ruleCase{
		{"urllib.parse", "from urllib.parse import urlparse\n", 0, ""},
		{"a string", "s = 'import socket'\n", 0, ""},
		{"socket", "import socket\n", 1, "socket"},
		{"urllib", "import urllib.request\n", 1, "urllib.request"},
		{"http.client", "from http.client import HTTPConnection\n", 1, "http.client"},
		{"requests", "import requests as r\n", 1, "requests"},
		{"aiohttp in a function", "def f():\n    import aiohttp\n", 2, "aiohttp"},
		{"__import__ literal", "s = __import__('socket')\n", 1, "socket"},
		{"import_module literal", "import importlib\ns = importlib.import_module('http.client')\n", 2, "http.client"},
		{"torch.hub", "import torch\nm = torch.hub.load('a/b', 'c')\n", 2, "torch.hub"},
		{"from_pretrained", "m = AutoModel.from_pretrained('gpt2')\n", 1, "from_pretrained"},
	})
}

func TestSubprocess(t *testing.T) {
	runRuleCases(t, "subprocess", []ruleCase{
		{"threads and os.path", "import os, threading\nt = threading.Thread(target=f)\np = os.path.join('a', 'b')\n", 0, ""},
		{"subprocess", "import subprocess\n", 1, "subprocess"},
		{"os.system", "import os\nos.system('nvidia-smi')\n", 2, "os.system"},
		{"os.popen", "import os as o\nout = o.popen('ls').read()\n", 2, "os.popen"},
		{"execv", "import os\nos.execv('/bin/sh', ['sh'])\n", 2, "os.execv"},
		{"fork", "import os\nwhile True:\n    os.fork()\n", 3, "os.fork"},
		{"from os import system", "from os import system\n", 1, "os.system"},
		{"getattr literal", "import os\ngetattr(os, 'system')('ls')\n", 2, "os.system"},
		{"getattr joined literal", "import os\ngetattr(os, 'sys' + 'tem')('ls')\n", 2, "os.system"},
		{"pty", "import pty\n", 1, "pty"},
		{"multiprocessing", "import multiprocessing as mp\n", 1, "multiprocessing"},
		{"torch.multiprocessing", "import torch.multiprocessing as mp\n", 1, "torch.multiprocessing"},
		{"kill", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", 2, "os.kill"},
		{"f-string field", "x = f\"{__import__('os').system('id')}\"\n", 1, "os.system"},
	})
}

func TestNativeCode(t *testing.T) {
	runRuleCases(t, "native-code", []ruleCase{
		{"triton", "import triton\nimport triton.language as tl\n", 0, ""},
		{"ctypes", "import ctypes\n", 1, "ctypes"},
		{"from ctypes", "from ctypes import CDLL\n", 1, "ctypes"},
		{"cffi", "import cffi\n", 1, "cffi"},
		{"load_inline", "from torch.utils.cpp_extension import load_inline\n", 1, "torch.utils.cpp_extension"},
		{"load_inline through torch", "import torch.utils.cpp_extension\nm = torch.utils.cpp_extension.load_inline(name='m', cpp_sources=src)\n", 1, "torch.utils.cpp_extension"},
		{"load_library", "import torch\ntorch.ops.load_library('libx.so')\n", 2, "torch.ops.load_library"},
	})
}

func TestWriteOutside(t *testing.T) {
	runRuleCases(t, "write-outside", []ruleCase{
		{"relative writes", "import os, torch\nos.makedirs('logs', exist_ok=True)\nwith open(f'logs/{run_id}.txt', 'a') as f:\n    pass\ntorch.save(sd, 'ckpt.pt')\n", 0, ""},
		{"reading an absolute path", "with open('/proc/cpuinfo') as f:\n    pass\nopen('/etc/hostname', 'r')\n", 0, ""},
		{"null device", "import sys\nsys.stdout = open('/dev/null', 'w')\n", 0, ""},
		{"string replace of a slash", "name = key.replace('/', '_')\nopen(name, 'w')\n", 0, ""},
		{"absolute write", "with open('/tmp/x.txt', 'w') as f:\n    f.write('x')\n", 1, "/tmp/x.txt"},
		{"append mode keyword", "f = open(file='/var/log/x', mode='a')\n", 1, "/var/log/x"},
		{"unknown mode", "f = open('/etc/passwd', m)\n", 1, "/etc/passwd"},
		{"parent folder", "open('../results.txt', 'w')\n", 1, "../results.txt"},
		{"home", "open('~/x', 'x')\n", 1, "~/x"},
		{"f-string prefix", "open(f'/tmp/{name}.txt', 'w')\n", 1, "/tmp/"},
		{"join with absolute", "import os\nopen(os.path.join('/tmp', name), 'wb')\n", 2, "/tmp"},
		{"shutil", "import shutil\nshutil.copy('model.pt', '/tmp/model.pt')\n", 2, "/tmp/model.pt"},
		{"rmtree", "import shutil\nshutil.rmtree('/home')\n", 2, "/home"},
		{"os.rename", "import os\nos.rename('a', '../b')\n", 2, "../b"},
		{"pathlib", "from pathlib import Path\nPath('/tmp/x').write_text('x')\n", 2, "/tmp/x"},
		{"pathlib joinpath", "import pathlib\npathlib.Path('/tmp').joinpath('x').write_bytes(b)\n", 2, "/tmp"},
		{"pathlib relative", "from pathlib import Path\nPath('out').joinpath('x.txt').write_text('x')\n", 0, ""},
		{"torch.save", "import torch\ntorch.save(model.state_dict(), '/tmp/m.pt')\n", 2, "/tmp/m.pt"},
		{"numpy", "import numpy as np\nnp.save('/dev/shm/x.npy', a)\n", 2, "/dev/shm/x.npy"},
		{"chdir", "import os\nos.chdir('/')\n", 2, "working folder"},
		{"decoded path", "with open(bytes.fromhex('2f746d702f78').decode(), 'w') as f:\n    pass\n", 1, "decoded at run time (fromhex)"},
		{"cache variable", "import os\nd = os.environ['TRITON_CACHE_DIR']\n", 2, "TRITON_CACHE_DIR"},
		{"multi-line open", "f = open(\n    '/tmp/out',\n    'w',\n)\n", 1, "/tmp/out"},
	})
}

func TestDynamicCode(t *testing.T) {
	runRuleCases(t, "dynamic-code", []ruleCase{
		{"model.eval and torch.compile", "import torch\nmodel.eval()\nm = torch.compile(model)\nr = re.compile('x')\n", 0, ""},
		{"literal exec", "exec('x = 1')\n", 0, ""},
		{"getattr on an object", "import torch\nopt = getattr(torch.optim, name)\nv = getattr(args, key)\n", 0, ""},
		{"own function named eval", "def eval(x):\n    return x\ny = eval(z)\n", 0, ""},
		{"a variable named compile", "compile = args.compile\nif compile:\n    model = torch.compile(model)\n", 0, ""},
		{"a shadowing assignment does not hide exec", "if False:\n    exec = None\nexec(code)\n", 3, "exec"},
		{"utf-8 coding", "# -*- coding: utf-8 -*-\nx = 1\n", 0, ""},
		{"exec of a variable", "code = open('x.py').read()\nexec(code)\n", 2, "code built at run time"},
		{"eval of a variable", "y = eval(expr)\n", 1, "eval"},
		{"exec of decoded code", "import base64\nexec(base64.b64decode('aW1wb3J0IG9z'))\n", 2, "decoded at run time (base64)"},
		{"compile", "c = compile(src, '<x>', 'exec')\n", 1, "compile"},
		{"__import__ of a variable", "m = __import__(name)\n", 1, "computed"},
		{"import_module of a variable", "import importlib\nm = importlib.import_module('so' + x)\n", 2, "computed"},
		{"getattr on os", "import os\nf = getattr(os, name)\n", 2, "getattr on module os"},
		{"getattr on builtins", "import builtins\nf = getattr(builtins, name)\n", 2, "builtins"},
		{"exec as a value", "e = exec\n", 1, "takes exec as a value"},
		{"__builtins__", "f = __builtins__.__dict__['ex' + 'ec']\n", 1, "__builtins__"},
		{"marshal", "import marshal\nc = marshal.loads(data)\n", 2, "marshal.loads"},
		{"runpy", "import runpy\nrunpy.run_path('x.py')\n", 1, "runpy"},
		{"runpy from-import", "from runpy import run_path as rp\nrp('x.py')\n", 1, "imports runpy"},
		{"encoding trick", "# coding: raw_unicode_escape\nx = 1 # \\u000aimport os\n", 1, "raw_unicode_escape"},
		{"writing a module", "with open('helper.py', 'w') as f:\n    f.write(src)\n", 1, "helper.py"},
		{"f-string field", "s = f\"{eval(x)}\"\n", 1, "eval"},
		{"builtins namespace", "import builtins\nbuiltins.__dict__['ex' + 'ec'](code)\n", 2, "namespace of builtins"},
		{"attrgetter on os", "import os, operator\noperator.attrgetter('system')(os)('id')\n", 2, "module os as a value"},
		{"timeit runs strings", "import timeit\ntimeit.timeit('import os')\n", 1, "timeit"},
	})
}

// TestStringsAndComments checks that code-shaped text in comments and
// string literals triggers no rule that is about code.
func TestStringsAndComments(t *testing.T) {
	src := `"""Docstring: import socket; os.system('x'); time.perf_counter = f; exec(x)"""
import os
import time
# import subprocess; torch._inductor.config.max_autotune = True; eval(x); gc.get_objects()
msg = "sys._getframe(1) and ctypes and open('/tmp/x', 'w') and fh._H"
doc = '''
torch.cuda.synchronize = lambda: None
setattr(time, "time", f)
'''
t0 = time.perf_counter()
`
	fs, err := Inspect([]byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		t.Errorf("finding in a comment or string: %s", f)
	}
}

func TestUnknownRule(t *testing.T) {
	_, err := Inspect([]byte("x = 1\n"), Options{Rules: []string{"no-such-rule"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-rule") {
		t.Fatalf("err %v", err)
	}
}

func TestFindingsAreCapped(t *testing.T) {
	src := strings.Repeat("import socket\n", 200)
	fs, err := Inspect([]byte(src), Options{Rules: []string{"network"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != maxFindings+1 || !strings.Contains(fs[maxFindings].Message, "150 more") {
		t.Fatalf("%d findings, last %v", len(fs), fs[len(fs)-1])
	}
}

func TestReferenceStatementsAreAllowed(t *testing.T) {
	ref := []byte("import subprocess\nout = subprocess.run(['nvidia-smi'], capture_output=True)\n")
	cand := []byte("import subprocess\n\n# moved\nout = subprocess.run(['nvidia-smi'],\n                     capture_output=True)  # same call\nsubprocess.run(['curl', 'x'])\n")
	fs, err := Inspect(cand, Options{Rules: []string{"subprocess"}, Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Line != 6 || !strings.Contains(fs[0].Message, "curl") {
		t.Fatalf("findings %v; want only the new call on line 6", fs)
	}
	// A second copy of a reference statement is not covered by the first.
	twice := append(append([]byte(nil), ref...), "out = subprocess.run(['nvidia-smi'], capture_output=True)\n"...)
	fs, _ = Inspect(twice, Options{Rules: []string{"subprocess"}, Reference: ref})
	if len(fs) != 1 || fs[0].Line != 3 {
		t.Fatalf("findings %v; want the copy on line 3", fs)
	}
}
