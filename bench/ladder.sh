#!/bin/bash
# The io_uring feature ladder (issue 11): each network rung beside the rung below it, under the
# exclusive benchmark lock, every study alternating its engines run by run:
#
#   flock -x /tmp/ringside-bench.lock bench/ladder.sh OUTDIR RINGSIDE_BIN
#
# 1. echo, 64 B, 1/50/256 connections: epoll and every available io_uring server rung;
# 2. echo, 16 KiB and 64 KiB at 50 connections: the rungs that touch large payloads (bundles,
#    zero-copy send) beside the rungs below them;
# 3. HTTP keep-alive, 50/256 connections, then 16 KiB and 64 KiB bodies at 50;
# 4. --idle-timeout 10s (never fires: the load keeps every connection busy) at 50 connections,
#    to set beside the same engines without it in (1);
# 5. whether loopback really sends zero-copy: a `uring-send-zc` server with --stats under
#    `ringside load` at 64 B, 16 KiB and 64 KiB, its notifications and how many said "copied";
# 6. the HTTP ladder: keep-alive "Hello, World!" at 1, 50 and 256 connections, epoll and every
#    network rung but SQPOLL (set 7);
# 7. SQPOLL placed fairly: echo 64 B at 1/50/256 connections, uring-sqpoll beside the rungs
#    around it, three ways: SCHED_FIFO with the poller on the client's CPU (the rows of set 1),
#    SCHED_OTHER with the poller there, SCHED_OTHER with the poller on the server's own CPU
#    (SCHED_FIFO refuses that placement: the spinning poller would starve the server);
# 8. --idle-timeout's cost: echo 64 B at 50 connections with and without --idle-timeout 10s,
#    one run each, alternating RUNS times, so the two are measured turn by turn;
# 9. why uring-fixed-files does not beat uring-defer at 256 echo connections: the rungs with
#    io_uring's own event counts (--ring-events), then a `perf record -e cpu-clock` profile of
#    each rung's server process under `ringside load` (perf pinned to the client's CPU), then
#    the rungs again over 7 alternated runs, since 3 runs' ranges overlapped;
# 10. set 2's io_uring rungs once more at 50 connections with io_uring's own kernel events
#    counted (--ring-events: SQEs and CQEs per message), apart, since the tracepoints cost CPU;
# 11. echo, 64 B, 50/256 connections: uring-send-bundle beside the two rungs below it.
# Server on CPU 0, load on CPU 1, both SCHED_FIFO (FINDINGS.md); SQPOLL's thread on CPU 1.
# SETS (default every set but 9) picks the sets; RUNS (default 3) and SECONDS_EACH (default 2)
# override; LARGE_ENGINES and LARGE_CONNECTIONS override set 2's engines and connection counts.
set -euo pipefail
out=$1
bin=$2
sets=${SETS:-1 2 3 4 5 6 7 8 10 11}
runs=${RUNS:-3}
seconds=${SECONDS_EACH:-2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ladder=uring-multishot,uring-sqpoll,uring-defer,uring-fixed-files,uring-bundle,uring-min-wait,uring-send-zc
network=uring-multishot,uring-defer,uring-fixed-files,uring-bundle,uring-min-wait,uring-send-zc
large=${LARGE_ENGINES:-epoll,uring-defer,uring-fixed-files,uring-bundle,uring-send-bundle,uring-send-zc}
large_connections=${LARGE_CONNECTIONS:-50}
timing=(--duration "${seconds}s" --warmup 500ms --quiet)
common=(--sched fifo --runs "$runs" "${timing[@]}")

{
  echo "start: $(date -u +%FT%TZ)"
  "$bin" probe | head -1
  echo "ringside: $bin ($(sha256sum "$bin" | cut -c1-16)) $(git -C "$here" rev-parse --short HEAD)"
  echo "runs: $runs x ${seconds}s, sets: $sets"
} | tee "$out/session.txt"

for set in $sets; do
  case $set in
  1) "$bin" echo --engine "epoll,$ladder" --connections 1,50,256 --payload 64 "${common[@]}" \
       --json "$out/echo-64.json" | tee "$out/echo-64.txt" ;;
  2) "$bin" echo --engine "$large" --connections "$large_connections" --payload 16k,64k "${common[@]}" \
       --json "$out/echo-large.json" | tee "$out/echo-large.txt" ;;
  3) "$bin" http --engine "epoll,$ladder" --connections 50,256 "${common[@]}" \
       --json "$out/http.json" | tee "$out/http.txt"
     for body in 16k 64k; do
       "$bin" http --engine "$large" --connections 50 --body-size "$body" "${common[@]}" \
         --json "$out/http-$body.json" | tee "$out/http-$body.txt"
     done ;;
  4) "$bin" echo --engine epoll,uring,uring-defer,uring-fixed-files --connections 50 --payload 64 \
       --idle-timeout 10s "${common[@]}" --json "$out/echo-idle.json" | tee "$out/echo-idle.txt" ;;
  5) for payload in 64 16k 64k; do
       "$bin" serve echo --engine uring-send-zc --listen 127.0.0.1:0 --cpu 0 --sched fifo \
         --stats "$out/zc-$payload.json" > "$out/zc-$payload.port" &
       server=$!
       until [ -s "$out/zc-$payload.port" ]; do sleep 0.1; done
       address=$(head -1 "$out/zc-$payload.port" | awk '{print $3}')
       "$bin" load echo --target "$address" -c 50 --payload "$payload" -d "${seconds}s" --cpu 1 \
         --sched fifo --format json > "$out/zc-$payload-load.json"
       kill -INT "$server"
       wait "$server"
     done ;;
  6) "$bin" http --engine "epoll,$network" --connections 1,50,256 "${common[@]}" \
       --json "$out/http-ladder.json" | tee "$out/http-ladder.txt"
     # The causes: io_uring's own events, in runs of their own (counting costs ~5%).
     "$bin" http --engine "epoll,$network" --connections 50,256 --ring-events "${common[@]}" \
       --json "$out/http-ladder-events.json" | tee "$out/http-ladder-events.txt" ;;
  7) for placement in "fifo 1" "other 1" "other 0"; do
       read -r sched cpu <<< "$placement"
       "$bin" echo --engine uring-multishot,uring-sqpoll,uring-defer --connections 1,50,256 \
         --payload 64 --sched "$sched" --sqpoll-cpu "$cpu" --runs "$runs" "${timing[@]}" \
         --json "$out/sqpoll-$sched-cpu$cpu.json" | tee "$out/sqpoll-$sched-cpu$cpu.txt"
     done ;;
  8) idle=epoll,uring,uring-defer,uring-fixed-files
     for run in $(seq "$runs"); do
       for timeout in off 10s; do
         extra=()
         [ "$timeout" = off ] || extra=(--idle-timeout "$timeout")
         "$bin" echo --engine "$idle" --connections 50 --payload 64 --sched fifo --runs 1 \
           "${timing[@]}" "${extra[@]}" --json "$out/idle-$timeout-$run.json" \
           | tee "$out/idle-$timeout-$run.txt"
       done
     done
     # The one rung that pays per message (a linked timeout per recv), with its ring events,
     # over more rounds.
     for run in $(seq $((runs + 2))); do
       for timeout in off 10s; do
         extra=()
         [ "$timeout" = off ] || extra=(--idle-timeout "$timeout")
         "$bin" echo --engine uring --connections 50 --payload 64 --sched fifo --runs 1 \
           --ring-events "${timing[@]}" "${extra[@]}" --json "$out/linked-$timeout-$run.json" \
           | tee "$out/linked-$timeout-$run.txt"
       done
     done ;;
  9) profiled=uring-defer,uring-fixed-files,uring-min-wait
     "$bin" echo --engine "$profiled" --connections 256 --payload 64 --ring-events \
       "${common[@]}" --json "$out/echo-256-events.json" | tee "$out/echo-256-events.txt"
     for engine in ${profiled//,/ }; do
       "$bin" serve echo --engine "$engine" --listen 127.0.0.1:0 --cpu 0 --sched fifo \
         > "$out/profile-$engine.port" &
       server=$!
       until [ -s "$out/profile-$engine.port" ]; do sleep 0.1; done
       address=$(head -1 "$out/profile-$engine.port" | awk '{print $3}')
       "$bin" load echo --target "$address" -c 256 --payload 64 -d "$((seconds + 2))s" --cpu 1 \
         --sched fifo --server-pid "$server" --format json > "$out/profile-$engine-load.json" &
       load=$!
       sleep 1
       taskset -c 1 perf record -q -e cpu-clock -g -p "$server" -o "$out/profile-$engine.data" \
         -- sleep "$seconds"
       wait "$load"
       kill -INT "$server"
       wait "$server"
       perf report -i "$out/profile-$engine.data" --no-children --sort sym --stdio -g none \
         2>/dev/null > "$out/profile-$engine.txt"
       "$here/ladder-perf-categories.py" "$out/profile-$engine.txt" | tee -a "$out/profile-categories.txt"
     done
     "$bin" echo --engine "$profiled" --connections 256 --payload 64 --sched fifo --runs 7 \
       "${timing[@]}" --json "$out/echo-256-repeat.json" | tee "$out/echo-256-repeat.txt" ;;
  10) "$bin" echo --engine "${large#epoll,}" --connections 50 --payload 16k,64k "${common[@]}" \
       --ring-events --json "$out/echo-large-events.json" | tee "$out/echo-large-events.txt" ;;
  11) "$bin" echo --engine uring-fixed-files,uring-bundle,uring-send-bundle --connections 50,256 \
       --payload 64 "${common[@]}" --json "$out/echo-64-bundles.json" | tee "$out/echo-64-bundles.txt" ;;
  esac
done
echo "end: $(date -u +%FT%TZ)" | tee -a "$out/session.txt"
"$here/ladder-summary.py" "$out" | tee "$out/summary.md"
