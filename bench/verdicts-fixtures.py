#!/usr/bin/env python3
"""Turns the noise traces (bench/verdicts-traces.sh) into the fixtures the verdict code's
calibration tests replay (tests/fixtures/noise/NAME.json): per trace, the metric and each
round's figure of the engine (a) and of its copy (b), in round order.

Usage: bench/verdicts-fixtures.py TRACE_DIR FIXTURE_DIR
"""
import json
import sys
from pathlib import Path

# Which figure each trace is judged by: throughput in the headline's unit, except the open-loop
# HTTP trace, whose rate is fixed, judged by the server's CPU per request.
METRIC = {"http-epoll-rate": "cpu_per_op"}


def figure(row, metric):
    if metric == "cpu_per_op":
        cpu = row.get("server_cpu_s")
        if cpu is None:
            cpu = row["cpu_user_s"] + row["cpu_sys_s"]
        return cpu * 1e6 / row["ops"]
    if row["workload"] == "fs-write":
        return row["bytes_per_sec"] / 1e6
    return row["ops_per_sec"]


def main(traces, fixtures):
    fixtures.mkdir(parents=True, exist_ok=True)
    for path in sorted(traces.glob("*.json")):
        if path.name == "probe.json":
            continue
        name = path.stem
        metric = METRIC.get(name, "throughput")
        rows = [r for r in json.loads(path.read_text())["results"]
                if r["verified"] and not r.get("failure") and r["ops"] > 0]
        by_round = {}
        for row in rows:
            copy = "b" if "#" in row["engine"] else "a"
            by_round.setdefault(row["run"], {})[copy] = figure(row, metric)
        rounds = sorted(r for r, pair in by_round.items() if len(pair) == 2)
        fixture = {"name": name, "metric": metric,
                   "a": [round(by_round[r]["a"], 4) for r in rounds],
                   "b": [round(by_round[r]["b"], 4) for r in rounds]}
        (fixtures / f"{name}.json").write_text(json.dumps(fixture) + "\n")
        print(f"{name}: {len(rounds)} rounds")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
