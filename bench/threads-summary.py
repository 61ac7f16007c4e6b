#!/usr/bin/env python3
"""The tables of bench/threads.md from bench/threads/ (bench/threads.sh's raw data), as
ringside's analysis (`ringside report --format json`) summarises each study: per study (write,
cycle), depth and engine, the headline's median with the runs' range, the median seconds, the
device's flushes (per run for the write, per fsync for the cycle), io-wq's workers and their
context switches per operation, the process's context switches and CPU µs per operation
(helpers included), whether every run verified, and the engine over the table's first engine as
the analysis decided it. Usage: python3 bench/threads-summary.py [bench/threads]
"""
import os
import sys

import ringside_analysis as ringside

out = sys.argv[1] if len(sys.argv) > 1 else "bench/threads"


def table(study, title, per_fsync):
    print(f"\n### {title}\n")
    paths = {depth: os.path.join(out, f"{study}-d{depth}.json") for depth in [8, 32, 128]}
    ringside.helpers_table({depth: ringside.report(path) for depth, path in paths.items()
                            if os.path.exists(path)}, per_fsync)


table("write", "fs write: 256 MiB in 4 KiB buffered writes, overwritten, fsync at the end", False)
table("cycle", "fs cycle: 32,768 pages of write 4 KiB, fsync, read back (128 MiB, overwritten)", True)
