#!/usr/bin/env python3
"""Tables for bench/ladder-files.md from bench/ladder-files.sh's JSON: per study and engine, the
median and the min-max range over all runs of every round of ops/s, MB/s, process CPU per
operation (io-wq workers and the SQPOLL thread included), syscalls per operation and, for the
page cycle, device flushes per fsync and p99 latency."""
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])


def fmt(values, digits):
    med = statistics.median(values)
    return f"{med:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


for study in ["write-buffered", "write-direct", "write-depth4", "cycle-buffered", "cycle-direct"]:
    rows = []
    for path in sorted(out.glob(f"{study}-r*.json")):
        rows += json.loads(path.read_text())["results"]
    if not rows:
        continue
    engines = {}
    for row in rows:
        engines.setdefault(row["engine"], []).append(row)
    cycle = study.startswith("cycle")
    print(f"\n### {study}\n")
    print(
        "| engine | runs | kops/s | MB/s | CPU µs/op | syscalls/op | "
        + ("flushes/fsync | p99 µs |" if cycle else "device writes/op |")
        + " verified |"
    )
    print("|---|---|---|---|---|---|---|" + ("---|" if cycle else ""))
    for engine, runs in engines.items():
        rate = [r["ops_per_sec"] / 1000 for r in runs]
        mbs = [r["bytes_per_sec"] / 1e6 for r in runs]
        cpu = [(r["cpu_user_s"] + r["cpu_sys_s"]) / r["ops"] * 1e6 for r in runs]
        calls = [r["syscalls"] / r["ops"] for r in runs]
        device = [(r.get("device_flushes" if cycle else "device_writes") or 0) / r["ops"] for r in runs]
        extra = f"{fmt(device, 3)} |"
        if cycle:
            extra += f" {fmt([r['latency_ns_p99'] / 1000 for r in runs], 0)} |"
        ok = all(r["verified"] and not r.get("errors") for r in runs)
        print(
            f"| `{engine}` | {len(runs)} | {fmt(rate, 1)} | {fmt(mbs, 0)} | {fmt(cpu, 2)} | "
            f"{fmt(calls, 4)} | {extra} {'yes' if ok else 'NO'} |"
        )
