#!/usr/bin/env python3
"""Checks the equal-load sweeps of two back-to-back `ringside run`s against issue 29's criteria,
from ringside's own report (`report.md`'s equal-load sections, `ringside report DIR --format
csv`): no figure is recomputed here.

Usage: bench/equal-load-summary.py RINGSIDE RUN1_DIR RUN2_DIR
"""
import csv
import io
import re
import subprocess
import sys


def sections(report):
    """The report's equal-load sections: title -> (ceilings paragraph, table rows)."""
    found = {}
    for part in re.split(r"^## ", report, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        if not title.endswith("at equal load"):
            continue
        paragraphs = [p.strip() for p in body.split("\n\n") if p.strip()]
        ceilings = next((p for p in paragraphs if p.startswith("Points at")), "(no points)")
        rows = []
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) >= 9 and re.fullmatch(r"\d+", cells[0]):
                rows.append(cells)
        found[title] = (ceilings, rows)
    return found


def verdicts(ringside, run):
    text = subprocess.run([ringside, "report", run, "--format", "csv"], check=True,
                          capture_output=True, text=True).stdout
    return [r for r in csv.DictReader(io.StringIO(text))
            if r["family"] == "first_screen" and r["study"].endswith("at equal load")]


def main(ringside, *runs):
    outcomes = {}
    for run in runs:
        print(f"== {run}")
        with open(f"{run}/report.md") as file:
            found = sections(file.read())
        for title, (ceilings, rows) in found.items():
            print(f"{title}\n  {ceilings}")
            header_held = 8  # offered, engine, achieved, cpu, range, server cpu, p50, p99, held
            points = sorted({int(r[0]) for r in rows})
            for point in points:
                at = [r for r in rows if int(r[0]) == point]
                held = [r[1] for r in at if r[header_held].startswith("yes")]
                missed = [r[1] for r in at if not r[header_held].startswith("yes")]
                runs_there = max(int(r[9]) for r in at) if len(at[0]) > 9 else 1
                print(f"  {point:>7}/s: held by {len(held)} of {len(at)}"
                      + (f" (not: {', '.join(missed)})" if missed else "")
                      + f"; runs up to {runs_there}")
        for row in verdicts(ringside, run):
            interval = (f"[{float(row['low']):.2f}-{float(row['high']):.2f}]"
                        if row["low"] else "no interval")
            print(f"  verdict {row['study']}: {row['subject']} over {row['reference']} "
                  f"{row['metric']} {float(row['ratio']):.2f}x {interval}, {row['rounds']} rounds: "
                  f"{row['outcome']} ({row['params']})")
            key = (row["study"], row["subject"], row["reference"], row["metric"])
            outcomes.setdefault(key, []).append((row["outcome"], float(row["ratio"])))
    print("== the runs' equal-load verdicts side by side")
    for key, seen in outcomes.items():
        words = [f"{outcome} {ratio:.2f}x" for outcome, ratio in seen]
        different = [ratio for outcome, ratio in seen if outcome == "different"]
        reversed_ = len(different) == 2 and (different[0] > 1) != (different[1] > 1)
        print(f"  {key[0]}: {key[1]}/{key[2]} {key[3]}: {' | '.join(words)}"
              + ("  REVERSED" if reversed_ else ""))


if __name__ == "__main__":
    main(*sys.argv[1:])
