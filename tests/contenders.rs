//! Contenders (`--contender NAME=COMMAND`): a tiny Python server (tests/fixtures/contender.py)
//! run through the whole study path beside an engine, and each documented outcome of a
//! contender that misbehaves: exits at once, never listens, dies mid-run, corrupts bytes,
//! ignores SIGTERM. Every test ends by checking that nothing it started is still running.
//! Without python3 they skip with the reason.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ringside");
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/contender.py");

/// `NAME=python3 contender.py MODE {port} MARKER`, or None (and why) without python3.
fn python_contender(name: &str, mode: &str, marker: &str) -> Option<String> {
    let found = Command::new("python3").arg("--version").output();
    if !found.is_ok_and(|output| output.status.success()) {
        eprintln!("skipped: python3 is not installed, and the test contenders are Python");
        return None;
    }
    Some(format!("{name}=python3 {FIXTURE} {mode} {{port}} {marker}"))
}

/// A marker no other test uses, so that a leftover process is this test's.
fn marker(test: &str) -> String {
    format!("ringside-test-{test}-{}", std::process::id())
}

/// Runs a short study (`protocol` with `args`), JSON on stdout; bounded by a generous timeout.
fn study(protocol: &str, args: &[&str]) -> (Output, Vec<Value>) {
    let output = assert_cmd::Command::new(BIN)
        .arg(protocol)
        .args(["--runs", "1", "--duration", "1s", "--warmup", "100ms"])
        .args(["--format", "json", "--quiet"])
        .args(args)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let rows = document["results"].as_array().cloned().unwrap_or_default();
    (output, rows)
}

/// The processes whose command line holds `marker`, after the study: none may be left. A
/// killed process may take a moment to disappear from /proc.
fn assert_nothing_left(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
            .filter(|cmdline| cmdline.contains(marker))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn rows_of<'a>(rows: &'a [Value], engine: &str) -> Vec<&'a Value> {
    rows.iter().filter(|row| row["engine"] == engine).collect()
}

#[test]
fn a_script_contender_is_measured_beside_an_engine_with_every_thread_counted() {
    let marker = marker("measured");
    let Some(py) = python_contender("py", "echo", &marker) else {
        return;
    };
    let (output, rows) = study(
        "echo",
        &[
            "--engine",
            "epoll",
            "--connections",
            "2",
            "--contender",
            &py,
        ],
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(rows_of(&rows, "epoll").len(), 1, "{rows:?}");
    let contender = rows_of(&rows, "contender:py");
    // One ping-pong cell, then the slow-reader integrity stream.
    assert_eq!(contender.len(), 2, "{rows:?}");
    for row in &contender {
        assert_eq!(row["verified"], true, "{row}");
        assert!(row["failure"].is_null(), "{row}");
        assert!(row["params"]["command"]
            .as_str()
            .unwrap()
            .contains("{port}"));
        assert!(row["server_cpu_s"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["rss_peak_bytes"].as_u64().unwrap() > 1 << 20, "{row}");
        assert_eq!(
            row["server_api"], "none",
            "Python's blocking threads hold no epoll"
        );
    }
    let ping_pong = contender[0];
    assert_eq!(ping_pong["params"]["mode"], "ping-pong");
    assert_eq!(contender[1]["params"]["mode"], "stream");
    // Every message is served by a thread started for it, after the window opened: at least a
    // recv and a send each are counted only if those threads are.
    if ping_pong["syscalls_source"] == "kernel" {
        let per_message =
            ping_pong["syscalls"].as_f64().unwrap() / ping_pong["ops"].as_f64().unwrap();
        assert!(
            per_message >= 2.0,
            "{per_message} syscalls per message: {ping_pong}"
        );
    } else {
        eprintln!("syscall check skipped: the kernel refused the counters here");
    }
    assert_nothing_left(&marker);
}

#[test]
fn an_http_contender_has_its_responses_checked() {
    let marker = marker("http");
    let Some(py) = python_contender("py", "http", &marker) else {
        return;
    };
    let (output, rows) = study(
        "http",
        &["--engine", "none", "--connections", "4", "--contender", &py],
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["engine"], "contender:py");
    assert_eq!(rows[0]["verified"], true, "{}", rows[0]);
    assert!(rows[0]["ops"].as_u64().unwrap() > 0);
    assert_nothing_left(&marker);
}

#[test]
fn misbehaving_contenders_each_give_their_documented_outcome_and_the_study_goes_on() {
    let marker = marker("outcomes");
    let contenders: Option<Vec<String>> = ["exit", "silent", "die", "flip", "stubborn"]
        .iter()
        .map(|mode| python_contender(mode, mode, &marker))
        .collect();
    let Some(contenders) = contenders else {
        return;
    };
    let mut args = vec!["--engine", "epoll", "--connections", "1"];
    // Long enough for Python to start on a loaded machine; the silent one waits it out once.
    args.extend(["--contender-timeout", "3s"]);
    for contender in &contenders {
        args.extend(["--contender", contender.as_str()]);
    }
    let (output, rows) = study("echo", &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Unverified rows make the exit code 1; every row is still in the document.
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(rows_of(&rows, "epoll")[0]["verified"], true);
    let outcome = |name: &str| -> Vec<(bool, String)> {
        rows_of(&rows, &format!("contender:{name}"))
            .iter()
            .map(|row| {
                let failure = row["failure"].as_str().unwrap_or_default().to_string();
                (row["verified"].as_bool().unwrap(), failure)
            })
            .collect()
    };
    for (name, says) in [
        ("exit", "exited with exit status: 1 before it listened"),
        ("silent", "never listened on 127.0.0.1:"),
        (
            "die",
            "the server exited during the run with exit status: 4",
        ),
    ] {
        let runs = outcome(name);
        // The ping-pong cell and the integrity stream: each a row, never verified.
        assert_eq!(runs.len(), 2, "{name}: {runs:?}");
        assert!(
            runs.iter().all(|(verified, _)| !verified),
            "{name}: {runs:?}"
        );
        assert!(runs[0].1.contains(says), "{name}: {runs:?}");
        assert!(
            stderr.contains(&format!(
                "contender:{name} run 1 with 1 connections failed: "
            )),
            "{stderr}"
        );
    }
    // One that failed to start is not started again for its later cells.
    assert!(outcome("exit")[1].1.starts_with("not started again"));
    assert!(outcome("silent")[1].1.starts_with("not started again"));
    // Its last words on stderr are quoted.
    assert!(outcome("exit")[0].1.contains("refusing to start"));
    assert!(outcome("die")[0].1.contains("contender: dying"));
    // A corrupting contender ran and was measured, and its rows say NOT VERIFIED.
    let flip = rows_of(&rows, "contender:flip");
    assert!(flip
        .iter()
        .all(|row| row["verified"] == false && row["failure"].is_null()));
    assert!(
        flip[0]["notes"].to_string().contains("NOT VERIFIED"),
        "{}",
        flip[0]
    );
    // One that ignores SIGTERM (and its child that does too) was killed after the bound; its
    // measurement stands.
    let stubborn = rows_of(&rows, "contender:stubborn");
    assert!(
        stubborn.iter().all(|row| row["verified"] == true),
        "{stubborn:?}"
    );
    assert_nothing_left(&marker);
}

#[test]
fn a_contender_command_without_its_port_is_a_clear_error() {
    let output = Command::new(BIN)
        .args(["echo", "--contender", "fixed=server --port 8080"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("must listen on {port}"), "{stderr}");
}
