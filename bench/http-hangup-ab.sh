#!/bin/sh
# A/B of the io_uring multishot HTTP servers before and after a change, three alternating rounds.
# Usage (under the benchmark lock): flock -x /tmp/ringside-bench.lock bench/http-hangup-ab.sh OLD_BINARY NEW_BINARY OUT_DIR
set -eu
old=$1 new=$2 out=$3
mkdir -p "$out"
for round in 1 2 3; do
  for version in old new; do
    eval binary=\$$version
    "$binary" http --engine uring-multishot,uring-defer --connections 50,256 --duration 5s \
      --runs 1 --json "$out/$version-$round.json" --quiet
  done
done
