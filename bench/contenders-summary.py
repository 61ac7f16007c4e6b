#!/usr/bin/env python3
"""The matrix of bench/contenders.md from a study's JSON: per server and connection count, the
median ops/s with the run range, then CPU µs and syscalls per operation (medians). Ping-pong
(echo) and closed-loop (HTTP) rows only; the integrity streams are in the study's own table.
Usage: contenders-summary.py STUDY.json"""
import json
import statistics
import sys

rows = [r for r in json.load(open(sys.argv[1]))["results"] if r["params"].get("mode") != "stream"]
servers = list(dict.fromkeys(r["engine"] for r in rows))
counts = sorted({r["params"]["connections"] for r in rows})


def cells(server, count):
    return [r for r in rows if r["engine"] == server and r["params"]["connections"] == count]


def per_op(r, amount):
    return amount / r["ops"] if r["ops"] else float("nan")


print("| server | " + " | ".join(f"{c} conn: ops/s median (min–max)" for c in counts)
      + " | " + " | ".join(f"{c} conn: CPU µs / syscalls per op" for c in counts) + " |")
print("|---" * (1 + 2 * len(counts)) + "|")
for server in servers:
    rate, cost = [], []
    for count in counts:
        runs = cells(server, count)
        ok = all(r["verified"] for r in runs) and runs
        values = [r["ops_per_sec"] for r in runs]
        mark = "" if ok else " NOT VERIFIED"
        mark += "!" if any(r["errors"] for r in runs) else ""
        rate.append(f"{statistics.median(values) / 1000:.1f}k ({min(values) / 1000:.1f}–{max(values) / 1000:.1f}){mark}")
        cpu = statistics.median(per_op(r, (r["cpu_user_s"] + r["cpu_sys_s"]) * 1e6) for r in runs)
        calls = statistics.median(per_op(r, r["syscalls"]) for r in runs)
        cost.append(f"{cpu:.1f} / {calls:.2f}")
    print(f"| {server} | " + " | ".join(rate) + " | " + " | ".join(cost) + " |")
