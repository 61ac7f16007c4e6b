#!/bin/bash
# Measures bench/http.md: the HTTP study, then wrk and ringside's load generator against the same
# ringside servers, then one open-loop run. Run it under the exclusive benchmark lock:
#   flock -x /tmp/ringside-bench.lock bench/http.sh BINARY OUTDIR
# Traffic goes to 127.0.0.1 only. Server on CPU 0, client on CPU 1, as FINDINGS' HTTP anchors.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
echo "machine: $(uname -r) | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) | \
$(nproc) CPUs | cpuidle $(cat /sys/devices/system/cpu/cpuidle/current_governor 2>/dev/null) | \
load $(cut -d' ' -f1-3 /proc/loadavg) | $(date -u +%FT%TZ)" | tee "$out/machine.txt"

"$bin" http --engine epoll,uring,uring-multishot,uring-defer --connections 50,256 \
  --duration 10s --runs 3 --json "$out/matrix.json" --quiet | tee "$out/matrix.txt"

port=39180
for engine in epoll uring-defer; do
  "$bin" serve http --engine "$engine" --cpu 0 --listen 127.0.0.1:$port --quiet \
    > /dev/null &
  server=$!
  sleep 0.5
  for connections in 50 256; do
    taskset -c 1 wrk -t1 -c"$connections" -d10s --latency "http://127.0.0.1:$port/" \
      > "$out/wrk-$engine-$connections.txt"
    "$bin" load http --target "http://127.0.0.1:$port/" --cpu 1 -c "$connections" -d 10s \
      --server-pid "$server" --format json > "$out/load-$engine-$connections.json"
  done
  if [ "$engine" = epoll ]; then
    "$bin" load http --target "http://127.0.0.1:$port/" --cpu 1 -c 50 -d 10s --rate 40000 \
      --server-pid "$server" --format json > "$out/open-$engine-50-40k.json"
  fi
  kill -TERM "$server"
  wait "$server" || true
done
echo "done $(date -u +%FT%TZ)"
