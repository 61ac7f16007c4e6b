#!/usr/bin/env python3
"""Summarises bench/network/*.json as ringside's analysis does (`ringside report --format
json`): per path, engine and connection count, the median rate with the runs' range, server CPU
per operation, server syscalls per operation, p99 latency, and each engine over epoll in the
same path as the analysis decided it (the Hodges–Lehmann ratio of the rounds' paired ratios).
Usage: network-summary.py bench/network"""
import pathlib
import sys

import ringside_analysis as ringside

out = pathlib.Path(sys.argv[1])
for workload in ["echo", "http"]:
    print(f"\n### {workload}\n")
    print("| path | engine | conn | ops/s median (min-max) | over epoll (decided) | server CPU µs/op "
          "| server syscalls/op | p99 µs | verified |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(out.glob(f"{workload}-*.json"), key=lambda p: p.stat().st_mtime):
        name = path.stem.removeprefix(f"{workload}-")
        analysis = ringside.report(path)
        for study in analysis["studies"]:
            conn = ringside.params(study)["connections"]
            for engine in study["engines"]:
                against = ringside.decided(analysis, study, engine["engine"], "epoll")
                print(f"| {name} | {engine['engine']} | {conn} | "
                      f"{ringside.spread(engine['throughput'], 0, sep='-')} | "
                      f"{ringside.ratio(against)} | "
                      f"{engine['cpu_us_per_op']['median']:.1f} | "
                      f"{ringside.number(engine['syscalls_per_op']['median'])} | "
                      f"{engine['p99_us']['median']:,.0f} | {engine['verified']} |")
