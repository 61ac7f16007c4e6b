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
use crate::fs::scratch::{stamp_blocks, AlignedBuffer, Scratch};
use crate::fs::{make_engine, runnable, select_engines, CycleJob, EngineDef, Workload};
use crate::measure::meter_for_run;
use crate::progress::{stopped, Progress};
use crate::row::Row;
use crate::units::format_size;

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
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.size > 0, "--size must be more than 0 bytes");
        anyhow::ensure!(self.page_size > 0, "--page-size must be more than 0 bytes");
        anyhow::ensure!(self.page_size <= 1 << 30, "--page-size must be at most 1G");
        if self.direct {
            anyhow::ensure!(
                self.page_size.is_multiple_of(512) && self.size.is_multiple_of(512),
                "--direct needs --page-size and --size to be multiples of 512 bytes (got {} and {})",
                self.page_size,
                self.size
            );
        }
        Ok(())
    }

    fn params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        params.insert("size".into(), Value::from(format_size(self.size)));
        params.insert("page_size".into(), Value::from(format_size(self.page_size)));
        params.insert("depth".into(), Value::from(self.depth));
        params.insert(
            "file".into(),
            Value::from(if self.fresh { "fresh" } else { "overwrite" }),
        );
        params.insert(
            "sync".into(),
            Value::from(if self.fdatasync { "fdatasync" } else { "fsync" }),
        );
        params.insert("direct".into(), Value::from(self.direct));
        params.insert("seed".into(), Value::from(self.seed));
        params
    }
}

pub fn run(args: &CycleArgs) -> anyhow::Result<ExitCode> {
    args.check()?;
    let engines = runnable(
        select_engines(Workload::Cycle, &args.common.engine)?,
        &args.common,
    )?;
    if let Some(cpu) = args.common.cpu {
        crate::pin::pin_current_thread(cpu)?;
    }
    let scratch = Scratch::create(&args.dir)?;
    let file = scratch.open(args.direct)?;
    let mut data = AlignedBuffer::random(args.size as usize, args.seed);
    if !args.fresh {
        super::write::lay_out(&file, data.as_slice(), args.page_size as usize)?;
        rustix::fs::fsync(&file).map_err(|error| crate::fs::blocking::io_error("fsync", error))?;
    }
    let progress = Progress::new(
        u64::from(args.common.runs) * engines.len() as u64,
        args.common.quiet,
    );
    let named: Vec<(&EngineDef, &str)> = engines.iter().map(|e| (*e, e.name)).collect();
    let outcome = crate::study::run_alternating(&args.common, &named, &progress, |def, run| {
        stamp_blocks(data.as_mut_slice(), args.page_size as usize, run);
        if args.fresh {
            file.set_len(0)
                .map_err(|error| anyhow::anyhow!("cannot truncate the file ({error})"))?;
            rustix::fs::fsync(&file)
                .map_err(|error| crate::fs::blocking::io_error("fsync", error))?;
        }
        let row = measure_run(args, def, run, &file, &data)?;
        progress.line(seed_line(&row, args));
        Ok(row)
    });
    progress.finish();
    drop(file);
    drop(scratch);
    crate::study::finish(&args.common, &args.dir, outcome)
}

fn measure_run(
    args: &CycleArgs,
    def: &EngineDef,
    run: u32,
    file: &std::fs::File,
    data: &AlignedBuffer,
) -> anyhow::Result<Row> {
    use std::os::fd::AsFd;
    let job = CycleJob {
        file: file.as_fd(),
        data: data.as_slice(),
        page_size: args.page_size as usize,
        depth: args.depth,
        datasync: args.fdatasync,
        should_stop: &stopped,
    };
    let mut meter = meter_for_run();
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
    row.errors = outcome.mismatches;
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
        "fs cycle {}: write({page})/{sync}/read({page}) * {} pages = {} syscalls ({}) in {:.0}ms{}",
        row.engine,
        row.ops,
        row.syscalls,
        row.syscalls_source,
        row.seconds * 1e3,
        if row.verified { "" } else { " NOT VERIFIED" },
        page = args.page_size,
    )
}
