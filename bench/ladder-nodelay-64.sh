#!/bin/bash
# Whether TCP_NODELAY on the servers' sockets moved the 64 B echo figures: the binary before it
# and the binary with it, alternated run by run (A B A B A B), each run one `ringside echo` of
# three engines at 50 connections, under the exclusive benchmark lock:
#
#   flock -x /tmp/ringside-bench.lock bench/ladder-nodelay-64.sh OUTDIR BEFORE_BIN AFTER_BIN
#
# Then per binary and engine the median and min-max of msg/s and server CPU µs per message.
set -euo pipefail
out=$1
before=$2
after=$3
runs=${RUNS:-3}
mkdir -p "$out"
"$after" probe | head -1 | tee "$out/session.txt"
for run in $(seq 1 "$runs"); do
  for side in before after; do
    bin=$before
    [ "$side" = after ] && bin=$after
    "$bin" echo --engine epoll,uring-defer,uring-fixed-files --connections 50 --payload 64 \
      --runs 1 --duration 2s --warmup 500ms --sched fifo --quiet \
      --json "$out/$side-$run.json" > /dev/null
  done
done
python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
cells = {}
for path in sorted(out.glob("*-*.json")):
    side = path.stem.split("-")[0]
    for row in json.loads(path.read_text())["results"]:
        cells.setdefault((row["engine"], side), []).append(row)
def fmt(values, digits):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"
print("| engine | nodelay | msg/s | server CPU µs/msg | ok |")
print("|---|---|---|---|---|")
for (engine, side), rows in sorted(cells.items(), key=lambda c: (c[0][0], c[0][1] != "before")):
    rate = [r["ops_per_sec"] / 1000 for r in rows]
    cpu = [(r["cpu_user_s"] + r["cpu_sys_s"]) / r["ops"] * 1e6 for r in rows]
    ok = all(r["verified"] and not r["errors"] for r in rows)
    print(f"| `{engine}` | {'no' if side == 'before' else 'yes'} | {fmt(rate, 1)}k | {fmt(cpu, 2)} | "
          f"{'yes' if ok else 'NO'} ({len(rows)} runs) |")
PY
