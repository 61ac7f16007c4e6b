#!/bin/bash
# The file rungs of the io_uring feature ladder (issue 11), buffered and O_DIRECT, one round per
# invocation so each holds the exclusive benchmark lock for about two minutes:
#
#   flock -x /tmp/ringside-bench.lock bench/ladder-files.sh OUTDIR RINGSIDE_BIN ROUND
#
# A round runs, each study alternating its engines run by run:
# 1. fs write, 4 KiB blocks, 1 GiB overwritten (2 s cap a run), every file engine, buffered;
# 2. the same with --direct (O_DIRECT; the layout is written through O_DIRECT too);
# 3. fs write, 4 KiB buffered at depth 4 (an io_uring_enter every 3 writes, so a cheaper enter
#    shows, if it shows at all): uring-defer, uring-ring-fd, uring-no-sqarray, uring-sqpoll, 3 runs;
# 4. fs cycle, 8192 pages of 4 KiB (32 MiB, overwritten), depth 128, every cycle engine, buffered;
# 5. the same with --direct.
# Rounds alternate buffered and direct in time; the summary quotes medians over rounds. Every
# study deletes its scratch file at the end, and the disk is mounted with `discard`: a pause
# after each lets the discards land before the next measurement (FINDINGS).
set -euo pipefail
out=$1
bin=$2
round=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=${DIR:-/work/scratch-ladder-files}
mkdir -p "$out" "$dir"
settle() { sync; sleep "${SETTLE_SECONDS:-8}"; }
common=(--quiet --dir "$dir")
{
  echo "round $round start: $(date -u +%FT%TZ)"
  "$bin" probe --dir "$dir" | head -1
  echo "ringside: $bin ($(sha256sum "$bin" | cut -c1-16)) $(git -C "$here" rev-parse --short HEAD)"
} | tee -a "$out/session.txt"

write=(fs write --size 1g --block-size 4k --runtime 2s --runs 1)
cycle=(fs cycle --size 32m --page-size 4k --depth 128 --runs 1)
"$bin" "${write[@]}" "${common[@]}" --format json --output "$out/write-buffered-r$round.json"
settle
"$bin" "${write[@]}" --direct "${common[@]}" --format json --output "$out/write-direct-r$round.json"
settle
"$bin" fs write --size 1g --block-size 4k --runtime 2s --depth 4 --runs 3 \
  --engine uring-defer,uring-ring-fd,uring-no-sqarray,uring-sqpoll \
  "${common[@]}" --format json --output "$out/write-depth4-r$round.json"
settle
"$bin" "${cycle[@]}" "${common[@]}" --format json --output "$out/cycle-buffered-r$round.json"
settle
"$bin" "${cycle[@]}" --direct "${common[@]}" --format json --output "$out/cycle-direct-r$round.json"
echo "round $round end: $(date -u +%FT%TZ)" | tee -a "$out/session.txt"
