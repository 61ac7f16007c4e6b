//! The kernel's "why" in the rows, end to end: what io_uring did in the kernel (its tracepoints,
//! counted on every thread of the measured process, io-wq and SQPOLL threads included) must be
//! present and plausible on real runs.
//!
//! Goal: a page cycle through io_uring shows its fsyncs punted to io-wq workers and a CQE for
//! every request; a plain `uring` echo server shows polls armed for receives that found no
//! data; every ring posts at least a CQE per message; engines that make no ring count zero;
//! where the kernel refuses the counters the fields are absent and the row says why, and
//! without `--ring-events` they are absent. The tracepoints count only in the attribution rounds
//! `--ring-events` adds after the timed ones (rows marked `attribution`), never in a timed one.
//! Method: a 1 MiB page cycle and a half-second echo study of the real binary with
//! `--ring-events`, as root on this VM, and a 256 KiB cycle without it.

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

/// Runs ringside with `args` (plus `--ring-events --format json --quiet`, one timed round) and
/// returns the rows of its first attribution round, after checking that the timed round's rows
/// counted no tracepoint and that 2 attribution rounds followed it.
fn rows(args: &[&str]) -> Vec<Value> {
    let all = rows_counting(args, &["--ring-events"]);
    let attribution = |row: &&Value| row["attribution"] == Value::Bool(true);
    let (marked, timed): (Vec<&Value>, Vec<&Value>) = all.iter().partition(attribution);
    assert_eq!(marked.len(), 2 * timed.len(), "two attribution rounds");
    for row in &timed {
        assert_eq!(row["run"], 1, "{row}");
        assert!(
            row.get("sqes_submitted").is_none(),
            "timed with the tracepoints: {row}"
        );
    }
    assert!(marked.iter().all(|row| row["run"] == 2 || row["run"] == 3));
    (marked.into_iter())
        .filter(|row| row["run"] == 2)
        .cloned()
        .collect()
}

fn rows_counting(args: &[&str], counting: &[&str]) -> Vec<Value> {
    let output = Command::cargo_bin("ringside")
        .unwrap()
        .env_remove("RINGSIDE_FORCE_NO_URING")
        .env_remove("RINGSIDE_NO_PERF")
        .args(args)
        .args(counting)
        .args(["--format", "json", "--quiet"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ringside {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    document["results"].as_array().unwrap().clone()
}

fn count(row: &Value, field: &str) -> u64 {
    row[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} missing: {row}"))
}

/// False (after checking the row says why) where the kernel refused the io_uring counters.
fn counted(row: &Value) -> bool {
    if row.get("sqes_submitted").is_some() {
        return true;
    }
    let notes = row["notes"].to_string();
    assert!(notes.contains("io_uring events not counted"), "{row}");
    eprintln!("skipped: the kernel refused the io_uring tracepoint counters here");
    false
}

#[test]
fn a_page_cycle_through_io_uring_punts_its_fsyncs_and_posts_every_cqe() {
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    let rows = rows(&[
        "fs",
        "cycle",
        "--size",
        "1m",
        "--runs",
        "1",
        "--engine",
        "blocking,uring-link,uring-defer,uring-sqpoll",
        "--dir",
        dir_arg,
    ]);
    assert_eq!(rows.len(), 4);
    if !counted(&rows[0]) {
        return;
    }
    for row in &rows {
        let pages = count(row, "ops");
        assert_eq!(pages, 256, "{row}");
        assert_eq!(count(row, "cqe_overflows"), 0, "{row}");
        if row["engine"] == "blocking" {
            for field in ["sqes_submitted", "cqes_posted", "iowq_punts", "polls_armed"] {
                assert_eq!(count(row, field), 0, "{field}: {row}");
            }
            continue;
        }
        // Write, fsync and read per page; a chain broken by a short write or read runs again.
        assert!(count(row, "sqes_submitted") >= 3 * pages, "{row}");
        assert!(count(row, "cqes_posted") >= 3 * pages, "{row}");
        // An fsync cannot complete without blocking, so every one goes to an io-wq worker,
        // whose completions count only because the counters follow the ring's new threads.
        assert!(count(row, "iowq_punts") >= pages, "{row}");
        assert!(count(row, "iowq_ctx_switches") > 0, "{row}");
    }
    let defer = &rows[2];
    assert_eq!(defer["engine"], "uring-defer");
    assert!(count(defer, "local_work_runs") > 0, "{defer}");
    let sqpoll = &rows[3];
    assert!(sqpoll["sqpoll_ctx_switches"].is_u64(), "{sqpoll}");
}

#[test]
fn a_short_echo_run_counts_polls_for_plain_uring_and_a_cqe_per_message_for_every_ring() {
    let rows = rows(&[
        "echo",
        "--engine",
        "epoll,uring,uring-multishot,uring-defer",
        "--connections",
        "8",
        "--duration",
        "500ms",
        "--warmup",
        "200ms",
        "--runs",
        "1",
    ]);
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert!(count(row, "server_core_net_rx_softirqs") > 0, "{row}");
    }
    if !counted(&rows[0]) {
        return;
    }
    let epoll = &rows[0];
    assert_eq!(count(epoll, "sqes_submitted"), 0, "{epoll}");
    for row in &rows[1..] {
        let messages = count(row, "ops");
        assert!(messages > 0, "{row}");
        // A receive and a send complete per message echoed.
        assert!(count(row, "cqes_posted") >= messages, "{row}");
        assert_eq!(count(row, "cqe_overflows"), 0, "{row}");
    }
    let plain = &rows[1];
    assert_eq!(plain["engine"], "uring");
    // One recv per message, issued before the client's next message arrives: it finds no data
    // and waits on a poll (FAST_POLL).
    assert!(count(plain, "polls_armed") > 0, "{plain}");
    assert!(
        count(plain, "sqes_submitted") >= count(plain, "ops"),
        "{plain}"
    );
    assert!(count(&rows[3], "local_work_runs") > 0, "{}", rows[3]);
}

#[test]
fn without_ring_events_the_io_uring_counts_are_absent_and_the_threads_still_counted() {
    let dir = tempfile::tempdir().unwrap();
    let rows = rows_counting(
        &[
            "fs",
            "cycle",
            "--size",
            "256k",
            "--runs",
            "1",
            "--engine",
            "uring-link",
            "--dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
    );
    let row = &rows[0];
    for field in ["sqes_submitted", "cqes_posted", "iowq_punts", "polls_armed"] {
        assert!(row.get(field).is_none(), "{field} counted unasked: {row}");
    }
    assert!(row["iowq_ctx_switches"].is_u64(), "{row}");
}
