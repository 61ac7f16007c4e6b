#!/usr/bin/env python3
"""Sorts the server's samples of a `perf record -g` into what they were doing, the first match
down this list (a stack that wakes the client inside a send counts as waking):

- wake: notifying the client's socket (sock_def_readable: its epoll callback and the wake-up
  of a sleeping client, with interrupts off, so the samples land where they are turned back on)
- work: --work's loop (Work::spend)
- send, receive: the rest of the send and receive paths
- wait: epoll_wait, io_uring's wait, the scheduler
- other

    python3 bench/shapes-work-profile.py RECORDING.data      -> JSON counts on stdout
    python3 bench/shapes-work-profile.py --table DIR         -> bench/shapes.md's table
"""
import glob
import json
import os
import statistics
import subprocess
import sys

CATEGORIES = [
    ("wake", ["sock_def_readable"]),
    ("work", ["Work::spend"]),
    ("send", ["__sys_sendto", "io_send", "tcp_sendmsg"]),
    ("receive", ["__sys_recvfrom", "io_recv", "tcp_recvmsg"]),
    ("wait", ["do_epoll_wait", "io_cqring_wait", "schedule"]),
]


def sort_samples(path):
    script = subprocess.run(
        ["perf", "script", "-i", path, "--comm", "ringside", "-F", "comm,ip,sym"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts = {name: 0 for name, _ in CATEGORIES}
    counts["other"] = 0
    for block in script.split("\n\n"):
        frames = [line.split()[-1] for line in block.strip().split("\n")[1:] if line.strip()]
        if not frames:
            continue
        stack = " ".join(frames)
        name = next(
            (name for name, symbols in CATEGORIES if any(s in stack for s in symbols)), "other"
        )
        counts[name] += 1
    return counts


def table(directory):
    """Per engine and work: µs per message in each category (its share of the server's
    samples times the run's server CPU per message), median and range over the rounds."""
    cells = {}
    for path in sorted(glob.glob(os.path.join(directory, "profile-*.json"))):
        name = os.path.basename(path)[len("profile-"):-len(".json")]
        key, _, _ = name.rpartition("-")
        counts = json.load(open(path))
        row = json.load(open(os.path.join(directory, f"load-{name}.json")))["results"][0]
        total = sum(counts.values())
        if not total or not row.get("verified"):
            continue
        cpu = row["server_cpu_us_per_op"]
        each = {c: counts[c] / total * cpu for c in counts}
        each["total"] = cpu
        each["msg/s"] = row["ops_per_sec"] / 1000
        cells.setdefault(key, []).append(each)
    columns = ["msg/s", "total", "work", "wake", "send", "receive", "wait", "other"]
    print("| engine | work | runs | " + " | ".join(columns) + " |")
    print("|---|---|---|" + "---|" * len(columns))
    for key, runs in sorted(cells.items()):
        engine, work = key.rsplit("-", 1)
        line = [engine, work, str(len(runs))]
        for column in columns:
            values = sorted(r[column] for r in runs)
            line.append(f"{statistics.median(values):.2f} ({values[0]:.2f}-{values[-1]:.2f})")
        print("| " + " | ".join(line) + " |")


if sys.argv[1] == "--table":
    table(sys.argv[2])
else:
    print(json.dumps(sort_samples(sys.argv[1])))
