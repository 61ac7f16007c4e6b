#!/bin/bash
# Measures bench/network.md's "Many cores" section: echo 64 B at 50 connections with 1 and 2
# server threads (event loops), epoll and uring-defer, 3 runs alternating engines and thread
# counts; then uring-sqpoll with 2 loops, one SQPOLL thread each against one shared
# (--share-sqpoll). Run it under the exclusive benchmark lock:
#   flock -x /tmp/ringside-bench.lock bench/network-cores.sh BINARY OUTDIR
# Traffic stays on 127.0.0.1. CPUs split by default: 1 loop on CPU 0 and the load on CPU 1;
# 2 loops on CPUs 0-1 and the load on CPU 1 beside loop 1. About 2 minutes.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
"$bin" probe | head -1 | tee "$out/machine.txt"
echo "load $(cut -d' ' -f1-3 /proc/loadavg) | $(date -u +%FT%TZ)" | tee -a "$out/machine.txt"
window=(--connections 50 --payload 64 --duration 2s --warmup 500ms --runs 3 --quiet)
"$bin" echo --engine epoll,uring-defer --server-threads 1,2 "${window[@]}" \
  --json "$out/echo.json" | tee "$out/echo.txt"
for share in own shared; do
  flags=()
  [ "$share" = shared ] && flags=(--share-sqpoll)
  "$bin" echo --engine uring-sqpoll --server-threads 2 "${flags[@]}" "${window[@]}" \
    --json "$out/sqpoll-$share.json" | tee "$out/sqpoll-$share.txt"
done
"$bin" report "$out/echo.json" --out "$out" > /dev/null
echo "done $(date -u +%FT%TZ)"
