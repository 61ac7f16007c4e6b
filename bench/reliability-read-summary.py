#!/usr/bin/env python3
"""CPU per warm 4 KiB read before and after whole-block verification (bench/reliability.md):
for each engine and depth, the median CPU µs per read of each build over every run, and the
after/before ratio of each round's medians (its median and range), from the JSON documents
`bench/reliability/read/{before,after}-rROUND.json`."""

import glob
import json
import re
import statistics
import sys
from collections import defaultdict

folder = sys.argv[1] if len(sys.argv) > 1 else "bench/reliability/read"
cpu_us = defaultdict(list)  # (build, round, engine, depth) -> [µs per read]
rate = defaultdict(list)  # the same -> [reads per second]
for path in sorted(glob.glob(f"{folder}/*-r*.json")):
    build, round_ = re.match(r".*/(\w+)-r(\d+)\.json", path).groups()
    for row in json.load(open(path))["results"]:
        assert row["verified"], path
        cpu = row["cpu_user_s"] + row["cpu_sys_s"]
        key = (build, int(round_), row["engine"], row["params"]["depth"])
        cpu_us[key].append(cpu * 1e6 / row["ops"])
        rate[key].append(row["ops_per_sec"])

cells = sorted({(engine, depth) for (_, _, engine, depth) in cpu_us})
rounds = sorted({round_ for (_, round_, _, _) in cpu_us})
print("| engine | depth | CPU µs/read before | after | after − before | after/before per round: median (range) | reads/s before | after |")
print("|---|---|---|---|---|---|---|---|")
for engine, depth in cells:
    every = {
        build: [v for r in rounds for v in cpu_us[(build, r, engine, depth)]]
        for build in ("before", "after")
    }
    ratios = [
        statistics.median(cpu_us[("after", r, engine, depth)])
        / statistics.median(cpu_us[("before", r, engine, depth)])
        for r in rounds
    ]
    before, after = (statistics.median(every[b]) for b in ("before", "after"))
    reads = [
        statistics.median([v for r in rounds for v in rate[(b, r, engine, depth)]])
        for b in ("before", "after")
    ]
    print(
        f"| {engine} | {depth} | {before:.2f} | {after:.2f} | {after - before:+.2f} | "
        f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
        f"{reads[0] / 1e3:.0f}k | {reads[1] / 1e3:.0f}k |"
    )
