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
use crate::fs::scratch::{stamp_blocks, verify_file, AlignedBuffer, Scratch};
use crate::fs::{make_engine, select_engines, EngineDef, Workload, WriteJob};
use crate::measure::meter_for_run;
use crate::progress::{stopped, Progress};
use crate::row::Row;
use crate::units::format_size;

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
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.size > 0, "--size must be more than 0 bytes");
        anyhow::ensure!(
            self.block_size > 0,
            "--block-size must be more than 0 bytes"
        );
        anyhow::ensure!(
            self.block_size <= 1 << 30,
            "--block-size {} is larger than the 1G a single write can take",
            format_size(self.block_size)
        );
        if self.direct {
            anyhow::ensure!(
                self.block_size.is_multiple_of(512) && self.size.is_multiple_of(512),
                "--direct needs --block-size and --size to be multiples of 512 bytes (got {} and {})",
                self.block_size,
                self.size
            );
        }
        Ok(())
    }

    fn params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        params.insert("size".into(), Value::from(format_size(self.size)));
        params.insert(
            "block_size".into(),
            Value::from(format_size(self.block_size)),
        );
        params.insert("depth".into(), Value::from(self.depth));
        params.insert(
            "file".into(),
            Value::from(if self.fresh { "fresh" } else { "overwrite" }),
        );
        params.insert("direct".into(), Value::from(self.direct));
        params.insert("fsync_end".into(), Value::from(self.fsync_end));
        params.insert("seed".into(), Value::from(self.seed));
        params
    }
}

pub fn run(args: &WriteArgs) -> anyhow::Result<ExitCode> {
    args.check()?;
    let engines = crate::fs::runnable(
        select_engines(Workload::Write, &args.common.engine)?,
        &args.common,
    )?;
    if let Some(cpu) = args.common.cpu {
        crate::pin::pin_current_thread(cpu)?;
    }
    let scratch = Scratch::create(&args.dir)?;
    let file = scratch.open(args.direct)?;
    let mut data = AlignedBuffer::random(args.size as usize, args.seed);
    if !args.fresh {
        lay_out(&file, data.as_slice(), args.block_size as usize)?;
    }
    let progress = Progress::new(
        u64::from(args.common.runs) * engines.len() as u64,
        args.common.quiet,
    );
    let named: Vec<(&EngineDef, &str)> = engines.iter().map(|e| (*e, e.name)).collect();
    let outcome = crate::study::run_alternating(&args.common, &named, &progress, |def, run| {
        stamp_blocks(data.as_mut_slice(), args.block_size as usize, run);
        if args.fresh {
            file.set_len(0)
                .map_err(|error| anyhow::anyhow!("cannot truncate the file ({error})"))?;
        }
        let row = measure_run(args, def, run, &file, &data, &scratch)?;
        progress.line(seed_line(&row, args.block_size));
        Ok(row)
    });
    progress.finish();
    drop(file);
    drop(scratch);
    crate::study::finish(&args.common, &args.dir, outcome)
}

/// Writes the whole file once with plain writes, untimed: allocates its blocks and warms the
/// page cache, so overwrite runs measure the API, not block allocation or cold memory. It
/// writes in the runs' own block size (as fio lays out its files): on Linux 6.18 ext4 caches
/// large writes in large folios, and 4 KiB overwrites of those ran 2x slower here.
pub fn lay_out(file: &std::fs::File, data: &[u8], block_size: usize) -> anyhow::Result<()> {
    use std::os::unix::fs::FileExt;
    for (index, chunk) in data.chunks(block_size).enumerate() {
        file.write_all_at(chunk, (index * block_size) as u64)
            .map_err(|error| crate::fs::blocking::io_error("laying out the file", error))?;
    }
    Ok(())
}

fn measure_run(
    args: &WriteArgs,
    def: &EngineDef,
    run: u32,
    file: &std::fs::File,
    data: &AlignedBuffer,
    scratch: &Scratch,
) -> anyhow::Result<Row> {
    use std::os::fd::AsFd;
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
        should_stop: &should_stop,
    };
    let mut meter = meter_for_run();
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
