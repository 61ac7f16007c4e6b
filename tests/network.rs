//! The network path beyond loopback (`--network veth`): the study runs across two namespaces
//! joined by a veth pair, records the path, and leaves nothing behind, also when interrupted.
//! These tests need root (they skip, saying so, without it).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ringside");

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: --network veth needs root");
    }
    root
}

/// The namespaces a ringside process `pid` made that still exist.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("ringside-{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Goal: a veth study measures across the pair and removes it. Method: a small echo study on
/// veth and an HTTP one on veth shaped by tbf; every row verified and naming the path and its
/// shaping; no namespace of the process left.
#[test]
fn a_veth_study_records_its_path_and_leaves_nothing_behind() {
    if !is_root() {
        return;
    }
    for (study, shaping) in [("echo", "--idle=default"), ("http", "--rate=1gbit")] {
        let child = Command::new(BIN)
            .args([
                study,
                "--network",
                "veth",
                shaping,
                "--engine",
                "epoll",
                "-c",
                "2",
            ])
            .args(["--runs", "1", "--duration", "300ms", "--warmup", "100ms"])
            .args(["--format", "json", "--quiet"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{study}: {output:?}");
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let rows = document["results"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{study}");
        assert_eq!(rows[0]["verified"], true, "{study}: {}", rows[0]);
        assert_eq!(rows[0]["params"]["network"], "veth", "{study}");
        if study == "http" {
            assert_eq!(rows[0]["params"]["rate_bits_per_sec"], 1_000_000_000u64);
        }
        assert!(rows[0]["ops"].as_u64().unwrap() > 0);
        assert_eq!(namespaces_of(pid), Vec::<String>::new(), "{study}");
    }
}

/// Goal: Ctrl-C in the middle of a veth study loses nothing and leaves nothing. Method: SIGINT
/// once the namespaces exist; the study exits 130 and both namespaces (with the pair) are gone.
#[test]
fn an_interrupted_veth_study_removes_its_namespaces() {
    if !is_root() {
        return;
    }
    let mut child = Command::new(BIN)
        .args(["echo", "--network", "veth", "--engine", "epoll", "-c", "1"])
        .args(["--runs", "20", "--duration", "500ms", "--warmup", "100ms"])
        .args(["--format", "json", "--quiet"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespaces_of(pid).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(namespaces_of(pid).len(), 2, "the study made its namespaces");
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the study did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

/// Goal: shaping flags get a clear sentence where they cannot work. Method: --rtt on loopback
/// is refused; on veth it either runs or names the missing qdisc; nothing is left either way.
#[test]
fn shaping_is_refused_with_a_reason_where_it_cannot_work() {
    let output = Command::new(BIN)
        .args(["echo", "--rtt", "200us", "--engine", "epoll", "--quiet"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--network veth"), "{stderr}");
    if !is_root() {
        return;
    }
    let child = Command::new(BIN)
        .args([
            "echo",
            "--network",
            "veth",
            "--rtt",
            "200us",
            "--loss",
            "0.1%",
        ])
        .args(["--engine", "epoll", "-c", "1", "--runs", "1"])
        .args(["--duration", "300ms", "--warmup", "100ms", "--quiet"])
        .args(["--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(document["results"][0]["params"]["rtt_us"], 200);
    } else {
        assert!(stderr.contains("netem"), "{stderr}");
    }
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}
