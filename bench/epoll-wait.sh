#!/bin/bash
# The open loop's timing with epoll_pwait2 and with the fallback of kernels before 5.11
# (epoll_wait + a timerfd, forced here by RINGSIDE_NO_EPOLL_PWAIT2=1), alternating A B A B for
# 5 rounds (bench/epoll-wait.md). Run under the exclusive benchmark lock:
#   flock -x /tmp/ringside-bench.lock bench/epoll-wait.sh BINARY OUTDIR
# Traffic goes to 127.0.0.1 only. Server (epoll, HTTP) on CPU 0, load on CPU 1.
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
"$bin" probe | head -1 | tee "$out/machine.txt"
echo "load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%FT%TZ)" | tee -a "$out/machine.txt"
port=39191
"$bin" serve http --engine epoll --cpu 0 --listen 127.0.0.1:$port --quiet > /dev/null &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
sleep 0.5
for round in 1 2 3 4 5; do
  for wait in pwait2 fallback; do
    off=0
    [ "$wait" = fallback ] && off=1
    RINGSIDE_NO_EPOLL_PWAIT2=$off "$bin" load http --target "http://127.0.0.1:$port/" --cpu 1 \
      --rate 20000 -c 16 -d 5s --warmup 1s --server-pid "$server" --format json \
      > "$out/$wait-$round.json"
  done
done
echo "done $(date -u +%FT%TZ)"
