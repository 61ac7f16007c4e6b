//! The first minute of someone who knows wrk, fio and hyperfine: the target as a positional
//! argument, `--json FILE` on every study, `-o FILE` in the form its name says, help in words
//! a stranger understands, and one set of measured times wherever they are written.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{help, Server, BIN};
use serde_json::Value;

fn ringside(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn load_takes_its_target_positionally_as_wrk_and_curl_do() {
    let load = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend([
            "-c", "2", "-d", "200ms", "--warmup", "0s", "--format", "json",
        ]);
        ringside(&all)
    };
    if let Some(server) = Server::start("echo", "epoll", &[]) {
        let address = server.address.to_string();
        for args in [
            &["load", "echo", &address][..],
            &["load", "echo", "--target", &address],
        ] {
            let output = load(args);
            assert!(output.status.success(), "{args:?}: {}", stderr(&output));
            let document: Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(document["results"][0]["verified"], true);
        }
        let both = load(&["load", "echo", &address, "--target", &address]);
        assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    }
    if let Some(server) = Server::start("http", "epoll", &[]) {
        let url = format!("http://{}/", server.address);
        let output = load(&["load", "http", &url]);
        assert!(output.status.success(), "{}", stderr(&output));
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(document["results"][0]["verified"], true);
    }
    let none = ringside(&["load", "http", "-d", "1s"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("<URL>"), "{}", stderr(&none));
}

/// A one-run file study of 1 MiB with the blocking engine, with `extra` flags.
fn small_write(dir: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "fs", "write", "--size", "1m", "--runs", "1", "-e", "blocking", "-q",
        ])
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn json_goes_beside_any_format_and_output_takes_the_form_its_name_says() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let output = small_write(
        dir.path(),
        &["--json", &path("a.json"), "-o", &path("b.csv")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "",
        "a name that says its form gets no remark"
    );
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(path("a.json")).unwrap()).unwrap();
    assert_eq!(document["results"][0]["engine"], "blocking");
    let csv = std::fs::read_to_string(path("b.csv")).unwrap();
    assert!(csv.starts_with("workload,engine,"), "{csv}");
    assert_eq!(csv.lines().count(), 2, "{csv}");

    let output = small_write(dir.path(), &["-o", &path("c.json")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(path("c.json")).unwrap()).unwrap();
    assert_eq!(document["results"].as_array().unwrap().len(), 1);

    let output = small_write(dir.path(), &["-o", &path("d.md")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let markdown = std::fs::read_to_string(path("d.md")).unwrap();
    assert!(
        markdown.starts_with('#') && markdown.contains("| blocking"),
        "{markdown}"
    );

    // A name that says nothing, or --format against the name: the file holds what was asked,
    // and a name that promised nothing is told what it got.
    let output = small_write(dir.path(), &["-o", &path("e.txt")]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!(
            "wrote the results to {} as a table",
            path("e.txt")
        )),
        "{}",
        stderr(&output)
    );
    assert!(std::fs::read_to_string(path("e.txt"))
        .unwrap()
        .contains("blocking"));
    let output = small_write(dir.path(), &["--format", "csv", "-o", &path("f.json")]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read_to_string(path("f.json"))
        .unwrap()
        .starts_with("workload,"));

    // `report DIR` says where it wrote, and that it replaced what was there.
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    std::fs::copy(path("a.json"), results.join("results.json")).unwrap();
    let first = ringside(&["report", results.to_str().unwrap()]);
    assert!(first.status.success(), "{}", stderr(&first));
    let said = stderr(&first);
    assert!(
        said.contains(&results.join("report.md").display().to_string()) && !said.contains("replac"),
        "{said}"
    );
    let again = ringside(&["report", results.to_str().unwrap()]);
    assert!(stderr(&again).contains("replacing the reports that were there"));
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every time in minutes that `text` gives as what a command takes ("about N min"): the two
/// words before each "min" that follows "about", and the two after. A time measured once and
/// given as such ("took 4 min 49 s") is no promise.
fn minute_figures(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    (2..words.len())
        .filter(|&at| words[at].trim_end_matches(|c: char| !c.is_alphanumeric()) == "min")
        .filter(|&at| words[at - 2] == "about")
        .map(|at| words[at - 2..(at + 3).min(words.len())].join(" "))
        .collect()
}

#[test]
fn the_run_times_agree_in_help_readme_and_docs() {
    let (time, quick) = (
        ringside::run::MEASURED_TIME,
        ringside::run::MEASURED_QUICK_TIME,
    );
    let studies = [
        ringside::run::MEASURED_ECHO_TIME,
        ringside::run::MEASURED_HTTP_TIME,
    ];
    let flat = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let pages = [
        ("ringside --help".to_string(), flat(help(&[]))),
        ("ringside run --help".to_string(), flat(help(&["run"]))),
        (
            "README.md".to_string(),
            flat(std::fs::read_to_string(root().join("README.md")).unwrap()),
        ),
        (
            "docs/run.md".to_string(),
            flat(std::fs::read_to_string(root().join("docs/run.md")).unwrap()),
        ),
    ];
    for (name, text) in &pages {
        assert!(
            text.contains(time) && text.contains(quick),
            "{name} does not say {time:?} and {quick:?}"
        );
        // Every time in minutes it gives is one of those measured.
        for figure in minute_figures(text) {
            assert!(
                [time, quick]
                    .iter()
                    .chain(&studies)
                    .any(|measured| figure.contains(measured)),
                "{name} says {figure:?}, neither {time:?} nor {quick:?} nor {studies:?}"
            );
        }
    }
}

#[test]
fn one_exit_code_table() {
    let run = std::fs::read_to_string(root().join("docs/run.md")).unwrap();
    assert!(
        run.contains("(exit-codes.md)"),
        "docs/run.md links the table"
    );
    let tables = ["| exit |", "| code |"];
    assert!(
        !tables.iter().any(|header| run.contains(header)),
        "docs/run.md keeps a table of its own beside docs/exit-codes.md"
    );
    let codes = std::fs::read_to_string(root().join("docs/exit-codes.md")).unwrap();
    assert_eq!(
        codes.matches("| code |").count(),
        1,
        "docs/exit-codes.md holds the one table"
    );
}

/// Goal: the flags of wrk, oha and hyperfine do what their users expect. Method: `load http`
/// against a ringside server with wrk's `--latency` (latency is always recorded), oha's `-z`
/// for the duration and `--json` for the document on stdout (also when the URL follows it), a
/// URL without its scheme, and hyperfine's `--export-json`, `--export-csv` and
/// `--export-markdown`: each file in its form.
#[test]
fn the_flags_of_wrk_oha_and_hyperfine_work() {
    let Some(server) = Server::start("http", "epoll", &[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let url = format!("{}/", server.address);
    let short = ["-c", "2", "--warmup", "0s"];
    let mut args = vec!["load", "http", "--latency", "-z", "300ms", &url];
    args.extend(short);
    let (json, csv, markdown) = (path("a.json"), path("a.csv"), path("a.md"));
    args.extend(["--export-json", &json, "--export-csv", &csv]);
    args.extend(["--export-markdown", &markdown]);
    let output = ringside(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(document["results"][0]["verified"], true);
    assert!(document["results"][0]["latency_ns_p99"].as_u64().is_some());
    let seconds = document["results"][0]["seconds"].as_f64().unwrap();
    assert!(
        (0.2..1.0).contains(&seconds),
        "-z 300ms measured {seconds} s"
    );
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("workload,engine,study,cell,"));
    assert!(std::fs::read_to_string(&markdown).unwrap().starts_with('#'));
    for args in [
        vec!["load", "http", &url, "-z", "300ms", "--json"],
        vec!["load", "http", "-z", "300ms", "--json", &url],
    ] {
        let output = ringside(&[&args[..], &short[..]].concat());
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(document["results"][0]["verified"], true, "{args:?}");
    }
}
