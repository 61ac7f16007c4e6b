#!/bin/bash
# Measures bench/network.md: the echo and HTTP studies on loopback, on a veth pair between two
# network namespaces, and on that pair shaped by tc. Run it under the exclusive benchmark lock:
#   flock -x /tmp/ringside-bench.lock bench/network.sh BINARY OUTDIR
# Traffic stays on 127.0.0.1 or inside the namespaces ringside makes (198.18.0.0/30, no route
# out). Server on CPU 0, client on CPU 1. About 5 minutes.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
"$bin" probe | head -1 | tee "$out/machine.txt"
echo "load $(cut -d' ' -f1-3 /proc/loadavg) | $(date -u +%FT%TZ)" | tee -a "$out/machine.txt"

# The path with 200 us RTT needs netem; where the kernel lacks it, say so and shape by rate.
paths=("loopback" "veth" "veth --rtt 200us")
if ! "$bin" echo --network veth --rtt 200us -e epoll -c 1 -r 1 -d 100ms --warmup 0s \
    --quiet > /dev/null 2> "$out/rtt-probe.txt"; then
  paths=("loopback" "veth" "veth --link-rate 1gbit")
fi
echo "paths: ${paths[*]}" | tee -a "$out/machine.txt"

for path in "${paths[@]}"; do
  name=$(echo "$path" | tr -d ' -' )
  # shellcheck disable=SC2086 # the path is its flags
  "$bin" echo --network $path --engine epoll,uring,uring-defer --connections 1,50 \
    --duration 2s --warmup 500ms --runs 3 --json "$out/echo-$name.json" --quiet \
    | tee "$out/echo-$name.txt"
  # shellcheck disable=SC2086
  "$bin" http --network $path --engine epoll,uring-multishot,uring-defer --connections 50 \
    --duration 2s --warmup 500ms --runs 3 --json "$out/http-$name.json" --quiet \
    | tee "$out/http-$name.txt"
done
ip netns list | grep ringside- && { echo "namespaces left behind"; exit 1; }
echo "done $(date -u +%FT%TZ)"
