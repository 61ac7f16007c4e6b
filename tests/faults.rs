//! Signals and bad input, against the real binary: every study interrupted by SIGINT and by
//! SIGTERM, and the CLI over a table of bad and edge inputs.
//!
//! Goal: whatever ends a run (a signal, input it cannot take, a machine that refuses), ringside
//! says so in a sentence, exits non-zero where the run failed (128 + the signal's number when a
//! signal stopped it), keeps the results that finished, and leaves no scratch file and no child
//! process behind; no panic is reachable from any of it. Methodology: each case runs in a fresh
//! directory (its working directory, `--dir` and TMPDIR) that must hold only the results
//! afterwards, and with an environment mark that every process it starts inherits, so a child
//! it left behind is found even when orphaned.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{processes_left, processes_marked, BIN, CASE_MARK, IO_TIMEOUT};

/// The command for case `mark`, run in `dir` with its temporary files there too.
fn ringside(mark: &str, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(dir)
        .env(CASE_MARK, mark)
        .env("TMPDIR", dir)
        .stdin(Stdio::null());
    command
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// One study interrupted mid-run, and how to tell that it has finished a run.
struct Interrupted {
    name: &'static str,
    /// The command line, in pieces that are joined.
    args: &'static [&'static [&'static str]],
    /// Wait this long after the start before sending the signal; network studies instead wait
    /// until their second server process has started (the first cell is done).
    wait: Duration,
}

/// The flags of the interrupted network studies: many short runs of one connection.
const NET_STUDY_FLAGS: &[&str] = &[
    "--engine",
    "epoll",
    "--connections",
    "1",
    "--runs",
    "20",
    "--duration",
    "300ms",
    "--warmup",
    "0s",
    "--format",
    "json",
];

const INTERRUPTED: &[Interrupted] = &[
    Interrupted {
        name: "fs-write",
        args: &[&[
            "fs",
            "write",
            "--size",
            "64m",
            "--runs",
            "50",
            "--runtime",
            "0",
            "-e",
            "blocking,uring-ring",
            "--dir",
            ".",
            "--format",
            "json",
        ]],
        wait: Duration::from_millis(1500),
    },
    Interrupted {
        name: "fs-cycle",
        args: &[&[
            "fs",
            "cycle",
            "--size",
            "4m",
            "--runs",
            "50",
            "-e",
            "blocking,uring-link",
            "--dir",
            ".",
            "--format",
            "json",
        ]],
        wait: Duration::from_millis(1500),
    },
    Interrupted {
        name: "echo",
        args: &[&["echo"], NET_STUDY_FLAGS],
        wait: Duration::ZERO,
    },
    Interrupted {
        name: "http",
        args: &[&["http"], NET_STUDY_FLAGS],
        wait: Duration::ZERO,
    },
    Interrupted {
        name: "run",
        args: &[&["run", "--quick", "--out", "results"]],
        wait: Duration::from_millis(1500),
    },
];

/// Every study, stopped by SIGINT and by SIGTERM sent to it alone (as `kill` or a service
/// manager would; Ctrl-C in a terminal also reaches its children, which stop the same way):
/// exit 130 or 143, the finished runs written (the results document; `run`'s results
/// directory), no server or step process left, no scratch file left.
#[test]
fn every_study_stops_on_sigint_and_sigterm_and_keeps_what_finished() {
    for study in INTERRUPTED {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            interrupt(study, signal);
        }
    }
}

fn interrupt(study: &Interrupted, signal: i32) {
    let mark = format!("signal-{}-{signal}", study.name);
    let dir = tempfile::tempdir().unwrap();
    let child = ringside(&mark, dir.path(), &study.args.concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut servers_seen = Vec::new();
    while started.elapsed() < IO_TIMEOUT {
        std::thread::sleep(Duration::from_millis(20));
        for pid in processes_marked(&mark) {
            if pid != child.id() && !servers_seen.contains(&pid) {
                servers_seen.push(pid);
            }
        }
        let ready = if study.wait.is_zero() {
            servers_seen.len() >= 2
        } else {
            started.elapsed() >= study.wait
        };
        if ready {
            break;
        }
    }
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let what = format!("{} stopped by signal {signal}", study.name);
    let output = wait_bounded(child, &what);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(128 + signal), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert!(
        processes_left(&mark).is_empty(),
        "{what}: a process was left"
    );
    if study.name == "run" {
        assert_eq!(
            entries(dir.path()),
            ["results"],
            "{what}: a scratch file was left"
        );
        let results = dir.path().join("results/results.json");
        let document: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
        let notes = document["notes"].to_string();
        assert!(notes.contains("interrupted"), "{what}: {notes}");
    } else {
        assert!(
            entries(dir.path()).is_empty(),
            "{what}: a scratch file was left"
        );
        let document: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("{what}: no results document ({error}): {stderr}"));
        let rows = document["results"].as_array().unwrap();
        assert!(!rows.is_empty(), "{what}: the finished runs were not kept");
    }
}

/// Waits for `child` (doing `what`) to exit, at most a minute (killing it then), and returns its
/// output. Its pipes are read while it runs: a results document larger than a pipe holds (64 KiB,
/// about 35 rows of a page cycle) would otherwise block the child's last write for good.
fn wait_bounded(child: std::process::Child, what: &str) -> Output {
    let pid = child.id() as i32;
    let (sent, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || sent.send(child.wait_with_output()));
    match received.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on the pid of a child this test spawned; the thread above has not
            // reaped it, since it has not sent.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let output = received.recv().unwrap().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            panic!(
                "{what}: ringside did not stop within a minute; the end of its stderr:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
}

/// What a bad or edge input must end in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A run that cannot be done: a non-zero exit and a sentence on stderr.
    Fails,
    /// An edge the run takes: exit 0.
    Succeeds,
}

/// Bad and edge inputs (the arguments split at spaces), each with what it must end in and a
/// word its message must hold (for failures). `{target}` is replaced by a live echo server's
/// address, `{nobody}` by a port nobody listens on.
const INPUTS: &[(&str, Expect, &str)] = &[
    ("fs write --size 0", Expect::Fails, "--size"),
    ("fs write --size 1t --runs 1", Expect::Fails, "memory"),
    ("fs write --block-size 0", Expect::Fails, "--block-size"),
    ("fs write --block-size 2g --size 4g", Expect::Fails, "1G"),
    ("fs cycle --page-size 0", Expect::Fails, "--page-size"),
    (
        "fs write --size 1k --block-size 4k --runs 1 -q",
        Expect::Succeeds,
        "",
    ),
    (
        "fs write --dir /proc --size 1m",
        Expect::Fails,
        "scratch directory",
    ),
    (
        "fs cycle --dir /nonexistent/x",
        Expect::Fails,
        "not a directory",
    ),
    ("fs write --cpu 4096 --size 1m", Expect::Fails, "CPU"),
    (
        "fs write --size 1m --output /nonexistent/x.json",
        Expect::Fails,
        "cannot write results",
    ),
    (
        "fs write --size 1m --output /proc/x.json",
        Expect::Fails,
        "cannot write results",
    ),
    ("echo --connections 0", Expect::Fails, "--connections"),
    ("echo --connections 70000", Expect::Fails, "--connections"),
    ("echo --payload 1t", Expect::Fails, "--payload"),
    ("echo --server-cpu 4096 --runs 1", Expect::Fails, "CPU"),
    (
        "echo --json /nonexistent/x.json",
        Expect::Fails,
        "cannot write results",
    ),
    ("http --body-size 1t --runs 1", Expect::Fails, "16 MiB"),
    ("serve echo --engine epoll --cpu 4096", Expect::Fails, "CPU"),
    (
        "serve echo --engine epoll --cq-entries 3",
        Expect::Fails,
        "power of two",
    ),
    (
        "load echo --target {nobody} --duration 1s",
        Expect::Fails,
        "listening",
    ),
    (
        "load echo --target {target} --cpu 4096",
        Expect::Fails,
        "CPU",
    ),
    ("load echo --target localhost", Expect::Fails, "--target"),
    (
        "load http --target http://127.0.0.1:99999/",
        Expect::Fails,
        "resolve",
    ),
    (
        "load http --target https://127.0.0.1/",
        Expect::Fails,
        "http://",
    ),
    (
        "load echo --target {target} --duration 0s --warmup 0s",
        Expect::Fails,
        "--duration",
    ),
    (
        "load echo --target {target} --duration 300ms --warmup 0s",
        Expect::Succeeds,
        "",
    ),
    ("report /nonexistent", Expect::Fails, "/nonexistent"),
    (
        "compare /nonexistent/a /nonexistent/b",
        Expect::Fails,
        "/nonexistent",
    ),
];

/// The CLI over the table of bad and edge inputs: the expected exit, one sentence on stderr
/// without "panicked", and nothing left behind.
#[test]
fn bad_and_edge_inputs_end_in_a_sentence_and_leave_nothing_behind() {
    let server = common::Server::start("echo", "epoll", &[]).unwrap();
    let target = server.address.to_string();
    let nobody = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    for (index, &(args, expect, needle)) in INPUTS.iter().enumerate() {
        let args: Vec<String> = args
            .split_whitespace()
            .map(|arg| {
                arg.replace("{target}", &target)
                    .replace("{nobody}", &nobody)
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mark = format!("input-{index}");
        let dir = tempfile::tempdir().unwrap();
        let output = ringside(&mark, dir.path(), &args).output().unwrap();
        check_input(&args, expect, needle, &output);
        if expect == Expect::Fails {
            assert!(
                entries(dir.path()).is_empty(),
                "{args:?} left {:?}",
                entries(dir.path())
            );
        }
        assert!(processes_left(&mark).is_empty(), "{args:?} left a process");
    }
    server.stop();
}

fn check_input(args: &[&str], expect: Expect, needle: &str, output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    match expect {
        Expect::Succeeds => assert!(output.status.success(), "{args:?}: {stderr}"),
        Expect::Fails => {
            assert!(!output.status.success(), "{args:?} should fail");
            assert!(
                stderr.contains(needle),
                "{args:?}: {needle:?} not in {stderr}"
            );
            let lines = stderr
                .lines()
                .filter(|line| !line.trim().is_empty())
                .count();
            assert!(
                (1..=3).contains(&lines),
                "{args:?}: not one sentence: {stderr}"
            );
        }
    }
}

/// A fd limit below what a study's connections need stops it before it starts, in one sentence
/// naming the numbers and the fix; a soft limit below a hard one that suffices is raised.
#[test]
fn a_study_beyond_the_fd_limit_stops_before_it_starts_and_a_low_soft_limit_is_raised() {
    let limited = |soft: u64, hard: u64, args: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let mut command = ringside("fd-limit", dir.path(), args);
        common::limit_fds(&mut command, soft, hard);
        command.output().unwrap()
    };
    let study = [
        "echo",
        "--engine",
        "epoll",
        "--connections",
        "1500",
        "--runs",
        "1",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--format",
        "json",
        "--quiet",
    ];
    let refused = limited(1024, 1024, &study);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("needs about 1564 file descriptors"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ulimit -n 1564") && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty());
    let raised = limited(1024, 4096, &study);
    let stderr = String::from_utf8_lossy(&raised.stderr);
    assert!(raised.status.success(), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&raised.stdout).unwrap();
    assert_eq!(document["results"][0]["verified"], true, "{document}");
    assert_eq!(document["env"]["limits"]["open_files_soft"], 4096);
    assert!(processes_left("fd-limit").is_empty());
}

/// A load target that dies mid-run: the row is kept, marked NOT VERIFIED with the reason, and
/// the exit is non-zero.
#[test]
fn a_target_that_dies_mid_run_leaves_a_marked_row() {
    let server = common::Server::start("echo", "epoll", &[]).unwrap();
    let target = server.address.to_string();
    let dir = tempfile::tempdir().unwrap();
    let load = ringside(
        "dies",
        dir.path(),
        &[
            "load",
            "echo",
            "--target",
            &target,
            "--connections",
            "8",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--format",
            "json",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let mut server = server;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let output = wait_bounded(load, "a load whose target died");
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &document["results"][0];
    assert_eq!(row["verified"], false);
    assert!(
        row["ops"].as_u64().unwrap() > 0,
        "the part before is kept: {row}"
    );
    assert!(
        row["notes"].to_string().contains("did the server die?"),
        "{row}"
    );
}

/// Goal: an engine whose server dies mid-run is a row, not the end of the study. Method: an
/// HTTP study of epoll and blocking, two runs each of 2 s; the first server (whichever engine the
/// round's shuffled order put first) is found by the case's mark and killed with SIGKILL inside
/// its window. Exit 4, that engine's run 1 a failure row that names the kill, every other run
/// measured and verified, the JSON written, nothing left running.
#[test]
fn a_server_killed_mid_run_is_a_failure_row_and_the_others_are_measured() {
    let mark = "killed-server";
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("rows.json");
    let study = ringside(mark, dir.path(), &["http", "--engine", "epoll,blocking"])
        .args(["--connections", "2", "--runs", "2", "--duration", "2s"])
        .args(["--warmup", "0s", "--quiet", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let server = loop {
        assert!(started.elapsed() < IO_TIMEOUT, "no server started");
        let servers: Vec<u32> = (processes_marked(mark).into_iter())
            .filter(|&pid| pid != study.id())
            .collect();
        if let [server] = servers[..] {
            break server;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let cmdline = std::fs::read(format!("/proc/{server}/cmdline")).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).into_owned();
    assert!(cmdline.contains("serve\0http"), "a server: {cmdline:?}");
    let killed = ["epoll", "blocking"]
        .into_iter()
        .find(|engine| cmdline.contains(&format!("\0{engine}\0")))
        .unwrap_or_else(|| panic!("the server names its engine: {cmdline:?}"));
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on a process of this test's case, the study's server child.
    assert_eq!(unsafe { libc::kill(server as i32, libc::SIGKILL) }, 0);
    let output = wait_bounded(study, "a study whose server was killed");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!("{killed} run 1 with 2 connections failed")),
        "{stderr}"
    );
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = document["results"].as_array().unwrap();
    let runs: Vec<(&str, u64)> = (rows.iter())
        .map(|row| {
            (
                row["engine"].as_str().unwrap(),
                row["run"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [("epoll", 1), ("blocking", 1), ("epoll", 2), ("blocking", 2)]
    );
    let failed = rows
        .iter()
        .position(|row| row["engine"] == killed && row["run"] == 1);
    let failed = &rows[failed.unwrap()];
    let failure = failed["failure"].as_str().unwrap();
    assert!(failure.contains("SIGKILL"), "{failure}");
    assert_eq!(failed["verified"], false);
    for row in rows.iter().filter(|row| !std::ptr::eq(*row, failed)) {
        assert_eq!(row["verified"], true, "{row}");
        assert!(row.get("failure").is_none(), "{row}");
        assert!(row["ops"].as_u64().unwrap() > 0, "{row}");
    }
    assert!(processes_left(mark).is_empty(), "a process was left");
}
