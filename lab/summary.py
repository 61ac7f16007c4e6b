#!/usr/bin/env python3
"""The kernel lab's verdict: reads what each guest wrote (lab/guest-init.sh's steps) and prints,
per kernel, the engines available / verified / unavailable with the kernel's reason, every step's
exit code, and the IOPOLL and netem checks. Writes the same as summary.md beside the kernels' folders.
Exits 1 when a step failed, or an engine `ringside engines` called available did not verify.

    lab/summary.py OUT KERNEL...
"""

import json
import sys
from pathlib import Path

# The guest's steps in the order it runs them; each left NAME.json, NAME.err and NAME.rc.
STEPS = ["probe", "engines", "fs-write", "fs-write-direct", "fs-cycle", "fs-cycle-direct",
         "fs-read", "fs-read-direct", "echo", "http", "teardown", "idle-teardown", "run-quick",
         "claims", "netem",
         "engines-poll", "iopoll"]
# Steps whose rows verify engines of the main listing (IOPOLL and netem are reported apart).
ENGINE_STEPS = ["fs-write", "fs-write-direct", "fs-cycle", "fs-cycle-direct", "fs-read",
                "fs-read-direct", "echo", "http", "run-quick"]


def read(path, default=None):
    try:
        return path.read_text().strip()
    except OSError:
        return default


def rows_of(results, step):
    """The rows of a step's JSON document (run --quick's results.json for run-quick)."""
    name = "run-quick-results.json" if step == "run-quick" else f"{step}.json"
    try:
        document = json.loads((results / name).read_text())
    except (OSError, ValueError):
        return None
    return document.get("results", []) if isinstance(document, dict) else None


def step_error(results, step):
    """The step's distinct error lines (at most three), else its last line of stderr."""
    lines = [line for line in (read(results / f"{step}.err", "") or "").splitlines() if line]
    errors = list(dict.fromkeys(line for line in lines if "error" in line))[:3]
    return " / ".join(errors) or (lines[-1] if lines else "no message")


def verdicts(rows):
    """(workload, engine) -> (verified runs, failure reasons) over the rows."""
    seen = {}
    for row in rows:
        key = (row.get("workload"), row.get("engine"))
        verified, reasons = seen.setdefault(key, [0, []])
        if row.get("verified") is True and not row.get("failure"):
            seen[key][0] += 1
        else:
            reasons.append(row.get("failure") or f"errors={row.get('errors')}, not verified")
    return seen


# Kernels whose guest died of its own kernel under emulation: said in the verdict, not failed.
NOT_CHECKED = []


def kernel_report(out, kernel):
    """The kernel's section (markdown lines) and its problems (one sentence each)."""
    folder = out / kernel
    results = folder / "lab"
    lines = [f"## Linux {kernel}", ""]
    problems = []
    running = read(results / "kernel")
    if running is None:
        console = read(folder / "console.log", "") or ""
        tail = "\n".join(console.splitlines()[-15:])
        if "Kernel panic" in console:
            # The guest's own kernel died under QEMU's emulation (kernels.sh booted it twice):
            # said loudly, but no finding about ringside, so it does not fail the lab.
            oops = next((line for line in console.splitlines() if "Oops" in line), "a panic")
            lines += [f"**Not checked: the guest kernel panicked under emulation** ({oops.strip()}), "
                      "on both boots. The console's end:", "", "```", tail, "```", ""]
            NOT_CHECKED.append(f"{kernel}: not checked, its kernel panicked under emulation")
            return lines, problems
        problems.append(f"{kernel}: the guest left no results (qemu exit {read(folder / 'qemu.rc')})")
        lines += ["The guest left no results. The console's end:", "", "```", tail, "```", ""]
        return lines, problems
    lines.append(f"`{read(folder / 'package')}` (running `{running}`), {read(results / 'accel')}, "
                 f"guest {read(results / 'seconds', '?')} s from boot to power-off (host "
                 f"{read(folder / 'seconds')} s with the wait for the lock), qemu exit "
                 f"{read(folder / 'qemu.rc')}.")
    try:
        probe = json.loads((results / "probe.json").read_text())
        lines += ["", f"`ringside probe`: {probe.get('machine')}; warnings: "
                  + ("; ".join(probe.get("warnings") or []) or "none")]
    except (OSError, ValueError, AttributeError):
        lines += ["", "`ringside probe` gave no JSON."]
    lines.append("")

    steps, failed = [], []
    for step in STEPS:
        rc = read(results / f"{step}.rc")
        if rc is None:
            continue
        steps.append(step)
        if rc != "0":
            failed.append(step)
            problems.append(f"{kernel}: step {step} exited {rc}: {step_error(results, step)}")
    lines += ["| step | exit | command |", "|---|---|---|"]
    for step in steps:
        command = (read(results / f"{step}.cmd", "") or "").replace("/usr/local/bin/", "")
        lines.append(f"| {step} | {read(results / f'{step}.rc')} | `{command}` |")
    lines.append("")
    # The teardown steps' stdout is text (one line per server), not JSON.
    for step, title in [("teardown", "Servers stopped by SIGTERM under 32 streaming connections:"),
                        ("idle-teardown", "Servers stopped by SIGTERM holding 5,000 idle connections:")]:
        teardown = read(results / f"{step}.json")
        if teardown:
            lines += [title, ""]
            lines += [f"- {line}" for line in teardown.splitlines()] + [""]
            # Engines the step's own budget left out: said, not failed (nothing was found).
            NOT_CHECKED.extend(f"{kernel}: {step}: {line}" for line in teardown.splitlines()
                               if line.startswith("not reached"))

    try:
        listing = json.loads((results / "engines.json").read_text())
    except (OSError, ValueError):
        problems.append(f"{kernel}: `ringside engines` gave no listing")
        return lines, problems
    seen = {}
    for step in ENGINE_STEPS:
        for key, (verified, reasons) in verdicts(rows_of(results, step) or []).items():
            total = seen.setdefault(key, [0, []])
            total[0] += verified
            total[1] += [f"{step}: {reason}" for reason in reasons]

    workloads = list(dict.fromkeys(entry["workload"] for entry in listing))
    lines += ["| workload | available | verified | available, not verified | unavailable |",
              "|---|---|---|---|---|"]
    unavailable = []
    for workload in workloads:
        entries = [entry for entry in listing if entry["workload"] == workload]
        available = [entry["engine"] for entry in entries if entry["available"]]
        good, bad = [], []
        for engine in available:
            verified, reasons = seen.get((workload, engine), [0, []])
            if verified and not reasons:
                good.append(engine)
            else:
                why = "; ".join(sorted(set(reasons))) or (
                    "no row; failed steps: " + ", ".join(failed) if failed else "no study ran it")
                bad.append(f"{engine} ({why})")
                problems.append(f"{kernel}: {workload} {engine} available but not verified: {why}")
        refused = [entry for entry in entries if not entry["available"]]
        unavailable += [(workload, entry["engine"], entry["reason"]) for entry in refused]
        lines.append(f"| {workload} | {len(available)} of {len(entries)} | {len(good)} | "
                     f"{', '.join(bad) or '—'} | {len(refused)} |")
    lines.append("")
    if unavailable:
        lines += ["Unavailable, with the kernel's reason:", ""]
        lines += [f"- {workload} `{engine}`: {reason}" for workload, engine, reason in unavailable]
        lines.append("")

    lines.append(f"`run --quick` exit {read(results / 'run-quick.rc')}.")
    lines.append("")
    lines += special_checks(results, kernel, problems)
    return lines, problems


def special_checks(results, kernel, problems):
    """The IOPOLL rungs on the polled device and echo through netem: their own lines."""
    lines = []
    device = read(results / "poll-device", "no polled device")
    engines = read(results / "iopoll-engines", "")
    iopoll_rows = verdicts(rows_of(results, "iopoll") or [])
    if engines:
        status = ", ".join(
            f"{engine} {'verified' if verified and not reasons else 'FAILED: ' + '; '.join(reasons)}"
            for (_, engine), (verified, reasons) in iopoll_rows.items()) or "no rows"
        for engine in engines.split(","):
            verified, reasons = iopoll_rows.get(("fs-write", engine), [0, []])
            if not verified or reasons:
                problems.append(f"{kernel}: IOPOLL engine {engine} on {device} did not verify")
    else:
        status = "no engine became available on the polled device"
    # The engines that need poll queues and stay unavailable even on the polled device.
    try:
        listing = json.loads((results / "engines-poll.json").read_text())
        still = sorted({f"{entry['engine']} unavailable: {entry['reason']}" for entry in listing
                        if "poll queues" in entry.get("needs", "") and not entry["available"]})
        status += "".join(f"; {reason}" for reason in still)
    except (OSError, ValueError):
        status += "; no `engines --dir /poll` listing"
    lines.append(f"IOPOLL on `{device}` (fs write --direct): {status}.")
    netem_rows = verdicts(rows_of(results, "netem") or [])
    verified = sorted(engine for (_, engine), (runs, bad) in netem_rows.items() if runs and not bad)
    failed = sorted(engine for (_, engine), (runs, bad) in netem_rows.items() if bad or not runs)
    for engine in failed:
        problems.append(f"{kernel}: echo {engine} through netem did not verify")
    # The delay netem added shows in every row's median latency.
    p50s = [row["latency_ns_p50"] / 1000 for row in rows_of(results, "netem") or []
            if row.get("latency_ns_p50")]
    delay = f", lowest p50 {min(p50s):.0f} µs" if p50s else ""
    lines.append(f"netem (echo --network veth --rtt 200us --loss 0.1%), exit "
                 f"{read(results / 'netem.rc')}: {len(verified)} engines verified{delay}"
                 + (f", failed: {', '.join(failed)}" if failed else "") + ".")
    lines.append("")
    return lines


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    guests = [read(out / kernel / "lab" / "seconds") for kernel in sys.argv[2:]]
    guest_total = sum(float(seconds) for seconds in guests if seconds)
    lines = ["# Kernel lab", "", f"Binary: {read(out / 'binary-version', '?')}; lab total "
             f"{read(out / 'seconds', '?')} s with the waits for the bench lock, "
             f"{guest_total:.0f} s of guest time.", ""]
    problems = []
    for kernel in sys.argv[2:]:
        section, found = kernel_report(out, kernel)
        lines += section
        problems += found
    lines += ["## Verdict", ""]
    lines += [f"- {problem}" for problem in problems] or ["Every step exited 0 and every "
                                                         "available engine verified."]
    lines += [f"- {caveat}" for caveat in NOT_CHECKED]
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    print(text)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
