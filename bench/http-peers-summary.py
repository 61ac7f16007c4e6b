#!/usr/bin/env python3
"""Summarises a bench/http-peers.sh output directory (runs.tsv, runs/*): medians and ranges
over the rounds per server, connection count and client, and ringside/peer ratios per API.
Usage: http-peers-summary.py OUTDIR  (markdown on stdout, rows as JSON in OUTDIR/summary.json)"""
import csv, json, os, re, statistics, sys

out = sys.argv[1]
RINGSIDE = ["ringside-epoll", "ringside-uring", "ringside-uring-multishot", "ringside-uring-defer"]


def api(name):
    return "epoll" if "epoll" in name else "io_uring"


def dur_us(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    v, unit = float(m.group(1)), m.group(2)
    return v * {"us": 1, "ms": 1e3, "s": 1e6}[unit]


def parse_wrk(path):
    text = open(path).read()
    r = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    r["rps"] = float(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in ([\d.]+)(s|m)", text)
    r["requests"] = int(m.group(1)) if m else None
    m = re.search(r"^\s+99%\s+(\S+)", text, re.M)
    r["p99_us"] = dur_us(m.group(1)) if m else None
    m = re.search(r"^\s+50%\s+(\S+)", text, re.M)
    r["p50_us"] = dur_us(m.group(1)) if m else None
    m = re.search(r"Socket errors: (.*)", text)
    r["socket_errors"] = m.group(1).strip() if m else ""
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    r["non2xx"] = int(m.group(1)) if m else 0
    return r


rows = []
with open(os.path.join(out, "runs.tsv")) as f:
    for t in csv.DictReader(f, delimiter="\t"):
        row = {k: t[k] for k in ("round", "server", "connections", "client", "alive_after", "fds_after", "stderr_lines")}
        row["connections"] = int(t["connections"])
        if t["alive_after"] == "no-start":
            rows.append(row)
            continue
        wall = float(t["wall_s"])
        if t["client"] == "wrk":
            w = parse_wrk(os.path.join(out, t["file"] + ".txt"))
            row.update(w)
            if t["server_cpu_ticks"] != "NA" and w["requests"]:
                cpu_s = int(t["server_cpu_ticks"]) / int(t["clk_tck"])
                row["server_cpu_us_per_req"] = cpu_s / w["requests"] * 1e6
                row["server_cpu_share"] = cpu_s / wall
            # bash's `time` also counts a child reaped inside its window: a server that died
            # when wrk closed its connections adds its own CPU there, so only alive ones count
            if t["client_cpu_s"] != "NA" and t["alive_after"] == "yes":
                row["client_cpu_share"] = float(t["client_cpu_s"]) / wall
        else:
            try:
                d = json.load(open(os.path.join(out, t["file"] + ".json")))["results"][0]
            except Exception as e:  # a failed run leaves no JSON
                row["failed"] = str(e)
                rows.append(row)
                continue
            ops = d["ops"]
            row.update(
                rps=d["ops_per_sec"],
                requests=ops,
                p50_us=d["latency_ns_p50"] / 1e3,
                p99_us=d["latency_ns_p99"] / 1e3,
                p999_us=d["latency_ns_p999"] / 1e3,
                errors=d["errors"],
                error_counts=d.get("error_counts"),
                verified=d["verified"],
                statuses=d.get("status_counts"),
                server_cpu_us_per_req=(d["cpu_user_s"] + d["cpu_sys_s"]) / ops * 1e6 if ops else None,
                server_cpu_share=(d["cpu_user_s"] + d["cpu_sys_s"]) / d["seconds"],
                syscalls_per_req=d["syscalls"] / ops if ops and d.get("syscalls") is not None else None,
                client_cpu_share=(d["client_cpu_user_s"] + d["client_cpu_sys_s"]) / d["seconds"],
                client_saturated=d.get("client_saturated"),
            )
        rows.append(row)
json.dump(rows, open(os.path.join(out, "summary.json"), "w"), indent=1)

servers = list(dict.fromkeys(r["server"] for r in rows))


def cell(server, conns, client, key):
    return [r[key] for r in rows if r["server"] == server and r["connections"] == conns
            and r["client"] == client and r.get(key) is not None]


def med(v):
    return statistics.median(v) if v else None


def fmt(v, digits=0, unit=""):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}{unit}"


def rng(v, digits=0):
    return f"{min(v):,.{digits}f}–{max(v):,.{digits}f}" if v else "–"


def lat(us):
    if us is None:
        return "–"
    return f"{us / 1e3:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


print("# ringside vs seed 001 servers: medians over the rounds (ranges in brackets)\n")
for client in ("wrk", "ringside"):
    cname = "wrk -t1" if client == "wrk" else "ringside load http"
    print(f"## client: {cname}\n")
    if client == "wrk":
        print("| server | API | conns | req/s median | req/s range | p99 median | server CPU µs/req median (range) | server CPU share | wrk CPU share (server alive after) | runs |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    else:
        print("| server | API | conns | req/s median | req/s range | p99 median | p99.9 median | server CPU µs/req median (range) | syscalls/req median (range) | runs (errors) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for conns in (50, 256):
        for s in servers:
            rps = cell(s, conns, client, "rps")
            cpu = cell(s, conns, client, "server_cpu_us_per_req")
            n = len(rps)
            if client == "wrk":
                print(f"| {s} | {api(s)} | {conns} | {fmt(med(rps))} | {rng(rps)} | {lat(med(cell(s, conns, client, 'p99_us')))} | "
                      f"{fmt(med(cpu), 1)} ({rng(cpu, 1)}) | {fmt(med(cell(s, conns, client, 'server_cpu_share')), 2)} | "
                      f"{fmt(med(cell(s, conns, client, 'client_cpu_share')), 2)} | {n} |")
            else:
                sc = cell(s, conns, client, "syscalls_per_req")
                errs = sum(cell(s, conns, client, "errors"))
                print(f"| {s} | {api(s)} | {conns} | {fmt(med(rps))} | {rng(rps)} | {lat(med(cell(s, conns, client, 'p99_us')))} | "
                      f"{lat(med(cell(s, conns, client, 'p999_us')))} | {fmt(med(cpu), 1)} ({rng(cpu, 1)}) | "
                      f"{fmt(med(sc), 2)} ({rng(sc, 2)}) | {n} ({errs}) |")
    print()

print("## ratios ringside / best peer of the same API (best = highest median req/s among the peers)\n")
print("req/s ratio ≥ 1 means ringside served more; CPU ratio ≤ 1 means ringside spent less server CPU per request.\n")
print("| client | conns | ringside server | best peer | req/s ratio (medians) | req/s ranges overlap? | CPU µs/req ratio (medians) |")
print("|---|---|---|---|---|---|---|")
for client in ("wrk", "ringside"):
    for conns in (50, 256):
        for s in RINGSIDE:
            peers = [p for p in servers if p not in RINGSIDE and api(p) == api(s)]
            peers = [p for p in peers if cell(p, conns, client, "rps")]
            if not peers or not cell(s, conns, client, "rps"):
                continue
            best = max(peers, key=lambda p: med(cell(p, conns, client, "rps")))
            a, b = cell(s, conns, client, "rps"), cell(best, conns, client, "rps")
            overlap = "yes" if min(a) <= max(b) and min(b) <= max(a) else "no"
            ca, cb = med(cell(s, conns, client, "server_cpu_us_per_req")), med(cell(best, conns, client, "server_cpu_us_per_req"))
            cr = f"{ca / cb:.2f}" if ca and cb else "–"
            print(f"| {client} | {conns} | {s} | {best} | {med(a) / med(b):.2f} | {overlap} | {cr} |")
print()

print("## server health after each client (fresh server per run)\n")
print("| server | runs | alive after client | fds after client (min–max) | stderr lines (max) |")
print("|---|---|---|---|---|")
for s in servers:
    rs = [r for r in rows if r["server"] == s]
    alive = sum(1 for r in rs if r["alive_after"] == "yes")
    fds = [int(r["fds_after"]) for r in rs if r["fds_after"] not in ("NA", None)]
    err = [int(r["stderr_lines"]) for r in rs if r["stderr_lines"] not in ("NA", None)]
    print(f"| {s} | {len(rs)} | {alive} | {rng(fds)} | {max(err) if err else '–'} |")
