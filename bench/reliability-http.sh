#!/usr/bin/env bash
# What the HTTP servers' new send path (answers owed as slices, one send or sendmsg) and the
# Date header cost a request (bench/reliability.md): two builds of ringside, one from before
# and one from after, each run `ringside http` at one offered rate (an open loop, so both serve
# the same requests and server CPU per request compares), epoll and uring-defer, server on CPU
# 0 and load on CPU 1; six rounds, who goes first alternating.
# Usage: flock -x /tmp/ringside-bench.lock bench/reliability-http.sh BEFORE AFTER OUT_DIR
set -euo pipefail
before=$1 after=$2 out=$3
mkdir -p "$out"
date -u
for round in 1 2 3 4 5 6; do
  order="before after"
  if [ $((round % 2)) = 0 ]; then order="after before"; fi
  for name in $order; do
    if [ "$name" = before ]; then bin=$before; else bin=$after; fi
    "$bin" http --engine epoll,uring-defer --rate 30000 -c 50 -d 2s --warmup 500ms --runs 1 \
      --server-cpu 0 --client-cpu 1 --format json --quiet > "$out/$name-r$round.json"
  done
done
date -u
python3 "$(dirname "$0")/reliability-summary.py" http "$out"
