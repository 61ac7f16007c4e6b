//! `ringside fs write`: write a file sequentially in blocks with every engine (seed 003), read it
//! back and compare, and report every run with the kernel's syscall count.
//!
//! By default the file is laid out once and every run overwrites it, as fio does: the page
//! cache stays warm and no deletes send discards into the next run (FINDINGS). `--fresh`
//! truncates before each run instead, which is what seed 003's O_TRUNC measured.

use std::cell::Cell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::cli::{duration_arg, size_arg, CommonArgs};
use crate::fs::scratch::verify_file;
use crate::fs::study::{FileStudy, RunContext};
use crate::fs::{make_engine, Workload, WriteJob};
use crate::measure::{meter_for_run, BlockDevice};
use crate::progress::stopped;
use crate::row::Row;

#[derive(clap::Args, Debug, Clone)]
pub struct WriteArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Bytes to write per run.
    #[arg(long, short = 's', default_value = "1G", value_parser = size_arg)]
    pub size: u64,
    /// Bytes per write operation (seed 003 used 4k and 1M).
    #[arg(long, short = 'b', default_value = "4k", value_parser = size_arg)]
    pub block_size: u64,
    /// Operations in flight for the batch/ring/fixed/sqpoll engines.
    #[arg(long, short = 'd', default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub depth: u32,
    /// Directory for the scratch file (default: the current directory).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Truncate the file before each run (a fresh file) instead of overwriting it.
    #[arg(long)]
    pub fresh: bool,
    /// fsync the file before the clock stops (measures the device, not just the page cache).
    #[arg(long)]
    pub fsync_end: bool,
    /// Open the file with O_DIRECT (block size must be a multiple of 512).
    #[arg(long)]
    pub direct: bool,
    /// Stop a run after this long even if --size is not written yet, like fio's runtime; the
    /// row then covers what was written. Keeps slow engines (uring-single writes 4 KiB blocks
    /// at well under 100 MB/s on some machines) from dominating the study. 0 = no limit.
    #[arg(long, default_value = "2s", value_parser = duration_arg)]
    pub runtime: Duration,
    /// Seed of the random data (recorded in every row).
    #[arg(long, default_value_t = 3)]
    pub seed: u64,
}

impl WriteArgs {
    fn study(&self) -> FileStudy<'_> {
        FileStudy {
            workload: Workload::Write,
            common: &self.common,
            dir: &self.dir,
            size: self.size,
            block_size: self.block_size,
            block_flag: "--block-size",
            depth: self.depth,
            direct: self.direct,
            fresh: self.fresh,
            seed: self.seed,
            durable_setup: false,
        }
    }

    fn params(&self) -> Map<String, Value> {
        let mut params = self.study().params();
        params.insert("fsync_end".into(), Value::from(self.fsync_end));
        params
    }
}

pub fn run(args: &WriteArgs) -> anyhow::Result<ExitCode> {
    args.study().run(
        |context| measure_run(args, context),
        |row| seed_line(row, args.block_size),
    )
}

fn measure_run(args: &WriteArgs, context: &RunContext) -> anyhow::Result<Row> {
    use std::os::fd::AsFd;
    let RunContext {
        def,
        run,
        file,
        data,
        scratch,
        ..
    } = *context;
    let limit = Some(args.runtime).filter(|limit| !limit.is_zero());
    let deadline = limit.map(|limit| (Instant::now() + limit, Cell::new(0u32)));
    let should_stop = || {
        if stopped() {
            return true;
        }
        // Reading the clock every block would cost more than a small write; look every 64.
        deadline.as_ref().is_some_and(|(until, calls)| {
            calls.set(calls.get().wrapping_add(1));
            calls.get() % 64 == 0 && Instant::now() >= *until
        })
    };
    let job = WriteJob {
        file: file.as_fd(),
        data: data.as_slice(),
        block_size: args.block_size as usize,
        depth: args.depth,
        fsync_end: args.fsync_end,
        helpers: context.helpers,
        should_stop: &should_stop,
    };
    let mut meter = meter_for_run().with_device(BlockDevice::of_file(file));
    let outcome = make_engine(def).write(&job, &mut meter)?;
    let written = outcome.tally.bytes as usize;
    let verified = written > 0 && verify_file(scratch.file_path(), &data.as_slice()[..written])?;
    let mut row = Row::measured(
        Workload::Write.name(),
        def.name,
        args.params(),
        run,
        &outcome.measured,
        outcome.tally,
    );
    row.params.extend(outcome.params);
    row.notes.extend(outcome.notes);
    row.verified = verified;
    if written < data.as_slice().len() {
        row.notes.push(format!(
            "{} stopped before writing all of --size (--runtime {} or Ctrl-C); its rows cover the \
             bytes it wrote",
            def.name,
            humantime::format_duration(args.runtime)
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
