//! SIGINT keeps what was measured: a study interrupted mid-window keeps that run as a row
//! marked partial (its figures over the seconds that ran, its answers verified), and one
//! interrupted before any window opened says plainly that nothing was measured. Before, SIGINT
//! 5 s into `echo -d 10s` kept nothing and printed "the results above cover the runs that
//! finished" above nothing.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{processes_left, processes_marked, BIN, CASE_MARK, IO_TIMEOUT};

/// Starts `ringside echo` with `args` in a process group of its own, sends SIGINT to the whole
/// group `after` its first server appeared (as Ctrl-C in a terminal does), and returns what it
/// printed.
fn interrupt_echo(mark: &str, args: &[&str], after: Duration) -> Output {
    let child = Command::new(BIN)
        .arg("echo")
        .args(args)
        .args(["-e", "epoll", "-c", "1", "--format", "json"])
        .env(CASE_MARK, mark)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while processes_marked(mark).len() < 2 {
        assert!(started.elapsed() < IO_TIMEOUT, "no server started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(after);
    // SAFETY: kill(2) on the process group this test's child leads.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) }, 0);
    let output = child.wait_with_output().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_left(mark).is_empty() {
        assert!(Instant::now() < deadline, "a server was left");
        std::thread::sleep(Duration::from_millis(20));
    }
    output
}

/// Goal: Ctrl-C 4 s into a 10 s window keeps that run. Method: `echo -d 10s --warmup 0s`, SIGINT
/// to its group 4 s after its server started; the one row must say partial, cover 2-9 s, be
/// verified with no errors (the server, in a group of its own, served until the load stopped).
#[test]
fn sigint_mid_window_keeps_the_run_marked_partial() {
    let output = interrupt_echo(
        "signals-mid-window",
        &["-d", "10s", "--warmup", "0s", "--runs", "1"],
        Duration::from_secs(4),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cut short (marked partial)"), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = document["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{stderr}");
    let row = &rows[0];
    let seconds = row["seconds"].as_f64().unwrap();
    assert!((2.0..9.0).contains(&seconds), "{seconds} s");
    assert!(row["ops"].as_u64().unwrap() > 0);
    assert_eq!(row["verified"], true, "{row}");
    assert_eq!(row["errors"], 0, "{row}");
    let notes = row["notes"].to_string();
    assert!(notes.contains("partial: a signal"), "{notes}");
    assert!(notes.contains("of its 10.0 s window") || notes.contains("10.0 s window"));
}

/// Goal: Ctrl-C before any window opened says so instead of pointing at results that are not
/// there. Method: SIGINT during a 5 s warm-up.
#[test]
fn sigint_before_any_window_says_nothing_was_measured() {
    let output = interrupt_echo(
        "signals-warmup",
        &["-d", "2s", "--warmup", "5s"],
        Duration::from_secs(1),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted before any run finished: nothing was measured"),
        "{stderr}"
    );
    assert!(!stderr.contains("the results above"), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["results"].as_array().unwrap().len(), 0);
}
