#!/usr/bin/env python3
"""The tables of bench/read.md from bench/read/ (bench/read.sh's raw data).

parity: per mode and depth, ringside's engine and fio's job for the same API (threads : psync
numjobs=depth, libaio : libaio, uring-ring : io_uring iodepth=depth), the median of the rounds'
reads/s with its range, and engine / fio: the ratio of the medians with the range of the
rounds' own ratios (each round ran both back to back). fixes: the engines before and after
this branch's fixes. study: every engine at every depth, warm, cold and direct.
Usage: python3 bench/read-summary.py [bench/read] [MORE_DIRS...]: the parity rounds of the same
mode in several directories (holds of the quiet lock) are pooled into one table.
"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "bench/read"
more = sys.argv[2:]
DEPTHS = [1, 4, 16, 64, 128]
PAIRS = [("threads", "psync"), ("libaio", "libaio"), ("uring-ring", "io_uring"),
         ("uring-defer", "io_uring-fixed")]


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
    paths = [p for d in [out, *more]
             for p in glob.glob(os.path.join(d, f"parity-{mode}-ringside-d*-r*.json"))]
    if not paths:
        return
    # A round is (directory, number): each directory is one hold of the quiet lock.
    rounds = sorted({(os.path.dirname(p), int(p.rsplit("-r", 1)[1].split(".")[0])) for p in paths})
    print(f"\n### ringside ÷ fio, {mode} (reads/s, median of {len(rounds)} rounds, min–max)\n")
    print("| depth | engine | ringside reads/s | CPU µs/read | fio job | fio reads/s | "
          "fio CPU µs/read | ringside ÷ fio: median (rounds' min–max) |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in DEPTHS:
        for engine, fio_engine in PAIRS:
            ours, theirs, ratios, cpu, fio_cpu = [], [], [], [], []
            for where, run in rounds:
                ringside = os.path.join(where, f"parity-{mode}-ringside-d{depth}-r{run}.json")
                fio = os.path.join(where, f"parity-{mode}-fio-{fio_engine}-d{depth}-r{run}.json")
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


def submit():
    """Each read submitted as its slot frees (after) against one submit per refill (before)."""
    if not glob.glob(os.path.join(out, "submit-*-r*.json")):
        return
    print("\n### One submit per refill (before) and one per read (after), both on one CPU "
          "(reads/s, median of the rounds, min–max)\n")
    print("| cache | engine | depth | before | CPU µs/read | after | CPU µs/read | syscalls/read "
          "before → after | after ÷ before: median (rounds' min–max) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode in ["direct", "warm"]:
        cells = {}
        for which in ["before", "after"]:
            for path in sorted(glob.glob(os.path.join(out, f"submit-{mode}-{which}-r*.json"))):
                run = int(path.rsplit("-r", 1)[1].split(".")[0])
                for row in load(path)["results"]:
                    assert row["verified"], f"{path}: {row['engine']} not verified"
                    key = (row["engine"], row["params"]["depth"])
                    cells.setdefault(key, {}).setdefault(which, {})[run] = row
        for (engine, depth), runs in sorted(cells.items(), key=lambda c: (c[0][0], c[0][1])):
            before, after = runs.get("before", {}), runs.get("after", {})
            if not (before and after):
                continue
            ratios = [after[r]["ops_per_sec"] / before[r]["ops_per_sec"] for r in after if r in before]
            rate = lambda side: [row["ops_per_sec"] for row in side.values()]
            cpu = lambda side: statistics.median(cpu_per_read(row) for row in side.values())
            calls = lambda side: statistics.median(row["syscalls"] / max(row["ops"], 1)
                                                   for row in side.values())
            ratio = statistics.median(rate(after)) / statistics.median(rate(before))
            print(f"| {mode} | {engine} | {depth} | {k(rate(before))} | {cpu(before):.2f} | "
                  f"{k(rate(after))} | {cpu(after):.2f} | {calls(before):.2f} → {calls(after):.2f} | "
                  f"**{ratio:.2f}** ({min(ratios):.2f}–{max(ratios):.2f}) |")


def cold():
    """bench/read.sh cold: ringside's pool and rings with their io_uring events, the build that
    submits every read as its slot frees, fio psync (a share per job) and io_uring."""
    paths = sorted(glob.glob(os.path.join(out, "cold-ringside-r*.json")))
    if not paths:
        return
    cells = {}
    for path in paths + sorted(glob.glob(os.path.join(out, "cold-ringside-each-r*.json"))):
        tag = "each-submit build: " if "-each-" in path else ""
        for row in load(path)["results"]:
            assert row["verified"], f"{path}: {row['engine']} not verified"
            ops = max(row["ops"], 1)
            cells.setdefault((row["params"]["depth"], tag + row["engine"]), []).append(
                (row["ops_per_sec"], cpu_per_read(row),
                 (row["ctx_switches_voluntary"] + row["ctx_switches_involuntary"]) / ops,
                 row["syscalls"] / ops, row.get("iowq_punts"), row.get("iowq_workers"),
                 row["latency_ns_p50"] / 1e3))
    for path in sorted(glob.glob(os.path.join(out, "cold-fio-*-r*.json"))):
        name = os.path.basename(path)[len("cold-fio-"):].rsplit("-r", 1)[0]
        engine, depth = name.rsplit("-d", 1)
        job = load(path)["jobs"][0]
        io = job["read"]
        jobs = int(depth) if engine == "psync" else 1
        busy = (job["usr_cpu"] + job["sys_cpu"]) / 100 * io["runtime"] / 1e3 * jobs
        with open(path[:-len(".json")] + ".perf") as handle:
            counts = {line.split(",")[2]: line.split(",")[0] for line in handle if line.count(",") > 3}
        ios = max(io["total_ios"], 1)
        cells.setdefault((int(depth), f"fio {engine}"), []).append(
            (io["iops"], busy / ios * 1e6, int(counts["context-switches"]) / ios, None,
             int(counts["io_uring:io_uring_queue_async_work"]), None,
             io["clat_ns"]["percentile"]["50.000000"] / 1e3))
    print("\n### Cold buffered reads: ringside and fio (reads/s, median of the rounds, min–max)\n")
    print("| depth | engine | reads/s | CPU µs/read | ctx switches/read | syscalls/read | "
          "io-wq punts | io-wq workers | p50 µs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (depth, engine), runs in sorted(cells.items()):
        med = lambda i: statistics.median(r[i] for r in runs)
        calls = "—" if runs[0][3] is None else f"{med(3):.2f}"
        punts = "—" if runs[0][4] is None else str(sum(r[4] for r in runs))
        workers = "—" if runs[0][5] is None else str(max(r[5] for r in runs))
        print(f"| {depth} | {engine} | {k([r[0] for r in runs])} | {med(1):.2f} | {med(2):.2f} | "
              f"{calls} | {punts} | {workers} | {med(6):.0f} |")


modes = {os.path.basename(p).split("-ringside-")[0][len("parity-"):]
         for d in [out, *more] for p in glob.glob(os.path.join(d, "parity-*-ringside-d*-r*.json"))}
for mode in sorted(modes):
    parity(mode)
fixes()
submit()
cold()
for cache in ["warm", "cold", "direct"]:
    study(cache)
