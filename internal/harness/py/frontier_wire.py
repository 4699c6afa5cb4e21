"""frontier_wire: the program's connection to the judge.

The boot script imports this module first, before torch, so that the judge
hears from the process at once (the untimed setup is measured from here)
and so that a run whose torch cannot load can still say so. Messages are
JSON objects on a SOCK_SEQPACKET Unix socket the process inherits
(FRONTIER_JUDGE_FD, else the config's judge_fd); the judge's replies may
carry descriptors (the shared buffers, the training shards).
"""

import array
import json
import os
import socket

CONFIG_SCHEMA = 2
MAX_REPLY = 1 << 20
MAX_FDS = 64


class HarnessError(Exception):
    """The program broke the harness contract, the judge stopped the run,
    or the run cannot go on. code is a short machine-readable reason
    ("contract", "logits_shape", "stateful_eval", "config", ...)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def add_seals(fd, seals, tries=12, sleep=None):
    """fcntl(F_ADD_SEALS), tried again while the kernel says the file is
    busy. Sealing against writes waits for every page of the file to be
    unpinned, and the kernel's own scans of memory (compaction, page
    aging) hold pages for moments; after about 75 ms it gives up with
    EBUSY, which a run under memory pressure met. The seals are never
    skipped: after the last try the error stands."""
    import errno
    import fcntl
    import time
    sleep = sleep or time.sleep
    delay = 0.01
    for attempt in range(tries):
        try:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
            return
        except OSError as e:
            if e.errno != errno.EBUSY or attempt == tries - 1:
                raise
        sleep(delay)
        delay = min(2 * delay, 0.5)


def load_config():
    """The injected config, read before torch is imported so that a run
    without one fails in milliseconds."""
    path = os.environ.get("FRONTIER_CONFIG", "")
    if not path:
        raise HarnessError("config", "FRONTIER_CONFIG is not set: this program must be started by frontier "
                                     "(for example `frontier eval train.py`), which writes the run's config.json")
    try:
        with open(path, "r", encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise HarnessError("config", "cannot read the run config %s: %s" % (path, e.strerror or e)) from None
    except ValueError as e:
        raise HarnessError("config", "the run config %s is not valid JSON: %s" % (path, e)) from None
    if not isinstance(raw, dict) or raw.get("schema") != CONFIG_SCHEMA:
        got = raw.get("schema") if isinstance(raw, dict) else None
        raise HarnessError("config", "the run config %s has schema %r but this harness reads schema %d: the "
                                     "harness and the frontier binary that wrote the config do not match"
                           % (path, got, CONFIG_SCHEMA))
    return raw


class Wire:
    """The socket to the judge. send() never blocks for long (the judge
    reads as fast as it is written); recv() waits for the judge's next
    message; poll() returns one only if it is there."""

    def __init__(self, fd):
        try:
            self.sock = socket.socket(fileno=fd)
        except OSError as e:
            raise HarnessError("config", "descriptor %d is not the judge's socket (%s): start the program through "
                                         "frontier, whose launcher passes it on" % (fd, e)) from None
        self.sock.set_inheritable(False)
        self.failure = None  # the judge's "fail", which sticks
        self.held = []  # messages check() read before anyone asked for them

    def send(self, obj, fds=()):
        data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
        try:
            if fds:
                self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            else:
                self.sock.send(data)
        except OSError as e:
            raise HarnessError("judge", "the judge is gone (%s): the run cannot go on" % e) from None

    def recv(self, block=True):
        """(message, descriptors), or (None, []) when not blocking and none is there."""
        if self.held:
            return self.held.pop(0)
        fds = array.array("i")
        try:
            data, anc, _, _ = self.sock.recvmsg(MAX_REPLY, socket.CMSG_SPACE(MAX_FDS * fds.itemsize),
                                                0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None, []
        except OSError as e:
            raise HarnessError("judge", "the judge is gone (%s): the run cannot go on" % e) from None
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(raw[:len(raw) - len(raw) % fds.itemsize])
        if not data:
            raise HarnessError("judge", "the judge closed the connection: the run cannot go on")
        msg = json.loads(data.decode("utf-8"))
        if msg.get("op") == "fail":
            self.failure = HarnessError(msg.get("code") or "judge", msg.get("message") or "the judge stopped the run")
            for fd in fds:
                os.close(fd)
            raise self.failure
        return msg, list(fds)

    def check(self):
        """Raise the judge's failure if it has sent one."""
        if self.failure is not None:
            raise self.failure
        if not self.held:
            msg, fds = self.recv(block=False)
            if msg is not None:
                self.held.append((msg, fds))

    def error(self, kind, code, message, traceback=""):
        """Tell the judge how the program failed (best effort: the judge may
        be gone)."""
        try:
            self.send({"op": "error", "kind": kind, "code": code, "message": str(message)[:32768],
                       "traceback": str(traceback)[:32768]})
        except (HarnessError, ValueError, TypeError):
            pass


_wire = None
_config = None


def connect():
    """The process's connection, made once: the config is read and the judge
    greeted."""
    global _wire, _config
    if _wire is None:
        _config = load_config()
        fd = os.environ.get("FRONTIER_JUDGE_FD") or _config.get("judge_fd")
        try:
            fd = int(fd)
        except (TypeError, ValueError):
            raise HarnessError("config", "the run names no judge descriptor (FRONTIER_JUDGE_FD or judge_fd)") from None
        w = Wire(fd)
        w.send({"op": "hello", "pid": os.getpid(), "rank": int(os.environ.get("RANK", "0"))})
        _wire = w
    return _wire, _config
