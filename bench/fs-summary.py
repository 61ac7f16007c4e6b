"""Summarises a bench/fs.sh output directory as Markdown tables: medians over rounds."""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
rows = defaultdict(list)  # (study, label) -> list of (MB/s or seconds, syscalls, cpu_s)


def add(study, label, mbps, seconds, syscalls, cpu):
    rows[(study, label)].append((mbps, seconds, syscalls, cpu))


for path in sorted(glob.glob(os.path.join(out, "ringside-*.json"))):
    name = os.path.basename(path)
    study = name.rsplit("-r", 1)[0].replace("ringside-", "")
    for row in json.load(open(path))["results"]:
        add(study, "ringside " + row["engine"], row["bytes_per_sec"] / 1e6, row["seconds"],
            row["syscalls"], row["cpu_user_s"] + row["cpu_sys_s"])
for path in sorted(glob.glob(os.path.join(out, "fio-*.json"))):
    name = os.path.basename(path)[4:].rsplit("-r", 1)[0]
    job = json.load(open(path))["jobs"][0]
    if name.startswith("cycle-"):
        study, label = "cycle", name[len("cycle-"):]
    else:
        label, bs = name.rsplit("-", 1)
        study = "write-" + bs
    seconds = job["write"]["runtime"] / 1e3
    user, system = open(path[: -len(".json")] + ".time").read().split()
    cpu = float(user) + float(system)
    add(study, "fio " + label, job["write"]["bw_bytes"] / 1e6, seconds, None, cpu)

for study in sorted({s for s, _ in rows}):
    print(f"\n### {study}\n")
    print("| contender | runs | MB/s median | MB/s min–max | seconds median | syscalls median "
          "| process CPU s median |")
    print("|---|---|---|---|---|---|---|")
    for (s, label), values in rows.items():
        if s != study:
            continue
        mbps = [v[0] for v in values]
        secs = statistics.median(v[1] for v in values)
        sc = [v[2] for v in values if v[2] is not None]
        sc_text = f"{statistics.median(sc):.0f}" if sc else "n/a"
        cpu = statistics.median(v[3] for v in values)
        print(f"| {label} | {len(values)} | {statistics.median(mbps):.0f} | {min(mbps):.0f}–{max(mbps):.0f} "
              f"| {secs:.3f} | {sc_text} | {cpu:.2f} |")
