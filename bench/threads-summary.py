#!/usr/bin/env python3
"""The tables of bench/threads.md from bench/threads/ (bench/threads.sh's raw data), as
ringside's analysis (`ringside report --format json`) summarises each study: per study (write,
cycle), depth and engine, the headline's median with the runs' range, the median seconds, the
device's flushes (per run for the write, per fsync for the cycle), io-wq's workers and their
context switches per operation, the process's context switches and CPU µs per operation
(helpers included), whether every run verified, and the engine over the table's first engine as
the analysis decided it. Usage: python3 bench/threads-summary.py [bench/threads]
"""
import os
import sys

import ringside_analysis as ringside

out = sys.argv[1] if len(sys.argv) > 1 else "bench/threads"


def table(study, title, per_fsync):
    print(f"\n### {title}\n")
    flushes = "device flushes per fsync" if per_fsync else "device flushes per run"
    print(f"| depth | engine | headline median (min–max) | seconds median | {flushes} | "
          "io-wq workers | their ctx switches per op | ctx switches per op | CPU µs/op | verified "
          "| over the first engine (decided) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for depth in [8, 32, 128]:
        path = os.path.join(out, f"{study}-d{depth}.json")
        if not os.path.exists(path):
            continue
        analysis = ringside.report(path)
        for one in analysis["studies"]:
            first = one["engines"][0]["engine"]
            for engine in one["engines"]:
                counted = engine["counted"]
                flush = counted["device_flushes_per_op" if per_fsync else "device_flushes"]
                against = ringside.decided(analysis, one, engine["engine"], first)
                print(f"| {depth} | {engine['engine']} | "
                      f"{ringside.spread(engine['throughput'], 0)} {one['unit']} | "
                      f"{counted['seconds']:.2f} | {ringside.number(flush)} | "
                      f"{ringside.number(counted['iowq_workers'], 0)} | "
                      f"{ringside.number(counted['iowq_ctx_switches_per_op'])} | "
                      f"{ringside.number(counted['ctx_switches_per_op'])} | "
                      f"{engine['cpu_us_per_op']['median']:.1f} | "
                      f"{'yes' if engine['verified'] else 'NO'} | {ringside.ratio(against)} |")


table("write", "fs write: 256 MiB in 4 KiB buffered writes, overwritten, fsync at the end", False)
table("cycle", "fs cycle: 32,768 pages of write 4 KiB, fsync, read back (128 MiB, overwritten)", True)
