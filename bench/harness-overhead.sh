#!/bin/sh
# Telemetry overhead of the harness on the tiny track: full telemetry vs
# telemetry_level "off", over a few seeds. Builds the tiny corpus first.
#
#   bench/harness-overhead.sh [--seeds N] [--steps N] [--threads N] [--python PATH]
#
# DATA (default: a temporary folder) holds the corpus; GO picks the go tool.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3
tmp=""
if [ -z "${DATA:-}" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	DATA=$tmp/tiny
fi
"$GO" run ./cmd/frontier data build tiny --out "$DATA" >/dev/null
exec "$PYTHON" bench/harness-overhead.py --data "$DATA" --python "$PYTHON" "$@"
