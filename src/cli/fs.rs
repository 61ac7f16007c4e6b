//! `fs write`, `fs cycle` and `fs read`: their flags, and the file studies they turn into.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::common::{duration_arg, size_arg, CommonArgs};
use crate::engines::Workload;
use crate::studies::fs::cycle::CycleOptions;
use crate::studies::fs::read::{Cache, ReadStudy};
use crate::studies::fs::write::WriteOptions;
use crate::studies::fs::FileStudy;

#[derive(clap::Args, Debug, Clone)]
pub struct WriteArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Bytes to write per run.
    #[arg(long, short = 's', default_value = "1G", value_parser = size_arg)]
    pub size: u64,
    /// Bytes per write operation (4k and 1M show the two ends: a page, and a large block).
    #[arg(long, short = 'b', default_value = "4k", value_parser = size_arg)]
    pub block_size: u64,
    /// Operations in flight for the batch/ring/fixed/sqpoll engines.
    #[arg(long, short = 'd', default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub depth: u32,
    /// Threads of the `threads` engine's pool (default: one per --depth).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    #[command(flatten)]
    pub scratch: ScratchArgs,
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
    /// Threads of the `threads` engine's pool (default: one per --depth).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    #[command(flatten)]
    pub scratch: ScratchArgs,
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

/// Where a file study writes its scratch file; both file studies take it.
#[derive(clap::Args, Debug, Clone)]
pub struct ScratchArgs {
    /// Directory for the scratch file (default: the current directory).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// What both file studies' flags give, besides their own.
struct FileShape<'a> {
    common: &'a CommonArgs,
    dir: &'a PathBuf,
    size: u64,
    block_size: u64,
    block_flag: &'static str,
    depth: u32,
    threads: Option<u32>,
    direct: bool,
    fresh: bool,
    seed: u64,
}

impl FileShape<'_> {
    fn study(self, workload: Workload, durable_setup: bool) -> anyhow::Result<FileStudy> {
        let common = self.common;
        Ok(FileStudy {
            workload,
            engines: common.engines(workload)?,
            engines_named: !common.engine.is_empty(),
            rounds: common.runs,
            destination: common.output.destination()?,
            cpu: common.cpu,
            say: common.say.say(),
            run_cap: None,
            helpers: common.helpers.resolve(common.cpu)?,
            ring_events: common.ring_events,
            dir: self.dir.clone(),
            size: self.size,
            block_size: self.block_size,
            block_flag: self.block_flag,
            depth: self.depth,
            threads: self.threads,
            direct: self.direct,
            fresh: self.fresh,
            seed: self.seed,
            durable_setup,
        })
    }
}

impl WriteArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let shape = FileShape {
            common: &self.common,
            dir: &self.scratch.dir,
            size: self.size,
            block_size: self.block_size,
            block_flag: "--block-size",
            depth: self.depth,
            threads: self.threads,
            direct: self.direct,
            fresh: self.fresh,
            seed: self.seed,
        };
        let options = WriteOptions {
            fsync_end: self.fsync_end,
            runtime: self.runtime,
        };
        let mut study = shape.study(Workload::FsWrite, false)?;
        study.run_cap = Some(self.runtime).filter(|runtime| !runtime.is_zero());
        crate::studies::fs::write::run(&study, options)
    }
}

impl CycleArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let shape = FileShape {
            common: &self.common,
            dir: &self.scratch.dir,
            size: self.size,
            block_size: self.page_size,
            block_flag: "--page-size",
            depth: self.depth,
            threads: self.threads,
            direct: self.direct,
            fresh: self.fresh,
            seed: self.seed,
        };
        // A study of fsyncs starts from a file that is clean on disk.
        let options = CycleOptions {
            datasync: self.fdatasync,
        };
        crate::studies::fs::cycle::run(&shape.study(Workload::FsCycle, true)?, options)
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct ReadArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Size of the file the reads cover (laid out once, before the first run).
    #[arg(long, short = 's', default_value = "256m", value_parser = size_arg)]
    pub size: u64,
    /// Bytes per read.
    #[arg(long, short = 'b', default_value = "4k", value_parser = size_arg)]
    pub block_size: u64,
    /// Queue depths to sweep, comma separated: reads in flight (the pool's threads for
    /// `threads`, the ring's or AIO context's depth); blocking and uring-single run at 1 only.
    #[arg(long, short = 'd', value_delimiter = ',', default_value = "1,4,16,64,128",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub depth: Vec<u32>,
    /// Threads of the `threads` engine's pool (default: one per --depth).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    #[command(flatten)]
    pub scratch: ScratchArgs,
    /// Read this file, laid out once and kept, instead of a scratch file laid out anew in --dir
    /// for every invocation and deleted (fio's --filename). Laid out when absent or empty; read
    /// as it is when it holds --size in whole --block-size blocks stamped with --seed (every
    /// block checked when warm, a spread of 1024 otherwise; every read is checked as always);
    /// any other file is refused and left untouched. A kept file spares each invocation a
    /// fresh layout: --size of writes and, with discard, a delete's trims, which the device
    /// may still be absorbing while the reads run.
    #[arg(long, value_name = "PATH")]
    pub filename: Option<PathBuf>,
    /// Open the file with O_DIRECT: every read goes to the device (libaio and IOPOLL need it).
    #[arg(long, conflicts_with = "cold")]
    pub direct: bool,
    /// Drop the file's cached pages before each run (posix_fadvise DONTNEED, no root needed):
    /// buffered reads that go to the device.
    #[arg(long)]
    pub cold: bool,
    /// Read the blocks in order instead of in a random order.
    #[arg(long)]
    pub sequential: bool,
    /// Stop a run after this long even if not every block was read (0 = no limit).
    #[arg(long, default_value = "2s", value_parser = duration_arg)]
    pub runtime: Duration,
    /// Seed of the file's random data and of the read order (recorded in every row).
    #[arg(long, default_value_t = 21)]
    pub seed: u64,
}

impl ReadArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let common = &self.common;
        let cache = match (self.direct, self.cold) {
            (true, _) => Cache::Direct,
            (false, true) => Cache::Cold,
            (false, false) => Cache::Warm,
        };
        ReadStudy {
            engines: common.engines(Workload::FsRead)?,
            engines_named: !common.engine.is_empty(),
            depths: self.depth.clone(),
            threads: self.threads,
            rounds: common.runs,
            destination: common.output.destination()?,
            cpu: common.cpu,
            say: common.say.say(),
            helpers: common.helpers.resolve(common.cpu)?,
            ring_events: common.ring_events,
            dir: self.scratch.dir.clone(),
            filename: self.filename.clone(),
            size: self.size,
            block_size: self.block_size,
            cache,
            sequential: self.sequential,
            runtime: self.runtime,
            seed: self.seed,
        }
        .run()
    }
}
