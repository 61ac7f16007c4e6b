#!/bin/sh
# What ringside's own kernel counters cost the figures they sit beside: the same study with no
# perf counter at all (RINGSIDE_NO_PERF=1), with the syscall counters only (the default) and
# with the syscall and io_uring tracepoint counters (--ring-events), alternating configuration
# by configuration, ROUNDS times.
# Usage (under the benchmark lock):
#   flock -x /tmp/ringside-bench.lock bench/counters.sh BINARY OUT_DIR echo|write|cycle ROUNDS
set -eu
binary=$1 out=$2 study=$3 rounds=$4
mkdir -p "$out"
scratch=$(mktemp -d /tmp/ringside-counters.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
for round in $(seq 1 "$rounds"); do
  for config in none syscalls all; do
    case $config in
      none) set -- env RINGSIDE_NO_PERF=1 ;;
      *) set -- env ;;
    esac
    flag=$([ "$config" = all ] && echo --ring-events || true)
    json="$out/$study-$config-$round.json"
    case $study in
      echo) "$@" "$binary" echo --engine epoll,uring,uring-defer --connections 1,50 \
        --duration 3s --warmup 500ms --runs 1 --sched fifo $flag --quiet --format json --output "$json" ;;
      write) "$@" "$binary" fs write --engine blocking,uring-ring,uring-defer --size 256m \
        --runs 1 $flag --dir "$scratch" --quiet --format json --output "$json" ;;
      cycle) "$@" "$binary" fs cycle --engine blocking,uring-link,uring-defer --size 16m \
        --runs 1 $flag --dir "$scratch" --quiet --format json --output "$json" ;;
    esac
  done
done
