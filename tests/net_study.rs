//! The network studies as a user runs them (`ringside echo`, `ringside load` against
//! `ringside serve`), against the real binary on 127.0.0.1 only, every wait bounded.
//!
//! Goal: a small matrix alternates its engines and verifies every row; a load against
//! ringside's own server reports the server measured; without io_uring a named io_uring engine
//! is a failure row while the defaults skip it; on a kernel without `epoll_pwait2` every basic
//! engine still verifies.

use std::process::Command;
use std::time::Duration;

mod common;
use common::{Server, BIN};
use ringside::engines::Workload;

#[test]
fn load_against_ringside_reports_verified_rows_with_the_server_measured() {
    let Some(server) = Server::start("echo", "epoll", &[]) else {
        return;
    };
    let output = Command::new(BIN)
        .args(["load", "echo", "--connections", "8", "--payload", "100"])
        .args([
            "--duration",
            "500ms",
            "--warmup",
            "100ms",
            "--format",
            "json",
        ])
        .args(["--target", &server.address.to_string()])
        .args(["--server-pid", &server.pid().to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &document["results"][0];
    assert_eq!(row["verified"], true);
    assert_eq!(row["errors"], 0);
    assert!(row["ops"].as_u64().unwrap() > 100, "{row}");
    assert!(row["latency_ns_p99"].as_u64().unwrap() > 0);
    // The scheduler's clock counts every ns the server ran; the tick-sampled user and
    // system times may read 0 over half a second on a machine that rarely ticks on its CPU.
    assert!(row["server_cpu_s"].as_f64().unwrap() > 0.0, "{row}");
    assert!(row["server_cpu_us_per_op"].as_f64().unwrap() > 0.0, "{row}");
    assert!(row["cpu_sys_s"].as_f64().unwrap() >= 0.0, "{row}");
    assert!(row["client_saturated"].is_boolean());
    server.stop();
}

#[test]
fn study_runs_a_small_matrix_with_alternating_engines() {
    let output = Command::new(BIN)
        .args([
            "echo",
            "--engine",
            "epoll,uring",
            "--connections",
            "1,2",
            "--runs",
            "2",
            "--idle-timeout",
            "10s",
        ])
        .args([
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--format",
            "json",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = document["results"].as_array().unwrap();
    // The servers ran with the idle timeout, and the rows say so.
    assert!(rows
        .iter()
        .all(|r| r["params"]["idle_timeout_ms"] == 10_000));
    let engines: Vec<&str> = rows.iter().map(|r| r["engine"].as_str().unwrap()).collect();
    let uring = ringside::engines::find(Workload::Echo, "uring")
        .unwrap()
        .availability()
        .is_ok();
    if uring {
        assert_eq!(rows.len(), 8);
        assert_eq!(&engines[..4], ["epoll", "uring", "epoll", "uring"]);
    }
    for row in rows {
        assert_eq!(row["verified"], true, "{row}");
        assert_eq!(row["workload"], "echo");
        assert!(row["server_cpu_s"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["params"]["idle"].is_string() && row["params"]["sched"].is_string());
        assert!(row["client_cpu_sys_s"].is_number());
        // The io_uring server's kernel threads are set and recorded: its io-wq workers stay on
        // the server's CPU (0 by default); epoll has none.
        let params = &row["params"];
        match row["engine"].as_str().unwrap() {
            "uring" => {
                assert_eq!(params["iowq_cpus"], "0", "{row}");
                assert!(params["iowq_bounded_max"].as_u64().unwrap() >= 1, "{row}");
                assert!(params["iowq_unbounded_max"].as_u64().unwrap() >= 1, "{row}");
            }
            _ => assert!(params.get("iowq_cpus").is_none(), "{row}"),
        }
    }
}

#[test]
fn without_io_uring_a_named_uring_engine_is_a_failure_row_and_defaults_skip_it() {
    let assert = assert_cmd::Command::new(BIN)
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .args([
            "serve",
            "echo",
            "--engine",
            "uring-defer",
            "--listen",
            "127.0.0.1:0",
        ])
        .timeout(Duration::from_secs(20))
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains("cannot run here") && stderr.contains("RINGSIDE_FORCE_NO_URING"));
    let output = Command::new(BIN)
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .args([
            "echo",
            "--engine",
            "epoll,uring",
            "--connections",
            "1",
            "--runs",
            "1",
        ])
        .args(["--duration", "200ms", "--warmup", "0s", "--format", "json"])
        .output()
        .unwrap();
    // Asked for by name, uring cannot run: the study measures epoll, gives uring a row that
    // says why, and exits 4.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("uring cannot run here"), "{stderr}");
    assert_eq!(common::row_engines(&output.stdout), ["epoll", "uring"]);
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let (epoll, uring) = (&document["results"][0], &document["results"][1]);
    assert_eq!(epoll["verified"], true, "{epoll}");
    let failure = uring["failure"].as_str().unwrap();
    assert!(failure.contains("unavailable here") && failure.contains("RINGSIDE_FORCE_NO_URING"));
    // The defaults skip what cannot run, and the study succeeds.
    let output = Command::new(BIN)
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .args([
            "echo",
            "--connections",
            "1",
            "--runs",
            "1",
            "--duration",
            "200ms",
        ])
        .args(["--warmup", "0s", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("left out uring"));
    assert!(common::row_engines(&output.stdout)
        .iter()
        .all(|e| !e.starts_with("uring")));
}

/// Goal: on a kernel without `epoll_pwait2` (before 5.11) every network engine still serves
/// and verifies, the load generator included. Method: `RINGSIDE_NO_EPOLL_PWAIT2=1` takes the
/// fallback (`epoll_wait` and a timerfd) on this kernel in the study, its servers and its
/// load; an echo study of the four basic engines; every row verified, and the document's
/// probe names the wait it used.
#[test]
fn every_basic_engine_verifies_with_the_epoll_wait_fallback() {
    let output = Command::new(BIN)
        .env("RINGSIDE_NO_EPOLL_PWAIT2", "1")
        .args(["echo", "--engine", "blocking,threads,epoll,uring"])
        .args(["--connections", "2", "--runs", "1", "--duration", "300ms"])
        .args(["--warmup", "100ms", "--format", "json", "--quiet"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let wait = document["env"]["host"]["epoll_wait"].as_str().unwrap();
    assert!(wait.starts_with("epoll_wait, a timerfd"), "{wait}");
    let rows = document["results"].as_array().unwrap();
    assert!(rows.len() >= 3, "{rows:?}");
    for row in rows {
        assert_eq!(row["verified"], true, "{row}");
        assert!(row["ops"].as_u64().unwrap() > 0, "{row}");
    }
}
