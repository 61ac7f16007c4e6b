#!/bin/sh
# The check that attribution rounds leave the timed figures alone: an HTTP study at 100
# connections, uring-multishot and uring-defer, with --ring-events (timed rounds, then 2
# attribution rounds with the tracepoints on) and without, alternated: on, off, on, off.
# Usage (under the benchmark lock):
#   flock -x /tmp/ringside-bench.lock bench/attribution.sh BINARY OUT_DIR
set -eu
binary=$1 out=$2
mkdir -p "$out"
for run in 1 2; do
  for config in on off; do
    flag=$([ "$config" = on ] && echo --ring-events || true)
    "$binary" http --engine uring-multishot,uring-defer --connections 100 --duration 400ms \
      --warmup 150ms --runs auto $flag --quiet --format json --output "$out/http-$config-$run.json"
  done
done
