#!/usr/bin/env python3
"""bench/shapes.md §2's check from bench/shapes-work.sh's files: per engine and --work, server
CPU µs per message by /proc's tick-sampled times (the load's --server-pid, over its window) and
by the scheduler's clock (schedstat, around the whole load run), median (lowest-highest) of the
rounds, and what the work added over --work 0us by each.

    bench/shapes-work-summary.py [DIR]     (default bench/shapes/work-schedstat)
"""
import glob
import json
import os
import re
import statistics
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else "bench/shapes/work-schedstat"
figures = {}  # (engine, work) -> list of (ticks µs/msg, schedstat µs/msg, msg/s)
for path in sorted(glob.glob(os.path.join(folder, "load-*.json"))):
    engine, work, round_ = re.match(r"load-(.+)-(\d+us)-(\d+)\.json", os.path.basename(path)).groups()
    row = json.load(open(path))["results"][0]
    if not row["verified"]:
        print(f"{path}: NOT VERIFIED", file=sys.stderr)
        continue
    text = open(os.path.join(folder, f"schedstat-{engine}-{work}-{round_}.txt")).read()
    server_ns = int(re.search(r"server_cpu_ns (\d+)", text).group(1))
    ticks = (row["cpu_user_s"] + row["cpu_sys_s"]) * 1e6 / row["ops"]
    figures.setdefault((engine, work), []).append((ticks, server_ns / 1e3 / row["ops"], row["ops_per_sec"]))


def text(values):
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


print("| engine | work | msg/s | server CPU µs/msg, /proc ticks | server CPU µs/msg, schedstat | added by the work: ticks / schedstat |")
print("|---|---|---|---|---|---|")
for (engine, work), runs in sorted(figures.items()):
    base = figures.get((engine, "0us"), [])
    added = ""
    if work != "0us" and base:
        median_of = lambda rows, i: statistics.median(row[i] for row in rows)  # noqa: E731
        added = " / ".join(f"{median_of(runs, i) - median_of(base, i):+.1f}" for i in (0, 1))
    print(f"| {engine} | {work} | {statistics.median(r[2] for r in runs):.0f} | {text([r[0] for r in runs])} | "
          f"{text([r[1] for r in runs])} | {added} |")
