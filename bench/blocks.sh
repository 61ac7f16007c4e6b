#!/bin/sh
# What a fresh file layout per block of rounds does to the run-to-run spread of the file
# studies: fs cycle and fs read at depth 1 (O_DIRECT), each run twice back to back, 16 rounds
# (4 blocks of 4), engines named (so no A/A copy is added and both binaries run the same cells).
# Usage (under the benchmark lock):
#   flock -x /tmp/ringside-bench.lock bench/blocks.sh BINARY OUT_DIR LABEL PAIR
# LABEL names the binary (before, after); PAIR numbers the back-to-back pair.
set -eu
binary=$1 out=$2 label=$3 pair=$4
mkdir -p "$out"
scratch=$(mktemp -d /tmp/ringside-blocks.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
for copy in a b; do
  start=$(date +%s.%N)
  "$binary" fs cycle --size 16m --engine blocking,uring-link,uring-defer --runs 16 \
    --dir "$scratch" --format json --output "$out/cycle-$label-$pair$copy.json" 2> "$out/cycle-$label-$pair$copy.log" || true
  end=$(date +%s.%N)
  echo "cycle $label $pair$copy $(echo "$end - $start" | bc) s" >> "$out/times.txt"
done
for copy in a b; do
  start=$(date +%s.%N)
  "$binary" fs read --size 64m --direct --depth 1 --runtime 200ms \
    --engine blocking,threads,libaio,uring-ring,uring-defer --runs 16 \
    --dir "$scratch" --format json --output "$out/read-$label-$pair$copy.json" 2> "$out/read-$label-$pair$copy.log" || true
  end=$(date +%s.%N)
  echo "read $label $pair$copy $(echo "$end - $start" | bc) s" >> "$out/times.txt"
done
