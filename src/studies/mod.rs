//! The studies: each turns a plan into rows by running engines, and every one of them runs on
//! the one runner here. A study is a list of cells (an engine with the workload's parameters)
//! measured run by run, cells alternating within each run (A B A B ..., so slow drift of a noisy
//! machine hits every engine alike), with progress on stderr, Ctrl-C ending the study after the
//! current cell, and the results written even when a run failed or was interrupted.
//!
//! `fs/` holds the file studies (`fs write`, `fs cycle`, their scratch file), `echo.rs` and
//! `http.rs` the network studies, which run each server as a child process through
//! `net.rs` (and any other server program beside them, `contender.rs`); `serve.rs` is that child (`ringside serve`), `load.rs` the `load`
//! subcommand (one load run against any server).

pub mod contender;
pub mod echo;
pub mod fs;
pub mod http;
pub mod load;
pub mod net;
pub mod serve;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::engines::EngineDef;
use crate::output::progress::Progress;
use crate::output::{emit, write_text, Format};
use crate::row::{Document, Row, PARTIAL_NOTE};
use crate::system::stop::{interrupted_exit_code, stop_flag, stopped};

/// One cell of a study: what one measurement in a run covers.
pub trait Cell {
    /// What the progress bar says while the cell runs.
    fn step(&self, run: u32, runs: u32) -> String;
    /// What the line saying a run of the cell failed starts with.
    fn failed(&self, run: u32) -> String;
}

/// Where a study's results go.
#[derive(Clone, Debug)]
pub struct Destination {
    pub format: Format,
    /// A file instead of stdout.
    pub path: Option<PathBuf>,
    /// Also the JSON document here, whatever `format` says.
    pub json: Option<PathBuf>,
}

/// What a study produced: its rows (a failed run's among them, saying why), and whether Ctrl-C
/// ended it early.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub interrupted: bool,
}

/// The exit code of a study whose every measured run verified, but where some engine failed
/// (its server exited, the kernel refused its setup, it ran out of memory or erred) or an
/// engine asked for by name cannot run here: their rows say why, the others were measured.
/// (1 is an error, or a run that did not verify its data; 2 is clap's for bad arguments and
/// `compare --fail-if-slower`'s; 3 `load`'s unverified answers; 130/143 an interruption: every
/// code is listed in docs/exit-codes.md.)
pub const ENGINE_FAILED_EXIT: u8 = 4;

/// The chosen engines: those that can run here, and those named by `--engine` that cannot,
/// each with why.
pub struct Chosen {
    pub runnable: Vec<&'static EngineDef>,
    pub unavailable: Vec<(&'static EngineDef, String)>,
}

impl Chosen {
    /// Every engine that gets cells, in the order chosen: a named engine that cannot run here
    /// gets rows too, each saying why.
    pub fn cells(&self) -> Vec<&'static EngineDef> {
        (self.runnable.iter().copied())
            .chain(self.unavailable.iter().map(|(engine, _)| *engine))
            .collect()
    }

    /// Why `engine` cannot run here, when it was named and cannot.
    pub fn unavailable(&self, engine: &EngineDef) -> Option<String> {
        (self.unavailable.iter())
            .find(|(named, _)| named.name == engine.name)
            .map(|(_, reason)| format!("unavailable here: {reason}"))
    }
}

/// Splits `engines` by whether they can run here. A default engine that cannot is skipped with
/// a line on stderr (unless `quiet`); one the user `named` is kept, so that the study measures
/// the others, gives it rows that say why, and exits `ENGINE_FAILED_EXIT`. Fails when none
/// can run.
pub fn choose(
    engines: Vec<&'static EngineDef>,
    named: bool,
    quiet: bool,
) -> anyhow::Result<Chosen> {
    let mut chosen = Chosen {
        runnable: Vec::new(),
        unavailable: Vec::new(),
    };
    for engine in engines {
        match engine.availability() {
            Ok(()) => chosen.runnable.push(engine),
            Err(reason) if named => {
                eprintln!("ringside: {} cannot run here: {reason}", engine.name);
                chosen.unavailable.push((engine, reason));
            }
            Err(reason) if !quiet => eprintln!("ringside: skipping {}: {reason}", engine.name),
            Err(_) => {}
        }
    }
    anyhow::ensure!(
        !chosen.runnable.is_empty(),
        "none of the chosen engines can run here (see above)"
    );
    Ok(chosen)
}

/// Runs `measure(cell, run)` for every run and cell, cells alternating within each run. A run
/// that fails becomes `failed_row(cell, run, reason)` and a line on stderr, and the study goes
/// on; Ctrl-C ends it after the current cell, keeping what finished.
pub fn run_alternating<C: Cell>(
    runs: u32,
    cells: &[C],
    progress: &Progress,
    mut measure: impl FnMut(&C, u32) -> anyhow::Result<Row>,
    failed_row: impl Fn(&C, u32, &str) -> Row,
) -> Outcome {
    stop_flag();
    let mut rows = Vec::with_capacity(cells.len() * runs as usize);
    for run in 1..=runs {
        for cell in cells {
            if stopped() {
                return Outcome {
                    rows,
                    interrupted: true,
                };
            }
            progress.step(cell.step(run, runs));
            match measure(cell, run) {
                Ok(row) => rows.push(row),
                // A run cut short by Ctrl-C is not a failure of its engine.
                Err(_) if stopped() => {
                    return Outcome {
                        rows,
                        interrupted: true,
                    };
                }
                Err(error) => {
                    let reason = format!("{error:#}");
                    progress.alert(format!("ringside: {}: {reason}", cell.failed(run)));
                    rows.push(failed_row(cell, run, &reason));
                }
            }
            progress.done_step();
        }
    }
    Outcome {
        rows,
        interrupted: stopped(),
    }
}

/// What an interrupted study says it kept: the runs that finished, the one the signal cut
/// short (its row says "partial"), or plainly nothing.
fn interrupted_summary(rows: &[Row]) -> String {
    let partial = (rows.iter())
        .filter(|row| row.notes.iter().any(|note| note.starts_with(PARTIAL_NOTE)))
        .count();
    match (rows.len() - partial, partial) {
        (0, 0) => "interrupted before any run finished: nothing was measured".to_string(),
        (0, cut) => format!(
            "interrupted before any run finished; the results above cover the {} cut short \
             (marked partial)",
            if cut == 1 { "run" } else { "runs" }
        ),
        (finished, 0) => {
            format!("interrupted; the results above cover the {finished} run(s) that finished")
        }
        (finished, _) => format!(
            "interrupted; the results above cover the {finished} run(s) that finished and the \
             one cut short (marked partial)"
        ),
    }
}

/// Writes the results (partial ones too) and turns the outcome into an exit code: 130 (Ctrl-C)
/// or 143 (SIGTERM) when interrupted, 1 when a run did not verify its data,
/// `ENGINE_FAILED_EXIT` when runs failed (their rows say why), else 0. `table` renders the
/// study's own table for `Format::Table`; the environment is probed in `env_dir` (the
/// directory the study wrote to).
pub fn finish(
    outcome: Outcome,
    env_dir: &Path,
    destination: &Destination,
    table: impl FnOnce(&[Row]) -> String,
) -> anyhow::Result<ExitCode> {
    let failed: Vec<&str> = outcome
        .rows
        .iter()
        .filter(|row| row.failure.is_some())
        .map(|row| row.engine.as_str())
        .collect();
    let mut failed_engines: Vec<&str> = Vec::new();
    for engine in &failed {
        if !failed_engines.contains(engine) {
            failed_engines.push(engine);
        }
    }
    let (failed_runs, failed_engines) = (failed.len(), failed_engines.join(", "));
    let unverified = (outcome.rows.iter())
        .filter(|row| !row.verified && row.failure.is_none())
        .count();
    let document = Document::new(crate::probe::environment(env_dir), outcome.rows);
    if let Some(path) = &destination.json {
        emit(&document, Format::Json, Some(path))?;
    }
    match destination.format {
        Format::Table => write_text(&table(&document.results), destination.path.as_deref())
            .context("cannot write the results")?,
        format => emit(&document, format, destination.path.as_deref())?,
    }
    if outcome.interrupted {
        eprintln!("ringside: {}", interrupted_summary(&document.results));
        return Ok(ExitCode::from(interrupted_exit_code()));
    }
    if unverified > 0 {
        eprintln!(
            "ringside: {unverified} run(s) did not verify their data; see the 'verified' column"
        );
        return Ok(ExitCode::from(1));
    }
    if failed_runs > 0 {
        eprintln!(
            "ringside: {failed_runs} run(s) failed ({failed_engines}); each has a row that says \
             why, the others were measured"
        );
        return Ok(ExitCode::from(ENGINE_FAILED_EXIT));
    }
    Ok(ExitCode::SUCCESS)
}
