#!/usr/bin/env python3
"""The tables of bench/read.md's third session from `bench/read.sh kept` (bench/read/third/).

Per depth and engine: ringside reading the kept file, ringside laying out its own scratch file,
and fio's job for the same API reading the kept file; medians of the rounds with their ranges,
ringside ÷ fio (ratio of the medians, and the rounds' own ratios' range: each round ran them
back to back), and how many runs fell in the device's slow state (reads/s under SLOW[depth]).
Usage: python3 bench/read-kept.py DIR [MORE_DIRS...] (rounds of several holds pooled).
With --parity first: how many of `bench/read.sh parity direct` runs (READ_CPU=1, no syscall
counter) at depths 4 and 16 fell in the slow state, ringside's against fio's, in those dirs.
"""
import glob
import json
import os
import statistics
import sys

parity_mode = sys.argv[1:2] == ["--parity"]
dirs = sys.argv[1 + parity_mode:] or ["bench/read/third"]
PAIRS = [("threads", "psync"), ("libaio", "libaio"), ("uring-ring", "io_uring"),
         ("uring-defer", "io_uring-fixed")]
# The slow state's ceiling (bench/read.md: at depth 4 a run reads 32-40k or 45-61k, at 16
# 69-88k or 93-120k).
SLOW = {4: 42e3, 16: 90e3}


def load(path):
    with open(path) as handle:
        text = handle.read()
    return json.loads(text[text.index("{"):])


def k(values):
    return (f"{statistics.median(values) / 1e3:.1f}k "
            f"({min(values) / 1e3:.1f}–{max(values) / 1e3:.1f})")


def slow(values, depth):
    return f"{sum(v < SLOW[depth] for v in values)}/{len(values)}"


def parity_slow():
    """Slow runs of each program at depths 4 and 16 in the parity files of `dirs`, and
    ringside ÷ fio over the rounds' engine pairs where both ran in the same state."""
    tag = "parity-direct-noperf-cpu1"
    print("| depth | rounds | ringside runs in the slow state | fio runs in the slow state | "
          "ringside ÷ fio, both fast: median (min–max), pairs | both slow |")
    print("|---|---|---|---|---|---|")
    for depth in (4, 16):
        ours, theirs, fast, slowed, rounds = [], [], [], [], 0
        for path in sorted(p for d in dirs
                           for p in glob.glob(os.path.join(d, f"{tag}-ringside-d{depth}-r*.json"))):
            fio_paths = [path.replace("-ringside-", f"-fio-{e}-") for _, e in PAIRS]
            if not all(os.path.exists(p) for p in fio_paths):
                continue
            rounds += 1
            rates = {r["engine"]: r["ops_per_sec"] for r in load(path)["results"]}
            for (engine, _), fio_path in zip(PAIRS, fio_paths):
                a, b = rates[engine], load(fio_path)["jobs"][0]["read"]["iops"]
                ours.append(a)
                theirs.append(b)
                if (a < SLOW[depth]) == (b < SLOW[depth]):
                    (slowed if a < SLOW[depth] else fast).append(a / b)

        def ratios(values):
            if not values:
                return "—, 0"
            return (f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f}), "
                    f"{len(values)}")
        print(f"| {depth} | {rounds} | {slow(ours, depth)} | {slow(theirs, depth)} | "
              f"{ratios(fast)} | {ratios(slowed)} |")


if parity_mode:
    parity_slow()
    sys.exit(0)
rounds = sorted({(d, int(p.rsplit("-r", 1)[1].split(".")[0])) for d in dirs
                 for p in glob.glob(os.path.join(d, "kept-ringside-kept-r*.json"))})
print(f"\n{len(rounds)} rounds; slow state: under {SLOW[4] / 1e3:.0f}k at depth 4, "
      f"{SLOW[16] / 1e3:.0f}k at 16\n")
print("| depth | engine | ringside, kept file | slow | ringside, fresh scratch file | slow | "
      "fio job | fio reads/s (kept file) | slow | kept ÷ fio: median (rounds' min–max) | "
      "scratch ÷ fio |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for depth in (4, 16):
    for engine, fio_engine in PAIRS:
        kept, scratch, fio, kept_ratio, scratch_ratio = [], [], [], [], []
        for where, run in rounds:
            paths = [os.path.join(where, f"kept-ringside-{which}-r{run}.json")
                     for which in ("kept", "scratch")]
            fio_path = os.path.join(where, f"kept-fio-{fio_engine}-d{depth}-r{run}.json")
            if not all(os.path.exists(p) for p in [*paths, fio_path]):
                continue
            rates = []
            for path in paths:
                rows = [r for r in load(path)["results"]
                        if r["engine"] == engine and r["params"]["depth"] == depth]
                assert len(rows) == 1 and rows[0]["verified"], f"{path}: {engine} {depth}"
                rates.append(rows[0]["ops_per_sec"])
            theirs = load(fio_path)["jobs"][0]["read"]["iops"]
            kept.append(rates[0])
            scratch.append(rates[1])
            fio.append(theirs)
            kept_ratio.append(rates[0] / theirs)
            scratch_ratio.append(rates[1] / theirs)
        if not fio:
            continue
        jobs = f"numjobs={depth}" if fio_engine == "psync" else f"iodepth={depth}"
        median = statistics.median
        print(f"| {depth} | {engine} | {k(kept)} | {slow(kept, depth)} | {k(scratch)} | "
              f"{slow(scratch, depth)} | {fio_engine} {jobs} | {k(fio)} | {slow(fio, depth)} | "
              f"**{median(kept) / median(fio):.2f}** ({min(kept_ratio):.2f}–{max(kept_ratio):.2f}) | "
              f"{median(scratch) / median(fio):.2f} ({min(scratch_ratio):.2f}–{max(scratch_ratio):.2f}) |")
