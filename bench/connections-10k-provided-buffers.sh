#!/bin/sh
# The provided-buffer pool at 10,000 echo connections (issue 13): uring-multishot with pools of
# 1024 (the default), 4096 and 16384 buffers of 8 KiB, one run each: messages/s from the load
# generator, empty-pool receives and peak RSS from the server's own stats.
#
# Usage (exclusive lock: it loads both cores):
#   flock -x /tmp/ringside-bench.lock bench/connections-10k-provided-buffers.sh [RINGSIDE] [OUT_DIR]
set -eu
bin=${1:-target/release/ringside}
out=${2:-bench/connections-10k/provided-buffers}
mkdir -p "$out"
uptime > "$out/uptime.txt"
for pool in 1024 4096 16384; do
    "$bin" serve echo --engine uring-multishot --provided-buffers "$pool" --cpu 0 \
        --listen 127.0.0.1:0 --quiet --stats - > "$out/server-$pool.txt" &
    server=$!
    while ! grep -q "listening on" "$out/server-$pool.txt"; do sleep 0.1; done
    target=$(sed -n 's/^listening on //p' "$out/server-$pool.txt")
    "$bin" load echo --target "$target" --connections 10000 --cpu 1 --duration 5s \
        --warmup 2s --timeout 5s --server-pid "$server" --format json \
        > "$out/load-$pool.json"
    kill -TERM "$server"
    wait "$server"
done
uptime >> "$out/uptime.txt"
{
    echo "| buffers | messages/s | verified | errors | recvs out of buffers | server RSS peak MiB |"
    echo "|---|---|---|---|---|---|"
    for pool in 1024 4096 16384; do
        stats=$(tail -n 1 "$out/server-$pool.txt")
        jq -r --arg pool "$pool" --argjson stats "$stats" '.results[0] | "| \($pool) | \(.ops_per_sec | floor) | \(.verified) | \(.errors) | \($stats.provided_buffers_exhausted) | \($stats.rss_bytes_peak / 1048576 * 10 | floor / 10) |"' "$out/load-$pool.json"
    done
} > "$out/table.md"
