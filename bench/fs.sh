#!/usr/bin/env bash
# Reproduces bench/fs.md: ringside's file engines and fio's, side by side, in one session.
# Usage: bench/fs.sh OUTDIR [ROUNDS]   (from the repository root, as root, on a quiet machine)
# Each round runs ringside (every engine, engines alternating) and then every fio job once, so
# drift of the machine hits both; the summary quotes medians over rounds. Both tools overwrite
# a file they laid out themselves in the measured block size, with a warm page cache (fio:
# --overwrite=1 --invalidate=0), and nobody deletes a big file right before a measurement
# (deletes send discards on this disk).
set -euo pipefail
out=${1:?usage: bench/fs.sh OUTDIR [ROUNDS]}
rounds=${2:-3}
mkdir -p "$out"
bin=./target/release/ringside
cargo build --release --quiet
dir=$(mktemp -d -p .)
trap 'rm -rf "$dir"' EXIT
$bin probe --dir "$dir" > "$out/probe.txt"

fio_job() { # name, then fio arguments; /usr/bin/time records the whole process's CPU (fio's own
  # usr_cpu/sys_cpu leave out io_uring's io-wq worker threads)
  local name=$1; shift
  /usr/bin/time -f '%U %S' -o "$out/fio-$name-r$round.time" fio --name="$name" --filename="$dir/fio.dat" --rw=write --overwrite=1 --invalidate=0 \
    --output-format=json "$@" > "$out/fio-$name-r$round.json"
}

fresh_fio_file() { # lays fio's file out again in block size $1, then lets discards settle
  rm -f "$dir/fio.dat"
  sync
  sleep 3
  fio --name=layout --filename="$dir/fio.dat" --rw=write --overwrite=1 --size="$2" --bs="$1" \
    --ioengine=psync > /dev/null
}

for round in $(seq 1 "$rounds"); do
  for bs in 4k 1m; do
    $bin fs write --size 1g --block-size "$bs" --runs 1 --runtime 0 --dir "$dir" --format json \
      --quiet > "$out/ringside-write-$bs-r$round.json"
    fresh_fio_file "$bs" 1g
    fio_job "sync-$bs" --size=1g --bs="$bs" --ioengine=sync
    fio_job "psync-$bs" --size=1g --bs="$bs" --ioengine=psync
    fio_job "uring-d1-$bs" --size=1g --bs="$bs" --ioengine=io_uring --iodepth=1
    fio_job "uring-d128-$bs" --size=1g --bs="$bs" --ioengine=io_uring --iodepth=128
    fio_job "uring-d128-fixedbufs-$bs" --size=1g --bs="$bs" --ioengine=io_uring --iodepth=128 \
      --fixedbufs
    fio_job "uring-d128-regfiles-$bs" --size=1g --bs="$bs" --ioengine=io_uring --iodepth=128 \
      --fixedbufs --registerfiles
    fio_job "uring-d128-sqpoll-$bs" --size=1g --bs="$bs" --ioengine=io_uring --iodepth=128 \
      --fixedbufs --registerfiles --sqthread_poll
  done
  $bin fs cycle --size 256m --runs 1 --dir "$dir" --format json --quiet \
    > "$out/ringside-cycle-r$round.json"
  fresh_fio_file 4k 256m
  fio_job "cycle-sync" --size=256m --bs=4k --ioengine=sync --fsync=1
  fio_job "cycle-uring-d128" --size=256m --bs=4k --ioengine=io_uring --iodepth=128 --fsync=1
done
python3 bench/fs-summary.py "$out" > "$out/summary.md"
cat "$out/summary.md"
