#!/usr/bin/env python3
"""The matrix of bench/contenders.md from a study's JSON, as ringside's analysis summarises it
(`ringside report --format json`): per server and connection count, the median ops/s with the
runs' range, then CPU µs and syscalls per operation (medians); then each contender against the
ringside engine the analysis compares it with (the raw engine of its event API), as decided.
Ping-pong (echo) and closed-loop (HTTP) studies only; the integrity streams are in the study's
own table.
Usage: contenders-summary.py STUDY.json"""
import sys

import ringside_analysis as ringside

analysis = ringside.report(sys.argv[1])
cells = sorted((s for s in analysis["studies"] if ringside.params(s).get("mode") != "stream"),
               key=lambda s: int(ringside.params(s)["connections"]))
counts = [ringside.params(s)["connections"] for s in cells]
servers = list(dict.fromkeys(e["engine"] for s in cells for e in s["engines"] + s["contenders"]))

print("| server | " + " | ".join(f"{c} conn: ops/s median (min–max)" for c in counts)
      + " | " + " | ".join(f"{c} conn: CPU µs / syscalls per op" for c in counts) + " |")
print("|---" * (1 + 2 * len(counts)) + "|")
for server in servers:
    rate, cost = [], []
    for study in cells:
        engine = ringside.engine_of(study, server)
        if engine is None:
            rate.append("—")
            cost.append("—")
            continue
        mark = "" if engine["verified"] else " NOT VERIFIED"
        mark += "!" if engine["left_out"] else ""
        rate.append(f"{ringside.spread(engine['throughput'], 1, 1e-3, unit='k')}{mark}")
        cost.append(f"{engine['cpu_us_per_op']['median']:.1f} / "
                    f"{ringside.number(engine['syscalls_per_op'] and engine['syscalls_per_op']['median'])}")
    print(f"| {server} | " + " | ".join(rate) + " | " + " | ".join(cost) + " |")

print("\n| contender | conn | against | ops/s (decided) | CPU per op (decided) |")
print("|---|---|---|---|---|")
for study in cells:
    for contender in study["contenders"]:
        found = [c for c in analysis["comparisons"]
                 if c["study"] == study["study"] and c["subject"] == contender["engine"]]
        by_metric = {c["metric"]: c for c in found}
        if not found:
            continue
        print(f"| {contender['engine']} | {ringside.params(study)['connections']} | "
              f"{found[0]['reference']} | {ringside.ratio(by_metric.get('throughput'))} | "
              f"{ringside.ratio(by_metric.get('cpu_per_op'))} |")
