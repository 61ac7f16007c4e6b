//! `ringside fs write`: write a file sequentially in blocks with every engine (seed 003), read it
//! back and compare, and report every run with the kernel's syscall count.
//!
//! By default the file is laid out once and every run overwrites it, as fio does: the page
//! cache stays warm and no deletes send discards into the next run (FINDINGS). `--fresh`
//! truncates before each run instead, which is what seed 003's O_TRUNC measured.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use super::scratch::verify_file;
use super::{FileStudy, RunContext};
use crate::engines::file::WriteJob;
use crate::engines::Workload;
use crate::row::params::Param;
use crate::row::Row;

/// What `fs write` adds to a file study.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// fsync the file before the clock stops.
    pub fsync_end: bool,
    /// Stop a run after this long (zero: no limit).
    pub runtime: Duration,
}

pub fn run(study: &FileStudy, options: WriteOptions) -> anyhow::Result<ExitCode> {
    assert_eq!(study.workload, Workload::FsWrite);
    study.run(
        |context| measure_run(study, options, context),
        |row| seed_line(row, study.block_size),
    )
}

fn measure_run(
    study: &FileStudy,
    options: WriteOptions,
    context: &RunContext,
) -> anyhow::Result<Row> {
    use std::os::fd::AsFd;
    let RunContext {
        def,
        file,
        data,
        scratch,
        ..
    } = *context;
    let should_stop = super::stop_check(options.runtime);
    let job = WriteJob {
        file: file.as_fd(),
        data: data.as_slice(),
        block_size: study.block_size as usize,
        depth: study.depth,
        threads: study.threads,
        fsync_end: options.fsync_end,
        should_stop: &should_stop,
    };
    let (mut engine, mut meter) = context.engine_and_meter();
    let outcome = engine.write(&job, &mut meter)?;
    let written = outcome.tally.bytes as usize;
    let verified = written > 0 && verify_file(scratch.file_path(), &data.as_slice()[..written])?;
    let fsync_end = (Param::FsyncEnd, Value::from(options.fsync_end));
    let mut row = context.row(study, fsync_end, &outcome);
    row.verified = verified;
    if written > 0 && !verified {
        row.unverified_because("the file read back differed from what was written".into());
    }
    if written < data.as_slice().len() {
        row.notes.push(format!(
            "{} stopped before writing all of --size (--runtime {} or Ctrl-C); its rows cover the \
             bytes it wrote",
            def.name,
            humantime::format_duration(options.runtime)
        ));
    }
    Ok(row)
}

/// The seed's kind of line, with the kernel's count: `fs write uring-ring: write(4096) * 262144
/// blocks = 2051 syscalls in 812 ms (1322 MB/s)`.
fn seed_line(row: &Row, block_size: u64) -> String {
    format!(
        "fs write {}: write({block_size}) * {} blocks = {} syscalls ({}) in {:.0} ms ({:.0} MB/s){}",
        row.engine,
        row.ops,
        row.syscalls,
        row.syscalls_source,
        row.seconds * 1e3,
        row.bytes_per_sec / 1e6,
        if row.verified { "" } else { " NOT VERIFIED" }
    )
}
