#!/bin/sh
# The judge's cost on the tiny track's shapes (V 256, T 128, B 16, 65,536
# validation tokens), measured inside a real run with its judge:
#   - the round trip of fh.step (one message a step) against the same loop
#     without it, in microseconds, and as a share of the tiny reference's
#     step;
#   - the validation pass, per logits_fn call (the judge's loss and checks
#     included), against computing the same cross-entropy in the program's
#     process on the same logits.
#
#   bench/judge-overhead.sh [go test flags, e.g. -count 3]
#
# Goals: under 1% of the step time; validation within 10% of in-process.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
exec "$GO" test -run '^$' -bench BenchmarkJudge -benchtime 1x -v "$@" ./internal/harness/
