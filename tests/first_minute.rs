//! The first minute of someone who knows wrk, fio and hyperfine: the target as a positional
//! argument, `--json FILE` on every study, `-o FILE` in the form its name says, help in words
//! a stranger understands, and one set of measured times wherever they are written.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clap::CommandFactory;
use common::{Server, BIN};
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

/// Every subcommand path of the command line, each as its words (`["fs", "write"]`).
fn every_command() -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, path: Vec<String>, all: &mut Vec<Vec<String>>) {
        all.push(path.clone());
        for sub in command.get_subcommands() {
            let mut next = path.clone();
            next.push(sub.get_name().to_string());
            walk(sub, next, all);
        }
    }
    let mut all = Vec::new();
    walk(&ringside::cli::Cli::command(), Vec::new(), &mut all);
    all
}

fn help(path: &[String]) -> String {
    let output = Command::new(BIN).args(path).arg("--help").output().unwrap();
    assert!(output.status.success(), "{path:?} --help");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn every_study_takes_json_and_no_help_speaks_the_projects_own_language() {
    let studies = [
        "fs write",
        "fs cycle",
        "fs read",
        "echo",
        "http",
        "load echo",
        "load http",
        "run",
    ];
    for path in every_command() {
        let text = help(&path);
        let lower = text.to_lowercase();
        for internal in ["seed 0", "seeds 0", "netbench", "source documents"] {
            assert!(
                !lower.contains(internal),
                "`ringside {} --help` says {internal:?}:\n{text}",
                path.join(" ")
            );
        }
        if studies.contains(&path.join(" ").as_str()) {
            assert!(text.contains("--json <FILE>"), "{path:?} has no --json");
        }
    }
    let fs = help(&["fs".into()]);
    for study in ["write", "cycle", "read"] {
        assert!(fs.contains(&format!("  {study} ")), "{fs}");
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every time in minutes that `text` gives: the two words before each "min" and the two after.
fn minute_figures(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    (0..words.len())
        .filter(|&at| words[at].trim_end_matches(|c: char| !c.is_alphanumeric()) == "min")
        .map(|at| words[at.saturating_sub(2)..(at + 3).min(words.len())].join(" "))
        .collect()
}

#[test]
fn the_run_times_agree_in_help_readme_and_docs() {
    let (time, quick) = (
        ringside::run::MEASURED_TIME,
        ringside::run::MEASURED_QUICK_TIME,
    );
    let flat = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let pages = [
        ("ringside --help".to_string(), flat(help(&[]))),
        (
            "ringside run --help".to_string(),
            flat(help(&["run".into()])),
        ),
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
        // Every time in minutes it gives is one of the two.
        for figure in minute_figures(text) {
            assert!(
                figure.contains(time) || figure.contains(quick),
                "{name} says {figure:?}, neither {time:?} nor {quick:?}"
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
