#!/bin/bash
# bench/shapes.md §2: where the server's CPU per message goes, with and without --work. Per
# round, engine and work time: a fresh `ringside serve echo --work W` on CPU 0, a closed-loop
# `ringside load echo` (64 B, 50 connections, 3 s) on CPU 1, and 2 s in its middle CPU 0's
# stacks sampled at 10 kHz (`perf record -C 0 -e cpu-clock -g`, the recordings in $SCRATCH,
# not committed); bench/shapes-work-profile.py sorts the server's samples into work, waking
# the client, sending, receiving and waiting, written beside the load rows in
# $OUT/work-profile/. Run on a quiet machine:
#   /work/wt/quiet.sh bench/shapes-work-profile.sh ROUND
set -euo pipefail
round=$1
BIN=${BIN:-target/release/ringside}
OUT=${OUT:-bench/shapes}/work-profile
SCRATCH=${SCRATCH:-/work/scratch/work-chart}
mkdir -p "$OUT" "$SCRATCH"
pid=
trap '[ -n "$pid" ] && kill -INT "$pid" 2> /dev/null || true' EXIT

for engine in epoll uring-defer; do
    for work in 0us 10us; do
        name=$engine-$work-$round
        log=$SCRATCH/serve-$name.txt
        "$BIN" serve echo --engine "$engine" --cpu 0 --listen 127.0.0.1:0 --work "$work" > "$log" 2>&1 &
        pid=$!
        port=
        for _ in $(seq 50); do
            port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$log" 2> /dev/null || true)
            [ -n "$port" ] && break
            sleep 0.1
        done
        taskset -c 1 "$BIN" load echo --target 127.0.0.1:"$port" --payload 64 --connections 50 \
            --duration 3s --warmup 0s --cpu 1 --threads 1 --server-pid "$pid" --format json \
            > "$OUT/load-$name.json" &
        load=$!
        sleep 0.5
        perf record -q -C 0 -e cpu-clock -F 10000 -g -o "$SCRATCH/record-$name.data" -- sleep 2
        wait "$load" || true
        kill -INT "$pid" 2> /dev/null || true
        wait "$pid" || true
        pid=
        python3 bench/shapes-work-profile.py "$SCRATCH/record-$name.data" > "$OUT/profile-$name.json"
    done
done
