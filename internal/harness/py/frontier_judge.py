"""frontier_judge: the judge of one run (one phase: fast or full).

    python3 -I -u frontier_judge.py CONFIG.json

frontier starts one judge per phase, outside the candidate's sandbox,
before the candidate. The judge holds everything that decides the verdict:
the train clock, the validation text, the loss, the checks and the
telemetry. The candidate's processes hold none of it: the harness client
(frontier_harness.py) turns each API call into a message on a Unix socket
the process inherits, one per process (rank), and the judge answers.

A phase has two programs, one after the other, each with its own sockets:

    training process                      judge
    hello, facts          ---->           (setup time starts at hello)
                          <----           ready + the inputs buffer
    train_begin           ---->           clock starts on receipt
                          <----           batch (the clock-start check)
    logits + buffer fd    ---->
                          <----           go + the training shards' fds
    step ...              ---->           counted, stamped on receipt
    validate              ---->           an intermediate validation
    finish + state fd     ---->           the state logits_fn reaches,
                          <----           batch    sealed; the scored
    logits + buffer fd    ---->           windows, in order; the clock
    ...                                   stops at the last answer
                          <----           result
    (frontier ends the training process, then starts the scorer)

    scorer                                judge
    hello, facts, train_begin  ---->      setup time checked
                          <----           state (the fd above)
    serving               ---->
                          <----           batch   (a twin of every scored
    logits + buffer fd    ---->            row, in random order)
    ...                   <----           done

Time is the judge's: the monotonic clock from the receipt of train_begin to
the receipt of the final validation's last answer, minus only the
validations the track designates, plus what those took beyond a forward
pass. The loss is the judge's: float32 cross-entropy over the first
vocab_size logits, computed here from buffers the client sealed before
sending (nobody can write them after). The scorer's answers must agree
with the training process's where a causal, stateless model's must (see
frontier_checks.py).

Every message is checked: a known operation, in the order the client sends
it, with fields of the right type and range; anything else is a protocol
fault of the program, never a failure of the judge.

The judge writes telemetry as JSON lines on the descriptor the config
names (a pipe to frontier); nothing is written in the run folder. This
file needs only NumPy on CPU tracks; CUDA tracks import torch to share a
device buffer with the candidate (CUDA IPC).
"""

import fcntl
import json
import math
import mmap
import os
import selectors
import signal
import socket
import sys
import time

import numpy as np

from frontier_checks import MIN_TOLERANCE, Fault, Recheck, ScorerPlan, ScorerResult, nondeterministic

SHARD_MAGIC = 20240520
SHARD_VERSION = 1
HEADER_BYTES = 1024

MAX_MESSAGE = 1 << 20  # bytes of one client message; a longer one is a protocol fault
MAX_ADVISORY_BYTES = 4 << 20  # telemetry the program reports (sections, warnings, ...)
MAX_TEXT = 32 << 10  # characters of a message or traceback the program reports
MAX_FDS = 4  # descriptors a client may attach to a message
MAX_INT = 1 << 53  # integers a program reports must be exact in a float

# Rules of the judge's own checks: the code of the error event, whose
# verdict is invalid with the rule of the same meaning (see eval's codeRule).
VERDICT_CODES = ("pretrain", "stateful_eval", "nondeterministic_eval", "compile_budget", "validation_cost",
                 "protocol")

NEED_SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
CHARGE_FACTOR = 1.5  # a designated validation call may take this many times the pass's median per token
SCORER_FACTOR = 2.0  # ... and this many times the scorer's, which cannot have trained


def now():
    return time.monotonic()


# ---------------------------------------------------------------------------
# Telemetry


def clean(v):
    """v made JSON-safe: non-finite floats become null, numpy scalars Python numbers."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if isinstance(v, np.generic):
        return clean(v.item())
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    return str(v)


class Telemetry:
    """One JSON object per line on the descriptor frontier reads. Each line
    is stamped with t_ms, milliseconds since the judge started."""

    def __init__(self, fd, t0):
        self.fd = fd
        self.t0 = t0
        self.advisory = 0

    def write(self, event, fields):
        obj = dict(fields)
        # Set last: fields a program reported cannot name another event.
        obj["event"], obj["t_ms"] = event, round((now() - self.t0) * 1000.0, 3)
        data = (json.dumps(clean(obj), allow_nan=False, separators=(",", ":")) + "\n").encode()
        while data:
            try:
                n = os.write(self.fd, data)
            except BrokenPipeError:
                return  # frontier is gone; nothing left to tell
            data = data[n:]

    def program(self, event, fields):
        """An event the program reported (run facts, sections, top ops,
        memory, warnings): only the keys its kind has, kept as telemetry,
        never as evidence, marked as the program's, and capped."""
        keep = PROGRAM_KEYS[event]
        fields = {k: v for k, v in fields.items() if k in keep}
        size = len(json.dumps(clean(fields)))
        if self.advisory + size > MAX_ADVISORY_BYTES:
            return False
        self.advisory += size
        fields["source"] = "program"
        self.write(event, fields)
        return True


# The keys of the events a program reports; everything else it sends is
# dropped.
PROGRAM_KEYS = {
    "run_start": {"mode", "python", "torch", "numpy", "device", "threads", "blas", "fingerprint", "pid", "world_size",
                  "telemetry_level", "judge_pid"},
    "sections": {"sections"},
    "top_ops": {"kind", "steps", "ops"},
    "memory": {"peak_rss_mb", "cuda_allocated_mb", "cuda_reserved_mb"},
    "warning": {"code", "message"},
}


# ---------------------------------------------------------------------------
# What a program sends: every field checked


_MISSING = object()


def _field(msg, key, default):
    v = msg.get(key, _MISSING)
    if v is _MISSING or v is None:
        if default is _MISSING:
            raise Fault("protocol", "a %r message without %r" % (msg.get("op"), key))
        return default
    return v


def f_int(msg, key, lo=0, hi=MAX_INT, default=_MISSING):
    v = _field(msg, key, default)
    if v is default and default is not _MISSING:
        return v
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise Fault("protocol", "a %r message with %s=%s: want an integer in [%d, %d]"
                    % (msg.get("op"), key, _show(v), lo, hi))
    return v


def f_num(msg, key, lo=-1e300, hi=1e300, default=_MISSING):
    v = _field(msg, key, default)
    if v is default and default is not _MISSING:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, int) and not -MAX_INT <= v <= MAX_INT):
        raise Fault("protocol", "a %r message with %s=%s: want a number" % (msg.get("op"), key, _show(v)))
    v = float(v)
    if math.isfinite(v) and not lo <= v <= hi:
        raise Fault("protocol", "a %r message with %s=%s: out of range" % (msg.get("op"), key, _show(v)))
    return v


def f_bool(msg, key, default=False):
    v = msg.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise Fault("protocol", "a %r message with %s=%s: want true or false" % (msg.get("op"), key, _show(v)))
    return v


def f_text(msg, key, default=""):
    v = msg.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str):
        raise Fault("protocol", "a %r message with %s of type %s: want text" % (msg.get("op"), key, type(v).__name__))
    return v[:MAX_TEXT]


def _show(v):
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


# ---------------------------------------------------------------------------
# Validation text


def read_tokens(path, start, n):
    """Tokens start .. start+n of the shard at path (checked header), as int64."""
    with open(path, "rb") as f:
        raw = f.read(HEADER_BYTES)
        head = np.frombuffer(raw[:len(raw) - len(raw) % 4], dtype="<i4")
        if head.size != 256 or int(head[0]) != SHARD_MAGIC or int(head[1]) != SHARD_VERSION:
            raise Fault("shard", "the validation shard %s is not a speedrun-format shard" % path)
        count = int(head[2])
        size = os.fstat(f.fileno()).st_size
        if size != HEADER_BYTES + 2 * count:
            raise Fault("shard", "the validation shard %s holds %d bytes, its header says %d tokens"
                        % (path, size, count))
        n = max(0, min(n, count - start))
        f.seek(HEADER_BYTES + 2 * start)
        raw = f.read(2 * n)
    return np.frombuffer(raw, dtype="<u2").astype(np.int64), count


class ValData:
    """The validation text: the scored slice (the first val_tokens + 1
    tokens, which only the final validation of a full run shows the
    program, after training) and the practice slice after it (the fast
    check, intermediate validations and the clock-start check score it, so
    the scored windows are never seen before training is over; the
    scorer's twins take their replaced text from it)."""

    def __init__(self, cfg):
        T = cfg["val_seq_len"]
        scored_n = cfg["val_tokens"] + 1
        practice_n = max(cfg["val_tokens"], cfg.get("fast_val_tokens") or 0) + 1
        path = cfg["val_file"]
        self.scored, count = read_tokens(path, 0, scored_n)
        if self.scored.size < scored_n:
            raise Fault("shard", "the validation shard holds %d tokens; the track scores %d (plus one target)"
                        % (count, cfg["val_tokens"]))
        self.practice, _ = read_tokens(path, scored_n, practice_n)
        # The clock-start check scores text after the practice slice, which
        # no validation shows.
        B = cfg["val_batch_seqs"]
        self.initial, _ = read_tokens(path, scored_n + practice_n, B * T + 1)
        self.note = ""
        if self.practice.size < T + 1:
            # A shard with nothing after the scored slice: practice on it.
            self.practice = self.scored
            self.note = ("the validation shard has no text after the scored slice: the fast check and "
                         "intermediate validations score windows of the scored slice")
        self.T = T


# ---------------------------------------------------------------------------
# Connections and buffers


def memfd(name, size):
    """A sealed anonymous file of size bytes: the client can read and write
    its contents, not shrink it under the judge's mapping (which would
    crash the judge with SIGBUS) or grow it."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, max(size, 1))
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def sealed(fd, size, what):
    """fd is a sealed anonymous file of size bytes (at most, when size is
    negative): nobody can write, shrink or grow it any more."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        have = os.fstat(fd).st_size
    except OSError:
        raise Fault("protocol", "%s came in a descriptor that is not a sealed memory file" % what) from None
    if seals & NEED_SEALS != NEED_SEALS:
        raise Fault("protocol", "%s came in a memory file that can still be written" % what)
    if (size >= 0 and have != size) or (size < 0 and have > -size):
        raise Fault("protocol", "%s came in a memory file of %d bytes, want %s%d" % (
            what, have, "at most " if size < 0 else "", abs(size)))
    return have


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class Conn:
    """One process's socket: rank r of the training process or of the
    scorer. inputs (int64 [B, T]) is the judge's buffer the client maps
    read-only; logits come back in a sealed memory file per call (or the
    judge's CUDA buffer)."""

    def __init__(self, role, rank, fd, B, T, V):
        self.role, self.rank = role, rank
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(True)
        self.open = True
        self.B, self.T, self.V = B, T, V
        self.in_fd = memfd("frontier-inputs", B * T * 8)
        self.inputs = np.frombuffer(mmap.mmap(self.in_fd, B * T * 8), dtype=np.int64)
        # new -> hello -> ready (facts) -> begun -> final (finish received)
        # -> done (result sent); a scorer: new -> hello -> ready -> state
        # (asked for its state) -> serving -> done.
        self.state = "new"
        self.hello = None  # receipt time of hello
        self.facts = {}
        self.steps = 0
        self.tokens = 0
        self.waiting = None  # the call the judge waits on: (call, sent time)
        self.cuda = None  # a CudaBuffer when logits travel through CUDA IPC
        self.export = None  # the training process's state (a sealed memory file)
        self.calls = None  # a scorer's calls still to send

    def name(self):
        return ("scorer process %d" if self.role == "scorer" else "process %d") % self.rank

    def send(self, obj, fds=()):
        if not self.open:
            return
        data = json.dumps(clean(obj), separators=(",", ":")).encode()
        try:
            if fds:
                self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, np.array(fds, dtype=np.int32).tobytes())])
            else:
                self.sock.send(data)
        except OSError:
            self.open = False  # the client is gone: its EOF ends it

    def recv(self):
        """The next message and its descriptors, or (None, []) at EOF. A
        message that is not a JSON object with an op, or too long, or with
        too many descriptors, is a protocol fault."""
        try:
            data, anc, flags, _ = self.sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * 4))
        except ConnectionResetError:
            data, anc, flags = b"", [], 0
        fds = []
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(int(fd) for fd in np.frombuffer(raw[:len(raw) - len(raw) % 4], dtype=np.int32))
        if not data:
            close_all(fds)
            self.open = False
            return None, []
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise Fault("protocol", "%s sent the judge a message longer than %d bytes or with more than %d "
                            "descriptors" % (self.name(), MAX_MESSAGE, MAX_FDS))
            try:
                obj = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                raise Fault("protocol", "%s sent the judge a message that is not JSON" % self.name()) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("op"), str):
                raise Fault("protocol", "%s sent the judge a message without an op" % self.name())
        except Fault:
            close_all(fds)
            raise
        return obj, fds

    def ask(self, call, rows):
        """Send rows as the next batch to answer; the judge waits on call,
        timed from now."""
        self.inputs[:rows.size] = rows.reshape(-1)
        self.send({"op": "batch", "rows": int(rows.shape[0])})
        self.waiting = (call, now())

    def read_logits(self, b, ipc, fds):
        """The logits of b rows: from the judge's device buffer when the
        client opened it, else from the sealed memory file it sent, which
        nobody can change any more (mapped read-only, no copy)."""
        if ipc and self.cuda is not None:
            close_all(fds)
            return self.cuda.read(b)
        if len(fds) != 1:
            close_all(fds)
            raise Fault("protocol", "%s sent logits without their buffer" % self.name())
        n = b * self.T * self.V * 4
        try:
            sealed(fds[0], n, "logits")
            mm = mmap.mmap(fds[0], n, prot=mmap.PROT_READ)
        finally:
            close_all(fds)
        return np.frombuffer(mm, dtype=np.float32).reshape(b, self.T, self.V)


class CudaBuffer:
    """A float32 [B, T, V] buffer on the rank's GPU, allocated by the judge
    and opened by the client through CUDA IPC, so that logits never cross
    the host. The judge owns the allocation: the client can write into it,
    not free or resize it; the judge copies it on receipt, before it sends
    anything the program could use to change it."""

    def __init__(self, device, B, T, V):
        import torch
        self.torch = torch
        self.dev = torch.device(device)
        self.buf = torch.empty(B * T * V, dtype=torch.float32, device=self.dev)
        self.T, self.V = T, V

    def handle(self):
        """What the client needs to open the buffer, as JSON-safe values."""
        st = self.buf.untyped_storage() if hasattr(self.buf, "untyped_storage") else self.buf.storage()
        parts = st._share_cuda_()
        return [{"b": p.hex()} if isinstance(p, bytes) else p for p in parts]

    def read(self, b):
        self.torch.cuda.synchronize(self.dev)
        n = b * self.T * self.V
        return self.buf[:n].view(b, self.T, self.V).clone()


# ---------------------------------------------------------------------------
# The loss


def check_logits(x, what):
    """NaN or +inf logits are the program's failure (-inf is a class it rules out)."""
    if isinstance(x, np.ndarray):
        bad = int((~np.isfinite(x) & ~np.isneginf(x)).sum())
    else:  # a device tensor
        import torch
        bad = int((~torch.isfinite(x) & ~torch.isneginf(x)).sum())
    if bad:
        raise Fault("nan_loss", "%s: logits_fn returned %d non-finite logits (NaN or +inf)" % (what, bad))


def cross_entropy_sum(x, y):
    """Sum over positions of float32 cross-entropy of logits x [b, T, V]
    against targets y [b, T], accumulated in float64."""
    if not isinstance(x, np.ndarray):  # a device tensor: the same math in torch, where it lies
        import torch
        yt = torch.from_numpy(np.ascontiguousarray(y)).to(x.device)
        lse = torch.logsumexp(x, dim=-1)
        picked = x.gather(-1, yt.unsqueeze(-1)).squeeze(-1)
        return float((lse - picked).double().sum())
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0).astype(np.float32)
    lse = np.log(np.exp(x - m, dtype=np.float32).sum(axis=-1, dtype=np.float32)) + m[..., 0]
    picked = np.take_along_axis(x, y[..., None], axis=-1)[..., 0]
    return float((lse - picked).astype(np.float64).sum())


# ---------------------------------------------------------------------------
# The clock and the budgets


class Clock:
    """The train clock, in the judge's monotonic time: from the receipt of
    the first train_begin to the receipt of the final validation's last
    answer, minus the designated validations, plus what they took beyond a
    forward pass (charged)."""

    def __init__(self, tel):
        self.tel = tel
        self.begin = None
        self.end = None
        self.excluded = 0.0
        self.charged = 0.0

    def ms(self, t=None):
        if self.begin is None:
            return 0.0
        end = self.end if self.end is not None else (t if t is not None else now())
        return max(0.0, (end - self.begin - self.excluded + self.charged) * 1000.0)

    def mark(self, what, t):
        """Tell frontier at once that the clock began, paused (a designated
        validation), resumed or ended at t: on a track whose clock is CPU
        time, frontier reads the program's CPU time when it hears each mark
        (the judge cannot see the program's processes)."""
        self.tel.write("clock", {"mark": what, "at_ms": round((t - self.tel.t0) * 1000.0, 3)})


class CompileBudget:
    """The untimed setup before fh.train_begin() (imports, compilation,
    warm-up), of the training process and of the scorer alike, must fit
    the track's compile budget, since the clock starts only there."""

    def __init__(self, ms):
        self.limit = float(ms or 0) / 1000.0  # seconds; 0: no budget

    def check(self, setup, who):
        if self.limit > 0 and setup > self.limit:
            raise Fault("compile_budget",
                        "untimed setup before fh.train_begin() took %.0f ms%s, over the track's compile budget of "
                        "%.0f ms: imports, compilation and warm-up must fit the budget, since the clock starts only "
                        "at train_begin" % (setup * 1000.0, who, self.limit * 1000.0))


def charge(calls, ref=None):
    """Validation time beyond what a forward pass needs: each call's time
    over CHARGE_FACTOR times the pass's median time per token (or over
    SCORER_FACTOR times ref, the scorer's, when that is less). On a GPU
    that is work the program queued before it asked (its training);
    anywhere, training hidden in a call. Counted as train time."""
    if len(calls) < 3 and ref is None:
        return 0.0
    rates = sorted(d / max(n, 1) for d, n in calls)
    per_token = CHARGE_FACTOR * rates[len(rates) // 2] if len(calls) >= 3 else math.inf
    if ref is not None:
        per_token = min(per_token, SCORER_FACTOR * ref)
    return sum(max(0.0, d - per_token * n) for d, n in calls)


class Budget:
    """The designated validations run outside the clock; a validation token
    may cost at most token_cost training tokens of this run, on this
    machine (the time per training token the judge measured, by the tokens
    the program reports, counted as at least a sixteenth of a validation
    batch a step so that a program cannot make a training token look dear
    by under-reporting), plus the track's allowance when it sets one, and
    at most share of the train time when it sets one."""

    def __init__(self, ver, batch_tokens):
        self.share = float(ver.get("max_validation_share") or 0.0)
        self.token_cost = float(ver.get("max_validation_token_cost") or 0.0)
        self.allowance = float(ver.get("validation_allowance_ms") or 0.0) / 1000.0
        self.batch_tokens = batch_tokens
        self.used = 0.0  # seconds of designated validation calls, net of the charge
        self.tokens = 0

    def add(self, calls):
        """Book the (seconds, tokens) calls of a designated pass; returns the
        seconds charged to the clock, which the budget does not count."""
        charged = charge(calls)
        self.used += max(0.0, sum(d for d, _ in calls) - charged)
        self.tokens += sum(n for _, n in calls)
        return charged

    def recharge(self, passes, scorer_calls):
        """The designated passes' calls again, now that the scorer's calls
        showed what a forward pass of the trained model costs here: a call
        over SCORER_FACTOR times the scorer's median per token is charged
        too. Returns the seconds charged on top, which move from the budget
        to the clock."""
        if not scorer_calls:
            return 0.0
        rates = sorted(d / max(n, 1) for d, n in scorer_calls)
        ref = rates[len(rates) // 2]
        extra = 0.0
        for calls in passes:
            extra += max(0.0, charge(calls, ref) - charge(calls))
        if extra > 0:
            self.used = max(0.0, self.used - extra)
        return extra

    def limit(self, train_s, steps, tokens):
        if self.token_cost <= 0 and self.share <= 0:
            return None
        limit = math.inf
        if self.token_cost > 0:
            tokens = max(tokens, steps * self.batch_tokens / 16.0, 1.0)
            limit = self.token_cost * train_s / tokens * self.tokens
        if self.share > 0:
            limit = min(limit, self.share * train_s)
        return max(limit, self.allowance)

    def check(self, limit):
        if self.used > limit:
            raise Fault("validation_cost",
                        "the designated validations, outside the clock, took %.1f s for %d tokens, over the limit of "
                        "%.1f s that this run's own training cost gives (a validation token may cost %.1f training "
                        "tokens): logits_fn must be a forward pass of the trained model, not extra computation the "
                        "clock does not see" % (self.used, self.tokens, limit, self.token_cost))


# ---------------------------------------------------------------------------
# Validation passes


class Pass:
    """One validation pass over all ranks: what each rank is asked, in
    order, and what the answers showed."""

    def __init__(self, kind, step, final, data, windows, slice_name):
        self.kind = kind  # "final", "fast" (the fast check's last), "designated", "program" (timed)
        self.step = step
        self.final = final
        self.data = data
        self.windows = windows
        self.slice = slice_name
        self.loss_sum = 0.0
        self.count = 0
        self.loss = None  # loss_sum / count, once the pass is over
        self.calls = []  # (seconds, tokens) of every call
        self.start = {}
        self.last = None  # receipt of the last answer
        self.end = None
        self.queues = {}  # rank -> list of calls still to send
        self.recheck = None  # the rechecks of rank 0's share (intermediate passes)
        self.tail_done = False


class Validation:
    """The training process's validation passes, over all its ranks. A pass
    starts when the first rank asks (fh.validate() or fh.finish()); each
    rank answers its share of the windows, in order, and the pass ends for
    every rank at once. A designated pass (the track's val_every) is taken
    off the clock and booked against the validation budget; the final pass
    stops the clock and plans the scorer's twin of every scored row.

    Recheck and ScorerPlan (frontier_checks) read the batch's shape (B, T,
    V, bos), the noise limits and the classes compared from here."""

    def __init__(self, cfg, text, conns, scorers, clock, budget, checks, tel):
        ver = cfg.get("verify") or {}
        self.T = cfg["val_seq_len"]
        self.B = max(1, cfg["val_batch_seqs"])
        self.V = cfg["vocab_size"]
        self.bos = int(cfg["bos_id"])
        self.world = max(1, cfg.get("world_size") or 1)
        self.fast = cfg["mode"] == "fast"
        self.tokens = cfg["fast_val_tokens"] if self.fast else cfg["val_tokens"]
        self.val_every = cfg.get("val_every") or 0
        self.probe_cfg = cfg.get("probe") or {}
        self.max_noise = float(ver.get("max_noise") or 1e-3)
        self.allow_noise = bool(ver.get("allow_nondeterministic"))
        self.fixed_classes = np.random.default_rng(0x5eed).choice(self.V, size=min(self.V, 62), replace=False)
        self.text = text  # the validation text (ValData)
        self.conns, self.scorers = conns, scorers
        self.clock, self.budget, self.checks, self.tel = clock, budget, checks, tel
        self.passes = []
        self.current = None  # the pass under way
        self.plans = {}  # rank -> ScorerPlan of the final pass
        self.handed_off = False  # the final pass is over: the scorer's turn

    def start(self, c, t, final):
        """Rank c asked for a validation. The pass starts when the first rank
        asks; every rank gets the same number of calls (a model sharded
        across ranks calls collectives in logits_fn)."""
        p = self.current
        if p is None or c.rank in p.start:
            p = self.new_pass(c.steps, final)
            self.current = p
        p.start[c.rank] = t
        if p.kind == "designated" and len(p.start) == self.world:
            self.clock.mark("pause", t)  # the clock stops once every rank is in the pass
        self.next_call(c)

    def stop(self):
        """Drop the pass under way: the run failed, or a rank died in it."""
        self.current = None

    def final(self):
        """The final pass (the fast check's last in a fast run), once over."""
        final = None
        for p in self.passes:
            if p.final and p.end is not None:
                final = p
        return final

    def designated(self):
        """The (seconds, tokens) calls of each designated pass."""
        return [p.calls for p in self.passes if p.kind == "designated"]

    def new_pass(self, step, final):
        text = self.text
        if final:
            kind = "fast" if self.fast else "final"
            data = text.practice if self.fast else text.scored
            name = "practice" if self.fast else "scored"
        else:
            designated = self.val_every > 0 and step > 0 and step % self.val_every == 0 and not self.fast and \
                not any(q.step == step and q.kind == "designated" for q in self.passes)
            kind = "designated" if designated else "program"
            data, name = text.practice, "practice"
        T, B = self.T, self.B
        windows = self.tokens // T
        if data.size < windows * T + 1:
            windows = (data.size - 1) // T
        p = Pass(kind, step, final, data, windows, name if not text.note else "scored")
        # Each rank scores a contiguous share of the windows, in order: a
        # window's last target is the next window's first input, which the
        # program must not have seen when it answers.
        shares = [(windows * r // self.world, windows * (r + 1) // self.world) for r in range(self.world)]
        counts = []
        for r, (lo, hi) in enumerate(shares):
            calls = [("scored", data[s * T:min(s + B, hi) * T].reshape(-1, T), (s, min(s + B, hi)))
                     for s in range(lo, hi, B)]
            if final and self.scorers and r < len(self.scorers):
                # The twins' replaced text: text the scorer never sees
                # scored (random tokens when the shard has none).
                other = None if text.note else (text.initial if self.fast else text.practice)
                self.plans[r] = ScorerPlan(self, data, (lo, hi), other, self.probe_cfg)
            elif not final and r == 0 and calls:
                p.recheck = Recheck(self, calls, "the validation after step %d" % step)
                calls = p.recheck.schedule(calls)
            p.queues[r] = calls
            counts.append(len(calls))
        # Equal call counts: pad with repeats of the rank's first batch.
        most = max(counts) if counts else 0
        for r, calls in p.queues.items():
            while len(calls) < most and calls:
                calls.append(("pad", calls[0][1], None))
        self.passes.append(p)
        self.checks["validations"] += 1
        if kind == "designated":
            self.checks["designated_validations"] += 1
        elif kind == "program":
            self.checks["program_validations"] += 1
        return p

    def compare_classes(self, b, T):
        """The classes rechecks compare: all of a small vocabulary, else a fixed set."""
        if self.V <= 1024:
            return None
        return np.ascontiguousarray(np.broadcast_to(self.fixed_classes, (b, T, self.fixed_classes.size)))

    def next_call(self, c):
        if not self.send_next(c):
            self.rank_done(c)

    def send_next(self, c):
        """Send c its next call of the pass, if it has one."""
        queue = self.current.queues.get(c.rank) or []
        if not queue:
            return False
        call = queue.pop(0)
        c.ask(call, call[1])
        return True

    def rank_done(self, c):
        """c answered its last call: end the pass once every rank has."""
        p = self.current
        c.waiting = None
        if any(p.queues.get(r) or x.waiting is not None for r, x in enumerate(self.conns) if x.open and r in p.start):
            return  # another rank is still answering: the pass ends for all at once
        if len(p.start) < sum(1 for x in self.conns if x.open):
            return  # a rank has not asked yet
        self.end_pass(p)

    def answer(self, c, call, x, dt, t):
        """Rank c answered call with the logits x, received at t, dt after
        the batch went out."""
        p = self.current
        if p is None:
            raise Fault("protocol", "%s sent logits outside a validation" % c.name())
        rows, T = call[1], self.T
        what = "the final validation" if p.final else "the validation after step %d" % p.step
        p.calls.append((dt, rows.size))
        p.last = t
        self.checks["calls"] += 1
        # x is sealed: nothing the program does now can change it. The next
        # batch goes out before this one is judged, so the program computes
        # while the judge does.
        sent = self.send_next(c)
        check_logits(x, what)
        if call[0] == "scored":
            y = p.data[call[2][0] * T + 1:call[2][1] * T + 1].reshape(rows.shape[0], T)
            p.loss_sum += cross_entropy_sum(x, y)
            p.count += rows.size
            plan = self.plans.get(c.rank) if p.final else None
            if plan is not None:
                plan.scored(range(call[2][0], call[2][1]), x)
            if c.rank == 0 and p.recheck is not None:
                p.recheck.scored(call[2], x)
        else:
            self.checks["extra_calls"] += 1
            self.checks["extra_ms"] += dt * 1000.0
            if c.rank == 0 and p.recheck is not None and call[0] != "pad":
                p.recheck.answered(call, x)
        if not sent and self.current is p:
            self.rank_done(c)

    def end_pass(self, p):
        """Every rank answered every planned call: judge the rechecks (which
        may ask for a few more calls), then account for time and report."""
        if p.recheck is not None and not p.tail_done:
            more = p.recheck.finish()
            if more:
                # One more call (on rank 0; the others repeat a batch, so
                # that every rank calls logits_fn as often).
                for r, x in enumerate(self.conns):
                    if x.open:
                        p.queues[r] = [more] if r == 0 else [("pad", self.pad_rows(p, r), None)]
                for x in self.conns:
                    if x.open:
                        self.next_call(x)
                return
            p.tail_done = True
        t = now()
        p.end = t
        if p.final:
            # The clock stops at the final validation's last answer: the
            # validation is timed, so work done in it is training time.
            self.clock.end = p.last if p.last is not None else t
            self.clock.mark("end", self.clock.end)
        elif p.kind == "designated":
            self.clock.mark("resume", t)
        charged = 0.0
        if p.kind == "designated":
            # Off the clock, from the last rank's request to now; what its
            # calls took beyond a forward pass goes back on.
            charged = self.budget.add(p.calls)
            self.clock.excluded += t - max(p.start.values())
            self.clock.charged += charged
        self.checks["charged_ms"] = self.clock.charged * 1000.0
        self.checks["excluded_ms"] = self.clock.excluded * 1000.0
        self.checks["validation_ms"] += (t - min(p.start.values())) * 1000.0
        if p.count != p.windows * self.T:
            raise Fault("harness", "the validation scored %d tokens instead of %d" % (p.count, p.windows * self.T))
        loss = p.loss_sum / max(p.count, 1)
        if not math.isfinite(loss):
            raise Fault("nan_loss", "validation loss is %s after step %d" % (loss, p.step))
        p.loss = loss
        self.tel.write("val", {"step": p.step, "val_loss": loss, "tokens": p.count, "seq_len": self.T,
                               "ms": (t - min(p.start.values())) * 1000.0, "final": p.final,
                               "slice": p.slice, "timed": p.kind != "designated", "charged_ms": charged * 1000.0})
        if p.recheck is not None:
            if p.recheck.noise is not None:
                self.checks["noise"] = max(self.checks["noise"] or 0.0, p.recheck.noise)
            if p.recheck.drift is not None:
                self.checks["drift"] = max(self.checks["drift"] or 0.0, p.recheck.drift)
        self.current = None
        reply = {"op": "done", "val_loss": loss, "train_time_ms": self.clock.ms(t), "steps": self.conns[0].steps}
        if p.final:
            reply["op"] = "result"
        for c in self.conns:
            if p.final:
                c.state = "done"
            c.send(reply)
        if p.final and self.scorers:
            # The scorer's turn: frontier ends the training process and
            # starts the scorer, which gets its state once every training
            # process is gone.
            self.handed_off = True
            self.tel.write("handoff", {"state_bytes": self.checks["state_bytes"]})

    def pad_rows(self, p, r):
        lo = p.windows * r // self.world
        return p.data[lo * self.T:(lo + 1) * self.T].reshape(1, self.T)


# ---------------------------------------------------------------------------
# The judge


class Scoring:
    """The scorer: a fresh process of the program that imports the state
    exported at fh.finish() and answers the final validation's calls again,
    and the twins of its rows (ScorerPlan). It gets the state once the final
    pass is over and every training process is gone; what its answers show
    beside the training process's is the probe event (end)."""

    def __init__(self, cfg, conns, scorers, validation, setup_budget, checks, tel, failed):
        self.conns, self.scorers = conns, scorers
        self.validation = validation
        self.setup_budget = setup_budget
        self.checks = checks
        self.tel = tel
        self.failed = failed  # whether the judge has failed the run
        ver = cfg.get("verify") or {}
        self.max_noise = float(ver.get("max_noise") or 1e-3)
        self.allow_noise = bool(ver.get("allow_nondeterministic"))
        self.cuda = (cfg.get("device") or "cpu") == "cuda"
        self.probe_cfg = cfg.get("probe") or {}
        self.result = None  # what the scorer's answers showed (ScorerResult)
        self.scored = False  # the scorer answered every call and agreed
        self.calls = []  # (seconds, tokens) of the scorer's calls
        self.start = None

    def on_train_begin(self, c, msg, fds, t):
        f_bool(msg, "score")
        setup = t - c.hello
        if c.rank == 0:
            self.checks["scorer_setup_ms"] = setup * 1000.0
        self.setup_budget.check(setup, " in the scorer")
        c.state = "state"
        self.send_state()

    def send_state(self):
        """Each scorer process gets its rank's state, once the final pass is
        over and every training process is gone (its sockets closed, which
        frontier does only after the process group is dead)."""
        if not self.validation.handed_off or any(x.open for x in self.conns) or self.failed():
            return
        for c in self.scorers:
            if c.state != "state" or c.calls is not None:
                continue
            src = self.conns[c.rank] if c.rank < len(self.conns) else None
            if src is None or src.export is None:
                raise Fault("harness", "no exported state for scorer process %d" % c.rank)
            c.calls = []
            # A description of its own, read-only, from the start.
            fd = os.open("/proc/self/fd/%d" % src.export, os.O_RDONLY | os.O_CLOEXEC)
            try:
                c.send({"op": "state"}, [fd])
            finally:
                os.close(fd)

    def on_steps(self, c, msg, fds, t):
        f_int(msg, "planned", 0, MAX_INT)

    def on_serving(self, c, msg, fds, t):
        c.state = "serving"
        plans = self.validation.plans
        plan = plans.get(c.rank)
        c.calls = list(plan.calls) if plan is not None else []
        if self.result is None:
            self.result = ScorerResult()
            self.start = t
        # Every scorer process answers as many calls (collectives).
        most = max(len(plans[r].calls) if r in plans else 0 for r in range(len(self.scorers)))
        while len(c.calls) < most and c.calls:
            c.calls.append(("noise", c.calls[0][1]))
        self.next(c)

    def next(self, c):
        if not c.calls:
            c.state = "done"
            if all(x.state == "done" or not x.open for x in self.scorers):
                self.end()
            return
        kind, twins = c.calls.pop(0)
        rows = np.stack([tw.tokens for tw in twins])
        c.ask((kind, twins, rows), rows)

    def answer(self, c, call, x, dt):
        check_logits(x, "the scorer's answer")
        self.calls.append((dt, call[2].size))
        self.checks["scorer_calls"] += 1
        self.validation.plans[c.rank].answered((call[0], call[1]), x, self.result)
        self.next(c)

    def end(self):
        """Judge what the two processes' answers showed."""
        res = self.result or ScorerResult()
        elapsed = now() - (self.start or now())
        self.checks["scorer_ms"] = elapsed * 1000.0
        self.checks["noise"] = max(self.checks["noise"] or 0.0, res.noise)
        what = "the scorer's answers"
        if res.noise > self.max_noise and not self.allow_noise:
            raise Fault("nondeterministic_eval", nondeterministic(what, res.noise, 0, 0, self.max_noise))
        tol = max(4.0 * res.noise, MIN_TOLERANCE)
        if self.cuda:
            # A fresh process may pick other kernels: on a GPU the two
            # processes may differ by the track's noise limit.
            tol = max(tol, self.max_noise)
        worst = res.worst
        drift = max([w["size"] for w in worst.values() if w is not None] or [0.0])
        self.checks["drift"] = max(self.checks["drift"] or 0.0, drift)
        w = worst["whole"]
        if w is not None and w["size"] > tol:
            # The same rows in the same batch: only what the process did
            # or saw before can make the answers differ.
            raise Fault("stateful_eval",
                        "window %d of the scored slice got log-probabilities that differ by %.3g at position %d "
                        "(tolerance %.3g) between the training process and the scorer, a fresh process of the "
                        "program that imported the state exported at fh.finish() and answered the same batch: "
                        "logits_fn's answers depend on more than that state and its input (training during the "
                        "validation, state kept across calls, what it was asked before)"
                        % (w["w"], w["size"], w["position"], tol))
        leak = None
        w = worst["exact"]
        if w is not None and w["size"] > tol:
            # The same row in a batch of other rows, while whole batches
            # agree: the answer depends on the other rows (the next window
            # is the row's future).
            leak = dict(w, kind="row")
        for key in ("future", "document"):
            w = worst[key]
            if leak is not None and leak["kind"] == "row":
                break  # rows that depend on each other move everywhere
            if w is not None and w["size"] > tol and (leak is None or w["size"] > leak["size"]):
                leak = dict(w, kind=key)
        moved = sum(1 for m in res.moves if m > tol)
        msg = "no leak found"
        fault = ""
        if leak is not None:
            fault = "leak"
            if leak["kind"] == "row":
                msg = ("log-probabilities at position %d of window %d changed by %.3g (tolerance %.3g) when the row "
                       "came in a batch of other rows: rows must be independent (consecutive validation windows are "
                       "consecutive text, so a model that looks across rows sees the future), and answers must not "
                       "depend on what else the process was asked"
                       % (leak["position"], leak["w"], leak["size"], tol))
            elif leak["kind"] == "future":
                msg = ("log-probabilities at position %d of window %d changed by %.3g (tolerance %.3g) when the "
                       "tokens from position %d on were replaced: the model sees future tokens (or, far from the "
                       "change, remembers or depends on what else it was asked)"
                       % (leak["position"], leak["w"], leak["size"], tol, leak["perturbed"]))
            else:
                msg = ("log-probabilities at position %d of window %d changed by %.3g (tolerance %.3g) when the "
                       "text before its BOS at position %d was replaced: the model sees across a document boundary"
                       % (leak["position"], leak["w"], leak["size"], tol, leak["boundary"]))
        elif res.moves and moved == 0:
            fault = "insensitive"
            msg = "no change of the input changed any log-probability: the model's output does not depend on its input"
        self.scored = True
        self.tel.write("probe", {
            "ok": fault == "", "fault": fault, "sequences": res.rows, "perturbations": len(res.moves),
            "noise_floor": res.noise, "noise_limit": self.max_noise, "tolerance": tol,
            "sensitive": moved / len(res.moves) if res.moves else 0.0,
            "leak": None if leak is None else {
                "kind": leak["kind"], "row": leak["w"], "perturbed": leak["perturbed"], "position": leak["position"],
                "size": leak["size"]},
            "message": msg, "doc_isolated": bool(self.probe_cfg.get("doc_isolated")), "row_check": res.rows,
            "calls": self.checks["scorer_calls"], "scorer": True, "ms": elapsed * 1000.0})
        for c in self.scorers:
            c.send({"op": "done"})


class Judge:
    """The protocol: it reads every message of the training process and of
    the scorer, checks that it comes in its order, and hands it on. The
    clock, the budgets, the validation passes and the scorer are parts of
    their own (above); the setup, the clock-start check and the run's last
    events are the Judge's."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.t0 = now()
        self.tel = Telemetry(cfg["telemetry_fd"], self.t0)
        self.mode = cfg["mode"]
        self.fast = self.mode == "fast"
        self.V = cfg["vocab_size"]
        self.T = cfg["val_seq_len"]
        self.B = max(1, cfg["val_batch_seqs"])
        self.world = max(1, cfg.get("world_size") or 1)
        self.text = ValData(cfg)  # the validation text
        self.max_steps = cfg.get("max_steps") or 0
        self.fast_steps = cfg.get("fast_steps") or 0
        ver = cfg.get("verify") or {}
        self.min_initial = float(ver.get("min_initial_loss") or 0.0)
        self.export_max = int(cfg.get("export_max_bytes") or 0)
        self.cuda = (cfg.get("device") or "cpu") == "cuda"
        self.conns = [Conn("program", r, fd, self.B, self.T, self.V) for r, fd in enumerate(cfg["client_fds"])]
        self.scorers = [Conn("scorer", r, fd, self.B, self.T, self.V)
                        for r, fd in enumerate(cfg.get("scorer_fds") or [])]

        self.failure = None
        self.checks = {"validations": 0, "designated_validations": 0, "program_validations": 0,
                       "calls": 0, "extra_calls": 0, "extra_ms": 0.0, "noise": None, "drift": None,
                       "charged_ms": 0.0, "excluded_ms": 0.0, "validation_ms": 0.0, "validation_budget_ms": None,
                       "initial_loss": None, "initial_loss_min": self.min_initial, "initial_ms": None,
                       "initial_skipped": "", "setup_ms": None, "logits_via": "", "state_bytes": None,
                       "scorer_calls": 0, "scorer_ms": None, "scorer_setup_ms": None}
        self.clock = Clock(self.tel)
        self.setup_budget = CompileBudget(cfg.get("compile_budget_ms"))
        self.budget = Budget(ver, self.B * self.T)
        self.validation = Validation(cfg, self.text, self.conns, self.scorers, self.clock, self.budget,
                                     self.checks, self.tel)
        self.scorer = Scoring(cfg, self.conns, self.scorers, self.validation, self.setup_budget, self.checks,
                              self.tel, lambda: self.failure is not None)
        self.sections = None
        self.planned = None
        self.reported_error = False

    # -- telemetry and faults ------------------------------------------------

    def emit(self, event, fields):
        self.tel.write(event, fields)

    def fail(self, code, message, conn=None):
        """Record the first fault, tell every client, and keep serving until
        they are gone (their EOF ends the judge)."""
        if self.failure is not None:
            return
        self.failure = (code, message)
        fields = {"kind": "Judge", "code": code, "message": message, "traceback": "",
                  "step": self.conns[0].steps if self.conns else 0, "judge": True}
        if conn is not None and conn.rank:
            fields["rank"] = conn.rank
        if conn is not None and conn.role == "scorer":
            fields["scorer"] = True
        self.emit("error", fields)
        self.reported_error = True
        for c in self.conns + self.scorers:
            c.send({"op": "fail", "code": code, "message": message})
            c.waiting = None
        self.validation.stop()

    def train_ms(self, t=None):
        return self.clock.ms(t)

    # -- the loop -----------------------------------------------------------

    def run(self):
        sel = selectors.DefaultSelector()
        for c in self.conns + self.scorers:
            sel.register(c.sock, selectors.EVENT_READ, c)
        while any(c.open for c in self.conns) or (self.validation.handed_off and any(c.open for c in self.scorers)):
            for key, _ in sel.select():
                c = key.data
                try:
                    msg, fds = c.recv()
                except Fault as f:
                    # Still read what it sends: a client the judge stopped
                    # reading would block on a full socket until its time
                    # limit instead of hearing that the run is over.
                    self.fail(f.code, str(f), c)
                    continue
                if msg is None:
                    if not c.open:
                        sel.unregister(c.sock)
                        try:
                            self.on_eof(c)
                        except Fault as f:
                            self.fail(f.code, str(f), c)
                    continue
                if self.failure is not None:
                    close_all(fds)
                    if msg.get("op") == "error":
                        self.on_error(c, msg, (), None)  # the traceback of the program's own exception
                    continue
                try:
                    self.dispatch(c, msg, fds, now())
                except Fault as f:
                    self.fail(f.code, str(f), c)
                except Exception as e:  # a message no check foresaw: the program's, not the judge's
                    self.fail("protocol", "%s sent the judge a message it could not read (%s: %s)"
                              % (c.name(), type(e).__name__, str(e)[:200]), c)
        self.finish_telemetry()

    # Which operations each role may send, and in which of its states.
    ORDER = {
        "program": {
            "hello": ("new",), "facts": ("hello",), "train_begin": ("ready",), "steps": ("ready", "begun"),
            "step": ("begun",), "validate": ("begun",), "finish": ("begun",), "logits": None,
            "top_ops": ("ready", "begun"), "sections": ("done",), "memory": ("done",), "warning": None, "error": None,
        },
        "scorer": {
            "hello": ("new",), "facts": ("hello",), "train_begin": ("ready",), "serving": ("state",), "logits": None,
            "steps": ("ready",), "warning": None, "error": None,
        },
    }

    def dispatch(self, c, msg, fds, t):
        op = msg["op"]
        allowed = self.ORDER[c.role]
        if op not in allowed:
            close_all(fds)
            raise Fault("protocol", "%s sent the judge %s %r, which the harness client never sends%s"
                        % (c.name(), "an unknown message" if op not in self.ORDER["program"] else "a message",
                           op[:40], " from a scorer" if c.role == "scorer" and op in self.ORDER["program"] else ""))
        states = allowed[op]
        if states is not None and c.state not in states:
            close_all(fds)
            raise Fault("protocol", "%s sent %r when it was %s: the harness client sends it only %s"
                        % (c.name(), op, STATE_WORDS.get(c.state, c.state),
                           " or ".join(STATE_WORDS.get(s, s) for s in states)))
        if op not in ("finish", "logits") and fds:
            close_all(fds)
            raise Fault("protocol", "%s attached descriptors to %r: the harness client never does" % (c.name(), op))
        part = self.scorer if c.role == "scorer" and op in ("train_begin", "steps", "serving") else self
        getattr(part, "on_" + op)(c, msg, fds, t)

    # -- setup --------------------------------------------------------------

    def on_hello(self, c, msg, fds, t):
        f_int(msg, "pid", 0, 1 << 31, default=0)
        f_int(msg, "rank", 0, 1 << 20, default=0)
        c.hello = t
        c.state = "hello"
        c.send({"op": "ready", "rows": self.B, "seq_len": self.T, "vocab": self.V}, [c.in_fd])

    def on_facts(self, c, msg, fds, t):
        c.state = "ready"
        c.facts = {k: msg.get(k) for k in ("python", "torch", "numpy", "device", "threads", "blas", "fingerprint",
                                           "pid", "world_size", "telemetry_level", "mode")}
        ipc = f_bool(msg, "cuda_ipc")
        index = f_int(msg, "device_index", 0, 1 << 10, default=0)
        if c.rank == 0 and c.role == "program":
            fields = dict(c.facts, source="program", judge_pid=os.getpid(), world_size=self.world)
            fields["mode"] = self.mode
            # Results are compared within a machine class: the machine is
            # the judge's to say (the program's process could say another).
            fp = dict(fields.get("fingerprint") or {}) if isinstance(fields.get("fingerprint"), dict) else {}
            fp["cpu"], fp["hostname"] = cpu_model(), socket.gethostname()
            fields["fingerprint"] = fp
            self.tel.program("run_start", fields)
        if ipc:
            # Logits stay on the device: a buffer of the judge's, opened by
            # the client through CUDA IPC. The client waits for this reply.
            handle = None
            if self.cuda and c.cuda is None:
                try:
                    c.cuda = CudaBuffer("cuda:%d" % index, self.B, self.T, self.V)
                    handle = c.cuda.handle()
                except Exception as e:
                    c.cuda = None
                    self.emit("warning", {"code": "cuda_ipc", "message": "CUDA IPC is not available (%s): logits "
                                          "go through host shared memory" % e})
            c.send({"op": "ipc", "handle": handle})

    def on_train_begin(self, c, msg, fds, t):
        score = f_bool(msg, "score")
        c.state = "begun"
        setup = t - c.hello
        if c.rank == 0:
            self.checks["setup_ms"] = setup * 1000.0
        if self.clock.begin is None:
            self.clock.begin = t  # the clock starts at the first process's train_begin
            self.clock.mark("begin", t)
        self.setup_budget.check(setup, "")
        if score and self.min_initial > 0:
            # The model that starts the clock, scored on unscored text
            # inside the clock: a table fitted before it answers well.
            rows, targets = self.initial_rows()
            c.ask(("initial", rows, targets), rows)
            return
        if c.rank == 0 and not score:
            self.checks["initial_skipped"] = ("fh.train_begin() was called without logits_fn: the model that "
                                              "started the clock was not scored")
        self.go(c)

    def go(self, c):
        """The training data, only now: the program cannot fit anything to
        it before its clock runs."""
        fds, names = [], []
        try:
            for path in self.cfg["train_files"]:
                fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
                names.append(os.path.basename(path))
            c.send({"op": "go", "files": names}, fds)
        finally:
            close_all(fds)

    def initial_rows(self):
        """The clock-start check's batch and its targets: text no validation
        shows when the shard has it, else the practice slice's end."""
        T, B = self.T, self.B
        data = self.text.initial
        n = min(B, (data.size - 1) // T)
        if n < 1:
            data = self.text.practice
            n = min(B, (data.size - 1) // T)
            data = data[data.size - 1 - n * T:]
        return data[:n * T].reshape(n, T), data[1:n * T + 1].reshape(n, T)

    def on_steps(self, c, msg, fds, t):
        """The loop's planned length (the program's word, for sizing the
        full run's time limit; steps are judged as they come)."""
        n = f_int(msg, "planned", 0, MAX_INT)
        if c.rank == 0 and c.role == "program":
            self.planned = n

    def on_step(self, c, msg, fds, t):
        """Steps come in batches: a message at every log_every-th step (and
        at the last, and before a validation) says how far the program got
        and how many tokens it used since the last one."""
        step = f_int(msg, "step", 0, MAX_INT)
        tokens = f_num(msg, "tokens", 0.0, 1e15, default=0.0)
        if not math.isfinite(tokens):
            raise Fault("protocol", "%s reported %s training tokens: the harness client counts them as integers"
                        % (c.name(), tokens))
        loss = msg.get("loss")
        if loss is not None:
            loss = f_num(msg, "loss")
        flush = f_bool(msg, "flush")
        if step < c.steps:
            raise Fault("protocol", "%s reported step %d after %d steps: the harness client counts steps itself"
                        % (c.name(), step, c.steps))
        if self.max_steps > 0 and step >= self.max_steps:
            raise Fault("contract", "step %d exceeds the track's max_steps %d: iterate `for step in fh.steps(n)` "
                        "so the harness can cap the loop" % (step, self.max_steps))
        if self.fast and step >= max(1, self.fast_steps):
            raise Fault("contract", "the fast check runs %d steps but the program reached step %d: iterate "
                        "`for step in fh.steps(n)` so the harness can shorten the loop" % (self.fast_steps, step))
        c.steps = step + 1
        c.tokens += int(tokens)
        if loss is not None and not math.isfinite(loss):
            raise Fault("nan_loss", "train loss is %s at step %d" % (loss, step))
        if c.rank == 0 and not flush:
            self.step_event(step, t, loss)

    def step_event(self, step, t, loss):
        ms = self.train_ms(t)
        steps = step + 1
        tokens = sum(x.tokens for x in self.conns)
        self.emit("step", {"step": step, "train_time_ms": ms, "step_avg_ms": ms / steps, "tokens": tokens,
                           "tokens_per_s": tokens / (ms / 1000.0) if ms > 0 else 0.0, "train_loss": loss})

    def on_top_ops(self, c, msg, fds, t):
        if c.rank == 0:
            self.tel.program("top_ops", {k: v for k, v in msg.items() if k != "op"})

    def on_sections(self, c, msg, fds, t):
        if c.rank == 0:
            self.sections = msg.get("sections")  # written at the end, as shares of the judge's train time

    def on_memory(self, c, msg, fds, t):
        if c.rank == 0:
            self.tel.program("memory", {k: v for k, v in msg.items() if k != "op"})

    def on_warning(self, c, msg, fds, t):
        text = f_text(msg, "message")
        if c.role == "scorer":
            text = "the scorer: " + text
        self.tel.program("warning", {"code": f_text(msg, "code", "program")[:64] or "program", "message": text})

    def on_error(self, c, msg, fds, t):
        """The program's own failure, as its boot script saw it: the fact is
        the runner's (the exit status), the text is the program's. After its
        final validation the program has nothing left to fail: what it says
        then (a stop at the end of its grace, above all) is a warning."""
        close_all(fds)
        if c.role == "program" and c.state == "done":
            self.tel.program("warning", {"code": "after_finish", "message": "after its final validation the program "
                                         "said: %s: %s" % (str(msg.get("kind") or "Exception")[:200],
                                                           str(msg.get("message") or "")[:MAX_TEXT])})
            return
        if c.role == "scorer" and msg.get("code") == "state" and self.validation.handed_off:
            # The scorer runs the program's setup, then imports what the
            # training process exported at fh.finish(). When those objects
            # do not line up, logits_fn used at the end something the run
            # built (a memo of answered rows, a model swapped in): the
            # answers then depend on more than the weights, which is the
            # judge's finding whatever the program says about it.
            self.fail("stateful_eval", "the scorer, a fresh process of the program, could not rebuild from the state "
                      "exported at fh.finish() what logits_fn used then, so the final validation's answers depend on "
                      "objects the run built after fh.train_begin(), not only on the weights: %s"
                      % str(msg.get("message") or "")[:MAX_TEXT], c)
            return
        if self.reported_error and self.failure is not None:
            return
        self.reported_error = True
        fields = {"kind": str(msg.get("kind") or "Exception")[:200], "code": str(msg.get("code") or "exception")[:64],
                  "message": str(msg.get("message") or "")[:MAX_TEXT],
                  "traceback": str(msg.get("traceback") or "")[:MAX_TEXT], "step": c.steps}
        if fields["code"] in VERDICT_CODES:
            fields["code"] = "exception"  # only the judge's own findings decide a rule
        if c.rank:
            fields["rank"] = c.rank
        if c.role == "scorer":
            fields["scorer"] = True
        self.emit("error", fields)

    def on_eof(self, c):
        if c.waiting is not None and c.role == "program":
            self.validation.stop()  # the process died during a validation: the runner says how
        c.waiting = None
        if c.role == "program" and not any(x.open for x in self.conns):
            self.scorer.send_state()
        if c.role == "scorer" and self.validation.handed_off and c.state != "done" and self.failure is None \
                and not self.reported_error:
            self.reported_error = True
            self.emit("error", {"kind": "Scorer", "code": "scorer", "step": 0, "traceback": "", "scorer": True,
                                "message": "the scorer (a fresh process of the program that answers the final "
                                           "validation again from the state exported at fh.finish()) ended before it "
                                           "answered every call"})

    # -- validation ----------------------------------------------------------

    def on_validate(self, c, msg, fds, t):
        f_int(msg, "step", 0, MAX_INT, default=0)
        self.validation.start(c, t, final=False)

    def on_finish(self, c, msg, fds, t):
        """The end of training: the state logits_fn reaches comes with it,
        sealed, before any scored window is sent."""
        f_int(msg, "steps", 0, MAX_INT, default=0)
        if self.scorers:
            if len(fds) != 1:
                close_all(fds)
                raise Fault("protocol", "%s sent finish without the state of its model" % c.name())
            try:
                size = sealed(fds[0], -self.export_max if self.export_max else -(1 << 62), "the exported state")
            except Fault:
                close_all(fds)
                raise
            c.export = fds[0]
            self.checks["state_bytes"] = (self.checks["state_bytes"] or 0) + size
        else:
            close_all(fds)
        c.state = "final"
        self.validation.start(c, t, final=True)

    def on_logits(self, c, msg, fds, t):
        if c.waiting is None or c.waiting[1] is None:
            close_all(fds)
            raise Fault("protocol", "%s sent logits the judge did not ask for" % c.name())
        call, sent = c.waiting
        rows = call[1] if c.role == "program" else call[2]
        b = rows.shape[0]
        shape = msg.get("shape")
        if not (isinstance(shape, list) and len(shape) == 3 and all(isinstance(s, int) and not isinstance(s, bool)
                                                                   for s in shape)
                and shape[0] == b and shape[1] == self.T and self.V <= shape[2] <= MAX_INT):
            close_all(fds)
            raise Fault("logits_shape", "logits_fn(x) with x of shape [%d, %d] returned logits of shape %s; want "
                        "[%d, %d, V] with V >= vocab_size %d (padded classes are allowed)"
                        % (b, self.T, _show(shape), b, self.T, self.V))
        ipc = f_bool(msg, "ipc") and c.cuda is not None
        x = c.read_logits(b, ipc, fds)
        dt = t - sent
        c.waiting = None
        self.checks["logits_via"] = "cuda-ipc" if ipc else "host-memory"
        if c.role == "scorer":
            self.scorer.answer(c, call, x, dt)
            return
        if call[0] == "initial":
            self.initial_result(c, rows, call[2], x, dt)
            return
        self.validation.answer(c, call, x, dt, t)

    def initial_result(self, c, rows, y, x, dt):
        check_logits(x, "the clock-start check")
        loss = cross_entropy_sum(x, y) / rows.size
        if c.rank == 0:
            self.checks["initial_loss"] = loss
            self.checks["initial_ms"] = dt * 1000.0
        if loss < self.min_initial:
            raise Fault("pretrain",
                        "the model that started the clock was already fitted to data: at fh.train_begin() it scores "
                        "a loss of %.4f on unscored text, and an untrained model scores about ln(%d) = %.4f (the limit "
                        "is %.4f). Statistics counted from data, or weights loaded or trained, before fh.train_begin() "
                        "are untimed training; and logits_fn must answer this call with a plain forward pass, not "
                        "learn from the batch it is given" % (loss, self.V, math.log(self.V), self.min_initial))
        self.go(c)

    # -- the end --------------------------------------------------------------

    def charge_and_check_budget(self):
        """The final pass is over and the scorer has answered: charge what
        the designated validations took beyond the scorer's forward pass,
        then check what is left of them against the validation budget."""
        extra = self.budget.recharge(self.validation.designated(), self.scorer.calls)
        if extra > 0:
            self.clock.charged += extra
            self.checks["charged_ms"] = self.clock.charged * 1000.0
        c0 = self.conns[0] if self.conns else None
        if c0 is None or self.budget.tokens == 0:
            return
        limit = self.budget.limit(self.train_ms() / 1000.0, c0.steps, sum(c.tokens for c in self.conns))
        if limit is None:
            return
        self.checks["validation_budget_ms"] = limit * 1000.0
        self.budget.check(limit)

    def finish_telemetry(self):
        """Every client is gone: write what the run established."""
        final = self.validation.final()
        if final is not None and self.failure is None:
            try:
                self.charge_and_check_budget()
            except Fault as f:
                self.fail(f.code, str(f))
        self.write_sections()
        self.emit("checks", self.checks)
        c0 = self.conns[0] if self.conns else None
        if final is not None and self.failure is None and c0 is not None and (self.scorer.scored or not self.scorers):
            ms = self.train_ms()
            steps = c0.steps
            tokens = sum(x.tokens for x in self.conns)
            self.emit("final", {"steps": steps, "train_time_ms": ms, "step_avg_ms": ms / steps if steps else 0.0,
                                "tokens": tokens, "tokens_per_s": tokens / (ms / 1000.0) if ms > 0 else 0.0,
                                "val_loss": final.loss, "val_tokens": final.count,
                                "pre_train_ms": self.checks["setup_ms"], "probe": self.scorer.scored,
                                "planned_steps": self.planned,
                                "val_ms": (final.end - min(final.start.values())) * 1000.0})
        elif self.failure is None and not self.reported_error and c0 is not None and c0.hello is not None:
            if final is None:
                self.emit("error", {"kind": "NoFinish", "code": "no_finish", "step": c0.steps, "traceback": "",
                                    "message": "the program ended without calling fh.finish(logits_fn)"})
            elif self.scorers and not self.scorer.scored:
                self.emit("error", {"kind": "Scorer", "code": "scorer", "step": c0.steps, "traceback": "",
                                    "scorer": True, "message": "the scorer did not answer the final validation: "
                                                               "frontier did not start it, or it never connected"})

    def write_sections(self):
        if self.sections is None or not self.conns:
            return
        self.tel.program("sections", {"sections": section_rows(self.sections, self.train_ms(), self.conns[0].steps)})


STATE_WORDS = {
    "new": "new", "hello": "setting up", "ready": "in its untimed setup", "begun": "training",
    "final": "in its final validation", "done": "done", "state": "waiting for its state", "serving": "serving",
}


def cpu_model():
    try:
        with open("/proc/cpuinfo", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def section_rows(raw, train_ms, steps):
    """The program's section totals as rows with shares of the judge's train
    time, largest first, and what no top-level section covers."""
    rows, top = [], 0.0
    for r in raw[:64] if isinstance(raw, list) else []:
        if not isinstance(r, dict):
            continue
        try:
            total, calls, depth = float(r.get("total_ms")), int(r.get("calls")), int(r.get("depth") or 0)
        except (TypeError, ValueError, OverflowError):
            continue
        if not math.isfinite(total) or total < 0 or calls < 0:
            continue
        if depth == 0:
            top += total
        rows.append({"name": str(r.get("name"))[:64], "total_ms": total, "avg_ms": total / calls if calls else 0.0,
                     "pct": 100.0 * total / train_ms if train_ms > 0 else 0.0, "calls": calls})
    rows.sort(key=lambda r: -r["total_ms"])
    if rows and train_ms > top:
        rest = train_ms - top
        rows.append({"name": "(untracked)", "total_ms": rest, "avg_ms": rest / max(steps, 1),
                     "pct": 100.0 * rest / train_ms, "calls": steps})
    return rows


def main(argv):
    if len(argv) != 2:
        print("usage: frontier_judge.py CONFIG.json", file=sys.stderr)
        return 2
    # The judge's memory holds the validation text: a process of the same
    # user outside a pid namespace (sandbox landlock or none) must not read
    # it through /proc/PID/mem or ptrace.
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    with open(argv[1], "r", encoding="utf-8") as f:
        cfg = json.load(f)
    tel_fd = cfg["telemetry_fd"]
    try:
        judge = Judge(cfg)
    except (Fault, OSError) as f:
        code = getattr(f, "code", None) if isinstance(f, Fault) else "shard"
        Telemetry(tel_fd, now()).write("error", {"kind": "Judge", "code": code, "message": str(f), "traceback": "",
                                                 "step": 0, "judge": True})
        return 0
    judge.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
