//! `report`, `compare` and `run` against the real binary. Goal: a results document renders to
//! both report files with drawn charts and every engine named; compare's verdicts and exit
//! codes hold on hand-made documents; `run --quick` produces all four files within a couple of
//! minutes, and re-rendering its JSON gives the same report. Method: fixtures in
//! tests/fixtures (one from a real `run --quick`, the others hand-made) copied into temporary
//! directories.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{json, Value};

fn ringside(args: &[&str]) -> Output {
    Command::cargo_bin("ringside")
        .unwrap()
        .args(args)
        .output()
        .unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Copies a fixture into a fresh directory as results.json, as `run` would have left it.
fn results_dir(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(name), dir.path().join("results.json")).unwrap();
    dir
}

fn engines_of(path: &Path) -> Vec<String> {
    let document: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut engines: Vec<String> = document["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["engine"].as_str().unwrap().to_string())
        .collect();
    engines.dedup();
    engines
}

/// Every inline SVG in the page; each must have drawn shapes, not only an empty canvas.
fn assert_charts_drawn(html: &str, at_least: usize) {
    let svgs: Vec<&str> = html.split("<svg").skip(1).collect();
    assert!(
        svgs.len() >= at_least,
        "{} charts, expected {at_least}",
        svgs.len()
    );
    for svg in svgs {
        let body = &svg[..svg.find("</svg>").expect("closed svg")];
        assert!(
            body.contains("<rect") || body.contains("<polyline"),
            "empty chart"
        );
        assert!(body.contains("<text"), "chart without labels");
    }
    assert!(
        !html.contains("<script") && !html.contains("<link"),
        "the page must be self-contained"
    );
}

#[test]
fn report_renders_markdown_and_html_from_a_real_run() {
    let dir = results_dir("run-quick.json");
    let output = ringside(&["report", dir.path().to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let markdown = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for engine in engines_of(&dir.path().join("results.json")) {
        assert!(
            markdown.contains(&format!("| {engine} ")),
            "{engine} missing from report.md"
        );
        assert!(html.contains(&engine), "{engine} missing from report.html");
    }
    assert!(markdown.contains(WRITES) && markdown.contains(CYCLE));
    assert!(
        markdown.contains("Against blocking's MB/s"),
        "no verdict: {markdown}"
    );
    assert_answer_first(&markdown, WRITES);
    assert!(
        markdown.contains("echo: skipped"),
        "the skipped step is not noted"
    );
    assert_charts_drawn(&html, 6);
    assert!(html.contains("feature") || html.contains("bought over"));
    assert!(html.contains("Environment") && html.contains("kernel"));
}

#[test]
fn latency_rows_get_percentile_columns_and_a_chart_per_study() {
    let dir = results_dir("echo-hand.json");
    assert!(ringside(&["report", dir.path().to_str().unwrap()])
        .status
        .success());
    let markdown = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert_eq!(
        markdown
            .lines()
            .filter(|line| line.starts_with("## echo"))
            .count(),
        2,
        "one table per connection count"
    );
    assert!(markdown.contains("msg/s median") && markdown.contains("p99 µs"));
    assert!(
        markdown.contains(
            "uring and uring-multishot undecided (0.84× no interval, 3 rounds; 1.10× no \
             interval, 3 rounds)"
        ),
        "{markdown}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    // One chart per study, each titled (its <title> and its drawn heading both say it).
    let titles = (html.split("<title>").skip(1)).map(|t| t.split("</title>").next().unwrap_or(""));
    let latency = titles.filter(|t| t.contains("latency percentiles per engine"));
    assert_eq!(latency.count(), 2);
    assert!(
        html.contains("closed loop"),
        "charts must state the load model"
    );
    assert_charts_drawn(&html, 8);
}

#[test]
fn an_older_schema_is_refused_in_one_sentence() {
    let output = ringside(&["report", fixture("old-schema.json").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("schema_version 0") && stderr.contains("reads only version 1"));
}

/// A one-engine fs-write document with three runs at `mb_per_sec` × (0.98, 1.0, 1.02).
fn document(kernel: &str, mb_per_sec: f64) -> Value {
    let rows: Vec<Value> = [0.98, 1.0, 1.02, 0.99, 1.01, 1.0, 0.985, 1.015]
        .iter()
        .enumerate()
        .map(|(index, factor)| {
            json!({"workload": "fs-write", "engine": "blocking", "params": {"size": "64M"},
                   "run": index + 1, "seconds": 1.0, "ops": 1000, "bytes": 4096000,
                   "ops_per_sec": 1000.0, "bytes_per_sec": mb_per_sec * factor * 1e6,
                   "syscalls": 1000, "syscalls_source": "kernel", "cpu_user_s": 0.0,
                   "cpu_sys_s": 0.001, "ctx_switches_voluntary": 0,
                   "ctx_switches_involuntary": 0, "verified": true, "errors": 0})
        })
        .collect();
    json!({"schema_version": 1, "ringside_version": "0.1.0", "command": "hand-made",
           "env": {"host": {"kernel_release": kernel}}, "results": rows})
}

fn write(dir: &Path, name: &str, document: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(document).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn compare_calls_noise_and_fails_ci_only_on_a_real_drop() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "a.json", &document("6.18", 1000.0));
    let same = write(dir.path(), "b.json", &document("6.18", 1010.0));
    let slower = write(dir.path(), "c.json", &document("6.18", 700.0));
    let output = ringside(&["compare", &base, &same, "--fail-if-slower", "5"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("1.01×") && !stdout.contains("faster") && !stdout.contains("slower"),
        "{stdout}"
    );
    let output = ringside(&["compare", &base, &slower, "--fail-if-slower", "10"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stdout).contains("slower"));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("is 30% slower (["),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = ringside(&["compare", &base, &slower, "--fail-if-slower", "40"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "a 30% drop is within a 40% budget"
    );
}

/// Goal: serialized histograms change nothing for `report` and `compare`, and documents
/// written before rows carried them still work beside documents that carry them. Method: the
/// same hand-made document with and without `latency_ns_histogram` on every row.
#[test]
fn documents_with_and_without_histograms_report_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let mut histogram = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    histogram.record(50_000).unwrap();
    let text = ringside::stats::histogram::encode(&histogram).unwrap();
    let mut with = document("6.18", 1000.0);
    for row in with["results"].as_array_mut().unwrap() {
        row["latency_ns_p99"] = json!(50_000);
        row["latency_ns_histogram"] = json!(text);
    }
    let without = write(dir.path(), "without.json", &document("6.18", 1000.0));
    let with = write(dir.path(), "with.json", &with);
    for (a, b) in [(&without, &with), (&with, &without)] {
        let output = ringside(&["compare", a, b]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let out = dir.path().join("report");
    let output = ringside(&["report", &with, "--out", out.to_str().unwrap()]);
    assert!(output.status.success());
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("| blocking "), "{markdown}");
}

#[test]
fn compare_refuses_another_kernel_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "a.json", &document("6.18", 1000.0));
    let other = write(dir.path(), "b.json", &document("6.1", 1000.0));
    let output = ringside(&["compare", &base, &other]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("kernel") && stderr.contains("--force"),
        "{stderr}"
    );
    let output = ringside(&["compare", &base, &other, "--force"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("WARNING"));
}

#[test]
fn run_quick_writes_all_four_files_and_its_report_re_renders_the_same() {
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = ringside(&["run", "--quick", "--out", out.path().to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // A fresh checkout's first run builds the reference contenders first, and says how long
    // that took; the study itself stays quick.
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap())
            .unwrap();
    let build_seconds = (document["notes"].as_array().into_iter().flatten())
        .filter_map(|note| note.as_str()?.strip_prefix("contenders: built "))
        .filter_map(|rest| rest.rsplit(" in ").next()?.strip_suffix(" s")?.parse().ok())
        .next()
        .unwrap_or(0);
    assert!(
        started.elapsed() < Duration::from_secs(180 + build_seconds),
        "--quick took {:?}, {build_seconds} s of it building contenders",
        started.elapsed()
    );
    for file in ["results.json", "results.csv", "report.md", "report.html"] {
        let length = std::fs::metadata(out.path().join(file))
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(length > 0, "{file} missing or empty");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.trim_end(),
        out.path().to_str().unwrap(),
        "stdout carries only the results directory"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ringside run: step 1/6, fs write 4k: "),
        "without a terminal, plain step lines: {stderr}"
    );
    // The plan first, a line per step, the path of the report last; no line per run (`-v`).
    let lines: Vec<&str> = stderr.lines().collect();
    let plan = lines
        .iter()
        .find(|line| !line.contains("building the reference"));
    assert!(
        plan.is_some_and(|plan| plan.contains("6 steps, planned ")),
        "{stderr}"
    );
    let last = lines.last().copied().unwrap_or_default();
    assert!(last.ends_with("report.html"), "{stderr}");
    let building = lines
        .iter()
        .filter(|line| line.contains("building the reference"))
        .count();
    // Then a blank line, the answer (the headline sentences and the answers' table) and the
    // report's path.
    let blank = lines.iter().position(|line| line.is_empty());
    let blank = blank.unwrap_or_else(|| panic!("no answer after the steps: {stderr}"));
    // A step may say what went wrong in it (on a machine whose other jobs took the load's core,
    // "the load's own open loop held none of the rates"): a sentence, never a line per run.
    let alerts = (lines[..blank].iter())
        .filter(|line| line.starts_with("ringside: "))
        .count();
    assert!(blank <= 1 + 6 + building + alerts, "{stderr}");
    let answer = &lines[blank + 1..lines.len() - 1];
    assert!(
        answer.first().is_some_and(
            |line| ["On this machine ", "None of the ", "The one answer "]
                .iter()
                .any(|start| line.starts_with(start))
        ),
        "{stderr}"
    );
    assert!(
        answer.iter().any(|line| line.contains("what wins")),
        "{stderr}"
    );
    let first = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert_wrk_control(&out.path().join("results.json"), &first);
    assert_reference_contenders(&out.path().join("results.json"), &first);
    let again = tempfile::tempdir().unwrap();
    let json = out.path().join("results.json");
    let output = ringside(&[
        "report",
        json.to_str().unwrap(),
        "--out",
        again.path().to_str().unwrap(),
    ]);
    assert!(output.status.success());
    assert_eq!(
        std::fs::read_to_string(again.path().join("report.md")).unwrap(),
        first
    );
    assert!(first.contains(WRITES) && first.contains(CYCLE), "{first}");
    let scratch: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        scratch.len(),
        4,
        "only the four result files stay behind: {scratch:?}"
    );
}

/// Goal: where wrk is installed, `run` runs it beside the HTTP step and the report shows it in
/// the HTTP tables as a control, unverified as fio's rows are; where it is missing, the
/// document says so. Part of the `run --quick` test, so the study runs once.
fn assert_wrk_control(json: &Path, markdown: &str) {
    let document: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let wrk_rows: Vec<&Value> = document["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["engine"] == "wrk epoll")
        .collect();
    let missing = ["wrk", "taskset"]
        .into_iter()
        .find(|tool| !ringside::run::control::on_path(tool));
    if let Some(tool) = missing {
        eprintln!("skipped the wrk control check: {tool} is not on PATH");
        assert!(wrk_rows.is_empty());
        let notes = document["notes"].to_string();
        assert!(
            notes.contains("the wrk HTTP control did not run"),
            "{notes}"
        );
        return;
    }
    assert!(!wrk_rows.is_empty(), "no wrk control rows");
    for row in &wrk_rows {
        assert_eq!(row["workload"], "http");
        assert_eq!(row["params"]["control"], true);
        assert_eq!(row["verified"], false, "wrk does not verify");
        assert!(row["ops_per_sec"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["latency_ns_p99"].as_u64().is_some(), "{row}");
    }
    let in_http_tables = markdown
        .split("\n## ")
        .filter(|section| section.starts_with("http"))
        // The equal-load section compares open-loop rows; wrk's control is closed loop.
        .filter(|section| {
            !section
                .lines()
                .next()
                .unwrap_or("")
                .ends_with("at equal load")
        })
        .all(|section| section.contains("| wrk epoll (control)"));
    assert!(in_http_tables, "{markdown}");
    assert!(markdown.contains("Controls: wrk epoll"), "{markdown}");
}

/// Goal: `run` (`--contenders auto` by default) measures the reference contenders that
/// contenders/build.sh built beside the binary in the echo and HTTP steps, verified, and the
/// report gives them their table; one that is not built is a note that says so. Part of the
/// `run --quick` test, so the study runs once.
fn assert_reference_contenders(json: &Path, markdown: &str) {
    let document: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let rows = document["results"].as_array().unwrap();
    let notes = document["notes"].to_string();
    for name in ["node", "go", "tokio", "monoio"] {
        let engine = format!("contender:{name}");
        let measured: Vec<&Value> = rows.iter().filter(|r| r["engine"] == engine).collect();
        if measured.is_empty() {
            assert!(
                notes.contains(&format!("contender {name}: not run")),
                "{notes}"
            );
            eprintln!("contender {name} was not built here: {notes}");
            continue;
        }
        for workload in ["echo", "http"] {
            assert!(
                measured.iter().any(|r| r["workload"] == workload),
                "{engine} has no {workload} row"
            );
        }
        assert!(
            measured.iter().all(|r| r["verified"] == true),
            "{measured:?}"
        );
        assert!(markdown.contains(&format!("| {engine}")), "{markdown}");
    }
}

#[test]
fn ctrl_c_stops_run_in_the_current_step_and_still_reports() {
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::cargo_bin("ringside")
        .unwrap()
        // No contenders: their first build would take the signal instead of the fs step.
        .args(["run", "--quick", "--contenders", "none", "--out"])
        .arg(out.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The first step (fs write) takes seconds; the signal lands while it runs, and `run`
    // passes it on, so the step ends after its current run and keeps the runs it finished.
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let markdown = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        markdown.contains("fs write 4k: interrupted"),
        "the interrupted step is named: {markdown}"
    );
    assert!(
        markdown.contains("fs cycle: not run, the study was interrupted"),
        "{markdown}"
    );
    assert!(out.path().join("results.csv").exists() && out.path().join("report.html").exists());
}

/// The sections of run --quick's two file studies, headed in words.
const WRITES: &str = "## buffered 4 KiB writes";
const CYCLE: &str = "## the fsync page cycle";

/// The report opens with the answer, all before `first_table`: the headline, a table of what
/// wins, by how much and how sure, then what to do about it, the features that helped and
/// hurt, the caveats, and each answer in full; the integrity checks (cells only contenders ran)
/// come after the answers, never among them.
fn assert_answer_first(page: &str, first_table: &str) {
    let answer = page
        .find("The answer on this machine")
        .expect("no answer section");
    let table = answer + page[answer..].find(first_table).expect("no study table");
    let screen = &page[answer..table];
    let mut at = 0;
    for heading in [
        "what wins",
        "by how much",
        "how sure",
        "What to do about it",
        "Features that made a decided difference",
        "Features that cost",
        "Caveats",
        "Each answer in full",
    ] {
        let found = screen[at..].find(heading);
        assert!(
            found.is_some(),
            "{heading} missing or out of order in {screen}"
        );
        at += found.unwrap();
    }
    for study in ["4 KiB writes", "page cycle"] {
        assert!(screen.contains(study), "{study} missing from the answer");
    }
    if let Some(integrity) = screen.find("Integrity checks") {
        assert!(integrity > at, "integrity checks among the answers");
    }
    assert!(
        screen.contains(" rounds") || screen.contains(" round)"),
        "no rounds in the answer"
    );
}

/// Headless Chromium on `page` with `extra` arguments (`--dump-dom`, `--screenshot=`).
fn in_chromium(chromium: &Path, page: &str, extra: &[String]) -> Output {
    Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
        ])
        .args(extra)
        .arg(page)
        .output()
        .unwrap()
}

/// Goal: a study that sweeps `--work` gets a section with server CPU per message against the
/// work, drawn in a real browser, and a verdict of how much of an engine's advantage over its
/// tree's baseline is left. Method: a real echo study at no work and 10 µs (epoll and
/// uring-defer, or blocking and threads without io_uring), one short run each, reported and
/// loaded by headless Chromium. Which engine leads is the machine's business: only that the
/// sentence and the chart are there is checked.
#[test]
fn a_work_sweep_draws_its_chart_and_verdict() {
    let uring = ringside::engines::find(ringside::engines::Workload::Echo, "uring-defer")
        .is_ok_and(|engine| engine.availability().is_ok());
    let (engines, rung, base) = match uring {
        true => ("epoll,uring-defer", "uring-defer", "epoll"),
        false => ("blocking,threads", "threads", "blocking"),
    };
    let dir = tempfile::tempdir().unwrap();
    let study = ringside(&[
        "echo",
        "--engine",
        engines,
        "--work",
        "0us,10us",
        "--connections",
        "1",
        "--runs",
        "1",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
        "--format",
        "json",
        "--quiet",
    ]);
    assert!(study.status.success(), "{study:?}");
    std::fs::write(dir.path().join("results.json"), &study.stdout).unwrap();
    assert!(ringside(&["report", dir.path().to_str().unwrap()])
        .status
        .success());
    let markdown = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let verdict = format!("{rung} against {base}, server CPU per request as a share of {base}'s");
    assert!(markdown.contains("against work per request"), "{markdown}");
    assert!(markdown.contains(&verdict), "{markdown}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let section = &html[html.find("against work per request <a").expect("a section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert_charts_drawn(section, 1);
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        eprintln!("not drawn: /usr/bin/chromium is missing (CI installs Debian's chromium)");
        return;
    }
    let page = format!("file://{}", dir.path().join("report.html").display());
    let dom = in_chromium(chromium, &page, &["--dump-dom".to_string()]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let built = String::from_utf8_lossy(&dom.stdout);
    let section = &built[built
        .find("against work per request <a")
        .expect("a section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains(&verdict), "{section}");
    assert_charts_drawn(section, 1);
}

/// Goal: the page draws in a real browser, and its first screen is the answer. Method: headless Chromium loads report.html, dumps
/// the DOM it built and takes a screenshot; the charts must be in the DOM, the screenshot must
/// be a real PNG, and the console must report no error. Skipped where Chromium is missing.
#[test]
fn the_html_report_draws_in_headless_chromium() {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        eprintln!("skipped: /usr/bin/chromium is missing (CI installs Debian's chromium)");
        return;
    }
    let dir = results_dir("run-quick.json");
    assert!(ringside(&["report", dir.path().to_str().unwrap()])
        .status
        .success());
    let page = format!("file://{}", dir.path().join("report.html").display());
    let shot = dir.path().join("report.png");
    let browser = |extra: &[String]| in_chromium(chromium, &page, extra);
    let dom = browser(&["--dump-dom".to_string()]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let built = String::from_utf8_lossy(&dom.stdout);
    assert!(built.matches("<svg").count() >= 6);
    // The answer opens with its sentences and its table, then its charts, one per study.
    let answer = built.find("The answer on this machine").unwrap();
    let headline = answer + built[answer..].find("class=\"headline\"").unwrap();
    let table = answer + built[answer..].find("class=\"answers\"").unwrap();
    let first_chart = answer + built[answer..].find("<svg").unwrap();
    assert!(
        headline < table && table < first_chart,
        "a chart above the answer's sentences and table"
    );
    assert_answer_first(&built, "id=\"s0\"");
    // Every chart has a title and a text alternative; every section links somewhere.
    for svg in built.split("<svg").skip(1) {
        assert!(
            svg.contains("<title>") && svg.contains("<desc>"),
            "a chart without a title: {}",
            &svg[..svg.len().min(300)]
        );
    }
    // Each of the outline's sections (those with an anchor), up to the next section.
    for section in built.split("<section").skip(1) {
        if !section.starts_with(" id=") {
            continue;
        }
        let end = section.find("</section>").unwrap_or(section.len());
        let section = &section[..end];
        assert!(
            section.contains("<a "),
            "a section without a link: {section}"
        );
    }
    let screenshot = [
        format!("--screenshot={}", shot.display()),
        "--window-size=1200,4000".into(),
    ];
    let output = browser(&screenshot);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let console_errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("CONSOLE") && line.to_lowercase().contains("error"))
        .collect();
    assert!(console_errors.is_empty(), "{console_errors:?}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} byte screenshot",
        png.len()
    );
}

/// Goal: `run --budget` keeps to its budget and says what it left out. Method: the file part
/// alone (`--only fs`) in a minute, which holds the first step and no other: exit 0 well within
/// the minute (and the watchdog's grace), the plan's line naming what had no room, the results
/// holding only file rows, and the report's notes saying why each other step is missing.
#[test]
fn run_keeps_to_its_budget_and_says_what_it_left_out() {
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = ringside(&[
        "run",
        "--budget",
        "1m",
        "--only",
        "fs",
        "--contenders",
        "none",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(75), "{stderr}");
    assert!(
        stderr.contains("left out, no room in the budget: "),
        "{stderr}"
    );
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap())
            .unwrap();
    let rows = document["results"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|row| row["workload"]
        .as_str()
        .is_some_and(|w| w.starts_with("fs-"))));
    let notes: Vec<&str> = (document["notes"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|note| note.contains("did not fit the") && note.contains("left of the budget")),
        "{notes:?}"
    );
}
