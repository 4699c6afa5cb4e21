"""frontier_judge: the judge of one run.

    python3 -I -u frontier_judge.py CONFIG.json

frontier starts one judge per run, outside the candidate's sandbox, before
the candidate. The judge holds everything that decides the verdict: the
train clock, the validation text, the loss, the causality probe and the
telemetry. The candidate's process holds none of it: its harness client
(frontier_harness.py) turns each API call into a message on a Unix socket
the candidate inherits, one per process (rank), and the judge answers.

    client                               judge
    hello, facts           ---->         (setup time starts at hello)
                           <----         ready + two shared buffers
    train_begin            ---->         clock starts on receipt
                           <----         batch (the clock-start model, if
    logits                 ---->          logits_fn was given)
                           <----         go + the training shards' fds
    step ...               ---->         counted, stamped on receipt
    validate | finish      ---->         clock paused (designated steps
                           <----          only) or stopped (finish)
                           <----         batch       (one at a time: input
    logits                 ---->          ids in one buffer, float32 logits
    ...                                   back in the other)
                           <----         done | result

Time is the judge's: the monotonic clock between the receipt of
train_begin and of finish, minus only the validations the judge asked for,
plus the time any validation call took beyond what the pass's other calls
show a forward pass costs (work queued before the request, training done
inside a call). The loss is the judge's: float32 cross-entropy over the
first vocab_size logits, computed here on logits read from a buffer the
judge created and sealed. The probe compares log-probabilities of the
first vocab_size classes, so padded classes cannot widen its tolerance.

The judge writes telemetry as JSON lines on the descriptor the config
names (a pipe to frontier); nothing is written in the run folder.

This file needs only NumPy on CPU tracks; CUDA tracks import torch to share
a device buffer with the candidate (CUDA IPC).
"""

import fcntl
import json
import math
import mmap
import os
import random
import selectors
import signal
import socket
import sys
import time

import numpy as np

from frontier_probe import Fault, Plan

SHARD_MAGIC = 20240520
SHARD_VERSION = 1
HEADER_BYTES = 1024

MAX_MESSAGE = 1 << 20  # bytes of one client message; a longer one is a protocol fault
MAX_ADVISORY_BYTES = 4 << 20  # telemetry the program reports (sections, warnings, ...)
MAX_TEXT = 32 << 10  # characters of a message or traceback the program reports
MAX_FDS = 4  # descriptors a client may attach to a message (it needs none)

# Rules of the judge's own checks: the code of the error event, whose
# verdict is invalid with the rule of the same meaning (see eval's codeRule).
VERDICT_CODES = ("pretrain", "stateful_eval", "nondeterministic_eval", "compile_budget", "validation_cost",
                 "protocol")

_RNG = random.SystemRandom()  # what the checks look at: not predictable from the run's seed


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
    program, after its clock stopped) and the practice slice after it (the
    fast check, intermediate validations and the clock-start check score
    it, so the scored windows are never seen before training is over)."""

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
        # no validation shows: a program that remembers what it answered
        # then gains nothing in a later validation.
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
# Connections and shared buffers


def memfd(name, size):
    """A sealed anonymous file of size bytes: the client can read and write
    its contents, but not shrink it under the judge's mapping (which would
    crash the judge with SIGBUS) or grow it."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, max(size, 1))
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


class Conn:
    """One rank's socket and its buffers: inputs (int64 [B, T]) written by
    the judge, logits (float32 [B, T, V]) written by the client."""

    def __init__(self, rank, fd, B, T, V):
        self.rank = rank
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(True)
        self.open = True
        self.B, self.T, self.V = B, T, V
        self.in_fd = memfd("frontier-inputs", B * T * 8)
        self.out_fd = memfd("frontier-logits", B * T * V * 4)
        self.inputs = np.frombuffer(mmap.mmap(self.in_fd, B * T * 8), dtype=np.int64)
        self.logits = np.frombuffer(mmap.mmap(self.out_fd, B * T * V * 4, prot=mmap.PROT_READ), dtype=np.float32)
        self.hello = None  # receipt time of hello
        self.facts = {}
        self.steps = 0
        self.tokens = 0
        self.begun = False
        self.finished = False
        self.failed = False
        self.waiting = None  # the call the judge waits on: (call, sent time)
        self.cuda = None  # a CudaBuffer when logits travel through CUDA IPC

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
        """The next message, or None at EOF. Descriptors a client attaches
        are closed: it has none to give. A message that is not a JSON
        object, or too long, is a protocol fault."""
        try:
            data, anc, flags, _ = self.sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * 4))
        except ConnectionResetError:
            data, anc, flags = b"", [], 0
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for fd in np.frombuffer(raw[:len(raw) - len(raw) % 4], dtype=np.int32):
                    try:
                        os.close(int(fd))
                    except OSError:
                        pass
        if not data:
            self.open = False
            return None
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise Fault("protocol", "process %d sent the judge a message longer than %d bytes" % (self.rank, MAX_MESSAGE))
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise Fault("protocol", "process %d sent the judge a message that is not JSON" % self.rank) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("op"), str):
            raise Fault("protocol", "process %d sent the judge a message without an op" % self.rank)
        return obj

    def write_inputs(self, rows):
        n = rows.size
        self.inputs[:n] = rows.reshape(-1)

    def read_logits(self, b, ipc):
        """A private copy of the logits the client wrote for b rows (into
        the device buffer when it opened it, else the shared memory)."""
        if ipc and self.cuda is not None:
            return self.cuda.read(b)
        n = b * self.T * self.V
        return np.array(self.logits[:n]).reshape(b, self.T, self.V)


class CudaBuffer:
    """A float32 [B, T, V] buffer on the rank's GPU, allocated by the judge
    and opened by the client through CUDA IPC, so that logits never cross
    the host. The judge owns the allocation: the client can write into it,
    not free or resize it."""

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
        """The logits of b rows: a private copy on the device (the judge's
        math runs there too; a 50,257-way vocabulary never crosses to the
        host)."""
        self.torch.cuda.synchronize(self.dev)
        n = b * self.T * self.V
        return self.buf[:n].view(b, self.T, self.V).clone()


# ---------------------------------------------------------------------------
# The loss and what the checks compare


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
# The judge


class Pass:
    """One validation pass over all ranks: what each rank is asked, in
    order, and what the answers showed."""

    def __init__(self, kind, step, final, data, windows, slice_name):
        self.kind = kind  # "final", "designated", "program" (timed), "fast"
        self.step = step
        self.final = final
        self.data = data
        self.windows = windows
        self.slice = slice_name
        self.loss_sum = 0.0
        self.count = 0
        self.calls = []  # (seconds, tokens) of every call, for the cost rules
        self.start = {}
        self.end = None
        self.queues = {}  # rank -> list of calls still to send
        self.plan = None  # the checks of rank 0's share
        self.tail_done = False


class Judge:
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
        self.val = ValData(cfg)
        self.val_tokens = cfg["fast_val_tokens"] if self.fast else cfg["val_tokens"]
        self.max_steps = cfg.get("max_steps") or 0
        self.fast_steps = cfg.get("fast_steps") or 0
        self.log_every = max(1, cfg.get("log_every") or 1)
        self.val_every = cfg.get("val_every") or 0
        self.probe_cfg = cfg.get("probe") or {}
        ver = cfg.get("verify") or {}
        self.max_noise = float(ver.get("max_noise") or 1e-3)
        self.allow_noise = bool(ver.get("allow_nondeterministic"))
        self.min_initial = float(ver.get("min_initial_loss") or 0.0)
        self.val_share = float(ver.get("max_validation_share") or 0.0)
        self.val_token_cost = float(ver.get("max_validation_token_cost") or 0.0)
        self.val_allowance = float(ver.get("validation_allowance_ms") or 0.0) / 1000.0
        self.compile_budget = float(cfg.get("compile_budget_ms") or 0) / 1000.0
        self.fixed_classes = np.random.default_rng(0x5eed).choice(self.V, size=min(self.V, 62), replace=False)
        self.conns = [Conn(r, fd, self.B, self.T, self.V) for r, fd in enumerate(cfg["client_fds"])]
        self.cuda = (cfg.get("device") or "cpu") == "cuda"

        # The clock, in the judge's monotonic time.
        self.begin = None
        self.end = None
        self.excluded = 0.0  # designated validations
        self.charged = 0.0  # validation time beyond a forward pass's, counted as training
        self.budget_used = 0.0  # time of designated and final validations, net of the charge
        self.budget_tokens = 0  # the tokens of their calls

        self.failure = None
        self.passes = []
        self.current = None
        self.val_last = None
        self.checks = {"validations": 0, "designated_validations": 0, "program_validations": 0,
                       "calls": 0, "extra_calls": 0, "extra_ms": 0.0, "noise": None, "drift": None,
                       "charged_ms": 0.0, "excluded_ms": 0.0, "validation_ms": 0.0, "validation_budget_ms": None,
                       "initial_loss": None, "initial_loss_min": self.min_initial, "initial_ms": None,
                       "initial_skipped": "", "setup_ms": None, "logits_via": ""}
        self.probe_done = False
        self.sections = None
        self.planned = None
        self.reported_error = False

    # -- telemetry and faults ------------------------------------------------

    def emit(self, event, fields):
        self.tel.write(event, fields)

    def fail(self, code, message, rank=None):
        """Record the first fault, tell every client, and keep serving until
        they are gone (their EOF ends the judge)."""
        if self.failure is not None:
            return
        self.failure = (code, message)
        fields = {"kind": "Judge", "code": code, "message": message, "traceback": "",
                  "step": self.conns[0].steps if self.conns else 0, "judge": True}
        if rank:
            fields["rank"] = rank
        self.emit("error", fields)
        self.reported_error = True
        for c in self.conns:
            c.send({"op": "fail", "code": code, "message": message})
            c.waiting = None
        self.current = None

    def train_ms(self, t=None):
        if self.begin is None:
            return 0.0
        end = self.end if self.end is not None else (t if t is not None else now())
        return max(0.0, (end - self.begin - self.excluded + self.charged) * 1000.0)

    # -- the loop -----------------------------------------------------------

    def run(self):
        sel = selectors.DefaultSelector()
        for c in self.conns:
            sel.register(c.sock, selectors.EVENT_READ, c)
        while any(c.open for c in self.conns):
            for key, _ in sel.select():
                c = key.data
                try:
                    msg = c.recv()
                except Fault as f:
                    # Still read what it sends: a client the judge stopped
                    # reading would block on a full socket until its time
                    # limit instead of hearing that the run is over.
                    self.fail(f.code, str(f), c.rank)
                    continue
                if msg is None:
                    if not c.open:
                        sel.unregister(c.sock)
                        self.on_eof(c)
                    continue
                if self.failure is not None:
                    if msg.get("op") == "error":
                        self.on_error(c, msg, None)  # the traceback of the program's own exception
                    continue
                try:
                    self.dispatch(c, msg, now())
                except Fault as f:
                    self.fail(f.code, str(f), c.rank)
        self.finish_telemetry()

    def dispatch(self, c, msg, t):
        op = msg["op"]
        handler = {
            "hello": self.on_hello, "facts": self.on_facts, "train_begin": self.on_train_begin,
            "steps": self.on_steps, "step": self.on_step, "validate": self.on_validate, "finish": self.on_finish,
            "logits": self.on_logits, "error": self.on_error, "sections": self.on_advisory,
            "top_ops": self.on_advisory, "memory": self.on_advisory, "warning": self.on_advisory,
        }.get(op)
        if handler is None:
            raise Fault("protocol", "process %d sent the judge an unknown message %r" % (c.rank, op[:40]))
        handler(c, msg, t)

    # -- setup --------------------------------------------------------------

    def on_hello(self, c, msg, t):
        if c.hello is not None:
            raise Fault("protocol", "process %d said hello twice" % c.rank)
        c.hello = t
        c.send({"op": "ready", "rows": self.B, "seq_len": self.T, "vocab": self.V}, [c.in_fd, c.out_fd])

    def on_facts(self, c, msg, t):
        c.facts = {k: msg.get(k) for k in ("python", "torch", "numpy", "device", "threads", "blas", "fingerprint",
                                           "pid", "world_size", "telemetry_level", "mode")}
        if c.rank == 0:
            fields = dict(c.facts, source="program", judge_pid=os.getpid(), world_size=self.world)
            fields["mode"] = self.mode
            # Results are compared within a machine class: the machine is
            # the judge's to say (the program's process could say another).
            fp = dict(fields.get("fingerprint") or {}) if isinstance(fields.get("fingerprint"), dict) else {}
            fp["cpu"], fp["hostname"] = cpu_model(), socket.gethostname()
            fields["fingerprint"] = fp
            self.tel.program("run_start", fields)
        if msg.get("cuda_ipc") is True:
            # Logits stay on the device: a buffer of the judge's, opened by
            # the client through CUDA IPC. The client waits for this reply.
            handle = None
            if self.cuda and c.cuda is None:
                try:
                    c.cuda = CudaBuffer("cuda:%d" % int(msg.get("device_index") or 0), self.B, self.T, self.V)
                    handle = c.cuda.handle()
                except Exception as e:
                    c.cuda = None
                    self.emit("warning", {"code": "cuda_ipc", "message": "CUDA IPC is not available (%s): logits "
                                          "go through host shared memory" % e})
            c.send({"op": "ipc", "handle": handle})

    def on_train_begin(self, c, msg, t):
        if c.hello is None or c.begun:
            raise Fault("contract", "fh.train_begin() was called %s" % ("twice" if c.begun else "before the harness started"))
        c.begun = True
        setup = t - c.hello
        if c.rank == 0:
            self.checks["setup_ms"] = setup * 1000.0
        if self.begin is None:
            self.begin = t  # the clock starts at the first process's train_begin
        if self.compile_budget > 0 and setup > self.compile_budget:
            raise Fault("compile_budget",
                        "untimed setup before fh.train_begin() took %.0f ms, over the track's compile budget of "
                        "%.0f ms: imports, compilation and warm-up must fit the budget, since the clock starts only "
                        "at train_begin" % (setup * 1000.0, self.compile_budget * 1000.0))
        if msg.get("score") and self.min_initial > 0:
            # The model that starts the clock, scored on unscored text
            # inside the clock: a table fitted before it answers well.
            rows, targets = self.initial_rows()
            c.waiting = (("initial", rows, targets), None)
            self.send_batch(c, rows)
            return
        if c.rank == 0 and not msg.get("score"):
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
            for fd in fds:
                os.close(fd)

    def initial_rows(self):
        """The clock-start check's batch and its targets: text no validation
        shows when the shard has it, else the practice slice's end."""
        T, B = self.T, self.B
        data = self.val.initial
        n = min(B, (data.size - 1) // T)
        if n < 1:
            data = self.val.practice
            n = min(B, (data.size - 1) // T)
            data = data[data.size - 1 - n * T:]
        return data[:n * T].reshape(n, T), data[1:n * T + 1].reshape(n, T)

    def on_steps(self, c, msg, t):
        """The loop's planned length (the program's word, for sizing the
        full run's time limit; steps are judged as they come)."""
        n = msg.get("planned")
        if c.rank == 0 and isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 31:
            self.planned = n

    def on_step(self, c, msg, t):
        """Steps come in batches: a message at every log_every-th step (and
        at the last, and before a validation) says how far the program got
        and how many tokens it used since the last one."""
        if not c.begun:
            raise Fault("contract", "fh.step() was called before fh.train_begin()")
        if c.finished:
            raise Fault("contract", "fh.step() was called after fh.finish()")
        step = msg.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < c.steps:
            raise Fault("contract", "fh.step(step) must be called once per step with step = 0, 1, 2, ...; got "
                        "step=%r after %d steps" % (step, c.steps))
        if self.max_steps > 0 and step >= self.max_steps:
            raise Fault("contract", "step %d exceeds the track's max_steps %d: iterate `for step in fh.steps(n)` "
                        "so the harness can cap the loop" % (step, self.max_steps))
        if self.fast and step >= max(1, self.fast_steps):
            raise Fault("contract", "the fast check runs %d steps but the program reached step %d: iterate "
                        "`for step in fh.steps(n)` so the harness can shorten the loop" % (self.fast_steps, step))
        c.steps = step + 1
        tokens = msg.get("tokens")
        if isinstance(tokens, (int, float)) and not isinstance(tokens, bool) and math.isfinite(tokens) and tokens > 0:
            c.tokens += int(tokens)
        loss = msg.get("loss")
        if loss is not None:
            if not isinstance(loss, (int, float)) or isinstance(loss, bool):
                loss = None
            elif not math.isfinite(loss):
                raise Fault("nan_loss", "train loss is %s at step %d" % (loss, step))
        if c.rank == 0 and msg.get("flush") is not True:
            self.step_event(step, t, loss)

    def step_event(self, step, t, loss):
        ms = self.train_ms(t)
        steps = step + 1
        tokens = sum(x.tokens for x in self.conns)
        self.emit("step", {"step": step, "train_time_ms": ms, "step_avg_ms": ms / steps, "tokens": tokens,
                           "tokens_per_s": tokens / (ms / 1000.0) if ms > 0 else 0.0, "train_loss": loss})

    def on_advisory(self, c, msg, t):
        if c.rank != 0 and msg["op"] != "warning":
            return
        fields = {k: v for k, v in msg.items() if k != "op"}
        if msg["op"] == "sections":
            self.sections = fields.get("sections")  # written at the end, as shares of the judge's train time
            return
        if msg["op"] == "warning":
            fields = {"code": str(fields.get("code") or "program")[:64],
                      "message": str(fields.get("message") or "")[:MAX_TEXT]}
        self.tel.program(msg["op"], fields)

    def on_error(self, c, msg, t):
        """The program's own failure, as its boot script saw it: the fact is
        the runner's (the exit status), the text is the program's."""
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
        self.emit("error", fields)

    def on_eof(self, c):
        if self.current is not None and c.waiting is not None:
            self.current = None  # the process died during a validation: the runner says how
        c.waiting = None

    # -- validation ----------------------------------------------------------

    def on_validate(self, c, msg, t):
        if not c.begun:
            raise Fault("contract", "fh.validate() was called before fh.train_begin()")
        if c.finished:
            raise Fault("contract", "fh.validate() was called after fh.finish()")
        self.start_pass(c, t, final=False)

    def on_finish(self, c, msg, t):
        if not c.begun:
            raise Fault("contract", "fh.finish() was called before fh.train_begin()")
        if c.finished:
            raise Fault("contract", "fh.finish() was called twice")
        c.finished = True
        if all(x.finished or not x.open for x in self.conns) or self.world == 1:
            self.end = t  # the clock stops at the last process's finish
        self.start_pass(c, t, final=True)

    def start_pass(self, c, t, final):
        """A rank asked for a validation. The pass starts when the first rank
        asks; every rank gets the same number of calls (a model sharded
        across ranks calls collectives in logits_fn)."""
        p = self.current
        if p is None or c.rank in p.start:
            p = self.new_pass(c.steps, final)
            self.current = p
        p.start[c.rank] = t
        self.next_call(c)

    def new_pass(self, step, final):
        if self.fast:
            kind, data, tokens, name = "fast", self.val.practice, self.val_tokens, "practice"
        elif final:
            kind, data, tokens, name = "final", self.val.scored, self.val_tokens, "scored"
        else:
            designated = self.val_every > 0 and step > 0 and step % self.val_every == 0 and \
                not any(q.step == step and q.kind == "designated" for q in self.passes)
            kind = "designated" if designated else "program"
            data, tokens, name = self.val.practice, self.val_tokens, "practice"
        windows = tokens // self.T
        if data.size < windows * self.T + 1:
            windows = (data.size - 1) // self.T
        p = Pass(kind, step, final, data, windows, name if not self.val.note else "scored")
        probe = final and not self.fast and bool(self.probe_cfg.get("enabled"))
        # Each rank scores a contiguous share of the windows, in order: a
        # window's last target is the next window's first input, which the
        # program must not have seen when it answers.
        shares = [(windows * r // self.world, windows * (r + 1) // self.world) for r in range(self.world)]
        counts = []
        for r, (lo, hi) in enumerate(shares):
            starts = list(range(lo, hi, self.B))
            calls = [("scored", data[s * self.T:min(s + self.B, hi) * self.T].reshape(-1, self.T), (s, min(s + self.B, hi)))
                     for s in starts]
            if r == 0 and calls:
                p.plan = Plan(self, calls, data, probe, (lo, hi),
                              "the final validation" if final else "the validation after step %d" % step)
                calls = p.plan.schedule(calls)
            p.queues[r] = calls
            counts.append(len(calls))
        # Equal call counts: pad with rechecks of the rank's first batch.
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

    def next_call(self, c):
        if not self.send_next(c):
            self.rank_done(c)

    def send_next(self, c):
        """Send c its next call of the pass, if it has one."""
        queue = self.current.queues.get(c.rank) or []
        if not queue:
            return False
        call = queue.pop(0)
        c.waiting = (call, None)
        self.send_batch(c, call[1])
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

    def send_batch(self, c, rows):
        c.write_inputs(rows)
        c.send({"op": "batch", "rows": int(rows.shape[0])})
        call, _ = c.waiting
        c.waiting = (call, now())

    def on_logits(self, c, msg, t):
        if c.waiting is None or c.waiting[1] is None:
            raise Fault("protocol", "process %d sent logits the judge did not ask for" % c.rank)
        call, sent = c.waiting
        rows = call[1]
        b = rows.shape[0]
        shape = msg.get("shape")
        if not (isinstance(shape, list) and len(shape) == 3 and shape[0] == b and shape[1] == self.T
                and isinstance(shape[2], int) and shape[2] >= self.V):
            raise Fault("logits_shape", "logits_fn(x) with x of shape [%d, %d] returned logits of shape %s; want "
                        "[%d, %d, V] with V >= vocab_size %d (padded classes are allowed)"
                        % (b, self.T, shape, b, self.T, self.V))
        dt = t - sent
        ipc = msg.get("ipc") is True and c.cuda is not None
        self.checks["logits_via"] = "cuda-ipc" if ipc else "host-memory"
        x = c.read_logits(b, ipc)
        if call[0] == "initial":
            self.initial_result(c, rows, call[2], x, dt)
            return
        p = self.current
        if p is None:
            raise Fault("protocol", "process %d sent logits outside a validation" % c.rank)
        what = "the final validation" if p.final else "the validation after step %d" % p.step
        p.calls.append((dt, rows.size))
        self.checks["calls"] += 1
        # The next batch goes out before this one is judged (x is the
        # judge's own copy): the program computes while the judge does.
        sent = self.send_next(c)
        check_logits(x, what)
        if call[0] == "scored":
            y = p.data[call[2][0] * self.T + 1:call[2][1] * self.T + 1].reshape(b, self.T)
            p.loss_sum += cross_entropy_sum(x, y)
            p.count += rows.size
            if c.rank == 0 and p.plan is not None:
                p.plan.scored(call[2], x)
        else:
            self.checks["extra_calls"] += 1
            self.checks["extra_ms"] += dt * 1000.0
            if c.rank == 0 and p.plan is not None and call[0] != "pad":
                p.plan.answered(call, x)
        if not sent and self.current is p:
            self.rank_done(c)

    def initial_result(self, c, rows, y, x, dt):
        check_logits(x, "the clock-start check")
        loss = cross_entropy_sum(x, y) / rows.size
        c.waiting = None
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

    def end_pass(self, p):
        """Every rank answered every planned call: judge the checks (which
        may ask for a few more calls), then account for time and report."""
        if p.plan is not None and not p.tail_done:
            more = p.plan.finish()
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
            if self.failure is not None:
                return
        t = now()
        p.end = t
        spent = t - max(p.start.values())
        charged = self.charge(p)
        if p.kind in ("designated", "final"):
            # What the program's calls took (not the judge's own work), net
            # of what was charged to the clock.
            self.budget_used += max(0.0, sum(d for d, _ in p.calls) - charged)
            self.budget_tokens += sum(n for _, n in p.calls)
        if p.kind == "designated":
            self.excluded += spent
            self.charged += charged
        elif p.kind == "final":
            self.charged += charged
        self.checks["charged_ms"] = self.charged * 1000.0
        self.checks["excluded_ms"] = self.excluded * 1000.0
        self.checks["validation_ms"] += (t - min(p.start.values())) * 1000.0
        if p.count != p.windows * self.T:
            raise Fault("harness", "the validation scored %d tokens instead of %d" % (p.count, p.windows * self.T))
        loss = p.loss_sum / max(p.count, 1)
        if not math.isfinite(loss):
            raise Fault("nan_loss", "validation loss is %s after step %d" % (loss, p.step))
        self.val_last = loss
        self.emit("val", {"step": p.step, "val_loss": loss, "tokens": p.count, "seq_len": self.T,
                          "ms": (t - min(p.start.values())) * 1000.0, "final": p.final,
                          "slice": p.slice, "timed": p.kind == "program", "charged_ms": charged * 1000.0})
        if p.plan is not None:
            n = p.plan.noise
            if n is not None:
                self.checks["noise"] = max(self.checks["noise"] or 0.0, n)
            if p.plan.drift is not None:
                self.checks["drift"] = max(self.checks["drift"] or 0.0, p.plan.drift)
            if p.plan.probe_event is not None:
                self.emit("probe", p.plan.probe_event)
                self.probe_done = True
        if p.final:
            self.check_budget()
        self.current = None
        reply = {"op": "done", "val_loss": loss, "train_time_ms": self.train_ms(t), "steps": self.conns[0].steps}
        if p.final:
            reply["op"] = "result"
        for c in self.conns:
            c.send(reply)

    def write_sections(self):
        if self.sections is None or not self.conns:
            return
        self.tel.program("sections", {"sections": section_rows(self.sections, self.train_ms(), self.conns[0].steps)})

    def pad_rows(self, p, r):
        lo = p.windows * r // self.world
        return p.data[lo * self.T:(lo + 1) * self.T].reshape(1, self.T)

    def charge(self, p):
        """Validation time beyond what a forward pass needs: each call's time
        over 1.5 times the pass's median time per token. On a GPU that is
        work the program queued before it asked (its training); anywhere,
        training hidden in one call. Counted as train time."""
        if len(p.calls) < 3:
            return 0.0
        rates = sorted(d / max(n, 1) for d, n in p.calls)
        med = rates[len(rates) // 2]
        return sum(max(0.0, d - CHARGE_FACTOR * med * n) for d, n in p.calls)

    def check_budget(self):
        """Validations the judge asked for run outside the clock; they may
        take only so much: heavier computation at validation (an ensemble,
        test-time search) is compute the clock does not see. A validation
        token may cost at most max_validation_token_cost training tokens
        (a forward pass costs about a third of one; reported tokens), and
        all of them together at most max_validation_share of the train time
        (which bounds a program that under-reports its tokens); never less
        than the allowance."""
        if self.fast or self.val_share <= 0:
            return
        train = self.train_ms() / 1000.0
        limit = self.val_share * train
        tokens = sum(c.tokens for c in self.conns)
        if tokens > 0 and self.val_token_cost > 0:
            limit = min(limit, self.val_token_cost * train / tokens * self.budget_tokens)
        limit = max(limit, self.val_allowance)
        self.checks["validation_budget_ms"] = limit * 1000.0
        if self.budget_used > limit:
            raise Fault("validation_cost",
                        "validations outside the clock took %.1f s for %d tokens, over the track's limit of %.1f s (a "
                        "validation token may cost %.1f training tokens, %.0f%% of the train time %.1f s at most, at "
                        "least %.1f s): logits_fn must be a forward pass of the trained model, not extra computation "
                        "the clock does not see" % (self.budget_used, self.budget_tokens, limit, self.val_token_cost,
                                                     100 * self.val_share, train, self.val_allowance))

    # -- the end --------------------------------------------------------------

    def finish_telemetry(self):
        """Every client is gone: write what the run established."""
        self.write_sections()
        self.emit("checks", self.checks)
        c0 = self.conns[0] if self.conns else None
        final = None
        for p in self.passes:
            if p.final and p.end is not None:
                final = p
        if final is not None and self.failure is None and c0 is not None:
            ms = self.train_ms()
            steps = c0.steps
            tokens = sum(x.tokens for x in self.conns)
            pre = self.checks["setup_ms"]
            self.emit("final", {"steps": steps, "train_time_ms": ms, "step_avg_ms": ms / steps if steps else 0.0,
                                "tokens": tokens, "tokens_per_s": tokens / (ms / 1000.0) if ms > 0 else 0.0,
                                "val_loss": self.val_last, "val_tokens": final.count, "pre_train_ms": pre,
                                "probe": self.probe_done, "planned_steps": self.planned,
                                "val_ms": (final.end - min(final.start.values())) * 1000.0})
        elif self.failure is None and not self.reported_error and c0 is not None and c0.hello is not None:
            self.emit("error", {"kind": "NoFinish", "code": "no_finish", "step": c0.steps, "traceback": "",
                                "message": "the program ended without calling fh.finish(logits_fn)"})


CHARGE_FACTOR = 1.5


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
        except (TypeError, ValueError):
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
