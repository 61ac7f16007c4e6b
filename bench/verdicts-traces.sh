#!/usr/bin/env bash
# Noise traces for the verdict code (issue 28): A/A studies, the same engine measured twice in
# every round (`--engine X,X`), 48 rounds each, on this VM. tests/verdicts.rs replays windows of
# their rounds to count how often an identical pair is called different (false alarms) and how
# often a true 1.2x is found (power).
# Usage: flock -x /tmp/ringside-bench.lock bench/verdicts-traces.sh RINGSIDE OUT_DIR
set -euo pipefail
bin=${1:?ringside binary}; out=${2:?output directory}
mkdir -p "$out"
"$bin" probe --format json > "$out/probe.json" 2>/dev/null || true
run() {
  local name=$1; shift
  echo "== $name: $*" >&2
  /usr/bin/time -f "$name %e s" "$bin" "$@" --runs 48 --quiet --format json -o "$out/$name.json"
}
run fs-write-blocking fs write --engine blocking,blocking --size 64m --runtime 300ms
run fs-write-ring fs write --engine uring-ring,uring-ring --size 64m --runtime 300ms
run fs-read-direct-1 fs read --engine blocking,blocking --direct --depth 1 --size 64m --runtime 200ms
run fs-cycle-link fs cycle --engine uring-link,uring-link --size 8m
run echo-epoll-50 echo --engine epoll,epoll -c 50 -d 500ms --warmup 200ms
run http-epoll-rate http --engine epoll,epoll -c 50 --rate 30000 -d 1s --warmup 200ms --sched fifo
