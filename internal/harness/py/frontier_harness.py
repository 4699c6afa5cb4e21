"""frontier_harness: the program's side of a run.

A candidate program imports this module, asks it for the injected
configuration, and reports its training loop through it:

    import frontier_harness as fh
    cfg = fh.config()
    ...                              # build, compile, warm up (untimed)
    fh.train_begin(logits_fn)        # the clock starts; the training data appears
    for step in fh.steps(n):
        with fh.section("forward"): ...
        fh.step(step, tokens=n_tokens, train_loss=loss)
        if fh.want_validation(step):
            fh.validate(logits_fn)   # clock paused
    fh.finish(logits_fn)             # the clock stops; the final validation

This module decides nothing. Each call is a message to the judge, a
separate process outside the program's sandbox that holds the clock, the
validation text, the loss, the checks and the telemetry (see
frontier_judge.py and the project's docs/harness.md). What it measures in
this process (sections, the profiler's top ops, memory) is reported as
advisory telemetry.
"""

import math
import mmap
import os
import platform
import random
import resource
import socket
import sys
import time
import types

import frontier_wire
from frontier_wire import HarnessError

_WIRE, _RAW = frontier_wire.connect()

import numpy as np  # noqa: E402
import torch  # noqa: E402

_perf = time.perf_counter

SHARD_MAGIC = 20240520
SHARD_VERSION = 1
SHARD_HEADER_BYTES = 1024

__all__ = ["HarnessError", "ShardError", "config", "finish", "read_shard", "section", "step", "steps",
           "train_begin", "validate", "want_validation"]


class ShardError(HarnessError, ValueError):
    """A data shard is missing, truncated or not in the speedrun format."""

    def __init__(self, message):
        super().__init__("shard", message)


def read_shard(path, max_tokens=None):
    """Read a speedrun-format shard and return its tokens as numpy uint16.

    The file is a 256 x int32 little-endian header (magic 20240520,
    version 1, token count) followed by that many uint16 tokens. Every field
    is checked; a bad file raises ShardError naming the file and the fault.
    With max_tokens, only the first max_tokens tokens are read.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < SHARD_HEADER_BYTES:
                raise ShardError("shard %s is %d bytes, shorter than the %d-byte header: the file is truncated or "
                                 "not a shard" % (path, size, SHARD_HEADER_BYTES))
            header = np.frombuffer(f.read(SHARD_HEADER_BYTES), dtype="<i4")
            if int(header[0]) != SHARD_MAGIC:
                raise ShardError("shard %s: bad magic number %d (want %d): not a speedrun-format shard"
                                 % (path, int(header[0]), SHARD_MAGIC))
            if int(header[1]) != SHARD_VERSION:
                raise ShardError("shard %s: unsupported version %d (want %d)" % (path, int(header[1]), SHARD_VERSION))
            count = int(header[2])
            if count < 0 or size - SHARD_HEADER_BYTES != 2 * count:
                raise ShardError("shard %s: header says %d tokens but the file holds %d bytes after the header: the "
                                 "file is truncated or corrupt" % (path, count, size - SHARD_HEADER_BYTES))
            n = count if max_tokens is None else min(count, int(max_tokens))
            tokens = np.frombuffer(f.read(2 * n), dtype="<u2")
    except OSError as e:
        hint = _before_clock(path)
        if hint:
            raise HarnessError("data_before_clock", hint) from None
        raise ShardError("cannot read shard %s: %s" % (path, e.strerror or e)) from None
    if tokens.size != n:
        raise ShardError("shard %s: read %d of %d tokens" % (path, tokens.size, n))
    return tokens.astype(np.uint16)


def _before_clock(path):
    """Why a training shard cannot be read yet, or "" when it should be."""
    c = globals().get("_C")
    if c is None or c.begun or os.path.abspath(path) not in c.cfg.train_files:
        return ""
    return ("the program read the training shard %s before fh.train_begin(): the training data is available only "
            "once the clock runs (it appears at train_begin), so nothing can be fitted to it untimed. Build the data "
            "loader after fh.train_begin(); warm up on random tokens" % path)


# ---------------------------------------------------------------------------
# Sections: advisory profiles of the program's own loop


class _NullSection:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NULL_SECTION = _NullSection()


class _CPUSection:
    __slots__ = ("_c", "_name", "_t", "_depth")

    def __init__(self, c, name):
        self._c, self._name = c, name

    def __enter__(self):
        self._depth = self._c.depth
        self._c.depth += 1
        self._t = _perf()
        return self

    def __exit__(self, *exc):
        self._c.depth -= 1
        self._c.add_section(self._name, (_perf() - self._t) * 1000.0, self._depth)
        return False


class _CUDASection:
    """A pair of CUDA events, resolved only at designated steps, so that an
    ordinary step never waits for the device."""

    __slots__ = ("_c", "_name", "_start", "_depth")

    def __init__(self, c, name):
        self._c, self._name = c, name

    def __enter__(self):
        self._depth = self._c.depth
        self._c.depth += 1
        self._start = torch.cuda.Event(enable_timing=True)
        self._start.record()
        return self

    def __exit__(self, *exc):
        self._c.depth -= 1
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self._c.pending.append((self._name, self._start, end, self._depth))
        return False


# ---------------------------------------------------------------------------
# The client


class _Client:
    def __init__(self, wire, raw):
        self.w = wire
        g = raw.get
        self.mode = g("mode") or "full"
        self.fast = self.mode == "fast"
        # "program" trains; "scorer" is the fresh process that answers the
        # final validation again from the state the program exported.
        self.role = g("role") or "program"
        self.export_max = int(g("export_max_bytes") or 0)
        self.begin_fn = None
        self.begin_names = set()
        self.full_telemetry = (g("telemetry_level") or "full") == "full"
        self.rank = int(os.environ.get("RANK", "0"))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        want = int(g("world_size") or 0)
        if want and want != self.world_size:
            raise HarnessError("config", "the track runs %d processes but WORLD_SIZE is %d: start the program "
                                         "through frontier's launcher" % (want, self.world_size))
        device = g("device") or "cpu"
        self.cuda = device.startswith("cuda")
        if self.cuda:
            if not torch.cuda.is_available():
                raise HarnessError("config", "the track needs CUDA but torch.cuda.is_available() is False "
                                             "(torch %s)" % torch.__version__)
            torch.cuda.set_device(self.local_rank)
            device = "cuda:%d" % self.local_rank
        self.device = torch.device(device)
        threads = int(g("threads") or 0)
        if threads > 0:
            torch.set_num_threads(threads)
        seed = int(g("seed") or 0)
        random.seed(seed)
        np.random.seed(seed % (2 ** 32))
        torch.manual_seed(seed)
        self.vocab = int(g("vocab_size"))
        self.max_steps = int(g("max_steps") or 0)
        self.fast_steps = int(g("fast_steps") or 0)
        self.log_every = max(1, int(g("log_every") or 1))
        self.val_every = int(g("val_every") or 0)
        ps = g("profile_steps") or []
        self.profile = (int(ps[0]), int(ps[-1])) if ps and not self.fast and self.full_telemetry else None
        self.top_k = int(g("top_k") or 15)
        # The training shards appear here at train_begin, as links to
        # descriptors the judge sends then: before the clock there is no
        # training data to fit anything to.
        self.data_dir = os.path.join(g("data_dir") or os.path.join(os.getcwd(), "_data"), str(self.rank))
        os.makedirs(self.data_dir, exist_ok=True)
        self.cfg = types.SimpleNamespace(
            track=g("track") or "", mode=self.mode,
            train_files=[os.path.join(self.data_dir, n) for n in g("train_files") or []],
            vocab_size=self.vocab, bos_id=int(g("bos_id") or 0), val_seq_len=int(g("val_seq_len")),
            val_batch_seqs=int(g("val_batch_seqs") or 1), seed=seed, device=device,
            threads=threads, max_steps=self.max_steps, world_size=self.world_size, rank=self.rank,
            local_rank=self.local_rank)
        self.T = self.cfg.val_seq_len
        self.ready = None
        self.ipc = None
        self.begun = False
        self.finished = False
        self.steps_done = 0
        self.tokens = 0  # since the last step message
        self.told = 0  # steps the judge was told of
        self.last_step = None
        self.t_begin = None
        self.depth = 0
        self.sections = {}
        self.order = []
        self.pending = []
        self.prof = None
        self.prof_done = False
        self.prof_first = 0
        self.w.send(dict(self._facts(), op="facts", cuda_ipc=self.cuda, device_index=self.local_rank))

    def _facts(self):
        fp = {"cpu": _cpu_model(), "torch": torch.__version__, "python": platform.python_version(),
              "threads": torch.get_num_threads(), "hostname": socket.gethostname()}
        if self.cuda:
            fp["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            fp["cuda"] = torch.version.cuda or ""
            fp["driver"] = _nvidia_driver()
            fp["triton"] = _dist_version("triton")
        return {"mode": self.mode, "python": platform.python_version(), "torch": torch.__version__,
                "numpy": np.__version__, "device": str(self.device), "threads": torch.get_num_threads(),
                "blas": _blas_info(), "fingerprint": fp, "pid": os.getpid(), "world_size": self.world_size,
                "telemetry_level": "full" if self.full_telemetry else "off"}

    # -- the judge's buffers ------------------------------------------------

    def _ensure_ready(self):
        """The judge's first reply: the shared buffers for validation."""
        if self.ready is not None:
            return
        msg, fds = self.w.recv()
        if msg.get("op") != "ready" or len(fds) != 1:
            raise HarnessError("judge", "unexpected first message from the judge: %r" % msg.get("op"))
        B, T, V = int(msg["rows"]), int(msg["seq_len"]), int(msg["vocab"])
        # The judge writes each batch here; the logits go back in a buffer
        # of their own per call (see _answer).
        self.inputs = np.frombuffer(mmap.mmap(fds[0], B * T * 8, prot=mmap.PROT_READ), dtype=np.int64)
        os.close(fds[0])
        self.ready = (B, T, V)
        if self.cuda:
            msg, _ = self.w.recv()
            if msg.get("op") == "ipc" and msg.get("handle"):
                self.ipc, err = _open_ipc(msg["handle"], B * T * V)
                if self.ipc is None:
                    self.w.send({"op": "warning", "code": "cuda_ipc",
                                 "message": "the judge's CUDA buffer could not be opened here (%s): logits go through "
                                            "host shared memory" % err})

    def _answer(self, logits_fn, rows):
        """Call logits_fn on the batch the judge wrote and give it the logits."""
        T, V = self.T, self.vocab
        x = torch.from_numpy(self.inputs[:rows * T].copy()).view(rows, T).to(self.device)
        with torch.no_grad():
            lg = logits_fn(x)
        if not isinstance(lg, torch.Tensor):
            raise HarnessError("logits_shape", "logits_fn returned %s, not a tensor of shape [batch, seq, vocab]"
                               % type(lg).__name__)
        shape = list(lg.shape)
        fds = []
        if len(shape) == 3 and shape[:2] == [rows, T] and shape[2] >= V:
            if self.ipc is not None:
                n = rows * T * V
                self.ipc[:n].view(rows, T, V).copy_(lg[..., :V])
                torch.cuda.synchronize()
            else:
                out = torch.zeros((rows, T, V), dtype=torch.float32)
                out.copy_(lg[..., :V])
                fds = [_sealed_logits(out.numpy())]
        try:
            self.w.send({"op": "logits", "shape": shape, "ipc": self.ipc is not None}, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _serve(self, logits_fn, until):
        """Answer the judge's batches until it sends a message named in until."""
        while True:
            msg, fds = self.w.recv()
            op = msg.get("op")
            if op == "batch":
                self._answer(logits_fn, int(msg["rows"]))
            elif op in until:
                return msg, fds
            else:
                raise HarnessError("judge", "unexpected message from the judge: %r" % op)

    # -- the loop -----------------------------------------------------------

    def alive(self):
        self.w.check()
        if self.finished:
            raise HarnessError("contract", "the run already finished: fh.finish() must be the last harness call")

    def train_begin(self, logits_fn=None):
        self.alive()
        if self.begun:
            raise HarnessError("contract", "fh.train_begin() was called twice")
        self._ensure_ready()
        if self.cuda:
            torch.cuda.synchronize()
        if self.role == "scorer":
            self._score(logits_fn)  # does not return
        self.begun = True
        self.begin_fn = logits_fn
        self.begin_names = set(_main_globals(logits_fn))
        self.t_begin = _perf()
        self.w.send({"op": "train_begin", "score": logits_fn is not None})
        msg, fds = self._serve(logits_fn, ("go",))
        names = msg.get("files") or []
        if len(names) != len(fds) or [os.path.basename(f) for f in self.cfg.train_files] != names:
            raise HarnessError("judge", "the judge sent %d training shards, the config names %d"
                               % (len(fds), len(self.cfg.train_files)))
        for name, fd in zip(names, fds):
            link = os.path.join(self.data_dir, name)
            tmp = link + ".tmp"
            os.symlink("/proc/%d/fd/%d" % (os.getpid(), fd), tmp)
            os.replace(tmp, link)
        self._fds = fds  # kept open for the life of the process
        if self.profile and self.profile[0] <= 0:
            self._profile_start()

    def steps(self, n):
        n = int(n)
        cap = n
        if self.max_steps > 0:
            cap = min(cap, self.max_steps)
        if self.fast:
            cap = min(cap, self.fast_steps if self.fast_steps > 0 else 1)
        self.last_step = cap - 1
        # The loop's planned length lets frontier size the full run's time
        # limit from the fast check's step time on this machine.
        planned = min(n, self.max_steps) if self.max_steps > 0 else n
        self.w.send({"op": "steps", "planned": planned})
        return iter(range(cap))

    def section(self, name):
        if not self.full_telemetry or not self.begun:
            return _NULL_SECTION
        return _CUDASection(self, name) if self.cuda else _CPUSection(self, name)

    def add_section(self, name, ms, depth):
        s = self.sections.get(name)
        if s is None:
            s = self.sections[name] = [0.0, 0, depth]
            self.order.append(name)
        s[0] += ms
        s[1] += 1
        s[2] = min(s[2], depth)

    def _resolve_sections(self):
        pending, self.pending = self.pending, []
        for name, start, end, depth in pending:
            end.synchronize()
            self.add_section(name, start.elapsed_time(end), depth)

    def step(self, step, tokens=0, train_loss=None):
        """One message every log_every steps (and at the last): a message a
        step would wake the judge, and cost the program, every step. The
        judge counts the steps from the indices it is told."""
        step = int(step)
        if step != self.steps_done:
            raise HarnessError("contract", "fh.step(step) must be called once per step with step = 0, 1, 2, ...; got "
                               "step=%r after %d steps" % (step, self.steps_done))
        self.steps_done = step + 1
        self.tokens += int(tokens)
        last = step == self.last_step
        # In the fast check every step is reported: its step time sizes the
        # full run's time limit.
        if last or self.fast or (step + 1) % self.log_every == 0 or not self.begun:
            self.alive()
            msg = {"op": "step", "step": step, "tokens": self.tokens}
            self.tokens = 0
            # Reading a tensor waits for the device: only at these steps.
            if train_loss is not None:
                msg["loss"] = float(train_loss.detach().float().item()) if isinstance(train_loss, torch.Tensor) \
                    else float(train_loss)
            self._resolve_sections()
            if self.rank == 0 and self.full_telemetry:
                ms = (_perf() - self.t_begin) * 1000.0 if self.t_begin else 0.0
                print("step:%d/%s elapsed:%.0fms%s" % (
                    step + 1, self.last_step + 1 if self.last_step is not None else "?", ms,
                    " train_loss:%.4f" % msg["loss"] if "loss" in msg else ""), flush=True)
            self.w.send(msg)
            self.told = self.steps_done
        if self.prof is not None and step >= self.profile[1]:
            self._profile_stop()
        elif self.profile and self.prof is None and not self.prof_done and step + 1 == self.profile[0]:
            self._profile_start()

    def want_validation(self, step):
        if self.fast or self.val_every <= 0:
            return False
        return (step + 1) % self.val_every == 0 and step != self.last_step

    def _flush_steps(self):
        """Tell the judge the steps since the last message, before a
        validation or the end."""
        if self.steps_done != self.told:
            self.w.send({"op": "step", "step": self.steps_done - 1, "tokens": self.tokens, "flush": True})
            self.tokens = 0
            self.told = self.steps_done

    def validate(self, logits_fn):
        self.alive()
        self._flush_steps()
        if self.cuda:
            torch.cuda.synchronize()
        self._resolve_sections()
        self.w.send({"op": "validate", "step": self.steps_done})
        msg, _ = self._serve(logits_fn, ("done",))
        self._print_val(msg)

    def finish(self, logits_fn):
        self.alive()
        self._flush_steps()
        if self.prof is not None:
            self._profile_stop()
        if self.cuda:
            torch.cuda.synchronize()
        # What logits_fn reaches, sealed before any scored window is sent:
        # the scorer answers the final validation again from it.
        fd = self._export(logits_fn)
        try:
            self.w.send({"op": "finish", "steps": self.steps_done}, [fd])
        finally:
            os.close(fd)
        self._resolve_sections()
        msg, _ = self._serve(logits_fn, ("result",))
        self._print_val(msg)
        if self.full_telemetry:
            self.w.send(_json_safe({"op": "sections", "sections": [
                {"name": n, "total_ms": self.sections[n][0], "calls": self.sections[n][1], "depth": self.sections[n][2]}
                for n in self.order]}))
        self.w.send(_json_safe(dict(_memory(self.cuda), op="memory")))
        self.finished = True
        return types.SimpleNamespace(steps=msg.get("steps"), train_time_ms=msg.get("train_time_ms"),
                                     val_loss=msg.get("val_loss"))

    def _export(self, logits_fn):
        """The state logits_fn reaches, in a sealed memory file (see
        frontier_state.py)."""
        import fcntl

        import frontier_state
        fd = os.memfd_create("frontier-state", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            with os.fdopen(os.dup(fd), "wb") as f:
                frontier_state.export(logits_fn, self.begin_fn, self.begin_names, _main_globals(logits_fn), f,
                                      self.export_max)
            frontier_wire.add_seals(fd, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                                    | fcntl.F_SEAL_SEAL)
        except frontier_state.StateError as e:
            os.close(fd)
            raise HarnessError("state", str(e)) from None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _score(self, begin_fn):
        """The scorer: the program's setup ran up to here; take the state
        the training process exported, answer the judge's calls with it,
        and end the process (the program's training code never runs)."""
        import frontier_state
        self.begun = True
        self.w.send({"op": "train_begin", "score": False})
        msg, fds = self.w.recv()
        if msg.get("op") != "state" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise HarnessError("judge", "the judge sent %r instead of the state to score" % msg.get("op"))
        try:
            with os.fdopen(fds[0], "rb") as f:
                fn = frontier_state.restore(f, begin_fn, _main_globals(begin_fn), self.device)
        except frontier_state.StateError as e:
            raise HarnessError("state", str(e)) from None
        self.w.send({"op": "serving"})
        self._serve(fn, ("done",))
        self.finished = True
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(0)

    def _print_val(self, msg):
        if self.rank == 0:
            steps = max(self.steps_done, 1)
            ms = float(msg.get("train_time_ms") or 0.0)
            print("step:%d/%s val_loss:%.4f train_time:%.0fms step_avg:%.2fms" % (
                self.steps_done, self.last_step + 1 if self.last_step is not None else "?",
                float(msg.get("val_loss") or float("nan")), ms, ms / steps), flush=True)

    # -- profiler (advisory) ------------------------------------------------

    def _profile_start(self):
        if self.rank != 0:
            return
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        try:
            self.prof = profile(activities=acts, record_shapes=False, profile_memory=False, with_stack=False)
            self.prof.__enter__()
            self.prof_first = self.steps_done
        except Exception as e:  # a broken profiler must not fail the run
            self.prof, self.prof_done = None, True
            self.w.send({"op": "warning", "code": "profiler", "message": "torch.profiler could not start: %s" % e})

    def _profile_stop(self):
        prof, self.prof = self.prof, None
        self.prof_done = True
        try:
            prof.__exit__(None, None, None)
            self.w.send(_json_safe({"op": "top_ops", "kind": "cuda" if self.cuda else "cpu",
                                    "steps": [self.prof_first, self.steps_done - 1],
                                    "ops": _top_ops(prof, self.cuda, self.top_k)}))
        except Exception as e:
            self.w.send({"op": "warning", "code": "profiler", "message": "torch.profiler results could not be read: %s" % e})


def _open_ipc(handle, numel):
    """The judge's device buffer, opened through CUDA IPC (torch's own
    tensor sharing), and "", or None and why not: logits then go through
    host memory. The storage class and the signature differ across torch
    versions; the handle's fields are torch's (device, handle, size,
    offset, ref counter handle and offset, event handle, event sync)."""
    try:
        parts = [bytes.fromhex(p["b"]) if isinstance(p, dict) else p for p in handle]
        cls = getattr(torch, "UntypedStorage", None)
        if cls is not None and hasattr(cls, "_new_shared_cuda"):
            st = cls._new_shared_cuda(*parts)
        else:
            st = torch.cuda.ByteStorage._new_shared_cuda(*parts)
        t = torch.empty(0, dtype=torch.float32, device="cuda")
        t.set_(st, 0, (numel,), (1,))
        return t, ""
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, e)


def _main_globals(fn):
    """The program's globals: those of its functions, else __main__'s."""
    g = getattr(fn, "__globals__", None)
    if g is None:
        g = getattr(getattr(fn, "__func__", None), "__globals__", None)
    if g is None:
        g = sys.modules["__main__"].__dict__
    return g


def _sealed_logits(a):
    """The float32 array a in a memory file sealed against writing: once
    sent, nobody (this process included) can change what the judge reads."""
    import fcntl
    fd = os.memfd_create("frontier-logits", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(a).cast("B")
        while view:
            n = os.write(fd, view)
            view = view[n:]
        frontier_wire.add_seals(fd, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                                | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _json_safe(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None if math.isnan(v) else str(v)
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _top_ops(prof, cuda, k):
    """The k ops with the most self time: CPU time on CPU, device time on
    CUDA. Attribute names differ across torch versions."""
    def dev_time(e):
        for attr in ("self_device_time_total", "self_cuda_time_total"):
            v = getattr(e, attr, None)
            if v is not None:
                return float(v)
        return 0.0

    key = dev_time if cuda else (lambda e: float(e.self_cpu_time_total))
    rows = []
    for e in prof.key_averages():
        if e.key.startswith("ProfilerStep") or e.key.startswith("[memory]"):
            continue
        t = key(e)
        if t > 0:
            rows.append({"name": e.key[:200], "total_ms": t / 1000.0, "calls": int(e.count)})
    rows.sort(key=lambda r: -r["total_ms"])
    return rows[:k]


def _memory(cuda):
    m = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    if cuda:
        m["cuda_allocated_mb"] = torch.cuda.max_memory_allocated() / 2 ** 20
        m["cuda_reserved_mb"] = torch.cuda.max_memory_reserved() / 2 ** 20
    return m


def _cpu_model():
    try:
        with open("/proc/cpuinfo", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_driver():
    try:
        with open("/proc/driver/nvidia/version", "r", encoding="utf-8", errors="replace") as f:
            for word in f.readline().split():
                if word[:1].isdigit() and "." in word:
                    return word
    except OSError:
        pass
    return ""


def _dist_version(name):
    try:
        from importlib import metadata
        return metadata.version(name)
    except Exception:
        return ""


def _blas_info():
    """torch's BLAS setting and, where /proc tells, the library loaded
    (Debian's torch says "generic" and uses what libblas points to)."""
    info = ""
    try:
        text = torch.__config__.show()
        i = text.find("BLAS_INFO=")
        if i >= 0:
            info = text[i + len("BLAS_INFO="):].split(",", 1)[0].strip()
    except Exception:
        pass
    libs = []
    try:
        with open("/proc/self/maps", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                name = os.path.basename(line.rsplit(None, 1)[-1]) if "/" in line else ""
                low = name.lower()
                if ("blas" in low or "mkl_rt" in low or "blis" in low) and name not in libs:
                    libs.append(name)
    except OSError:
        pass
    return "%s (%s)" % (info or "?", ", ".join(libs)) if libs else info


# ---------------------------------------------------------------------------
# Public API: thin functions over the one client object.

_C = _Client(_WIRE, _RAW)


def config():
    """The injected configuration: train_files, vocab_size, bos_id,
    val_seq_len, val_batch_seqs, seed, device, threads, max_steps, mode,
    world_size, rank, local_rank, track. The training files exist from
    fh.train_begin() on."""
    return _C.cfg


def train_begin(logits_fn=None):
    """Start the train clock; the training shards appear. Everything before
    is untimed setup. With logits_fn, the judge scores the model that
    starts the clock on unscored text: it must be untrained."""
    _C.train_begin(logits_fn)


def steps(n):
    """The step indices 0..n-1, capped by the track's max_steps and shortened
    in the fast check."""
    return _C.steps(n)


def section(name):
    """Context manager timing a named part of a step (forward, backward,
    optimizer, data, ...): advisory telemetry."""
    return _C.section(name)


def step(step, tokens=0, train_loss=None):
    """Report the end of a step: its index, the training tokens this process
    consumed in it, and the training loss (a tensor is read only at
    designated steps)."""
    _C.step(step, tokens, train_loss)


def want_validation(step):
    """True when the track wants an intermediate validation after step."""
    return _C.want_validation(step)


def validate(logits_fn):
    """Let the judge score the model. On the track's designated steps the
    clock is paused; otherwise the validation is timed.
    logits_fn(x: LongTensor[B, T]) -> logits[B, T, V >= vocab_size]."""
    _C.validate(logits_fn)


def finish(logits_fn):
    """Stop the clock and let the judge run the final validation (and the
    causality probe where the track enables it); returns the result."""
    return _C.finish(logits_fn)
