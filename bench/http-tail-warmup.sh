#!/bin/bash
# Does the warm-up explain the p99.9 gap to wrk? ringside's load generator with and without its
# 1 s warm-up, and wrk (which has none), against one epoll server, 50 connections, 2 rounds.
#   flock -x /tmp/ringside-bench.lock bench/http-tail-warmup.sh BINARY OUTDIR
set -euo pipefail
bin=$1
out=$2
here=$(dirname "$0")
mkdir -p "$out"
port=39182
"$bin" serve http --engine epoll --cpu 0 --listen 127.0.0.1:$port --quiet > /dev/null &
server=$!
sleep 0.5
for round in 1 2; do
  for warmup in 0s 1s; do
    "$bin" load http --target "http://127.0.0.1:$port/" --cpu 1 -c 50 -d 10s --warmup $warmup \
      --server-pid "$server" --format json > "$out/load-warmup-$warmup-$round.json"
  done
  taskset -c 1 wrk -t1 -c50 -d10s -s "$here/http-wrk-percentiles.lua" "http://127.0.0.1:$port/" \
    > "$out/wrk-$round.txt"
done
kill -TERM "$server"
wait "$server" || true
