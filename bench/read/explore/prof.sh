#!/bin/sh
set -eu
bin=${BIN:-target/release/ringside}
d=${1:-4}
RINGSIDE_NO_PERF=1 perf record -F 20000 -g -o rs-d$d.data -- $bin fs read --size 256m --depth $d --runtime 2s --runs 1 --quiet --direct --engine uring-ring --dir /tmp/dr-bench --format json > rs-prof-d$d.json 2>/dev/null
sleep 3
perf record -F 20000 -g -o fio-d$d.data -- fio --name=randread --filename=/tmp/dr-bench/fio.bin --size=256m --rw=randread --bs=4k --ioengine=io_uring --direct=1 --invalidate=0 --runtime=2 --iodepth=$d --output-format=json > fio-prof-d$d.json 2>/dev/null
