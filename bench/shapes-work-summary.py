#!/usr/bin/env python3
"""bench/shapes.md §2's check from bench/shapes-work.sh's files, from ringside's analysis: the
rounds' `load echo` rows, each named after the server engine it drove (its file name: the row
says `external`) and given the server's `--work` as a parameter, in one document, twice: once as
recorded (server CPU from /proc's tick-sampled times over the load's window) and once with the
server's CPU by the scheduler's clock (schedstat, around the whole load run) in `server_cpu_s`,
the field ringside itself fills from that clock where it reads it. Per engine and --work: msg/s
median, server CPU µs per message by each clock (median, lowest–highest of the rounds), and
uring-defer over epoll on server CPU by the scheduler's clock as the analysis decided it.

    bench/shapes-work-summary.py [DIR]     (default bench/shapes/work-schedstat)
"""
import glob
import os
import re
import sys

import ringside_analysis as ringside

folder = sys.argv[1] if len(sys.argv) > 1 else "bench/shapes/work-schedstat"
rows = {"ticks": [], "schedstat": []}
first = None
for path in sorted(glob.glob(os.path.join(folder, "load-*.json"))):
    engine, work, round_ = re.match(r"load-(.+)-(\d+us)-(\d+)\.json", os.path.basename(path)).groups()
    document = ringside.load(path)
    first = first or document
    row = document["results"][0]
    row.update(engine=engine, run=int(round_), params=dict(row["params"], work=work))
    text = open(os.path.join(folder, f"schedstat-{engine}-{work}-{round_}.txt")).read()
    server_ns = int(re.search(r"server_cpu_ns (\d+)", text).group(1))
    rows["ticks"].append(row)
    rows["schedstat"].append(dict(row, server_cpu_s=server_ns / 1e9))
analyses = {clock: ringside.report(dict(first, results=found)) for clock, found in rows.items()}

print("| engine | work | msg/s | server CPU µs/msg, /proc ticks | server CPU µs/msg, schedstat "
      "| over epoll, schedstat (decided) |")
print("|---|---|---|---|---|---|")
for study in sorted(analyses["schedstat"]["studies"], key=lambda s: int(ringside.params(s)["work"][:-2])):
    work = ringside.params(study)["work"]
    ticks = next(s for s in analyses["ticks"]["studies"] if s["params"] == study["params"])
    for engine in study["engines"]:
        by_ticks = ringside.engine_of(ticks, engine["engine"])
        over = ringside.decided(analyses["schedstat"], study, engine["engine"], "epoll", "cpu_per_op")
        verified = "" if engine["verified"] else " NOT VERIFIED"
        print(f"| {engine['engine']}{verified} | {work} | {engine['throughput']['median']:.0f} | "
              f"{ringside.spread(by_ticks['cpu_us_per_op'], 1, sep='-')} | "
              f"{ringside.spread(engine['cpu_us_per_op'], 1, sep='-')} | {ringside.ratio(over)} |")
