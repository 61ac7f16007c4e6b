#!/bin/sh
# 10,000 connections (issue 13): the echo and HTTP studies with every multiplexing engine at
# 10,000 connections, one run each, then blocking and threads at the same count, which are
# expected to end NOT VERIFIED or refused with the reason rather than crash. Each run's row
# records the server's peak RSS and its RSS per connection.
#
# Usage (exclusive lock: it loads both cores):
#   flock -x /tmp/ringside-bench.lock bench/connections-10k.sh [RINGSIDE] [OUT_DIR]
set -eu
bin=${1:-target/release/ringside}
out=${2:-bench/connections-10k}
mkdir -p "$out"
common="--connections 10000 --runs 1 --duration 5s --warmup 2s --timeout 5s --quiet"
uptime > "$out/uptime.txt"
# shellcheck disable=SC2086 # $common is a list of flags.
"$bin" echo --engine epoll,uring,uring-multishot,uring-defer $common \
    --json "$out/echo.json" > "$out/echo.txt"
# shellcheck disable=SC2086
"$bin" http --engine epoll,uring,uring-multishot,uring-defer $common \
    --json "$out/http.json" > "$out/http.txt"
# Expected to exit 1: their rows are not verified (the reason is in each row's notes).
# shellcheck disable=SC2086
"$bin" echo --engine blocking,threads $common \
    --json "$out/echo-blocking-threads.json" > "$out/echo-blocking-threads.txt" 2>&1 || true
uptime >> "$out/uptime.txt"
# The table: one line per row of the three documents.
{
    echo "| study | engine | verified | messages/s | errors | server RSS peak MiB | server RSS B per connection | recvs out of provided buffers | notes |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for doc in echo http echo-blocking-threads; do
        [ -s "$out/$doc.json" ] || continue
        jq -r --arg doc "$doc" '.results[] | "| \($doc) | \(.engine) | \(.verified) | \(.ops_per_sec | floor) | \(.errors) | \((.server_rss_peak_bytes // 0) / 1048576 * 10 | floor / 10) | \(.server_rss_bytes_per_connection) | \(.provided_buffers_exhausted) | \((.notes // []) | join("; ") | gsub("\\|"; "/")) |"' "$out/$doc.json"
    done
} > "$out/table.md"
