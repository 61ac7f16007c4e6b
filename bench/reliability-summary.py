#!/usr/bin/env python3
"""Before against after, from the JSON documents `DIR/{before,after}-rROUND.json` that
bench/reliability-read.sh and bench/reliability-http.sh write: each build's rounds pooled into
one document, then per cell (engine, and depth for reads or the offered rate for HTTP) each
build's median CPU µs per operation and operations per second as ringside's analysis gives them,
and after over before as `ringside compare --format json` decides it (the median of every ratio
between the two builds' runs, its 95% interval and outcome).

  python3 bench/reliability-summary.py read DIR   # CPU per read: the process's user + sys
  python3 bench/reliability-summary.py http DIR   # server CPU per request, at one offered rate
"""
import sys
from pathlib import Path

import ringside_analysis as ringside

what, folder = sys.argv[1], Path(sys.argv[2])
builds = {b: ringside.pooled(sorted(folder.glob(f"{b}-r*.json"))) for b in ("before", "after")}
for document in builds.values():
    for row in document["results"]:
        # Open-loop rows at one offered rate are equal-load rows, which `compare` leaves out;
        # without `offered_rate` they are a study of their own (`rate_per_sec` stays in their
        # parameters), so both builds' runs at that rate are compared like any other study's.
        row.pop("offered_rate", None)
figures = {b: ringside.report(builds[b]) for b in builds}
changes = ringside.compare(builds["before"], builds["after"])

unit = {"read": "read", "http": "request (server)"}[what]
print(f"| engine | {'depth' if what == 'read' else 'rate'} | CPU µs/{unit} before | after | "
      "after/before (decided) | ops/s before | after |")
print("|---|---|---|---|---|---|---|")
for study in figures["before"]["studies"]:
    at = ringside.params(study).get("depth" if what == "read" else "rate_per_sec", "closed")
    after = next(s for s in figures["after"]["studies"] if s["params"] == study["params"])
    for engine in study["engines"]:
        later = ringside.engine_of(after, engine["engine"])
        row = next((r for r in changes if (r["engine"], r["params"], r["metric"])
                    == (engine["engine"], study["params"], "cpu_per_op")), None)
        print(f"| {engine['engine']} | {at} | {engine['cpu_us_per_op']['median']:.2f} | "
              f"{later['cpu_us_per_op']['median']:.2f} | {ringside.change(row)} | "
              f"{engine['throughput']['median'] / 1e3:.0f}k | "
              f"{later['throughput']['median'] / 1e3:.0f}k |")
