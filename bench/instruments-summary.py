#!/usr/bin/env python3
"""Summarises bench/instruments.sh as ringside's `compare` decides it: per study, each
configuration's cycles pooled into one document (every cycle's rounds kept apart), then per
cell (engine, depth or connections) each instrument's cost as `ringside compare --format json`
gives it, for throughput and CPU per operation (a server's for the network studies): the syscall
counter (syscalls over none) and the io_uring tracepoints on top of it (tracepoints over
syscalls), each the median of every ratio between the two configurations' rounds with its 95%
interval and outcome.
Usage: bench/instruments-summary.py OUT_DIR"""
import pathlib
import sys

import ringside_analysis as ringside

out = pathlib.Path(sys.argv[1])
PAIRS = [("none", "syscalls"), ("syscalls", "tracepoints")]
METRICS = ["throughput", "cpu_per_op"]

print("| study | engine | cell | syscall counter: throughput | CPU/op | io_uring tracepoints "
      "(over the syscall counter): throughput | CPU/op | rounds (cycles) |")
print("|---|---|---|---|---|---|---|---|")
for study in sorted({path.stem.rsplit("-", 2)[0] for path in out.glob("*-*-*.json")}):
    configs = {}
    for config in ("none", "syscalls", "tracepoints"):
        paths = sorted(out.glob(f"{study}-{config}-*.json"))
        configs[config] = (ringside.pooled(paths), len(paths))
    changes = [ringside.compare(configs[a][0], configs[b][0]) for a, b in PAIRS]
    cells = sorted({(row["engine"], row["params"]) for row in changes[0]})
    for engine, params in cells:
        where = ringside.params({"params": params})
        cell = (f"depth {where['depth']}" if study == "read"
                else f"{where['connections']} conn" if "connections" in where else "")
        found = []
        for change in changes:
            for metric in METRICS:
                row = next((r for r in change if (r["engine"], r["params"], r["metric"])
                            == (engine, params, metric)), None)
                found.append(ringside.change(row, 3))
        rounds = len({r["run"] for r in configs["tracepoints"][0]["results"]
                      if r["engine"] == engine})
        print(f"| {study} | {engine} | {cell} | " + " | ".join(found)
              + f" | {rounds} ({configs['tracepoints'][1]}) |")
