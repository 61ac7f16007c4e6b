#!/usr/bin/env python3
"""Summarises bench/counters.sh: per study, engine and configuration, the median headline over
the rounds with its min-max, and each configuration's median as a share of the uncounted one.
Usage: bench/counters-summary.py OUT_DIR"""
import json
import pathlib
import statistics
import sys

CONFIGS = ["none", "syscalls", "all"]
out = pathlib.Path(sys.argv[1])
cells = {}
for path in sorted(out.glob("*.json")):
    study, config, _round = path.stem.rsplit("-", 2)
    for row in json.loads(path.read_text())["results"]:
        headline = "bytes_per_sec" if row["workload"] == "fs-write" else "ops_per_sec"
        scale = 1e-6 if headline == "bytes_per_sec" else 1.0
        conn = row["params"].get("connections")
        name = f"{study} {row['engine']}" + (f" c={conn}" if conn else "")
        cells.setdefault(name, {}).setdefault(config, []).append(row[headline] * scale)

print("| cell | " + " | ".join(f"{c}: median (min–max)" for c in CONFIGS)
      + " | syscalls / none | all / none | all / syscalls |")
print("|---|" + "---|" * (len(CONFIGS) + 3))
for name, by_config in cells.items():
    medians = {c: statistics.median(v) for c, v in by_config.items()}
    text = [f"{medians[c]:.0f} ({min(by_config[c]):.0f}–{max(by_config[c]):.0f})"
            for c in CONFIGS]
    ratios = [medians["syscalls"] / medians["none"], medians["all"] / medians["none"],
              medians["all"] / medians["syscalls"]]
    print(f"| {name} | " + " | ".join(text) + " | "
          + " | ".join(f"{r:.3f}" for r in ratios) + " |")
