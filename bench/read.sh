#!/bin/sh
# Issue 21, the read study: random 4 KiB reads at queue depths 1-128.
#
#   /work/wt/quiet.sh bench/read.sh parity warm|direct [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#     ringside's engines beside fio's job for the same API, alternated depth by depth and round by
#     round (A B A B): `threads` against fio psync with numjobs = depth, `libaio` against fio
#     libaio (direct only: buffered libaio is synchronous), `uring-ring` against fio io_uring at
#     iodepth = depth, `uring-defer` against fio io_uring --registerfiles --fixedbufs. Both read
#     one file, SCRATCH_DIR/kept-<size>.bin, laid out by ringside (--filename) before the first
#     round if absent and kept afterwards (delete it to lay it out again); who goes first
#     alternates round by round. READ_ROUNDS rounds (default 3) numbered from READ_FIRST_ROUND
#     (default 1), so several holds of the quiet lock (each under 5 minutes) add up in one
#     OUT_DIR; READ_DEPTHS the depths (default "1 4 16 64 128"). With READ_CPU=N both programs
#     run on CPU N. With RINGSIDE_NO_PERF=1, ringside runs without its kernel syscall counter (files
#     parity-<mode>-noperf-*).
#   /work/wt/quiet.sh bench/read.sh fixes RINGSIDE_BEFORE RINGSIDE_AFTER [OUT_DIR] [SCRATCH_DIR]
#     the engines before and after this branch's fixes (the pool's own file descriptions, the
#     reads' wait for one completion), alternated binary by binary, three rounds.
#   READ_CPU=1 /work/wt/quiet.sh bench/read.sh submit RINGSIDE_BEFORE RINGSIDE_AFTER [OUT_DIR] [SCRATCH_DIR]
#     reads submitted in one call per refill (before) against each read submitted as its slot
#     frees (after): uring-ring, uring-defer and libaio direct at depths 4-128, uring-ring and
#     uring-defer warm at 16 and 128, both binaries on CPU READ_CPU without the syscall counter,
#     alternated binary by binary, three rounds.
#   /work/wt/quiet.sh bench/read.sh cold [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#     cold buffered reads, why the pool beats io_uring: ringside's threads, uring-ring and
#     uring-defer with --ring-events (io-wq punts, workers, their CPU and context switches) beside
#     fio's psync (numjobs = depth, each job its own share of the file, as the pool's threads
#     share the blocks: jobs reading the whole file would find each other's pages cached) and
#     io_uring on a file whose pages it drops first (--invalidate=1), fio under `perf stat` for
#     the same io_uring tracepoints; two rounds. With EACH_RINGSIDE=binary, that binary's
#     uring-ring and uring-defer too (cold-ringside-each-*: a build submitting every read, buffered
#     too, as its slot frees).
#   /work/wt/quiet.sh bench/read.sh after-layout [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#     are the first seconds after ringside's layout slower? libaio and uring-defer at depth 4,
#     eight 1 s runs each after one layout, on CPU 1 without the syscall counter; three times.
#   READ_CPU=1 RINGSIDE_NO_PERF=1 /work/wt/quiet.sh bench/read.sh kept [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#     is it ringside's fresh layout? Direct reads at depths 4 and 16, round by round: ringside
#     reading a file it laid out once and keeps (--filename SCRATCH_DIR/kept.bin, laid out before
#     the first hold and kept across holds), fio's psync, libaio, io_uring and io_uring-fixed jobs
#     reading that same file, and ringside laying out a scratch file of its own per invocation
#     (as every earlier parity run did). Both programs on CPU READ_CPU. READ_ROUNDS rounds
#     (default 5, about 2.5 minutes), numbered from READ_FIRST_ROUND (default 1) so holds add up.
#   /work/wt/quiet.sh bench/read.sh fresh [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#     does a file just laid out read slower through O_DIRECT? ringside's runs 1-3 after its
#     layout, and fio libaio on a file it lays out just before against one read before.
#   /work/wt/quiet.sh bench/read.sh placement [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#     is it the file? fio libaio at depths 1 and 4 on its kept file, and on a file laid out in a
#     new directory just before (as ringside's study lays out its own), alternated with ringside
#     (with and without its perf syscall counter).
#   flock -x /tmp/ringside-bench.lock bench/read.sh study [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]
#     the whole study, warm, cold and direct, every default engine (and libaio when direct),
#     with `ringside report` of each for the depth chart.
# Then `python3 bench/read-summary.py bench/read` prints the tables of bench/read.md.
set -eu
part=$1
case $part in
parity) mode=$2; shift 2 ;;
study | fresh | placement | cold | after-layout | kept) shift 1 ;;
fixes | submit) before=$2; after=$3; shift 3 ;;
*) echo "usage: $0 parity warm|direct | study | fresh | placement | fixes|submit BEFORE AFTER  [RINGSIDE] [OUT_DIR] [SCRATCH_DIR]" >&2; exit 2 ;;
esac
if [ "$part" = fixes ]; then
    out=${1:-bench/read}
    scratch=${2:-/tmp/ringside-read-bench}
    mkdir -p "$out" "$scratch"
    uptime >> "$out/uptime-fixes.txt"
    for round in 1 2 3; do
        for which in before after; do
            eval "bin=\$$which"
            "$bin" fs read --size 1g --depth 16,128 --runtime 1s --runs 1 --quiet \
                --engine threads --dir "$scratch" --format json \
                > "$out/fixes-warm-$which-r$round.json"
            "$bin" fs read --size 256m --depth 4,16,64 --runtime 1s --runs 1 --quiet --direct \
                --engine uring-ring,libaio --dir "$scratch" --format json \
                > "$out/fixes-direct-$which-r$round.json"
            sleep 3 # the deleted file's discards land now, not in the next run
        done
    done
    uptime >> "$out/uptime-fixes.txt"
    exit 0
fi
if [ "$part" = submit ]; then
    out=${1:-bench/read}
    scratch=${2:-/tmp/ringside-read-bench}
    cpu=${READ_CPU:?set READ_CPU to the CPU both binaries run on}
    mkdir -p "$out" "$scratch"
    uptime >> "$out/uptime-submit.txt"
    for round in 1 2 3; do
        for which in before after; do
            eval "bin=\$$which"
            RINGSIDE_NO_PERF=1 "$bin" fs read --size 256m --depth 4,16,64,128 --runtime 1s --runs 1 \
                --quiet --direct --cpu "$cpu" --engine uring-ring,uring-defer,libaio --dir "$scratch" \
                --format json > "$out/submit-direct-$which-r$round.json"
            sleep 3 # the deleted file's discards land now, not in the next run
            RINGSIDE_NO_PERF=1 "$bin" fs read --size 1g --depth 16,128 --runtime 1s --runs 1 \
                --quiet --cpu "$cpu" --engine uring-ring,uring-defer --dir "$scratch" \
                --format json > "$out/submit-warm-$which-r$round.json"
            sleep 3
        done
    done
    uptime >> "$out/uptime-submit.txt"
    exit 0
fi
bin=${1:-target/release/ringside}
out=${2:-bench/read}
scratch=${3:-/tmp/ringside-read-bench}
mkdir -p "$out" "$scratch"
"$bin" probe --dir "$scratch" > "$out/probe.txt" 2>&1 || true
fio --version > "$out/fio-version.txt"

if [ "$part" = fresh ]; then
    uptime >> "$out/uptime-fresh.txt"
    fio_file="$scratch/fio.bin"
    layout() { fio --name=layout --filename="$fio_file" --size=256m --rw=write --bs=1m --end_fsync=1 --output-format=terse > /dev/null; }
    fio_libaio() { fio --name=randread --filename="$fio_file" --size=256m --rw=randread --bs=4k --ioengine=libaio --direct=1 --invalidate=0 --runtime=1 --iodepth=4 --output-format=json > "$1"; }
    for round in 1 2 3; do
        "$bin" fs read --size 256m --depth 4 --runtime 1s --runs 3 --quiet --direct \
            --engine uring-ring,libaio --dir "$scratch" --format json > "$out/fresh-ringside-r$round.json"
        sleep 3
        rm -f "$fio_file"; sleep 3; layout
        fio_libaio "$out/fresh-fio-new-r$round.json"
        fio_libaio "$out/fresh-fio-again-r$round.json"
        fio_libaio "$out/fresh-fio-third-r$round.json"
    done
    rm -f "$fio_file"
    uptime >> "$out/uptime-fresh.txt"
    exit 0
fi
if [ "$part" = placement ]; then
    uptime >> "$out/uptime-placement.txt"
    kept="$scratch/fio.bin"
    fio --name=layout --filename="$kept" --size=256m --rw=write --bs=1m --end_fsync=1 --output-format=terse > /dev/null
    for round in 1 2 3; do
        new_dir="$scratch/new-$round"
        mkdir -p "$new_dir"
        fio --name=layout --filename="$new_dir/fio.bin" --size=256m --rw=write --bs=1m --end_fsync=1 --output-format=terse > /dev/null
        for depth in 1 4; do
            for file in "$kept" "$new_dir/fio.bin"; do
                which=kept
                [ "$file" = "$kept" ] || which=new
                fio --name=randread --filename="$file" --size=256m --rw=randread --bs=4k --ioengine=libaio \
                    --direct=1 --invalidate=0 --runtime=1 --iodepth=$depth --output-format=json \
                    > "$out/placement-fio-$which-d$depth-r$round.json"
            done
        done
        rm -rf "$new_dir"
        "$bin" fs read --size 256m --depth 1,4 --runtime 1s --runs 1 --quiet --direct \
            --engine libaio --dir "$scratch" --format json > "$out/placement-ringside-r$round.json"
        sleep 3
        # The same without the kernel's syscall counter (a perf tracepoint on every syscall).
        RINGSIDE_NO_PERF=1 "$bin" fs read --size 256m --depth 1,4 --runtime 1s --runs 1 --quiet \
            --direct --engine libaio --dir "$scratch" --format json \
            > "$out/placement-ringside-noperf-r$round.json"
        sleep 3
    done
    rm -f "$kept"
    uptime >> "$out/uptime-placement.txt"
    exit 0
fi
if [ "$part" = after-layout ]; then
    uptime >> "$out/after-layout/uptime.txt" 2> /dev/null || { mkdir -p "$out/after-layout"; uptime >> "$out/after-layout/uptime.txt"; }
    for round in 1 2 3; do
        RINGSIDE_NO_PERF=1 "$bin" fs read --size 256m --depth 4 --runtime 1s --runs 8 --quiet \
            --direct --cpu 1 --engine libaio,uring-defer --dir "$scratch" --format json \
            > "$out/after-layout/runs-r$round.json"
        sleep 3
    done
    uptime >> "$out/after-layout/uptime.txt"
    exit 0
fi
if [ "$part" = kept ]; then
    cpu=${READ_CPU:?set READ_CPU to the CPU both programs run on}
    kept="$scratch/kept.bin"
    first=${READ_FIRST_ROUND:-1}
    last=$((first + ${READ_ROUNDS:-5} - 1))
    uptime >> "$out/uptime-kept.txt"
    if [ ! -e "$kept" ]; then
        # Laid out once, by ringside, long before any read of it is measured.
        "$bin" fs read --filename "$kept" --size 256m --depth 1 --engine blocking --runs 1 \
            --runtime 10ms --quiet --format json > /dev/null
        sleep 10
    fi
    for round in $(seq "$first" "$last"); do
        RINGSIDE_NO_PERF=1 "$bin" fs read --filename "$kept" --size 256m --depth 4,16 --runtime 1s \
            --runs 1 --quiet --direct --cpu "$cpu" --engine threads,uring-ring,uring-defer,libaio \
            --format json > "$out/kept-ringside-kept-r$round.json"
        for depth in 4 16; do
            for engine in psync libaio io_uring io_uring-fixed; do
                case $engine in
                psync) jobs="--numjobs=$depth --iodepth=1" ioengine=psync ;;
                io_uring-fixed) jobs="--numjobs=1 --iodepth=$depth --registerfiles --fixedbufs" ioengine=io_uring ;;
                *) jobs="--numjobs=1 --iodepth=$depth" ioengine=$engine ;;
                esac
                # shellcheck disable=SC2086 # $jobs is a list of flags.
                taskset -c "$cpu" fio --name=randread --filename="$kept" --size=256m --rw=randread \
                    --bs=4k --ioengine="$ioengine" --direct=1 --invalidate=0 --runtime=1 $jobs \
                    --group_reporting --output-format=json > "$out/kept-fio-$engine-d$depth-r$round.json"
            done
        done
        RINGSIDE_NO_PERF=1 "$bin" fs read --size 256m --depth 4,16 --runtime 1s --runs 1 --quiet \
            --direct --cpu "$cpu" --engine threads,uring-ring,uring-defer,libaio --dir "$scratch" \
            --format json > "$out/kept-ringside-scratch-r$round.json"
        sleep 3 # the deleted file's discards land now, not in the next round
    done
    uptime >> "$out/uptime-kept.txt"
    exit 0
fi
if [ "$part" = cold ]; then
    uptime >> "$out/uptime-cold.txt"
    fio_file="$scratch/fio.bin"
    fio --name=layout --filename="$fio_file" --size=256m --rw=write --bs=1m --end_fsync=1 \
        --output-format=terse > /dev/null
    events=io_uring:io_uring_submit_req,io_uring:io_uring_queue_async_work,io_uring:io_uring_complete
    events=$events,io_uring:io_uring_task_work_run,context-switches,task-clock
    for round in 1 2; do
        "$bin" fs read --size 256m --depth 1,4,16,64 --runtime 1s --runs 1 --quiet --cold \
            --ring-events --engine threads,uring-ring,uring-defer --dir "$scratch" --format json \
            > "$out/cold-ringside-r$round.json"
        sleep 3
        if [ -n "${EACH_RINGSIDE:-}" ]; then
            "$EACH_RINGSIDE" fs read --size 256m --depth 1,4,16,64 --runtime 1s --runs 1 --quiet \
                --cold --ring-events --engine uring-ring,uring-defer --dir "$scratch" \
                --format json > "$out/cold-ringside-each-r$round.json"
            sleep 3
        fi
        for depth in 1 4 16 64; do
            for engine in psync io_uring; do
                jobs="--numjobs=1 --iodepth=$depth --size=256m"
                share=$((268435456 / depth))
                [ "$engine" = psync ] && jobs="--numjobs=$depth --iodepth=1 --size=$share --offset_increment=$share"
                # shellcheck disable=SC2086 # $jobs is a list of flags.
                perf stat -x, -e "$events" -o "$out/cold-fio-$engine-d$depth-r$round.perf" \
                    fio --name=randread --filename="$fio_file" --rw=randread --bs=4k \
                    --ioengine=$engine --direct=0 --invalidate=1 --runtime=1 $jobs \
                    --group_reporting --output-format=json \
                    > "$out/cold-fio-$engine-d$depth-r$round.json"
            done
        done
    done
    rm -f "$fio_file"
    uptime >> "$out/uptime-cold.txt"
    exit 0
fi
if [ "$part" = study ]; then
    uptime >> "$out/uptime-study.txt"
    for cache in warm cold direct; do
        flag="" extra=""
        [ "$cache" = cold ] && flag=--cold
        [ "$cache" = direct ] && flag=--direct && extra=,libaio
        # shellcheck disable=SC2086 # $flag is empty or one flag.
        "$bin" fs read --size 256m --depth 1,4,16,64,128 --runtime 1s --runs 3 --quiet $flag \
            --engine blocking,threads,uring-single,uring-ring,uring-fixed,uring-defer,uring-nop$extra \
            --dir "$scratch" --format json > "$out/study-$cache.json"
        "$bin" report "$out/study-$cache.json" --out "$out/report-$cache" > /dev/null
        # The report's two depth charts (reads/s and CPU per read against depth), as files.
        python3 - "$out/report-$cache/report.html" "$out/chart-$cache" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
for svg in re.findall(r"<svg.*?</svg>", page, re.S):
    for title, name in [("reads/s against queue depth", "reads"), ("CPU µs per read against queue depth", "cpu")]:
        if title in svg:
            open(f"{sys.argv[2]}-{name}.svg", "w").write(svg)
PY
        rm "$out/report-$cache/report.html" # its charts are the files above; report.md stays
        sleep 3 # the scratch file's deletion sends discards; let them land before the next part
    done
    uptime >> "$out/uptime-study.txt"
    exit 0
fi

# Warm reads are fast: a 1 GiB file keeps a pass over it long enough (>= 0.1 s at 2M reads/s)
# that starting 128 threads is not what is measured. O_DIRECT reads stop at the 1 s cap.
size=256m
[ "$mode" = warm ] && size=1g
# With RINGSIDE_NO_PERF=1 in the environment ringside counts no syscalls in the kernel (fio
# counts none): the files are named parity-<mode>-noperf-*.
[ -n "${RINGSIDE_NO_PERF:-}" ] && mode_tag="$mode-noperf" || mode_tag=$mode
# With READ_CPU=N both programs run on CPU N (ringside --cpu N, fio under taskset -c N: all of
# each program's threads), files parity-<mode>[-noperf]-cpuN-*. Unpinned, the reading thread
# lands on either CPU run by run, and a read completed by an interrupt on the other CPU costs a
# cross-CPU wake-up (bench/read.md).
pin_ringside="" pin_fio=""
if [ -n "${READ_CPU:-}" ]; then
    mode_tag="$mode_tag-cpu$READ_CPU" pin_ringside="--cpu $READ_CPU" pin_fio="taskset -c $READ_CPU"
fi
# uring-defer's ring is set up as fio's io_uring engine sets up its own (SINGLE_ISSUER,
# DEFER_TASKRUN, COOP_TASKRUN) with a registered file and buffers: its control is fio's
# io_uring with --registerfiles --fixedbufs (io_uring-fixed below).
direct=0 engines=threads,uring-ring,uring-defer fio_engines="psync io_uring io_uring-fixed"
[ "$mode" = direct ] && direct=1 engines=threads,uring-ring,uring-defer,libaio \
    fio_engines="psync libaio io_uring io_uring-fixed"
uptime >> "$out/uptime-parity-$mode_tag.txt"
# One file for both programs, laid out once by ringside (--filename: stamped, synced, kept) and
# kept across holds: neither program's reads follow a fresh layout or a delete's discards
# (FINDINGS), and fio reads exactly the blocks ringside checks.
kept="$scratch/kept-$size.bin"
direct_flag=""
[ "$direct" = 1 ] && direct_flag=--direct
# With READ_CPUSTAT=1, /proc/stat's line for each CPU before and after each program's run
# (cpustat-<mode>.txt: label, time, then user nice system idle iowait irq softirq steal):
# whether the device's slow state comes with time stolen from the guest's CPUs.
cpustat() {
    [ -n "${READ_CPUSTAT:-}" ] || return 0
    grep '^cpu[0-9]' /proc/stat | sed "s/^/$1 $(date +%s.%N) /" >> "$out/cpustat-$mode_tag.txt"
}
ringside_reads() {
    cpustat "before ringside d$depth r$round"
    # shellcheck disable=SC2086 # $direct_flag and $pin_ringside are empty or one flag.
    "$bin" fs read --filename "$kept" --size $size --depth "$depth" --runtime 1s --runs 1 --quiet \
        $direct_flag $pin_ringside --engine $engines --format json \
        > "$out/parity-$mode_tag-ringside-d$depth-r$round.json"
    cpustat "after ringside d$depth r$round"
}
fio_reads() {
    for engine in $fio_engines; do
        case $engine in
        psync) jobs="--numjobs=$depth --iodepth=1" ioengine=psync ;;
        io_uring-fixed) jobs="--numjobs=1 --iodepth=$depth --registerfiles --fixedbufs" ioengine=io_uring ;;
        *) jobs="--numjobs=1 --iodepth=$depth" ioengine=$engine ;;
        esac
        # fio's randread: every job reads the file once in a random order (its random map),
        # stopped at 1 s; processes, each with its own open file.
        cpustat "before fio-$engine d$depth r$round"
        # shellcheck disable=SC2086 # $jobs is a list of flags, $pin_fio empty or a taskset.
        $pin_fio fio --name=randread --filename="$kept" --size=$size --rw=randread --bs=4k \
            --ioengine="$ioengine" --direct=$direct --invalidate=0 --runtime=1 $jobs \
            --group_reporting --output-format=json \
            > "$out/parity-$mode_tag-fio-$engine-d$depth-r$round.json"
        cpustat "after fio-$engine d$depth r$round"
    done
}
if [ ! -e "$kept" ]; then
    "$bin" fs read --filename "$kept" --size $size --depth 1 --engine blocking --runs 1 \
        --runtime 10ms --quiet --format json > /dev/null
    sleep 10 # the layout's writes reach the device before the first read is measured
fi
first=${READ_FIRST_ROUND:-1}
for round in $(seq "$first" $((first + ${READ_ROUNDS:-3} - 1))); do
    for depth in ${READ_DEPTHS:-1 4 16 64 128}; do
        # Who goes first alternates round by round: neither program always follows the other.
        if [ $((round % 2)) = 1 ]; then
            ringside_reads
            fio_reads
        else
            fio_reads
            ringside_reads
        fi
    done
done
uptime >> "$out/uptime-parity-$mode_tag.txt"
