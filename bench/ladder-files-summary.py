#!/usr/bin/env python3
"""Tables for bench/ladder-files.md from bench/ladder-files.sh's JSON, as ringside's analysis
summarises them: each study's rounds (one file each) pooled into one document and handed to
`ringside report --format json`; per engine the median and the runs' range of the headline
(MB/s for writes, also in kops/s at the study's block size; pages/s for the cycle), process CPU
per operation (io-wq workers and the SQPOLL thread included), syscalls per operation, for the
cycle device flushes per fsync and p99 latency, for writes each run's device writes per write
as the rows give them, and the engine over the table's first as the analysis decided it.
Usage: ladder-files-summary.py bench/ladder-files"""
import sys
from pathlib import Path

import ringside_analysis as ringside

out = Path(sys.argv[1])
KIB = {"4k": 4096}

for name in ["write-buffered", "write-direct", "write-depth4", "cycle-buffered", "cycle-direct"]:
    paths = sorted(out.glob(f"{name}-r*.json"))
    if not paths:
        continue
    document = ringside.pooled(paths)
    analysis = ringside.report(document)
    cycle = name.startswith("cycle")
    print(f"\n### {name}\n")
    print("| engine | runs | " + ("kpages/s" if cycle else "MB/s | kops/s")
          + " | CPU µs/op | syscalls/op | "
          + ("flushes/fsync | p99 µs |" if cycle else "device writes/op, each run |")
          + " verified | over the first engine (decided) |")
    print("|---" * 9 + "|")
    for study in analysis["studies"]:
        block = KIB[ringside.params(study)["block_size"]] if not cycle else None
        first = study["engines"][0]["engine"]
        for engine in study["engines"]:
            rows = [r for r in document["results"] if r["engine"] == engine["engine"]]
            if cycle:
                rate = ringside.spread(engine["throughput"], 1, 1e-3)
                extra = (f"{ringside.number(engine['counted']['device_flushes_per_op'], 3)} | "
                         f"{ringside.spread(engine['p99_us'], 0)} |")
            else:
                # MB/s to thousands of writes a second at the study's one block size.
                rate = (f"{ringside.spread(engine['throughput'], 0)} | "
                        f"{ringside.spread(engine['throughput'], 1, 1e6 / block / 1e3)}")
                extra = ", ".join(f"{r['device_writes'] / r['ops']:.3f}" for r in rows) + " |"
            against = ringside.decided(analysis, study, engine["engine"], first)
            print(f"| `{engine['engine']}` | {engine['runs']} | {rate} | "
                  f"{ringside.spread(engine['cpu_us_per_op'], 2)} | "
                  f"{ringside.spread(engine['syscalls_per_op'], 4)} | {extra} "
                  f"{'yes' if engine['verified'] else 'NO'} | {ringside.ratio(against)} |")
