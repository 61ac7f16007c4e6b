#!/usr/bin/env python3
"""Tables for bench/ladder.md from bench/ladder.sh's JSON: per engine and cell, the median and
the min-max range over the runs of messages/s, server CPU per message, server syscalls per
message and p99 latency; then the zero-copy notifications of set 5."""
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])


def size(params):
    for key in ("payload_bytes", "body_bytes"):
        if key in params:
            return params[key]
    return ""


def fmt(values, digits):
    med = statistics.median(values)
    return f"{med:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


# A table's rows come from one file, or from several that set 8 alternates (idle-off-1.json, ...).
tables = ["echo-64", "echo-large", "http", "http-16k", "http-64k", "echo-idle", "http-ladder"]
tables += ["sqpoll-fifo-cpu1", "sqpoll-other-cpu1", "sqpoll-other-cpu0", "idle-off-*", "idle-10s-*"]
tables += ["echo-256-events", "echo-256-repeat", "linked-off-*", "linked-10s-*"]
for name in tables:
    paths = sorted(out.glob(f"{name}.json"))
    if not paths:
        continue
    rows = [row for path in paths for row in json.loads(path.read_text())["results"]]
    cells = {}
    for row in rows:
        params = row["params"]
        key = (params.get("connections"), size(params), row["engine"])
        cells.setdefault(key, []).append(row)
    print(f"\n### {name}\n")
    print("| conns | size | engine | msg/s | server CPU µs/msg | syscalls/msg | p99 µs | ok |")
    print("|---|---|---|---|---|---|---|---|")
    for (conns, size_bytes, engine), runs in sorted(cells.items(), key=lambda c: (c[0][0], str(c[0][1]))):
        rate = [r["ops_per_sec"] / 1000 for r in runs]
        cpu = [(r["cpu_user_s"] + r["cpu_sys_s"]) / r["ops"] * 1e6 for r in runs if r["ops"]]
        calls = [r["syscalls"] / r["ops"] for r in runs if r["ops"] and r.get("syscalls") is not None]
        p99 = [r["latency_ns_p99"] / 1000 for r in runs if r.get("latency_ns_p99")]
        ok = all(r["verified"] and not r["errors"] for r in runs)
        print(
            f"| {conns} | {size_bytes} | `{engine}` | {fmt(rate, 1)}k | {fmt(cpu, 2)} | "
            f"{fmt(calls, 3) if calls else '-'} | {fmt(p99, 0) if p99 else '-'} | "
            f"{'yes' if ok else 'NO'} ({len(runs)} runs) |"
        )

zc = sorted(out.glob("zc-*.json"))
zc = [p for p in zc if not p.name.endswith("-load.json")]
if zc:
    print("\n### uring-send-zc on loopback: did the kernel copy?\n")
    print("| payload | bytes sent | notifications | copied |")
    print("|---|---|---|---|")
    for path in zc:
        counters = json.loads(path.read_text())
        print(
            f"| {path.stem[3:]} | {counters['bytes_sent']} | "
            f"{counters['zero_copy_notifications']} | {counters['zero_copy_copied']} |"
        )
