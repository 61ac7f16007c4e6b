#!/bin/bash
# One round of bench/shapes.md's streaming comparison (bench/shapes.sh runs three, each on a
# quiet machine). Per connection count and engine: a fresh `ringside serve echo` pinned to CPU 0,
# then against that one server ringside's stream load (`load echo --mode stream`) and tcpkali
# (seed 004's client), each pinned to CPU 1 with one thread, seed 004's shape (1 KiB messages,
# 5 s), one after the other; the order alternates by round. The server's CPU over tcpkali's run
# is read from its scheduler clock (/proc/PID/task/*/schedstat); ringside's load measures it
# itself over its window (--server-pid). Before each client the server settles (finishes what
# the last one left queued), and each client's run records both cores' busy time
# (/proc/stat, cores-*.txt), softirqs included, which the server's own clock leaves out.
#
#   bench/shapes-stream.sh ROUND     (TCPKALI=path to a tcpkali binary; BIN, OUT as shapes.sh;
#                                     WORK=TIME starts the servers with --work TIME, so that the
#                                     server, not the client, is what saturates; WINDOW=BYTES
#                                     gives ringside's load that --window instead of 256 KiB)
set -euo pipefail
round=$1
BIN=${BIN:-target/release/ringside}
OUT=${OUT:-bench/shapes}/stream
TCPKALI=${TCPKALI:?set TCPKALI to a tcpkali binary (bench/peers-build.sh builds one)}
ENGINES=${ENGINES:-"epoll uring-multishot uring-bundle"}
COUNTS=${COUNTS:-"128 256"}
WORK=${WORK:-}
WINDOW=${WINDOW:-}
tag=${WORK:+-work$WORK}${WINDOW:+-window$WINDOW}
mkdir -p "$OUT"
message=$(mktemp)
pid=
# The server of the moment goes with the script, however it ends.
trap 'rm -f "$message"; [ -n "$pid" ] && kill -INT "$pid" 2> /dev/null || true' EXIT
# tcpkali repeats the file's bytes; 1 KiB of text, as seed 004's 1024.in.
head -c 768 /dev/urandom | base64 -w 0 > "$message"

server_ns() { # PID -> nanoseconds all its threads have run (nothing once it has exited)
    cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{ sum += $1 } END { if (NR) printf "%.0f\n", sum }'
}

core_busy() { # CPU -> jiffies it has not idled (user nice system irq softirq steal)
    awk -v cpu="cpu$1" '$1 == cpu { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# Before each client: wait (up to 15 s) for the server to finish what the last client left
# queued (tcpkali ends with MBs in flight, which a server with --work spends seconds on), so
# that neither client runs against the other's leftovers; it has settled when it runs under
# 10 ms in 250 ms.
settle() { # PID
    local before after
    for _ in $(seq 60); do
        before=$(server_ns "$1")
        sleep 0.25
        after=$(server_ns "$1")
        [ -z "$before" ] || [ -z "$after" ] || [ $((after - before)) -lt 10000000 ] && return
    done
}

# Both cores' busy jiffies around a client's run, appended to FILE: which side was saturated.
cores_around() { # FILE COMMAND...
    local file=$1 server_before client_before start
    shift
    server_before=$(core_busy 0)
    client_before=$(core_busy 1)
    start=$(date +%s%N)
    "$@"
    echo "core_busy_jiffies server $(($(core_busy 0) - server_before))" \
        "client $(($(core_busy 1) - client_before)) wall_ms $((($(date +%s%N) - start) / 1000000))" >> "$file"
}

ringside_load() { # ENGINE COUNT PORT PID
    taskset -c 1 "$BIN" load echo --target 127.0.0.1:"$3" --mode stream --payload 1k \
        --connections "$2" --duration 5s --warmup 1s --cpu 1 --threads 1 --server-pid "$4" \
        ${WINDOW:+--window "$WINDOW"} \
        --format json > "$OUT/ringside-$1$tag-$2-$round.json" || true
}

tcpkali_load() { # ENGINE COUNT PORT PID
    local file=$OUT/tcpkali-$1$tag-$2-$round.txt before after
    before=$(server_ns "$4")
    /usr/bin/time -f "tcpkali_cpu_s %U %S" taskset -c 1 "$TCPKALI" -T 1 -c "$2" \
        --connect-rate 1000 -f "$message" --duration 5s 127.0.0.1:"$3" > "$file" 2>&1 || true
    after=$(server_ns "$4")
    if [ -n "$before" ] && [ -n "$after" ]; then
        echo "server_cpu_ns $((after - before))" >> "$file"
    else
        echo "server exited during the run (its log: serve-*.txt)" >> "$file"
    fi
}

for count in $COUNTS; do
    for engine in $ENGINES; do
        log=$OUT/serve-$engine$tag-$count-$round.txt
        "$BIN" serve echo --engine "$engine" --cpu 0 --listen 127.0.0.1:0 --payload 1k \
            ${WORK:+--work "$WORK"} \
            > "$log" 2>&1 &
        pid=$!
        port=
        for _ in $(seq 50); do
            port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$log" 2> /dev/null || true)
            [ -n "$port" ] && break
            sleep 0.1
        done
        if [ -z "$port" ]; then
            echo "$engine did not start: $(cat "$log")" >&2
            kill "$pid" 2> /dev/null || true
            continue
        fi
        cores=$OUT/cores-$engine$tag-$count-$round.txt
        : > "$cores"
        run_ringside() {
            settle "$pid"
            echo -n "ringside " >> "$cores"
            cores_around "$cores" ringside_load "$engine" "$count" "$port" "$pid"
        }
        run_tcpkali() {
            settle "$pid"
            echo -n "tcpkali " >> "$cores"
            cores_around "$cores" tcpkali_load "$engine" "$count" "$port" "$pid"
        }
        if [ $((round % 2)) -eq 1 ]; then
            run_ringside
            run_tcpkali
        else
            run_tcpkali
            run_ringside
        fi
        kill -INT "$pid" 2> /dev/null || true
        wait "$pid" || true
    done
done
