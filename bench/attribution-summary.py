#!/usr/bin/env python3
"""Summarises bench/attribution.sh: per study, uring-defer over uring-multishot in the timed
rounds for requests/s and server CPU per request, as ringside's analysis decided them (`ringside
report --format json`: ratio, interval at its level, outcome), and the same comparison in the
study's attribution rounds alone (with the io_uring tracepoints on), which the report never
uses: those rows handed to the analysis as rounds of their own.
Usage: bench/attribution-summary.py [BINARY] OUT_DIR  (the binary: BINARY, else $RINGSIDE, else
target/release/ringside)"""
import os
import pathlib
import sys

if len(sys.argv) == 3:
    # The first form of this script took the binary first.
    os.environ["RINGSIDE"] = sys.argv[1]
import ringside_analysis as ringside  # noqa: E402

out = pathlib.Path(sys.argv[-1])
PAIR = ("uring-defer", "uring-multishot")
METRICS = ("throughput", "cpu_per_op")


def decided(analysis):
    """The analysis' comparisons of the pair, by metric, in the document's one study."""
    study = analysis["studies"][0]
    return {m: ringside.decided(analysis, study, *PAIR, m) for m in METRICS}


print("| study | rounds | requests/s ratio | server CPU/request ratio "
      "| attribution rounds: requests/s, CPU/request |")
print("|---|---|---|---|---|")
for path in sorted(out.glob("http-*.json")):
    timed = decided(ringside.report(path))
    attribution = ringside.load(path)
    attribution["results"] = [dict(row, attribution=False) for row in attribution["results"]
                              if row.get("attribution")]
    shown = "—"
    if attribution["results"]:
        rounds = decided(ringside.report(attribution))
        shown = " / ".join(ringside.ratio(rounds[m], 3) for m in METRICS)
    print(f"| {path.stem} | {timed['throughput']['rounds']} | "
          f"{ringside.ratio(timed['throughput'], 3)} | {ringside.ratio(timed['cpu_per_op'], 3)} "
          f"| {shown} |")
