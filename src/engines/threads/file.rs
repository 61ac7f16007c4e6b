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

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::RwLock;

use hdrhistogram::Histogram;
use rustix::fs::{Advice, Mode, OFlags};

use crate::engines::aligned::AlignedBuffer;
use crate::engines::blocking::file::{io_error, pread_exact, pwrite_all};
use crate::engines::file::{CycleJob, FileEngine, FileOutcome, ReadJob, WriteJob};
use crate::measure::{Meter, PoolThreads, Usage};
use crate::row::Tally;

/// Stack per pool thread: the loops need little, and 128 threads at the default 2 MiB would
/// reserve a quarter of a GiB of address space.
const THREAD_STACK_BYTES: usize = 128 * 1024;

pub struct ThreadPool;

/// What one pool thread works with, made before the clock starts: its own open file
/// description of the study's file, a buffer, and (reads, the page cycle) its latencies.
struct Worker {
    /// The file opened again for this thread. Threads sharing one description contend on it:
    /// in a process of several threads every `pread` takes and drops a reference on the shared
    /// `struct file` (one atomic cache line for all CPUs), which fio's jobs, processes that each
    /// open the file, never do.
    file: OwnedFd,
    buffer: AlignedBuffer,
    latency: Option<Histogram<u64>>,
}

/// What a pool is made of: its size, each thread's buffer, whether it records latencies, and
/// the access advice its file descriptions get (advice belongs to a description).
struct PoolPlan {
    threads: usize,
    buffer_bytes: usize,
    latency: bool,
    advice: Option<Advice>,
}

impl PoolPlan {
    fn worker(&self, file: BorrowedFd) -> anyhow::Result<Worker> {
        let own = reopen(file)?;
        if let Some(advice) = self.advice {
            rustix::fs::fadvise(&own, 0, None, advice)
                .map_err(|error| io_error("posix_fadvise", error))?;
        }
        Ok(Worker {
            file: own,
            buffer: AlignedBuffer::zeroed(self.buffer_bytes),
            latency: self.latency.then(crate::stats::histogram::new_latency),
        })
    }
}

/// `file` opened again through /proc/self/fd with the same access mode and O_DIRECT: the same
/// file, but an open file description of its own.
fn reopen(file: BorrowedFd) -> anyhow::Result<OwnedFd> {
    let flags = rustix::fs::fcntl_getfl(file).map_err(|error| io_error("fcntl", error))?;
    let kept = flags & (OFlags::ACCMODE | OFlags::DIRECT);
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::open(&path, kept | OFlags::CLOEXEC, Mode::empty()).map_err(|error| {
        anyhow::anyhow!(
            "cannot open the file again for a pool thread through {path} ({error}); the \
             threads engine needs /proc mounted"
        )
    })
}

/// What one pool thread did: its tally, read-backs that differed, latencies, and its usage.
struct WorkerResult {
    tally: Tally,
    mismatches: u64,
    latency: Option<Histogram<u64>>,
    usage: Usage,
}

/// Runs `work` on `plan.threads` threads from one start line, the calling thread being the
/// first, between `meter.start` and `meter.stop`; stops them all once `should_stop` says so or
/// one fails. Every thread's `Worker` is made before the clock starts; `work(worker, stop)`
/// takes items until the work runs out or `stop()` says to end, and returns its tally and
/// mismatches. With `fsync_end`, the file is synced once every thread is done, inside the
/// window.
fn run_pool(
    plan: &PoolPlan,
    file: BorrowedFd,
    meter: &mut Meter,
    should_stop: &dyn Fn() -> bool,
    fsync_end: bool,
    work: impl Fn(&mut Worker, &dyn Fn() -> bool) -> anyhow::Result<(Tally, u64)> + Sync,
) -> anyhow::Result<FileOutcome> {
    assert!(plan.threads >= 1, "a pool has at least one thread");
    // The start line: held while the threads are spawned and the meter starts.
    let start_line = RwLock::new(());
    let stop = AtomicBool::new(false);
    let (work, start_line, stop) = (&work, &start_line, &stop);
    let run_one = move |mut worker: Worker, own_stop: &dyn Fn() -> bool| {
        drop(
            start_line
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        let before = Usage::of_thread();
        let result = work(&mut worker, own_stop);
        let usage = Usage::of_thread().since(&before);
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result.map(|(tally, mismatches)| WorkerResult {
            tally,
            mismatches,
            latency: worker.latency.take(),
            usage,
        })
    };
    let mut workers = (0..plan.threads)
        .map(|_| plan.worker(file))
        .collect::<anyhow::Result<Vec<Worker>>>()?;
    let first = workers.remove(0);
    let (measured, results, synced) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let held = start_line
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut handles = Vec::with_capacity(plan.threads - 1);
        for worker in workers {
            let spawned = std::thread::Builder::new()
                .name("ringside-pool".into())
                .stack_size(THREAD_STACK_BYTES)
                .spawn_scoped(scope, move || {
                    run_one(worker, &|| stop.load(Ordering::Relaxed))
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
        let synced = if fsync_end {
            rustix::fs::fsync(file).map_err(|error| io_error("fsync", error))
        } else {
            Ok(())
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
        let (data, block_size) = (job.data, job.block_size);
        let plan = PoolPlan {
            threads: pool_size(job.depth, job.threads),
            buffer_bytes: 0,
            latency: false,
            advice: None,
        };
        // Blocks are taken in order and each taken block is written whole, so what was
        // written is the file's first `bytes` (what the study reads back).
        run_pool(
            &plan,
            job.file,
            meter,
            job.should_stop,
            job.fsync_end,
            |worker, stop| {
                let mut tally = Tally::default();
                while let Some(block) = blocks.take(stop) {
                    let start = block * block_size;
                    let end = (start + block_size).min(data.len());
                    let file = worker.file.as_fd();
                    tally.bytes +=
                        pwrite_all(file, &data[start..end], start as u64, &mut tally)? as u64;
                    tally.ops += 1;
                }
                Ok((tally, 0))
            },
        )
    }

    fn cycle(&mut self, job: &CycleJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let pages = Items::new(job.data.len().div_ceil(job.page_size));
        let (data, page_size, datasync) = (job.data, job.page_size, job.datasync);
        // Page-aligned buffers, so a read-back from an O_DIRECT file (--direct) is accepted.
        let plan = PoolPlan {
            threads: pool_size(job.depth, job.threads),
            buffer_bytes: page_size,
            latency: true,
            advice: None,
        };
        run_pool(
            &plan,
            job.file,
            meter,
            job.should_stop,
            false,
            |worker, stop| {
                let mut tally = Tally::default();
                let mut mismatches = 0;
                while let Some(page) = pages.take(stop) {
                    let started = std::time::Instant::now();
                    let start = page * page_size;
                    let expected = &data[start..(start + page_size).min(data.len())];
                    let buffer = &mut worker.buffer;
                    let file = worker.file.as_fd();
                    cycle_page(file, expected, start as u64, datasync, buffer, &mut tally)?;
                    if &buffer.as_slice()[..expected.len()] != expected {
                        mismatches += 1;
                    }
                    record(&mut worker.latency, started);
                    tally.ops += 1;
                    tally.bytes += expected.len() as u64;
                }
                Ok((tally, mismatches))
            },
        )
    }

    fn read(&mut self, job: &ReadJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let reads = Items::new(job.blocks.len());
        let (blocks, block_size, stamp) = (job.blocks, job.block_size, job.stamp);
        let plan = PoolPlan {
            threads: pool_size(job.depth, job.threads),
            buffer_bytes: block_size,
            latency: true,
            advice: Some(job.advice),
        };
        run_pool(
            &plan,
            job.file,
            meter,
            job.should_stop,
            false,
            |worker, stop| {
                let mut tally = Tally::default();
                let mut mismatches = 0;
                while let Some(read) = reads.take(stop) {
                    let started = std::time::Instant::now();
                    let block = blocks[read];
                    let offset = u64::from(block) * block_size as u64;
                    let buffer = worker.buffer.as_mut_slice();
                    pread_exact(worker.file.as_fd(), buffer, offset, &mut tally)?;
                    record(&mut worker.latency, started);
                    if !stamp.matches(worker.buffer.as_slice(), block) {
                        mismatches += 1;
                    }
                    tally.ops += 1;
                    tally.bytes += block_size as u64;
                }
                Ok((tally, mismatches))
            },
        )
    }
}

/// Records the time since `started` in a worker's latencies.
fn record(latency: &mut Option<Histogram<u64>>, started: std::time::Instant) {
    if let Some(latency) = latency {
        latency.saturating_record(started.elapsed().as_nanos() as u64);
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
