"""frontier_launch: run an unmodified speedrun script for frontier's log contract.

    python3 -u frontier_launch.py --nproc=N [--fingerprint=PATH] PROGRAM.py [ARGS...]

Starts N copies of PROGRAM on this node with the environment that
`torchrun --standalone --nproc_per_node=N` gives its workers (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...), so
that torch.distributed.init_process_group() works unchanged; torchrun
itself is broken in some distributions. The first worker to fail stops the
others and its exit code is this script's; SIGTERM is passed on. The
workers are supervised as the harness's own launcher does: frontier writes
frontier_boot.py next to this script, and this script imports it.

With --fingerprint, a short probe process first writes the machine's
fingerprint (GPU models, driver, CUDA, PyTorch and Triton versions, CPU) as
JSON to PATH. It runs before the workers and never fails the run.

This script does not import torch.
"""

import json
import subprocess
import sys

from frontier_boot import free_port, supervise, torchrun_env

EXIT_USAGE = 2

PROBE = r"""
import json, os, platform, socket
out = {"python": platform.python_version(), "hostname": socket.gethostname()}
try:
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("model name"):
                out["cpu"] = line.split(":", 1)[1].strip()
                break
except OSError:
    pass
out.setdefault("cpu", platform.processor() or platform.machine())
try:
    with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as f:
        for word in f.readline().split():
            if word[:1].isdigit() and "." in word:
                out["driver"] = word
                break
except OSError:
    pass
from importlib import metadata
for dist in ("triton", "pytorch-triton"):  # nightly wheels ship "pytorch-triton"
    try:
        out["triton"] = metadata.version(dist)
        break
    except Exception:
        pass
try:
    import torch
    out["torch"] = torch.__version__
    out["threads"] = torch.get_num_threads()
    if torch.cuda.is_available():
        out["cuda"] = torch.version.cuda or ""
        out["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"""


def fingerprint(path):
    try:
        p = subprocess.run([sys.executable, "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=180, check=False)
        out = json.loads(p.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except Exception as e:  # the fingerprint is information, never a failure
        out = {"error": "fingerprint probe failed: %s" % e}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f)


def launch(nproc, argv):
    """nproc workers with torchrun's environment, and the names of it that
    torchelastic adds, which a speedrun script may read."""
    port = str(free_port())
    procs = []
    for rank in range(nproc):
        env = torchrun_env(rank, nproc, port)
        env.update({"ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(nproc), "TORCHELASTIC_RUN_ID": "frontier"})
        procs.append(subprocess.Popen([sys.executable, "-u"] + argv, env=env))
    return supervise(procs, grace=10.0)


def main():
    args = sys.argv[1:]
    nproc, fp = 1, None
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt.startswith("--nproc=") and opt[len("--nproc="):].isdigit() and int(opt[len("--nproc="):]) >= 1:
            nproc = int(opt[len("--nproc="):])
        elif opt.startswith("--fingerprint=") and len(opt) > len("--fingerprint="):
            fp = opt[len("--fingerprint="):]
        else:
            args = []
            break
    if not args:
        print("usage: frontier_launch.py --nproc=N [--fingerprint=PATH] PROGRAM.py [ARGS...]", file=sys.stderr)
        return EXIT_USAGE
    if fp:
        fingerprint(fp)
    return launch(nproc, args)


if __name__ == "__main__":
    sys.exit(main())
