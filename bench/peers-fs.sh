#!/bin/bash
# The page cycle against seed 000's own programs (issue 9): TigerBeetle's fs_io_uring.zig and
# fs_blocking.zig, built by bench/peers-build.sh, beside ringside's cycle engines, same file
# system, same size (256 MiB of 4 KiB pages), alternating, under the exclusive benchmark lock:
#
#   flock -x /tmp/ringside-bench.lock bench/peers-fs.sh OUTDIR RINGSIDE_BIN PEERS_BIN [DIR]
#
# DIR (default /work/scratch-bench) is where every program writes its file: the same ext4 as the
# work tree. Each round runs, in an order that flips every round: the io_uring demo (5 runs in
# one process: the first on its freshly truncated file, four overwriting it), ringside's io_uring
# cycle engines (4 overwrite runs, 170 chains in flight as the demo keeps), the blocking demo
# (5 runs, likewise) and ringside's blocking engine (4 runs). Two placements: unpinned (as the
# seed ran), and everything under `taskset -c 1` with ringside's io-wq workers kept on CPU 1
# too (--iowq-cpus 1), so both sides' workers sit where the demo's inherit. The device's flushes
# are read from /sys/block around each demo process. Then bench/peers-fs-summary.py makes the
# tables. ROUNDS (default 3) and PLACEMENTS (default "free pinned") override.
set -euo pipefail
out=$1
bin=$2
peers=$3
dir=${4:-/work/scratch-bench}
rounds=${ROUNDS:-3}
placements=${PLACEMENTS:-free pinned}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" "$dir"
device=$(df --output=source "$dir" | tail -1 | sed 's|/dev/||')
stat=/sys/block/$device/stat
[ -r "$stat" ] || stat=

{
  echo "start: $(date -u +%FT%TZ)"
  echo "$("$bin" probe --dir "$dir" | head -1)"
  echo "ringside: $bin ($(sha256sum "$bin" | cut -c1-16)) $(git -C "$here" rev-parse --short HEAD)"
  for peer in fs_io_uring fs_blocking; do
    echo "peer $peer: $(sha256sum "$peers/$peer" | cut -c1-16)"
  done
  echo "rounds: $rounds, placements: $placements, dir: $dir ($device)"
} | tee "$out/session.txt"

flushes() { [ -n "$stat" ] && awk '{print $16}' "$stat" || echo 0; }

demo() { # PLACEMENT ROUND NAME
  local prefix=() before after
  [ "$1" = pinned ] && prefix=(taskset -c 1)
  before=$(flushes)
  (cd "$dir" && "${prefix[@]}" "$peers/$3") 2>&1 | tee "$out/$1-r$2-$3.txt"
  after=$(flushes)
  echo "device_flushes: $((after - before))" >> "$out/$1-r$2-$3.txt"
}

ringside() { # PLACEMENT ROUND NAME ENGINES
  local prefix=() extra=()
  [ "$1" = pinned ] && prefix=(taskset -c 1) && extra=(--iowq-cpus 1)
  "${prefix[@]}" "$bin" fs cycle --size 256m --page-size 4k --depth 170 --runs 4 \
    --engine "$4" --dir "$dir" --format json --output "$out/$1-r$2-$3.json" "${extra[@]}"
}

for placement in $placements; do
  for round in $(seq 1 "$rounds"); do
    steps=(demo-uring ringside-uring demo-blocking ringside-blocking)
    if [ $((round % 2)) = 0 ]; then
      steps=(ringside-uring demo-uring ringside-blocking demo-blocking)
    fi
    for step in "${steps[@]}"; do
      case $step in
        demo-uring) demo "$placement" "$round" fs_io_uring ;;
        demo-blocking) demo "$placement" "$round" fs_blocking ;;
        ringside-uring) ringside "$placement" "$round" ringside-uring uring-link,uring-defer,uring-sqpoll ;;
        ringside-blocking) ringside "$placement" "$round" ringside-blocking blocking ;;
      esac
    done
  done
done
echo "end: $(date -u +%FT%TZ)" | tee -a "$out/session.txt"
python3 "$here/peers-fs-summary.py" "$out" | tee "$out/summary.md"
