#!/bin/sh
# How fast frontier refuses a hostile input: a named pipe, /dev/zero, a
# 50 MB file, a folder and a binary program, given as eval's program (a
# path and stdin), edit apply's files and track import's record. Each is
# timed N times (default 10) as a whole process, start to exit, and the
# median and the slowest are printed in milliseconds. The Python that
# frontier.yaml names leaves a mark when it runs: a refusal must come
# before any Python is probed, and the script fails when one does not.
#
#   bench/refusals.sh [N]
#
# Goal: every refusal under a second.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
n=${1:-10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$GO" build -o "$dir/frontier" ./cmd/frontier

printf '#!/bin/sh\ntouch %s/probed\nexit 1\n' "$dir" > "$dir/python"
chmod +x "$dir/python"
printf 'home: %s/home\npython: %s/python\n' "$dir" "$dir" > "$dir/frontier.yaml"
export FRONTIER_CONFIG="$dir/frontier.yaml"
mkfifo "$dir/fifo.py"
truncate -s 50000000 "$dir/big.py"
printf '\177ELF\002\001\001\000\000\000\000\000import torch\n' > "$dir/binary.py"
printf 'import torch\n' > "$dir/good.py"
printf '<<<<<<< SEARCH\nimport torch\n=======\nimport torch as t\n>>>>>>> REPLACE\n' > "$dir/answer.md"

# ms prints the milliseconds since the epoch.
ms() { echo $(( $(date +%s%N) / 1000000 )); }

# timeit NAME STDIN ARGS...: runs frontier ARGS with STDIN n times; it must
# exit 2 every time, without probing Python.
timeit() {
	name=$1 in=$2
	shift 2
	times=
	for _ in $(seq "$n"); do
		start=$(ms)
		rc=0
		"$dir/frontier" "$@" < "$in" > /dev/null 2> "$dir/err" || rc=$?
		times="$times $(( $(ms) - start ))"
		if [ "$rc" -ne 2 ] || [ -e "$dir/probed" ]; then
			echo "$name: exit $rc, probed: $([ -e "$dir/probed" ] && echo yes || echo no)" >&2
			cat "$dir/err" >&2
			exit 1
		fi
	done
	echo "$times" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk -v name="$name" -v n="$n" \
		'{ t[NR] = $1 } END { printf "%-40s n=%d  median %5d ms  max %5d ms\n", name, n, t[int((NR + 1) / 2)], t[NR] }'
}

timeit "eval, a named pipe" /dev/null eval "$dir/fifo.py"
timeit "eval, /dev/zero" /dev/null eval /dev/zero
timeit "eval, a 50 MB file" /dev/null eval "$dir/big.py"
timeit "eval, a folder" /dev/null eval "$dir"
timeit "eval, a binary program" /dev/null eval "$dir/binary.py"
timeit "eval -, stdin /dev/zero" /dev/zero eval -
timeit "eval -, stdin a 50 MB file" "$dir/big.py" eval -
timeit "edit apply, a named pipe" /dev/null edit apply "$dir/fifo.py" "$dir/answer.md"
timeit "edit apply, an answer of /dev/zero" /dev/null edit apply "$dir/good.py" /dev/zero
timeit "track import, a 50 MB record" /dev/null track import --from "$dir/big.py"
timeit "track import, a named pipe" /dev/null track import --from "$dir/fifo.py"
