#!/bin/sh
set -eu
out=$1; depths=$2; rounds=${3:-3}
bin=${BIN:-target/release/ringside}
f=/tmp/dr-bench/fio.bin
mkdir -p $out
uptime >> $out/uptime.txt
st() { cat /sys/block/vda/stat > $1; }
for r in $(seq 1 $rounds); do
 for d in $depths; do
  for e in uring-ring libaio; do
   st $out/rs-$e-d$d-r$r.before
   RINGSIDE_NO_PERF=1 $bin fs read --size 256m --depth $d --runtime 1s --runs 1 --quiet --direct --engine $e --dir /tmp/dr-bench --format json > $out/rs-$e-d$d-r$r.json
   st $out/rs-$e-d$d-r$r.after
   sleep 3
  done
  for e in io_uring libaio; do
   st $out/fio-$e-d$d-r$r.before
   fio --name=randread --filename=$f --size=256m --rw=randread --bs=4k --ioengine=$e --direct=1 --invalidate=0 --runtime=1 --iodepth=$d --output-format=json > $out/fio-$e-d$d-r$r.json
   st $out/fio-$e-d$d-r$r.after
  done
 done
done
uptime >> $out/uptime.txt
