#!/usr/bin/env python3
"""bench/shapes.md's tables, as ringside's analysis summarises each document (`ringside report
--format json`): per engine and size (or work), server CPU µs per message (median, runs'
min–max), messages/s median, whether every run verified without errors, and the engine's
server CPU over the engine it is compared with (its parent rung, or the line's baseline) as the
analysis decided it.
Usage: shapes-summary.py PARAM FILE.json... (PARAM: payload_bytes, work_us, ...)"""
import sys

import ringside_analysis as ringside


def summary(path, key):
    analysis = ringside.report(path)
    for study in analysis["studies"]:
        at = ringside.params(study).get(key)
        for engine in study["engines"]:
            cpu = ringside.rung(analysis, study, engine["engine"], "cpu_per_op")
            over = f"over {cpu['reference']}: " if cpu else ""
            print(f"| {engine['engine']} | {at} | {ringside.spread(engine['cpu_us_per_op'], 1)} | "
                  f"{engine['throughput']['median']:.0f} | "
                  f"{'yes' if engine['verified'] else 'NO'} | {over}{ringside.ratio(cpu)} |")


key = sys.argv[1]
for path in sys.argv[2:]:
    summary(path, key)
