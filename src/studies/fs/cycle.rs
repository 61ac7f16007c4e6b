//! `ringside fs cycle`: for each page of a file, write it, fsync, read it back and check it
//! (seed 000's storage loop), with the seed's own line: `write(4096)/fsync/read(4096) * 65536
//! pages = N syscalls in T ms`, N counted by the kernel.
//!
//! io_uring's win here comes from many fsyncs in flight sharing device flushes, not from fewer
//! syscalls (FINDINGS), so every row records the chains in flight (`depth`) and whether the file
//! was fresh or overwritten: both move the result several-fold.

use std::process::ExitCode;

use serde_json::Value;

use super::{FileStudy, RunContext};
use crate::engines::file::CycleJob;
use crate::engines::Workload;
use crate::row::params::Param;
use crate::row::Row;
use crate::system::stop::stopped;

/// What `fs cycle` adds to a file study.
#[derive(Clone, Copy, Debug)]
pub struct CycleOptions {
    /// fdatasync instead of fsync.
    pub datasync: bool,
}

impl CycleOptions {
    fn sync_name(self) -> &'static str {
        if self.datasync {
            "fdatasync"
        } else {
            "fsync"
        }
    }
}

pub fn run(study: &FileStudy, options: CycleOptions) -> anyhow::Result<ExitCode> {
    assert_eq!(study.workload, Workload::FsCycle);
    study.run(
        |context| measure_run(study, options, context),
        |row| seed_line(row, study.block_size, options),
    )
}

fn measure_run(
    study: &FileStudy,
    options: CycleOptions,
    context: &RunContext,
) -> anyhow::Result<Row> {
    use std::os::fd::AsFd;
    let RunContext {
        def,
        run,
        file,
        data,
        ..
    } = *context;
    let job = CycleJob {
        file: file.as_fd(),
        data: data.as_slice(),
        page_size: study.block_size as usize,
        depth: study.depth,
        threads: study.threads,
        datasync: options.datasync,
        should_stop: &stopped,
    };
    let (mut engine, mut meter) = context.engine_and_meter();
    let outcome = engine.cycle(&job, &mut meter)?;
    let pages = data.as_slice().len().div_ceil(job.page_size) as u64;
    let sync = (Param::Sync, Value::from(options.sync_name()));
    let mut row = context.row(study, sync, &outcome);
    if let Some(latency) = &outcome.latency_ns {
        row.set_latency(latency);
    }
    row.errors = outcome.mismatches;
    row.verified = outcome.tally.ops > 0;
    if outcome.mismatches > 0 {
        row.unverified_because(format!(
            "{} of {} pages read back differed from what was written",
            outcome.mismatches, outcome.tally.ops
        ));
    }
    if outcome.tally.ops < pages {
        row.notes.push(format!(
            "{} run {run} was interrupted after {} of {pages} pages",
            def.name, outcome.tally.ops
        ));
    }
    Ok(row)
}

fn seed_line(row: &Row, page_size: u64, options: CycleOptions) -> String {
    let sync = options.sync_name();
    format!(
        "fs cycle {}: write({page})/{sync}/read({page}) * {} pages = {} syscalls ({}) in {:.0}ms{}{}",
        row.engine,
        row.ops,
        row.syscalls,
        row.syscalls_source,
        row.seconds * 1e3,
        where_the_work_went(row),
        if row.verified { "" } else { " NOT VERIFIED" },
        page = page_size,
    )
}

/// ", 16890 device flushes (0.26 per fsync), 8 io-wq workers": whether concurrent fsyncs
/// shared a flush, and who ran them, so the line explains its own time.
fn where_the_work_went(row: &Row) -> String {
    let mut text = String::new();
    if let Some(flushes) = row.device_flushes.filter(|_| row.ops > 0) {
        text += &format!(
            ", {flushes} device flushes ({:.2} per fsync)",
            flushes as f64 / row.ops as f64
        );
    }
    if let Some(workers) = row.iowq_workers.filter(|&workers| workers > 0) {
        text += &format!(", {workers} io-wq workers");
    }
    text
}
