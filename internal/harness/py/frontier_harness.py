"""frontier_harness: the environment's side of a training run.

A candidate program imports this module, asks it for the injected
configuration, and reports its training loop through it. The harness owns
what decides a result: the train clock, the validation data and the
validation loss, the causality probe, and the telemetry file. See the
project's docs/harness.md for the contract.

    import frontier_harness as fh
    cfg = fh.config()
    ...                              # build, compile, warm up (untimed)
    fh.train_begin()                 # the clock starts
    for step in fh.steps(n):
        with fh.section("forward"): ...
        fh.step(step, tokens=n_tokens, train_loss=loss)
        if fh.want_validation(step):
            fh.validate(logits_fn)   # clock paused
    fh.finish(logits_fn)             # final validation; clock stopped

The module keeps its state in one private object created at import: the
boot script imports it before the program so that the clock functions are
captured before any program code runs.
"""

import json
import math
import os
import platform
import random
import resource
import socket
import sys
import time
import types

# Captured before the program is imported: later patches of the time module
# or of torch.cuda.synchronize do not reach the harness's clock.
_perf = time.perf_counter
_T_IMPORT = _perf()

CONFIG_SCHEMA = 1


class HarnessError(Exception):
    """The program broke the harness contract, or the run cannot go on.

    code is a short machine-readable reason ("nan_loss", "logits_shape",
    "contract", "config", ...), written with the error event.
    """

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class ShardError(HarnessError, ValueError):
    """A data shard is missing, truncated or not in the speedrun format."""

    def __init__(self, message):
        super().__init__("shard", message)


def _load_config():
    """Read and check the injected config. Runs before torch is imported, so
    a run without a usable config fails in milliseconds."""
    path = os.environ.get("FRONTIER_CONFIG", "")
    if not path:
        raise HarnessError(
            "config",
            "FRONTIER_CONFIG is not set: this program must be started by frontier "
            "(for example `frontier eval train.py`), which writes the run's config.json")
    try:
        with open(path, "r", encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise HarnessError("config", "cannot read the run config %s: %s"
                           % (path, e.strerror or e)) from None
    except ValueError as e:
        raise HarnessError("config", "the run config %s is not valid JSON: %s" % (path, e)) from None
    if not isinstance(raw, dict) or raw.get("schema") != CONFIG_SCHEMA:
        got = raw.get("schema") if isinstance(raw, dict) else None
        raise HarnessError(
            "config",
            "the run config %s has schema %r but this harness reads schema %d: the harness "
            "and the frontier binary that wrote the config do not match" % (path, got, CONFIG_SCHEMA))
    return path, raw


_CONFIG_PATH, _CONFIG = _load_config()

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SHARD_MAGIC = 20240520
SHARD_VERSION = 1
SHARD_HEADER_INTS = 256
SHARD_HEADER_BYTES = SHARD_HEADER_INTS * 4

_cuda_sync = torch.cuda.synchronize
_cuda_event = torch.cuda.Event

__all__ = [
    "HarnessError",
    "ShardError",
    "config",
    "finish",
    "read_shard",
    "section",
    "step",
    "steps",
    "train_begin",
    "validate",
    "want_validation",
]


# ---------------------------------------------------------------------------
# Shards


def read_shard(path, max_tokens=None):
    """Read a speedrun-format shard and return its tokens as numpy uint16.

    The file is a 256 x int32 little-endian header (magic 20240520,
    version 1, token count) followed by that many uint16 tokens. Every field
    is checked; a bad file raises ShardError naming the file and the fault.
    With max_tokens, only the first max_tokens tokens are read.
    """
    path = os.fspath(path)
    try:
        size = os.path.getsize(path)
        f = open(path, "rb")
    except OSError as e:
        raise ShardError("cannot open shard %s: %s" % (path, e.strerror or e)) from None
    with f:
        if size < SHARD_HEADER_BYTES:
            raise ShardError(
                "shard %s is %d bytes, shorter than the %d-byte header: the file is truncated "
                "or not a shard" % (path, size, SHARD_HEADER_BYTES))
        header = np.frombuffer(f.read(SHARD_HEADER_BYTES), dtype="<i4")
        if int(header[0]) != SHARD_MAGIC:
            raise ShardError(
                "shard %s: bad magic number %d (want %d): not a speedrun-format shard"
                % (path, int(header[0]), SHARD_MAGIC))
        if int(header[1]) != SHARD_VERSION:
            raise ShardError("shard %s: unsupported version %d (want %d)"
                             % (path, int(header[1]), SHARD_VERSION))
        count = int(header[2])
        body = size - SHARD_HEADER_BYTES
        if count < 0 or body != 2 * count:
            raise ShardError(
                "shard %s: header says %d tokens (%d bytes) but the file holds %d bytes after "
                "the header: the file is truncated or corrupt" % (path, count, 2 * count, body))
        n = count if max_tokens is None else min(count, int(max_tokens))
        tokens = np.fromfile(f, dtype="<u2", count=n)
        if tokens.size != n:
            raise ShardError("shard %s: read %d of %d tokens" % (path, tokens.size, n))
        return tokens.astype(np.uint16, copy=False)


# ---------------------------------------------------------------------------
# Telemetry


def _clean(v):
    """Make v JSON-safe: non-finite floats become null, tensors and numpy
    scalars become Python numbers."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, np.generic):
        return _clean(v.item())
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return _clean(v.item())
    return str(v)


class _Telemetry:
    """Appends one JSON object per line. Each line is one write() on an
    O_APPEND descriptor, so a killed run keeps every line it wrote and lines
    from several ranks do not interleave."""

    def __init__(self, path, t0):
        self._path = path
        self._t0 = t0
        self._fd = None

    def write(self, event, fields):
        obj = {"event": event, "t_ms": round((_perf() - self._t0) * 1000.0, 3)}
        obj.update(fields)
        try:
            line = json.dumps(_clean(obj), allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            line = json.dumps({"event": "warning", "t_ms": obj["t_ms"], "code": "telemetry",
                               "message": "could not encode a %s event: %s" % (event, e)})
        data = (line + "\n").encode("utf-8")
        if self._fd is None:
            self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        while data:
            n = os.write(self._fd, data)
            data = data[n:]


# ---------------------------------------------------------------------------
# Clock


class _Clock:
    """Train time: runs from train_begin, paused during validation and
    harness bookkeeping. On CUDA every start, pause and read synchronizes
    first, so queued kernels are counted where they belong."""

    def __init__(self, sync):
        self._sync = sync
        self.started = False
        self.running = False
        self._t = 0.0
        self._total = 0.0
        self.paused_total = 0.0  # seconds spent paused, for section accounting
        self._pause_t = 0.0

    def start(self):
        self._sync()
        self._t = _perf()
        self.started = True
        self.running = True

    def pause(self):
        if not self.running:
            return False
        self._sync()
        now = _perf()
        self._total += now - self._t
        self._pause_t = now
        self.running = False
        return True

    def resume(self):
        now = _perf()
        self.paused_total += now - self._pause_t
        self._t = now
        self.running = True

    def read_ms(self):
        if not self.running:
            return self._total * 1000.0
        self._sync()
        return (self._total + _perf() - self._t) * 1000.0


# ---------------------------------------------------------------------------
# Sections


class _NullSection:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NULL_SECTION = _NullSection()


class _CPUSection:
    """Host-clock section; time spent with the train clock paused inside the
    section (a validation) is subtracted."""

    __slots__ = ("_h", "_name", "_t", "_p", "_depth")

    def __init__(self, h, name):
        self._h = h
        self._name = name

    def __enter__(self):
        h = self._h
        self._depth = h._depth
        h._depth += 1
        self._p = h._clock.paused_total
        self._t = _perf()
        return self

    def __exit__(self, *exc):
        dt = _perf() - self._t
        h = self._h
        h._depth -= 1
        if h._clock.running:
            dt -= h._clock.paused_total - self._p
            h._add_section(self._name, dt * 1000.0, self._depth)
        return False


class _CUDASection:
    """Device-timeline section: a pair of CUDA events, resolved only at
    designated steps so an ordinary step never waits for the device."""

    __slots__ = ("_h", "_name", "_start", "_depth")

    def __init__(self, h, name):
        self._h = h
        self._name = name

    def __enter__(self):
        h = self._h
        self._depth = h._depth
        h._depth += 1
        self._start = _cuda_event(enable_timing=True)
        self._start.record()
        return self

    def __exit__(self, *exc):
        h = self._h
        h._depth -= 1
        if h._clock.running:
            end = _cuda_event(enable_timing=True)
            end.record()
            h._pending.append((self._name, self._start, end, self._depth))
        return False


# ---------------------------------------------------------------------------
# The harness


class _Harness:
    def __init__(self, path, raw):
        self.t_import = _T_IMPORT
        tpath = raw.get("telemetry_path") or ""
        if not isinstance(tpath, str) or not tpath:
            raise HarnessError("config", "the run config %s has no telemetry_path" % path)
        self.tel = _Telemetry(tpath, self.t_import)
        self.rank = int(os.environ.get("RANK", "0"))
        self.is_main = self.rank == 0
        try:
            try:
                self._setup(raw)
            except (TypeError, ValueError, IndexError) as e:
                raise HarnessError("config", "the run config %s has a malformed value: %s" % (path, e)) from None
        except HarnessError as e:
            # The telemetry file is known: put the reason where the evaluator
            # looks first, then let the boot script print it and exit.
            self.tel.write("error", {"kind": "HarnessError", "code": e.code, "message": str(e),
                                     "traceback": "", "step": 0, "rank": self.rank})
            self._reported = True
            raise

    def _setup(self, raw):
        g = raw.get
        self.mode = g("mode") or "full"
        if self.mode not in ("fast", "full"):
            raise HarnessError("config", "config mode is %r; want \"fast\" or \"full\"" % self.mode)
        self.fast = self.mode == "fast"
        self.level = g("telemetry_level") or "full"
        if self.level not in ("full", "off"):
            raise HarnessError("config", "config telemetry_level is %r; want \"full\" or \"off\"" % self.level)
        self.full_telemetry = self.level == "full"

        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        want_world = int(g("world_size") or 0)
        if want_world and want_world != self.world_size:
            raise HarnessError(
                "config", "the track runs %d processes but WORLD_SIZE is %d: start the program "
                "through frontier's launcher" % (want_world, self.world_size))

        device = g("device") or "cpu"
        self.cuda = device.startswith("cuda")
        if self.cuda:
            if not torch.cuda.is_available():
                raise HarnessError("config", "the track needs CUDA but torch.cuda.is_available() is "
                                   "False (torch %s)" % torch.__version__)
            torch.cuda.set_device(self.local_rank)
            device = "cuda:%d" % self.local_rank
        self.device = device
        self.threads = int(g("threads") or 0)
        if self.threads > 0:
            torch.set_num_threads(self.threads)

        self.seed = int(g("seed") or 0)
        random.seed(self.seed)
        np.random.seed(self.seed % (2 ** 32))
        torch.manual_seed(self.seed)

        self.vocab_size = int(g("vocab_size") or 0)
        self.val_seq_len = int(g("val_seq_len") or 0)
        self.val_batch_seqs = max(1, int(g("val_batch_seqs") or 1))
        self.val_tokens = int((g("fast_val_tokens") if self.fast else g("val_tokens")) or 0)
        if self.vocab_size <= 0 or self.val_seq_len <= 0 or self.val_tokens <= 0:
            raise HarnessError("config", "config needs positive vocab_size, val_seq_len and val_tokens "
                               "(got %d, %d, %d)" % (self.vocab_size, self.val_seq_len, self.val_tokens))
        if self.val_tokens % self.val_seq_len:
            raise HarnessError("config", "val tokens %d is not a multiple of val_seq_len %d"
                               % (self.val_tokens, self.val_seq_len))
        self.max_steps = int(g("max_steps") or 0)
        self.fast_steps = int(g("fast_steps") or 0)
        self.log_every = max(1, int(g("log_every") or 1))
        self.val_every = int(g("val_every") or 0)
        ps = g("profile_steps") or []
        self.profile = (int(ps[0]), int(ps[-1])) if (ps and not self.fast and self.full_telemetry) else None
        self.top_k = int(g("top_k") or 15)
        self.compile_budget_ms = float(g("compile_budget_ms") or 0)
        self.probe_cfg = g("probe") or {}

        self.cfg = types.SimpleNamespace(
            track=g("track") or "",
            mode=self.mode,
            train_files=list(g("train_files") or []),
            vocab_size=self.vocab_size,
            bos_id=int(g("bos_id") or 0),
            val_seq_len=self.val_seq_len,
            val_batch_seqs=self.val_batch_seqs,
            seed=self.seed,
            device=self.device,
            threads=self.threads,
            max_steps=self.max_steps,
            world_size=self.world_size,
            rank=self.rank,
            local_rank=self.local_rank,
        )
        self._val_file = g("val_file") or ""

        self._clock = _Clock(_cuda_sync if self.cuda else _noop)
        self._depth = 0
        self._sections = {}  # name -> [total_ms, calls, depth]
        self._order = []
        self._pending = []  # CUDA (name, start, end, depth)
        self._steps_done = 0
        self._last_step = None  # known once the program iterates steps()
        self._tokens = 0  # this process's cumulative tokens
        self._pre_train_ms = None
        self._finished = False
        self._failure = None  # the HarnessError that stopped the run
        self._reported = False
        self._val_data = None
        self._val_last = None
        self._prof = None
        self._prof_done = False
        self._prof_first = 0
        self._warned = set()

        if self.is_main:
            self._emit("run_start", self._run_start())

    # -- telemetry helpers -------------------------------------------------

    def _emit(self, event, fields):
        if self.is_main:
            self.tel.write(event, fields)

    def _warn(self, code, message, once=True):
        if once:
            if code in self._warned:
                return
            self._warned.add(code)
        self._emit("warning", {"code": code, "message": message})
        if self.is_main:
            print("frontier: warning: " + message, file=sys.stderr, flush=True)

    def _fail(self, code, message):
        """Record a fatal contract failure and raise it. The failure sticks:
        a program that catches the exception cannot continue the run."""
        err = HarnessError(code, message)
        if self._failure is None:
            self._failure = err
        raise err

    def _check_alive(self):
        if self._failure is not None:
            raise self._failure
        if self._finished:
            self._fail("contract", "the run already finished: fh.finish() must be the last harness call")

    def _run_start(self):
        fp = {
            "cpu": _cpu_model(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "threads": torch.get_num_threads(),
            "hostname": socket.gethostname(),
        }
        if self.cuda:
            fp["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            fp["cuda"] = torch.version.cuda or ""
            fp["driver"] = _nvidia_driver()
            fp["triton"] = _dist_version("triton")
        return {
            "mode": self.mode,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "device": self.device,
            "threads": torch.get_num_threads(),
            "blas": _blas_info(),
            "fingerprint": fp,
            "pid": os.getpid(),
            "world_size": self.world_size,
            "telemetry_level": self.level,
        }

    # -- sections ----------------------------------------------------------

    def section(self, name):
        if not self.full_telemetry or not self._clock.running:
            return _NULL_SECTION
        if self.cuda:
            return _CUDASection(self, name)
        return _CPUSection(self, name)

    def _add_section(self, name, ms, depth):
        s = self._sections.get(name)
        if s is None:
            s = self._sections[name] = [0.0, 0, depth]
            self._order.append(name)
        s[0] += ms
        s[1] += 1
        s[2] = min(s[2], depth)

    def _resolve_sections(self):
        """Turn recorded CUDA events into times. The caller has synchronized."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        for name, start, end, depth in pending:
            self._add_section(name, start.elapsed_time(end), depth)

    # -- training loop -----------------------------------------------------

    def train_begin(self):
        self._check_alive()
        if self._clock.started:
            self._fail("contract", "fh.train_begin() was called twice")
        self._pre_train_ms = (_perf() - self.t_import) * 1000.0
        if self.compile_budget_ms > 0 and self._pre_train_ms > self.compile_budget_ms:
            self._warn("compile_budget",
                       "untimed setup before fh.train_begin() took %.0f ms, over the track's compile "
                       "budget of %.0f ms" % (self._pre_train_ms, self.compile_budget_ms))
        self._clock.start()
        if self.profile and self.profile[0] <= 0:
            self._profile_start()

    def steps(self, n):
        n = int(n)
        cap = n
        if self.max_steps > 0:
            cap = min(cap, self.max_steps)
        if self.fast:
            cap = min(cap, self.fast_steps if self.fast_steps > 0 else 1)
        self._last_step = cap - 1
        return iter(range(cap))

    def step(self, step, tokens=0, train_loss=None):
        self._check_alive()
        step = int(step)
        if not self._clock.started:
            self._fail("contract", "fh.step() was called before fh.train_begin()")
        if step != self._steps_done:
            self._fail("contract",
                       "fh.step(step) must be called once per step with step = 0, 1, 2, ...; got step=%r "
                       "after %d steps" % (step, self._steps_done))
        if self.max_steps > 0 and step >= self.max_steps:
            self._fail("contract", "step %d exceeds the track's max_steps %d: iterate `for step in "
                       "fh.steps(n)` so the harness can cap the loop" % (step, self.max_steps))
        if self.fast and step >= max(1, self.fast_steps):
            self._fail("contract", "the fast check runs %d steps but the program reached step %d: "
                       "iterate `for step in fh.steps(n)` so the harness can shorten the loop"
                       % (self.fast_steps, step))
        self._steps_done = step + 1
        self._tokens += int(tokens)
        last = step == self._last_step
        if last or (step + 1) % self.log_every == 0:
            self._designated(step, train_loss, last)
        if self._prof is not None and step >= self.profile[1]:
            self._profile_stop()
        elif self.profile and self._prof is None and not self._prof_done and step + 1 == self.profile[0]:
            self._profile_start()

    def _designated(self, step, train_loss, last):
        if not self.full_telemetry and not last:
            return
        ms = self._clock.read_ms()  # synchronizes on CUDA
        loss = None
        if train_loss is not None:
            loss = float(train_loss.detach().float().item()) if isinstance(train_loss, torch.Tensor) \
                else float(train_loss)
            if not math.isfinite(loss):
                self._fail("nan_loss", "train loss is %s at step %d" % (_fmt(loss), step))
        self._resolve_sections()
        steps = self._steps_done
        tokens = self._tokens * self.world_size
        self._emit("step", {
            "step": step,
            "train_time_ms": ms,
            "step_avg_ms": ms / steps,
            "tokens": tokens,
            "tokens_per_s": tokens / (ms / 1000.0) if ms > 0 else 0.0,
            "train_loss": loss,
        })
        if self.is_main and self.full_telemetry:
            print("step:%d/%s train_time:%.0fms step_avg:%.2fms%s" % (
                steps, self._last_step + 1 if self._last_step is not None else "?", ms, ms / steps,
                "" if loss is None else " train_loss:%.4f" % loss), flush=True)

    def want_validation(self, step):
        if self.fast or self.val_every <= 0:
            return False
        return (step + 1) % self.val_every == 0 and step != self._last_step

    # -- profiler ----------------------------------------------------------

    def _profile_start(self):
        if not self.is_main:
            return
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU]
        if self.cuda:
            acts.append(ProfilerActivity.CUDA)
        paused = self._clock.pause()
        try:
            self._prof = profile(activities=acts, record_shapes=False, profile_memory=False, with_stack=False)
            self._prof.__enter__()
            self._prof_first = self._steps_done
        except Exception as e:  # a broken profiler must not fail the run
            self._prof = None
            self._prof_done = True
            self._warn("profiler", "torch.profiler could not start: %s" % e)
        if paused:
            self._clock.resume()

    def _profile_stop(self):
        prof, self._prof = self._prof, None
        self._prof_done = True
        paused = self._clock.pause()
        try:
            prof.__exit__(None, None, None)
            ops = _top_ops(prof, self.cuda, self.top_k)
            self._emit("top_ops", {
                "kind": "cuda" if self.cuda else "cpu",
                "steps": [self._prof_first, self._steps_done - 1],
                "ops": ops,
            })
        except Exception as e:
            self._warn("profiler", "torch.profiler results could not be read: %s" % e)
        if paused:
            self._clock.resume()

    # -- validation --------------------------------------------------------

    def _val(self):
        if self._val_data is None:
            T = self.val_seq_len
            need = self.val_tokens + 1
            if not self._val_file:
                self._fail("config", "config has no val_file")
            try:
                data = read_shard(self._val_file, max_tokens=need)
            except ShardError as e:
                self._fail("shard", "validation data: %s" % e)
            if data.size < need:
                self._fail("shard", "the validation shard holds %d tokens but %d are needed (%d tokens "
                           "plus one target)" % (data.size, need, self.val_tokens))
            self._val_data = data
            self._val_windows = self.val_tokens // T
        return self._val_data

    def _evaluate(self, logits_fn, what):
        """Mean float32 cross-entropy of logits_fn over the validation slice.

        Window i is x = val[i*T : i*T+T], y = val[i*T+1 : i*T+T+1]. Under an
        initialized torch.distributed each rank scores a contiguous share of
        the windows and the sums are all-reduced."""
        data = self._val()
        T, V, B = self.val_seq_len, self.vocab_size, self.val_batch_seqs
        n = self._val_windows
        dist = _dist()
        shared = dist is not None and self.world_size > 1
        if self.world_size > 1 and not shared:
            self._warn("val_unsharded", "torch.distributed is not initialized: every rank validates "
                       "the whole slice")
        lo, hi = (n * self.rank // self.world_size, n * (self.rank + 1) // self.world_size) if shared else (0, n)
        dev = torch.device(self.device)
        total = torch.zeros((), dtype=torch.float64, device=dev)
        count = 0
        with torch.no_grad():
            for s in range(lo, hi, B):
                e = min(s + B, hi)
                chunk = torch.from_numpy(data[s * T:e * T + 1].astype(np.int64))
                x = chunk[:-1].view(e - s, T).to(dev, non_blocking=True)
                y = chunk[1:].view(e - s, T).to(dev, non_blocking=True)
                logits = logits_fn(x)
                if not isinstance(logits, torch.Tensor):
                    self._fail("logits_shape", "%s: logits_fn returned %s, not a tensor of shape "
                               "[batch, seq, vocab]" % (what, type(logits).__name__))
                shape = tuple(logits.shape)
                if len(shape) != 3 or shape[0] != e - s or shape[1] != T or shape[2] < V:
                    self._fail("logits_shape",
                               "%s: logits_fn(x) with x of shape [%d, %d] returned logits of shape %s; "
                               "want [%d, %d, V] with V >= vocab_size %d (padded classes are allowed)"
                               % (what, e - s, T, list(shape), e - s, T, V))
                # The harness's own loss: float32 log-softmax over all classes
                # the program returns, summed here, averaged below.
                total += F.cross_entropy(logits.float().reshape(-1, shape[2]), y.reshape(-1).to(logits.device),
                                         reduction="sum").to(torch.float64)
                count += (e - s) * T
                del logits
        if shared:
            t = torch.stack([total, torch.tensor(float(count), dtype=torch.float64, device=dev)])
            if dist.get_backend() != "nccl":
                t = t.cpu()
            dist.all_reduce(t)
            total, count = t[0], int(round(float(t[1])))
        loss = float(total) / max(count, 1)
        if count != self.val_tokens:
            self._fail("harness", "%s scored %d tokens instead of %d" % (what, count, self.val_tokens))
        if not math.isfinite(loss):
            self._fail("nan_loss", "validation loss is %s at step %d" % (_fmt(loss), self._steps_done))
        return loss, count

    def validate(self, logits_fn, final=False):
        self._check_alive()
        paused = self._clock.pause()
        try:
            self._resolve_sections()
            t0 = _perf()
            loss, count = self._evaluate(logits_fn, "validation")
            ms = (_perf() - t0) * 1000.0
            self._val_last = loss
            train_ms = self._clock.read_ms()
            self._emit("val", {"step": self._steps_done, "val_loss": loss, "tokens": count,
                               "seq_len": self.val_seq_len, "ms": ms, "final": final})
            if self.is_main:
                steps = max(self._steps_done, 1)
                print("step:%d/%s val_loss:%.4f train_time:%.0fms step_avg:%.2fms" % (
                    self._steps_done, self._last_step + 1 if self._last_step is not None else "?", loss,
                    train_ms, train_ms / steps), flush=True)
        finally:
            if paused:
                self._clock.resume()

    # -- finish ------------------------------------------------------------

    def finish(self, logits_fn):
        self._check_alive()
        if not self._clock.started:
            self._fail("contract", "fh.finish() was called before fh.train_begin()")
        if self._prof is not None:
            self._profile_stop()
        self._clock.pause()
        train_ms = self._clock.read_ms()
        self._resolve_sections()
        self.validate(logits_fn, final=True)
        val_loss = self._val_last
        if self.probe_cfg.get("enabled") and not self.fast:
            _causality_probe(self, logits_fn)
        if self.full_telemetry:
            self._emit("sections", {"sections": self._section_rows(train_ms)})
        self._emit("memory", _memory(self.cuda))
        steps = self._steps_done
        tokens = self._tokens * self.world_size
        if steps == 0:
            self._warn("no_steps", "fh.step() was never called: steps and tokens are not known")
        result = {
            "steps": steps,
            "train_time_ms": train_ms,
            "step_avg_ms": train_ms / steps if steps else 0.0,
            "tokens": tokens,
            "tokens_per_s": tokens / (train_ms / 1000.0) if train_ms > 0 else 0.0,
            "val_loss": val_loss,
            "val_tokens": self.val_tokens,
            "pre_train_ms": self._pre_train_ms,
        }
        self._emit("final", result)
        self._finished = True
        return types.SimpleNamespace(**result)

    def _section_rows(self, train_ms):
        rows = []
        top = 0.0
        for name in self._order:
            total, calls, depth = self._sections[name]
            if depth == 0:
                top += total
            rows.append({"name": name, "total_ms": total, "avg_ms": total / calls if calls else 0.0,
                         "pct": 100.0 * total / train_ms if train_ms > 0 else 0.0, "calls": calls})
        rows.sort(key=lambda r: -r["total_ms"])
        if rows and train_ms > top:
            rest = train_ms - top
            rows.append({"name": "(untracked)", "total_ms": rest, "avg_ms": rest / max(self._steps_done, 1),
                         "pct": 100.0 * rest / train_ms, "calls": self._steps_done})
        return rows

    # -- boot hooks --------------------------------------------------------

    def report_exception(self, exc, tb_text):
        """Write the error event for exc (called by the boot script)."""
        if self._reported:
            return
        self._reported = True
        code = getattr(exc, "code", None) if isinstance(exc, HarnessError) else None
        fields = {"kind": type(exc).__name__, "code": code or "exception", "message": str(exc),
                  "traceback": tb_text, "step": self._steps_done}
        if self.world_size > 1:
            fields["rank"] = self.rank
        # Errors are written by every rank: the failing rank is often not 0.
        self.tel.write("error", fields)

    def report(self, kind, code, message):
        if self._reported:
            return
        self._reported = True
        fields = {"kind": kind, "code": code, "message": message, "traceback": "", "step": self._steps_done}
        if self.world_size > 1:
            fields["rank"] = self.rank
        self.tel.write("error", fields)


# ---------------------------------------------------------------------------
# Causality probe


def _causality_probe(h, logits_fn):
    """Check that logits at position t depend only on tokens at positions <= t.

    A few validation windows are scored three times with the same batch
    layout: twice unperturbed (the difference is the noise floor) and once
    with one token replaced at a random position p per row. Logits before p
    must not move beyond the noise floor (a move is a leak of future tokens);
    logits at p and after should move (otherwise the probe learned nothing).
    With doc_isolated, windows holding a BOS at b are also perturbed at b-1 and
    at a random earlier position, and logits from b on must not move
    (documents must not see each other).
    The probe runs identically on every rank; rank 0 writes the event.
    """
    cfg = h.probe_cfg
    data = h._val()
    T, V = h.val_seq_len, h.vocab_size
    n_seq = max(1, min(int(cfg.get("sequences") or 4), h._val_windows))
    n_pos = max(1, int(cfg.get("positions") or 8))
    rng = np.random.default_rng(h.seed + 7919)
    t0 = _perf()

    rows, perturbed, kinds = [], [], []  # base row, perturbed row, (kind, p, boundary)
    windows = rng.choice(h._val_windows, size=n_seq, replace=False)
    for w in windows:
        base = data[w * T:(w + 1) * T].astype(np.int64)
        for _ in range(n_pos):
            p = int(rng.integers(0, T))
            row = base.copy()
            row[p] = (row[p] + 1 + int(rng.integers(0, V - 1))) % V
            rows.append(base)
            perturbed.append(row)
            kinds.append(("causal", p, p))
    if cfg.get("doc_isolated"):
        bos = h.cfg.bos_id
        found = 0
        for w in rng.permutation(h._val_windows):
            base = data[w * T:(w + 1) * T].astype(np.int64)
            starts = np.nonzero(base[1:] == bos)[0] + 1
            if starts.size == 0:
                continue
            b = int(starts[0])
            # The token right before the boundary, where a leak shows most,
            # and one further back.
            for q in sorted({b - 1, int(rng.integers(0, b))}):
                row = base.copy()
                row[q] = (row[q] + 1 + int(rng.integers(0, V - 1))) % V
                rows.append(base)
                perturbed.append(row)
                kinds.append(("doc", q, b))
            found += 1
            if found >= n_seq:
                break

    def run(batch_rows):
        out = []
        B = h.val_batch_seqs
        dev = torch.device(h.device)
        with torch.no_grad():
            for s in range(0, len(batch_rows), B):
                x = torch.from_numpy(np.stack(batch_rows[s:s + B])).to(dev)
                lg = logits_fn(x)
                if not isinstance(lg, torch.Tensor) or lg.dim() != 3 or lg.shape[1] != T:
                    h._fail("logits_shape", "causality probe: logits_fn returned an unexpected shape")
                out.append(lg[..., :V].float().cpu())
        return torch.cat(out)

    a = run(rows)
    b = run(rows)
    c = run(perturbed)
    noise = float((a - b).abs().max())
    scale = float(a.abs().max())
    tol = max(4.0 * noise, 1e-5 * max(1.0, scale))
    diff = (c - a).abs().amax(dim=2)  # [rows, T]: largest logit change per position
    leak = None
    changed = 0
    n_causal = 0
    for i, (kind, p, boundary) in enumerate(kinds):
        d = diff[i]
        if kind == "causal":
            n_causal += 1
            before = d[:p]
            if before.numel() and float(before.max()) > tol and leak is None:
                pos = int(torch.nonzero(before > tol)[0])
                leak = {"kind": "future", "row": i, "perturbed": p, "position": pos, "size": float(before.max())}
            if float(d[p:].max()) > tol:
                changed += 1
        else:
            after = d[boundary:]
            if float(after.max()) > tol and leak is None:
                pos = boundary + int(torch.nonzero(after > tol)[0])
                leak = {"kind": "document", "row": i, "perturbed": p, "position": pos, "size": float(after.max())}
    sensitive = changed / n_causal if n_causal else 0.0
    ok = leak is None and changed > 0
    if leak is not None:
        msg = ("logits at position %d changed by %.3g (tolerance %.3g) when the token at position %d was "
               "perturbed: %s" % (leak["position"], leak["size"], tol, leak["perturbed"],
                                  "the model sees future tokens" if leak["kind"] == "future"
                                  else "the model sees across a document boundary (BOS)"))
    elif changed == 0:
        msg = "no perturbation changed any logits: the model's output does not depend on its input"
    else:
        msg = "no leak found"
    h._emit("probe", {
        "ok": ok, "sequences": int(n_seq), "perturbations": len(kinds), "noise_floor": noise,
        "tolerance": tol, "sensitive": sensitive, "leak": leak, "message": msg,
        "doc_isolated": bool(cfg.get("doc_isolated")), "ms": (_perf() - t0) * 1000.0,
    })


# ---------------------------------------------------------------------------
# Helpers


def _noop():
    pass


def _fmt(x):
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _dist():
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist
    return None


def _top_ops(prof, cuda, k):
    """The k ops with the most self time: CPU time on CPU, device time on
    CUDA. Attribute names differ across torch versions (self_cuda_time_total
    in 1.x, self_device_time_total later)."""
    def dev_time(e):
        for attr in ("self_device_time_total", "self_cuda_time_total"):
            v = getattr(e, attr, None)
            if v is not None:
                return float(v)
        return 0.0

    key = dev_time if cuda else (lambda e: float(e.self_cpu_time_total))
    rows = []
    for e in prof.key_averages():
        name = e.key
        if name.startswith("ProfilerStep") or name.startswith("[memory]"):
            continue
        t = key(e)
        if t > 0:
            rows.append({"name": name, "total_ms": t / 1000.0, "calls": int(e.count)})
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
            line = f.readline()
        for word in line.split():
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
    """torch's BLAS setting and, where /proc tells, the library actually
    loaded (Debian's torch says "generic" and uses whatever libblas the
    system's alternatives point to)."""
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
    if libs:
        info = "%s (%s)" % (info or "?", ", ".join(libs))
    return info


# ---------------------------------------------------------------------------
# Public API: thin functions over the one harness object.

_H = _Harness(_CONFIG_PATH, _CONFIG)


def config():
    """The injected configuration: train_files, vocab_size, bos_id,
    val_seq_len, val_batch_seqs, seed, device, threads, max_steps, mode,
    world_size, rank, local_rank, track."""
    return _H.cfg


def train_begin():
    """Start the train clock. Everything before it is untimed setup."""
    _H.train_begin()


def steps(n):
    """Iterate the step indices 0..n-1, capped by the track's max_steps and
    shortened in the fast check."""
    return _H.steps(n)


def section(name):
    """Context manager timing a named part of a step (forward, backward,
    optimizer, data, ...)."""
    return _H.section(name)


def step(step, tokens=0, train_loss=None):
    """Report the end of a step: its index, the training tokens this process
    consumed in it, and the training loss (a tensor is read only at
    designated steps)."""
    _H.step(step, tokens, train_loss)


def want_validation(step):
    """True when the track wants an intermediate validation after step."""
    return _H.want_validation(step)


def validate(logits_fn):
    """Score the model on the track's validation slice with the clock
    paused. logits_fn(x: LongTensor[B, T]) -> logits[B, T, V>=vocab_size]."""
    _H.validate(logits_fn)


def finish(logits_fn):
    """Stop the clock, run the final validation (and the causality probe
    where the track enables it), and write the result."""
    return _H.finish(logits_fn)
