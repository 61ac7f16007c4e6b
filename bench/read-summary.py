#!/usr/bin/env python3
"""The tables of bench/read.md from bench/read/ (bench/read.sh's raw data), from ringside's
analysis (`ringside report --format json`, `ringside compare --format json`): no figure is
computed here.

parity: per mode and depth, ringside's engine and fio's job for the same API (threads : psync
numjobs=depth, libaio : libaio, uring-ring : io_uring iodepth=depth, uring-defer :
io_uring-fixed), each round's ringside row and fio job in one document (fio's as a control, its
CPU counted for all its jobs): the medians and ranges of reads/s and CPU per read, and the
engine over fio's job paired round by round (each round ran both back to back), with its
interval and outcome. fixes and submit: the engines of two builds, each build's rounds pooled,
after over before as `compare` decides it. cold: ringside's engines and fio's jobs, round by
round in one document per build. study: every engine at every depth, warm, cold and direct.
Usage: python3 bench/read-summary.py [bench/read] [MORE_DIRS...]: the parity rounds of the same
mode in several directories (holds of the quiet lock) are pooled into one table.
"""
import glob
import os
import sys

import ringside_analysis as ringside

out = sys.argv[1] if len(sys.argv) > 1 else "bench/read"
more = sys.argv[2:]
DEPTHS = [1, 4, 16, 64, 128]
PAIRS = [("threads", "psync"), ("libaio", "libaio"), ("uring-ring", "io_uring"),
         ("uring-defer", "io_uring-fixed")]


def run_of(path):
    return int(path.rsplit("-r", 1)[1].split(".")[0])


def fio_jobs(engine, depth):
    """How many processes fio's job ran: psync one per depth, the others one."""
    return depth if engine == "psync" else 1


def k(figure):
    return ringside.spread(figure, 1, 1e-3, unit="k")


def parity(mode):
    paths = [p for d in [out, *more]
             for p in glob.glob(os.path.join(d, f"parity-{mode}-ringside-d*-r*.json"))]
    if not paths:
        return
    # A round is (directory, number): each directory is one hold of the quiet lock.
    rounds = sorted({(os.path.dirname(p), run_of(p)) for p in paths})
    print(f"\n### ringside over fio, {mode} (reads/s, median of {len(rounds)} rounds, min–max)\n")
    print("| depth | engine | ringside reads/s | CPU µs/read | fio job | fio reads/s | "
          "fio CPU µs/read | ringside over fio, paired by round |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in DEPTHS:
        for engine, fio_engine in PAIRS:
            pairs = [(os.path.join(where, f"parity-{mode}-ringside-d{depth}-r{run}.json"),
                      os.path.join(where, f"parity-{mode}-fio-{fio_engine}-d{depth}-r{run}.json"))
                     for where, run in rounds]
            found = ringside.against_fio([p for p in pairs if all(map(os.path.exists, p))],
                                         engine, f"fio {fio_engine}", fio_jobs(fio_engine, depth))
            if found is None:
                continue
            ours, theirs, over = found
            jobs = f"numjobs={depth}" if fio_engine == "psync" else f"iodepth={depth}"
            print(f"| {depth} | {engine} | {k(ours['throughput'])} | "
                  f"{ours['cpu_us_per_op']['median']:.2f} | {fio_engine} {jobs} | "
                  f"{k(theirs['throughput'])} | {theirs['cpu_us_per_op']['median']:.2f} | "
                  f"**{ringside.ratio(over)}** |")


def before_after(prefix, verified=False):
    """Each cell (engine, depth) of the before and after builds' rounds of `prefix`, each build's
    rounds pooled: (engine, depth, before's figures, after's, after over before as `compare`
    decides it on reads/s), in engine and depth order; none when a build did not run."""
    documents = {which: ringside.pooled(
                     sorted(glob.glob(os.path.join(out, f"{prefix}-{which}-r*.json"))))
                 for which in ("before", "after")}
    if not all(d and d["results"] for d in documents.values()):
        return []
    if verified:
        for document in documents.values():
            for row in document["results"]:
                assert row["verified"], f"{prefix}: {row['engine']} not verified"
    before, after = (ringside.report(documents[w]) for w in ("before", "after"))
    changes = ringside.compare(documents["before"], documents["after"])
    cells = []
    for study in before["studies"]:
        later = next((s for s in after["studies"] if s["params"] == study["params"]), None)
        for figures in study["engines"]:
            second = later and ringside.engine_of(later, figures["engine"])
            if second is None:
                continue
            change = next((r for r in changes if (r["engine"], r["params"], r["metric"])
                           == (figures["engine"], study["params"], "throughput")), None)
            depth = int(ringside.params(study)["depth"])
            cells.append((figures["engine"], depth, figures, second, change))
    return sorted(cells, key=lambda cell: cell[:2])


def fixes():
    if not glob.glob(os.path.join(out, "fixes-*-r*.json")):
        return
    print("\n### Before and after the fixes (reads/s, median of the rounds, min–max)\n")
    print("| cache | engine | depth | before (main) | after | after over before (decided) |")
    print("|---|---|---|---|---|---|")
    for mode in ["warm", "direct"]:
        for engine, depth, first, second, change in before_after(f"fixes-{mode}"):
            print(f"| {mode} | {engine} | {depth} | {k(first['throughput'])} | "
                  f"{k(second['throughput'])} | {ringside.change(change)} |")


def study(cache):
    path = os.path.join(out, f"study-{cache}.json")
    if not os.path.exists(path):
        return
    analysis = ringside.report(path)
    print(f"\n### Random 4 KiB reads, {cache}\n")
    print("| depth | engine | reads/s median (min–max) | CPU µs/read | ctx switches/read | "
          "syscalls/read | p99 µs | verified |")
    print("|---|---|---|---|---|---|---|---|")
    for depth in DEPTHS:
        for one in ringside.studies(analysis, depth=depth):
            for engine in one["engines"]:
                calls = engine["syscalls_per_op"] and engine["syscalls_per_op"]["median"]
                p99 = engine["p99_us"] and engine["p99_us"]["median"]
                print(f"| {depth} | {engine['engine']} | {k(engine['throughput'])} | "
                      f"{engine['cpu_us_per_op']['median']:.2f} | "
                      f"{ringside.number(engine['counted']['ctx_switches_per_op'])} | "
                      f"{ringside.number(calls)} | {ringside.number(p99, 0)} | "
                      f"{'yes' if engine['verified'] else 'NO'} |")


def submit():
    """Each read submitted as its slot frees (after) against one submit per refill (before)."""
    if not glob.glob(os.path.join(out, "submit-*-r*.json")):
        return
    print("\n### One submit per refill (before) and one per read (after), both on one CPU "
          "(reads/s, median of the rounds, min–max)\n")
    print("| cache | engine | depth | before | CPU µs/read | after | CPU µs/read | syscalls/read "
          "before → after | after over before (decided) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode in ["direct", "warm"]:
        for engine, depth, first, second, change in before_after(f"submit-{mode}", verified=True):
            print(f"| {mode} | {engine} | {depth} | {k(first['throughput'])} | "
                  f"{first['cpu_us_per_op']['median']:.2f} | {k(second['throughput'])} | "
                  f"{second['cpu_us_per_op']['median']:.2f} | "
                  f"{first['syscalls_per_op']['median']:.2f} → "
                  f"{second['syscalls_per_op']['median']:.2f} | **{ringside.change(change)}** |")


def perf_counts(path):
    """`perf stat -x,` output: event name -> count, as perf printed it."""
    with open(path) as handle:
        return {line.split(",")[2]: line.split(",")[0] for line in handle if line.count(",") > 3}


def cold():
    """bench/read.sh cold: ringside's pool and rings with their io_uring events, the build that
    submits every read as its slot frees, fio psync (a share per job) and io_uring; each build's
    rounds in one document with fio's jobs of the same rounds as controls (their context
    switches and io-wq punts as perf counted them)."""
    paths = sorted(glob.glob(os.path.join(out, "cold-ringside-r*.json")))
    if not paths:
        return
    document = ringside.pooled(paths)
    each = ringside.pooled(sorted(glob.glob(os.path.join(out, "cold-ringside-each-r*.json"))))
    for row in document["results"] + (each["results"] if each else []):
        assert row["verified"], f"cold: {row['engine']} not verified"
    for path in sorted(glob.glob(os.path.join(out, "cold-fio-*-r*.json"))):
        name = os.path.basename(path)[len("cold-fio-"):].rsplit("-r", 1)[0]
        engine, depth = name.rsplit("-d", 1)
        params = next(r["params"] for r in document["results"]
                      if r["params"]["depth"] == int(depth))
        row = ringside.fio_control(ringside.load(path), "fs-read", f"fio {engine}", params,
                                   run_of(path), fio_jobs(engine, int(depth)))
        counts = perf_counts(path[:-len(".json")] + ".perf")
        row.update(ctx_switches_voluntary=int(counts["context-switches"]),
                   iowq_punts=int(counts["io_uring:io_uring_queue_async_work"]))
        document["results"].append(row)
    print("\n### Cold buffered reads: ringside and fio (reads/s, median of the rounds, min–max)\n")
    print("| depth | engine | reads/s | CPU µs/read | ctx switches/read | syscalls/read | "
          "io-wq punts/read | io-wq workers | p50 µs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tag, pooled in (("", document), ("each-submit build: ", each)):
        if not pooled:
            continue
        for one in sorted(ringside.report(pooled)["studies"],
                          key=lambda s: int(ringside.params(s)["depth"])):
            for engine in one["engines"]:
                counted = engine["counted"]
                calls = engine["syscalls_per_op"] and engine["syscalls_per_op"]["median"]
                print(f"| {ringside.params(one)['depth']} | {tag}{engine['engine']} | "
                      f"{k(engine['throughput'])} | {engine['cpu_us_per_op']['median']:.2f} | "
                      f"{ringside.number(counted['ctx_switches_per_op'])} | "
                      f"{ringside.number(calls)} | {ringside.number(counted['iowq_punts_per_op'])} | "
                      f"{ringside.number(counted['iowq_workers'], 0)} | "
                      f"{engine['latency_us']['p50']:.0f} |")


modes = {os.path.basename(p).split("-ringside-")[0][len("parity-"):]
         for d in [out, *more] for p in glob.glob(os.path.join(d, "parity-*-ringside-d*-r*.json"))}
for mode in sorted(modes):
    parity(mode)
fixes()
submit()
cold()
for cache in ["warm", "cold", "direct"]:
    study(cache)
