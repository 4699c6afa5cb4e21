"""frontier_boot: start a candidate program under the harness.

    python3 -u frontier_boot.py train.py [args...]
    python3 -u frontier_boot.py --nproc=N train.py [args...]

Imports frontier_harness first, so the harness reads the injected config and
captures its clock before any program code runs; then runs the program as
__main__. Whatever way the program ends is written to the telemetry file:
an exception (with its traceback), SIGTERM, sys.exit, or returning without
calling fh.finish(). With --nproc=N it first starts N worker processes on
this node the way torchrun --standalone does (see launch).

Exit codes: 0 the run finished; 1 the program raised; 2 the harness could
not start (config); 3 the program ended without calling fh.finish();
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
    # failed run alive after its result is written.
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


def _setup_error(kind, code, message):
    """Write an error event when the harness itself cannot load (torch
    missing): the config is plain JSON, so its telemetry path is readable."""
    try:
        import json
        with open(os.environ["FRONTIER_CONFIG"], "r", encoding="utf-8") as f:
            path = json.load(f)["telemetry_path"]
        line = json.dumps({"event": "error", "t_ms": 0, "kind": kind, "code": code, "message": message,
                           "traceback": "", "step": 0})
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except Exception:
        pass


def _free_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _inherited_fds():
    """The inherited descriptors named by the run config (the validation
    shard's val_fd, the telemetry key's key_fd), as a tuple for Popen's
    pass_fds; those that are not set or not open are left out (the workers
    then report the problem themselves)."""
    try:
        import json
        with open(os.environ["FRONTIER_CONFIG"], "r", encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, KeyError, ValueError):
        return ()
    fds = []
    for name in ("val_fd", "key_fd"):
        try:
            fd = int(cfg.get(name) or 0)
            if fd >= 3:
                os.fstat(fd)
                fds.append(fd)
        except (OSError, ValueError, TypeError, AttributeError):
            pass
    return tuple(fds)


def launch(nproc, argv):
    """Start nproc copies of this script on one node with the environment
    torchrun gives its workers (RANK, LOCAL_RANK, WORLD_SIZE,
    LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so that
    torch.distributed.init_process_group() works unchanged. The first worker
    to fail stops the others; SIGTERM is passed on. Does not import torch."""
    import subprocess
    import time

    port = str(_free_port())
    # The validation shard's and the telemetry key's descriptors go to every
    # worker, each of which reads them and closes them before its program
    # runs; this process closes its own copies as soon as the workers exist.
    fds = _inherited_fds()
    procs = []
    try:
        for rank in range(nproc):
            env = dict(os.environ)
            env.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0",
                        "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
            procs.append(subprocess.Popen([sys.executable, "-u", _BOOT] + argv, env=env, pass_fds=fds))
    finally:
        for fd in fds:
            os.close(fd)

    def stop_all(grace=3.0):
        # Shorter than the runner's own grace, so the launcher is not killed
        # while it still waits for a worker.
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
        import frontier_harness as fh
    except ImportError as e:
        msg = "cannot import the harness: %s" % e
        if getattr(e, "name", None) in ("torch", "numpy"):
            msg += (" (install PyTorch and numpy for %s: on Debian `apt-get install python3-torch "
                    "python3-numpy`, elsewhere `pip install torch numpy`)" % sys.executable)
        _setup_error("ImportError", "setup", msg)
        print("frontier: " + msg, file=sys.stderr)
        return EXIT_SETUP
    except Exception as e:  # HarnessError from the config, above all
        print("frontier: %s" % e, file=sys.stderr)
        return EXIT_SETUP
    h = fh._H
    main_pid = os.getpid()

    def on_term(signum, frame):
        if os.getpid() != main_pid:
            # A forked child of the program (a data-loader worker) inherited
            # this handler: the main process reports for the run.
            os._exit(128 + signum)
        name = signal.Signals(signum).name
        h.report(name, "terminated", "terminated by %s at step %d (a time limit or a cancel)"
                 % (name, h._steps_done))
        _die(128 + signum)

    signal.signal(signal.SIGTERM, on_term)

    if not os.path.isfile(prog):
        msg = "program %s does not exist" % sys.argv[1]
        h.report("FileNotFoundError", "program", msg)
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
            if h._failure is not None:
                h.report_exception(h._failure, _format_traceback(h._failure))
            else:
                h.report("SystemExit", "exit", msg)
            print("frontier: " + msg, file=sys.stderr)
            _die(code if isinstance(code, int) else EXIT_RAISED)
    except BaseException as e:
        tb = _format_traceback(e)
        if h._failure is not None and h._failure is not e:
            # The program caught the harness's error and failed later: the
            # harness's error is the cause.
            h.report_exception(h._failure, _format_traceback(h._failure))
        else:
            h.report_exception(e, tb)
        sys.stderr.write(tb)
        _die(EXIT_RAISED)

    if h._failure is not None:
        # The program swallowed a fatal harness error and returned.
        tb = _format_traceback(h._failure)
        h.report_exception(h._failure, tb)
        sys.stderr.write(tb)
        _die(EXIT_RAISED)
    if not h._finished:
        msg = "the program ended without calling fh.finish(logits_fn)"
        h.report("NoFinish", "no_finish", msg)
        print("frontier: " + msg, file=sys.stderr)
        _die(EXIT_NO_FINISH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
