"""frontier_state: what logits_fn needs, carried from training to a scorer.

The final validation is not served by the process that trained: a process
that trained can keep training, remember what it was asked and answer
accordingly. At fh.finish(logits_fn) the harness exports the state that
logits_fn reaches; frontier then ends the training process and starts a
scorer, a fresh process of the same program, which runs the program's setup
up to fh.train_begin(), imports the exported state into the objects it
built there, and answers the judge's calls with the same logits_fn. The
scorer never saw the training data nor what the training process was
asked, and it shares nothing writable with it.

What is carried is found by walking from logits_fn: the program's globals
its code names (and the code of the functions and classes it calls), its
closure cells and defaults, the objects those hold (attributes of the
program's own classes, lists, dicts, namespaces) and every module they
reach: parameters, buffers, tensor attributes and plain attributes (the
training flag among them) of every submodule. Each value is named by the
path it was reached by ("g.model#blocks.0%weight"); the scorer walks its
own logits_fn the same way and puts each value back at the same path,
tensors in place where the shape and type agree (so that tied weights stay
tied and views stay views).

Globals that logits_fn reaches and that the program made after
fh.train_begin() (an averaged model, a table counted in the clock) are
carried whole, pickled, when they can be. The rule this gives a program:
what logits_fn uses must exist when fh.train_begin() is called, or be
picklable; training may change its tensors and plain values, and add
attributes to objects that exist, but must not replace a module by another
kind of object.
"""

import collections
import functools
import io
import types

import numpy as np
import torch

VERSION = 1
MAX_LEAVES = 1_000_000  # values a walk may collect
MAX_DEPTH = 64
SCALARS = (bool, int, float, complex, str, bytes, type(None))


class StateError(Exception):
    """The state could not be carried: a message for the program's author."""

    code = "state"


MAX_PLAIN = 1_000_000  # elements of a container carried whole


def _plain(v, depth, budget=None):
    """v holds only data: numbers, text, tensors, arrays, and containers of
    those (at most MAX_PLAIN elements in all)."""
    if budget is None:
        budget = [MAX_PLAIN]
    budget[0] -= 1
    if budget[0] < 0 or depth > 16:
        return False
    if isinstance(v, (torch.Tensor, np.ndarray) + SCALARS):
        return True
    if isinstance(v, dict):
        return all(isinstance(k, SCALARS) and _plain(x, depth + 1, budget) for k, x in v.items())
    if isinstance(v, (list, tuple, set, frozenset, collections.deque)):
        return all(_plain(x, depth + 1, budget) for x in v)
    return False


def _program_function(fn, main):
    """fn is a plain function of the program (its code, not a library's)."""
    return isinstance(fn, types.FunctionType) and fn.__globals__ is main


def _program_class(cls, main):
    return isinstance(cls, type) and main.get("__name__") == getattr(cls, "__module__", None)


def _code_names(code, out):
    """The global names a code object and the code nested in it use."""
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


def _unwrap(m):
    """A compiled module (torch.compile) is its original module for paths:
    a program may compile inside the clock, after the scorer's setup point."""
    while type(m).__name__ == "OptimizedModule" and isinstance(getattr(m, "_orig_mod", None), torch.nn.Module):
        m = m._orig_mod
    return m


class Walk:
    """The values reachable from a function, by path. leaves maps a path to
    (value, container path, how, key): how is "global", "attr", "item",
    "cell" or "param" (a parameter or buffer of a module), and the
    container path names the object to set it on. objects maps the path of
    every object with settable parts to the object."""

    def __init__(self, main):
        self.main = main
        self.leaves = {}
        self.objects = {"g": main}
        self.seen = {}  # id -> path of tensors, arrays and objects already walked
        self.keep = []  # what seen's ids belong to, so they stay alive
        self.code_seen = set()

    # -- entry points -------------------------------------------------------

    def root(self, fn):
        self.objects["fn"] = fn
        self._value(fn, "fn", None, None, None, 0)
        return self

    # -- the walk -------------------------------------------------------------

    def _leaf(self, path, value, container, how, key):
        if len(self.leaves) >= MAX_LEAVES:
            raise StateError("logits_fn reaches more than %d values: keep its state in tensors and modules"
                             % MAX_LEAVES)
        self.leaves[path] = (value, container, how, key)

    def _once(self, obj, path):
        """True the first time obj is met; later meetings are aliases."""
        if id(obj) in self.seen:
            return False
        self.seen[id(obj)] = path
        self.keep.append(obj)
        return True

    def _value(self, v, path, container, how, key, depth):
        if depth > MAX_DEPTH:
            raise StateError("the state logits_fn reaches nests deeper than %d levels (at %s)" % (MAX_DEPTH, path))
        if isinstance(v, torch.Tensor):
            if self._once(v, path):
                self._leaf(path, v, container, how, key)
            return
        if isinstance(v, torch.nn.Module):
            if self._once(v, path):
                self._module(_unwrap(v), path, depth)
            return
        if isinstance(v, np.ndarray):
            if self._once(v, path):
                self._leaf(path, v, container, how, key)
            return
        if isinstance(v, SCALARS) or isinstance(v, (frozenset,)) and all(isinstance(x, SCALARS) for x in v):
            self._leaf(path, v, container, how, key)
            return
        if isinstance(v, (types.ModuleType, torch.dtype, torch.device)) or v is Ellipsis:
            return
        if isinstance(v, types.FunctionType):
            if _program_function(v, self.main) and v.__code__ not in self.code_seen:
                self.code_seen.add(v.__code__)
                self._function(v, path, depth)
            return
        if isinstance(v, types.MethodType):
            self._value(v.__self__, path + ".__self__", None, None, None, depth + 1)
            self._value(v.__func__, path + ".__func__", None, None, None, depth + 1)
            return
        if isinstance(v, functools.partial):
            self._value(v.func, path + ".func", None, None, None, depth + 1)
            for i, a in enumerate(v.args):
                self._value(a, "%s.args[%d]" % (path, i), None, None, None, depth + 1)
            for k in sorted(v.keywords):
                self._value(v.keywords[k], "%s.keywords[%r]" % (path, k), None, None, None, depth + 1)
            return
        if isinstance(v, type):
            if _program_class(v, self.main) and self._once(v, path):
                self._class(v, path, depth)
            return
        # Containers of the language (dict and list and their subclasses:
        # OrderedDict, defaultdict, Counter, deque), not other libraries'
        # mappings (os.environ is one). One that holds only data (numbers,
        # text, tensors, arrays) is carried whole: its length may change.
        if isinstance(v, (list, tuple, dict, set, collections.deque)) and container is not None and _plain(v, 0):
            if self._once(v, path):
                self._leaf(path, v, container, how, key)
            return
        if isinstance(v, (list, collections.deque)):
            if self._once(v, path):
                self.objects[path] = v
                for i, x in enumerate(v):
                    self._value(x, "%s[%d]" % (path, i), path, "item", i, depth + 1)
            return
        if isinstance(v, tuple):
            for i, x in enumerate(v):
                # A tuple cannot be changed: its tensors are put back in place.
                self._value(x, "%s[%d]" % (path, i), None, None, None, depth + 1)
            return
        if isinstance(v, dict):
            if self._once(v, path):
                self.objects[path] = v
                for k in sorted(v, key=repr):
                    self._value(v[k], "%s[%r]" % (path, k), path, "item", k, depth + 1)
            return
        if isinstance(v, types.SimpleNamespace) or _program_class(type(v), self.main):
            if self._once(v, path):
                self._object(v, path, depth)
            return
        # Other libraries' objects (an optimizer, a generator, a file) are
        # not state the scorer can take: logits_fn must not depend on them.

    def _function(self, fn, path, depth):
        for name in sorted(_code_names(fn.__code__, set())):
            if name in self.main and not name.startswith("__"):
                self._value(self.main[name], "g." + name, "g", "global", name, depth + 1)
        for i, cell in enumerate(fn.__closure__ or ()):
            try:
                x = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            cpath = "%s.<cell%d>" % (path, i)
            self.objects[cpath] = cell
            self._value(x, cpath, cpath, "cell", None, depth + 1)
        for i, d in enumerate(fn.__defaults__ or ()):
            self._value(d, "%s.<default%d>" % (path, i), None, None, None, depth + 1)
        for k in sorted(fn.__kwdefaults__ or {}):
            self._value(fn.__kwdefaults__[k], "%s.<kwdefault %s>" % (path, k), None, None, None, depth + 1)

    def _class(self, cls, path, depth):
        """The program's class: the globals its methods use, and its data."""
        for c in cls.__mro__:
            if not _program_class(c, self.main):
                continue
            for name in sorted(vars(c)):
                x = vars(c)[name]
                if isinstance(x, (staticmethod, classmethod)):
                    x = x.__func__
                if isinstance(x, property):
                    for f in (x.fget, x.fset):
                        if f is not None:
                            self._value(f, "%s.%s" % (path, name), None, None, None, depth + 1)
                    continue
                if isinstance(x, types.FunctionType):
                    self._value(x, "%s.%s" % (path, name), None, None, None, depth + 1)
                elif not name.startswith("__"):
                    self.objects[path] = c
                    self._value(x, "%s.%s" % (path, name), path, "attr", name, depth + 1)

    def _object(self, obj, path, depth):
        self.objects[path] = obj
        self._value(type(obj), "%s.<class>" % path, None, None, None, depth + 1)
        for name in sorted(vars(obj)):
            self._value(vars(obj)[name], "%s.%s" % (path, name), path, "attr", name, depth + 1)

    def _module(self, m, path, depth):
        for sub_name, sub in m.named_modules(remove_duplicate=False):
            sub = _unwrap(sub)
            sp = path + "#" + sub_name if sub_name else path
            self.objects[sp] = sub
            self._value(type(sub), sp + ".<class>", None, None, None, depth + 1)
            for pname, p in list(sub.named_parameters(recurse=False)) + list(sub.named_buffers(recurse=False)):
                if p is not None and self._once(p, sp + "%" + pname):
                    self._leaf(sp + "%" + pname, p, sp, "param", pname)
            if isinstance(sub, torch.jit.ScriptModule):
                self._leaf(sp + ".training", sub.training, sp, "attr", "training")
                continue
            for name in sorted(vars(sub)):
                if name.startswith("_"):
                    continue
                x = vars(sub)[name]
                if isinstance(x, torch.nn.Module):
                    continue  # a submodule: walked as one
                self._value(x, "%s.%s" % (sp, name), sp, "attr", name, depth + 1)


# ---------------------------------------------------------------------------
# Export (the training process) and import (the scorer)


def describe(fn, begin_fn, main):
    """How the scorer finds the function to serve with."""
    if fn is begin_fn and fn is not None:
        return {"kind": "train_begin"}
    if _program_function(fn, main) and main.get(fn.__name__) is fn:
        return {"kind": "global", "name": fn.__name__}
    if isinstance(fn, types.MethodType):
        for name in sorted(main):
            if main[name] is fn.__self__ and not name.startswith("__"):
                return {"kind": "method", "global": name, "name": fn.__func__.__name__}
    raise StateError("fh.finish(logits_fn) needs the function passed to fh.train_begin(), a function defined at "
                     "the program's top level, or a method of an object a global names: the scorer, a fresh process "
                     "of the program, must find it after its setup (got %r)" % (fn,))


def export(fn, begin_fn, begin_names, main, f, limit):
    """Write the state fn reaches to the file object f (torch.save); returns
    the number of values and the bytes of tensors. limit bounds the bytes.
    Globals fn reaches that did not exist at fh.train_begin() (begin_names)
    are carried whole, pickled, when they can be: the scorer has not made
    them."""
    how = describe(fn, begin_fn, main)
    walk = Walk(main).root(fn)
    size = 0
    made = {}
    for path in walk.leaves:
        name = path[2:].split(".", 1)[0].split("#", 1)[0].split("[", 1)[0] if path.startswith("g.") else None
        if name and name not in begin_names and name not in made and name in main:
            buf = io.BytesIO()
            try:
                torch.save(main[name], buf)
            except Exception:  # not picklable: the scorer says what it lacks
                continue
            made[name] = buf.getvalue()
            size += len(made[name])
    leaves = {}
    for path, (v, container, kind, key) in walk.leaves.items():
        if isinstance(v, torch.Tensor):
            v = v.detach()
            size += v.numel() * v.element_size()
        elif isinstance(v, np.ndarray):
            v = v.copy()
            size += v.nbytes
        leaves[path] = (v, container, kind, key)
    if limit and size > limit:
        raise StateError("the state logits_fn reaches holds %.1f MiB of tensors, over the limit of %.1f MiB"
                         % (size / 2 ** 20, limit / 2 ** 20))
    torch.save({"version": VERSION, "fn": how, "leaves": leaves, "globals": made}, f)
    return len(leaves), size


def resolve(desc, begin_fn, main):
    """The scorer's function to serve with, as the export describes it."""
    kind = desc.get("kind")
    if kind == "train_begin":
        if begin_fn is None:
            raise StateError("the training process served the final validation with the function it passed to "
                             "fh.train_begin(), but the scorer's fh.train_begin() got none")
        return begin_fn
    if kind == "global":
        fn = main.get(desc.get("name"))
        if not callable(fn):
            raise StateError("fh.finish() was called with %s, which is not defined when fh.train_begin() is "
                             "called: define logits_fn before fh.train_begin()" % desc.get("name"))
        return fn
    if kind == "method":
        obj = main.get(desc.get("global"))
        fn = getattr(obj, desc.get("name") or "", None)
        if not callable(fn):
            raise StateError("fh.finish() was called with %s.%s, which does not exist when fh.train_begin() is "
                             "called" % (desc.get("global"), desc.get("name")))
        return fn
    raise StateError("unknown logits_fn description %r" % (desc,))


def _put_tensor(cur, new):
    new = new.to(cur.device)
    with torch.no_grad():
        if cur.shape == new.shape and cur.dtype == new.dtype:
            cur.copy_(new)
        else:
            cur.data = new


def _set(walk, container, how, key, value):
    obj = walk.objects.get(container)
    if obj is None:
        return False
    if how == "global":
        obj[key] = value
    elif how == "attr":
        if key == "training" and isinstance(obj, torch.nn.Module):
            obj.train(bool(value))
        else:
            setattr(obj, key, value)
    elif how == "item":
        try:
            obj[key] = value
        except (IndexError, TypeError):
            return False
    elif how == "cell":
        obj.cell_contents = value
    elif how == "param":
        if not isinstance(obj, torch.nn.Module):
            return False
        if isinstance(value, torch.nn.Parameter) or key in obj._parameters:
            obj.register_parameter(key, torch.nn.Parameter(value, requires_grad=False))
        else:
            obj.register_buffer(key, value)
    else:
        return False
    return True


def restore(f, begin_fn, main, device):
    """Read an export from the file object f into the program's objects;
    returns the function to serve with."""
    doc = torch.load(f, map_location=device)
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise StateError("the exported state is not one this harness reads")
    for name, blob in (doc.get("globals") or {}).items():
        if name not in main:
            main[name] = torch.load(io.BytesIO(blob), map_location=device)
    fn = resolve(doc.get("fn") or {}, begin_fn, main)
    walk = Walk(main).root(fn)
    missing = []
    # Parents before children: a module's training flag before its
    # submodules' (train() recurses).
    for path in sorted(doc["leaves"], key=lambda p: (p.count("#") + p.count("."), p)):
        value, container, how, key = doc["leaves"][path]
        cur = walk.leaves.get(path)
        if cur is not None and isinstance(cur[0], torch.Tensor) and isinstance(value, torch.Tensor):
            _put_tensor(cur[0], value)
            continue
        if cur is not None and isinstance(cur[0], np.ndarray) and isinstance(value, np.ndarray) \
                and cur[0].shape == value.shape and cur[0].dtype == value.dtype and cur[0].flags.writeable:
            cur[0][...] = value
            continue
        if container is None or not _set(walk, container, how, key, value):
            if isinstance(value, (torch.Tensor, np.ndarray)) or cur is None:
                missing.append(path)
    extra = [p for p, (v, _, _, _) in walk.leaves.items() if p not in doc["leaves"] and isinstance(v, torch.Tensor)]
    if missing or extra:
        parts = []
        if missing:
            parts.append("at fh.finish() logits_fn reached %d values the program does not have at fh.train_begin() "
                         "(%s)" % (len(missing), ", ".join(_show(p) for p in missing[:5])))
        if extra:
            parts.append("at fh.train_begin() it reaches %d tensors it did not reach at fh.finish() (%s)"
                         % (len(extra), ", ".join(_show(p) for p in extra[:5])))
        raise StateError("the scorer cannot rebuild what logits_fn uses: %s. Build every object logits_fn uses "
                         "before fh.train_begin(); training may change their tensors and values, not replace them "
                         "with objects of another kind" % "; ".join(parts))
    return fn


def _show(path):
    """A path as a person reads it: g.model#blocks.0%weight -> model.blocks.0.weight."""
    p = path[2:] if path.startswith("g.") else path
    return p.replace("#", ".").replace("%", ".")
