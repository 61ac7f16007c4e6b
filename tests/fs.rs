//! The file workloads end to end: the real binary writes real files in a temporary directory.
//! Every engine must verify its data, the kernel's syscall counts must tell the engines apart,
//! and bad input must end in one clear sentence, a non-zero exit and no file left behind.

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use ringside::engines::{engines_of, Workload};
use serde_json::Value;

fn ringside() -> Command {
    let mut command = Command::cargo_bin("ringside").unwrap();
    command
        .env_remove("RINGSIDE_FORCE_NO_URING")
        .env_remove("RINGSIDE_NO_PERF");
    command
}

/// Runs ringside with `args` (plus `--format json --quiet`) and returns the result rows.
fn rows(args: &[&str], dir: &Path) -> Vec<Value> {
    let output = ringside()
        .args(args)
        .args(["--format", "json", "--quiet", "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "ringside {args:?} failed: {stderr}"
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["schema_version"], 1);
    assert!(document["env"]["host"]["kernel_release"].is_string());
    document["results"].as_array().unwrap().clone()
}

fn only_dir_entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// Every engine of the table that serves `workload`: the behaviour tests run them all, so a
/// new row is tested without editing this file. Only those that run here on a buffered file:
/// the study skips the others (saying why), and IOPOLL completes only `--direct` I/O on a
/// device with poll queues.
fn table_engines(workload: Workload) -> Vec<&'static str> {
    engines_of(workload)
        .filter(|engine| engine.availability().is_ok() && !engine.needs.setup.iopoll)
        .map(|engine| engine.name)
        .collect()
}

fn row_of<'a>(rows: &'a [Value], engine: &str) -> &'a Value {
    rows.iter()
        .find(|row| row["engine"] == engine)
        .unwrap_or_else(|| panic!("no {engine} row"))
}

#[test]
fn every_write_engine_verifies_and_the_kernel_counts_tell_them_apart() {
    let dir = tempfile::tempdir().unwrap();
    let all = table_engines(Workload::FsWrite).join(",");
    let rows = rows(
        &[
            "fs", "write", "--size", "8m", "--runs", "1", "--engine", &all,
        ],
        dir.path(),
    );
    let engines: Vec<&str> = rows
        .iter()
        .map(|row| row["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, table_engines(Workload::FsWrite));
    let blocks = (8 << 20) / 4096;
    for row in &rows {
        assert_eq!(row["verified"], true, "{row}");
        assert_eq!(row["ops"], blocks, "{row}");
        assert_eq!(row["bytes"], 8 << 20);
        assert!(row["bytes_per_sec"].as_f64().unwrap() > 0.0);
    }
    let syscalls = |engine| row_of(&rows, engine)["syscalls"].as_u64().unwrap();
    if row_of(&rows, "blocking")["syscalls_source"] == "kernel" {
        assert!(
            syscalls("blocking") >= blocks,
            "blocking made fewer syscalls than writes"
        );
        assert!(syscalls("uring-ring") * 10 <= syscalls("blocking"));
        assert!(syscalls("uring-batch") * 10 <= syscalls("blocking"));
        assert!(syscalls("uring-sqpoll") * 10 <= syscalls("blocking"));
    }
    assert_eq!(
        only_dir_entries(dir.path()),
        0,
        "the scratch file was left behind"
    );
}

#[test]
fn every_cycle_engine_reads_back_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let all = table_engines(Workload::FsCycle).join(",");
    let rows = rows(
        &[
            "fs", "cycle", "--size", "2m", "--runs", "1", "--depth", "16", "--engine", &all,
        ],
        dir.path(),
    );
    let pages = (2 << 20) / 4096;
    let engines: Vec<&str> = rows.iter().map(|r| r["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, table_engines(Workload::FsCycle));
    for row in &rows {
        assert_eq!(row["verified"], true, "{row}");
        assert_eq!(row["errors"], 0);
        assert_eq!(row["ops"], pages);
        assert_eq!(row["params"]["depth"], 16);
        assert_eq!(row["params"]["file"], "overwrite");
        // Every page's latency is in the histogram, and the percentiles come from it.
        let histogram = row["latency_ns_histogram"].as_str().expect("a histogram");
        let histogram = ringside::stats::histogram::decode(histogram).unwrap();
        assert_eq!(histogram.len(), pages, "{row}");
        let p99 = row["latency_ns_p99"].as_u64().unwrap();
        assert_eq!(p99, histogram.value_at_quantile(0.99));
        let (p50, max) = (
            row["latency_ns_p50"].as_u64().unwrap(),
            row["latency_ns_max"].as_u64().unwrap(),
        );
        assert!(0 < p50 && p50 <= p99 && p99 <= max, "{row}");
    }
    let blocking = row_of(&rows, "blocking");
    if blocking["syscalls_source"] == "kernel" {
        assert!(blocking["syscalls"].as_u64().unwrap() >= 3 * pages);
        assert!(row_of(&rows, "uring-link")["syscalls"].as_u64().unwrap() * 3 <= pages);
    }
}

#[test]
fn fresh_files_direct_io_and_fdatasync_verify_too() {
    let dir = tempfile::tempdir().unwrap();
    let write = rows(
        &[
            "fs",
            "write",
            "--size",
            "4m",
            "--block-size",
            "64k",
            "--fresh",
            "--direct",
            "--fsync-end",
            "--runs",
            "2",
            "--engine",
            "blocking,uring-fixed",
        ],
        dir.path(),
    );
    assert_eq!(write.len(), 4);
    assert!(write
        .iter()
        .all(|row| row["verified"] == true && row["params"]["file"] == "fresh"));
    assert_eq!(write[0]["engine"], "blocking");
    assert_eq!(write[1]["engine"], "uring-fixed");
    assert_eq!(write[2]["run"], 2);
    let cycle = rows(
        &[
            "fs",
            "cycle",
            "--size",
            "1m",
            "--fresh",
            "--fdatasync",
            "--runs",
            "1",
            "-e",
            "blocking,uring-link",
        ],
        dir.path(),
    );
    assert!(cycle
        .iter()
        .all(|row| row["verified"] == true && row["params"]["sync"] == "fdatasync"));
}

/// Every file engine drives the O_DIRECT file `--direct` opens (a read-back buffer that is not
/// page-aligned once made the blocking page cycle fail with EINVAL): each row verifies, records
/// `direct`, and its writes reached the device inside the window, which buffered writes without
/// an fsync do not.
#[test]
fn every_file_engine_honours_direct() {
    let dir = tempfile::tempdir().unwrap();
    for (workload, args) in [
        (Workload::FsWrite, ["fs", "write", "--size", "2m"]),
        (Workload::FsCycle, ["fs", "cycle", "--size", "1m"]),
    ] {
        let all = table_engines(workload).join(",");
        let direct = ["--direct", "--depth", "16", "--runs", "1", "--engine", &all];
        let rows = rows(&[&args[..], &direct[..]].concat(), dir.path());
        assert_eq!(rows.len(), table_engines(workload).len());
        for row in &rows {
            assert_eq!(row["verified"], true, "{row}");
            assert_eq!(row["params"]["direct"], true, "{row}");
            if let Some(writes) = row["device_writes"].as_u64() {
                assert!(writes > 0, "no device write inside an O_DIRECT run: {row}");
            }
        }
    }
}

/// IOPOLL polls the device for completions: only O_DIRECT writes on a device with poll queues
/// (an IOPOLL ring refuses fsync, so no page cycle). Where the scratch directory's device has
/// poll queues the rung must run and verify; everywhere else it is skipped with that reason.
#[test]
fn iopoll_runs_direct_writes_where_the_device_polls_and_says_why_not_elsewhere() {
    use std::os::fd::AsFd;
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    let probe = std::fs::File::create(dir.path().join("probe")).unwrap();
    let polled = ringside::engines::uring::trial::file_device_polled(probe.as_fd());
    drop(probe);
    std::fs::remove_file(dir.path().join("probe")).unwrap();
    let write = [
        "fs",
        "write",
        "--size",
        "2m",
        "--runs",
        "1",
        "-e",
        "uring-iopoll",
    ];
    let buffered = failure(&[&write[..], &["--dir", dir_arg]].concat());
    // --direct is advised only where IOPOLL can run at all; elsewhere the reason is its own.
    let iopoll = ringside::engines::find(ringside::engines::Workload::FsWrite, "uring-iopoll");
    match iopoll.unwrap().availability() {
        Ok(()) => assert!(
            buffered.contains("skipping uring-iopoll: IOPOLL completes only O_DIRECT"),
            "{buffered}"
        ),
        Err(_) => assert!(
            buffered.contains("uring-iopoll cannot run here")
                && buffered.contains("poll queues")
                && !buffered.contains("--direct"),
            "{buffered}"
        ),
    }
    let cycle = failure(&["fs", "cycle", "-e", "uring-iopoll", "--dir", dir_arg]);
    assert!(
        cycle.contains("'uring-iopoll' is not an engine of fs-cycle"),
        "{cycle}"
    );
    match polled {
        Ok(()) => {
            let rows = rows(&[&write[..], &["--direct"]].concat(), dir.path());
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0]["verified"], true, "{}", rows[0]);
        }
        Err(reason) => {
            // Skipped when no device here polls; refused by the run when another one does.
            eprintln!("IOPOLL not run: {reason}");
            let output = ringside()
                .args([&write[..], &["--direct", "--dir", dir_arg]].concat())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{stderr}");
            assert!(stderr.contains("uring-iopoll"), "{stderr}");
            assert!(stderr.contains("poll queues"), "{stderr}");
        }
    }
    assert_eq!(only_dir_entries(dir.path()), 0);
}

#[test]
fn without_the_kernel_counter_rows_carry_the_engines_own_counts() {
    let dir = tempfile::tempdir().unwrap();
    let output = ringside()
        .env("RINGSIDE_NO_PERF", "1")
        .args([
            "fs", "write", "--size", "1m", "--runs", "1", "-e", "blocking", "--format", "csv",
            "-q", "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let values: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name| values[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(column("syscalls_source"), "self");
    assert_eq!(column("syscalls"), "256");
}

#[test]
fn forcing_io_uring_off_leaves_blocking_running() {
    let dir = tempfile::tempdir().unwrap();
    let output = ringside()
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .args([
            "fs", "write", "--size", "1m", "--runs", "1", "--format", "json", "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("left out uring-single, uring-batch, uring-ring")
            && stderr.contains("io_uring is switched off"),
        "{stderr}"
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let engines: Vec<&Value> = document["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["engine"])
        .collect();
    assert_eq!(engines, ["blocking"]);
    let only_uring = ringside()
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .args(["fs", "cycle", "--size", "1m", "-e", "uring-link", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(only_uring.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&only_uring.stderr)
        .contains("none of the chosen engines can run here"));
    // Named beside one that runs: blocking is measured, uring-ring gets a row that says why,
    // and the exit code says something failed.
    let named = ringside()
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .args([
            "fs",
            "write",
            "--size",
            "1m",
            "--runs",
            "1",
            "-e",
            "blocking,uring-ring",
        ])
        .args(["--format", "json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(named.status.code(), Some(4), "{named:?}");
    let document: Value = serde_json::from_slice(&named.stdout).unwrap();
    let rows = document["results"].as_array().unwrap();
    assert_eq!(rows[0]["engine"], "blocking");
    assert_eq!(rows[0]["verified"], true);
    assert_eq!(rows[1]["engine"], "uring-ring");
    let failure = rows[1]["failure"].as_str().unwrap();
    assert!(
        failure.contains("unavailable here: io_uring is switched off"),
        "{failure}"
    );
}

/// Runs a study expecting its engine to fail (exit 4, a FAILED line in the table); returns its
/// stderr.
fn failed_run(args: &[&str]) -> String {
    let output = ringside().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(4), "ringside {args:?}: {stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("FAILED"),
        "{args:?}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Runs ringside expecting failure; returns its stderr.
fn failure(args: &[&str]) -> String {
    let output = ringside().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!output.status.success(), "ringside {args:?} should fail");
    assert!(
        output.stdout.is_empty(),
        "a failed start printed results: {args:?}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn bad_input_ends_in_one_clear_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    assert!(failure(&["fs", "write", "--size", "0", "--dir", dir_arg])
        .contains("--size must be more than 0"));
    assert!(failure(&["fs", "write", "--size", "4x"]).contains("unknown unit"));
    let direct = failure(&[
        "fs",
        "write",
        "--direct",
        "--block-size",
        "1000",
        "--dir",
        dir_arg,
    ]);
    assert!(direct.contains("multiples of 512"), "{direct}");
    assert!(
        failure(&["fs", "write", "--engine", "epoll", "--dir", dir_arg])
            .contains("not an engine of fs-write")
    );
    assert!(failure(&["fs", "cycle", "--dir", "/proc", "--size", "1m"])
        .contains("cannot create a scratch directory"));
    assert!(failure(&["fs", "cycle", "--dir", "/nonexistent/x"]).contains("is not a directory"));
    assert_eq!(only_dir_entries(dir.path()), 0);
}

#[test]
fn a_full_disk_is_reported_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "ringside-test"])
        .arg(dir.path())
        .status();
    if !mounted.is_ok_and(|status| status.success()) {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir_arg = dir.path().to_str().unwrap().to_string();
    let laid_out = failure(&[
        "fs", "write", "--size", "8m", "--runs", "1", "--dir", &dir_arg,
    ]);
    // An engine that hits the full disk during its run is a failure row; the study exits 4.
    let engine = failed_run(&[
        "fs",
        "write",
        "--size",
        "8m",
        "--fresh",
        "-e",
        "uring-ring",
        "--dir",
        &dir_arg,
    ]);
    let cycle = failed_run(&[
        "fs", "cycle", "--size", "8m", "--fresh", "-e", "blocking", "--dir", &dir_arg,
    ]);
    let linked_cycle = failed_run(&[
        "fs",
        "cycle",
        "--size",
        "8m",
        "--fresh",
        "-e",
        "uring-link",
        "--dir",
        &dir_arg,
    ]);
    let left = only_dir_entries(dir.path());
    let _ = Command::new("umount").arg(dir.path()).status();
    for stderr in [laid_out, engine, cycle, linked_cycle] {
        assert!(stderr.contains("the disk is full"), "{stderr}");
    }
    assert_eq!(left, 0, "a scratch file was left on the full disk");
}

/// The io-wq trap (FINDINGS, issue 9): the kernel sizes a thread's worker pool from the first
/// ring the thread makes, so a tiny trial ring once left the page cycle 2 workers and one device
/// flush per fsync. Each io_uring engine now asks for its workers; this reads back, from the
/// threads named `iou-wrk-*` that ran, that it got what it asked for: exactly the number given
/// with --iowq-workers (64 chains in flight keep them all busy), and by default more than the
/// kernel's own cap of 4 per CPU (the pool grows on demand, so a short run may not reach all
/// 16 per CPU).
#[test]
fn the_page_cycle_runs_on_the_io_wq_workers_it_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    for asked in [None, Some("8"), Some("3")] {
        let mut args = vec![
            "fs",
            "cycle",
            "--size",
            "4m",
            "--depth",
            "64",
            "--runs",
            "1",
            "--engine",
            "blocking,uring-link,uring-sqpoll",
        ];
        if let Some(workers) = asked {
            args.extend(["--iowq-workers", workers]);
        }
        let rows = rows(&args, dir.path());
        for engine in ["uring-link", "uring-sqpoll"] {
            let row = row_of(&rows, engine);
            let wanted = row["params"]["iowq_bounded_max"].as_u64().unwrap();
            let ran = row["iowq_workers"].as_u64().unwrap();
            match asked {
                Some(workers) => {
                    // 64 fsyncs in flight keep every one of a few workers busy: all start.
                    assert_eq!(wanted.to_string(), workers, "{row}");
                    assert_eq!(ran, wanted, "{row}");
                }
                None => {
                    // io-wq starts workers as work waits, so a loaded machine may start fewer
                    // than the default's 16 per CPU; the bug this guards against left exactly
                    // 2 (a trial ring sized the pool).
                    assert_eq!(wanted, 16 * cpus, "{row}");
                    assert!(ran >= 3 && ran <= wanted, "{row}");
                }
            }
            assert!(row["iowq_cpu_s"].as_f64().unwrap() > 0.0, "{row}");
            assert!(row["params"]["iowq_cpus"].is_string(), "{row}");
        }
        let sqpoll = row_of(&rows, "uring-sqpoll");
        assert!(sqpoll["sqpoll_cpu_s"].as_f64().unwrap() > 0.0, "{sqpoll}");
        assert!(sqpoll["params"]["sqpoll_cpu"].is_string(), "{sqpoll}");
        let blocking = row_of(&rows, "blocking");
        assert_eq!(blocking["iowq_workers"], 0, "{blocking}");
        assert!(blocking["params"].get("iowq_bounded_max").is_none());
        // On a block device the fsyncs reach it as flushes. The counters are the device's, so
        // other writers (tests running beside this one) add to them: only their presence is
        // checked here.
        if let Some(flushes) = blocking["device_flushes"].as_u64() {
            assert!(flushes >= 1, "{blocking}");
            assert!(row_of(&rows, "uring-link")["device_flushes"].is_u64());
        }
    }
}

/// A pinned engine's SQPOLL thread goes to another CPU by default, and one placed on the
/// engine's only CPU under a real-time class is refused with the reason, not left to starve it.
#[test]
fn the_sqpoll_thread_is_placed_on_purpose() {
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if cpus.trim() == "0" {
        eprintln!("skipped: one CPU");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "fs",
        "cycle",
        "--size",
        "1m",
        "--runs",
        "1",
        "--engine",
        "uring-sqpoll",
        "--cpu",
        "1",
    ];
    let rows = rows(&args, dir.path());
    assert_eq!(rows[0]["params"]["sqpoll_cpu"], "0", "{}", rows[0]);
    let chrt = Command::new("chrt").args(["-f", "10", "true"]).status();
    if !chrt.is_ok_and(|status| status.success()) {
        eprintln!("skipped the real-time half: chrt -f is not allowed here");
        return;
    }
    let ringside = assert_cmd::cargo::cargo_bin("ringside");
    let output = Command::new("chrt")
        .args(["-f", "10"])
        .arg(ringside)
        .args(args)
        .args(["--sqpoll-cpu", "1", "--quiet", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("real-time class"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        only_dir_entries(dir.path()),
        0,
        "the scratch file was left behind"
    );
}

/// Goal: a study of the default engines measures the A/A pair (`blocking#2`) in every round;
/// rows carry their block of 4 rounds; the fifth round, the first of block 2, runs on a file
/// laid out afresh (the progress says so), and nothing is left behind.
#[test]
fn the_default_engines_bring_the_aa_pair_and_each_block_a_fresh_file() {
    let dir = tempfile::tempdir().unwrap();
    let output = ringside()
        .args([
            "fs", "cycle", "--size", "256k", "--runs", "5", "--format", "json",
        ])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = document["results"].as_array().unwrap();
    for run in 1..=5u64 {
        let copy = rows
            .iter()
            .find(|row| row["engine"] == "blocking#2" && row["run"] == run);
        assert!(copy.is_some(), "no blocking#2 in round {run}");
    }
    for row in rows {
        let run = row["run"].as_u64().unwrap();
        assert_eq!(row["block"], if run <= 4 { 1 } else { 2 }, "{row}");
        assert!(row.get("attribution").is_none(), "{row}");
        assert_eq!(row["verified"], true, "{row}");
    }
    assert_eq!(
        stderr.matches("a fresh file laid out").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("block 2: a fresh file laid out"),
        "{stderr}"
    );
    assert_eq!(only_dir_entries(dir.path()), 0);
    let named = rows_of_named(dir.path());
    assert!(named.iter().all(|row| row["engine"] != "blocking#2"));
}

/// The rows of a study whose engines were named: no A/A pair is added.
fn rows_of_named(dir: &Path) -> Vec<Value> {
    rows(
        &[
            "fs",
            "cycle",
            "--size",
            "64k",
            "--runs",
            "1",
            "--engine",
            "blocking,uring-link",
        ],
        dir,
    )
}
