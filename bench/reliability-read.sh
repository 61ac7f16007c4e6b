#!/usr/bin/env bash
# What whole-block verification costs a warm 4 KiB read (bench/reliability.md): two builds of
# ringside, one from before it and one from after, read 1 GiB files of their own (laid out once
# with --filename, kept), blocking at depth 1 and uring-ring at depths 1 and 16, 3 runs per
# invocation, on CPU 1, without the syscall counter; six rounds, who goes first alternating.
# Usage: flock -x /tmp/ringside-bench.lock bench/reliability-read.sh BEFORE AFTER OUT_DIR SCRATCH_DIR
set -euo pipefail
before=$1 after=$2 out=$3 scratch=$4
mkdir -p "$out" "$scratch"
date -u
for round in 1 2 3 4 5 6; do
  order="before after"
  if [ $((round % 2)) = 0 ]; then order="after before"; fi
  for name in $order; do
    if [ "$name" = before ]; then bin=$before; else bin=$after; fi
    RINGSIDE_NO_PERF=1 "$bin" fs read --size 1g --depth 1,16 --engine blocking,uring-ring \
      --runs 3 --runtime 2s --cpu 1 --format json --quiet --filename "$scratch/$name.bin" \
      > "$out/$name-r$round.json"
  done
done
date -u
python3 "$(dirname "$0")/reliability-summary.py" read "$out"
