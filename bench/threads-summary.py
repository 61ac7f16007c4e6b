#!/usr/bin/env python3
"""The tables of bench/threads.md from bench/threads/ (bench/threads.sh's raw data).

Per study (write, cycle), depth and engine: the median of the runs' seconds with its range,
device flushes per fsync (cycle) or per run (write), the pool's or io-wq's threads, their
context switches per operation, CPU µs per operation (the whole process, helpers included),
and whether every run verified. Usage: python3 bench/threads-summary.py [bench/threads]
"""
import json
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "bench/threads"


def table(study, title, per_fsync):
    print(f"\n### {title}\n")
    flushes = "device flushes per fsync" if per_fsync else "device flushes per run"
    print(f"| depth | engine | seconds median (min–max) | MB/s median | {flushes} | "
          "pool or io-wq threads | their ctx switches per op | CPU µs/op | verified |")
    print("|---|---|---|---|---|---|---|---|---|")
    for depth in [8, 32, 128]:
        path = os.path.join(out, f"{study}-d{depth}.json")
        if not os.path.exists(path):
            continue
        with open(path) as handle:
            rows = json.load(handle)["results"]
        engines = []
        for row in rows:
            if row["engine"] not in engines:
                engines.append(row["engine"])
        for engine in engines:
            cell = [r for r in rows if r["engine"] == engine]
            med = lambda f: statistics.median(f(r) for r in cell)
            seconds = [r["seconds"] for r in cell]
            flush = med(lambda r: (r.get("device_flushes") or 0) / (max(r["ops"], 1) if per_fsync else 1))
            threads = med(lambda r: r.get("pool_threads") or r.get("iowq_workers") or 0)
            ctx = med(lambda r: (r.get("pool_ctx_switches") or r.get("iowq_ctx_switches") or 0)
                      / max(r["ops"], 1))
            cpu = med(lambda r: (r["cpu_user_s"] + r["cpu_sys_s"]) / max(r["ops"], 1) * 1e6)
            verified = "yes" if all(r["verified"] for r in cell) else "NO"
            print(f"| {depth} | {engine} | {statistics.median(seconds):.2f} "
                  f"({min(seconds):.2f}–{max(seconds):.2f}) | "
                  f"{med(lambda r: r['bytes_per_sec']) / 1e6:.0f} | {flush:.2f} | {threads:.0f} | "
                  f"{ctx:.2f} | {cpu:.1f} | {verified} |")


table("write", "fs write: 256 MiB in 4 KiB buffered writes, overwritten, fsync at the end", False)
table("cycle", "fs cycle: 32,768 pages of write 4 KiB, fsync, read back (128 MiB, overwritten)", True)
