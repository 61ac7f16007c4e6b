#!/usr/bin/env python3
"""Tables for bench/peers-echo.sh: ringside's echo servers against the public ones.

Per case (client x connections x payload): every server's messages/s (median, min-max over the
rounds) and server CPU per message, then the issue's targets as ratios of ringside to the peer
within each round (median and range of the rounds). rust_echo_bench's figure is its responses per
second; tcpkali's is echoed bytes / 1024 per second (it streams; its "packet rate" is a segment
estimate, not messages). Then what ringside's verifying load generator found against each server.
"""
import glob
import json
import os
import re
import statistics
import sys

PEERS = ["frevib_epoll", "frevib_uring", "joakimthun_epoll", "joakimthun_uring"]
# ringside engine -> the peers it must match or beat (issue 9).
TARGETS = {
    "ringside-epoll": ["frevib_epoll", "joakimthun_epoll"],
    "ringside-uring": ["frevib_uring"],
    "ringside-uring-multishot": ["joakimthun_uring", "frevib_uring"],
    "ringside-uring-defer": PEERS,
}


def parse(path, client, payload):
    text = open(path).read()
    cpu = re.search(r"server_cpu_s: ([\d.]+)", text)
    died = "server_died" in text
    rate = None
    if client == "echo_bench":
        match = re.search(r"Speed: \d+ request/sec, (\d+) response/sec", text)
        rate = float(match.group(1)) if match else None
    else:
        received = re.search(r"Total data received:.*\((\d+) bytes\)", text)
        seconds = re.search(r"Test duration: ([\d.]+) s", text)
        if received and seconds:
            rate = int(received.group(1)) / payload / float(seconds.group(1))
    return rate, float(cpu.group(1)) if cpu else None, died


def spread(values, digits=0, suffix=""):
    if not values:
        return "-"
    f = f"{{:,.{digits}f}}"
    return f"{f.format(statistics.median(values))}{suffix} ({f.format(min(values))}-{f.format(max(values))})"


def main(out):
    runs = {}  # (client, conns, payload) -> server -> round -> (rate, cpu_us, died)
    duration = float(re.search(r"duration: (\d+)s", open(f"{out}/session.txt").read()).group(1))
    for path in glob.glob(f"{out}/runs/r*.txt"):
        name = os.path.basename(path)[:-4]
        match = re.match(r"r(\d+)-(.+)-(echo_bench|tcpkali)-(\d+)-(\d+)$", name)
        round_, server, client, conns, payload = match.groups()
        rate, cpu, died = parse(path, client, int(payload))
        cpu_us = cpu / (rate * duration) * 1e6 if rate and cpu is not None else None
        runs.setdefault((client, int(conns), int(payload)), {}).setdefault(server, {})[int(round_)] = (rate, cpu_us, died)
    for (client, conns, payload), servers in sorted(runs.items(), key=lambda kv: (kv[0][0] != "echo_bench", kv[0][1])):
        print(f"\n### {client}, {conns} connection(s) x {payload} B\n")
        print("| server | messages/s, median (min-max) | server CPU µs/message | target ratios, per round: median (min-max) |")
        print("|---|---|---|---|")
        for server in sorted(servers, key=lambda s: (not s.startswith(("ringside", "alt-")), s)):
            rounds = servers[server]
            rates = [r for r, _, _ in rounds.values() if r]
            cpus = [c for _, c, _ in rounds.values() if c]
            died = sum(1 for _, _, d in rounds.values() if d)
            targets = []
            targets_of = TARGETS.get(server, [])
            if server.startswith("alt-") and "ringside-" + server[4:] in servers:
                targets_of = ["ringside-" + server[4:]]
            for peer in targets_of:
                if peer not in servers:
                    continue
                ratios = [rounds[r][0] / servers[peer][r][0] for r in rounds
                          if r in servers[peer] and rounds[r][0] and servers[peer][r][0]]
                if ratios:
                    targets.append(f"vs {peer}: {spread(ratios, 2, 'x')}")
            note = f" ({died} run(s): server died)" if died else ""
            print(f"| {server}{note} | {spread(rates)} | {spread(cpus, 1)} | {'; '.join(targets) or '-'} |")
    print("\n### Correctness (ringside load echo against a fresh server of each kind)\n")
    print("| server | 50 conns ping-pong, first set | second set | slow-reader stream (8 x 1000 B, 4 MB/s) |")
    print("|---|---|---|---|")
    checks = {}
    for path in glob.glob(f"{out}/check-*.json"):
        name = os.path.basename(path)[len("check-"):-len(".json")]
        server, kind = re.match(r"(.+)-(pingpong-\d|stream)$", name).groups()
        try:
            rows = json.load(open(path))["results"]
            row = rows[0]
            mismatch = row.get("error_counts", {}).get("mismatch", 0)
            verdict = "verified" if row["verified"] else f"NOT verified ({row['errors']} errors, {mismatch} mismatched)"
        except (ValueError, KeyError, IndexError):
            verdict = "no result"
        checks.setdefault(server, {})[kind] = verdict
    for server in sorted(checks, key=lambda s: (not s.startswith("ringside"), s)):
        kinds = checks[server]
        print(f"| {server} | {kinds.get('pingpong-1', '-')} | {kinds.get('pingpong-2', '-')} | {kinds.get('stream', '-')} |")


if __name__ == "__main__":
    main(sys.argv[1])
