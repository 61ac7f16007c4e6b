#!/bin/sh
# Whether foreign_cpu_share sees another job: a short echo study (epoll and uring at one
# connection, 20 rounds) with a CPU-bound loop beside it from 6 s to 12 s after its start; the
# summary sorts the rows by whether their window (window_start_unix_s, window_end_unix_s) fell
# inside the loop's.
# Usage (under the benchmark lock):
#   flock -x /tmp/ringside-bench.lock bench/foreign.sh BINARY OUT_DIR
set -eu
binary=$1 out=$2
mkdir -p "$out"
(sleep 6; date +%s.%N > "$out/loop-start.txt"; timeout 6 sh -c 'while :; do :; done' || true
 date +%s.%N > "$out/loop-end.txt") &
"$binary" echo --engine epoll,uring --connections 1 --duration 300ms --warmup 100ms --runs 20 \
  --no-aa --format json --output "$out/echo.json" 2> "$out/echo.log"
wait
