#!/usr/bin/env python3
"""Checks two back-to-back `ringside run`s against issue 28's criteria, from ringside's own
verdict tables (`ringside report DIR --format csv`, `ringside compare A B --format csv`): no
figure is recomputed here.

Usage: bench/verdicts-summary.py RINGSIDE RUN1_DIR RUN2_DIR
"""
import csv
import io
import subprocess
import sys


def table(*args):
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(io.StringIO(text)))


def key(row):
    return (row["family"], row["study"], row["params"], row["subject"], row["reference"], row["metric"])


def direction(row):
    return "up" if float(row["ratio"]) > 1 else "down"


def main(ringside, run1, run2):
    one = {key(r): r for r in table(ringside, "report", run1, "--format", "csv")}
    two = {key(r): r for r in table(ringside, "report", run2, "--format", "csv")}
    both = sorted(set(one) & set(two))
    print(f"comparisons in both runs: {len(both)} (run 1 has {len(one)}, run 2 {len(two)})")

    different = [k for k in both if "different" in (one[k]["outcome"], two[k]["outcome"])]
    reversed_ = [k for k in different if one[k]["outcome"] == two[k]["outcome"] == "different"
                 and direction(one[k]) != direction(two[k])]
    agree = [k for k in different
             if (one[k]["outcome"] == two[k]["outcome"] == "different" and k not in reversed_)
             or "undecided" in (one[k]["outcome"], two[k]["outcome"])]
    print(f"called different by either run: {len(different)}; reversed: {len(reversed_)}; "
          f"different in both or undecided in one: {len(agree)} "
          f"({100 * len(agree) / max(len(different), 1):.0f}%, criterion >= 90%)")
    for k in different:
        if k not in agree:
            print(f"  disagree: {k[1]} {k[3]}/{k[4]} {k[5]} ({k[0]}): "
                  f"{one[k]['outcome']} {float(one[k]['ratio']):.2f} vs "
                  f"{two[k]['outcome']} {float(two[k]['ratio']):.2f}")

    large = [k for k in both if max(abs_ratio(one[k]), abs_ratio(two[k])) >= 1.5]
    large_decided = [k for k in large if one[k]["outcome"] == two[k]["outcome"] == "different"]
    print(f"differences of 1.5x or more: {len(large)}; decided in both: {len(large_decided)}")
    for k in large:
        if k not in large_decided:
            print(f"  1.5x not decided in both: {k[1]} {k[3]}/{k[4]} {k[5]} ({k[0]}): "
                  f"{one[k]['outcome']} {float(one[k]['ratio']):.2f} vs "
                  f"{two[k]['outcome']} {float(two[k]['ratio']):.2f}")

    for name, run in (("run 1", one), ("run 2", two)):
        first = [r for r in run.values() if r["family"] == "first_screen"]
        decided = [r for r in first if r["outcome"] != "undecided"]
        print(f"{name}: first screen {len(decided)} of {len(first)} decided "
              f"({100 * len(decided) / max(len(first), 1):.0f}%, criterion >= 50%)")

    changes = table(ringside, "compare", run1, run2, "--format", "csv")
    relative = [c for c in changes if c["relative_outcome"]]
    moved = [c for c in relative if c["relative_outcome"] == "different"]
    print(f"compare: {len(moved)} of {len(relative)} relative comparisons different "
          f"({100 * len(moved) / max(len(relative), 1):.1f}%, criterion <= 5%)")
    for c in moved:
        print(f"  {c['study']} {c['engine']} {c['unit']}: x{float(c['relative_ratio']):.2f} "
              f"[{c['relative_low']}-{c['relative_high']}]")
    absolute = [c for c in changes if c["outcome"] == "different"]
    machine = [c for c in changes if "machine" in c["verdict"]]
    print(f"compare: {len(absolute)} of {len(changes)} absolute comparisons different; "
          f"{len(machine)} named the machine's")


def abs_ratio(row):
    ratio = float(row["ratio"])
    return max(ratio, 1 / ratio) if ratio > 0 else float("inf")


if __name__ == "__main__":
    main(*sys.argv[1:4])
