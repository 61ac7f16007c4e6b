#!/usr/bin/env python3
"""bench/shapes.md's table of shapes-work-perf.sh: per engine, work and load, medians (and
ranges) over the rounds of the server's and client's perf counts per message echoed.

    python3 bench/shapes-work-perf-summary.py [bench/shapes/work-perf]
"""
import glob
import json
import os
import statistics
import sys

DIR = sys.argv[1] if len(sys.argv) > 1 else "bench/shapes/work-perf"


def counts(path):
    """perf stat -x, output: event name -> count (task-clock in ms)."""
    found = {}
    for line in open(path):
        fields = line.strip().split(",")
        if len(fields) > 3 and fields[0] and not line.startswith("#"):
            try:
                found[fields[2]] = float(fields[0])
            except ValueError:
                pass
    return found


def spread(values):
    values = sorted(values)
    return f"{statistics.median(values):.2f} ({values[0]:.2f}-{values[-1]:.2f})"


cells = {}
for path in sorted(glob.glob(os.path.join(DIR, "load-*.json"))):
    name = os.path.basename(path)[len("load-"):-len(".json")]
    engine_work_load, _, _round = name.rpartition("-")
    try:
        row = json.load(open(path))["results"][0]
        server = counts(os.path.join(DIR, f"perf-server-{name}.txt"))
        client = counts(os.path.join(DIR, f"perf-client-{name}.txt"))
    except (OSError, ValueError, KeyError, IndexError):
        continue
    if not row.get("verified") or row["ops"] == 0:
        continue
    # perf counted the whole load run (its window and a few ms of connecting), divided by
    # the messages of the window: the same small excess for every engine.
    ops = row["ops"]
    per = lambda count: count / ops
    cells.setdefault(engine_work_load, []).append(
        {
            "msg/s": row["ops_per_sec"] / 1000,
            "srv CPU µs": row["server_cpu_us_per_op"],
            "srv ctx sw": per(server["context-switches"]),
            "srv wakeups": per(server["sched:sched_waking"]),
            "srv IPIs": per(server["ipi:ipi_send_cpu"]),
            "waits": per(
                server["syscalls:sys_enter_epoll_pwait2"]
                + server["syscalls:sys_enter_io_uring_enter"]
            ),
            "softirqs": per(server["irq:softirq_entry"]),
            "cli CPU µs": client["task-clock"] * 1000 / ops,
            "cli ctx sw": per(client["context-switches"]),
            "srv user s": row["cpu_user_s"],
            "srv sys s": row["cpu_sys_s"],
        }
    )

columns = [
    "msg/s",
    "srv CPU µs",
    "srv ctx sw",
    "srv wakeups",
    "srv IPIs",
    "waits",
    "softirqs",
    "cli CPU µs",
    "cli ctx sw",
]
print("| engine | work | load | runs | " + " | ".join(columns) + " | srv sys share |")
print("|---|---|---|---|" + "---|" * len(columns) + "---|")
for key in sorted(cells, key=lambda k: (k.split("-")[-1], k)):
    runs = cells[key]
    engine, work, load = key.rsplit("-", 2)
    sys_share = [r["srv sys s"] / max(r["srv user s"] + r["srv sys s"], 1e-9) for r in runs]
    line = [engine, work, load, str(len(runs))]
    line += [spread([r[c] for r in runs]) for c in columns]
    line.append(f"{statistics.median(sys_share):.0%}")
    print("| " + " | ".join(line) + " |")
