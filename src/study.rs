//! The shape every study shares: runs of several engines alternating (A B A B ..., so slow drift
//! of a noisy machine hits every engine alike), progress on stderr, Ctrl-C ending the study
//! after the current run, and the results written even when a run failed or was interrupted.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::CommonArgs;
use crate::output::emit;
use crate::progress::{stopped, Progress};
use crate::row::{Document, Row};

/// Exit code of a study stopped by Ctrl-C/SIGTERM (as shells report SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// What a study produced: its rows, and why it ended early if it did.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub failure: Option<anyhow::Error>,
    pub interrupted: bool,
}

/// Runs `measure(engine, run)` for every run and engine, engines alternating within each run.
/// The first failure ends the study; what finished before it is kept.
pub fn run_alternating<E: Copy>(
    common: &CommonArgs,
    engines: &[(E, &str)],
    progress: &Progress,
    mut measure: impl FnMut(E, u32) -> anyhow::Result<Row>,
) -> Outcome {
    crate::progress::stop_flag();
    let mut rows = Vec::new();
    for run in 1..=common.runs {
        for &(engine, name) in engines {
            if stopped() {
                return Outcome {
                    rows,
                    failure: None,
                    interrupted: true,
                };
            }
            progress.step(format!("{name} run {run}/{}", common.runs));
            match measure(engine, run) {
                Ok(row) => rows.push(row),
                Err(error) => {
                    let error = error.context(format!("{name} run {run} failed"));
                    return Outcome {
                        rows,
                        failure: Some(error),
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

/// Writes the results (partial ones too) and turns the outcome into an exit code: 0 when every
/// run finished verified, 1 on a failure or an unverified run, 130 when interrupted.
pub fn finish(common: &CommonArgs, env_dir: &Path, outcome: Outcome) -> anyhow::Result<ExitCode> {
    let unverified = outcome.rows.iter().filter(|row| !row.verified).count();
    if !outcome.rows.is_empty() || outcome.failure.is_none() {
        let document = Document::new(crate::probe::environment(env_dir), outcome.rows);
        emit(&document, common.format, common.output.as_deref())?;
    }
    if let Some(error) = outcome.failure {
        return Err(error);
    }
    if outcome.interrupted {
        eprintln!("ringside: interrupted; the results above cover the runs that finished");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if unverified > 0 {
        eprintln!(
            "ringside: {unverified} run(s) did not verify their data; see the 'verified' column"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
