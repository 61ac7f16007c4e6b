#!/bin/bash
# bench/shapes.md §2's question: does epoll's server CPU per message grow by more than --work?
# Per round, engine and work time: a fresh `ringside serve echo --work W` on CPU 0, then
# `ringside load echo` (64 B ping-pong, 50 connections, 3 s, no warm-up) on CPU 1 measuring it
# over its window (--server-pid: /proc's tick-sampled user and system times), while this
# script reads the server's scheduler clock (/proc/PID/task/*/schedstat, ns) around the whole
# load run. Run on a quiet machine (bench/shapes.sh does: /work/wt/quiet.sh).
#
#   bench/shapes-work.sh ROUND       (BIN, OUT as shapes.sh)
set -euo pipefail
round=$1
BIN=${BIN:-target/release/ringside}
OUT=${OUT:-bench/shapes}/work-schedstat
mkdir -p "$OUT"
pid=
# The server of the moment goes with the script, however it ends.
trap '[ -n "$pid" ] && kill -INT "$pid" 2> /dev/null || true' EXIT

server_ns() { # PID -> nanoseconds all its threads have run (nothing once it has exited)
    cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{ sum += $1 } END { if (NR) printf "%.0f\n", sum }'
}

for work in 0us 10us; do
    for engine in epoll uring-defer; do
        log=$OUT/serve-$engine-$work-$round.txt
        "$BIN" serve echo --engine "$engine" --cpu 0 --listen 127.0.0.1:0 --work "$work" > "$log" 2>&1 &
        pid=$!
        port=
        for _ in $(seq 50); do
            port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$log" 2> /dev/null || true)
            [ -n "$port" ] && break
            sleep 0.1
        done
        before=$(server_ns "$pid")
        taskset -c 1 "$BIN" load echo --target 127.0.0.1:"$port" --payload 64 --connections 50 \
            --duration 3s --warmup 0s --cpu 1 --threads 1 --server-pid "$pid" --format json \
            > "$OUT/load-$engine-$work-$round.json" || true
        after=$(server_ns "$pid")
        echo "server_cpu_ns $((after - before))" > "$OUT/schedstat-$engine-$work-$round.txt"
        kill -INT "$pid" 2> /dev/null || true
        wait "$pid" || true
    done
done
