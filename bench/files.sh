#!/bin/sh
# Issue 21: random 4 KiB reads at queue depths 1, 4, 16, 64, 128, buffered warm and O_DIRECT,
# with blocking, a thread pool, libaio and the io_uring rungs, the NOP floor, and fio's psync
# (numjobs = depth), libaio and io_uring (iodepth = depth) as controls; then the page cycle with
# the thread pool against io_uring's linked chains at 8, 32 and 128 in flight.
#
# Rounds alternate ringside and fio (A B A B); each ringside study alternates its engines run by
# run. One hold of the lock per part (each under 10 minutes):
#   flock -x /tmp/ringside-bench.lock bench/files.sh reads  [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#   flock -x /tmp/ringside-bench.lock bench/files.sh cycle  [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
# Then `python3 bench/files-summary.py bench/files` prints the tables of bench/files.md.
set -eu
part=$1
bin=${2:-target/release/ringside}
out=${3:-bench/files}
scratch=${4:-/tmp/ringside-files-bench}
mkdir -p "$out" "$scratch"
rounds=3
depths="1 4 16 64 128"
uptime >> "$out/uptime-$part.txt"
"$bin" probe --dir "$scratch" > "$out/probe.txt" 2>&1 || true

# fio's own file, laid out once (fio writes it on first use) and kept between jobs, so no
# delete sends discards into the next run (FINDINGS).
fio_file="$scratch/fio.bin"
fio_job() { # mode engine depth round
    mode=$1 engine=$2 depth=$3 round=$4
    direct=0
    [ "$mode" = direct ] && direct=1
    if [ "$engine" = psync ]; then
        jobs="--numjobs=$depth --iodepth=1"
    else
        jobs="--numjobs=1 --iodepth=$depth"
    fi
    # shellcheck disable=SC2086 # $jobs is a list of flags.
    fio --name=randread --filename="$fio_file" --size=256m --rw=randread --bs=4k \
        --ioengine="$engine" --direct=$direct --invalidate=0 --runtime=1 $jobs \
        --group_reporting --output-format=json \
        > "$out/fio-$mode-$engine-d$depth-r$round.json"
}

case $part in
reads)
    engines=blocking,threads,uring-single,uring-ring,uring-fixed,uring-defer,uring-sqpoll,uring-nop
    fio --name=layout --filename="$fio_file" --size=256m --rw=write --bs=1m \
        --output-format=terse > /dev/null
    for round in $(seq 1 $rounds); do
        "$bin" fs read --size 256m --depth 1,4,16,64,128 --runtime 1s --runs 1 --quiet \
            --engine $engines --dir "$scratch" --format json > "$out/read-warm-r$round.json"
        for depth in $depths; do
            for engine in psync libaio io_uring; do
                fio_job warm "$engine" "$depth" "$round"
            done
        done
        "$bin" fs read --size 256m --depth 1,4,16,64,128 --runtime 1s --runs 1 --quiet \
            --direct --engine $engines,libaio --dir "$scratch" --format json \
            > "$out/read-direct-r$round.json"
        for depth in $depths; do
            for engine in psync libaio io_uring; do
                fio_job direct "$engine" "$depth" "$round"
            done
        done
    done
    rm -f "$fio_file"
    ;;
cycle)
    for depth in 8 32 128; do
        "$bin" fs cycle --size 128m --depth "$depth" --runs $rounds --quiet \
            --engine threads,uring-link --dir "$scratch" --format json \
            > "$out/cycle-d$depth.json"
    done
    ;;
*)
    echo "usage: $0 reads|cycle [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]" >&2
    exit 2
    ;;
esac
uptime >> "$out/uptime-$part.txt"
