"""Measure the cost of the harness's telemetry on the tiny track.

Runs the tiny reference program under the harness with full telemetry
(sections, designated-step events, the profiler window) and with
telemetry_level "off" (clock, validation and the final event only), over a
few seeds, alternating the order per seed so that drift in machine load hits
both arms alike. Prints per-run train times and the overhead of full
telemetry in percent of train time: the mean of the paired per-seed ratios
and the ratio of medians. It also measures the harness's own work per step
in one process (sections and fh.step around an empty body), which machine
load hardly affects, as a share of the reference's step time.

    python3 bench/harness-overhead.py --data DIR [--seeds 3] [--steps N]

DIR holds the tiny corpus (`frontier data build tiny --out DIR`). Only the
standard library is used here; the runs need PyTorch. The target is an
overhead under 3%; on a machine shared with other work the noise between
runs can be larger than that: then trust the in-process figure and the CPU
times more than the wall-clock ratios.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(ROOT, "internal", "harness", "py")
REFERENCE = os.path.join(ROOT, "tracks", "tiny", "train.py")


def config(data, seed, level, telemetry, threads):
    """The tiny track's harness config (see tracks/tiny/track.yaml)."""
    train = sorted(os.path.join(data, f) for f in os.listdir(data) if f.startswith("tiny_train_"))
    if not train:
        sys.exit("no tiny_train_*.bin in %s: run `frontier data build tiny --out %s` first" % (data, data))
    return {
        "schema": 1, "track": "tiny", "mode": "full",
        "train_files": train, "val_file": os.path.join(data, "tiny_val_000000.bin"),
        "vocab_size": 256, "bos_id": 255,
        "val_tokens": 65536, "val_seq_len": 128, "val_batch_seqs": 64,
        "seed": seed, "device": "cpu", "threads": threads, "world_size": 1,
        "max_steps": 0, "fast_steps": 3, "fast_val_tokens": 2048,
        "telemetry_path": telemetry, "telemetry_level": level,
        "log_every": 25, "val_every": 0, "profile_steps": [10, 12], "top_k": 15,
        "compile_budget_ms": 60000,
        # The probe runs after the clock stops; it is off to keep runs short.
        "probe": {"enabled": False},
    }


def run_once(python, data, seed, level, steps, threads, work):
    d = tempfile.mkdtemp(prefix="run-%s-%d-" % (level, seed), dir=work)
    hdir = os.path.join(d, "_frontier")
    os.mkdir(hdir)
    for f in ("frontier_boot.py", "frontier_harness.py"):
        shutil.copy(os.path.join(HARNESS, f), hdir)
    src = open(REFERENCE, encoding="utf-8").read()
    if steps:
        src, n = re.subn(r"num_steps: int = \d+", "num_steps: int = %d" % steps, src)
        if n != 1:
            sys.exit("cannot find num_steps in %s" % REFERENCE)
    with open(os.path.join(d, "train.py"), "w", encoding="utf-8") as f:
        f.write(src)
    tel = os.path.join(d, "telemetry.jsonl")
    cfg = os.path.join(d, "config.json")
    with open(cfg, "w", encoding="utf-8") as f:
        json.dump(config(data, seed, level, tel, threads), f)
    env = dict(os.environ, FRONTIER_CONFIG=cfg, PYTHONPATH=hdir, PYTHONUNBUFFERED="1",
               PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    before = os.times()
    t0 = time.perf_counter()
    p = subprocess.run([python, "-u", os.path.join(hdir, "frontier_boot.py"), "train.py"], cwd=d, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    final = None
    with open(tel, encoding="utf-8") as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("event") == "final":
                final = ev
    if p.returncode != 0 or final is None:
        sys.exit("run %s seed %d failed (exit %d):\n%s" % (level, seed, p.returncode, p.stderr[-3000:]))
    shutil.rmtree(d, ignore_errors=True)
    return {"level": level, "seed": seed, "train_ms": final["train_time_ms"], "steps": final["steps"],
            "val_loss": final["val_loss"], "wall_s": wall, "cpu_s": cpu}


MICRO = """
import json, time, torch
import frontier_harness as fh
cfg = fh.config()
loss = torch.tensor(1.0)
fh.train_begin()
n = 20000
t0 = time.perf_counter()
for step in fh.steps(n):
    with fh.section("data"): pass
    with fh.section("forward"): pass
    with fh.section("backward"): pass
    with fh.section("optimizer"): pass
    fh.step(step, tokens=1024, train_loss=loss)
per_step = (time.perf_counter() - t0) / n
fh.finish(lambda x: torch.zeros(x.shape[0], x.shape[1], cfg.vocab_size))
print(json.dumps({"per_step_us": per_step * 1e6}))
"""


def micro(python, data, work):
    """The harness's own cost per step: four sections and fh.step (with a
    designated step every 25) around an empty body, in one process. A ratio
    of back-to-back measurements, so machine load matters little."""
    d = tempfile.mkdtemp(prefix="micro-", dir=work)
    hdir = os.path.join(d, "_frontier")
    os.mkdir(hdir)
    for f in ("frontier_boot.py", "frontier_harness.py"):
        shutil.copy(os.path.join(HARNESS, f), hdir)
    with open(os.path.join(d, "train.py"), "w", encoding="utf-8") as f:
        f.write(MICRO)
    cfg = config(data, 1, "full", os.path.join(d, "telemetry.jsonl"), 1)
    cfg.update(val_tokens=1024, profile_steps=[])
    with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    env = dict(os.environ, FRONTIER_CONFIG=os.path.join(d, "config.json"), PYTHONPATH=hdir, OMP_NUM_THREADS="1")
    p = subprocess.run([python, os.path.join(hdir, "frontier_boot.py"), "train.py"], cwd=d, env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("micro benchmark failed:\n" + p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])["per_step_us"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="folder with the tiny corpus")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=0, help="override the reference's num_steps (0: keep)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="harness-overhead-")
    rows = []
    try:
        per_step_us = min(micro(a.python, os.path.abspath(a.data), work) for _ in range(3))
        for seed in range(1, a.seeds + 1):
            order = ("full", "off") if seed % 2 else ("off", "full")
            for level in order:
                r = run_once(a.python, os.path.abspath(a.data), seed, level, a.steps, a.threads, work)
                rows.append(r)
                print("seed %d %-4s train %8.0f ms  steps %d  val_loss %.4f  wall %6.1f s  cpu %6.1f s"
                      % (seed, level, r["train_ms"], r["steps"], r["val_loss"], r["wall_s"], r["cpu_s"]),
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    full = {r["seed"]: r for r in rows if r["level"] == "full"}
    off = {r["seed"]: r for r in rows if r["level"] == "off"}
    ratios = [full[s]["train_ms"] / off[s]["train_ms"] - 1 for s in sorted(full)]
    med = statistics.median(r["train_ms"] for r in full.values()) / \
        statistics.median(r["train_ms"] for r in off.values()) - 1
    print()
    print("train time, full telemetry vs off, %d seeds, %d threads:" % (len(full), a.threads))
    print("  per seed: %s" % "  ".join("%+.2f%%" % (100 * x) for x in ratios))
    print("  mean of paired ratios: %+.2f%%   ratio of medians: %+.2f%%" % (100 * statistics.mean(ratios), 100 * med))
    step_ms = statistics.median(r["train_ms"] / r["steps"] for r in off.values())
    print("  harness work per step (in-process, best of 3): %.1f us = %.3f%% of the median %.1f ms step"
          % (per_step_us, 100 * per_step_us / 1000 / step_ms, step_ms))
    cpu = statistics.median(full[s]["cpu_s"] - off[s]["cpu_s"] for s in full)
    print("  process CPU time, full minus off (median): %+.2f s (includes the profiler's untimed table)" % cpu)
    same = all(abs(full[s]["val_loss"] - off[s]["val_loss"]) < 1e-9 for s in full)
    print("  val loss identical in both arms: %s" % ("yes" if same else "NO"))


if __name__ == "__main__":
    main()
