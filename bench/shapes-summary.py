#!/usr/bin/env python3
"""bench/shapes.md's tables: per engine and size (or work), server CPU µs per message
(median, min-max of the runs), messages/s median, all runs verified."""
import json, statistics, sys

def summary(path, key):
    rows = json.load(open(path))["results"]
    cells = {}
    for r in rows:
        cpu = (r["cpu_user_s"] + r["cpu_sys_s"]) * 1e6 / max(r["ops"], 1)
        cells.setdefault((r["engine"], r["params"].get(key)), []).append((cpu, r["ops_per_sec"], r["verified"]))
    for (engine, at), runs in cells.items():
        cpus = [c for c, _, _ in runs]
        rate = statistics.median(o for _, o, _ in runs)
        ok = all(v for _, _, v in runs)
        print(f"| {engine} | {at} | {statistics.median(cpus):.1f} ({min(cpus):.1f}–{max(cpus):.1f}) | {rate:.0f} | {'yes' if ok else 'NO'} |")

key = sys.argv[1]
for path in sys.argv[2:]:
    summary(path, key)
