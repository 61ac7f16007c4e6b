#!/usr/bin/env python3
"""The tables of bench/read.md from bench/read/ (bench/read.sh's raw data).

parity: per mode and depth, ringside's engine and fio's job for the same API (threads : psync
numjobs=depth, libaio : libaio, uring-ring : io_uring iodepth=depth), the median of the rounds'
reads/s with its range, and engine / fio: the ratio of the medians with the range of the
rounds' own ratios (each round ran both back to back). fixes: the engines before and after
this branch's fixes. study: every engine at every depth, warm, cold and direct.
Usage: python3 bench/read-summary.py [bench/read]
"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "bench/read"
DEPTHS = [1, 4, 16, 64, 128]
PAIRS = [("threads", "psync"), ("libaio", "libaio"), ("uring-ring", "io_uring")]


def load(path):
    with open(path) as handle:
        text = handle.read()
    return json.loads(text[text.index("{"):])


def spread(values):
    return statistics.median(values), min(values), max(values)


def k(values):
    median, low, high = spread(values)
    return f"{median / 1e3:.1f}k ({low / 1e3:.1f}–{high / 1e3:.1f})"


def cpu_per_read(row):
    return (row["cpu_user_s"] + row["cpu_sys_s"]) / max(row["ops"], 1) * 1e6


def parity(mode):
    paths = glob.glob(os.path.join(out, f"parity-{mode}-ringside-d*-r*.json"))
    if not paths:
        return
    rounds = sorted({int(p.rsplit("-r", 1)[1].split(".")[0]) for p in paths})
    print(f"\n### ringside ÷ fio, {mode} (reads/s, median of {len(rounds)} rounds, min–max)\n")
    print("| depth | engine | ringside reads/s | CPU µs/read | fio job | fio reads/s | "
          "fio CPU µs/read | ringside ÷ fio: median (rounds' min–max) |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in DEPTHS:
        for engine, fio_engine in PAIRS:
            ours, theirs, ratios, cpu, fio_cpu = [], [], [], [], []
            for run in rounds:
                ringside = os.path.join(out, f"parity-{mode}-ringside-d{depth}-r{run}.json")
                fio = os.path.join(out, f"parity-{mode}-fio-{fio_engine}-d{depth}-r{run}.json")
                if not (os.path.exists(ringside) and os.path.exists(fio)):
                    continue
                rows = [r for r in load(ringside)["results"] if r["engine"] == engine]
                if not rows:
                    continue
                assert all(r["verified"] for r in rows), f"{ringside}: {engine} not verified"
                fio_job = load(fio)["jobs"][0]
                job = fio_job["read"]
                # fio's usr/sys are per cent of one CPU over the run, averaged over the jobs.
                jobs = depth if fio_engine == "psync" else 1
                busy = (fio_job["usr_cpu"] + fio_job["sys_cpu"]) / 100 * job["runtime"] / 1e3
                fio_cpu.append(busy * jobs / max(job["total_ios"], 1) * 1e6)
                ours.append(rows[0]["ops_per_sec"])
                theirs.append(job["iops"])
                ratios.append(rows[0]["ops_per_sec"] / job["iops"])
                cpu.append(cpu_per_read(rows[0]))
            if not ours:
                continue
            jobs = f"numjobs={depth}" if fio_engine == "psync" else f"iodepth={depth}"
            ratio = statistics.median(ours) / statistics.median(theirs)
            print(f"| {depth} | {engine} | {k(ours)} | {statistics.median(cpu):.2f} | "
                  f"{fio_engine} {jobs} | {k(theirs)} | {statistics.median(fio_cpu):.2f} | "
                  f"**{ratio:.2f}** "
                  f"({min(ratios):.2f}–{max(ratios):.2f}) |")


def fixes():
    paths = glob.glob(os.path.join(out, "fixes-*-r*.json"))
    if not paths:
        return
    print("\n### Before and after the fixes (reads/s, median of the rounds, min–max)\n")
    print("| cache | engine | depth | before (main) | after | after ÷ before |")
    print("|---|---|---|---|---|---|")
    for mode in ["warm", "direct"]:
        cells = {}
        for which in ["before", "after"]:
            for path in glob.glob(os.path.join(out, f"fixes-{mode}-{which}-r*.json")):
                for row in load(path)["results"]:
                    key = (row["engine"], row["params"]["depth"])
                    cells.setdefault(key, {}).setdefault(which, []).append(row["ops_per_sec"])
        for (engine, depth), runs in sorted(cells.items()):
            before, after = runs.get("before", []), runs.get("after", [])
            if before and after:
                ratio = statistics.median(after) / statistics.median(before)
                print(f"| {mode} | {engine} | {depth} | {k(before)} | {k(after)} | {ratio:.2f} |")


def study(cache):
    path = os.path.join(out, f"study-{cache}.json")
    if not os.path.exists(path):
        return
    rows = load(path)["results"]
    engines = []
    for row in rows:
        if row["engine"] not in engines:
            engines.append(row["engine"])
    print(f"\n### Random 4 KiB reads, {cache}\n")
    print("| depth | engine | reads/s median (min–max) | CPU µs/read | ctx switches/read | "
          "syscalls/read | p99 µs | verified |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in DEPTHS:
        for engine in engines:
            cell = [r for r in rows if r["engine"] == engine and r["params"]["depth"] == depth]
            if not cell:
                continue
            per_read = lambda f: statistics.median(f(r) / max(r["ops"], 1) for r in cell)
            ctx = per_read(lambda r: r["ctx_switches_voluntary"] + r["ctx_switches_involuntary"])
            p99 = statistics.median(r.get("latency_ns_p99") or 0 for r in cell) / 1e3
            verified = "yes" if all(r["verified"] for r in cell) else "NO"
            print(f"| {depth} | {engine} | {k([r['ops_per_sec'] for r in cell])} | "
                  f"{statistics.median(cpu_per_read(r) for r in cell):.2f} | {ctx:.2f} | "
                  f"{per_read(lambda r: r['syscalls']):.2f} | {p99:.0f} | {verified} |")


for mode in ["warm", "direct", "direct-noperf"]:
    parity(mode)
fixes()
for cache in ["warm", "cold", "direct"]:
    study(cache)
