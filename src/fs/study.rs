//! What the two file studies share: checking the sizes, the scratch file and its random data,
//! laying the file out, and the run loop (engines alternating, the file truncated first when
//! `--fresh`, every run's blocks stamped with the run number, results written at the end).
//! `write.rs` and `cycle.rs` keep only their own flags and their own measurement.

use std::fs::File;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Map, Value};

use crate::cli::CommonArgs;
use crate::fs::blocking::io_error;
use crate::fs::scratch::{stamp_blocks, AlignedBuffer, Scratch};
use crate::fs::{runnable, select_engines, EngineDef, Workload};
use crate::progress::Progress;
use crate::row::Row;
use crate::units::format_size;

/// One file study's shape, from its flags.
pub struct FileStudy<'a> {
    pub workload: Workload,
    pub common: &'a CommonArgs,
    pub dir: &'a Path,
    pub size: u64,
    /// Bytes per operation (`--block-size` or `--page-size`, named by `block_flag`).
    pub block_size: u64,
    pub block_flag: &'static str,
    /// Operations in flight (io_uring engines).
    pub depth: u32,
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
    pub helpers: &'a crate::ring::Helpers,
    pub run: u32,
    pub file: &'a File,
    pub data: &'a AlignedBuffer,
    pub scratch: &'a Scratch,
}

impl FileStudy<'_> {
    /// The parameters every row of the study carries; the workload adds its own.
    pub fn params(&self) -> Map<String, Value> {
        let block_key = self.block_flag.trim_start_matches("--").replace('-', "_");
        let mut params = Map::new();
        params.insert("size".into(), Value::from(format_size(self.size)));
        params.insert(block_key, Value::from(format_size(self.block_size)));
        params.insert("depth".into(), Value::from(self.depth));
        params.insert(
            "file".into(),
            Value::from(if self.fresh { "fresh" } else { "overwrite" }),
        );
        params.insert("direct".into(), Value::from(self.direct));
        params.insert("seed".into(), Value::from(self.seed));
        params
    }

    pub fn check(&self) -> anyhow::Result<()> {
        let flag = self.block_flag;
        anyhow::ensure!(self.size > 0, "--size must be more than 0 bytes");
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
        let engines = runnable(
            select_engines(self.workload, &self.common.engine)?,
            self.common,
        )?;
        if let Some(cpu) = self.common.cpu {
            crate::pin::pin_current_thread(cpu)?;
        }
        let helpers = self.common.helpers.resolve(self.common.cpu)?;
        let scratch = Scratch::create(self.dir)?;
        let file = scratch.open(self.direct)?;
        let mut data = AlignedBuffer::random(self.size as usize, self.seed);
        if !self.fresh {
            lay_out(&file, data.as_slice(), self.block_size as usize)?;
            self.make_durable(&file)?;
        }
        let steps = u64::from(self.common.runs) * engines.len() as u64;
        let progress = Progress::new(steps, self.common.quiet);
        let named: Vec<(&'static EngineDef, &str)> = engines.iter().map(|e| (*e, e.name)).collect();
        let outcome = crate::study::run_alternating(self.common, &named, &progress, |def, run| {
            stamp_blocks(data.as_mut_slice(), self.block_size as usize, run);
            if self.fresh {
                file.set_len(0)
                    .map_err(|error| io_error("truncating the file", error))?;
                self.make_durable(&file)?;
            }
            let context = RunContext {
                def,
                helpers: &helpers,
                run,
                file: &file,
                data: &data,
                scratch: &scratch,
            };
            // Each run measures on a thread of its own. Its rings are the only ones that thread
            // ever makes (the kernel sizes a thread's io-wq pool from its first ring), and the
            // thread's exit tears its io-wq workers down before the next run starts, so no
            // engine inherits another's workers. The thread inherits the pin and the class.
            let row = std::thread::scope(|scope| {
                scope
                    .spawn(|| measure(&context))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })?;
            progress.line(line(&row));
            Ok(row)
        });
        progress.finish();
        drop(file);
        drop(scratch);
        crate::study::finish(self.common, self.dir, outcome)
    }

    fn make_durable(&self, file: &File) -> anyhow::Result<()> {
        if self.durable_setup {
            rustix::fs::fsync(file).map_err(|error| io_error("fsync", error))?;
        }
        Ok(())
    }
}

/// Writes the whole file once with plain writes, untimed: allocates its blocks and warms the
/// page cache, so overwrite runs measure the API, not block allocation or cold memory. It
/// writes in the runs' own block size (as fio lays out its files): on Linux 6.18 ext4 caches
/// large writes in large folios, and 4 KiB overwrites of those ran 2x slower here.
fn lay_out(file: &File, data: &[u8], block_size: usize) -> anyhow::Result<()> {
    use std::os::unix::fs::FileExt;
    for (index, chunk) in data.chunks(block_size).enumerate() {
        file.write_all_at(chunk, (index * block_size) as u64)
            .map_err(|error| io_error("laying out the file", error))?;
    }
    Ok(())
}
