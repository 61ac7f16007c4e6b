#!/usr/bin/env python3
"""Summarises a bench/fs.sh output directory as Markdown tables, from ringside's analysis: per
study (write-4k, write-1m, cycle) ringside's rounds and fio's jobs of the same rounds in one
document, fio's as controls (fio's own figures; its process CPU from /usr/bin/time), handed to
`ringside report --format json`. Per contender: MB/s (the cycle: pages/s) median and the runs'
range, median seconds, syscalls and CPU µs per operation (median), and, for fio's jobs, ringside's
blocking over the job as the analysis decided it.
Usage: fs-summary.py OUT_DIR"""
import glob
import os
import sys

import ringside_analysis as ringside

out = sys.argv[1]
documents = {}
for path in sorted(glob.glob(os.path.join(out, "ringside-*.json"))):
    study = os.path.basename(path).rsplit("-r", 1)[0].replace("ringside-", "")
    documents.setdefault(study, []).append(path)
pooled = {study: ringside.pooled(paths) for study, paths in documents.items()}
for path in sorted(glob.glob(os.path.join(out, "fio-*.json"))):
    name, run = os.path.basename(path)[4:-len(".json")].rsplit("-r", 1)
    if name.startswith("cycle-"):
        study, label = "cycle", name[len("cycle-"):]
    else:
        label, bs = name.rsplit("-", 1)
        study = "write-" + bs
    document = pooled[study]
    params = next(r["params"] for r in document["results"] if r["run"] == int(run))
    user, system = (float(t) for t in open(path[: -len(".json")] + ".time").read().split())
    workload = document["results"][0]["workload"]
    document["results"].append(ringside.fio_control(ringside.load(path), workload, f"fio {label}",
                                                    params, int(run), cpu=(user, system)))

for study in sorted(pooled):
    analysis = ringside.report(pooled[study])
    print(f"\n### {study}\n")
    for one in analysis["studies"]:
        print(f"| contender | runs | {one['unit']} median (min–max) | seconds median "
              "| syscalls/op median | process CPU µs/op median | blocking over it (decided) |")
        print("|---|---|---|---|---|---|---|")
        for engine in one["engines"]:
            control = engine["control"]
            name = engine["engine"] if control else "ringside " + engine["engine"]
            calls = ringside.number(engine["syscalls_per_op"] and engine["syscalls_per_op"]["median"], 4)
            against = ringside.decided(analysis, one, "blocking", engine["engine"]) if control else None
            print(f"| {name} | {engine['runs']} | {ringside.spread(engine['throughput'], 0)} | "
                  f"{engine['counted']['seconds']:.3f} | "
                  f"{calls} | "
                  f"{engine['cpu_us_per_op']['median']:.2f} | "
                  f"{ringside.ratio(against) if control else ''} |")
