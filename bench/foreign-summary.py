#!/usr/bin/env python3
"""Summarises bench/foreign.sh: foreign_cpu_share of the rows whose window lay inside the
CPU-bound loop's, of those outside it, and of those that straddled an edge.
Usage: bench/foreign-summary.py OUT_DIR"""
import json
import pathlib
import statistics
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
for key, shares in groups.items():
    if shares:
        print(f"{key}: {len(shares)} rows, foreign_cpu_share median {statistics.median(shares):.2f}"
              f" ({min(shares):.2f}–{max(shares):.2f})")
