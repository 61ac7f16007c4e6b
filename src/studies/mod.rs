//! The studies: each turns a plan into rows by running engines, and every one of them runs on
//! the one runner here. A study is a list of cells (an engine with the workload's parameters)
//! measured run by run, cells alternating within each run (A B A B ..., so slow drift of a noisy
//! machine hits every engine alike), with progress on stderr, Ctrl-C ending the study after the
//! current cell, and the results written even when a run failed or was interrupted.
//!
//! `fs/` holds the file studies (`fs write`, `fs cycle`, their scratch file), `echo.rs` and
//! `http.rs` the network studies, which run each server as a child process through
//! `net.rs`; `serve.rs` is that child (`ringside serve`), `load.rs` the `load`
//! subcommand (one load run against any server).

pub mod echo;
pub mod fs;
pub mod http;
pub mod load;
pub mod net;
pub mod serve;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::output::progress::Progress;
use crate::output::{emit, write_text, Format};
use crate::row::{Document, Row};
use crate::system::stop::{interrupted_exit_code, stop_flag, stopped};

/// One cell of a study: what one measurement in a run covers.
pub trait Cell {
    /// What the progress bar says while the cell runs.
    fn step(&self, run: u32, runs: u32) -> String;
    /// What an error of the cell is prefixed with.
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

/// What a study produced: its rows, and why it ended early if it did.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub failure: Option<anyhow::Error>,
    pub interrupted: bool,
}

/// Runs `measure(cell, run)` for every run and cell, cells alternating within each run. The
/// first failure ends the study; what finished before it is kept.
pub fn run_alternating<C: Cell>(
    runs: u32,
    cells: &[C],
    progress: &Progress,
    mut measure: impl FnMut(&C, u32) -> anyhow::Result<Row>,
) -> Outcome {
    stop_flag();
    let mut rows = Vec::with_capacity(cells.len() * runs as usize);
    for run in 1..=runs {
        for cell in cells {
            if stopped() {
                return Outcome {
                    rows,
                    failure: None,
                    interrupted: true,
                };
            }
            progress.step(cell.step(run, runs));
            match measure(cell, run) {
                Ok(row) => rows.push(row),
                Err(error) => {
                    return Outcome {
                        rows,
                        failure: Some(error.context(cell.failed(run))),
                        interrupted: stopped(),
                    };
                }
            }
            progress.done_step();
        }
    }
    Outcome {
        rows,
        failure: None,
        interrupted: stopped(),
    }
}

/// Writes the results (partial ones too) and turns the outcome into an exit code: 130 (Ctrl-C)
/// or 143 (SIGTERM) when interrupted (a run that failed because of the interruption included),
/// 1 on a failure or an unverified run, else 0. `table` renders the study's own table for `Format::Table`; the
/// environment is probed in `env_dir` (the directory the study wrote to).
pub fn finish(
    outcome: Outcome,
    env_dir: &Path,
    destination: &Destination,
    table: impl FnOnce(&[Row]) -> String,
) -> anyhow::Result<ExitCode> {
    let unverified = outcome.rows.iter().filter(|row| !row.verified).count();
    if !outcome.rows.is_empty() || outcome.failure.is_none() {
        let document = Document::new(crate::probe::environment(env_dir), outcome.rows);
        if let Some(path) = &destination.json {
            emit(&document, Format::Json, Some(path))?;
        }
        match destination.format {
            Format::Table => write_text(&table(&document.results), destination.path.as_deref())
                .context("cannot write the results")?,
            format => emit(&document, format, destination.path.as_deref())?,
        }
    }
    if outcome.interrupted {
        eprintln!("ringside: interrupted; the results above cover the runs that finished");
        return Ok(ExitCode::from(interrupted_exit_code()));
    }
    if let Some(error) = outcome.failure {
        return Err(error);
    }
    if unverified > 0 {
        eprintln!(
            "ringside: {unverified} run(s) did not verify their data; see the 'verified' column"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
