//! The io_uring file engine. One event loop, no threads of its own; its features are options
//! (like fio's `io_uring` engine options), so each engine in the table is one rung of the
//! ladder: one SQE at a time, batches, a ring kept full, registered file and buffers, SQPOLL.
//! The submission style is the engine's own (`Submit`); its ring flags and whether it uses a
//! registered file and buffers come from what its table row needs.
//!
//! Buffered writes on ext4 are punted by the kernel to io-wq worker threads (`iou-wrk`); their
//! CPU time lands in the process's rusage, which is what the rows report, so the engine does not
//! look cheaper than it is.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use anyhow::Context;
use io_uring::{cqueue, opcode, squeue, types, IoUring, Submitter};
use serde_json::{Map, Value};

use super::registered::{Regions, PIN_RELEASE_WAIT};
use super::ring::{Helpers, RingSetup, SQPOLL_IDLE_MS};
use super::teardown::{HeldMemory, InFlight, KernelHeld};
use crate::engines::aligned::AlignedBuffer;
use crate::engines::blocking::file::io_error;
use crate::engines::file::{CycleJob, FileEngine, FileOutcome, ReadJob, WriteJob};
use crate::engines::needs::{Needs, Registration, SetupFlags, NOP};
use crate::engines::slots::Slots;
use crate::engines::workload::Workload;
use crate::measure::Meter;
use crate::row::params::{Param, Params};
use crate::row::Tally;
use crate::system::limits::PinLimit;
use crate::units::format_size;

/// How long an SQPOLL engine polls the completion queue before sleeping in io_uring_enter.
const SQPOLL_SPIN: Duration = Duration::from_micros(20);

/// How an io_uring file engine submits: the rungs of the feature ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// One SQE, submit and wait for it, every block (seed 003's first io_uring attempt).
    Single,
    /// Fill `depth` SQEs, submit, wait for all of them, repeat (seed 003's "N entries").
    Batch,
    /// Keep `depth` SQEs in flight; reap completions as they arrive (seed 003's "ring buffer").
    Ring,
}

pub struct Uring {
    pub(super) submit: Submit,
    /// Registered file (`types::Fixed`) and registered buffers (`WriteFixed`/`ReadFixed`).
    pub(super) fixed: bool,
    /// The ring's own fd registered, so io_uring_enter skips the fd lookup.
    pub(super) ring_fd: bool,
    pub(super) flags: SetupFlags,
    /// NOPs in place of reads: io_uring's own cost per operation (the `uring-nop` floor).
    pub(super) nops: bool,
    /// The kernel threads that work for its ring.
    helpers: Helpers,
}

impl Uring {
    /// The engine that submits as `submit` with what its table row `needs`, its ring's kernel
    /// threads set as `helpers` says.
    pub fn new(submit: Submit, needs: Needs, helpers: &Helpers) -> Uring {
        Uring {
            submit,
            fixed: needs.registrations.contains(&Registration::Files),
            ring_fd: needs.registrations.contains(&Registration::RingFd),
            flags: needs.setup,
            nops: needs.opcodes.contains(&NOP),
            helpers: helpers.clone(),
        }
    }

    /// Builds the measured ring for `file` (whose loop submits fsyncs when `fsyncs`) with its
    /// kernel helpers set, and what the row records of them.
    pub(super) fn build_ring(
        &self,
        entries: u32,
        file: BorrowedFd,
        fsyncs: bool,
    ) -> anyhow::Result<(IoUring, Map<String, Value>, Vec<String>)> {
        let helpers = &self.helpers;
        if self.flags.iopoll {
            check_polled(file, fsyncs)?;
        }
        let sqpoll = self.flags.sqpoll;
        let setup = RingSetup {
            helpers: Some(helpers.clone()),
            ..RingSetup::with_flags(entries.next_power_of_two(), self.flags)
        };
        let ring = setup.build().map_err(anyhow::Error::msg)?;
        let mut params = helpers.params(sqpoll);
        if sqpoll {
            params.put(Param::SqpollIdleMs, SQPOLL_IDLE_MS);
        }
        let notes = sqpoll
            .then(|| helpers.sqpoll_note())
            .flatten()
            .into_iter()
            .collect();
        Ok((ring, params, notes))
    }
}

/// Refuses, in one sentence, what an IOPOLL ring cannot do: it polls the device for
/// completions, which only direct I/O on a device with poll queues has, and it rejects every
/// request that cannot be polled (fsync completes with EINVAL, measured on 6.18).
fn check_polled(file: BorrowedFd, fsyncs: bool) -> anyhow::Result<()> {
    let direct = rustix::fs::fcntl_getfl(file)?.contains(rustix::fs::OFlags::DIRECT);
    anyhow::ensure!(
        direct,
        "IOPOLL completes only O_DIRECT I/O: run the IOPOLL engines with --direct"
    );
    anyhow::ensure!(
        !fsyncs,
        "an IOPOLL ring refuses fsync (EINVAL): run the IOPOLL engines without --fsync-end"
    );
    super::trial::file_device_polled(file).map_err(anyhow::Error::msg)
}

/// Bytes a fixed file engine registers for a file of `file_bytes`: a slot per operation in
/// flight (`depth` writes of `block_size`, no more than the file has blocks; or `depth` page
/// cycles, each a page written from a slot and read into a buffer of its own).
pub fn registered_bytes(
    workload: Workload,
    depth: u32,
    block_size: usize,
    file_bytes: usize,
) -> u64 {
    let depth = depth.max(1) as usize;
    match workload {
        Workload::FsCycle => (2 * depth * block_size) as u64,
        _ => (depth.min(file_bytes.div_ceil(block_size).max(1)) * block_size) as u64,
    }
}

/// The locked memory a fixed file engine's run is charged, which a study checks against the
/// limit before it runs: its registered buffers and, as Linux 6.18 charges them to a plain
/// user too, its ring's pages: the SQE array and the page(s) holding both queues' rings (64-byte
/// SQEs, 16-byte CQEs, twice as many CQEs, a 4-byte index per SQE, a header). Measured here: 512
/// KiB of slots on a 128-entry ring needed a limit of 528 KiB, as this says.
pub fn pinned_bytes(workload: Workload, depth: u32, block_size: usize, file_bytes: usize) -> u64 {
    const PAGE: u64 = 4096;
    const RINGS_HEADER: u64 = 256;
    let entries = match workload {
        Workload::FsCycle => depth.max(1) * CHAIN_LENGTH as u32,
        _ => depth.max(1),
    };
    let entries = u64::from(entries.next_power_of_two());
    let sqes = (entries * 64).div_ceil(PAGE) * PAGE;
    let rings = (RINGS_HEADER + entries * 2 * 16 + entries * 4).div_ceil(PAGE) * PAGE;
    registered_bytes(workload, depth, block_size, file_bytes) + sqes + rings
}

/// The file and buffers as the ring sees them: plain fd and pointers, or registered indexes.
/// A fixed engine registers only what is in flight, as fio registers iodepth × bs: one slot of
/// `slot_bytes` per operation in flight, each block copied into its slot as it is queued
/// (pinning the whole file would need as much locked memory as the file is large), and
/// whatever `extra` buffers its loop reads into.
pub(super) struct Target {
    fd: i32,
    fixed: bool,
    slots: AlignedBuffer,
    slot_bytes: usize,
    regions: Regions,
}

impl Target {
    /// The file and, for an engine with fixed resources, `slots` slots of `slot_bytes`; nothing
    /// registered yet.
    fn new(file: BorrowedFd, fixed: bool, (slots, slot_bytes): (usize, usize)) -> Target {
        Target {
            fd: file.as_raw_fd(),
            fixed,
            slots: AlignedBuffer::zeroed(if fixed { slots * slot_bytes } else { 0 }),
            slot_bytes,
            regions: Regions::default(),
        }
    }

    /// Registers the file, the slots and the `extra` buffers when the engine uses fixed
    /// resources.
    ///
    /// # Safety
    /// The kernel reads and writes the registered buffers whenever a fixed request of the ring
    /// names them: the target and `extra` must outlive every request of the ring (they are held
    /// beside it by `KernelHeld`, whose teardown reaps every request, then unregisters, before
    /// it frees them).
    unsafe fn register(
        &mut self,
        submitter: &Submitter<'_>,
        extra: &[&[u8]],
    ) -> anyhow::Result<()> {
        if !self.fixed {
            return Ok(());
        }
        submitter
            .register_files(&[self.fd])
            .context("cannot register the file")?;
        let mut buffers = vec![self.slots.as_slice()];
        buffers.extend_from_slice(extra);
        let bytes = buffers.iter().map(|b| b.len() as u64).sum::<u64>();
        // SAFETY: the slots and `extra` outlive the ring's requests (this function's contract).
        let register = || unsafe { Regions::register(submitter, &buffers) };
        let registered = match register() {
            Err(error) if error.raw_os_error() == Some(libc::ENOMEM) => {
                // The previous run's ring may still hold its charge for a moment.
                std::thread::sleep(PIN_RELEASE_WAIT);
                register()
            }
            other => other,
        };
        self.regions = registered.map_err(|error| {
            let limit = PinLimit::read()
                .and_then(|limit| limit.check(bytes, "this engine").err())
                .unwrap_or_else(|| "the kernel refused them".to_string());
            anyhow::anyhow!(
                "cannot register {} bytes of buffers ({error}): {limit}",
                format_size(bytes)
            )
        })?;
        Ok(())
    }

    fn unregister(&mut self, submitter: &Submitter<'_>) {
        if self.fixed {
            let _ = submitter.unregister_buffers();
            let _ = submitter.unregister_files();
        }
    }

    /// The write of `bytes` to `offset` from slot `slot` (a fixed engine copies them there).
    fn write(&mut self, slot: usize, bytes: &[u8], offset: u64) -> squeue::Entry {
        let len = bytes.len() as u32;
        if self.fixed {
            let buffer = &mut self.slots.as_mut_slice()[slot * self.slot_bytes..][..bytes.len()];
            buffer.copy_from_slice(bytes);
            let index = self.regions.index_of(buffer);
            opcode::WriteFixed::new(types::Fixed(0), buffer.as_ptr(), len, index)
                .offset(offset)
                .build()
        } else {
            opcode::Write::new(types::Fd(self.fd), bytes.as_ptr(), len)
                .offset(offset)
                .build()
        }
    }

    pub(super) fn read(&self, buf: &mut [u8], offset: u64) -> squeue::Entry {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len() as u32);
        if self.fixed {
            let index = self.regions.index_of(&*buf);
            opcode::ReadFixed::new(types::Fixed(0), ptr, len, index)
                .offset(offset)
                .build()
        } else {
            opcode::Read::new(types::Fd(self.fd), ptr, len)
                .offset(offset)
                .build()
        }
    }

    fn fsync(&self, datasync: bool) -> squeue::Entry {
        let flags = if datasync {
            types::FsyncFlags::DATASYNC
        } else {
            types::FsyncFlags::empty()
        };
        if self.fixed {
            opcode::Fsync::new(types::Fixed(0)).flags(flags).build()
        } else {
            opcode::Fsync::new(types::Fd(self.fd)).flags(flags).build()
        }
    }
}

/// What a run's requests read and write besides the caller's data: the target's slots, and the
/// buffers reads land in (`B`: none for writes, the page cycle's read-back pages, the read
/// study's slots), with the count of requests in flight. Held beside the ring (`KernelHeld`), so
/// none of it is freed while the kernel holds a request, however the run ends.
pub(super) struct FileMemory<B> {
    pub(super) target: Target,
    pub(super) buffers: B,
    pub(super) in_flight: InFlight,
}

/// Buffers a run's reads land in, registered with the slots when the engine uses fixed
/// buffers.
pub(super) trait ReadBuffers {
    fn memory(&self) -> &[u8];
}

impl ReadBuffers for () {
    fn memory(&self) -> &[u8] {
        &[]
    }
}

impl ReadBuffers for AlignedBuffer {
    fn memory(&self) -> &[u8] {
        self.as_slice()
    }
}

impl ReadBuffers for Slots {
    fn memory(&self) -> &[u8] {
        self.buffers()
    }
}

impl<B> HeldMemory for FileMemory<B> {
    fn in_flight(&mut self) -> &mut InFlight {
        &mut self.in_flight
    }

    /// None: file requests complete by themselves (a write or fsync already running in an io-wq
    /// worker cannot be cancelled anyway); on kernels without IORING_ASYNC_CANCEL_ANY the
    /// teardown waits for them.
    fn waiting(&self, _user_data: &mut Vec<u64>) {}

    fn unregister(&mut self, submitter: &Submitter<'_>) {
        self.target.unregister(submitter);
    }

    fn describe(&self) -> String {
        "the file engine's write slots and read buffers".to_string()
    }
}

impl Uring {
    /// The run's ring and the memory its requests use (`slots` write slots of the given size,
    /// and `buffers` for reads), held together for the teardown, registered when the engine
    /// uses fixed resources.
    pub(super) fn hold<B: ReadBuffers>(
        &self,
        ring: IoUring,
        file: BorrowedFd,
        slots: (usize, usize),
        buffers: B,
    ) -> anyhow::Result<KernelHeld<FileMemory<B>>> {
        let memory = FileMemory {
            target: Target::new(file, self.fixed, slots),
            buffers,
            in_flight: InFlight::default(),
        };
        let mut held = KernelHeld::new(ring, memory);
        let (ring, memory) = held.parts();
        // SAFETY: the target and the buffers are held beside the ring (`KernelHeld`).
        unsafe {
            memory
                .target
                .register(&ring.submitter(), &[memory.buffers.memory()])
        }?;
        Ok(held)
    }
}

/// The measured ring as its loop drives it: the submitter it enters the kernel with (the ring
/// fd registered when the row asks, so each io_uring_enter skips the fd lookup), and whether a
/// kernel thread polls the submission queue.
pub(super) struct Driver<'r> {
    ring: &'r IoUring,
    submitter: Submitter<'r>,
    sqpoll: bool,
    /// The requests pushed and not yet completed, which the teardown waits for.
    in_flight: &'r mut InFlight,
}

impl<'r> Driver<'r> {
    pub(super) fn new(
        ring: &'r IoUring,
        in_flight: &'r mut InFlight,
        register_ring_fd: bool,
        sqpoll: bool,
    ) -> anyhow::Result<Self> {
        let mut submitter = ring.submitter();
        if register_ring_fd {
            submitter
                .register_ring_fd()
                .context("cannot register the ring fd")?;
        }
        Ok(Driver {
            ring,
            submitter,
            sqpoll,
            in_flight,
        })
    }

    fn completions_ready(&self) -> usize {
        // SAFETY: one thread drives the ring, and no other queue handle is alive.
        unsafe { self.ring.completion_shared() }.len()
    }

    /// Takes one completion off the queue.
    pub(super) fn next_completion(&mut self) -> Option<cqueue::Entry> {
        // SAFETY: as in `completions_ready`.
        let cqe = unsafe { self.ring.completion_shared() }.next()?;
        self.in_flight.completed(cqe.flags());
        Some(cqe)
    }

    /// Submits what is queued and waits until `want` completions are ready. An SQPOLL engine
    /// first polls the completion queue for up to `SQPOLL_SPIN`: submitting costs it no
    /// syscall, so it sleeps in io_uring_enter only when the completions take longer.
    pub(super) fn wait(&self, want: usize, tally: &mut Tally) -> anyhow::Result<()> {
        if self.sqpoll {
            self.submit(tally)?;
            let until = Instant::now() + SQPOLL_SPIN;
            while self.completions_ready() < want && Instant::now() < until {
                std::hint::spin_loop();
            }
            if self.completions_ready() >= want {
                return Ok(());
            }
        }
        tally.syscalls_self += 1;
        super::ring::submit_and_wait(&self.submitter, want).context("io_uring_enter failed")?;
        Ok(())
    }

    /// Submits what is queued without waiting. An SQPOLL ring enters the kernel only to wake a
    /// sleeping poller (its thread submits), and counts that call alone.
    pub(super) fn submit(&self, tally: &mut Tally) -> anyhow::Result<()> {
        // SAFETY: as in `completions_ready`.
        if !self.sqpoll || unsafe { self.ring.submission_shared() }.need_wakeup() {
            tally.syscalls_self += 1;
        }
        self.submitter.submit().context("io_uring submit failed")?;
        Ok(())
    }

    /// Pushes SQEs with one tail update, so a linked chain reaches an SQPOLL thread whole. The
    /// rings are sized for every operation in flight, but an SQPOLL thread moves the queue head
    /// only after it submitted a batch, and inline completions of that batch can be seen
    /// earlier: then the queue is briefly full, and the engine waits for the poller to take
    /// entries.
    pub(super) fn push(
        &mut self,
        entries: &[squeue::Entry],
        tally: &mut Tally,
    ) -> anyhow::Result<()> {
        loop {
            // SAFETY: every buffer an entry points to is held beside the ring (`FileMemory`) or
            // is the caller's data, which outlives the run; the teardown reaps every request
            // before either goes, on every way out. One thread drives the ring.
            if unsafe { self.ring.submission_shared().push_multiple(entries) }.is_ok() {
                self.in_flight.pushed(entries.len());
                return Ok(());
            }
            tally.syscalls_self += 1;
            if self.sqpoll {
                self.submitter
                    .squeue_wait()
                    .context("io_uring_enter(SQ_WAIT) failed")?;
            } else {
                self.submitter.submit().context("io_uring submit failed")?;
            }
        }
    }
}

impl FileEngine for Uring {
    fn write(&mut self, job: &WriteJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let depth = match self.submit {
            Submit::Single => 1,
            Submit::Batch | Submit::Ring => job.depth.max(1),
        };
        let (ring, mut params, notes) = self.build_ring(depth, job.file, job.fsync_end)?;
        let blocks = job.data.len().div_ceil(job.block_size).max(1);
        let slots = (depth as usize).min(blocks);
        let mut held = self.hold(ring, job.file, (slots, job.block_size), ())?;
        let (
            ring,
            FileMemory {
                target, in_flight, ..
            },
        ) = held.parts();
        if self.fixed {
            let bytes = registered_bytes(Workload::FsWrite, depth, job.block_size, job.data.len());
            params.put(Param::RegisteredBytes, bytes);
        }
        let mut driver = Driver::new(ring, in_flight, self.ring_fd, self.flags.sqpoll)?;
        let block_end =
            |offset: usize| ((offset / job.block_size + 1) * job.block_size).min(job.data.len());
        let mut tally = Tally::default();
        let mut next = 0usize;
        // The span (offset, end) each busy slot writes; a completion names its slot.
        let mut spans = vec![(0usize, 0usize); slots];
        let mut free: Vec<usize> = (0..slots).rev().collect();
        meter.start();
        loop {
            while next < job.data.len() && !(job.should_stop)() {
                let Some(slot) = free.pop() else { break };
                let end = block_end(next);
                spans[slot] = (next, end);
                let write = target
                    .write(slot, &job.data[next..end], next as u64)
                    .user_data(slot as u64);
                driver.push(&[write], &mut tally)?;
                tally.ops += 1;
                next = end;
            }
            debug_assert!(free.len() <= slots, "a slot freed twice");
            let in_flight = slots - free.len();
            if in_flight == 0 {
                break;
            }
            // Batch waits for everything; the ring sleeps until three quarters of its queue
            // completed, then tops it up: the kernel never runs dry, and the submitter is not
            // woken (a context switch) per completion. Measured here at depth 128, 4 KiB:
            // waiting for 1/2 or 3/4 of the queue ran at the same speed, waiting for all of it
            // was slower, and 3/4 made a third fewer io_uring_enter calls than 1/2.
            let want = match self.submit {
                Submit::Batch => in_flight,
                Submit::Single | Submit::Ring => (in_flight * 3 / 4).max(1),
            };
            driver.wait(want, &mut tally)?;
            while let Some(cqe) = driver.next_completion() {
                let slot = cqe.user_data() as usize;
                debug_assert!(!free.contains(&slot), "a completion of a free slot");
                let (offset, end) = spans[slot];
                let written = completion_result(&cqe, "write")?;
                if offset + written < end {
                    // A short write: the same slot writes the rest of the block.
                    let rest = offset + written;
                    spans[slot] = (rest, end);
                    let write = target
                        .write(slot, &job.data[rest..end], rest as u64)
                        .user_data(slot as u64);
                    driver.push(&[write], &mut tally)?;
                } else {
                    free.push(slot);
                }
            }
        }
        if job.fsync_end {
            let fsync = target.fsync(false).user_data(u64::MAX);
            driver.push(&[fsync], &mut tally)?;
            driver.wait(1, &mut tally)?;
            let cqe = driver
                .next_completion()
                .expect("a completion after waiting for one");
            completion_result(&cqe, "fsync")?;
        }
        let measured = meter.stop();
        tally.bytes = next as u64;
        Ok(FileOutcome {
            params,
            notes,
            ..FileOutcome::new(measured, tally)
        })
    }

    // Kept whole (87 lines): the measured loop, from `meter.start` to `meter.stop`, reads in one
    // place, so what is timed and what each completion does to the chains are seen together.
    fn cycle(&mut self, job: &CycleJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let chains = job.depth.max(1) as usize;
        let (ring, mut params, notes) =
            self.build_ring((chains * CHAIN_LENGTH) as u32, job.file, true)?;
        let read_buffers = AlignedBuffer::zeroed(chains * job.page_size);
        let mut held = self.hold(ring, job.file, (chains, job.page_size), read_buffers)?;
        let (ring, memory) = held.parts();
        let FileMemory {
            target,
            buffers: read_buffers,
            in_flight,
        } = memory;
        if self.fixed {
            let bytes = registered_bytes(
                Workload::FsCycle,
                chains as u32,
                job.page_size,
                job.data.len(),
            );
            params.put(Param::RegisteredBytes, bytes);
        }
        let mut driver = Driver::new(ring, in_flight, self.ring_fd, self.flags.sqpoll)?;
        let pages = job.data.len().div_ceil(job.page_size);
        let mut slots: Vec<Option<usize>> = vec![None; chains];
        // When each slot's page was first submitted (a re-run after a broken link keeps it).
        let mut started = vec![Instant::now(); chains];
        let mut latency = crate::stats::histogram::new_latency();
        let mut tally = Tally::default();
        let mut mismatches = 0;
        let mut next_page = 0usize;
        let mut in_flight = 0usize;
        // Completions still to come: a chain's write and fsync may be reaped well before its
        // read, so this, not the chain count, bounds what a wait may ask for.
        let mut completions_due = 0usize;
        meter.start();
        loop {
            for (slot, page) in slots.iter_mut().enumerate() {
                if page.is_some() || next_page >= pages || (job.should_stop)() {
                    continue;
                }
                *page = Some(next_page);
                started[slot] = Instant::now();
                let buffer =
                    &mut read_buffers.as_mut_slice()[slot * job.page_size..][..job.page_size];
                let entries = chain(target, job, next_page, slot, buffer);
                driver.push(&entries, &mut tally)?;
                next_page += 1;
                in_flight += 1;
                completions_due += CHAIN_LENGTH;
            }
            if in_flight == 0 {
                break;
            }
            // One chain per slot, and every chain still owes at least its read's completion.
            debug_assert!(in_flight <= chains && in_flight <= completions_due);
            debug_assert!(completions_due <= chains * CHAIN_LENGTH);
            // Sleep until about half the completions due arrived, so wakeups stay rare and the
            // device always has fsyncs to merge.
            let want = (completions_due / 2).max(1);
            driver.wait(want, &mut tally)?;
            while let Some(cqe) = driver.next_completion() {
                completions_due -= 1;
                let (step, slot) = ChainStep::decode(cqe.user_data());
                let page = slots[slot].expect("a completion belongs to a busy slot");
                match chain_completion(&cqe, step, job, page)? {
                    ChainState::Running => continue,
                    ChainState::Broken => {
                        // A short write or read broke the link: run the whole page again.
                        if step == ChainStep::Read {
                            let buffer = &mut read_buffers.as_mut_slice()[slot * job.page_size..]
                                [..job.page_size];
                            let entries = chain(target, job, page, slot, buffer);
                            driver.push(&entries, &mut tally)?;
                            completions_due += CHAIN_LENGTH;
                        }
                    }
                    ChainState::Done => {
                        let (start, len) = page_span(job, page);
                        let read = &read_buffers.as_slice()[slot * job.page_size..][..len];
                        if read != &job.data[start..start + len] {
                            mismatches += 1;
                        }
                        latency.saturating_record(started[slot].elapsed().as_nanos() as u64);
                        tally.ops += 1;
                        tally.bytes += len as u64;
                        slots[slot] = None;
                        in_flight -= 1;
                    }
                }
            }
        }
        let measured = meter.stop();
        drop(held);
        Ok(FileOutcome {
            mismatches,
            latency_ns: Some(latency),
            params,
            notes,
            ..FileOutcome::new(measured, tally)
        })
    }

    fn read(&mut self, job: &ReadJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        self.read_blocks(job, meter)
    }
}

/// Write, fsync, read: three linked SQEs per page.
const CHAIN_LENGTH: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChainStep {
    Write = 0,
    Fsync = 1,
    Read = 2,
}

impl ChainStep {
    fn encode(self, slot: usize) -> u64 {
        ((slot as u64) << 2) | self as u64
    }

    fn decode(user_data: u64) -> (ChainStep, usize) {
        let step = match user_data & 3 {
            0 => ChainStep::Write,
            1 => ChainStep::Fsync,
            2 => ChainStep::Read,
            other => unreachable!("no chain step {other}"),
        };
        (step, (user_data >> 2) as usize)
    }
}

enum ChainState {
    Running,
    Broken,
    Done,
}

fn page_span(job: &CycleJob, page: usize) -> (usize, usize) {
    let start = page * job.page_size;
    (start, job.page_size.min(job.data.len() - start))
}

/// The linked write -> fsync -> read chain of one page. Push it with one `push` call: an SQPOLL
/// thread that saw only its first SQE would submit it alone, and the link would be broken.
fn chain(
    target: &mut Target,
    job: &CycleJob,
    page: usize,
    slot: usize,
    buffer: &mut [u8],
) -> [squeue::Entry; CHAIN_LENGTH] {
    let (start, len) = page_span(job, page);
    let offset = start as u64;
    let link = squeue::Flags::IO_LINK;
    [
        target
            .write(slot, &job.data[start..start + len], offset)
            .flags(link)
            .user_data(ChainStep::Write.encode(slot)),
        target
            .fsync(job.datasync)
            .flags(link)
            .user_data(ChainStep::Fsync.encode(slot)),
        target
            .read(&mut buffer[..len], offset)
            .user_data(ChainStep::Read.encode(slot)),
    ]
}

/// Judges one completion of a chain: a real error fails the run; a short transfer or a
/// cancellation caused by one breaks the chain, which is then queued again whole.
fn chain_completion(
    cqe: &cqueue::Entry,
    step: ChainStep,
    job: &CycleJob,
    page: usize,
) -> anyhow::Result<ChainState> {
    let (_, len) = page_span(job, page);
    let result = cqe.result();
    if result == -libc::ECANCELED {
        return Ok(ChainState::Broken);
    }
    let name = match step {
        ChainStep::Write => "write",
        ChainStep::Fsync => "fsync",
        ChainStep::Read => "read",
    };
    let transferred = completion_result(cqe, name)?;
    Ok(match step {
        ChainStep::Fsync => ChainState::Running,
        _ if transferred < len => ChainState::Broken,
        ChainStep::Write => ChainState::Running,
        ChainStep::Read => ChainState::Done,
    })
}

/// The byte count of a completion, or its error named like the syscall it stands for.
pub(super) fn completion_result(cqe: &cqueue::Entry, operation: &str) -> anyhow::Result<usize> {
    let result = cqe.result();
    if result < 0 {
        return Err(io_error(
            operation,
            rustix::io::Errno::from_raw_os_error(-result),
        ));
    }
    Ok(result as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_tokens_round_trip() {
        for slot in [0, 1, 127, 1 << 20] {
            for step in [ChainStep::Write, ChainStep::Fsync, ChainStep::Read] {
                assert_eq!(ChainStep::decode(step.encode(slot)), (step, slot));
            }
        }
    }
}
