//! An installed ringside: the binary copied out of its cargo build directory (as `cargo
//! install` or a package puts it), run from a working directory of its own by a user whose home
//! and `$TMPDIR` are fresh directories. Its contenders are built in the user's cache from the
//! sources inside the binary, nothing is written beside it, and `auto` contenders never fail
//! the run.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ringside");

/// One test at a time: a binary being copied by one test while another forks would make that
/// copy's exec fail (ETXTBSY), and two studies at once would measure each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A user's world: a home, a `$TMPDIR`, a working directory, and the binary in a `bin/` of
/// its own, all in one temporary directory.
struct Installed {
    root: tempfile::TempDir,
}

impl Installed {
    fn new() -> Installed {
        let root = tempfile::tempdir().unwrap();
        for dir in ["bin", "home", "tmp", "work"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        std::fs::copy(BIN, root.path().join("bin/ringside")).unwrap();
        Installed { root }
    }

    fn path(&self, dir: &str) -> PathBuf {
        self.root.path().join(dir)
    }

    fn command(&self) -> Command {
        let mut command = Command::new(self.path("bin/ringside"));
        command
            .current_dir(self.path("work"))
            .env("HOME", self.path("home"))
            .env("TMPDIR", self.path("tmp"))
            .env_remove("XDG_CACHE_HOME")
            .env_remove("RINGSIDE_CONTENDERS");
        command
    }

    /// `run --quick` with `extra` flags, interrupted with SIGINT once its first step has
    /// ended (its line): by then the contenders were built and chosen, and the interrupted run
    /// still writes its results. Returns the exit status and the results directory.
    fn run_first_step(&self, mut command: Command, extra: &[&str]) -> (ExitStatus, PathBuf) {
        let mut child = command
            .args(["run", "--quick"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let started = Instant::now();
        let mut said = Vec::new();
        let mut signalled = false;
        // Read to the end: a closed pipe would fail the run's last lines.
        for line in stderr.lines() {
            let line = line.unwrap();
            if !signalled && line.contains("step 1/") {
                // SAFETY: kill(2) on a child this test spawned and has not reaped.
                assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
                signalled = true;
            }
            said.push(line);
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "no first step: {said:?}"
            );
        }
        let output = child.wait_with_output().unwrap();
        let out = String::from_utf8(output.stdout).unwrap();
        assert!(!out.is_empty(), "no results directory on stdout: {said:?}");
        (output.status, self.path("work").join(out.trim_end()))
    }

    /// Every file and directory under `dir`, relative to it.
    fn listing(&self, dir: &str) -> Vec<String> {
        fn walk(dir: &Path, root: &Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                found.push(path.strip_prefix(root).unwrap().display().to_string());
                if path.is_dir() && !path.is_symlink() {
                    walk(&path, root, found);
                }
            }
        }
        let mut found = Vec::new();
        walk(&self.path(dir), &self.path(dir), &mut found);
        found.sort();
        found
    }
}

fn notes(results: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(results.join("results.json")).unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    (document["notes"].as_array().unwrap().iter())
        .map(|note| note.as_str().unwrap().to_string())
        .collect()
}

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[test]
fn an_installed_ringside_builds_its_contenders_in_the_users_cache_and_nothing_beside_itself() {
    if !on_path("node") {
        eprintln!("skipped: node is not installed, so no contender builds in seconds here");
        return;
    }
    let _alone = one_at_a_time();
    let installed = Installed::new();
    let contenders = ["--contenders", "node"];
    let (status, results) = installed.run_first_step(installed.command(), &contenders);
    assert_eq!(status.code(), Some(130));
    // Results relative to the working directory, and nothing else written there.
    assert!(results.starts_with(installed.path("work/results")));
    assert_eq!(installed.listing("work")[0], "results");
    assert!(
        (installed.listing("work").iter()).all(|path| path.starts_with("results")),
        "{:?}",
        installed.listing("work")
    );
    let built = installed.path("home/.cache/ringside/contenders/node/echo.js");
    assert!(built.is_file(), "{:?}", installed.listing("home"));
    assert!(
        (notes(&results).iter()).any(|note| note.starts_with("contenders: built node into ")),
        "{:?}",
        notes(&results)
    );
    assert_eq!(
        installed.listing("bin"),
        ["ringside"],
        "written beside the binary"
    );
    assert!(
        installed.listing("tmp").is_empty(),
        "{:?}",
        installed.listing("tmp")
    );

    // XDG_CACHE_HOME, when set, is the cache.
    let cache = installed.path("home/xdg");
    let mut command = installed.command();
    command.env("XDG_CACHE_HOME", &cache);
    installed.run_first_step(command, &contenders);
    assert!(cache.join("ringside/contenders/node/http.js").is_file());
    assert_eq!(installed.listing("bin"), ["ringside"]);
}

#[test]
fn auto_contenders_with_nowhere_to_build_are_a_note_and_named_ones_an_error() {
    let _alone = one_at_a_time();
    let installed = Installed::new();
    let mut command = installed.command();
    command.env_remove("HOME");
    let (status, results) = installed.run_first_step(command, &[]);
    assert_eq!(status.code(), Some(130), "the run went on to its steps");
    let notes = notes(&results);
    assert!(
        (notes.iter()).any(|note| note.starts_with("contender node: not run, there is nowhere")),
        "{notes:?}"
    );
    let output = installed
        .command()
        .env_remove("HOME")
        .args(["run", "--quick", "--contenders", "node"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("contender node cannot run: there is nowhere to build them"),
        "{stderr}"
    );
    assert_eq!(installed.listing("bin"), ["ringside"]);
}
