#!/usr/bin/env python3
"""Tables for bench/peers-fs.sh: seed 000's page-cycle demos against ringside's cycle engines.

Reads OUTDIR/{placement}-r{round}-{name}.{txt,json}. The demos run 5 times per process: run 1 on a
freshly truncated file, runs 2-5 overwriting it; ringside's rows all overwrite (it lays the file
out first), so the comparison is ringside against the demos' runs 2-5. Prints Markdown: per
placement, every program's seconds (median, min-max over all rounds), flushes per fsync, and the
ratio of ringside's time to the demo's within each round (median and range of the rounds).
"""
import glob
import json
import os
import re
import statistics
import sys

LINE = re.compile(r"fs (io_uring|blocking): .* = (\d+) syscalls: (\d+)ms")
PAGES = 65536


def demo(path):
    """Seconds of each run in one demo process, and the device flushes it caused."""
    runs, flushes = [], None
    for line in open(path):
        match = LINE.search(line)
        if match:
            runs.append(int(match.group(3)) / 1e3)
        elif line.startswith("device_flushes:"):
            flushes = int(line.split()[1])
    return runs, flushes


def spread(values):
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main(out):
    placements = sorted({os.path.basename(p).split("-r")[0] for p in glob.glob(f"{out}/*-r*-*")})
    for placement in placements:
        rounds = sorted({int(re.search(r"-r(\d+)-", p).group(1))
                         for p in glob.glob(f"{out}/{placement}-r*")})
        table = {}  # name -> {"overwrite": [...], "fresh": [...], "flush": [...], "rounds": {r: median}}
        for r in rounds:
            for name in ("fs_io_uring", "fs_blocking"):
                path = f"{out}/{placement}-r{r}-{name}.txt"
                if not os.path.exists(path):
                    continue
                runs, flushes = demo(path)
                entry = table.setdefault(name, {"overwrite": [], "fresh": [], "flush": [], "rounds": {}})
                entry["fresh"] += runs[:1]
                entry["overwrite"] += runs[1:]
                if runs[1:]:
                    entry["rounds"][r] = statistics.median(runs[1:])
                if flushes is not None and runs:
                    entry["flush"].append(flushes / (PAGES * len(runs)))
            for kind in ("ringside-uring", "ringside-blocking"):
                path = f"{out}/{placement}-r{r}-{kind}.json"
                if not os.path.exists(path):
                    continue
                for row in json.load(open(path))["results"]:
                    name = "ringside " + row["engine"]
                    entry = table.setdefault(name, {"overwrite": [], "fresh": [], "flush": [], "rounds": {}, "ok": True})
                    entry["overwrite"].append(row["seconds"])
                    entry["ok"] = entry["ok"] and row["verified"]
                    if row.get("device_flushes") is not None:
                        entry["flush"].append(row["device_flushes"] / row["ops"])
                    entry.setdefault("per_round", {}).setdefault(r, []).append(row["seconds"])
        for entry in table.values():
            for r, values in entry.pop("per_round", {}).items():
                entry["rounds"][r] = statistics.median(values)
        print(f"\n### {placement}: seconds for 65536 pages (median, min-max), {len(rounds)} rounds\n")
        print("| program | overwrite runs | seconds | fresh file (run 1) | flushes per fsync | "
              "ratio to its demo, per round | verified |")
        print("|---|---|---|---|---|---|---|")
        for name, entry in table.items():
            demo_name = "fs_blocking" if name.endswith("blocking") else "fs_io_uring"
            ratio = "-"
            if name.startswith("ringside") and demo_name in table:
                ratios = [entry["rounds"][r] / table[demo_name]["rounds"][r]
                          for r in entry["rounds"] if r in table[demo_name]["rounds"]]
                ratio = spread(ratios) + "x" if ratios else "-"
            verified = "yes" if entry.get("ok", True) else "NO"
            if not name.startswith("ringside"):
                verified = "not checked"
            flush = f"{statistics.median(entry['flush']):.2f}" if entry["flush"] else "-"
            print(f"| {name} | {len(entry['overwrite'])} | {spread(entry['overwrite'])} | "
                  f"{spread(entry['fresh'])} | {flush} | {ratio} | {verified} |")
    print("\nDemo flushes per fsync are per process (5 runs, the first on a fresh file).")


if __name__ == "__main__":
    main(sys.argv[1])
