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

import hashlib
import hmac
import json
import math
import os
import platform
import random
import resource
import socket
import sys
import time
import traceback
import types
import weakref

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
    name = "shard %s" % path
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ShardError("cannot open shard %s: %s" % (path, e.strerror or e)) from None
    try:
        count = _shard_count(fd, name)
        return _read_tokens(fd, 0, count if max_tokens is None else min(count, int(max_tokens)), name)
    finally:
        os.close(fd)


def _shard_count(fd, name):
    """Check the header and the size of the shard open as fd and return its
    token count. name says what fd is in messages ("shard /data/x.bin")."""
    try:
        size = os.fstat(fd).st_size
        if size < SHARD_HEADER_BYTES:
            raise ShardError(
                "%s is %d bytes, shorter than the %d-byte header: the file is truncated "
                "or not a shard" % (name, size, SHARD_HEADER_BYTES))
        raw = bytearray(SHARD_HEADER_BYTES)
        _pread_into(fd, memoryview(raw), 0)
    except OSError as e:
        raise ShardError("cannot read %s: %s" % (name, e.strerror or e)) from None
    header = np.frombuffer(bytes(raw), dtype="<i4")
    if int(header[0]) != SHARD_MAGIC:
        raise ShardError("%s: bad magic number %d (want %d): not a speedrun-format shard"
                         % (name, int(header[0]), SHARD_MAGIC))
    if int(header[1]) != SHARD_VERSION:
        raise ShardError("%s: unsupported version %d (want %d)" % (name, int(header[1]), SHARD_VERSION))
    count = int(header[2])
    body = size - SHARD_HEADER_BYTES
    if count < 0 or body != 2 * count:
        raise ShardError(
            "%s: header says %d tokens (%d bytes) but the file holds %d bytes after "
            "the header: the file is truncated or corrupt" % (name, count, 2 * count, body))
    return count


def _read_tokens(fd, start, n, name):
    """Tokens start .. start+n of the shard open as fd, as a writable numpy
    uint16 array. Reads with pread, which neither uses nor moves the
    descriptor's offset: processes that inherited the same descriptor can
    read at the same time."""
    tokens = np.empty(n, dtype="<u2")
    try:
        got = _pread_into(fd, memoryview(tokens).cast("B"), SHARD_HEADER_BYTES + 2 * start)
    except OSError as e:
        raise ShardError("cannot read %s: %s" % (name, e.strerror or e)) from None
    if got != 2 * n:
        raise ShardError("%s: read %d of %d tokens" % (name, got // 2, n))
    return tokens.astype(np.uint16, copy=False)


def _pread_into(fd, buf, offset):
    """Fill the writable byte buffer buf from offset with pread, which does
    not use or move the descriptor's offset (several processes may share
    it); returns the bytes read, fewer only at the end of the file."""
    done, n = 0, len(buf)
    while done < n:
        if hasattr(os, "preadv"):
            k = os.preadv(fd, [buf[done:done + (1 << 30)]], offset + done)
        else:
            b = os.pread(fd, min(n - done, 1 << 26), offset + done)
            k = len(b)
            buf[done:done + k] = b
        if k == 0:
            break
        done += k
    return done


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
    from several ranks do not interleave.

    With a key (the run config's key_fd) every line is numbered ("seq", per
    process) and ends with "mac": HMAC-SHA256 of the line before that field
    was added. The program can write to the file too, but not lines that
    the evaluator will believe, nor remove one without leaving a gap."""

    def __init__(self, path, t0, key=None, rank=0):
        self._path = path
        self._t0 = t0
        self._fd = None
        self._key = key
        self._rank = rank
        self._seq = 0

    def write(self, event, fields):
        obj = {"event": event, "t_ms": round((_perf() - self._t0) * 1000.0, 3)}
        obj.update(fields)
        if self._key is not None:
            obj["seq"] = self._seq
            if self._rank:
                obj["rank"] = self._rank
            self._seq += 1
        try:
            line = json.dumps(_clean(obj), allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            keep = {k: obj[k] for k in ("seq", "rank") if k in obj}
            line = json.dumps(dict({"event": "warning", "t_ms": obj["t_ms"], "code": "telemetry",
                                    "message": "could not encode a %s event: %s" % (event, e)}, **keep),
                              separators=(",", ":"))
        if self._key is not None:
            mac = hmac.new(self._key, line.encode("utf-8"), hashlib.sha256).hexdigest()
            line = line[:-1] + ',"mac":"%s"}' % mac
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


def _read_key(fd):
    """The telemetry key from its inherited descriptor, which is closed
    here, before any program code runs. None when the config names none."""
    if not fd:
        return None
    if not isinstance(fd, int) or fd < 3:
        raise HarnessError("config", "the run config's key_fd is %r; want an inherited descriptor >= 3" % (fd,))
    try:
        key = os.pread(fd, 256, 0).strip()
    except OSError as e:
        raise HarnessError("config", "cannot read the telemetry key from descriptor %d: %s" % (fd, e)) from None
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    if len(key) < 32:
        raise HarnessError("config", "the telemetry key on descriptor %d is too short" % fd)
    return key


# ---------------------------------------------------------------------------
# The harness


class _Harness:
    def __init__(self, path, raw):
        self.t_import = _T_IMPORT
        tpath = raw.get("telemetry_path") or ""
        if not isinstance(tpath, str) or not tpath:
            raise HarnessError("config", "the run config %s has no telemetry_path" % path)
        self.rank = int(os.environ.get("RANK", "0"))
        self.tel = _Telemetry(tpath, self.t_import, _read_key(raw.get("key_fd")), self.rank)
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
        ver = g("verify") or {}
        self.max_noise = float(ver.get("max_noise") or DEFAULT_MAX_NOISE)
        if not self.max_noise >= 0:
            raise HarnessError("config", "config verify.max_noise is %r; want a fraction >= 0" % self.max_noise)
        self.allow_noise = bool(ver.get("allow_nondeterministic"))
        self.min_initial_loss = float(ver.get("min_initial_loss") or 0)
        if not self.min_initial_loss >= 0:
            raise HarnessError("config", "config verify.min_initial_loss is %r; want a loss >= 0 (0: no check)"
                               % self.min_initial_loss)

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
        # The validation tokens are read now, before any program code runs:
        # an inherited descriptor is closed right after, so the program has
        # neither the path nor the descriptor.
        self._val_note = ""
        self._load_val(g("val_file") or "", g("val_fd"), int(g("val_tokens") or 0))
        self._val_windows = self.val_tokens // self.val_seq_len

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
        self._val_last = None
        self._prof = None
        self._prof_done = False
        self._prof_first = 0
        self._warned = set()

        # Behavioural checks (see "Behavioural checks" below).
        self._phase = _SETUP
        self._phase_before_eval = _SETUP
        self._grad_depth = 0
        self._pre_snaps = {}  # id -> _Snap of tensors reached by training before train_begin
        self._pre_opts = {}  # id(optimizer) -> its state before its first step before train_begin
        self._pre_where = ""  # where the first backward pass or optimizer step before train_begin was
        self._pre_backward = 0
        self._pre_steps = 0
        self._tracked = None  # tensors reached by the first backward pass in training
        self._tracked_ids = set()
        self._initial = None  # [(tensor, its CPU copy at the first backward pass in training)]
        self._train_opts = set()  # ids of optimizers that stepped in training
        self._eval_what = ""
        self._eval_sigs = None
        self._exact_left = _EXACT_ELEMENTS
        self._fixed_classes = np.random.default_rng(0x5eed).choice(
            self.vocab_size, size=min(self.vocab_size, _GATHER_CLASSES), replace=False)
        self._checks = {"pretrain_backward": 0, "pretrain_steps": 0, "pretrain_tensors": 0,
                        "pretrain_exact": True, "snapshot_ms": 0.0, "pretrain_check_ms": 0.0,
                        "tracked_tensors": 0, "track_ms": 0.0, "validations": 0, "params_check_ms": 0.0,
                        "extra_calls": 0, "extra_ms": 0.0, "noise": None, "drift": None,
                        "initial_loss": None, "initial_loss_min": self.min_initial_loss, "initial_tensors": 0,
                        "initial_ms": 0.0, "initial_skipped": ""}

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
            if code in _VERDICT_CODES:
                # Written now, with the program's stack: a program that
                # catches the error and hangs still leaves the reason.
                self._reported = True
                fields = {"kind": "HarnessError", "code": code, "message": message,
                          "traceback": _program_stack(), "step": self._steps_done}
                if self.world_size > 1:
                    fields["rank"] = self.rank
                self.tel.write("error", fields)
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
        self._check_pretrain()
        if self.compile_budget_ms > 0 and self._pre_train_ms > self.compile_budget_ms:
            self._fail("compile_budget",
                       "untimed setup before fh.train_begin() took %.0f ms, over the track's compile budget of "
                       "%.0f ms: imports, compilation and warm-up must fit the budget, since the clock starts "
                       "only at train_begin" % (self._pre_train_ms, self.compile_budget_ms))
        self._phase = _TRAIN
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

    def _load_val(self, path, fd, scored_tokens):
        """Read the validation text of this run from the inherited descriptor
        fd (closed here) or else from path, into _scored (the first
        scored_tokens + 1 tokens of the shard, which only the final
        validation of a full run scores: the result), _practice (the next
        val_tokens + 1 tokens, which the fast check and intermediate
        validations score instead, so that the program never sees the
        scored windows before training is over)."""
        scored = scored_tokens + 1
        practice = self.val_tokens + 1
        if fd not in (None, "", 0):
            fd = int(fd)
            if fd < 3:
                raise HarnessError("config", "the run config's val_fd is %d; want an inherited descriptor >= 3" % fd)
            try:
                os.fstat(fd)
            except OSError:
                raise HarnessError(
                    "config", "the run config passes the validation shard as descriptor %d, but it is not open "
                    "in this process: start the program through frontier (frontier_boot.py passes it on to "
                    "its workers; other launchers such as torchrun close it)" % fd) from None
            name = "the validation shard (descriptor %d)" % fd
        elif path:
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError as e:
                raise HarnessError("shard", "validation data: cannot open shard %s: %s"
                                   % (path, e.strerror or e)) from None
            name = "shard %s" % path
        else:
            raise HarnessError("config", "the run config names no validation data (val_fd or val_file)")
        try:
            count = _shard_count(fd, name)
            if count < max(scored, self.val_tokens + 1):
                raise HarnessError("shard", "the validation shard holds %d tokens but %d are needed (%d tokens plus "
                                   "one target)" % (count, scored, scored_tokens))
            self._scored = None if self.fast else _read_tokens(fd, 0, scored, name)
            if count - scored >= practice:
                self._practice = _read_tokens(fd, scored, practice, name)
            else:
                self._practice = self._scored[:practice] if self._scored is not None \
                    else _read_tokens(fd, 0, practice, name)
                self._val_note = (
                    "the validation shard has no text after the scored slice (%d tokens, %d more needed): the %s "
                    "scores windows of the scored slice, which shows them to the program before training is over"
                    % (count, scored + practice - count, "fast check" if self.fast else "intermediate validation"))
        except ShardError as e:
            raise HarnessError("shard", "validation data: %s" % e) from None
        finally:
            os.close(fd)

    def _my_windows(self):
        """The validation windows [lo, hi) this process scores, and whether
        the ranks share the slice (an initialized torch.distributed)."""
        n = self._val_windows
        shared = _dist() is not None and self.world_size > 1
        if shared:
            return n * self.rank // self.world_size, n * (self.rank + 1) // self.world_size, True
        return 0, n, False

    def _evaluate(self, logits_fn, what, data, plan=None):
        """Mean float32 cross-entropy of logits_fn over the validation slice.

        Window i is x = val[i*T : i*T+T], y = val[i*T+1 : i*T+T+1]. Under an
        initialized torch.distributed each rank scores a contiguous share of
        the windows and the sums are all-reduced. With a plan, the checks'
        extra calls run where the plan put them among the batches, and the
        statistics of the batch the plan rechecks are kept."""
        T, V, B = self.val_seq_len, self.vocab_size, self.val_batch_seqs
        lo, hi, shared = self._my_windows()
        if self.world_size > 1 and not shared:
            self._warn("val_unsharded", "torch.distributed is not initialized: every rank validates "
                       "the whole slice")
        dev = torch.device(self.device)
        total = torch.zeros((), dtype=torch.float64, device=dev)
        count = 0
        starts = range(lo, hi, B)
        with torch.no_grad():
            for g, s in enumerate(starts):
                if plan is not None:
                    self._extra_calls(logits_fn, plan, g)
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
                if plan is not None and g == plan.k:
                    plan.during = self._stats(logits, plan.k_idx)
                # The harness's own loss: float32 log-softmax over all classes
                # the program returns, summed here, averaged below.
                total += F.cross_entropy(logits.float().reshape(-1, shape[2]), y.reshape(-1).to(logits.device),
                                         reduction="sum").to(torch.float64)
                count += (e - s) * T
                del logits
            if plan is not None:
                self._extra_calls(logits_fn, plan, len(starts))
        if shared:
            t = torch.stack([total, torch.tensor(float(count), dtype=torch.float64, device=dev)])
            if _dist().get_backend() != "nccl":
                t = t.cpu()
            _dist().all_reduce(t)
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
            self._checked_validation(logits_fn, final)
        finally:
            if paused:
                self._clock.resume()

    def _checked_validation(self, logits_fn, final):
        """One validation pass and the checks woven into it. logits_fn must
        not run backward passes or optimizer steps and must not change the
        weights; a batch scored by the pass, chosen at random, must get the
        same logits when it comes again later in the pass; two calls on the
        same input must agree within max_noise; and on the final pass of a
        full run the causality probe's calls are mixed in among the
        validation batches, so that nothing tells the program which calls
        are scored and which are checks."""
        probe = final and bool(self.probe_cfg.get("enabled")) and not self.fast
        what = "the final validation" if final else "the validation after step %d" % self._steps_done
        scored = final and not self.fast
        data = self._scored if scored else self._practice
        if not scored and self._val_note:
            self._warn("val_practice", self._val_note)
        self._eval_begin(what)
        try:
            plan = self._plan(probe, data)
            t0 = _perf()
            loss, count = self._evaluate(logits_fn, "validation", data, plan)
            ms = (_perf() - t0) * 1000.0 - plan.ms
            self._checks["extra_calls"] += len(plan.results)
            self._checks["extra_ms"] += plan.ms
            self._val_last = loss
            train_ms = self._clock.read_ms()
            self._emit("val", {"step": self._steps_done, "val_loss": loss, "tokens": count,
                               "seq_len": self.val_seq_len, "ms": ms, "final": final,
                               "slice": "scored" if scored or self._val_note else "practice"})
            if self.is_main:
                steps = max(self._steps_done, 1)
                print("step:%d/%s val_loss:%.4f train_time:%.0fms step_avg:%.2fms" % (
                    self._steps_done, self._last_step + 1 if self._last_step is not None else "?", loss,
                    train_ms, train_ms / steps), flush=True)
            # The most specific finding first: a changed weight explains
            # changed logits, and state or noise would blur the probe.
            self._check_params()
            noise = self._check_repeat(logits_fn, plan, what)
            if probe:
                _probe_verdict(self, logits_fn, plan, noise)
        finally:
            self._eval_end(final)

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
        self._check_initial(logits_fn)
        if self.full_telemetry:
            self._emit("sections", {"sections": self._section_rows(train_ms)})
        self._emit("memory", _memory(self.cuda))
        self._emit("checks", self._checks)
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

    # -- behavioural checks ------------------------------------------------
    #
    # Training before train_begin: the first time a backward pass (or an
    # optimizer step) reaches a tensor before the clock starts, the tensor's
    # contents are recorded; at train_begin they must be unchanged. During
    # validation and the probe, backward passes and optimizer steps are
    # refused, the weights reached by training must not change, and a batch
    # the pass scored must get the same logits when it is called again.

    def _on_grad(self, roots):
        """Called by the wrapped torch.autograd.backward, Tensor.backward and
        torch.autograd.grad, before the gradient is computed."""
        ph = self._phase
        if ph == _TRAIN:
            if self._tracked is None:
                self._track_first(roots)
            return
        if ph == _SETUP:
            t0 = _perf()
            self._pre_backward += 1
            if not self._pre_where:
                self._pre_where = _caller()
            self._snapshot(_leaves(roots))
            self._checks["snapshot_ms"] += (_perf() - t0) * 1000.0
        elif ph == _EVAL:
            self._fail("stateful_eval",
                       "a backward pass ran during %s (at %s, after %d steps): logits_fn must not compute "
                       "gradients or train; test-time training on validation tokens is not allowed"
                       % (self._eval_what, _caller(), self._steps_done))

    def _on_opt_step(self, opt):
        """Called before every optimizer step (torch.optim.Optimizer)."""
        ph = self._phase
        if ph == _TRAIN:
            k = id(opt)
            if k in self._train_opts:
                return
            self._train_opts.add(k)
            paused = self._clock.pause()
            t0 = _perf()
            try:
                if self._tracked is None:
                    self._tracked = []
                self._track(_opt_params(opt))
                pre = self._pre_opts.pop(k, None)
                if pre is not None and pre[0]() is opt:
                    self._check_opt_state(opt, pre[1], pre[2])
            finally:
                self._checks["track_ms"] += (_perf() - t0) * 1000.0
                if paused:
                    self._clock.resume()
            return
        if ph == _SETUP:
            t0 = _perf()
            self._pre_steps += 1
            where = _caller()
            if not self._pre_where:
                self._pre_where = where
            self._snapshot(_opt_params(opt))
            if id(opt) not in self._pre_opts:
                self._pre_opts[id(opt)] = (weakref.ref(opt), _opt_state(opt), where)
            self._checks["snapshot_ms"] += (_perf() - t0) * 1000.0
        elif ph == _EVAL:
            self._fail("stateful_eval",
                       "an optimizer step (%s.step) ran during %s (at %s, after %d steps): logits_fn must "
                       "not train; test-time training on validation tokens is not allowed"
                       % (type(opt).__name__, self._eval_what, _caller(), self._steps_done))

    def _snapshot(self, tensors):
        new = [t for t in tensors if id(t) not in self._pre_snaps]
        if not new:
            return
        for t, sig in zip(new, _signatures(new)):
            n = t.numel()
            exact = n <= self._exact_left
            if exact:
                self._exact_left -= n
            else:
                self._checks["pretrain_exact"] = False
            self._pre_snaps[id(t)] = _Snap(t, sig, exact)
        self._checks["pretrain_tensors"] = len(self._pre_snaps)

    def _check_pretrain(self):
        """At train_begin: every tensor that training reached before the clock
        started must hold what it held then."""
        c = self._checks
        c["pretrain_backward"], c["pretrain_steps"] = self._pre_backward, self._pre_steps
        snaps, self._pre_snaps = list(self._pre_snaps.values()), {}
        if not snaps:
            return
        t0 = _perf()
        changed = []
        for s, sig in zip(snaps, _signatures([s.t for s in snaps])):
            ch = s.change(sig)
            if ch is not None:
                changed.append((s, ch))
        c["pretrain_check_ms"] = (_perf() - t0) * 1000.0
        if not changed:
            return
        s, ch = max(changed, key=lambda sc: sc[1]["size"])
        self._fail("pretrain",
                   "the program trained before the clock started: %d of %d tensors that its backward passes or "
                   "optimizer steps reached before fh.train_begin() changed (%d backward passes and %d optimizer "
                   "steps before train_begin, the first at %s); the largest change is %s in %s. Warm-up before "
                   "train_begin is allowed only when it restores the initial state: save the model's and the "
                   "optimizer's state_dict() before it and load them back after"
                   % (len(changed), len(snaps), self._pre_backward, self._pre_steps, self._pre_where or "?",
                      _fmt_change(ch), s.describe()))

    def _check_opt_state(self, opt, before, where):
        """At an optimizer's first step in training: its state must be what it
        was before its first step before train_begin."""
        now = _opt_state(opt)
        n = len(set(now) ^ set(before)) + sum(1 for k in set(now) & set(before) if not _same(now[k], before[k]))
        if n == 0:
            return
        self._fail("pretrain",
                   "the program trained before the clock started: the state of optimizer %s (%d entries now, %d "
                   "before) differs in %d entries from its state before its first step before fh.train_begin() "
                   "(at %s). Warm-up before train_begin is allowed only when it restores the initial state: load "
                   "the optimizer's state_dict() back too" % (type(opt).__name__, len(now), len(before), n, where))

    def _track_first(self, roots):
        """At the first backward pass in training: remember the tensors it
        reaches, whose contents validation must not change."""
        paused = self._clock.pause()
        t0 = _perf()
        try:
            self._tracked = []
            self._track(_leaves(roots))
            if self.min_initial_loss > 0:
                self._save_initial()
        finally:
            self._checks["track_ms"] += (_perf() - t0) * 1000.0
            if paused:
                self._clock.resume()

    def _save_initial(self):
        """The tensors the first timed backward pass reaches hold the model
        its forward pass used: the model that started the clock (and any
        weights a program installed in its first step). A copy on the CPU
        is scored by _check_initial at finish."""
        t0 = _perf()
        try:
            self._initial = [(t, t.detach().to("cpu", copy=True)) for t in self._tracked]
            self._checks["initial_tensors"] = len(self._initial)
        except Exception as e:  # a tensor type that cannot be copied: say so, do not fail the run
            self._initial = None
            self._checks["initial_skipped"] = "the trained tensors could not be copied: %s" % e
        self._checks["initial_ms"] += (_perf() - t0) * 1000.0

    def _check_initial(self, logits_fn):
        """Parameters fitted to the data before the clock (statistics counted
        from the training shards, weights loaded from a file or trained in
        an earlier run) are untimed training that no backward pass reveals.
        An untrained model scores about ln(vocab_size) on any text; the
        model that started the clock, scored on one batch of the unscored
        practice slice, must not do much better (min_initial_loss). Its
        tensors are put back in place for the call, under the same rules as
        validation, and the final ones restored exactly."""
        init, self._initial = self._initial, None
        if not init:
            if self.min_initial_loss > 0 and not self._checks["initial_skipped"]:
                self._checks["initial_skipped"] = "no backward pass ran in training"
            return
        T = self.val_seq_len
        data = self._practice if self._practice is not None else self._scored
        rows = min(self.val_batch_seqs, (len(data) - 1) // T) if data is not None else 0
        if rows < 1:
            self._checks["initial_skipped"] = "no unscored text to score the initial model on"
            return
        t0 = _perf()
        dev = torch.device(self.device)
        chunk = torch.from_numpy(data[:rows * T + 1].astype(np.int64))
        x, y = chunk[:-1].view(rows, T).to(dev), chunk[1:].view(rows, T).to(dev)
        what = "the initial-model check"

        def score():
            out = logits_fn(x)
            if not isinstance(out, torch.Tensor) or out.dim() != 3 or tuple(out.shape[:2]) != (rows, T):
                self._fail("logits_shape", "%s: logits_fn(x) with x of shape [%d, %d] returned %s"
                           % (what, rows, T, list(out.shape) if isinstance(out, torch.Tensor)
                              else type(out).__name__))
            return float(F.cross_entropy(out.float().reshape(-1, out.shape[2]), y.reshape(-1).to(out.device),
                                         reduction="sum"))

        def put(values):
            for (t, _), v in zip(init, values):
                t.copy_(v)

        # An error of logits_fn is the program's (it answered the final
        # validation a moment ago); a tensor that cannot be copied back and
        # forth (an exotic tensor subclass) skips the check instead.
        self._phase_before_eval, self._phase, self._eval_what = self._phase, _EVAL, what
        try:
            with torch.no_grad():
                now = score()
                final = None
                try:
                    final = [t.detach().to("cpu", copy=True) for t, _ in init]
                    put([c for _, c in init])
                except Exception as e:
                    self._checks["initial_skipped"] = "the trained tensors could not be put back: %s" % e
                    if final is not None:
                        put(final)
                    return
                try:
                    then = score()
                finally:
                    put(final)
        finally:
            self._phase = self._phase_before_eval
            self._checks["initial_ms"] += (_perf() - t0) * 1000.0
        # Answers that stay the same although training changed the tensors
        # come from elsewhere (an averaged copy of the model): nothing to
        # judge. Unchanged tensors (no learning at all) are judged.
        if then == now and any(not torch.equal(c, f) for (_, c), f in zip(init, final)):
            self._checks["initial_skipped"] = ("logits_fn's answers do not depend on the tensors training updates "
                                               "(another copy of the model?)")
            return
        loss = then / (rows * T)
        self._checks["initial_loss"] = loss
        if loss < self.min_initial_loss:
            self._fail("pretrain",
                       "the model that started the clock was already fitted to data: with the tensors it trains (%d) "
                       "as they were at the first timed backward pass, it scores a loss of %.4f on unscored text, "
                       "and an untrained model scores about ln(%d) = %.4f (the limit is %.4f). Statistics "
                       "counted from the training data, or weights loaded or trained, before fh.train_begin() "
                       "are untimed training: compute them after it"
                       % (len(init), loss, self.vocab_size, math.log(self.vocab_size), self.min_initial_loss))

    def _track(self, tensors):
        for t in tensors:
            if id(t) not in self._tracked_ids:
                self._tracked_ids.add(id(t))
                self._tracked.append(t)
        self._checks["tracked_tensors"] = len(self._tracked)

    def _eval_begin(self, what):
        self._phase_before_eval = self._phase
        self._phase = _EVAL
        self._eval_what = what
        self._checks["validations"] += 1
        self._eval_sigs = None
        if self._tracked:
            t0 = _perf()
            self._eval_sigs = _signatures(self._tracked)
            self._checks["params_check_ms"] += (_perf() - t0) * 1000.0

    def _eval_end(self, final):
        self._phase = _DONE if final else self._phase_before_eval
        self._eval_sigs = None

    def _check_params(self):
        """The tensors training reached must not change during validation."""
        if self._eval_sigs is None:
            return
        t0 = _perf()
        changed = []
        for t, old, new in zip(self._tracked, self._eval_sigs, _signatures(self._tracked)):
            if old.shape != new.shape or not np.array_equal(old, new, equal_nan=True):
                k = min(t.numel(), _SAMPLES)
                size = float(np.nanmax(np.abs(new[-k:] - old[-k:]))) if old.shape == new.shape and k else float("inf")
                changed.append((size, t))
        self._checks["params_check_ms"] += (_perf() - t0) * 1000.0
        if changed:
            size, t = max(changed, key=lambda c: c[0])
            self._fail("stateful_eval",
                       "%d of %d tensors that training updates changed during %s (after %d steps; the largest "
                       "sampled change is %s in %s): logits_fn must not update the model (test-time training, "
                       "caches kept in parameters)" % (len(changed), len(self._tracked), self._eval_what,
                                                       self._steps_done, "%.3g" % size if size > 0 else
                                                       "in the checksum only", _describe(t)))

    def _plan(self, probe, data):
        """Where the checks' extra calls go in a validation pass: a batch k,
        chosen at random, is called again somewhere after it was scored (and
        with the probe, in changed copies too). Random with the system's
        entropy, not the run's seed: the program cannot know which calls
        are checks."""
        T, B = self.val_seq_len, self.val_batch_seqs
        lo, hi, _ = self._my_windows()
        nb = len(range(lo, hi, B))
        plan = _Plan()
        if nb == 0:
            return plan
        plan.k = _RNG.randrange(nb)
        s = lo + plan.k * B
        e = min(s + B, hi)
        rows = data[s * T:e * T].astype(np.int64).reshape(e - s, T)
        plan.k_rows = rows
        if probe:
            calls, plan.k_idx = _probe_calls(self, rows, data, (s, e))
            plan.recheck = "a"
        else:
            plan.k_idx = self._gather_idx(rows, ())
            calls = [_Call("recheck", rows, plan.k_idx)]
        for c in calls:
            plan.extra.setdefault(_RNG.randint(plan.k + 1, nb), []).append(c)
        for calls in plan.extra.values():
            _RNG.shuffle(calls)
        return plan

    def _extra_calls(self, logits_fn, plan, gap):
        calls = plan.extra.get(gap)
        if not calls:
            return
        t0 = _perf()
        for c in calls:
            plan.results[c.name] = self._probe_call(logits_fn, c.rows, c.idx)
        plan.ms += (_perf() - t0) * 1000.0

    def _probe_call(self, logits_fn, rows, idx):
        """logits_fn on rows (int64 [n, T]); the statistics compared."""
        x = torch.from_numpy(rows).to(torch.device(self.device), non_blocking=True)
        with torch.no_grad():
            lg = logits_fn(x)
        if not isinstance(lg, torch.Tensor) or lg.dim() != 3 or tuple(lg.shape[:2]) != tuple(rows.shape) \
                or lg.shape[2] < self.vocab_size:
            self._fail("logits_shape", "validation: logits_fn returned %s for input of shape %s; want "
                       "[%d, %d, V] with V >= vocab_size %d" % (
                           list(lg.shape) if isinstance(lg, torch.Tensor) else type(lg).__name__,
                           list(rows.shape), rows.shape[0], rows.shape[1], self.vocab_size))
        return self._stats(lg, idx)

    def _gather_idx(self, base, others):
        """Which logits are compared: all of them for vocabularies up to
        _FULL_V classes; else, per position, the log-partition, a fixed set
        of classes and the class of the next token in base and in each of
        the changed copies of it (where a leak of the next token shows)."""
        if self.vocab_size <= _FULL_V:
            return None
        n, T = base.shape
        cols = [np.broadcast_to(self._fixed_classes, (n, T, self._fixed_classes.size))]
        for rows in (base,) + tuple(others):
            nxt = np.empty((n, T, 1), dtype=np.int64)
            nxt[:, :-1, 0], nxt[:, -1, 0] = rows[:, 1:], rows[:, -1]
            cols.append(nxt)
        return np.ascontiguousarray(np.concatenate(cols, axis=2))

    def _stats(self, logits, idx):
        """What is compared of a batch's logits, in float32 on the CPU."""
        with torch.no_grad():
            lg = logits.float()
            if idx is None:
                return lg.cpu()
            lse = torch.logsumexp(lg, dim=-1, keepdim=True)
            picked = lg[..., :self.vocab_size].gather(-1, torch.from_numpy(idx).to(lg.device))
            return torch.cat([lse, picked], dim=-1).cpu()

    def _check_repeat(self, logits_fn, plan, what):
        """Batch k, called again later in the pass, must get the logits it
        was scored with. When it does not, one more call on it tells noise
        (the two later calls differ too: more than max_noise of the logit
        scale fails the run) from state (they agree: logits_fn answers a
        batch it has seen differently). Returns the noise floor, the
        difference between two identical calls."""
        during, again = plan.during, plan.results.get(plan.recheck)
        if during is None or again is None:
            return 0.0
        size, row, pos = _max_diff(during, again)
        scale = max(1.0, _scale(during))
        c = self._checks
        c["drift"] = max(c["drift"] or 0.0, size)
        if size <= 1e-5 * scale:
            c["noise"] = max(c["noise"] or 0.0, size)
            return size
        t0 = _perf()
        third = self._probe_call(logits_fn, plan.k_rows, plan.k_idx)
        c["extra_calls"] += 1
        c["extra_ms"] += (_perf() - t0) * 1000.0
        noise, n_row, n_pos = _max_diff(again, third)
        c["noise"] = max(c["noise"] or 0.0, noise)
        if noise > self.max_noise * scale and not self.allow_noise:
            self._fail("nondeterministic_eval",
                       "logits_fn gave different logits for the same input in %s: validation batch %d differed by "
                       "%.3g at row %d, position %d between two calls, %.2g of the logit scale %.3g (at most %.2g "
                       "is allowed): with logits this noisy the causality and state checks cannot tell a leak "
                       "from noise. Make the forward pass deterministic (no dropout or sampling in logits_fn; "
                       "torch.use_deterministic_algorithms(True)) and keep no state between calls"
                       % (what, plan.k, noise, n_row, n_pos, noise / scale, scale, self.max_noise))
        tol = max(4.0 * noise, 1e-5 * scale)
        if size > tol:
            self._fail("stateful_eval",
                       "validation batch %d got logits that differ by %.3g at row %d, position %d (tolerance %.3g) "
                       "when it came again later in %s, and the same on a third call: logits_fn keeps state across "
                       "calls (a cache of validation inputs, test-time training, behaviour that depends on what it "
                       "saw before); the same model must give the same input the same logits"
                       % (plan.k, size, row, pos, tol, what))
        return noise

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


def _probe_calls(h, base, data, skip):
    """The causality probe's calls on base, the validation batch the pass
    rechecks (rows [n, T]): unchanged (the recheck) and in copies with one
    token changed in every row but one, which is replaced by other text (a
    window of data outside the batch's windows skip). Returns the calls and
    the classes to compare."""
    T, V = h.val_seq_len, h.vocab_size
    cfg = h.probe_cfg
    n = base.shape[0]
    want = max(1, int(cfg.get("sequences") or 4)) * max(1, int(cfg.get("positions") or 8))
    draws = max(1, -(-want // max(1, n - 1))) if n > 1 else want
    doc, bos = bool(cfg.get("doc_isolated")), h.cfg.bos_id
    windows = len(data) // T
    perts, kinds, swaps = [], [], []
    for d in range(draws):
        pert = base.copy()
        kk = []
        j = (n // 2 + d) % n if n > 1 else -1
        for r in range(n):
            if r == j:
                # Rows are independent: another row's text changes entirely.
                w = _RNG.randrange(windows)
                while skip[0] <= w < skip[1] and windows > skip[1] - skip[0]:
                    w = _RNG.randrange(windows)
                pert[r] = data[w * T:(w + 1) * T]
                if np.array_equal(pert[r], base[r]):
                    pert[r] = (base[r] + 1) % V
                kk.append(("swap", 0, 0))
                continue
            starts = np.nonzero(base[r, 1:] == bos)[0] + 1 if doc else ()
            if len(starts):
                # Documents must not see each other: change a token before the
                # first BOS (the one right before it, where a leak shows most,
                # or one further back) and nothing from the BOS on may move.
                b = int(starts[0])
                q = b - 1 if d % 2 == 0 else _RNG.randrange(b)
                kk.append(("doc", q, b))
            else:
                q = _RNG.randrange(T)
                kk.append(("causal", q, q))
            pert[r, q] = (pert[r, q] + 1 + _RNG.randrange(V - 1)) % V
        perts.append(pert)
        kinds.append(kk)
        swaps.append(j)
    idx = h._gather_idx(base, perts)
    h._probe_meta = {"kinds": kinds, "swaps": swaps, "rows": n, "base": base, "perts": perts, "idx": idx}
    calls = [_Call("a", base, idx)] + [_Call("c%d" % d, p, idx) for d, p in enumerate(perts)]
    if n > 1:
        # The first copy's replaced row alone: every other row must keep its
        # logits at every position. The copies cannot show this by
        # themselves: a look at the next row's first token lands at the
        # last position, after the token changed in the looking row.
        only = base.copy()
        only[swaps[0]] = perts[0][swaps[0]]
        calls.append(_Call("o", only, idx))
    return calls, idx


def _probe_verdict(h, logits_fn, plan, noise):
    """Judge the probe's calls (see _probe_calls) and write the probe event.

    Logits before a changed token must not move beyond the tolerance
    (max(4 x noise floor, 1e-5 x logit scale)): a move is a leak of future
    tokens or of the replaced row; logits from the change on should move
    (otherwise the probe learned nothing). With doc_isolated, rows holding a
    BOS are changed before it and nothing from the BOS on may move. When a
    leak shows, one more call with only the row replaced tells a look across
    rows from a look ahead."""
    t0 = _perf()
    meta, res = h._probe_meta, plan.results
    T = h.val_seq_len
    a = res["a"]
    scale = max(1.0, _scale(a))
    tol = max(4.0 * noise, 1e-5 * scale)
    noise_limit = h.max_noise * scale
    leak, leak_draw, changed, total = None, 0, 0, 0
    for d, kk in enumerate(meta["kinds"]):
        diff = _pos_diff(a, res["c%d" % d])  # [rows, T]
        if leak is None:
            leak_draw = d
        for r, (kind, p, boundary) in enumerate(kk):
            if kind == "swap":
                continue
            total += 1
            row = diff[r]
            if p > 0 and leak is None and float(row[:p].max()) > tol:
                pos = int(torch.nonzero(row[:p] > tol)[0])
                leak = {"kind": "future", "row": r, "perturbed": p, "position": pos, "size": float(row[:p].max()),
                        "source_row": meta["swaps"][d]}
            if kind == "doc":
                after = row[boundary:]
                if leak is None and float(after.max()) > tol:
                    pos = boundary + int(torch.nonzero(after > tol)[0])
                    leak = {"kind": "document", "row": r, "perturbed": p, "position": pos,
                            "size": float(after.max()), "source_row": meta["swaps"][d]}
                if float(row[p:boundary].max()) > tol:
                    changed += 1
            elif float(row[p:].max()) > tol:
                changed += 1
    extra = 0
    if leak is None and "o" in res:
        j = meta["swaps"][0]
        d = _pos_diff(a, res["o"])
        d[j] = 0.0
        if float(d.max()) > tol:
            flat = int(torch.argmax(d))
            leak = {"kind": "row", "row": flat // T, "source_row": j, "perturbed": 0, "position": flat % T,
                    "size": float(d.max())}
    if leak is not None and leak["source_row"] >= 0 and leak["kind"] != "row":
        # Which change moved it: the other row alone, on the copy's text.
        j = leak["source_row"]
        only = meta["base"].copy()
        only[j] = meta["perts"][leak_draw][j]
        t1 = _perf()
        x = h._probe_call(logits_fn, only, meta["idx"])
        h._checks["extra_calls"] += 1
        h._checks["extra_ms"] += (_perf() - t1) * 1000.0
        extra = 1
        d = _pos_diff(a, x)
        d[j] = 0.0
        if float(d.max()) > tol:
            flat = int(torch.argmax(d))
            leak = {"kind": "row", "row": flat // T, "source_row": j, "perturbed": 0, "position": flat % T,
                    "size": float(d.max())}
    sensitive = changed / total if total else 0.0
    fault = ""
    if leak is not None:
        fault = "leak"
        if leak["kind"] == "row":
            msg = ("logits of row %d of a batch (position %d) changed by %.3g (tolerance %.3g) when only row %d of "
                   "the %d rows was replaced: rows must be independent (consecutive validation windows are "
                   "consecutive text, so a model that looks across rows sees the future)"
                   % (leak["row"], leak["position"], leak["size"], tol, leak["source_row"], meta["rows"]))
        else:
            msg = ("logits at position %d of row %d changed by %.3g (tolerance %.3g) when the token at position %d "
                   "was perturbed: %s" % (leak["position"], leak["row"], leak["size"], tol, leak["perturbed"],
                                          "the model sees future tokens" if leak["kind"] == "future"
                                          else "the model sees across a document boundary (BOS)"))
    elif changed == 0:
        fault = "insensitive"
        msg = "no perturbation changed any logits: the model's output does not depend on its input"
    else:
        msg = "no leak found"
    h._emit("probe", {
        "ok": fault == "", "fault": fault, "sequences": meta["rows"], "perturbations": total,
        "noise_floor": noise, "noise_limit": noise_limit, "tolerance": tol, "sensitive": sensitive,
        "leak": leak, "message": msg, "doc_isolated": bool(h.probe_cfg.get("doc_isolated")),
        "row_check": meta["rows"] if meta["rows"] > 1 else 0, "calls": 1 + len(meta["perts"]) + ("o" in res) + extra,
        "ms": (_perf() - t0) * 1000.0,
    })


# ---------------------------------------------------------------------------
# Behavioural checks: helpers and the wrappers that observe training

# Two calls on the same input may differ by at most this fraction of the
# logit scale (max(1, largest |logit|)) unless the run allows nondeterminism.
DEFAULT_MAX_NOISE = 1e-4

_SETUP, _TRAIN, _EVAL, _DONE = 0, 1, 2, 3

# Error codes that decide a verdict of their own (invalid): written at once.
_VERDICT_CODES = frozenset(("pretrain", "stateful_eval", "nondeterministic_eval", "compile_budget"))

_FULL_V = 1024  # vocabularies up to this size are compared on every logit
_GATHER_CLASSES = 62  # else: this many fixed classes per position, plus two
_EXACT_ELEMENTS = 1 << 22  # tensors recorded exactly (a CPU copy) before train_begin, in elements
_SAMPLES = 64  # elements sampled per tensor in a signature
_CHUNK = 8192  # elements per summed chunk in a signature: under torch's parallel grain (32768)

_HERE = os.path.abspath(__file__)
_RNG = random.SystemRandom()  # where the checks look: not predictable from the seed
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


class _Call:
    """An extra call of a checked validation pass: rows (int64 [n, T]), the
    classes compared (or None: all), and its name in _Plan.results."""

    __slots__ = ("name", "rows", "idx")

    def __init__(self, name, rows, idx):
        self.name = name
        self.rows = rows
        self.idx = idx


class _Plan:
    """The extra calls of one validation pass, by the number of validation
    batches before them, and what they and the rechecked batch k gave."""

    def __init__(self):
        self.extra = {}
        self.k = -1
        self.k_idx = None
        self.during = None
        self.k_rows = None
        self.recheck = "recheck"  # the call that repeats batch k
        self.results = {}
        self.ms = 0.0


class _Snap:
    """What a tensor held when training first reached it before train_begin:
    its signature and, within a budget, an exact copy on the CPU."""

    __slots__ = ("t", "shape", "dtype", "sig", "copy")

    def __init__(self, t, sig, exact):
        d = t.detach()
        self.t = t
        self.shape = tuple(d.shape)
        self.dtype = d.dtype
        self.sig = sig
        self.copy = d.to("cpu", copy=True) if exact else None

    def describe(self):
        return _describe(self.t)

    def change(self, sig):
        """None when the tensor holds what it held; else how it changed."""
        d = self.t.detach()
        if tuple(d.shape) != self.shape:
            return {"size": float("inf"), "shape": (self.shape, tuple(d.shape))}
        if d.dtype == self.dtype and sig.shape == self.sig.shape and np.array_equal(sig, self.sig, equal_nan=True):
            return None
        if self.copy is not None:
            cur = d.to("cpu")
            ref = self.copy if cur.dtype == self.dtype else self.copy.to(cur.dtype)
            ne = (cur != ref) & ~(torch.isnan(cur) & torch.isnan(ref)) if cur.is_floating_point() else cur != ref
            n = int(ne.sum())
            if n == 0:
                return None  # equal after all (a cast, or -0.0 for 0.0)
            size = float((cur.double() - ref.double()).abs()[ne].max())
            return {"size": size if math.isfinite(size) else float("inf"), "changed": n, "of": cur.numel()}
        if sig.shape == self.sig.shape:
            k = min(d.numel(), _SAMPLES)
            size = float(np.nanmax(np.abs(sig[-k:] - self.sig[-k:]))) if k else 0.0
        else:
            size = float("inf")
        return {"size": size}


def _fmt_change(ch):
    if "shape" in ch:
        return "a new shape (%s, was %s)" % (list(ch["shape"][1]), list(ch["shape"][0]))
    if "changed" in ch:
        return "%.3g (%d of %d elements changed)" % (ch["size"], ch["changed"], ch["of"])
    if ch["size"] > 0:
        return "%.3g (in the sampled elements)" % ch["size"]
    return "a changed checksum"


def _describe(t):
    kind = "a parameter" if isinstance(t, torch.nn.Parameter) else "a tensor"
    return "%s of shape %s (%s)" % (kind, list(t.shape), str(t.dtype).replace("torch.", ""))


def _leaves(roots):
    """The tensors a backward pass from roots accumulates gradients into: the
    variables of the AccumulateGrad nodes of the graph (and roots that are
    leaves themselves)."""
    if isinstance(roots, torch.Tensor):
        roots = (roots,)
    out, seen_t = [], set()

    def add(t):
        if id(t) not in seen_t:
            seen_t.add(id(t))
            out.append(t)

    stack, seen, keep = [], set(), []
    try:
        roots = list(roots or ())
    except TypeError:
        roots = []
    for r in roots:
        if isinstance(r, torch.Tensor):
            if r.grad_fn is not None:
                stack.append(r.grad_fn)
            elif r.requires_grad:
                add(r)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        keep.append(fn)  # keeps ids unique while walking
        var = getattr(fn, "variable", None)
        if isinstance(var, torch.Tensor):
            add(var)
            continue
        for nxt, _ in getattr(fn, "next_functions", ()) or ():
            if nxt is not None:
                stack.append(nxt)
    return out


def _signatures(tensors):
    """For each tensor a float64 vector: the sums and the sums of squares of
    its consecutive chunks of _CHUNK elements, and _SAMPLES elements at
    fixed places, computed where the tensor lives with one transfer per
    device. A tensor that was not written gives the same vector bit for bit;
    one that was almost never does. Chunks are small enough that each is
    summed by one thread in a fixed order, so the vector does not depend on
    the thread count (a sum over a whole tensor does, in its last bits)."""
    parts = []
    f64 = torch.float64
    with torch.no_grad():
        for t in tensors:
            f = t.detach().reshape(-1)
            if f.numel() == 0 or not f.is_floating_point():
                f = f.to(f64) if f.numel() else torch.zeros(1, dtype=f64, device=f.device)
            n = f.numel()
            m = n // _CHUNK
            pieces = []
            for x in ([f[:m * _CHUNK].view(m, _CHUNK)] if m else []) + ([f[m * _CHUNK:].view(1, -1)] if n % _CHUNK else []):
                try:
                    pieces += [x.sum(dim=1, dtype=f64), (x * x).sum(dim=1, dtype=f64)]
                except (RuntimeError, TypeError):  # a dtype without float64 accumulation here
                    d = x.double()
                    pieces += [d.sum(dim=1), (d * d).sum(dim=1)]
            k = min(n, _SAMPLES)
            pos = (torch.arange(k, device=f.device) * n) // k + (n // k) // 2
            pieces.append(f[pos].to(f64))
            parts.append(torch.cat(pieces))
    out = [None] * len(parts)
    by_dev = {}
    for i, v in enumerate(parts):
        by_dev.setdefault(v.device, []).append(i)
    for ids in by_dev.values():
        flat = torch.cat([parts[i] for i in ids]).cpu().numpy()
        off = 0
        for i in ids:
            m = parts[i].numel()
            out[i] = flat[off:off + m]
            off += m
    return out


def _opt_params(opt):
    return [p for g in getattr(opt, "param_groups", ()) for p in g.get("params", ()) if isinstance(p, torch.Tensor)]


def _opt_state(opt):
    """An optimizer's tensor state (moments, momentum buffers, step counts in
    torch 2): {(id(param), key): signature}. Other entries (SGD's
    momentum_buffer None, Adam's integer step in torch 1) hold nothing
    learned from the data and are left out."""
    keys, tensors = [], []
    for p, st in list(getattr(opt, "state", {}).items()):
        if not isinstance(st, dict):
            continue
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                keys.append((id(p), str(k)))
                tensors.append(v)
    return dict(zip(keys, _signatures(tensors)))


def _same(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _pos_diff(x, y):
    """Largest absolute difference per row and position ([n, T]); equal
    values (also equal infinities) differ by 0, NaN against anything by inf."""
    d = (x - y).abs().amax(dim=2)
    if bool(torch.isfinite(d).all()):
        return d  # the usual case, without the slower exact path
    d = torch.where(x == y, torch.zeros_like(x), (x - y).abs())
    return torch.nan_to_num(d, nan=float("inf")).amax(dim=2)


def _max_diff(x, y):
    """The largest difference between two statistics and its row and position."""
    d = _pos_diff(x, y)
    if d.numel() == 0:
        return 0.0, 0, 0
    flat = int(torch.argmax(d))
    return float(d.view(-1)[flat]), flat // d.shape[1], flat % d.shape[1]


def _scale(x):
    """The largest finite |x| (0 for none)."""
    if x.numel() == 0:
        return 0.0
    m = float(x.abs().amax())
    if math.isfinite(m):
        return m
    a = x.abs()
    a = a[torch.isfinite(a)]
    return float(a.max()) if a.numel() else 0.0


def _internal(filename):
    f = os.path.abspath(filename)
    return f == _HERE or f.startswith(_TORCH_DIR) or os.path.basename(f) in ("frontier_boot.py", "runpy.py") \
        or filename.startswith("<frozen")


def _caller():
    """file:line of the innermost frame of the program (not the harness, not torch)."""
    f = sys._getframe(1)
    while f is not None and _internal(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return "?"
    return "%s:%d" % (os.path.basename(f.f_code.co_filename), f.f_lineno)


def _program_stack():
    """The current stack, without the harness's, the boot script's and torch's frames."""
    frames = [fr for fr in traceback.extract_stack()[:-1] if not _internal(fr.filename)]
    if not frames:
        return ""
    return "Stack (most recent call last):\n" + "".join(traceback.format_list(frames[-12:]))


def _install_guards(h):
    """Wrap torch.autograd.backward, torch.Tensor.backward and
    torch.autograd.grad, and hook every optimizer step, so that h sees
    training as it happens. Runs at import, before the program: the
    program can only ever get the wrapped functions."""
    ab, ag, tb = torch.autograd.backward, torch.autograd.grad, torch.Tensor.backward

    def guarded(fn, roots_of):
        def wrapper(*args, **kwargs):
            if h._grad_depth:  # Tensor.backward calls autograd.backward
                return fn(*args, **kwargs)
            h._grad_depth += 1
            try:
                h._on_grad(roots_of(args, kwargs))
                return fn(*args, **kwargs)
            finally:
                h._grad_depth -= 1
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(wrapper, attr, getattr(fn, attr))
            except (AttributeError, TypeError):
                pass
        return wrapper

    torch.autograd.backward = guarded(ab, lambda a, k: a[0] if a else k.get("tensors"))
    torch.autograd.grad = guarded(ag, lambda a, k: a[0] if a else k.get("outputs"))
    torch.Tensor.backward = guarded(tb, lambda a, k: a[0] if a else k.get("self"))

    import torch.optim.optimizer as opt_mod
    if hasattr(opt_mod, "register_optimizer_step_pre_hook"):
        opt_mod.register_optimizer_step_pre_hook(lambda opt, args, kwargs: h._on_opt_step(opt))
        return
    # torch < 2.0 has no global hook: wrap each optimizer class's step the
    # first time one of its instances is made. The wrapper carries torch's
    # own "hooked" mark so torch does not wrap it again.
    base_init = torch.optim.Optimizer.__init__

    def init(self, *args, **kwargs):
        base_init(self, *args, **kwargs)
        cls = type(self)
        if not getattr(cls.step, "_frontier_hooked", False):
            step = cls.step

            def hooked_step(opt, *a, **k):
                h._on_opt_step(opt)
                return step(opt, *a, **k)
            for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
                setattr(hooked_step, attr, getattr(step, attr, None) or getattr(hooked_step, attr))
            hooked_step.hooked = True
            hooked_step._frontier_hooked = True
            cls.step = hooked_step

    init.__doc__ = base_init.__doc__
    torch.optim.Optimizer.__init__ = init


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
_install_guards(_H)


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
