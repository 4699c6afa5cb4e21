#!/bin/sh
# Which clock moves less when other work shares the machine: the same
# programs timed alone, beside one and beside two CPU burners
# (sh -c 'while :; do :; done'), several runs each, interleaved (every round
# runs every condition, in an order that rotates from round to round), with
# the harness's OMP_WAIT_POLICY=PASSIVE. For each program and condition it
# prints the mean and sd of
#   - wall: the full run's wall time (the runner's, process start to exit);
#   - train: the judge's train time (wall clock, train_begin to finish);
#   - cpu: the program's own CPU time over the full run (user and system,
#     all its threads: the job cgroup's, else read from /proc);
#   - tcpu: the track's CPU clock, the program's CPU time over the judge's
#     train window only (when the track is timed by CPU time);
# and each mean's shift against the same program alone. It also records the
# load: the load average and the CPU other processes took during each run
# (frontier's conditions), so that "alone" says how alone it was.
#
# usage: bench/clock.sh [N] [FRONTIER]
#   N           runs of each ladder record per condition (default 4)
#   REF_N       runs of the track's reference per condition (default 2: it
#               is the longest program)
#   PROGRAMS    the ladder records to time (default "r5 r6", from
#               suites/tiny-ladder/records)
#   FRONTIER    the frontier binary (default bin/frontier)
#   OUT         where the runs' JSON and the table go (default a new
#               temporary folder); the table covers every run there
#   ROUND0      the first round's number (default 0): to add rounds to
#               an OUT folder that has some
# Each run is `frontier eval --track tiny --seed 0 --json`; they go to the
# store of $FRONTIER_HOME like any evaluation.
set -eu
cd "$(dirname "$0")/.."
n=${1:-4}
ref_n=${REF_N:-2}
frontier=${2:-${FRONTIER:-bin/frontier}}
programs=${PROGRAMS:-r5 r6}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/clock.XXXXXX")}
mkdir -p "$out"

burners=""
stop_burners() {
	for p in $burners; do
		kill "$p" 2>/dev/null || true
	done
	burners=""
}
load_pid=""
cleanup() {
	stop_burners
	if [ -n "$load_pid" ]; then
		kill "$load_pid" 2>/dev/null || true
	fi
}
# The machine's load every 10 s while the study runs. It starts before the
# traps are set: a subshell holding them would run cleanup on SIGTERM and
# go on.
(while :; do
	echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)"
	sleep 10
done) >>"$out/loadavg.txt" &
load_pid=$!
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# The reference as the track gives it.
"$frontier" track show tiny --program >"$out/ref.py"

runs=$(( n > ref_n ? n : ref_n ))
round0=${ROUND0:-0}
i=0
while [ "$i" -lt "$runs" ]; do
	# The conditions in an order that rotates: 0 1 2, 1 2 0, 2 0 1, ...
	for k in 0 1 2; do
		c=$(( (k + i + round0) % 3 ))
		b=0
		while [ "$b" -lt "$c" ]; do
			sh -c 'while :; do :; done' &
			burners="$burners $!"
			b=$((b + 1))
		done
		sleep 1 # the burners are running before the clock is
		progs=""
		if [ "$i" -lt "$ref_n" ]; then
			progs="ref"
		fi
		if [ "$i" -lt "$n" ]; then
			progs="$progs $programs"
		fi
		for p in $progs; do
			f="$out/ref.py"
			if [ "$p" != ref ]; then
				f="suites/tiny-ladder/records/$p.py"
			fi
			r=$((i + round0))
			echo "== round $((r + 1)): $p beside $c burner(s)" >&2
			"$frontier" eval "$f" --track tiny --seed 0 --quiet --json >"$out/$p-b$c-$r.json" || true
		done
		stop_burners
	done
	i=$((i + 1))
done
cleanup
trap - EXIT INT TERM

python3 - "$out" <<'EOF'
import glob, json, os, re, statistics as st, sys

out = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(out, "*-b[0-2]-*.json"))):
    prog, burn, _ = re.match(r"(.+)-b(\d)-(\d+)\.json$", os.path.basename(f)).groups()
    try:
        d = json.load(open(f))
    except ValueError:
        print(f"{f}: no JSON (the run failed before a result)", file=sys.stderr)
        continue
    m, full = d.get("metrics", {}), d.get("full") or {}
    cpu = ((full.get("conditions") or {}).get("cpu")) or {}
    if not m.get("wall_ms") or not cpu.get("own_ms"):
        print(f"{f}: verdict {d.get('verdict')}, no full run timed", file=sys.stderr)
        continue
    la = (full.get("conditions") or {}).get("load_avg") or [float("nan")]
    on_cpu = m.get("clock") == "cpu"
    if not on_cpu:
        print(f"{f}: the track was timed by wall time: no tcpu", file=sys.stderr)
    rows.setdefault((prog, int(burn)), []).append({
        "wall": m["wall_ms"] / 1000, "cpu": cpu["own_ms"] / 1000,
        "train": (m["wall_train_ms"] if on_cpu else m.get("train_time_ms", 0)) / 1000,
        "tcpu": m["train_time_ms"] / 1000 if on_cpu else float("nan"),
        "others": cpu["others_ms"] / max(cpu["wall_ms"], 1), "load": la[0], "source": cpu.get("own_source", ""),
    })

def ms(xs):
    return (st.mean(xs), st.stdev(xs) if len(xs) > 1 else float("nan"))

KEYS = ("wall", "train", "cpu", "tcpu")
print(f"{'program':8} {'burners':>7} {'n':>2}" + "".join(f" {k + ' s':>14} {'shift':>7}" for k in KEYS) + f" {'others':>6} {'load1':>5}")
shifts = {}
for prog in sorted({p for p, _ in rows}):
    base = rows.get((prog, 0))
    for b in (0, 1, 2):
        r = rows.get((prog, b))
        if not r:
            continue
        line = f"{prog:8} {b:>7} {len(r):>2}"
        for k in KEYS:
            mean, sd = ms([x[k] for x in r])
            shift = mean / ms([x[k] for x in base])[0] - 1 if base else float("nan")
            shifts.setdefault((k, b), []).append(shift)
            line += f" {mean:7.2f} +-{sd:5.2f} {100 * shift:+6.1f}%"
        line += f" {st.mean(x['others'] for x in r):6.2f} {st.mean(x['load'] for x in r):5.2f}"
        print(line)
print()
print("others: CPUs other processes kept busy during the full run (the burners included); load1: the 1-minute load average at its start")
print("sources of the CPU time:", sorted({x["source"] for r in rows.values() for x in r}))
for b in (1, 2):
    for k in ("cpu", "tcpu"):
        w, c = shifts.get(("train", b)), shifts.get((k, b))
        if w and c:
            aw, ac = st.mean(abs(x) for x in w), st.mean(abs(x) for x in c)
            print(f"beside {b} burner(s), over programs: mean |shift| of train (wall) {100 * aw:.1f}%, of {k} {100 * ac:.1f}%: {k} moves {aw / ac if ac else float('inf'):.1f}x less")
# The ladder's step: how much faster each record is than the one before it,
# by each clock, under each condition (ratio of the means).
progs = sorted({p for p, _ in rows if p != "ref"})
for a, bb in zip(progs, progs[1:]):
    for b in (0, 1, 2):
        ra, rb = rows.get((a, b)), rows.get((bb, b))
        if ra and rb:
            sp = {k: 1 - st.mean(x[k] for x in rb) / st.mean(x[k] for x in ra) for k in ("train", "tcpu")}
            print(f"step {a} -> {bb} beside {b} burner(s): {100 * sp['train']:+.1f}% by train (wall), {100 * sp['tcpu']:+.1f}% by tcpu")
# The spread over every run of a program, whatever ran beside it: what a
# reader of single timings taken at different moments sees.
for prog in sorted({p for p, _ in rows}):
    allr = [x for (p, _), r in rows.items() if p == prog for x in r]
    if len(allr) > 1:
        cv = {k: st.stdev([x[k] for x in allr]) / st.mean([x[k] for x in allr]) for k in KEYS}
        print(f"{prog}: over all {len(allr)} runs, sd/mean of" + ",".join(f" {k} {100 * cv[k]:.1f}%" for k in KEYS))
loads = [float(l.split()[1]) for l in open(os.path.join(out, "loadavg.txt")) if len(l.split()) > 1]
if loads:
    print(f"load average (1 min) while measuring, every 10 s: mean {st.mean(loads):.2f}, min {min(loads):.2f}, max {max(loads):.2f} (n = {len(loads)})")
print(f"runs: {out}")
EOF
