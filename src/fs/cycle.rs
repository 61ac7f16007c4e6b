//! `ringside fs cycle`: for each page of a file, write it, fsync, read it back and check it
//! (seed 000's storage loop), with the seed's own line: `write(4096)/fsync/read(4096) * 65536
//! pages = N syscalls in T ms`, N counted by the kernel.
//!
//! io_uring's win here comes from many fsyncs in flight sharing device flushes, not from fewer
//! syscalls (FINDINGS), so every row records the chains in flight (`depth`) and whether the file
//! was fresh or overwritten: both move the result several-fold.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Map, Value};

use crate::cli::{size_arg, CommonArgs};
use crate::fs::study::{FileStudy, RunContext};
use crate::fs::{make_engine, CycleJob, Workload};
use crate::measure::{meter_for_run, BlockDevice};
use crate::progress::stopped;
use crate::row::Row;

#[derive(clap::Args, Debug, Clone)]
pub struct CycleArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Size of the file the pages cover.
    #[arg(long, short = 's', default_value = "256m", value_parser = size_arg)]
    pub size: u64,
    /// Bytes per page: one write, one fsync and one read each.
    #[arg(long, short = 'b', default_value = "4k", value_parser = size_arg)]
    pub page_size: u64,
    /// Linked write->fsync->read chains in flight for the io_uring engines.
    #[arg(long, short = 'd', default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub depth: u32,
    /// Directory for the scratch file (default: the current directory).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Truncate the file before each run (pages extend it) instead of overwriting it.
    #[arg(long)]
    pub fresh: bool,
    /// fdatasync instead of fsync.
    #[arg(long)]
    pub fdatasync: bool,
    /// Open the file with O_DIRECT (page size must be a multiple of 512).
    #[arg(long)]
    pub direct: bool,
    /// Seed of the random data (recorded in every row).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl CycleArgs {
    fn study(&self) -> FileStudy<'_> {
        FileStudy {
            workload: Workload::Cycle,
            common: &self.common,
            dir: &self.dir,
            size: self.size,
            block_size: self.page_size,
            block_flag: "--page-size",
            depth: self.depth,
            direct: self.direct,
            fresh: self.fresh,
            seed: self.seed,
            durable_setup: true,
        }
    }

    fn params(&self) -> Map<String, Value> {
        let mut params = self.study().params();
        let sync = if self.fdatasync { "fdatasync" } else { "fsync" };
        params.insert("sync".into(), Value::from(sync));
        params
    }
}

pub fn run(args: &CycleArgs) -> anyhow::Result<ExitCode> {
    args.study().run(
        |context| measure_run(args, context),
        |row| seed_line(row, args),
    )
}

fn measure_run(args: &CycleArgs, context: &RunContext) -> anyhow::Result<Row> {
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
        page_size: args.page_size as usize,
        depth: args.depth,
        datasync: args.fdatasync,
        helpers: context.helpers,
        should_stop: &stopped,
    };
    let mut meter = meter_for_run().with_device(BlockDevice::of_file(file));
    let outcome = make_engine(def).cycle(&job, &mut meter)?;
    let pages = data.as_slice().len().div_ceil(job.page_size) as u64;
    let mut row = Row::measured(
        Workload::Cycle.name(),
        def.name,
        args.params(),
        run,
        &outcome.measured,
        outcome.tally,
    );
    if let Some(latency) = &outcome.latency_ns {
        row.set_latency(latency);
    }
    row.errors = outcome.mismatches;
    row.params.extend(outcome.params);
    row.notes.extend(outcome.notes);
    row.verified = outcome.mismatches == 0 && outcome.tally.ops > 0;
    if outcome.tally.ops < pages {
        row.notes.push(format!(
            "{} run {run} was interrupted after {} of {pages} pages",
            def.name, outcome.tally.ops
        ));
    }
    Ok(row)
}

fn seed_line(row: &Row, args: &CycleArgs) -> String {
    let sync = if args.fdatasync { "fdatasync" } else { "fsync" };
    format!(
        "fs cycle {}: write({page})/{sync}/read({page}) * {} pages = {} syscalls ({}) in {:.0}ms{}{}",
        row.engine,
        row.ops,
        row.syscalls,
        row.syscalls_source,
        row.seconds * 1e3,
        where_the_work_went(row),
        if row.verified { "" } else { " NOT VERIFIED" },
        page = args.page_size,
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
