#!/bin/sh
# What each of ringside's kernel counters costs each engine, A/B interleaved: the same short
# study (4 rounds of every engine) with no perf counter (RINGSIDE_NO_PERF=1), with the syscall
# counter alone (the default for timed rounds), and with the syscall counter and the io_uring
# tracepoints in the timed rounds (a binary from before attribution rounds, with
# --ring-events), the three configurations in a rotated order, CYCLES times.
# Usage (under the benchmark lock):
#   flock -x /tmp/ringside-bench.lock bench/instruments.sh BINARY OUT_DIR write|read|http|echo CYCLES
set -eu
binary=$1 out=$2 study=$3 cycles=$4
mkdir -p "$out"
scratch=$(mktemp -d /tmp/ringside-instruments.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
for cycle in $(seq 1 "$cycles"); do
  case $((cycle % 3)) in
    0) configs="none syscalls tracepoints" ;;
    1) configs="syscalls tracepoints none" ;;
    2) configs="tracepoints none syscalls" ;;
  esac
  for config in $configs; do
    case $config in
      none) set -- env RINGSIDE_NO_PERF=1 ;;
      *) set -- env ;;
    esac
    flag=$([ "$config" = tracepoints ] && echo --ring-events || true)
    json="$out/$study-$config-$cycle.json"
    case $study in
      write) "$@" "$binary" fs write --engine blocking,uring-single,uring-ring,uring-defer \
        --size 128m --runtime 300ms --runs 4 $flag --dir "$scratch" --quiet --format json \
        --output "$json" ;;
      read) "$@" "$binary" fs read --engine blocking,uring-single,threads,uring-ring,uring-defer \
        --size 64m --depth 1,32 --runtime 200ms --runs 4 $flag --dir "$scratch" --quiet \
        --format json --output "$json" ;;
      http) "$@" "$binary" http --engine epoll,uring,uring-multishot,uring-defer,uring-bundle \
        --connections 100 --duration 400ms --warmup 150ms --runs 4 $flag --quiet \
        --format json --output "$json" ;;
      echo) "$@" "$binary" echo --engine epoll,uring,uring-multishot,uring-defer,uring-bundle \
        --connections 1,50 --duration 400ms --warmup 150ms --runs 4 $flag --quiet \
        --format json --output "$json" ;;
    esac
  done
done
