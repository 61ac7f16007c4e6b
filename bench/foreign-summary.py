#!/usr/bin/env python3
"""Lists bench/foreign.sh's rows by where their window lay against the CPU-bound loop's: inside
it, outside it, or across an edge, with each row's foreign_cpu_share in rising order. The
analysis does not summarise this field, so the rows are listed, not summarised.
Usage: bench/foreign-summary.py OUT_DIR"""
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1])
start = float((out / "loop-start.txt").read_text())
end = float((out / "loop-end.txt").read_text())
groups = {"inside the loop": [], "outside it": [], "across an edge": []}
for row in json.loads((out / "echo.json").read_text())["results"]:
    a, b, share = row["window_start_unix_s"], row["window_end_unix_s"], row["foreign_cpu_share"]
    key = ("inside the loop" if start <= a and b <= end
           else "outside it" if b <= start or a >= end else "across an edge")
    groups[key].append(share)
print("| rows | n | each row's foreign_cpu_share, rising |")
print("|---|---|---|")
for key, shares in groups.items():
    print(f"| {key} | {len(shares)} | " + ", ".join(f"{s:.2f}" for s in sorted(shares)) + " |")
