#!/usr/bin/env python3
"""The tables of bench/files.md from bench/files/ (bench/files.sh's raw data), from ringside's
analysis: each cache state's three rounds pooled into one document with fio's jobs of the same
rounds as controls (fio's own figures; its psync job's CPU counted for all its jobs), handed to
`ringside report --format json`.

Reads: per cache state, depth and engine, the rounds' reads/s median with its range, CPU µs,
context switches and syscalls per read, p99; then ringside's engine over fio's job for its API
(threads : psync numjobs=depth, libaio : libaio, uring-ring : io_uring) as the analysis decides
it, paired round by round. Cycle: threads against uring-link at each depth, with device flushes
per fsync. Usage: python3 bench/files-summary.py [bench/files]
"""
import glob
import os
import sys

import ringside_analysis as ringside

out = sys.argv[1] if len(sys.argv) > 1 else "bench/files"
DEPTHS = [1, 4, 16, 64, 128]
EQUIVALENT = {"threads": "psync", "libaio": "libaio", "uring-ring": "io_uring"}


def document(mode):
    """The cache state's rounds, fio's jobs of each round added as controls."""
    pooled = ringside.pooled(sorted(glob.glob(os.path.join(out, f"read-{mode}-r*.json"))))
    for path in sorted(glob.glob(os.path.join(out, f"fio-{mode}-*-d*-r*.json"))):
        name, run = os.path.basename(path)[len(f"fio-{mode}-"):-len(".json")].rsplit("-r", 1)
        fio, depth = name.rsplit("-d", 1)
        params = next(r["params"] for r in pooled["results"]
                      if r["run"] == int(run) and r["params"]["depth"] == int(depth))
        jobs = int(depth) if fio == "psync" else 1
        pooled["results"].append(ringside.fio_control(ringside.load(path), "fs-read", f"fio {fio}",
                                                      params, int(run), jobs))
    return pooled


def reads(mode):
    pooled = document(mode)
    analysis = ringside.report(pooled)
    print(f"\n### Random 4 KiB reads, {mode}\n")
    print("| engine | depth | reads/s median (min–max) | CPU µs/read | ctx switches/read | "
          "syscalls/read | p99 µs | verified |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in DEPTHS:
        for study in ringside.studies(analysis, depth=depth):
            for engine in study["engines"]:
                control = engine["control"]
                name = engine["engine"] + (" (control)" if control else "")
                p99 = engine["p99_us"] and engine["p99_us"]["median"]
                verified = "control" if control else "yes" if engine["verified"] else "NO"
                calls = engine["syscalls_per_op"] and engine["syscalls_per_op"]["median"]
                print(f"| {name} | {depth} | "
                      f"{ringside.spread(engine['throughput'], 1, 1e-3, unit='k')} | "
                      f"{engine['cpu_us_per_op']['median']:.2f} | "
                      f"{ringside.number(engine['counted']['ctx_switches_per_op'])} | "
                      f"{ringside.number(calls)} | {ringside.number(p99, 0)} | {verified} |")
    print(f"\n#### ringside against fio, {mode} (ringside's engine over fio's job, paired by round)\n")
    print("| depth | " + " | ".join(f"{e} over fio {f}" for e, f in EQUIVALENT.items()) + " |")
    print("|---|" + "---|" * len(EQUIVALENT))
    for depth in DEPTHS:
        cells = [ringside.ratio(ringside.over_control(
                     pooled, engine, f"fio {fio}", lambda r: r["params"]["depth"] == depth))
                 for engine, fio in EQUIVALENT.items()]
        print(f"| {depth} | " + " | ".join(cells) + " |")


for mode in ["warm", "direct"]:
    if glob.glob(os.path.join(out, f"read-{mode}-r*.json")):
        reads(mode)
cycles = {depth: os.path.join(out, f"cycle-d{depth}.json") for depth in [8, 32, 128]}
if any(os.path.exists(path) for path in cycles.values()):
    print("\n### Page cycle (128 MiB, 32768 pages of write 4 KiB, fsync, read back)\n")
    ringside.helpers_table({depth: ringside.report(path) for depth, path in cycles.items()
                            if os.path.exists(path)}, True)
