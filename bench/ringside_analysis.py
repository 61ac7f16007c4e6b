"""What bench/ scripts share: ringside's own analysis of results documents, for the scripts to
format. Nothing here computes a figure: documents are read, pooled (rounds kept apart) and
handed to `ringside report --format json` or `ringside compare --format json`, whose medians,
ranges, ratios, intervals and outcomes the scripts print as they come.

The binary is $RINGSIDE, else this checkout's target/release/ringside, else `ringside` on PATH.
"""
import json
import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def binary():
    built = ROOT / "target" / "release" / "ringside"
    return os.environ.get("RINGSIDE") or (str(built) if built.exists() else "ringside")


def load(path):
    """A JSON document, skipping any lines a tool printed before it (fio's notes)."""
    text = pathlib.Path(path).read_text()
    return json.loads(text[text.index("{"):])


def pooled(paths, keep=None):
    """One results document from several of the same study (rounds measured in separate
    invocations): each document's runs renumbered after the previous document's, so a round
    stays a round, and `keep(row)` choosing rows. The pooled rounds were fixed in advance, so the
    rows' `looks` (an invocation's own sequential stops) are dropped."""
    document, offset = None, 0
    for path in paths:
        one = load(path)
        last = max((row["run"] for row in one["results"]), default=0)
        rows = [row for row in one["results"] if keep is None or keep(row)]
        for row in rows:
            row["run"] += offset
            row.pop("looks", None)
        offset += last
        if document is None:
            document = dict(one, results=rows)
        else:
            document["results"] += rows
    return document


def _run(*args, document=None):
    """Runs ringside with `args`, each document written to a temporary file first."""
    with tempfile.TemporaryDirectory() as scratch:
        argv = [binary()]
        for index, arg in enumerate(args):
            if isinstance(arg, dict):
                path = os.path.join(scratch, f"document-{index}.json")
                with open(path, "w") as handle:
                    json.dump(arg, handle)
                arg = path
            argv.append(str(arg))
        done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(argv[:2])}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def report(document):
    """`ringside report --format json` of a document (a path or a dict): the whole analysis."""
    return _run("report", "--format", "json", document)


def compare(base, new):
    """`ringside compare --force --format json BASE NEW`: each engine and metric, B over A."""
    return _run("compare", "--force", "--format", "json", base, new)


def params(item):
    """An exported study's or comparison's parameters as a dict of text."""
    return dict(pair.split("=", 1) for pair in item["params"].split())


def studies(analysis, **wanted):
    """The analysis' studies whose parameters include `wanted` (values compared as text)."""
    return [study for study in analysis["studies"]
            if all(params(study).get(k) == str(v) for k, v in wanted.items())]


def engine_of(study, name):
    """An engine's (or contender's) figures in an exported study, or None."""
    return next((e for e in study["engines"] + study["contenders"] if e["engine"] == name), None)


def decided(analysis, study, subject, reference, metric="throughput"):
    """The comparison of `subject` over `reference` the analysis decided in `study`, or None."""
    return next((c for c in analysis["comparisons"]
                 if c["study"] == study["study"] and c["params"] == study["params"]
                 and (c["subject"], c["reference"], c["metric"]) == (subject, reference, metric)),
                None)


def rung(analysis, study, subject, metric="throughput"):
    """The first comparison the analysis decided in `study` with `subject` as its subject on
    `metric`: a rung over the engine it extends, or an engine over its line's baseline."""
    return next((c for c in analysis["comparisons"]
                 if c["study"] == study["study"] and c["params"] == study["params"]
                 and c["subject"] == subject and c["metric"] == metric), None)


def spread(figure, digits=0, scale=1.0, sep="–", unit=""):
    """An exported median and range, "median (min–max)", each times `scale` (a unit's), `unit`
    after the median ("16.3k (15.6–18.0)")."""
    if figure is None:
        return "—"
    median, low, high = (figure[k] * scale for k in ("median", "min", "max"))
    return f"{median:,.{digits}f}{unit} ({low:,.{digits}f}{sep}{high:,.{digits}f})"


def number(value, digits=2, scale=1.0):
    return "—" if value is None else f"{value * scale:,.{digits}f}"


OUTCOME = {"different": "different", "equivalent": "no difference beyond 3%",
           "within": "within 10%", "undecided": "undecided"}


def ratio(comparison, digits=2):
    """A decided comparison as ringside states it: ratio, interval at its level, outcome."""
    if comparison is None:
        return "—"
    interval = (f" [{comparison['low']:.{digits}f}–{comparison['high']:.{digits}f}]"
                if comparison.get("low") is not None else " (no interval)")
    return (f"{comparison['ratio']:.{digits}f}×{interval}, {comparison['rounds']} rounds, "
            f"{OUTCOME.get(comparison['outcome'], comparison['outcome'])}")


def change(row, digits=2):
    """A `compare` row's B/A as ringside decided it."""
    if row is None:
        return "—"
    interval = (f" [{row['low']:.{digits}f}–{row['high']:.{digits}f}]"
                if row.get("low") is not None else " (no interval)")
    return f"{row['ratio']:.{digits}f}×{interval} {OUTCOME.get(row['outcome'], row['outcome'])}"


def over_control(document, engine, control, keep=lambda row: True):
    """The analysis' paired comparison of `engine` over the control `control` on the headline,
    from a document of their rows alone (`keep` choosing the cell), so `engine` is the study's
    baseline and the control is compared with it round by round."""
    rows = [r for r in document["results"] if r["engine"] in (engine, control) and keep(r)]
    analysis = report(dict(document, results=rows))
    if not analysis["studies"]:
        return None
    return decided(analysis, analysis["studies"][0], engine, control)


def fio_rounds(pairs, engine, fio_name, jobs, label=None, keep=lambda row: True):
    """`engine`'s rows of each ringside document (those `keep` chooses: one cell) and fio's job
    of the same round as a control, round i being the i-th (ringside path, fio path) of `pairs`;
    `label` (ours, fio's) renames the two sides. Returns the first document and the rows."""
    first, rows = None, []
    for index, (ours, theirs) in enumerate(pairs, 1):
        document = load(ours)
        first = first or document
        found = [dict(r, run=index) for r in document["results"]
                 if r["engine"] == engine and keep(r)]
        assert found and all(r["verified"] for r in found), f"{ours}: {engine} not verified"
        control = fio_control(load(theirs), "fs-read", fio_name, found[0]["params"], index, jobs)
        if label:
            found = [dict(r, engine=label[0]) for r in found]
            control["engine"] = label[1]
        rows += found + [control]
    return first, rows


def against_fio(pairs, engine, fio_name, jobs):
    """The analysis of `fio_rounds`: (the engine's figures, fio's, the engine over fio paired by
    round), or None without a round."""
    if not pairs:
        return None
    first, rows = fio_rounds(pairs, engine, fio_name, jobs)
    analysis = report(dict(first, results=rows))
    study = analysis["studies"][0]
    return (engine_of(study, engine), engine_of(study, fio_name),
            decided(analysis, study, engine, fio_name))


def helpers_table(analyses, per_fsync):
    """The file studies' engines with their helper threads, one line per depth and engine, as
    bench/threads.md and bench/files.md show them: `analyses` maps a depth to its analysis."""
    flushes = "device flushes per fsync" if per_fsync else "device flushes per run"
    print(f"| depth | engine | headline median (min–max) | seconds median | {flushes} | "
          "io-wq workers | their ctx switches per op | ctx switches per op | CPU µs/op | verified "
          "| over the first engine (decided) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for depth, analysis in analyses.items():
        for study in analysis["studies"]:
            first = study["engines"][0]["engine"]
            for one in study["engines"]:
                counted = one["counted"]
                flush = counted["device_flushes_per_op" if per_fsync else "device_flushes"]
                against = decided(analysis, study, one["engine"], first)
                print(f"| {depth} | {one['engine']} | {spread(one['throughput'], 0)} "
                      f"{study['unit']} | {counted['seconds']:.2f} | {number(flush)} | "
                      f"{number(counted['iowq_workers'], 0)} | "
                      f"{number(counted['iowq_ctx_switches_per_op'])} | "
                      f"{number(counted['ctx_switches_per_op'])} | "
                      f"{one['cpu_us_per_op']['median']:.1f} | "
                      f"{'yes' if one['verified'] else 'NO'} | {ratio(against)} |")


def fio_control(fio_json, workload, name, params_of, run, jobs=1, cpu=None):
    """fio's own figures of one job as a control row of `workload` (as `ringside run` records
    its fio controls: control, syscalls not counted, data not verified by ringside), so the
    analysis pairs it round by round with the engine measured beside it. fio's usr/sys are a
    share of one CPU averaged over its `jobs` (numjobs), so the process's CPU is that times the
    jobs; `cpu` (user and system seconds, e.g. from `/usr/bin/time`) replaces them when given."""
    job = fio_json["jobs"][0]
    side = job["read"] if workload == "fs-read" else job["write"]
    seconds = side["runtime"] / 1e3
    percentile = side.get("clat_ns", {}).get("percentile", {})
    user, system = cpu or (job["usr_cpu"] / 100 * seconds * jobs, job["sys_cpu"] / 100 * seconds * jobs)
    return {
        "workload": workload, "engine": name, "params": dict(params_of, control=True),
        "run": run, "seconds": seconds, "ops": side["total_ios"], "bytes": side["io_bytes"],
        "ops_per_sec": side["iops"], "bytes_per_sec": side["bw_bytes"], "syscalls": 0,
        "syscalls_source": "none", "cpu_user_s": user, "cpu_sys_s": system,
        "ctx_switches_voluntary": job["ctx"], "ctx_switches_involuntary": 0,
        "verified": False, "errors": 0,
        "latency_ns_p50": percentile.get("50.000000"),
        "latency_ns_p99": percentile.get("99.000000"),
        "notes": ["fio's own figures, as a control: syscalls not counted, data not verified"],
    }
