#!/usr/bin/env python3
"""Summarises bench/attribution.sh: per study, uring-defer over uring-multishot in the timed
rounds (ratio and interval as `ringside report --format json` gives them) for requests/s and
server CPU per request, and the same ratio in the study's attribution rounds (with the io_uring
tracepoints on; median of the rounds' ratios), which the report never uses.
Usage: bench/attribution-summary.py BINARY OUT_DIR"""
import json
import pathlib
import statistics
import subprocess
import sys

binary, out = sys.argv[1], pathlib.Path(sys.argv[2])
print("| study | rounds | requests/s ratio [95%] | server CPU/request ratio [95%] "
      "| attribution rounds: requests/s, CPU/request |")
print("|---|---|---|---|---|")
for path in sorted(out.glob("http-*.json")):
    table = json.loads(subprocess.run([binary, "report", "--format", "json", str(path)],
                                      check=True, capture_output=True).stdout)
    cells = {}
    for row in table:
        if (row["family"], row["subject"], row["reference"]) == ("table", "uring-defer",
                                                                 "uring-multishot"):
            cells[row["metric"]] = row
    shown = [f"{cells[m]['ratio']:.3f} [{cells[m]['low']:.3f}–{cells[m]['high']:.3f}]"
             for m in ("throughput", "cpu_per_op")]
    rows = json.loads(path.read_text())["results"]
    by_run = {}
    for row in rows:
        if row.get("attribution"):
            cpu = row["server_cpu_s"] / row["ops"] if row["ops"] else float("nan")
            by_run.setdefault(row["run"], {})[row["engine"]] = (row["ops_per_sec"], cpu)
    tput = [r["uring-defer"][0] / r["uring-multishot"][0] for r in by_run.values()]
    cpu = [r["uring-defer"][1] / r["uring-multishot"][1] for r in by_run.values()]
    attribution = (f"{statistics.median(tput):.3f}, {statistics.median(cpu):.3f}"
                   if by_run else "—")
    print(f"| {path.stem} | {cells['throughput']['rounds']} | {shown[0]} | {shown[1]} "
          f"| {attribution} |")
