//! The file studies, `fs write`, `fs cycle` and `fs read` (`read.rs`, its own cells: engines
//! at depths, over a file laid out once). This file is what they share: checking the
//! sizes, the scratch file and its random data, laying the file out, and the run loop on the
//! studies' runner (engines alternating, the file truncated first when `--fresh`, every run's
//! blocks stamped with the run number, each run on a thread of its own, results written at the
//! end). `write.rs` and `cycle.rs` keep only their own options and their own measurement.

pub mod cycle;
pub mod read;
pub mod read_file;
pub mod scratch;
pub mod write;

use std::fs::File;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Map, Value};

use super::{
    attribution_rounds, choose, finish, run_rounds, Cell, Destination, Plan, Round, Rounds,
};
use crate::engines::aligned::AlignedBuffer;
use crate::engines::blocking::file::io_error;
use crate::engines::file::{FileEngine, FileOutcome};
use crate::engines::needs::Registration;
use crate::engines::uring::file::pinned_bytes;
use crate::engines::uring::ring::Helpers;
use crate::engines::{EngineDef, Make, Workload};
use crate::measure::{meter_for_run, BlockDevice, Meter};
use crate::output::progress::Say;
use crate::report::terminal_text;
use crate::row::params::{Param, Params};
use crate::row::{Row, Tally, PARTIAL_NOTE};
use crate::system::limits::{memory_bytes_available, PinLimit};
use crate::units::format_size;
use scratch::{stamp_blocks, Scratch};

/// One file study, as its flags asked for it.
pub struct FileStudy {
    pub workload: Workload,
    /// The engines named (or the workload's defaults), before the availability check.
    pub engines: Vec<&'static EngineDef>,
    /// Whether `--engine` named them: a named engine that cannot run here gets failure rows.
    pub engines_named: bool,
    pub rounds: Rounds,
    pub destination: Destination,
    /// Pin the measuring thread to this CPU.
    pub cpu: Option<usize>,
    /// What the study says on stderr (`--quiet`, `-v`).
    pub say: Say,
    /// The longest a run may take (`fs write --runtime`): its planned time.
    pub run_cap: Option<std::time::Duration>,
    /// The kernel threads the io_uring engines set up (the same for every engine and run).
    pub helpers: Helpers,
    /// Count io_uring's tracepoints in each run (`--ring-events`).
    pub ring_events: bool,
    pub dir: PathBuf,
    pub size: u64,
    /// Bytes per operation (`--block-size` or `--page-size`, named by `block_flag`).
    pub block_size: u64,
    pub block_flag: &'static str,
    /// Operations in flight (io_uring engines).
    pub depth: u32,
    /// The `threads` engine's pool size (None: `depth`).
    pub threads: Option<u32>,
    pub direct: bool,
    pub fresh: bool,
    pub seed: u64,
    /// fsync after laying out and after truncating, so a study of fsyncs starts from a file
    /// that is clean on disk.
    pub durable_setup: bool,
}

/// What a study's measurement gets for one run.
pub struct RunContext<'a> {
    pub def: &'static EngineDef,
    /// The kernel threads the io_uring engines set up (the same for every engine and run).
    pub helpers: &'a Helpers,
    /// Count io_uring's tracepoints over the run (`--ring-events`).
    pub ring_events: bool,
    pub run: u32,
    pub file: &'a File,
    pub data: &'a AlignedBuffer,
    pub scratch: &'a Scratch,
}

impl RunContext<'_> {
    /// The run's engine, made from its row, and a meter that also reads the device under the
    /// file.
    pub fn engine_and_meter(&self) -> (Box<dyn FileEngine>, Meter) {
        let Make::File(make) = self.def.make else {
            unreachable!("the file studies run file engines");
        };
        let meter = meter_for_run()
            .with_ring_events(self.ring_events)
            .with_device(BlockDevice::of_file(self.file));
        (make(self.def, self.helpers), meter)
    }

    /// The run's row: the study's parameters and the workload's own (`extra`), what the engine
    /// measured, and what it set up for itself.
    pub fn row(&self, study: &FileStudy, extra: (Param, Value), outcome: &FileOutcome) -> Row {
        let mut params = study.params();
        params.put(extra.0, extra.1);
        let workload = study.workload.name();
        let mut row = Row::measured(
            workload,
            self.def.name,
            params,
            self.run,
            &outcome.measured,
            outcome.tally,
        );
        row.params.extend(outcome.params.clone());
        row.notes.extend(outcome.notes.iter().cloned());
        if let Some(pool) = &outcome.pool {
            row.set_pool(pool);
        }
        row
    }
}

impl Cell for &'static EngineDef {
    fn step(&self, run: u32, runs: u32) -> String {
        format!("{} round {run}/{runs}", self.name)
    }

    fn engine(&self) -> String {
        self.name.to_string()
    }

    fn group(&self) -> String {
        String::new()
    }

    fn failed(&self, run: u32) -> String {
        format!("{} run {run} failed", self.name)
    }
}

impl FileStudy {
    /// The parameters every row of the study carries; the workload adds its own.
    pub fn params(&self) -> Map<String, Value> {
        let block_key = self.block_flag.trim_start_matches("--").replace('-', "_");
        let mut params = Map::new();
        params.put(Param::Size, format_size(self.size));
        params.insert(block_key, Value::from(format_size(self.block_size)));
        params.put(Param::Depth, self.depth);
        if let Some(threads) = self.threads {
            params.put(Param::Threads, threads);
        }
        params.put(
            Param::File,
            Value::from(if self.fresh { "fresh" } else { "overwrite" }),
        );
        params.put(Param::Direct, self.direct);
        params.put(Param::Seed, self.seed);
        params
    }

    pub fn check(&self) -> anyhow::Result<()> {
        let flag = self.block_flag;
        anyhow::ensure!(self.size > 0, "--size must be more than 0 bytes");
        // The data is generated once, in memory, before the first run.
        if let Some(available) = memory_bytes_available() {
            anyhow::ensure!(
                self.size <= available,
                "--size {} needs that much memory for its data, but only {} is available here; \
                 choose a smaller --size",
                format_size(self.size),
                format_size(available - available % (1 << 20))
            );
        }
        anyhow::ensure!(self.block_size > 0, "{flag} must be more than 0 bytes");
        anyhow::ensure!(
            self.block_size <= 1 << 30,
            "{flag} {} is larger than the 1G a single operation can take",
            format_size(self.block_size)
        );
        if self.direct {
            anyhow::ensure!(
                self.block_size.is_multiple_of(512) && self.size.is_multiple_of(512),
                "--direct needs {flag} and --size to be multiples of 512 bytes (got {} and {})",
                self.block_size,
                self.size
            );
        }
        Ok(())
    }

    /// Runs `measure` for every run and engine, prints `line(row)` for each, and writes the
    /// results; the scratch file is removed before the results are written.
    pub fn run(
        &self,
        measure: impl Fn(&RunContext) -> anyhow::Result<Row> + Sync,
        line: impl Fn(&Row) -> String,
    ) -> anyhow::Result<ExitCode> {
        self.check()?;
        let chosen = choose(self.engines_for_the_file(), self.engines_named, self.say)?;
        let engines = chosen.cells();
        if let Some(cpu) = self.cpu {
            crate::system::pin::pin_current_thread(cpu)?;
        }
        // Raised by Ctrl-C from here on, not only once the runs start: a signal while the data
        // is made and laid out would otherwise kill the process with its scratch file; the
        // layout stops at it and the study ends with nothing measured.
        crate::system::stop::stop_flag();
        let mut data = AlignedBuffer::random_until(
            self.size as usize,
            self.seed,
            crate::system::stop::stopped,
        );
        let (mut scratch, mut file) = self.laid_out(&data)?;
        // The block the file was laid out for: each block of rounds gets a file of its own.
        let mut laid_for = 1;
        let study = self.workload.name().replacen('-', " ", 1);
        let attribution = attribution_rounds(self.ring_events);
        let plan = Plan::rounds(&study, &engines, self.rounds, self.run_cap)
            .and_attribution(attribution, &engines);
        let progress = plan.progress(self.say);
        let failed_row = |def: &&'static EngineDef, run: u32, reason: &str| {
            let params = self.params();
            let workload = self.workload.name();
            let mut row = Row::measured(
                workload,
                def.name,
                params,
                run,
                &Default::default(),
                Tally::default(),
            );
            row.fail(reason);
            row
        };
        let measure = |&def: &&'static EngineDef, round: Round| -> anyhow::Result<Row> {
            let run = round.run;
            if let Some(reason) = chosen.unavailable(def) {
                return Ok(failed_row(&def, run, &reason));
            }
            // A new block's first run lays out a new file, untimed, then removes the old one:
            // the removal's discards reach the device before any run is timed on the new one.
            if round.block != laid_for && !round.attribution && !self.fresh {
                let started = std::time::Instant::now();
                let (new_scratch, new_file) = self.laid_out(&data)?;
                let laid = started.elapsed();
                // Closed before its directory goes, so the file is freed at the removal.
                drop(std::mem::replace(&mut file, new_file));
                drop(std::mem::replace(&mut scratch, new_scratch));
                laid_for = round.block;
                progress.line(refreshed_line(round.block, laid, started.elapsed() - laid));
            }
            stamp_blocks(data.as_mut_slice(), self.block_size as usize, run);
            if self.fresh {
                file.set_len(0)
                    .map_err(|error| io_error("truncating the file", error))?;
                self.make_durable(&file)?;
            }
            let context = RunContext {
                def,
                helpers: &self.helpers,
                ring_events: round.attribution,
                run,
                file: &file,
                data: &data,
                scratch: &scratch,
            };
            let mut row = on_a_thread_of_its_own(|| measure(&context))?;
            mark_if_signalled(&mut row, self.size / self.block_size);
            progress.run_line(line(&row));
            Ok(row)
        };
        let workload = self.workload.name();
        let outcome = run_rounds(
            self.rounds,
            attribution,
            workload,
            &engines,
            &progress,
            measure,
            failed_row,
        );
        progress.finish();
        drop(file);
        drop(scratch);
        finish(outcome, &self.dir, &self.destination, terminal_text)
    }

    /// The chosen engines that can drive this study's file: an IOPOLL ring completes only
    /// O_DIRECT I/O, so without --direct its rungs are skipped (where they can run at all); an engine whose registered
    /// buffers (a slot per operation in flight) would pass the locked-memory limit is skipped
    /// with both numbers. Each says so (unless quiet).
    fn engines_for_the_file(&self) -> Vec<&'static EngineDef> {
        let (block, size) = (self.block_size as usize, self.size as usize);
        let pinned = pinned_bytes(self.workload, self.depth, block, size);
        let pin_limit = PinLimit::read();
        let mut kept = Vec::new();
        for &engine in &self.engines {
            // An engine that cannot run here at all is left to `choose`, which says why: advice
            // such as --direct would lead nowhere.
            let refused = if engine.availability().is_err() {
                Ok(())
            } else if !self.direct && engine.needs.setup.iopoll {
                Err("IOPOLL completes only O_DIRECT I/O; add --direct".to_string())
            } else if engine.needs.registrations.contains(&Registration::Buffers) {
                let what = format!(
                    "{} (depth {} × {} {})",
                    engine.name,
                    self.depth,
                    format_size(self.block_size),
                    self.block_flag
                );
                pin_limit.map_or(Ok(()), |limit| limit.check(pinned, &what))
            } else {
                Ok(())
            };
            match refused {
                Ok(()) => kept.push(engine),
                Err(reason) if !self.say.quiet => {
                    eprintln!("ringside: skipping {}: {reason}", engine.name)
                }
                Err(_) => {}
            }
        }
        kept
    }

    /// A new scratch directory with the study's file, laid out with `data` (unless each run
    /// starts from an empty file, `--fresh`) and made durable where the study asks.
    fn laid_out(&self, data: &AlignedBuffer) -> anyhow::Result<(Scratch, File)> {
        let scratch = Scratch::create(&self.dir)?;
        let file = scratch.open(self.direct)?;
        if !self.fresh {
            lay_out(&file, data.as_slice(), self.block_size as usize)?;
            // A stopped layout is removed unread: syncing what it wrote would hold Ctrl-C off
            // for as long as the disk takes to write it.
            if !crate::system::stop::stopped() {
                self.make_durable(&file)?;
            }
        }
        Ok((scratch, file))
    }

    fn make_durable(&self, file: &File) -> anyhow::Result<()> {
        if self.durable_setup {
            rustix::fs::fsync(file).map_err(|error| io_error("fsync", error))?;
        }
        Ok(())
    }
}

/// What the progress says when a block's file was laid out afresh (and the old one removed).
pub(super) fn refreshed_line(
    block: u32,
    laid: std::time::Duration,
    removed: std::time::Duration,
) -> String {
    format!(
        "ringside: block {block}: a fresh file laid out in {} ms, the old one removed in {} ms \
         (untimed)",
        laid.as_millis(),
        removed.as_millis()
    )
}

/// Marks the row of a run a signal ended before its `planned` operations: the run's stop check
/// ended it early, so its figures cover the operations it did (the study ends after it).
pub(super) fn mark_if_signalled(row: &mut Row, planned: u64) {
    if crate::system::stop::stopped() && row.failure.is_none() && row.ops < planned {
        row.notes.push(format!(
            "{PARTIAL_NOTE} a signal (Ctrl-C or SIGTERM) ended this run after {} of its {planned} \
             operations; its figures cover those",
            row.ops
        ));
    }
}

/// A run's stop check: Ctrl-C, or `runtime` passed (zero: no limit).
pub fn stop_check(runtime: std::time::Duration) -> impl Fn() -> bool {
    use std::time::Instant;
    let limit = Some(runtime).filter(|limit| !limit.is_zero());
    let deadline = limit.map(|limit| (Instant::now() + limit, std::cell::Cell::new(0u32)));
    // Once passed, the deadline stays passed: a loop that asks again (an engine draining its
    // reads in flight, then filling its free slots) must not be told to go on.
    let passed = std::cell::Cell::new(false);
    move || {
        if crate::system::stop::stopped() || passed.get() {
            return true;
        }
        // Reading the clock every operation would cost more than a small one; look every 64.
        let now_passed = deadline.as_ref().is_some_and(|(until, calls)| {
            calls.set(calls.get().wrapping_add(1));
            calls.get() % 64 == 0 && Instant::now() >= *until
        });
        passed.set(now_passed);
        now_passed
    }
}

/// Writes the whole file once with plain writes, untimed: allocates its blocks and warms the
/// page cache, so overwrite runs measure the API, not block allocation or cold memory. It
/// writes in the runs' own block size (as fio lays out its files): on Linux 6.18 ext4 caches
/// large writes in large folios, and 4 KiB overwrites of those ran 2x slower here.
fn lay_out(file: &File, data: &[u8], block_size: usize) -> anyhow::Result<()> {
    use std::os::unix::fs::FileExt;
    for (index, chunk) in data.chunks(block_size).enumerate() {
        if crate::system::stop::stopped() {
            return Ok(()); // A stopped study runs nothing: the scratch goes unread, removed.
        }
        file.write_all_at(chunk, (index * block_size) as u64)
            .map_err(|error| io_error("laying out the file", error))?;
    }
    Ok(())
}

/// Runs one measured run on a thread of its own, and returns once that thread's io-wq workers
/// are gone. Its rings are the only ones the thread ever makes (the kernel sizes a thread's
/// io-wq pool from its first ring), and its workers wind down after the thread has exited:
/// waiting for them keeps the next run from counting another engine's workers (they ran during
/// its section with a random order of runs). The thread inherits the pin and the class.
pub fn on_a_thread_of_its_own<T: Send>(run: impl FnOnce() -> T + Send) -> T {
    let (value, tid) = std::thread::scope(|scope| {
        scope
            .spawn(|| (run(), rustix::thread::gettid()))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    let workers = format!("iou-wrk-{}", tid.as_raw_nonzero());
    let deadline = std::time::Instant::now() + WORKERS_GONE_WAIT_MAX;
    while crate::measure::threads_named(&workers) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    value
}

/// How long a run waits for the io-wq workers of the one before it to exit (they take
/// milliseconds; a kernel that keeps them longer costs this much per run, not a wrong count).
const WORKERS_GONE_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::stop_check;

    #[test]
    fn a_passed_runtime_stays_passed() {
        let should_stop = stop_check(std::time::Duration::from_nanos(1));
        std::thread::sleep(std::time::Duration::from_millis(1));
        let first = (1..=64)
            .find(|_| should_stop())
            .expect("stops within 64 asks");
        assert_eq!(first, 64, "the clock is read every 64th ask");
        assert!((0..200).all(|_| should_stop()), "and stays stopped");
        assert!(!stop_check(std::time::Duration::ZERO)(), "zero: no limit");
    }
}
