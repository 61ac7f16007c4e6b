#!/usr/bin/env python3
"""Before against after, from the JSON documents `DIR/{before,after}-rROUND.json` that
bench/reliability-read.sh and bench/reliability-http.sh write: for each cell (engine, and depth
for reads), the median CPU µs per operation of each build over every run, and the after/before
ratio of each round's medians (its median and range), with the operations per second.

  python3 bench/reliability-summary.py read DIR   # CPU per read: the process's user + sys
  python3 bench/reliability-summary.py http DIR   # server CPU per request (server_cpu_us_per_op)
"""

import glob
import json
import re
import statistics
import sys
from collections import defaultdict

what, folder = sys.argv[1], sys.argv[2]
cpu_us = defaultdict(list)  # (build, round, cell) -> [µs per operation]
rate = defaultdict(list)  # the same -> [operations per second]
for path in sorted(glob.glob(f"{folder}/*-r*.json")):
    build, round_ = re.match(r".*/(\w+)-r(\d+)\.json", path).groups()
    for row in json.load(open(path))["results"]:
        assert row["verified"], path
        if what == "read":
            cell = (row["engine"], row["params"]["depth"])
            per_op = (row["cpu_user_s"] + row["cpu_sys_s"]) * 1e6 / row["ops"]
        else:
            cell = (row["engine"], row["params"].get("rate_per_sec", "closed"))
            per_op = row["server_cpu_us_per_op"]
        cpu_us[(build, int(round_), cell)].append(per_op)
        rate[(build, int(round_), cell)].append(row["ops_per_sec"])

unit = {"read": "read", "http": "request (server)"}[what]
cells = sorted({cell for (_, _, cell) in cpu_us}, key=str)
rounds = sorted({round_ for (_, round_, _) in cpu_us})
print(
    f"| engine | {'depth' if what == 'read' else 'rate'} | CPU µs/{unit} before | after | "
    "after − before | after/before per round: median (range) | ops/s before | after |"
)
print("|---|---|---|---|---|---|---|---|")
for cell in cells:
    every = {
        build: [v for r in rounds for v in cpu_us[(build, r, cell)]] for build in ("before", "after")
    }
    ratios = [
        statistics.median(cpu_us[("after", r, cell)]) / statistics.median(cpu_us[("before", r, cell)])
        for r in rounds
    ]
    before, after = (statistics.median(every[b]) for b in ("before", "after"))
    ops = [
        statistics.median([v for r in rounds for v in rate[(b, r, cell)]]) for b in ("before", "after")
    ]
    print(
        f"| {cell[0]} | {cell[1]} | {before:.2f} | {after:.2f} | {after - before:+.2f} | "
        f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
        f"{ops[0] / 1e3:.0f}k | {ops[1] / 1e3:.0f}k |"
    )
