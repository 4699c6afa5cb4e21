#!/bin/sh
# Measures the tiny-ladder's records on this machine, as README.md reports
# them:
#
#   1. each record against the one before it: N runs of each with the same
#      seeds, in alternation (frontier eval --repeats N --interleave
#      --baseline PREVIOUS), Welch's one-sided test that it is faster and
#      the one-sample test that its loss is under the target. A record
#      whose published time is under 20 s gets SHORT_N runs instead: the
#      machine's noise is a larger share of a short run;
#   2. with CALIBRATE=1, every record together (frontier bench calibrate),
#      N rounds in alternation.
#
# usage: suites/tiny-ladder/measure.sh [N] [FRONTIER]
#   N         runs of each record (default 5)
#   SHORT_N   runs of each record in a step to a short record (default 10)
#   FRONTIER  the frontier binary (default: frontier on PATH)
# Results go to $OUT (default: a folder "measured" beside this script):
# one JSON per step (frontier eval --json), calibration.json, and a table on
# stdout, then each record's figures over all its runs in these series (the
# step that ends at it and the one that starts from it), as suite.yaml
# publishes them. Run it on a quiet machine: other work on the cores widens
# the noise the tests must see through.
set -eu
n=${1:-5}
short_n=${SHORT_N:-10}
frontier=${2:-frontier}
dir=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$dir/measured}
mkdir -p "$out"

records=$("$frontier" bench show "$dir" --json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["records"]:
    print(r["id"], r["program"], int(r["time_ms"]))
')

prev=""
echo "$records" | while read -r id prog ms; do
	if [ -n "$prev" ]; then
		k=$n
		if [ "$ms" -lt 20000 ]; then
			k=$short_n
		fi
		echo "== $prev -> $id: $k runs of each, interleaved" >&2
		# The exit code says whether the record is acceptable; the JSON
		# says everything, so a failing step does not stop the others.
		"$frontier" eval "$dir/$prog" --track tiny --repeats "$k" --interleave \
			--baseline "$dir/$prevprog" --seed 0 --quiet --json >"$out/$prev-$id.json" || true
	fi
	prev=$id
	prevprog=$prog
done

if [ "${CALIBRATE:-0}" = 1 ]; then
	echo "== calibration: every record, $n rounds in alternation" >&2
	"$frontier" bench calibrate "$dir" --repeats "$n" --quiet --json >"$out/calibration.json"
fi

python3 - "$out" <<'EOF'
import glob, json, os, sys

out = sys.argv[1]
print("| step | n | previous: mean train time | this: mean train time | speedup | Welch p (one-sided) | val loss (mean, sd) | loss test p |")
print("|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(out, "*-*.json"))):
    step = os.path.basename(f)[:-5]
    try:
        d = json.load(open(f))
    except ValueError:
        print(f"| {step} | - | (no result) | | | | | |")
        continue
    rep = d.get("repeats") or {}
    base = rep.get("baseline") or {}
    t, b = rep.get("train_time_ms") or {}, base.get("train_time_ms") or {}
    loss, test = rep.get("val_loss") or {}, base.get("test") or {}
    lt = rep.get("loss_test") or {}
    print(f"| {step} | {t.get('n', 0)} | {b.get('mean', 0)/1000:.2f} s (sd {b.get('sd', 0)/1000:.2f}) | "
          f"{t.get('mean', 0)/1000:.2f} s (sd {t.get('sd', 0)/1000:.2f}) | {base.get('speedup_pct', 0):.1f}% | "
          f"{test.get('p', float('nan')):.2g} | {loss.get('mean', 0):.4f}, {loss.get('sd', 0):.4f} | {lt.get('p', float('nan')):.2g} |")

# Each record's runs over both of its series, as suite.yaml gives them.
pooled = {}
for f in sorted(glob.glob(os.path.join(out, "*-*.json"))):
    before, after = os.path.basename(f)[:-5].split("-", 1)
    try:
        rep = json.load(open(f)).get("repeats") or {}
    except ValueError:
        continue
    for rec, runs in ((after, rep.get("runs") or []), (before, (rep.get("baseline") or {}).get("runs") or [])):
        pooled.setdefault(rec, []).extend(r for r in runs if r.get("verdict") == "acceptable")
print()
print("| record | runs | time_ms | time_sd_ms | val_loss |")
print("|---|---|---|---|---|")
for rec in sorted(pooled):
    runs = pooled[rec]
    t = [r["train_time_ms"] for r in runs]
    if len(t) < 2:
        print(f"| {rec} | {len(t)} | | | |")
        continue
    m = sum(t) / len(t)
    sd = (sum((x - m) ** 2 for x in t) / (len(t) - 1)) ** 0.5
    loss = sum(r["val_loss"] for r in runs) / len(runs)
    print(f"| {rec} | {len(t)} | {m:.0f} | {sd:.0f} | {loss:.4f} |")

if not os.path.exists(os.path.join(out, "calibration.json")):
    sys.exit(0)
cal = json.load(open(os.path.join(out, "calibration.json")))
print()
print(f"calibration on {cal['fingerprint_class']}, {cal['repeats']} rounds:")
print()
print("| record | mean train time | sd | 95% interval | val loss | note |")
print("|---|---|---|---|---|---|")
for r in cal["records"]:
    t = r["train_time_ms"]
    print(f"| {r['record']} | {t['mean']/1000:.2f} s | {t['sd']/1000:.2f} s | [{t['ci_lo']/1000:.2f}, {t['ci_hi']/1000:.2f}] | "
          f"{r['val_loss']['mean']:.4f} | {r.get('failed', '')} |")
EOF
