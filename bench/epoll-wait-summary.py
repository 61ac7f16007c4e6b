#!/usr/bin/env python3
"""bench/epoll-wait.md's tables from bench/epoll-wait.sh's JSON files: the open loop with
epoll_pwait2 and with the fallback. Per wait, ringside's analysis of its rounds pooled
(`ringside report --format json`): requests/s and p99 from each request's due time (a late send
shows up there) as median and runs' range, p50 from due, server CPU per request; then the
fallback over epoll_pwait2 as `ringside compare` decides it; then each run's own figures that
the analysis does not summarise (p50 from when the request was sent, the load generator's CPU
and syscalls per request), listed run by run.
Usage: bench/epoll-wait-summary.py OUT_DIR"""
import pathlib
import sys

import ringside_analysis as ringside

out = pathlib.Path(sys.argv[1])
WAITS = ["pwait2", "fallback"]
documents = {w: ringside.pooled(sorted(out.glob(f"{w}-*.json"))) for w in WAITS}

print("| wait | runs | req/s | p50 µs (from due) | p99 µs (from due) | server CPU µs/req | verified |")
print("|---|---|---|---|---|---|---|")
for wait in WAITS:
    engine = ringside.report(documents[wait])["studies"][0]["engines"][0]
    print(f"| {wait} | {engine['runs']} | {ringside.spread(engine['throughput'], 1)} | "
          f"{engine['latency_us']['p50']:,.1f} | {ringside.spread(engine['p99_us'], 1)} | "
          f"{engine['cpu_us_per_op']['median']:.1f} | {'yes' if engine['verified'] else 'NO'} |")

print("\n| fallback over pwait2 | B/A (decided) |")
print("|---|---|")
for row in ringside.compare(documents["pwait2"], documents["fallback"]):
    print(f"| {row['unit']} | {ringside.change(row)} |")

print("\n| wait | run | p50 µs (from sent) | client CPU µs/req | client syscalls/req |")
print("|---|---|---|---|---|")
for wait in WAITS:
    for row in documents[wait]["results"]:
        cpu = (row["client_cpu_user_s"] + row["client_cpu_sys_s"]) * 1e6 / row["ops"]
        print(f"| {wait} | {row['run']} | {row['latency_uncorrected_ns_p50'] / 1e3:.1f} | "
              f"{cpu:.1f} | {row['client_syscalls'] / row['ops']:.2f} |")
