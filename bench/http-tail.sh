#!/bin/bash
# wrk's p99.9 beside ringside's load generator's, same server, alternating 3 rounds (bench/http.md
# section 5). Run under the exclusive benchmark lock:
#   flock -x /tmp/ringside-bench.lock bench/http-tail.sh BINARY OUTDIR
# Traffic goes to 127.0.0.1 only. Server on CPU 0, client on CPU 1.
set -euo pipefail
bin=$1
out=$2
here=$(dirname "$0")
mkdir -p "$out"
"$bin" probe | head -1 | tee "$out/machine.txt"
echo "load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%FT%TZ)" | tee -a "$out/machine.txt"
port=39181
for engine in epoll uring-defer; do
  "$bin" serve http --engine "$engine" --cpu 0 --listen 127.0.0.1:$port --quiet > /dev/null &
  server=$!
  sleep 0.5
  for round in 1 2 3; do
    for connections in 50 256; do
      taskset -c 1 wrk -t1 -c"$connections" -d10s -s "$here/http-wrk-percentiles.lua" \
        "http://127.0.0.1:$port/" > "$out/wrk-$engine-$connections-$round.txt"
      "$bin" load http --target "http://127.0.0.1:$port/" --cpu 1 -c "$connections" -d 10s \
        --server-pid "$server" --format json > "$out/load-$engine-$connections-$round.json"
    done
  done
  kill -TERM "$server"
  wait "$server" || true
done
echo "done $(date -u +%FT%TZ)"
