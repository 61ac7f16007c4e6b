#!/usr/bin/env python3
"""The tables of bench/read.md's third session from `bench/read.sh kept` (bench/read/third/),
from ringside's analysis: no figure is computed here.

Per depth and engine: ringside reading the kept file, ringside laying out its own scratch file,
and fio's job for the same API reading the kept file, each of ringside's with fio's job of the
same round in one document (fio's as a control): the medians and ranges of the rounds, ringside
over fio paired round by round (each round ran them back to back) with its interval and
outcome, and how many runs fell in the device's slow state (reads/s under SLOW[depth]: a count).
Usage: python3 bench/read-kept.py DIR [MORE_DIRS...] (rounds of several holds pooled).
With --parity first: how many of `bench/read.sh parity direct` runs (READ_CPU=1, no syscall
counter) at depths 4 and 16 fell in the slow state, ringside's against fio's, in those dirs, and
ringside over fio over the rounds where both ran fast (and where both ran slow), every engine's
pair of a round one pair of the comparison.
"""
import glob
import os
import sys

import ringside_analysis as ringside

parity_mode = sys.argv[1:2] == ["--parity"]
dirs = sys.argv[1 + parity_mode:] or ["bench/read/third"]
PAIRS = [("threads", "psync"), ("libaio", "libaio"), ("uring-ring", "io_uring"),
         ("uring-defer", "io_uring-fixed")]
# The slow state's ceiling (bench/read.md: at depth 4 a run reads 32-40k or 45-61k, at 16
# 69-88k or 93-120k).
SLOW = {4: 42e3, 16: 90e3}


def rate(path, engine=None, depth=None):
    """A run's reads/s as its row or fio's job reported it."""
    document = ringside.load(path)
    if "jobs" in document:
        return document["jobs"][0]["read"]["iops"]
    return next(r["ops_per_sec"] for r in document["results"]
                if r["engine"] == engine and r["params"]["depth"] == depth)


def slow(values, depth):
    return f"{sum(v < SLOW[depth] for v in values)}/{len(values)}"


def k(figure):
    return ringside.spread(figure, 1, 1e-3, unit="k")


def run_of(path):
    return int(path.rsplit("-r", 1)[1].split(".")[0])


def parity_slow():
    """Slow runs of each program at depths 4 and 16 in the parity files of `dirs`, and ringside
    over fio over the rounds' engine pairs where both ran in the same state."""
    tag = "parity-direct-noperf-cpu1"
    print("| depth | rounds | ringside runs in the slow state | fio runs in the slow state | "
          "ringside over fio, both fast | both slow |")
    print("|---|---|---|---|---|---|")
    for depth in (4, 16):
        ours, theirs, rounds = [], [], 0
        states = {"fast": [], "slow": []}
        for path in sorted(p for d in dirs
                           for p in glob.glob(os.path.join(d, f"{tag}-ringside-d{depth}-r*.json"))):
            fio_paths = [path.replace("-ringside-", f"-fio-{e}-") for _, e in PAIRS]
            if not all(os.path.exists(p) for p in fio_paths):
                continue
            rounds += 1
            for (engine, _), fio_path in zip(PAIRS, fio_paths):
                a, b = rate(path, engine, depth), rate(fio_path)
                ours.append(a)
                theirs.append(b)
                if (a < SLOW[depth]) == (b < SLOW[depth]):
                    state = "slow" if a < SLOW[depth] else "fast"
                    states[state].append((path, fio_path, engine))
        shown = []
        for pairs in states.values():
            # Each engine's pair of a round is one pair of the comparison: the rows named
            # "ringside" and "fio" whatever their API, numbered pair by pair.
            rows, first = [], None
            for index, (path, fio_path, engine) in enumerate(pairs, 1):
                document, found = ringside.fio_rounds([(path, fio_path)], engine, "fio", 1,
                                                      ("ringside", "fio"))
                first = first or document
                rows += [dict(r, run=index) for r in found]
            analysis = ringside.report(dict(first, results=rows)) if rows else None
            over = analysis and ringside.decided(analysis, analysis["studies"][0], "ringside", "fio")
            shown.append(ringside.ratio(over))
        print(f"| {depth} | {rounds} | {slow(ours, depth)} | {slow(theirs, depth)} | "
              f"{shown[0]} | {shown[1]} |")


def kept():
    rounds = sorted({(d, run_of(p)) for d in dirs
                     for p in glob.glob(os.path.join(d, "kept-ringside-kept-r*.json"))})
    print(f"\n{len(rounds)} rounds; slow state: under {SLOW[4] / 1e3:.0f}k at depth 4, "
          f"{SLOW[16] / 1e3:.0f}k at 16\n")
    print("| depth | engine | ringside, kept file | slow | ringside, fresh scratch file | slow | "
          "fio job | fio reads/s (kept file) | slow | kept over fio, paired | scratch over fio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for depth in (4, 16):
        for engine, fio_engine in PAIRS:
            found = {}
            for which in ("kept", "scratch"):
                pairs = [(os.path.join(where, f"kept-ringside-{which}-r{run}.json"),
                          os.path.join(where, f"kept-fio-{fio_engine}-d{depth}-r{run}.json"))
                         for where, run in rounds]
                pairs = [p for p in pairs if all(map(os.path.exists, p))]
                # Each document holds both depths: this depth's rows only.
                document, rows = ringside.fio_rounds(
                    pairs, engine, f"fio {fio_engine}", depth if fio_engine == "psync" else 1,
                    keep=lambda row: row["params"]["depth"] == depth)
                analysis = ringside.report(dict(document, results=rows))
                study = analysis["studies"][0]
                found[which] = (ringside.engine_of(study, engine),
                                ringside.engine_of(study, f"fio {fio_engine}"),
                                ringside.decided(analysis, study, engine, f"fio {fio_engine}"),
                                [rate(p, engine, depth) for p, _ in pairs],
                                [rate(f) for _, f in pairs])
            kept_, scratch = found["kept"], found["scratch"]
            jobs = f"numjobs={depth}" if fio_engine == "psync" else f"iodepth={depth}"
            print(f"| {depth} | {engine} | {k(kept_[0]['throughput'])} | {slow(kept_[3], depth)} | "
                  f"{k(scratch[0]['throughput'])} | {slow(scratch[3], depth)} | "
                  f"{fio_engine} {jobs} | {k(kept_[1]['throughput'])} | {slow(kept_[4], depth)} | "
                  f"**{ringside.ratio(kept_[2])}** | {ringside.ratio(scratch[2])} |")


if parity_mode:
    parity_slow()
else:
    kept()
