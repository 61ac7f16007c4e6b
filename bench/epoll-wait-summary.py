#!/usr/bin/env python3
"""Medians (min-max) of the open loop's latency with epoll_pwait2 and with the fallback, from
bench/epoll-wait.sh's JSON files: corrected latency counts from each request's due time, so a
late send shows up there; uncorrected from when it was sent."""
import json
import pathlib
import statistics
import sys

out = pathlib.Path(sys.argv[1])
fields = [
    ("req/s", "ops_per_sec", 1),
    ("p50 µs (from due)", "latency_ns_p50", 1e3),
    ("p99 µs (from due)", "latency_ns_p99", 1e3),
    ("p50 µs (from sent)", "latency_uncorrected_ns_p50", 1e3),
    ("client CPU µs/req", "cpu", None),
    ("client syscalls/req", "syscalls", None),
]
print("| wait | runs | " + " | ".join(name for name, _, _ in fields) + " | verified |")
print("|---|---|" + "---|" * len(fields) + "---|")
for wait in ["pwait2", "fallback"]:
    rows = [json.loads(p.read_text())["results"][0] for p in sorted(out.glob(f"{wait}-*.json"))]
    cells = []
    for name, key, scale in fields:
        if key == "cpu":
            values = [(r["client_cpu_user_s"] + r["client_cpu_sys_s"]) * 1e6 / r["ops"] for r in rows]
        elif key == "syscalls":
            values = [r["client_syscalls"] / r["ops"] for r in rows]
        else:
            values = [r[key] / scale for r in rows]
        cells.append(f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})")
    verified = all(r["verified"] for r in rows)
    print(f"| {wait} | {len(rows)} | " + " | ".join(cells) + f" | {'yes' if verified else 'NO'} |")
