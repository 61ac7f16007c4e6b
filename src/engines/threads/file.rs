//! The `threads` file engine: a fixed pool of `--depth` threads (or `--threads`), each making blocking
//! `pwrite`/`fsync`/`pread` calls on its share of the work, taken one block (or page) at a time
//! from a shared counter. This is the rival io_uring is weighed against in practice (libuv's
//! threadpool, tokio's `spawn_blocking`, PostgreSQL's `io_method=worker`), and the user-space
//! twin of io-wq: where io_uring punts buffered writes and fsyncs to its kernel workers, this
//! engine's own threads block in them. The page cycle's chains are spread over the pool, each
//! page still written, synced and read back in order by one thread, so up to `--depth` fsyncs
//! are in flight and can share a device flush as io_uring's linked chains do.
//!
//! The measuring thread is the pool's first thread (it alone can read the study's stop check);
//! the others start at a barrier after the meter, so spawning is not measured. Every thread
//! reports its own CPU time and context switches (getrusage of the thread), summed into the
//! row's `pool_*` fields.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::RwLock;

use hdrhistogram::Histogram;

use crate::engines::aligned::AlignedBuffer;
use crate::engines::blocking::file::{io_error, pread_exact, pwrite_all};
use crate::engines::file::{CycleJob, FileEngine, FileOutcome, ReadJob, WriteJob};
use crate::measure::{Meter, PoolThreads, Usage};
use crate::row::Tally;

/// Stack per pool thread: the loops need little, and 128 threads at the default 2 MiB would
/// reserve a quarter of a GiB of address space.
const THREAD_STACK_BYTES: usize = 128 * 1024;

pub struct ThreadPool;

/// What one pool thread did: its tally, read-backs that differed, latencies, and its usage.
struct WorkerResult {
    tally: Tally,
    mismatches: u64,
    latency: Option<Histogram<u64>>,
    usage: Usage,
}

/// Runs `work` on `threads` threads from one start line, the calling thread being the first,
/// between `meter.start` and `meter.stop`; stops them all once `should_stop` says so or one
/// fails. `prepare(thread)` makes each thread's state (its buffers) before the clock starts;
/// `work(state, stop)` takes items until the work runs out or `stop()` says to end. With
/// `fsync_end`, the file is synced once every thread is done, inside the window.
fn run_pool<S: Send>(
    threads: usize,
    meter: &mut Meter,
    should_stop: &dyn Fn() -> bool,
    fsync_end: Option<BorrowedFd>,
    prepare: impl Fn(usize) -> S,
    work: impl Fn(&mut S, &dyn Fn() -> bool) -> anyhow::Result<(Tally, u64, Option<Histogram<u64>>)>
        + Sync,
) -> anyhow::Result<FileOutcome> {
    assert!(threads >= 1, "a pool has at least one thread");
    // The start line: held while the threads are spawned and the meter starts.
    let start_line = RwLock::new(());
    let stop = AtomicBool::new(false);
    let (work, start_line, stop) = (&work, &start_line, &stop);
    let run_one = move |mut state: S, own_stop: &dyn Fn() -> bool| {
        drop(
            start_line
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        let before = Usage::of_thread();
        let result = work(&mut state, own_stop);
        let usage = Usage::of_thread().since(&before);
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result.map(|(tally, mismatches, latency)| WorkerResult {
            tally,
            mismatches,
            latency,
            usage,
        })
    };
    let mut states: Vec<S> = (0..threads).map(&prepare).collect();
    let first = states.remove(0);
    let (measured, results, synced) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let held = start_line
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut handles = Vec::with_capacity(threads - 1);
        for state in states {
            let spawned = std::thread::Builder::new()
                .name("ringside-pool".into())
                .stack_size(THREAD_STACK_BYTES)
                .spawn_scoped(scope, move || {
                    run_one(state, &|| stop.load(Ordering::Relaxed))
                });
            if let Err(error) = spawned.map(|handle| handles.push(handle)) {
                // The threads already started find the stop set and end at once.
                stop.store(true, Ordering::Relaxed);
                drop(held);
                anyhow::bail!("cannot start the pool's threads ({error}); use a smaller --depth");
            }
        }
        meter.start();
        drop(held);
        let first_result = run_one(first, &|| {
            if !stop.load(Ordering::Relaxed) && should_stop() {
                stop.store(true, Ordering::Relaxed);
            }
            stop.load(Ordering::Relaxed)
        });
        let mut results = vec![first_result];
        for handle in handles {
            results.push(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        let synced = match fsync_end {
            Some(file) => rustix::fs::fsync(file).map_err(|error| io_error("fsync", error)),
            None => Ok(()),
        };
        Ok((meter.stop(), results, synced))
    })?;
    synced?;
    let mut tally = Tally::default();
    let mut mismatches = 0;
    let mut latency: Option<Histogram<u64>> = None;
    let mut pool = PoolThreads::default();
    for result in results {
        let result = result?;
        tally.ops += result.tally.ops;
        tally.bytes += result.tally.bytes;
        tally.syscalls_self += result.tally.syscalls_self;
        mismatches += result.mismatches;
        if let Some(thread_latency) = result.latency {
            match latency.as_mut() {
                Some(all) => all
                    .add(&thread_latency)
                    .map_err(|error| anyhow::anyhow!("merging latencies: {error}"))?,
                None => latency = Some(thread_latency),
            }
        }
        pool.threads += 1;
        pool.cpu_s += result.usage.cpu_user_s + result.usage.cpu_sys_s;
        pool.ctx_switches +=
            result.usage.ctx_switches_voluntary + result.usage.ctx_switches_involuntary;
    }
    Ok(FileOutcome {
        mismatches,
        latency_ns: latency,
        pool: Some(pool),
        ..FileOutcome::new(measured, tally)
    })
}

/// Hands out items 0..count, each once, to whichever thread asks next.
struct Items {
    next: AtomicUsize,
    count: usize,
}

impl Items {
    fn new(count: usize) -> Items {
        Items {
            next: AtomicUsize::new(0),
            count,
        }
    }

    /// The next item, unless all are taken or `stop()` says to end.
    fn take(&self, stop: &dyn Fn() -> bool) -> Option<usize> {
        if stop() {
            return None;
        }
        let item = self.next.fetch_add(1, Ordering::Relaxed);
        (item < self.count).then_some(item)
    }
}

/// `--threads`, else one thread per operation in flight (`--depth`).
fn pool_size(depth: u32, threads: Option<u32>) -> usize {
    threads.unwrap_or(depth).max(1) as usize
}

impl FileEngine for ThreadPool {
    fn write(&mut self, job: &WriteJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let blocks = Items::new(job.data.len().div_ceil(job.block_size));
        // The pool's threads share these, not the job (its stop check is the measuring
        // thread's alone).
        let (file, data, block_size) = (job.file, job.data, job.block_size);
        // Blocks are taken in order and each taken block is written whole, so what was
        // written is the file's first `bytes` (what the study reads back).
        run_pool(
            pool_size(job.depth, job.threads),
            meter,
            job.should_stop,
            job.fsync_end.then_some(file),
            |_| (),
            |_, stop| {
                let mut tally = Tally::default();
                while let Some(block) = blocks.take(stop) {
                    let start = block * block_size;
                    let end = (start + block_size).min(data.len());
                    tally.bytes +=
                        pwrite_all(file, &data[start..end], start as u64, &mut tally)? as u64;
                    tally.ops += 1;
                }
                Ok((tally, 0, None))
            },
        )
    }

    fn cycle(&mut self, job: &CycleJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let pages = Items::new(job.data.len().div_ceil(job.page_size));
        let (file, data, page_size, datasync) = (job.file, job.data, job.page_size, job.datasync);
        run_pool(
            pool_size(job.depth, job.threads),
            meter,
            job.should_stop,
            None,
            // Page-aligned, so a read-back from an O_DIRECT file (--direct) is accepted.
            |_| AlignedBuffer::zeroed(page_size),
            |buffer, stop| {
                let mut tally = Tally::default();
                let mut mismatches = 0;
                let mut latency = crate::stats::histogram::new_latency();
                while let Some(page) = pages.take(stop) {
                    let started = std::time::Instant::now();
                    let start = page * page_size;
                    let expected = &data[start..(start + page_size).min(data.len())];
                    cycle_page(file, expected, start as u64, datasync, buffer, &mut tally)?;
                    if &buffer.as_slice()[..expected.len()] != expected {
                        mismatches += 1;
                    }
                    latency.saturating_record(started.elapsed().as_nanos() as u64);
                    tally.ops += 1;
                    tally.bytes += expected.len() as u64;
                }
                Ok((tally, mismatches, Some(latency)))
            },
        )
    }

    fn read(&mut self, job: &ReadJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let reads = Items::new(job.blocks.len());
        let (file, blocks, block_size, stamp) = (job.file, job.blocks, job.block_size, job.stamp);
        run_pool(
            pool_size(job.depth, job.threads),
            meter,
            job.should_stop,
            None,
            |_| AlignedBuffer::zeroed(block_size),
            |buffer, stop| {
                let mut tally = Tally::default();
                let mut mismatches = 0;
                let mut latency = crate::stats::histogram::new_latency();
                while let Some(read) = reads.take(stop) {
                    let started = std::time::Instant::now();
                    let block = blocks[read];
                    let offset = u64::from(block) * block_size as u64;
                    pread_exact(file, buffer.as_mut_slice(), offset, &mut tally)?;
                    latency.saturating_record(started.elapsed().as_nanos() as u64);
                    if !stamp.matches(buffer.as_slice(), block) {
                        mismatches += 1;
                    }
                    tally.ops += 1;
                    tally.bytes += block_size as u64;
                }
                Ok((tally, mismatches, Some(latency)))
            },
        )
    }
}

/// One page of the cycle: write it, sync the file, read it back into `buffer`.
fn cycle_page(
    file: BorrowedFd,
    expected: &[u8],
    offset: u64,
    datasync: bool,
    buffer: &mut AlignedBuffer,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    pwrite_all(file, expected, offset, tally)?;
    let synced = if datasync {
        rustix::fs::fdatasync(file)
    } else {
        rustix::fs::fsync(file)
    };
    synced.map_err(|error| io_error("fsync", error))?;
    tally.syscalls_self += 1;
    pread_exact(
        file,
        &mut buffer.as_mut_slice()[..expected.len()],
        offset,
        tally,
    )
}
