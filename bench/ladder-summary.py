#!/usr/bin/env python3
"""Tables for bench/ladder.md from bench/ladder.sh's JSON, as ringside's analysis summarises
them (`ringside report --format json`; a table set as alternates in several files, e.g.
idle-off-1.json, is pooled into one document first, runs renumbered): per cell and engine the
median and the runs' range of messages/s, server CPU per message, server syscalls per message
and p99 latency, io_uring's SQEs and CQEs per message where the rows counted them, and each
rung over the engine it extends as the analysis decided it; then the zero-copy notifications
of set 5, as the server counted them."""
import json
import sys
from pathlib import Path

import ringside_analysis as ringside

out = Path(sys.argv[1])


def size(study):
    params = ringside.params(study)
    return params.get("payload_bytes") or params.get("body_bytes") or ""


# A table's rows come from one file, or from several that set 8 alternates (idle-off-1.json, ...).
tables = ["echo-64", "echo-large", "http", "http-16k", "http-64k", "echo-idle", "http-ladder"]
tables += ["sqpoll-fifo-cpu1", "sqpoll-other-cpu1", "sqpoll-other-cpu0", "idle-off-*", "idle-10s-*"]
tables += ["echo-256-events", "echo-256-repeat", "linked-off-*", "linked-10s-*"]
tables += ["echo-large-events", "echo-64-bundles"]
for name in tables:
    paths = sorted(out.glob(f"{name}.json"))
    if not paths:
        continue
    analysis = ringside.report(ringside.pooled(paths))
    print(f"\n### {name}\n")
    events = any(e["counted"]["sqes_per_op"] is not None
                 for study in analysis["studies"] for e in study["engines"])
    extra = " SQEs/msg | CQEs/msg |" if events else ""
    print(f"| conns | size | engine | msg/s | server CPU µs/msg | syscalls/msg | p99 µs | ok |"
          f"{extra} decided |")
    print("|---" * (9 + 2 * events) + "|")
    studies = sorted(analysis["studies"],
                     key=lambda s: (int(ringside.params(s).get("connections", 0)), str(size(s))))
    for study in studies:
        conns = ringside.params(study).get("connections")
        for engine in study["engines"]:
            counted = engine["counted"]
            comparison = ringside.rung(analysis, study, engine["engine"])
            decided = (f"over {comparison['reference']}: {ringside.ratio(comparison)}"
                       if comparison else "—")
            print(
                f"| {conns} | {size(study)} | `{engine['engine']}` | "
                f"{ringside.spread(engine['throughput'], 1, 1e-3, '-')}k | "
                f"{ringside.spread(engine['cpu_us_per_op'], 2, sep='-')} | "
                f"{ringside.spread(engine['syscalls_per_op'], 3, sep='-')} | "
                f"{ringside.spread(engine['p99_us'], 0, sep='-')} | "
                f"{'yes' if engine['verified'] else 'NO'} ({engine['runs']} runs) |"
                + (f" {ringside.number(counted['sqes_per_op'])} |"
                   f" {ringside.number(counted['cqes_per_op'])} |" if events else "")
                + f" {decided} |"
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
