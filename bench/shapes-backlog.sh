#!/bin/bash
# bench/shapes.md §3's backlog case: tcpkali (seed 004's client) leaves its backlog on a bundle
# server, and a verified ringside stream starts at once on the same server. One run per binary,
# engine and round, the binaries alternating; each run under the bench lock.
#
#   TCPKALI=path BINS="before:path after:path" bench/shapes-backlog.sh
#   (ENGINES, WORK, ROUNDS, OUT as below; raw outputs in $OUT, one line per run in $OUT/runs.txt)
set -euo pipefail
TCPKALI=${TCPKALI:?set TCPKALI to a tcpkali binary (bench/peers-build.sh builds one)}
BINS=${BINS:?set BINS to label:binary pairs}
ENGINES=${ENGINES:-"uring-bundle uring-send-bundle"}
# The server's work per 1 KiB message (tcpkali's): echo charges it by the byte (serve --payload
# 1k). The figures recorded with 100us came from binaries that charged it per receive, about
# 100 µs per 8 KiB buffer; 12us per KiB is about the same work per byte.
WORK=${WORK:-12us}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-bench/shapes/backlog}
mkdir -p "$OUT"
message=$(mktemp)
trap 'rm -f "$message"' EXIT
head -c 768 /dev/urandom | base64 -w 0 > "$message"

one_run() { # LABEL BIN ENGINE ROUND
    local label=$1 bin=$2 engine=$3 round=$4 tag=$1-$3-$4 log pid addr port
    log=$OUT/serve-$tag.txt
    "$bin" serve echo --engine "$engine" --cpu 0 --payload 1k --work "$WORK" \
        --listen 127.0.0.1:0 > "$log" 2>&1 &
    pid=$!
    addr=
    for _ in $(seq 50); do
        addr=$(sed -n 's/^listening on //p' "$log")
        [ -n "$addr" ] && break
        sleep 0.1
    done
    port=${addr##*:}
    taskset -c 1 "$TCPKALI" -T 1 -c 256 --connect-rate 1000 -f "$message" --duration 5s "$addr" \
        > "$OUT/tcpkali-$tag.txt" 2>&1 || true
    # The server's connections and the bytes queued on them as tcpkali ends.
    ss -tanH "( sport = :$port )" | awk '$1 != "LISTEN" { n++; q += $2 } END { printf "left %d conns %d B\n", n, q }' \
        > "$OUT/left-$tag.txt"
    taskset -c 1 "$bin" load echo --target "$addr" --mode stream --payload 1k --connections 128 \
        --duration 2s --warmup 0s --cpu 1 --threads 1 --format json > "$OUT/ringside-$tag.json" || true
    kill -INT "$pid"
    wait "$pid" || true
    python3 - "$OUT/ringside-$tag.json" "$OUT/left-$tag.txt" "$label $engine round $round" <<'PY' >> "$OUT/runs.txt"
import json, sys
row = json.load(open(sys.argv[1]))["results"][0]
errors = row.get("error_counts") or {}
print(sys.argv[3], "|", open(sys.argv[2]).read().strip(), "| verified", row["verified"],
      "| streams without echo for 2 s", errors.get("timeout", 0), "of 128 | MB/s", row.get("mb_per_sec"))
PY
}

for round in $(seq "$ROUNDS"); do
    for engine in $ENGINES; do
        pairs=($BINS)
        # Alternate which binary goes first, round by round.
        [ $((round % 2)) -eq 0 ] && pairs=($(printf '%s\n' "${pairs[@]}" | tac))
        for pair in "${pairs[@]}"; do
            (
                flock -x 9
                one_run "${pair%%:*}" "${pair#*:}" "$engine" "$round"
            ) 9> /tmp/ringside-bench.lock
        done
    done
done
