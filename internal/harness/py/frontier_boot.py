"""frontier_boot: start a candidate program under the harness.

    python3 -u frontier_boot.py train.py [args...]
    python3 -u frontier_boot.py --nproc=N train.py [args...]

Connects to the judge first (frontier_wire), so that the untimed setup is
measured from the start and a run whose torch cannot load can still say
so; then imports the harness client and runs the program as __main__.
However the program ends, the judge hears how: an exception (with its
traceback), SIGTERM, sys.exit. A program that returns without calling
fh.finish() is noticed by the judge itself. With --nproc=N it first starts
N worker processes on this node the way torchrun --standalone does (see
launch), each with its own connection to the judge.

Exit codes: 0 the program returned; 1 it raised; 2 the harness could not
start (config, torch missing); 3 it ended without calling fh.finish();
128+N killed by signal N; a program's own sys.exit(code) is kept.
"""

import os
import runpy
import signal
import sys
import traceback

EXIT_RAISED = 1
EXIT_SETUP = 2
EXIT_NO_FINISH = 3


def _die(code):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    # os._exit: program threads (loaders, process groups) must not keep a
    # failed run alive.
    os._exit(code)


_BOOT = os.path.abspath(__file__)


def _is_boot_frame(filename):
    return os.path.abspath(filename) == _BOOT or filename == runpy.__file__ \
        or filename.startswith("<frozen runpy")


def _format_traceback(exc):
    """The traceback as Python prints it, without the boot's own frames."""
    tb = exc.__traceback__
    while tb is not None and _is_boot_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    if not text.startswith("Traceback"):
        # SyntaxError and friends print without the header; keep it so the
        # runner finds every traceback the same way.
        text = "Traceback (most recent call last):\n" + text
    return text


def free_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_env(rank, nproc, port):
    """This process's environment with what torchrun --standalone gives
    worker rank of nproc (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT), so that torch.distributed's
    init_process_group() works unchanged."""
    env = dict(os.environ)
    env.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0",
                "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
    return env


def supervise(procs, grace):
    """Wait for the worker processes procs; returns the exit code of the
    first to fail (128+N for a signal N), or 0. The first to fail stops the
    others, and a SIGTERM to this process stops them all and ends it: a
    worker gets SIGTERM, then SIGKILL after grace seconds. frontier_launch
    (the log contract) supervises its workers with this too."""
    import subprocess
    import time

    def stop_all():
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + grace
        for p in procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def on_term(signum, frame):
        stop_all()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    code = 0
    running = list(procs)
    while running:
        time.sleep(0.05)
        for p in list(running):
            rc = p.poll()
            if rc is None:
                continue
            running.remove(p)
            if rc != 0 and code == 0:
                code = rc if rc > 0 else 128 - rc
                stop_all()
    return code


def launch(nproc, argv):
    """Start nproc copies of this script on one node with torchrun's worker
    environment (torchrun_env). Worker r gets the judge's socket r
    (descriptor 3 + r, named by FRONTIER_JUDGE_FD); this process closes its
    copies once the workers exist. Does not import torch."""
    import subprocess

    port = str(free_port())
    procs = []
    try:
        for rank in range(nproc):
            env = torchrun_env(rank, nproc, port)
            env["FRONTIER_JUDGE_FD"] = str(3 + rank)
            procs.append(subprocess.Popen([sys.executable, "-u", _BOOT] + argv, env=env, pass_fds=(3 + rank,)))
    finally:
        for rank in range(nproc):
            try:
                os.close(3 + rank)
            except OSError:
                pass
    # A grace shorter than the runner's own, so that the launcher is not
    # killed while it still waits for a worker.
    return supervise(procs, grace=3.0)


def _data_before_clock(exc, client):
    """A program that opens a training shard before fh.train_begin() finds
    nothing there: say why instead of a bare FileNotFoundError."""
    name = getattr(exc, "filename", None)
    if client is None or client.begun or not isinstance(exc, OSError) or not isinstance(name, str):
        return None
    if os.path.abspath(name).startswith(client.data_dir + os.sep):
        import frontier_harness
        return frontier_harness._before_clock(os.path.join(client.data_dir, os.path.basename(name))) or None
    return None


def main():
    args = sys.argv[1:]
    if args and args[0].startswith("--nproc="):
        n = args[0][len("--nproc="):]
        if not n.isdigit() or int(n) < 1 or len(args) < 2:
            print("usage: frontier_boot.py [--nproc=N] PROGRAM.py [ARGS...]", file=sys.stderr)
            return EXIT_SETUP
        return launch(int(n), args[1:])
    if not args:
        print("usage: frontier_boot.py [--nproc=N] PROGRAM.py [ARGS...]", file=sys.stderr)
        return EXIT_SETUP
    prog = os.path.abspath(args[0])
    try:
        import frontier_wire
        wire, _ = frontier_wire.connect()
    except Exception as e:  # HarnessError from the config, above all
        print("frontier: %s" % e, file=sys.stderr)
        return EXIT_SETUP
    try:
        import frontier_harness as fh
    except ImportError as e:
        msg = "cannot import the harness: %s" % e
        if getattr(e, "name", None) in ("torch", "numpy"):
            msg += (" (install PyTorch and numpy for %s: on Debian `apt-get install python3-torch "
                    "python3-numpy`, elsewhere `pip install torch numpy`)" % sys.executable)
        wire.error("ImportError", "setup", msg)
        print("frontier: " + msg, file=sys.stderr)
        return EXIT_SETUP
    except Exception as e:
        code = getattr(e, "code", None) or "setup"
        wire.error(type(e).__name__, code if isinstance(code, str) else "setup", str(e), _format_traceback(e))
        print("frontier: %s" % e, file=sys.stderr)
        return EXIT_SETUP
    client = fh._C
    main_pid = os.getpid()

    def on_term(signum, frame):
        if os.getpid() != main_pid:
            # A forked child of the program (a data-loader worker) inherited
            # this handler: the main process reports for the run.
            os._exit(128 + signum)
        name = signal.Signals(signum).name
        wire.error(name, "terminated", "terminated by %s at step %d (a time limit or a cancel)"
                   % (name, client.steps_done))
        _die(128 + signum)

    signal.signal(signal.SIGTERM, on_term)

    if not os.path.isfile(prog):
        msg = "program %s does not exist" % sys.argv[1]
        wire.error("FileNotFoundError", "program", msg)
        print("frontier: " + msg, file=sys.stderr)
        return EXIT_SETUP

    # Run as `python3 train.py` would: the program's folder first on the path.
    sys.argv = [prog] + sys.argv[2:]
    sys.path[0] = os.path.dirname(prog)
    try:
        runpy.run_path(prog, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code not in (None, 0):
            msg = "the program called sys.exit(%r)" % (code,)
            wire.error("SystemExit", "exit", msg)
            print("frontier: " + msg, file=sys.stderr)
            _die(code if isinstance(code, int) else EXIT_RAISED)
    except BaseException as e:
        tb = _format_traceback(e)
        cause = wire.failure
        if cause is not None and cause is not e:
            # The program caught the judge's stop and failed later: the
            # judge's reason is the cause (it knows it already).
            e, tb = cause, _format_traceback(cause)
        hint = _data_before_clock(e, client)
        if hint is not None:
            wire.error(type(e).__name__, "data_before_clock", hint, tb)
        else:
            code = getattr(e, "code", None) if isinstance(e, fh.HarnessError) else None
            wire.error(type(e).__name__, code or "exception", str(e), tb)
        sys.stderr.write(tb)
        if hint is not None:
            print("frontier: " + hint, file=sys.stderr)
        _die(EXIT_RAISED)

    if wire.failure is not None:
        # The program swallowed the judge's stop and returned.
        tb = _format_traceback(wire.failure)
        sys.stderr.write(tb)
        _die(EXIT_RAISED)
    if not client.finished:
        print("frontier: the program ended without calling fh.finish(logits_fn)", file=sys.stderr)
        _die(EXIT_NO_FINISH)
    _die(0)


if __name__ == "__main__":
    sys.exit(main())
