#!/bin/bash
# The reference contenders (issue 12) beside ringside's engines: echo 64 B and HTTP at 1, 50 and
# 256 connections, every server alternating run by run within one study (RUNS, default 3),
# DURATION windows after a 500 ms warm-up, server on CPU 0 and client on CPU 1, both SCHED_FIFO
# 50 (FINDINGS: other work moved echo figures 2-9x without it). Under the exclusive lock:
#
#   flock -x /tmp/ringside-bench.lock bench/contenders.sh OUTDIR RINGSIDE_BIN CONTENDERS_DIR
#
# CONTENDERS_DIR is what contenders/build.sh built (target/contenders). The binaries are copied
# into OUTDIR first, so a rebuild meanwhile changes nothing. Traffic goes to 127.0.0.1 only.
set -euo pipefail
out=$1
bin=$2
built=$3
runs=${RUNS:-3}
duration=${DURATION:-2s}
engines=${ENGINES:-epoll,uring,uring-defer}
mkdir -p "$out/bin"
cp "$bin" "$out/bin/ringside"
cp -r "$built/node" "$out/bin/"
for name in go tokio monoio; do cp "$built/$name/ringside-$name" "$out/bin/"; done
b=$(cd "$out/bin" && pwd)
contenders() { # PROTOCOL: the four reference contenders' flags, into the array `flags`
  flags=(--contender "node=node $b/node/$1.js {port}"
    --contender "go=GOMAXPROCS=1 $b/ringside-go $1 {port}"
    --contender "tokio=$b/ringside-tokio $1 {port}"
    --contender "monoio=$b/ringside-monoio $1 {port}")
}
{
  echo "start: $(date -u +%FT%TZ)"
  "$b/ringside" probe | head -1
  echo "ringside $(git -C "$(dirname "$0")" rev-parse --short HEAD): $(sha256sum "$b/ringside" | cut -c1-16)"
  node --version | sed 's/^/node /'
  for name in go tokio monoio; do echo "$name: $(sha256sum "$b/ringside-$name" | cut -c1-16)"; done
} > "$out/session.txt"
common=(--connections 1,50,256 --runs "$runs" --duration "$duration" --warmup 500ms
  --sched fifo --engine "$engines" --quiet)
for protocol in echo http; do
  contenders "$protocol"
  "$b/ringside" "$protocol" "${common[@]}" "${flags[@]}" --json "$out/$protocol.json" \
    > "$out/$protocol.txt" || echo "$protocol exited with $?" >> "$out/session.txt"
done
echo "end: $(date -u +%FT%TZ)" >> "$out/session.txt"
