//! No orphans, whatever dies: a study killed with SIGKILL leaves no server running (they die
//! with it by their parent-death signal) and its scratch directory is removed by the next study
//! that makes one there; `run`'s watchdog ends a step past its limit with its servers and its
//! scratch directory, even a step that cannot act on SIGTERM; `run` killed while it builds the
//! reference contenders leaves no compiler running and its sources only until the next `run`,
//! and killed during a step nothing in its results directory.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{processes_left, processes_marked, BIN, CASE_MARK, IO_TIMEOUT};

/// How long the processes a dead study left may take to go: the kernel sends the signal as the
/// parent exits, and a server ends in well under this.
const ORPHANS_GONE_WITHIN: Duration = Duration::from_secs(5);

fn ringside(mark: &str, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(dir)
        .env(CASE_MARK, mark)
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// The scratch directories (`ringside-*`) in `dir`.
fn scratch_dirs(dir: &Path) -> Vec<String> {
    (std::fs::read_dir(dir).unwrap().flatten())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("ringside-"))
        .collect()
}

/// Waits, bounded, until `ready` holds; panics with `what` if it never does.
fn wait_until(what: &str, within: Duration, mut ready: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < within, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

fn sigkill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Goal: SIGKILL of a network study leaves none of its servers running. Method: `echo` with
/// two engines and many short runs, killed once its second server process has started; every
/// process that carries the case's mark must be gone within `ORPHANS_GONE_WITHIN` (before,
/// the servers ran on, pinned, until killed by hand).
#[test]
fn sigkill_of_a_network_study_leaves_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let mark = "orphans-echo-sigkill";
    let args = [
        "echo",
        "-e",
        "epoll,blocking",
        "-c",
        "1",
        "--runs",
        "20",
        "-d",
        "300ms",
        "--warmup",
        "0s",
        "--format",
        "json",
    ];
    let mut study = ringside(mark, dir.path(), &args).spawn().unwrap();
    let mut servers = Vec::new();
    wait_until("a second server", IO_TIMEOUT, || {
        for pid in processes_marked(mark) {
            if pid != study.id() && !servers.contains(&pid) {
                servers.push(pid);
            }
        }
        servers.len() >= 2
    });
    sigkill(&mut study);
    let gone = wait_until("every server gone", ORPHANS_GONE_WITHIN, || {
        processes_left(mark).is_empty()
    });
    eprintln!("servers gone {gone:?} after the study's SIGKILL");
}

/// Goal: a file study killed with SIGKILL leaves its scratch directory (it cannot remove it),
/// and the next study in that directory removes it, saying so, while a live study's directory
/// is left alone. Method: `fs write` of 256 MiB killed mid-run, then a short `fs write` there.
#[test]
fn sigkill_of_a_file_study_leaves_scratch_that_the_next_study_removes() {
    let dir = tempfile::tempdir().unwrap();
    let mark = "orphans-fs-sigkill";
    let long = [
        "fs",
        "write",
        "-s",
        "256m",
        "--runs",
        "50",
        "--runtime",
        "0",
        "-e",
        "blocking",
        "--dir",
        ".",
        "--format",
        "json",
    ];
    let mut killed = ringside(mark, dir.path(), &long).spawn().unwrap();
    wait_until("the scratch file", IO_TIMEOUT, || {
        scratch_dirs(dir.path()).len() == 1
    });
    std::thread::sleep(Duration::from_millis(500));
    sigkill(&mut killed);
    let stale = scratch_dirs(dir.path());
    assert_eq!(stale.len(), 1, "the killed study's directory is left");
    let short = [
        "fs", "write", "-s", "1m", "--runs", "1", "-e", "blocking", "--dir", ".", "--format",
        "json",
    ];
    let started = Instant::now();
    let next: Output = ringside(mark, dir.path(), &short).output().unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("removed ./{} (", stale[0]))
            && stderr.contains("the scratch directory of a ringside that was killed"),
        "{stderr}"
    );
    assert_eq!(scratch_dirs(dir.path()), Vec::<String>::new());
    eprintln!("the next study ran and swept in {:?}", started.elapsed());

    let mut live = ringside(mark, dir.path(), &long).spawn().unwrap();
    wait_until("a live study's scratch", IO_TIMEOUT, || {
        scratch_dirs(dir.path()).len() == 1
    });
    let beside: Output = ringside(mark, dir.path(), &short).output().unwrap();
    let stderr = String::from_utf8_lossy(&beside.stderr);
    assert!(
        beside.status.success() && !stderr.contains("removed"),
        "{stderr}"
    );
    assert_eq!(
        scratch_dirs(dir.path()).len(),
        1,
        "the live study's is kept"
    );
    sigkill(&mut live);
}

/// Goal: `run`'s watchdog ends a step past its limit with everything the step started. Method:
/// `run --quick` with a 3 s limit per step; the first file step and the first network step are
/// stopped (SIGSTOP) once running, so they cannot act on SIGTERM and the watchdog must kill
/// them; the other steps past 3 s get its SIGTERM. At the end no process of the case is left,
/// no scratch directory, and the notes say which steps were stopped.
#[test]
fn steps_past_their_limit_leave_no_server_and_no_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let mark = "orphans-run-step-limit";
    let args = [
        "run",
        "--quick",
        "--quiet",
        "--contenders",
        "none",
        "--step-limit",
        "3s",
        "--out",
        "results",
    ];
    let mut run = ringside(mark, dir.path(), &args).spawn().unwrap();
    let mut frozen: Vec<&str> = Vec::new();
    let started = Instant::now();
    while run.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "run did not end"
        );
        for pid in processes_marked(mark) {
            let Ok(command) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                continue;
            };
            let command = String::from_utf8_lossy(&command).replace('\0', " ");
            let parent = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let is_step = parent
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().nth(1))
                == Some(&run.id().to_string());
            let kind = match () {
                _ if command.contains(" fs write ") => "file",
                _ if command.contains(" echo ") => "network",
                _ => continue,
            };
            // Frozen once it has its scratch file or its server, so both are left to clean.
            let started_things = processes_marked(mark).len() > 2 || kind == "file";
            if is_step && !frozen.contains(&kind) && started_things {
                std::thread::sleep(Duration::from_millis(500));
                // SAFETY: kill(2) on a live process of this test's case.
                unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
                frozen.push(kind);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(frozen, ["file", "network"], "{stderr}");
    wait_until("no process of the run left", ORPHANS_GONE_WITHIN, || {
        processes_left(mark).is_empty()
    });
    let results = dir.path().join("results");
    assert_eq!(scratch_dirs(&results), Vec::<String>::new());
    assert_eq!(scratch_dirs(dir.path()), Vec::<String>::new());
    let document = std::fs::read_to_string(results.join("results.json")).unwrap();
    let notes: serde_json::Value = serde_json::from_str(&document).unwrap();
    let notes = notes["notes"].to_string();
    assert!(notes.contains("it was stopped after 3 s"), "{notes}");
    assert!(
        notes.contains("was removed after it was stopped"),
        "{notes}"
    );
    eprintln!("run --quick with 3 s steps took {:?}", started.elapsed());
}

/// The processes of case `mark` and what each runs, for a failure's message.
fn described(mark: &str) -> Vec<String> {
    (processes_marked(mark).into_iter())
        .map(|pid| {
            let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{pid}: {}",
                String::from_utf8_lossy(&command).replace('\0', " ")
            )
        })
        .collect()
}

/// How soon after `run` is killed every process of its contender build must be gone.
const BUILD_GONE_WITHIN: Duration = Duration::from_secs(1);

/// Goal: SIGKILL of `run` while it builds the reference contenders leaves no process of the
/// build alive a second later, the compilers included, and the next `run` removes the sources
/// it unpacked under `$TMPDIR`. Before, `bash build.sh`, `cargo` and its `rustc`s ran on, and
/// the `ringside-contenders-*` directory stayed. Method: `run --quick` with an empty contenders
/// directory (so it builds), killed once the build has a process of its own beyond the shells
/// (a compiler); then a `run` that names a contender it cannot build, which stops before its
/// first step: every `run` sweeps first, whatever it does next.
#[test]
fn sigkill_during_the_contender_build_leaves_no_build_and_the_next_run_sweeps_its_sources() {
    let dir = tempfile::tempdir().unwrap();
    let mark = "orphans-contender-build";
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let contenders = dir.path().join("contenders");
    let args = ["run", "--quick", "--quiet", "--out", "results"];
    let mut run = ringside(mark, dir.path(), &args)
        .env("TMPDIR", &tmp)
        .env("RINGSIDE_CONTENDERS", &contenders)
        .spawn()
        .unwrap();
    let compiling = || {
        described(mark).iter().any(|process| {
            let program = process.split_whitespace().nth(1).unwrap_or_default();
            !["sh", "bash", "cp", "mkdir"]
                .iter()
                .any(|shell| program.ends_with(shell))
                && !program.ends_with("ringside")
        })
    };
    let started = Instant::now();
    while !compiling() {
        if started.elapsed() > IO_TIMEOUT || run.try_wait().unwrap().is_some() {
            sigkill(&mut run);
            let _ = std::fs::remove_dir_all(&contenders);
            return eprintln!("skipped: no toolchain compiled a contender here (go, cargo)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let building = described(mark);
    sigkill(&mut run);
    std::thread::sleep(BUILD_GONE_WITHIN);
    assert_eq!(
        described(mark),
        Vec::<String>::new(),
        "alive {BUILD_GONE_WITHIN:?} after SIGKILL; building were {building:?}"
    );
    let left = scratch_dirs(&tmp);
    assert!(
        left.len() == 1 && left[0].starts_with("ringside-contenders-"),
        "{left:?}"
    );
    let not_a_dir = dir.path().join("not-a-directory");
    std::fs::write(&not_a_dir, "").unwrap();
    let next = ringside(
        mark,
        dir.path(),
        &["run", "--quick", "--contenders", "node"],
    )
    .env("TMPDIR", &tmp)
    .env("RINGSIDE_CONTENDERS", &not_a_dir)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert_eq!(next.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("removed {}", tmp.join(&left[0]).display())),
        "{stderr}"
    );
    assert_eq!(scratch_dirs(&tmp), Vec::<String>::new());
}

/// Goal: SIGKILL of `run` during a step leaves nothing in its results directory: the step's
/// rows go to a file with no name, which goes with the last process that holds it. Before, the
/// step (sent SIGTERM as its parent died) wrote its finished runs into `.step.json` there, for
/// no one. Method: `run --quick` killed half a second into its first step; every process of
/// the case must go, and the results directory must be empty.
#[test]
fn sigkill_of_run_during_a_step_leaves_nothing_in_its_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mark = "orphans-run-step-output";
    let args = [
        "run",
        "--quick",
        "--quiet",
        "--contenders",
        "none",
        "--out",
        "results",
    ];
    let mut run = ringside(mark, dir.path(), &args).spawn().unwrap();
    wait_until("a step", IO_TIMEOUT, || {
        described(mark)
            .iter()
            .any(|process| process.contains(" --output "))
    });
    std::thread::sleep(Duration::from_millis(500));
    sigkill(&mut run);
    let gone = wait_until("no process of the run left", ORPHANS_GONE_WITHIN, || {
        processes_left(mark).is_empty()
    });
    let results: Vec<String> = (std::fs::read_dir(dir.path().join("results")).unwrap())
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        results,
        Vec::<String>::new(),
        "left in the results directory"
    );
    eprintln!("the killed run's step gone {gone:?} after SIGKILL, nothing left");
}
