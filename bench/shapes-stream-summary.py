#!/usr/bin/env python3
"""bench/shapes.md's streaming table from bench/shapes-stream.sh's files: per engine (and
--work) and connection count, ringside's stream load and tcpkali against the same server,
MB/s received (median, lowest-highest of the rounds), the server's CPU µs per MB and share
of its core, and each client's CPU share; where the round recorded them (cores-*.txt), both
cores' busy share over the client's run from /proc/stat (softirqs included, which the
processes' own clocks leave out): which side was saturated.

    bench/shapes-stream-summary.py [DIR]     (default bench/shapes/stream)
"""
import glob
import json
import os
import re
import statistics
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else "bench/shapes/stream"
cells = {}  # (server, connections) -> client -> list of (MB/s, server µs/MB, server share, client share)


def add(server, count, client, figures):
    cells.setdefault((server, int(count)), {}).setdefault(client, []).append(figures)


for path in sorted(glob.glob(os.path.join(folder, "ringside-*.json"))):
    server, count, _ = re.match(r"ringside-(.+)-(\d+)-(\d+)\.json", os.path.basename(path)).groups()
    try:
        row = json.load(open(path))["results"][0]
    except (ValueError, KeyError, IndexError):
        print(f"{os.path.basename(path)}: no result (the server was gone)", file=sys.stderr)
        continue
    if not row["verified"]:
        # A run whose echo differed or stalled reports no figure (its notes say why).
        print(f"{os.path.basename(path)}: NOT VERIFIED: {row['notes']}", file=sys.stderr)
        cells.setdefault((server, int(count)), {}).setdefault("ringside not verified", []).append(path)
        continue
    client = row["client_cpu_user_s"] + row["client_cpu_sys_s"]
    # The scheduler's clock where the row has it, else /proc's tick-sampled user and system.
    server_s = row.get("server_cpu_s") or row["cpu_user_s"] + row["cpu_sys_s"]
    add(server, count, "ringside", (row["mb_per_sec"], row["server_cpu_us_per_mb"],
                                    server_s / row["seconds"], client / row["seconds"]))

for path in sorted(glob.glob(os.path.join(folder, "tcpkali-*.txt"))):
    server, count, _ = re.match(r"tcpkali-(.+)-(\d+)-(\d+)\.txt", os.path.basename(path)).groups()
    text = open(path).read()
    received = int(re.search(r"Total data received:.*\((\d+) bytes\)", text).group(1))
    seconds = float(re.search(r"Test duration: ([\d.]+) s", text).group(1))
    user, system = map(float, re.search(r"tcpkali_cpu_s ([\d.]+) ([\d.]+)", text).groups())
    measured = re.search(r"server_cpu_ns (\d+)", text)
    if not measured:
        print(f"{os.path.basename(path)}: the server exited during the run", file=sys.stderr)
        continue
    server_ns = int(measured.group(1))
    megabytes = received / 1e6
    add(server, count, "tcpkali", (megabytes / seconds, server_ns / 1e3 / megabytes,
                                   server_ns / 1e9 / seconds, (user + system) / seconds))


cores = {}  # (server, connections, client) -> list of (server core busy, client core busy)
for path in sorted(glob.glob(os.path.join(folder, "cores-*.txt"))):
    server, count, _ = re.match(r"cores-(.+)-(\d+)-(\d+)\.txt", os.path.basename(path)).groups()
    for line in open(path):
        found = re.match(r"(\w+) core_busy_jiffies server (\d+) client (\d+) wall_ms (\d+)", line)
        if found:
            client, server_j, client_j, wall_ms = found.groups()
            seconds = int(wall_ms) / 1000
            cores.setdefault((server, int(count), client), []).append(
                (int(server_j) / 100 / seconds, int(client_j) / 100 / seconds))


def core_shares(server, count, client):
    shares = cores.get((server, count, client))
    if not shares:
        return "- | -"
    return " | ".join(f"{statistics.median(s[i] for s in shares) * 100:.0f}%" for i in (0, 1))


def median_range(values, digits=0):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


print("| server | conn | client | MB/s received, median (range) | server CPU µs/MB | server core busy | client core busy | ringside / tcpkali | CPU 0 busy (/proc/stat) | CPU 1 busy |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (server, count), clients in sorted(cells.items(), key=lambda item: (item[0][1], item[0][0])):
    ratio = ""
    if "ringside" in clients and "tcpkali" in clients:
        ours = statistics.median(f[0] for f in clients["ringside"])
        theirs = statistics.median(f[0] for f in clients["tcpkali"])
        ratio = f"{ours / theirs:.2f}"
    for client in ("ringside", "tcpkali"):
        runs = clients.get(client, [])
        failed = len(clients.get(f"{client} not verified", []))
        note = f", {failed} NOT VERIFIED" if failed else ""
        if not runs:
            if failed:
                print(f"| {server} | {count} | {client} (0 runs{note}) | - | - | - | - | | - | - |")
            continue
        mbs = [f[0] for f in runs]
        print(f"| {server} | {count} | {client} ({len(runs)} runs{note}) | {median_range(mbs)} | "
              f"{statistics.median(f[1] for f in runs):.0f} | "
              f"{statistics.median(f[2] for f in runs) * 100:.0f}% | "
              f"{statistics.median(f[3] for f in runs) * 100:.0f}% | {ratio if client == 'ringside' else ''} | "
              f"{core_shares(server, count, client)} |")
