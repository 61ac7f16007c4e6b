#!/bin/sh
# Issue 21, the thread pool in the write studies: `threads` (a pool of --depth threads making
# blocking pwrite/fsync/pread) against io_uring, whose buffered writes and fsyncs block in its
# own kernel pool (io-wq), with the device's flushes counted.
#   write: 4 KiB buffered writes of a 256 MiB file, overwritten, fsync at the end (--fsync-end),
#          blocking, threads and uring-ring at depths 8, 32 and 128, three alternated runs;
#   cycle: the page cycle (write 4 KiB, fsync, read back; 128 MiB, overwritten), threads
#          against uring-link (linked chains) at 8, 32 and 128 in flight, three alternated runs.
#   flock -x /tmp/ringside-bench.lock bench/threads.sh [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
# Then `python3 bench/threads-summary.py bench/threads` prints the tables of bench/threads.md.
set -eu
bin=${1:-target/release/ringside}
out=${2:-bench/threads}
scratch=${3:-/tmp/ringside-threads-bench}
mkdir -p "$out" "$scratch"
uptime >> "$out/uptime.txt"
"$bin" probe --dir "$scratch" > "$out/probe.txt" 2>&1 || true
for depth in 8 32 128; do
    "$bin" fs write --size 256m --block-size 4k --depth "$depth" --fsync-end --runs 3 --quiet \
        --engine blocking,threads,uring-ring --dir "$scratch" --format json \
        > "$out/write-d$depth.json"
    sleep 3 # the deleted file's discards land now, not in the next study
    "$bin" fs cycle --size 128m --depth "$depth" --runs 3 --quiet \
        --engine threads,uring-link --dir "$scratch" --format json \
        > "$out/cycle-d$depth.json"
    sleep 3
done
uptime >> "$out/uptime.txt"
