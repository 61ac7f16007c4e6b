//! `ringside run`: the whole study in one command. Each step of the table in `steps` runs as a
//! child process of this same binary (`--format json`), so a step is exactly what a user gets
//! from the subcommand by hand; the rows are merged into one document, fio's controls are run
//! beside the file-write steps where fio is installed, and the results directory gets
//! `results.json`, `results.csv`, `report.md` and `report.html`. Ctrl-C ends the study after
//! the current step and still writes everything for the steps that finished.

pub mod control;
pub mod steps;
pub mod timestamp;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::output::{render, render_csv, Format};
use crate::progress::{stop_flag, stopped};
use crate::report::load::load_document;
use crate::row::{Document, Row};
use crate::study::EXIT_INTERRUPTED;
use steps::{plan, Control, Mode, Step};

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// About a minute: small files, one or two runs (for CI and a first look).
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// The source documents' sizes and durations (1 GiB files, 20 s network runs).
    #[arg(long)]
    pub full: bool,
    /// Results directory (default: results/<UTC timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Directory for the scratch files of the file studies (default: the results directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

impl RunArgs {
    fn mode(&self) -> Mode {
        match (self.quick, self.full) {
            (true, _) => Mode::Quick,
            (_, true) => Mode::Full,
            _ => Mode::Default,
        }
    }
}

/// What the steps produced so far.
#[derive(Default)]
struct Collected {
    rows: Vec<Row>,
    notes: Vec<String>,
    failed_steps: usize,
}

impl Collected {
    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mode = args.mode();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(timestamp::now_utc()));
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create the results directory {}", out.display()))?;
    let scratch = args.dir.clone().unwrap_or_else(|| out.clone());
    let exe = std::env::current_exe().context("cannot find this ringside binary to run steps")?;
    stop_flag();
    let steps = plan(mode);
    let mut left_seconds: u64 = steps.iter().map(|step| step.seconds(mode)).sum();
    let mut collected = Collected::default();
    for (index, step) in steps.iter().enumerate() {
        if stopped() {
            collected.note(format!("{}: not run, the study was interrupted", step.name));
            continue;
        }
        eprintln!(
            "ringside run: step {}/{}: {} (about {} s; about {} s left in the study)",
            index + 1,
            steps.len(),
            step.name,
            step.seconds(mode),
            left_seconds
        );
        run_step(&exe, step, mode, &scratch, &out, &mut collected);
        left_seconds = left_seconds.saturating_sub(step.seconds(mode));
    }
    let mut document = Document::new(crate::probe::environment(&scratch), collected.rows);
    document.notes = collected.notes;
    write_results(&document, &out)?;
    println!("{}", out.display());
    Ok(if stopped() {
        eprintln!("ringside run: interrupted; the report covers the steps that finished");
        ExitCode::from(EXIT_INTERRUPTED)
    } else if collected.failed_steps > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs one step as a child process and keeps its rows (the finished ones, if it failed).
fn run_step(
    exe: &Path,
    step: &Step,
    mode: Mode,
    scratch: &Path,
    out: &Path,
    collected: &mut Collected,
) {
    let command_text = step.command.join(" ");
    if !has_subcommand(exe, step.command) {
        collected.note(format!(
            "{}: skipped, this ringside has no `{command_text}` subcommand yet",
            step.name
        ));
        return;
    }
    let file = out.join(".step.json");
    let mut command = Command::new(exe);
    command
        .args(step.command)
        .args(step.args(mode).unwrap_or_default())
        .args(["--format", "json", "--output"])
        .arg(&file);
    if step.takes_dir {
        command.arg("--dir").arg(scratch);
    }
    let limit = step_limit(step, mode);
    let status = command.spawn().and_then(|child| wait_bounded(child, limit));
    let rows = load_document(&file)
        .map(|document| document.results)
        .unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    match status {
        Ok(Some(status)) if status.success() => {}
        Ok(Some(status)) if status.code() == Some(i32::from(EXIT_INTERRUPTED)) => {
            collected.note(format!(
                "{}: interrupted; only its finished runs are shown",
                step.name
            ));
        }
        outcome => {
            collected.failed_steps += 1;
            let reason = match outcome {
                Ok(Some(status)) => format!("it exited with {status}"),
                Ok(None) => format!(
                    "it was stopped after {} s without finishing",
                    limit.as_secs()
                ),
                Err(error) => format!("it could not start ({error})"),
            };
            collected.note(format!(
                "{}: failed, {reason}; `ringside {command_text}` shows why",
                step.name
            ));
        }
    }
    let controls = match (step.control, rows.is_empty() || stopped()) {
        (Some(control), false) => run_control(control, &rows, scratch, collected),
        _ => Vec::new(),
    };
    // Controls follow the step's rows so the tables list ringside's engines first.
    collected.rows.extend(rows);
    collected.rows.extend(controls);
}

/// How long a step may take before it is stopped: ten times its estimate, at least two
/// minutes. An engine stuck waiting for a completion must not hang the whole study.
fn step_limit(step: &Step, mode: Mode) -> Duration {
    Duration::from_secs((step.seconds(mode) * 10).max(120))
}

/// Waits for a step's process; kills it and returns None once `limit` has passed.
fn wait_bounded(mut child: Child, limit: Duration) -> std::io::Result<Option<ExitStatus>> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() > limit {
            child.kill()?;
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// True when this binary has `command` (`ringside <command> --help` succeeds).
fn has_subcommand(exe: &Path, command: &[&str]) -> bool {
    Command::new(exe)
        .args(command)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Runs a step's control tool and returns its rows; a missing or failing tool becomes a note,
/// never a failure.
fn run_control(
    control: Control,
    rows: &[Row],
    scratch: &Path,
    collected: &mut Collected,
) -> Vec<Row> {
    match control {
        Control::FioWrite if !control::installed("fio") => {
            collected.note("fio is not installed: the file-write controls did not run".into());
            Vec::new()
        }
        Control::FioWrite => {
            eprintln!(
                "ringside run: control: fio psync and io_uring at the same size and block size"
            );
            control::fio_write(rows, scratch).unwrap_or_else(|error| {
                collected.note(format!("the fio control failed: {error:#}"));
                Vec::new()
            })
        }
    }
}

/// Writes the four files of a results directory.
fn write_results(document: &Document, out: &Path) -> anyhow::Result<()> {
    let json = out.join(crate::report::load::RESULTS_FILE);
    std::fs::write(&json, render(document, Format::Json)?)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let csv = out.join("results.csv");
    std::fs::write(&csv, render_csv(&document.results)?)
        .with_context(|| format!("cannot write {}", csv.display()))?;
    crate::report::write_reports(document, out)?;
    Ok(())
}
