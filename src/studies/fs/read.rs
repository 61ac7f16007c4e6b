//! `ringside fs read`: reads of single blocks (`--block-size`, 4 KiB by default) at random, or in
//! order with `--sequential`, from a file laid out once, at every queue depth of `--depth`
//! (fio's `randread`, the storage community's first benchmark). Every block of the file carries
//! its stamp (its index keyed by the seed, and a CRC-32 of the whole block, as fio's verify),
//! and every read is checked against it as it completes, so a read of the wrong block, a short
//! read, a torn block or any byte changed fails the run.
//!
//! The file is read in one of three states, recorded in each row's `cache`: `warm` (buffered,
//! every block in the page cache from the layout), `cold` (buffered, the file's cached pages
//! dropped before each run with `posix_fadvise(POSIX_FADV_DONTNEED)`, which needs no root; the
//! file was synced, so its pages are clean and go), and `direct` (O_DIRECT, the device for every
//! read). As fio does by default, the file is advised `POSIX_FADV_RANDOM` for random reads
//! (no readahead) and `POSIX_FADV_SEQUENTIAL` for sequential ones.
//!
//! Cells are (engine, depth), alternating run by run. The engines that keep one read in flight
//! (`blocking`, `uring-single`) run at depth 1 only.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value};

use super::read_file::{Layout, ReadFile};
use super::stop_check;
use crate::engines::blocking::file::io_error;
use crate::engines::file::{ReadJob, Stamp};
use crate::engines::needs::Feature;
use crate::engines::uring::ring::Helpers;
use crate::engines::{EngineDef, Make};
use crate::measure::{meter_for_run, BlockDevice};
use crate::output::progress::Say;
use crate::report::terminal_text;
use crate::row::params::{Param, Params};
use crate::row::{Row, Tally};
use crate::studies::{
    attribution_rounds, choose, finish, run_rounds, Cell, Destination, Plan, Round, Rounds,
};
use crate::units::format_size;

/// The engines that keep one read in flight whatever `--depth` says: run at depth 1 only.
const ONE_AT_A_TIME: &[&str] = &["blocking", "uring-single"];

/// The page cache state a read study measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// Buffered, every block cached.
    Warm,
    /// Buffered, the file's pages dropped before each run.
    Cold,
    /// O_DIRECT: no page cache.
    Direct,
}

impl Cache {
    pub fn name(self) -> &'static str {
        match self {
            Cache::Warm => "warm",
            Cache::Cold => "cold",
            Cache::Direct => "direct",
        }
    }
}

/// One read study, as its flags asked for it.
pub struct ReadStudy {
    /// The engines named (or the workload's defaults), before the availability check.
    pub engines: Vec<&'static EngineDef>,
    /// Whether `--engine` named them: a named engine that cannot run here, or cannot read this
    /// file, gets failure rows that say why, and the study exits 4.
    pub engines_named: bool,
    pub depths: Vec<u32>,
    /// The `threads` engine's pool size (None: each cell's depth).
    pub threads: Option<u32>,
    pub rounds: Rounds,
    pub destination: Destination,
    pub cpu: Option<usize>,
    /// What the study says on stderr (`--quiet`, `-v`).
    pub say: Say,
    pub helpers: Helpers,
    pub ring_events: bool,
    pub dir: PathBuf,
    /// The file named with `--filename`, laid out once and kept (None: a scratch file in `dir`
    /// per invocation).
    pub filename: Option<PathBuf>,
    pub size: u64,
    pub block_size: u64,
    pub cache: Cache,
    pub sequential: bool,
    /// Stop a run after this long (zero: no limit).
    pub runtime: Duration,
    pub seed: u64,
}

/// Engines named that cannot read here, each with the reason its rows give.
type Refused = Vec<(&'static EngineDef, String)>;

/// One measurement: an engine at a depth.
struct ReadCell {
    def: &'static EngineDef,
    depth: u32,
}

impl Cell for ReadCell {
    fn step(&self, run: u32, runs: u32) -> String {
        format!("{} depth {} round {run}/{runs}", self.def.name, self.depth)
    }

    fn engine(&self) -> String {
        self.def.name.to_string()
    }

    fn group(&self) -> String {
        format!("depth={}", self.depth)
    }

    fn failed(&self, run: u32) -> String {
        format!("{} at depth {} run {run} failed", self.def.name, self.depth)
    }
}

impl ReadStudy {
    fn blocks(&self) -> u64 {
        self.size / self.block_size
    }

    pub fn check(&self) -> anyhow::Result<()> {
        let min = Stamp::MIN_BLOCK as u64;
        anyhow::ensure!(
            self.block_size >= min && self.block_size <= 1 << 26,
            "--block-size must be from {min} bytes to 64M (got {})",
            self.block_size
        );
        anyhow::ensure!(
            self.blocks() >= 1 && self.blocks() <= u64::from(u32::MAX),
            "--size must hold from 1 to 2^32 blocks of --block-size ({} holds {})",
            format_size(self.size),
            self.blocks()
        );
        if self.cache == Cache::Direct {
            anyhow::ensure!(
                self.block_size.is_multiple_of(512),
                "--direct needs --block-size to be a multiple of 512 bytes (got {})",
                self.block_size
            );
        }
        anyhow::ensure!(!self.depths.is_empty(), "--depth needs at least one depth");
        Ok(())
    }

    /// The parameters every row carries; the depth is the cell's.
    fn params(&self, depth: u32) -> Map<String, Value> {
        let mut params = Map::new();
        params.put(Param::Size, format_size(self.size));
        params.put(Param::BlockSize, Value::from(format_size(self.block_size)));
        params.put(Param::Depth, depth);
        if let Some(threads) = self.threads {
            params.put(Param::Threads, threads);
        }
        let access = if self.sequential {
            "sequential"
        } else {
            "random"
        };
        params.put(Param::Access, access);
        params.put(Param::Cache, self.cache.name());
        params.put(Param::Direct, self.cache == Cache::Direct);
        params.put(Param::Seed, self.seed);
        params
    }

    /// The (engine, depth) cells, depth by depth, every engine that runs there; and the named
    /// engines that cannot, each with why.
    fn cells(&self) -> anyhow::Result<(Vec<ReadCell>, Refused)> {
        let (for_the_file, mut refused) = self.engines_for_the_file();
        let chosen = choose(for_the_file, self.engines_named, self.say)?;
        refused.extend(
            (chosen.unavailable.iter())
                .map(|(def, reason)| (*def, format!("unavailable here: {reason}"))),
        );
        let engines = chosen.runnable;
        let runs = |def: &EngineDef| engines.iter().any(|runnable| runnable.name == def.name);
        // In the order asked for: the refused among the runnable.
        let all: Vec<&'static EngineDef> = (self.engines.iter().copied())
            .filter(|def| runs(def) || refused.iter().any(|(named, _)| named.name == def.name))
            .collect();
        let mut cells = Vec::new();
        for &depth in &self.depths {
            for &def in &all {
                if depth == 1 || !ONE_AT_A_TIME.contains(&def.name) {
                    cells.push(ReadCell { def, depth });
                }
            }
        }
        if !self.depths.contains(&1) && !self.say.quiet {
            for name in engines.iter().map(|def| def.name) {
                if ONE_AT_A_TIME.contains(&name) {
                    eprintln!("ringside: skipping {name}: it reads at depth 1, not in --depth");
                }
            }
        }
        anyhow::ensure!(
            cells.iter().any(|cell| runs(cell.def)),
            "no engine reads at the depths asked for"
        );
        Ok((cells, refused))
    }

    /// The chosen engines that can read this study's file (libaio and IOPOLL only O_DIRECT),
    /// and those named that cannot, with why. An engine not named is skipped with a line.
    fn engines_for_the_file(&self) -> (Vec<&'static EngineDef>, Refused) {
        let direct = self.cache == Cache::Direct;
        let (kept, refused): (Vec<&'static EngineDef>, Vec<&'static EngineDef>) =
            self.engines.iter().partition(|engine| {
                // One that cannot run here at all is left to `choose`, which says why.
                direct
                    || engine.availability().is_err()
                    || !(engine.needs.setup.iopoll
                        || engine.needs.features.contains(&Feature::DirectFile))
            });
        let reason = "it reads asynchronously only from an O_DIRECT file; add --direct";
        for engine in refused
            .iter()
            .filter(|_| !self.say.quiet || self.engines_named)
        {
            if self.engines_named {
                eprintln!("ringside: {} cannot read this file: {reason}", engine.name);
            } else {
                eprintln!("ringside: skipping {}: {reason}", engine.name);
            }
        }
        let refused = match self.engines_named {
            true => (refused.into_iter())
                .map(|engine| (engine, format!("refused: {reason}")))
                .collect(),
            false => Vec::new(),
        };
        (kept, refused)
    }

    pub fn run(&self) -> anyhow::Result<ExitCode> {
        self.check()?;
        let (cells, refused) = self.cells()?;
        if let Some(cpu) = self.cpu {
            crate::system::pin::pin_current_thread(cpu)?;
        }
        // Raised by Ctrl-C from here on, not only once the runs start: a signal during the
        // layout (seconds for a large --size) would otherwise kill the process with its
        // scratch file; the layout stops at it and the study ends with nothing measured.
        crate::system::stop::stop_flag();
        let layout = Layout {
            blocks: self.blocks(),
            block_size: self.block_size as usize,
            seed: self.seed,
        };
        // A warm study checks every block of a kept file, which caches it as a layout would.
        let mut read_file = match &self.filename {
            Some(path) => ReadFile::named(path, layout, self.cache == Cache::Warm)?,
            None => ReadFile::scratch(&self.dir, layout)?,
        };
        let stamp = Stamp::new(self.seed);
        let mut file = self.open(&read_file)?;
        // The block the scratch file was laid out for: each block of rounds reads a file of its
        // own (a named file is the user's, laid out once and kept).
        let mut laid_for = 1;
        let mut order: Vec<u32> = (0..self.blocks() as u32).collect();
        let attribution = attribution_rounds(self.ring_events);
        let runtime = Some(self.runtime).filter(|runtime| !runtime.is_zero());
        let plan = Plan::rounds("fs read", &cells, self.rounds, runtime)
            .and_attribution(attribution, &cells);
        let progress = plan.progress(self.say);
        let params = |depth: u32, read_file: &ReadFile| {
            let mut params = self.params(depth);
            params.put(Param::Layout, read_file.layout_name());
            params
        };
        // Every file of the study is laid out alike: the first one names them all.
        let layout_name = read_file.layout_name();
        let failed_row = |cell: &ReadCell, run: u32, reason: &str| {
            let mut params = self.params(cell.depth);
            params.put(Param::Layout, layout_name);
            let measured = Default::default();
            let mut row = Row::measured(
                "fs-read",
                cell.def.name,
                params,
                run,
                &measured,
                Tally::default(),
            );
            row.fail(reason);
            row
        };
        let measure = |cell: &ReadCell, round: Round| -> anyhow::Result<Row> {
            let run = round.run;
            if let Some((_, reason)) = refused.iter().find(|(def, _)| def.name == cell.def.name) {
                return Ok(failed_row(cell, run, reason));
            }
            let scratch = matches!(read_file, ReadFile::Scratch(_));
            if round.block != laid_for && !round.attribution && scratch {
                // Laid out before the old file goes: its removal is untimed too.
                let started = std::time::Instant::now();
                let fresh = ReadFile::scratch(&self.dir, layout)?;
                let fresh_file = self.open(&fresh)?;
                let laid = started.elapsed();
                drop(std::mem::replace(&mut file, fresh_file));
                drop(std::mem::replace(&mut read_file, fresh));
                laid_for = round.block;
                let removed = started.elapsed() - laid;
                progress.line(super::refreshed_line(round.block, laid, removed));
            }
            if !self.sequential {
                fastrand::Rng::with_seed(self.seed ^ u64::from(run)).shuffle(&mut order);
            }
            if self.cache == Cache::Cold {
                advise(&file, rustix::fs::Advice::DontNeed)?;
            }
            let params = params(cell.depth, &read_file);
            let mut row = super::on_a_thread_of_its_own(|| {
                self.measure(cell, round, &file, &order, stamp, params)
            })?;
            super::mark_if_signalled(&mut row, self.size / self.block_size);
            progress.run_line(line(&row));
            Ok(row)
        };
        let outcome = run_rounds(
            self.rounds,
            attribution,
            "fs-read",
            &cells,
            &progress,
            measure,
            failed_row,
        );
        progress.finish();
        drop(file);
        let env_dir = read_file.dir();
        drop(read_file);
        finish(outcome, &env_dir, &self.destination, terminal_text)
    }

    /// Opens the study's file for its reads, advised for their order.
    fn open(&self, read_file: &ReadFile) -> anyhow::Result<File> {
        let file = read_file.open(self.cache == Cache::Direct)?;
        advise(&file, self.access_advice())?;
        Ok(file)
    }

    fn access_advice(&self) -> rustix::fs::Advice {
        if self.sequential {
            rustix::fs::Advice::Sequential
        } else {
            rustix::fs::Advice::Random
        }
    }

    fn measure(
        &self,
        cell: &ReadCell,
        round: Round,
        file: &File,
        order: &[u32],
        stamp: Stamp,
        params: Map<String, Value>,
    ) -> anyhow::Result<Row> {
        let Make::File(make) = cell.def.make else {
            unreachable!("the read study runs file engines");
        };
        let should_stop = stop_check(self.runtime);
        let job = ReadJob {
            file: file.as_fd(),
            blocks: order,
            block_size: self.block_size as usize,
            depth: cell.depth,
            threads: self.threads,
            stamp,
            advice: self.access_advice(),
            should_stop: &should_stop,
        };
        let mut meter = meter_for_run()
            .with_ring_events(round.attribution)
            .with_device(BlockDevice::of_file(file));
        let outcome = make(cell.def, &self.helpers).read(&job, &mut meter)?;
        let mut row = Row::measured(
            "fs-read",
            cell.def.name,
            params,
            round.run,
            &outcome.measured,
            outcome.tally,
        );
        row.params.extend(outcome.params.clone());
        row.notes.extend(outcome.notes.iter().cloned());
        if let Some(pool) = &outcome.pool {
            row.set_pool(pool);
        }
        if let Some(latency) = &outcome.latency_ns {
            row.set_latency(latency);
        }
        row.errors = outcome.mismatches;
        row.verified = outcome.tally.ops > 0;
        if outcome.mismatches > 0 {
            row.unverified_because(format!(
                "{} of {} blocks read failed their check (index and checksum)",
                outcome.mismatches, outcome.tally.ops
            ));
        }
        Ok(row)
    }
}

fn advise(file: &File, advice: rustix::fs::Advice) -> anyhow::Result<()> {
    rustix::fs::fadvise(file, 0, None, advice).map_err(|error| io_error("posix_fadvise", error))
}

/// `fs read threads depth 16: 65536 reads of 4096 in 812 ms (80.7k IOPS, 9.1 µs CPU a read)`.
fn line(row: &Row) -> String {
    let cpu_per_read = if row.ops > 0 {
        (row.cpu_user_s + row.cpu_sys_s) / row.ops as f64 * 1e6
    } else {
        0.0
    };
    format!(
        "fs read {} depth {}: {} reads in {:.0} ms ({:.1}k IOPS, {:.1} µs CPU a read, {} syscalls){}",
        row.engine,
        row.params.param(Param::Depth).unwrap_or(&Value::Null),
        row.ops,
        row.seconds * 1e3,
        row.ops_per_sec / 1e3,
        cpu_per_read,
        row.syscalls,
        if row.verified { "" } else { " NOT VERIFIED" }
    )
}
