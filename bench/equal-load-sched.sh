#!/bin/bash
# Measures bench/equal-load.md's "The default run's class": the equal-load step of the default
# `ringside run` (echo or http, 50 connections, probe then 0.1/0.2/0.35 × the lowest probe, one
# run a point) under SCHED_OTHER and SCHED_FIFO, alternated, on a quiet machine:
#   /work/wt/quiet.sh bench/equal-load-sched.sh BINARY OUTDIR STUDY WINDOW CLASS...
# e.g. `... ringside out echo 1s other fifo` (the windows `run` used before) or
# `... ringside out http 500ms fifo other fifo` (the ones it uses now). One hold per study
# (≤ 5 min). Traffic goes to 127.0.0.1 only; server on CPU 0, load on CPU 1.
set -euo pipefail
bin=$1 out=$2 study=$3 window=$4
shift 4
warmup=300ms
[ "$window" = 500ms ] && warmup=200ms
mkdir -p "$out"
echo "$study $window: load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%FT%TZ)" >> "$out/log"
for sched in "$@"; do
  start=$(date +%s.%N)
  "$bin" "$study" --sweep --connections 50 --runs 1 --duration "$window" --warmup "$warmup" \
    --probe-duration 500ms --sweep-points 0.1,0.2,0.35 --sched "$sched" --quiet \
    --json "$out/$study-$sched-$(date -u +%H%M%S).json" > /dev/null 2>> "$out/log"
  echo "$study $sched: $(echo "$(date +%s.%N) - $start" | bc) s" >> "$out/log"
done
