#!/usr/bin/env python3
"""Summarises bench/counters.sh as ringside's analysis and `compare` do: per study, engine and
configuration, the headline's median over the rounds with its min–max (`ringside report
--format json` of the configuration's rounds pooled), and each configuration against another
as `ringside compare --format json` decides it (B over A: the median of every B/A ratio of
their rounds, with its interval where the rounds allow one).
Usage: bench/counters-summary.py OUT_DIR"""
import pathlib
import sys

import ringside_analysis as ringside

CONFIGS = ["none", "syscalls", "all"]
PAIRS = [("none", "syscalls"), ("none", "all"), ("syscalls", "all")]
out = pathlib.Path(sys.argv[1])
names = sorted({path.stem.rsplit("-", 2)[0] for path in out.glob("*-*-*.json")})

print("| cell | " + " | ".join(f"{c}: median (min–max)" for c in CONFIGS)
      + " | syscalls / none | all / none | all / syscalls |")
print("|---|" + "---|" * (len(CONFIGS) + 3))
for name in names:
    documents = {c: ringside.pooled(sorted(out.glob(f"{name}-{c}-*.json"))) for c in CONFIGS}
    analyses = {c: ringside.report(documents[c]) for c in CONFIGS}
    changes = {pair: ringside.compare(documents[pair[0]], documents[pair[1]]) for pair in PAIRS}
    for study in analyses["none"]["studies"]:
        conn = ringside.params(study).get("connections")
        for engine in study["engines"]:
            cell = f"{name} {engine['engine']}" + (f" c={conn}" if conn else "")
            text = []
            for config in CONFIGS:
                same = [s for s in analyses[config]["studies"] if s["params"] == study["params"]]
                figures = ringside.engine_of(same[0], engine["engine"]) if same else None
                text.append(ringside.spread(figures and figures["throughput"], 0).replace(",", ""))
            ratios = []
            for pair in PAIRS:
                row = next((r for r in changes[pair] if r["engine"] == engine["engine"]
                            and r["params"] == study["params"] and r["metric"] == "throughput"),
                           None)
                ratios.append(ringside.change(row, 3))
            print(f"| {cell} | " + " | ".join(text) + " | " + " | ".join(ratios) + " |")
