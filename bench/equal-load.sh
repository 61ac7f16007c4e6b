#!/bin/bash
# Measures bench/equal-load.md: issue 19's equal-load table with the HTTP study itself (open
# loop at fixed offered rates, 3 alternated rounds), then the echo and HTTP sweeps for the
# curves. Run it under the exclusive benchmark lock, each part its own hold (≤ 10 min):
#   bench/equal-load.sh BINARY OUTDIR
# Traffic goes to 127.0.0.1 only. Server on CPU 0, load on CPU 1, 50 connections. SCHED_FIFO:
# on this shared machine a SCHED_OTHER load got 13% of its CPU (the other helpers' work).
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
lock() { flock -x /tmp/ringside-bench.lock "$@"; }
echo "machine: $("$bin" probe 2>/dev/null | head -1) | load $(cut -d' ' -f1-3 /proc/loadavg) | \
$(date -u +%FT%TZ)" | tee "$out/machine.txt"
engines=epoll,uring,uring-multishot,uring-defer,uring-fixed-files,uring-min-wait
common=(--server-cpu 0 --client-cpu 1 --connections 50 --sched fifo --quiet)
lock "$bin" http --engine "$engines" --rate 25000,50000,100000 --duration 3s --warmup 1s \
  --runs 3 "${common[@]}" --json "$out/table.json" | tee "$out/table.txt"
for study in http echo; do
  lock "$bin" "$study" --engine "$engines" --sweep --duration 2s --warmup 500ms --runs 1 \
    "${common[@]}" --json "$out/sweep-$study.json" | tee "$out/sweep-$study.txt"
done
"$bin" report "$out/table.json" --out "$out/report-table" > /dev/null
for study in http echo; do
  "$bin" report "$out/sweep-$study.json" --out "$out/report-sweep-$study" > /dev/null
done
echo "done $(date -u +%FT%TZ)"
