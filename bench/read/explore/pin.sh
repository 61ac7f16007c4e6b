#!/bin/sh
set -eu
out=$1; depths=$2; rounds=${3:-2}
bin=${BIN:-target/release/ringside}
f=/tmp/dr-bench/fio.bin
mkdir -p $out
uptime >> $out/uptime.txt
for r in $(seq 1 $rounds); do
 for d in $depths; do
  for c in 0 1; do
   RINGSIDE_NO_PERF=1 $bin fs read --size 256m --depth $d --runtime 1s --runs 1 --quiet --direct --engine uring-ring,libaio --cpu $c --dir /tmp/dr-bench --format json > $out/rs-c$c-d$d-r$r.json
   sleep 3
   for e in io_uring libaio; do
   taskset -c $c fio --name=randread --filename=$f --size=256m --rw=randread --bs=4k --ioengine=$e --direct=1 --invalidate=0 --runtime=1 --iodepth=$d --output-format=json > $out/fio-$e-c$c-d$d-r$r.json
   done
  done
 done
done
uptime >> $out/uptime.txt
