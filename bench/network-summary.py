#!/usr/bin/env python3
"""Summarises bench/network/*.json: per path, engine and connection count, the median rate with
the range of the runs, server CPU per operation, p99 latency, and each engine's rate relative to
epoll in the same path (the ranking). Usage: network-summary.py bench/network"""
import json
import pathlib
import statistics
import sys

out = pathlib.Path(sys.argv[1])
for workload in ["echo", "http"]:
    print(f"\n### {workload}\n")
    print("| path | engine | conn | ops/s median (min-max) | vs epoll | server CPU µs/op | "
          "server syscalls/op | p99 µs | verified |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(out.glob(f"{workload}-*.json"), key=lambda p: p.stat().st_mtime):
        rows = json.loads(path.read_text())["results"]
        name = path.stem.removeprefix(f"{workload}-")
        cells = {}
        for row in rows:
            key = (row["engine"], row["params"]["connections"])
            cells.setdefault(key, []).append(row)
        base = {}
        for (engine, conn), runs in cells.items():
            if engine == "epoll":
                base[conn] = statistics.median(r["ops_per_sec"] for r in runs)
        for (engine, conn), runs in cells.items():
            rates = [r["ops_per_sec"] for r in runs]
            med = statistics.median(rates)
            cpu = statistics.median((r["cpu_user_s"] + r["cpu_sys_s"]) * 1e6 / r["ops"]
                                    for r in runs)
            sys_op = statistics.median(r["syscalls"] / r["ops"] for r in runs)
            p99 = statistics.median(r.get("latency_ns_p99", 0) for r in runs) / 1e3
            ratio = med / base[conn] if conn in base else float("nan")
            ok = all(r["verified"] for r in runs)
            print(f"| {name} | {engine} | {conn} | {med:,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"
                  f" | {ratio:.2f} | {cpu:.1f} | {sys_op:.2f} | {p99:,.0f} | {ok} |")
