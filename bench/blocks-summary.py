#!/usr/bin/env python3
"""Summarises bench/blocks.sh: per study kind (cycle, read) and binary (before: one file for
the whole study; after: a fresh file per block of 4 rounds), each comparison's per-round log
ratio to blocking: its spread within a study (SD), the share of that variance between blocks
(one-way ANOVA over the blocks), the difference between the two studies of a back-to-back
pair, and the first round of a block against the others (what the refresh itself does to the
round after it); the studies' wall time and the refreshes' own time from the progress lines.
Usage: bench/blocks-summary.py OUT_DIR"""
import json
import math
import pathlib
import re
import statistics
import sys

out = pathlib.Path(sys.argv[1])
BLOCK = 4


def hl(values):
    """Hodges-Lehmann estimate: the median of the Walsh averages."""
    walsh = [(a + b) / 2 for i, a in enumerate(values) for b in values[i:]]
    return statistics.median(walsh)


def log_ratios(rows):
    """{(engine, depth): {run: log(engine / blocking)}} over the timed rows."""
    by = {}
    for row in rows:
        if row.get("attribution") or row.get("failure") or not row.get("verified"):
            continue
        by.setdefault(row["run"], {})[row["engine"]] = row["ops_per_sec"]
    ratios = {}
    for run, engines in by.items():
        base = engines.get("blocking")
        if not base:
            continue
        for engine, value in engines.items():
            if engine != "blocking" and value > 0:
                ratios.setdefault(engine, {})[run] = math.log(value / base)
    return ratios


def between_share(series):
    """Variance between blocks (ANOVA estimate of its component) and within them."""
    blocks = {}
    for run, value in series.items():
        blocks.setdefault((run - 1) // BLOCK, []).append(value)
    groups = [g for g in blocks.values() if len(g) >= 2]
    if len(groups) < 2:
        return float("nan"), float("nan")
    n = statistics.mean(len(g) for g in groups)
    grand = statistics.mean(v for g in groups for v in g)
    msb = sum(len(g) * (statistics.mean(g) - grand) ** 2 for g in groups) / (len(groups) - 1)
    msw = statistics.mean(statistics.variance(g) for g in groups)
    return max(0.0, (msb - msw) / n), msw


studies = {}
for path in sorted(out.glob("*.json")):
    kind, label, pair = path.stem.split("-")
    rows = json.loads(path.read_text())["results"]
    studies.setdefault((kind, label), {})[pair] = log_ratios(rows)

times = {}
for line in (out / "times.txt").read_text().splitlines():
    kind, label, _pair, seconds, _ = line.split()
    times.setdefault((kind, label), []).append(float(seconds))
refresh = {}
for path in out.glob("*-after-*.log"):
    kind = path.stem.split("-")[0]
    for laid, removed in re.findall(r"laid out in (\d+) ms, the old one removed in (\d+) ms",
                                    path.read_text()):
        refresh.setdefault(kind, []).append((int(laid), int(removed)))

print("| study | binary | comparison | SD of round log ratios | between-block share | "
      "|pair difference| of HL (log) | first round of a block − others (log) |")
print("|---|---|---|---|---|---|---|")
summary = {}
for (kind, label), pairs in sorted(studies.items()):
    engines = sorted({e for ratios in pairs.values() for e in ratios})
    for engine in engines:
        sds, shares, firsts = [], [], []
        estimates = {}
        for pair, ratios in pairs.items():
            series = ratios.get(engine, {})
            if len(series) < 8:
                continue
            values = list(series.values())
            sds.append(statistics.stdev(values))
            between, within = between_share(series)
            if not math.isnan(between):
                shares.append(between / (between + within) if between + within > 0 else 0.0)
            first = [v for r, v in series.items() if (r - 1) % BLOCK == 0]
            rest = [v for r, v in series.items() if (r - 1) % BLOCK != 0]
            firsts.append(statistics.mean(first) - statistics.mean(rest))
            estimates[pair] = hl(values)
        diffs = []
        for pair in {p[:-1] for p in estimates}:
            a, b = estimates.get(pair + "a"), estimates.get(pair + "b")
            if a is not None and b is not None:
                diffs.append(abs(a - b))
        summary.setdefault((kind, label), []).append((sds, shares, diffs))
        print(f"| {kind} | {label} | {engine}/blocking | "
              f"{statistics.median(sds):.3f} | {statistics.median(shares):.2f} | "
              + ", ".join(f"{d:.3f}" for d in diffs)
              + f" | {statistics.mean(firsts):+.3f} |")

print()
print("| study | binary | median SD | median between-block share | mean |pair difference| "
      "| studies | wall time median (min–max) s |")
print("|---|---|---|---|---|---|---|")
for (kind, label), parts in sorted(summary.items()):
    sds = [s for p in parts for s in p[0]]
    shares = [s for p in parts for s in p[1]]
    diffs = [d for p in parts for d in p[2]]
    wall = times.get((kind, label), [])
    print(f"| {kind} | {label} | {statistics.median(sds):.3f} | {statistics.median(shares):.2f} "
          f"| {statistics.mean(diffs):.3f} | {len(wall)} | {statistics.median(wall):.1f} "
          f"({min(wall):.1f}–{max(wall):.1f}) |")
print()
for kind, values in sorted(refresh.items()):
    laid = [v[0] for v in values]
    removed = [v[1] for v in values]
    print(f"{kind}: {len(values)} refreshes, laid out {statistics.median(laid)} ms median "
          f"({min(laid)}–{max(laid)}), old file removed {statistics.median(removed)} ms median "
          f"({min(removed)}–{max(removed)})")
