#!/usr/bin/env python3
"""Summarises bench/instruments.sh: per study cell (engine, depth or connections), each
instrument's cost as paired ratios per cycle (the three configurations of a cycle ran back to
back): the syscall counter (syscalls / none) and the io_uring tracepoints on top of it
(tracepoints / syscalls), for throughput and CPU per operation (a server's for the network
studies); median over the cycles with min-max. Each configuration's figure per cycle is the
median of the study's rounds.
Usage: bench/instruments-summary.py OUT_DIR"""
import json
import pathlib
import statistics
import sys

out = pathlib.Path(sys.argv[1])
figures = {}  # (study, cell) -> config -> cycle -> (throughput, cpu per op)
for path in sorted(out.glob("*.json")):
    study, config, cycle = path.stem.rsplit("-", 2)
    per = {}
    for row in json.loads(path.read_text())["results"]:
        if row.get("failure") or not row.get("verified") or not row["ops"]:
            continue
        params = row["params"]
        where = (f"depth {params['depth']}" if "depth" in params and study == "read"
                 else f"{params['connections']} conn" if "connections" in params else "")
        cpu = row.get("server_cpu_s") or (row["cpu_user_s"] + row["cpu_sys_s"])
        per.setdefault((row["engine"], where), []).append(
            (row["ops_per_sec"], cpu / row["ops"] * 1e6))
    for cell, values in per.items():
        medians = tuple(statistics.median(v[i] for v in values) for i in (0, 1))
        figures.setdefault((study, cell), {}).setdefault(config, {})[cycle] = medians


def paired(by_config, top, bottom, index):
    cycles = set(by_config.get(top, {})) & set(by_config.get(bottom, {}))
    ratios = sorted(by_config[top][c][index] / by_config[bottom][c][index] for c in cycles)
    if not ratios:
        return "—"
    return f"{statistics.median(ratios):.3f} ({ratios[0]:.2f}–{ratios[-1]:.2f})"


print("| study | engine | cell | syscall counter: throughput | CPU/op | io_uring tracepoints "
      "(over the syscall counter): throughput | CPU/op | cycles |")
print("|---|---|---|---|---|---|---|---|")
for (study, (engine, where)), by_config in sorted(figures.items()):
    cycles = len(by_config.get("tracepoints", {}))
    print(f"| {study} | {engine} | {where} | "
          f"{paired(by_config, 'syscalls', 'none', 0)} | {paired(by_config, 'syscalls', 'none', 1)} | "
          f"{paired(by_config, 'tracepoints', 'syscalls', 0)} | "
          f"{paired(by_config, 'tracepoints', 'syscalls', 1)} | {cycles} |")
