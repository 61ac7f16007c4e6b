#!/bin/sh
# bench/shapes.md: the ladder at 64 B, 16 KiB and 64 KiB; the server's --work at 0, 2 and
# 10 µs; each invocation under the bench lock (each well under 10 minutes); with
# SETS=stream, streaming beside tcpkali (TCPKALI=its binary): three rounds of
# shapes-stream.sh, each on a quiet machine (/work/wt/quiet.sh, about 2.5 minutes a round).
set -eu
BIN=${BIN:-target/release/ringside}
OUT=${OUT:-bench/shapes}
LOCK="flock -x /tmp/ringside-bench.lock"
SETS=${SETS:-"ladder work"}
mkdir -p "$OUT"
$BIN probe > "$OUT/probe.txt" 2>&1 || true
# 1. The echo ladder at three sizes, 50 connections (a report with the size sweep's charts).
case " $SETS " in *" ladder "*)
$LOCK $BIN echo --payload 64,16k,64k --connections 50 --runs 3 --duration 2s --warmup 500ms \
    --quiet --format json --output "$OUT/ladder.json"
$BIN report "$OUT/ladder.json" --out "$OUT/ladder-report" > /dev/null
;; esac
case " $SETS " in *" work "*)
# 2. The server's work, closed loop at 50 connections.
for work in 0us 2us 10us; do
    $LOCK $BIN echo --engine epoll,uring-defer,uring-bundle --connections 50 --work $work \
        --runs 3 --duration 2s --warmup 500ms --quiet --format json --output "$OUT/work-$work.json"
done
;; esac
case " $SETS " in *" stream "*)
# 3. Streaming, ringside's stream load and tcpkali against the same servers; then the
# servers given --work 2us per 1 KiB message (echo charges it by the byte: serve --payload 1k),
# so the server and not the client saturates, in a quiet hold of its own (about 4 minutes).
# The section's older rows with --work 100us charged per receive (and a 4 MiB window) came
# from branch streams at 121d2f5, before the work was charged per message; stream-bytes/ from
# branch work-bytes at 1812b9a, before the pool took turns (its bundle rows NOT VERIFIED).
QUIET=${QUIET:-/work/wt/quiet.sh}
for round in 1 2 3; do
    $QUIET bench/shapes-stream.sh "$round"
    $QUIET env OUT="$OUT/stream-fair" WORK=2us ENGINES='epoll uring-bundle' \
        bench/shapes-stream.sh "$round"
    # The same, ringside's stream given tcpkali's depth (it writes until TCP pushes back).
    $QUIET env OUT="$OUT/stream-fair" WORK=2us WINDOW=4M COUNTS=128 \
        ENGINES='epoll uring-bundle' bench/shapes-stream.sh "$round"
    $QUIET env OUT="$OUT/stream-fair" WORK=2us WINDOW=1M COUNTS=256 \
        ENGINES='epoll uring-bundle' bench/shapes-stream.sh "$round"
done
# Does epoll's CPU per message grow by more than --work? The scheduler's clock beside /proc's.
for round in 1 2 3; do
    $QUIET bench/shapes-work.sh "$round"
done
python3 bench/shapes-stream-summary.py "$OUT/stream" > "$OUT/stream/summary.md"
python3 bench/shapes-stream-summary.py "$OUT/stream-fair/stream" > "$OUT/stream-fair/summary.md"
;; esac
