#!/bin/bash
# bench/shapes.md §2's question: why does 10 µs of --work add more server CPU per message to
# epoll than to uring-defer? Per round, engine (alternated), work time and load: a fresh
# `ringside serve echo --work W` on CPU 0; `ringside load echo` (64 B ping-pong, 50
# connections, 3 s, no warm-up) on CPU 1, closed loop (`closed`) or at a fixed 15k msg/s
# (`rate`); perf counts, over the whole load run, the server's CPU (task-clock), context
# switches, the wake-ups it made and the IPIs it sent, its epoll waits and io_uring enters,
# and the client's CPU, context switches and wake-ups (files in $OUT/work-perf/); the server's
# CPU per message is the load row's (the scheduler's clock: perf's task-clock read less here,
# bench/shapes.md). Run on a quiet machine: /work/wt/quiet.sh bench/shapes-work-perf.sh ROUND
set -euo pipefail
round=$1
BIN=${BIN:-target/release/ringside}
OUT=${OUT:-bench/shapes}/work-perf
mkdir -p "$OUT"
pid=
trap '[ -n "$pid" ] && kill -INT "$pid" 2> /dev/null || true' EXIT

SERVER_EVENTS=task-clock,context-switches,sched:sched_waking,ipi:ipi_send_cpu,sched:sched_wake_idle_without_ipi,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_io_uring_enter,irq:softirq_entry
CLIENT_EVENTS=task-clock,context-switches,sched:sched_waking,ipi:ipi_send_cpu

for work in 0us 10us; do
    for load in closed rate; do
        for engine in epoll uring-defer; do
            name=$engine-$work-$load-$round
            log=$OUT/serve-$name.txt
            "$BIN" serve echo --engine "$engine" --cpu 0 --listen 127.0.0.1:0 --work "$work" > "$log" 2>&1 &
            pid=$!
            port=
            for _ in $(seq 50); do
                port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$log" 2> /dev/null || true)
                [ -n "$port" ] && break
                sleep 0.1
            done
            rate=()
            [ "$load" = rate ] && rate=(--rate 15000)
            perf stat -x, -e "$SERVER_EVENTS" -p "$pid" -o "$OUT/perf-server-$name.txt" -- \
                taskset -c 1 perf stat -x, -e "$CLIENT_EVENTS" -o "$OUT/perf-client-$name.txt" -- \
                "$BIN" load echo --target 127.0.0.1:"$port" --payload 64 --connections 50 \
                "${rate[@]}" --duration 3s --warmup 0s --cpu 1 --threads 1 --server-pid "$pid" \
                --format json > "$OUT/load-$name.json" || true
            kill -INT "$pid" 2> /dev/null || true
            wait "$pid" || true
            pid=
        done
    done
done
