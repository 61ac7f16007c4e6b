#!/usr/bin/env python3
"""The tables of bench/files.md from bench/files/ (bench/files.sh's raw data).

Reads: per cache state, engine and depth, the median of the rounds' reads/s with its range,
CPU µs, context switches and syscalls per read, p99; fio's controls beside them with the
ratio of ringside's equivalent engine to fio's (threads : psync numjobs=depth, libaio :
libaio, uring-ring : io_uring). Cycle: threads against uring-link at each depth, with device
flushes per fsync. Usage: python3 bench/files-summary.py [bench/files]
"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "bench/files"
DEPTHS = [1, 4, 16, 64, 128]
EQUIVALENT = {"threads": "psync", "libaio": "libaio", "uring-ring": "io_uring"}


def median_range(values):
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def fmt_k(spread):
    if spread is None:
        return "—"
    median, low, high = spread
    return f"{median / 1e3:.1f}k ({low / 1e3:.1f}–{high / 1e3:.1f})"


def ringside_rows(pattern):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, pattern))):
        with open(path) as handle:
            rows.extend(json.load(handle)["results"])
    return rows


def fio_iops(mode, engine, depth):
    values = []
    for path in sorted(glob.glob(os.path.join(out, f"fio-{mode}-{engine}-d{depth}-r*.json"))):
        with open(path) as handle:
            text = handle.read()
        job = json.loads(text[text.index("{"):])["jobs"][0]
        values.append((job["read"]["iops"], job["ctx"] / max(job["read"]["total_ios"], 1)))
    return values


def reads(mode):
    rows = ringside_rows(f"read-{mode}-r*.json")
    engines = []
    for row in rows:
        if row["engine"] not in engines:
            engines.append(row["engine"])
    print(f"\n### Random 4 KiB reads, {mode}\n")
    print("| engine | depth | reads/s median (min–max) | CPU µs/read | ctx switches/read | "
          "syscalls/read | p99 µs | verified |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in DEPTHS:
        for engine in engines:
            cell = [r for r in rows if r["engine"] == engine and r["params"]["depth"] == depth]
            if not cell:
                continue
            ops = [r["ops_per_sec"] for r in cell]
            cpu = statistics.median(
                (r["cpu_user_s"] + r["cpu_sys_s"]) / max(r["ops"], 1) * 1e6 for r in cell)
            ctx = statistics.median(
                (r["ctx_switches_voluntary"] + r["ctx_switches_involuntary"]) / max(r["ops"], 1)
                for r in cell)
            sys_ = statistics.median(r["syscalls"] / max(r["ops"], 1) for r in cell)
            p99 = statistics.median(r.get("latency_ns_p99", 0) for r in cell) / 1e3
            verified = all(r["verified"] for r in cell)
            print(f"| {engine} | {depth} | {fmt_k(median_range(ops))} | {cpu:.2f} | {ctx:.2f} | "
                  f"{sys_:.2f} | {p99:.0f} | {'yes' if verified else 'NO'} |")
        for fio in ["psync", "libaio", "io_uring"]:
            values = fio_iops(mode, fio, depth)
            if values:
                ctx = statistics.median(v[1] for v in values)
                print(f"| fio {fio} (control) | {depth} | "
                      f"{fmt_k(median_range([v[0] for v in values]))} | — | {ctx:.2f} | — | — | — |")
    print(f"\n#### ringside against fio, {mode} (median reads/s, ringside ÷ fio)\n")
    print("| depth | " + " | ".join(f"{e} ÷ fio {f}" for e, f in EQUIVALENT.items()) + " |")
    print("|---|" + "---|" * len(EQUIVALENT))
    for depth in DEPTHS:
        cells = []
        for engine, fio in EQUIVALENT.items():
            ours = [r["ops_per_sec"] for r in rows
                    if r["engine"] == engine and r["params"]["depth"] == depth]
            theirs = [v[0] for v in fio_iops(mode, fio, depth)]
            if ours and theirs:
                ratio = statistics.median(ours) / statistics.median(theirs)
                cells.append(f"{ratio:.2f}")
            else:
                cells.append("—")
        print(f"| {depth} | " + " | ".join(cells) + " |")


def cycle():
    print("\n### Page cycle (128 MiB, 32768 pages of write 4 KiB, fsync, read back)\n")
    print("| depth | engine | seconds median (min–max) | device flushes per fsync | "
          "pool or io-wq threads | their ctx switches per page | CPU µs/page | verified |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in [8, 32, 128]:
        rows = ringside_rows(f"cycle-d{depth}.json")
        for engine in ["threads", "uring-link"]:
            cell = [r for r in rows if r["engine"] == engine]
            if not cell:
                continue
            seconds = median_range([r["seconds"] for r in cell])
            flushes = statistics.median(
                (r.get("device_flushes") or 0) / max(r["ops"], 1) for r in cell)
            threads = statistics.median(
                r.get("pool_threads") or r.get("iowq_workers") or 0 for r in cell)
            helper_ctx = statistics.median(
                (r.get("pool_ctx_switches") or r.get("iowq_ctx_switches") or 0) / max(r["ops"], 1)
                for r in cell)
            cpu = statistics.median(
                (r["cpu_user_s"] + r["cpu_sys_s"]) / max(r["ops"], 1) * 1e6 for r in cell)
            verified = all(r["verified"] for r in cell)
            print(f"| {depth} | {engine} | {seconds[0]:.2f} ({seconds[1]:.2f}–{seconds[2]:.2f}) | "
                  f"{flushes:.2f} | {threads:.0f} | {helper_ctx:.2f} | {cpu:.1f} | "
                  f"{'yes' if verified else 'NO'} |")


for mode in ["warm", "direct"]:
    if glob.glob(os.path.join(out, f"read-{mode}-r*.json")):
        reads(mode)
if glob.glob(os.path.join(out, "cycle-d*.json")):
    cycle()
