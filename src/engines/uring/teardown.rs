//! Tearing an io_uring engine down in the order the kernel needs, on every exit.
//!
//! A request holds its own reference to its file, so closing an fd cancels nothing; dropping a
//! ring cancels its requests only asynchronously, after the fd is closed. Until a request's last
//! completion has been reaped the kernel may still write into its buffer (a receive's bytes, a
//! read's page) or read from it (a send, a write). So every io_uring engine keeps its ring and
//! the memory its requests use in one `KernelHeld`, and its teardown, run when that is dropped
//! (the loop ended, an error returned early, a panic unwound), goes:
//!
//! 1. cancel every request that would wait forever otherwise (`HeldMemory::waiting`: a
//!    receive, a poll, an accept, a timeout), each by its user data, a batch of at most half
//!    the completion queue at a time, the next batch once the last is answered;
//! 2. then sweep what is left with one IORING_ASYNC_CANCEL_ANY (Linux 5.19; where the kernel
//!    refuses it, 5.10-5.18, the waiting requests by user data again), every `CANCEL_AGAIN`
//!    while requests are out, never while a cancel is still unanswered;
//! 3. reap until no request is outstanding (`InFlight`: one per SQE pushed, until a completion
//!    without IORING_CQE_F_MORE; a zero-copy send's ends with its notification), while they
//!    keep completing: at most `DRAIN_STALL_MAX` without one, `DRAIN_TIME_MAX` in all;
//! 4. only then unregister (buffers, buffer rings, files), free the memory, and drop the ring.
//!
//! Why by user data first, and why the completions are collected as they are. A cancel by user
//! data finds its request in the ring's hash of cancellable requests; CANCEL_ANY walks that
//! whole table from the start for each request it cancels, and a request cancelled stays in
//! the table until its completion work has run. So one CANCEL_ANY of 10,000 armed requests
//! (5,000 idle connections, a multishot receive and a hang-up poll each) held the submitting
//! `io_uring_enter` for 1.0-1.4 s (strace, Linux 6.18), and each one sent again while the
//! first's completions were still queued walked them all again. The rings whose completion work
//! does not run on return from that enter then never caught up:
//!
//! - DEFER_TASKRUN (6.1): completion work, the cancelled requests' included, runs only in an
//!   `io_uring_enter` with IORING_ENTER_GETEVENTS, on the ring's submitter thread (the one
//!   SINGLE_ISSUER names; any other gets EEXIST), and one such enter runs about as many items
//!   as its `min_complete` asks for, at least IO_LOCAL_TW_DEFAULT_MAX (20; `io_cqring_wait`).
//!   The old teardown waited for one completion at a time: a few dozen requests reaped per
//!   enter, a 1 s CANCEL_ANY between two enters, and 9,822 of 10,000 requests still out at the
//!   5 s bound (then leaked). So the
//!   drain asks each enter for every completion it expects (up to half the queue; with a zero
//!   timeout when there was progress, so it never sleeps on ready work) from the thread that
//!   owns the ring, which is where every teardown runs.
//! - SQPOLL: the kernel's poller thread takes the SQEs, the cancels among them, and runs the
//!   cancelled requests' completion work itself, a few items (IORING_TW_CAP_ENTRIES_VALUE)
//!   between two passes over the submission queue; the thread that tears down only waits for
//!   CQEs (GETEVENTS; its enters hand the poller nothing, and wake it only when it sleeps).
//!   The old teardown pushed a CANCEL_ANY every 100 ms while the poller was still inside the
//!   first: at 5,000 idle connections the poller spun at 100% of a CPU and had not taken the
//!   first cancel 5 s later, and the process needed 12 s to exit. Hence no cancel is sent
//!   while one is unanswered.
//!
//! With these, 5,000 idle connections drain in 15-40 ms on every ring (the exit, closing the
//! sockets, takes the rest of the 0.1-0.25 s). On 5.10, without EXT_ARG, the waits are short
//! sleeps; the order is the same.
//!
//! When a bound passes with requests still out, the memory is leaked, never freed, and the
//! teardown says so on stderr with what is held: a leak costs memory until the process exits,
//! a free would let the kernel write into memory used for something else. The bound is on
//! stalls, not on the drain's length, because a drain that keeps reaping is not stuck, only
//! slow: Debian's 5.10 under QEMU's emulation (the kernel lab) wakes uring-async's 5,000 io-wq
//! workers blocked in a receive one cancel each; a 5 s bound on the whole drain leaked the
//! memory of 2,693 requests that were still completing, and the drain ends in 12-17 s.

use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use io_uring::types::{CancelBuilder, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring, Submitter};

/// How long a teardown waits for the next cancelled request to complete. A socket request
/// completes at once when cancelled; a file write or fsync already running in an io-wq worker
/// cannot be cancelled and completes when the device does (about 0.3 ms a flush under load
/// here); a zero-copy send's notification waits for a peer that may never read.
pub const DRAIN_STALL_MAX: Duration = Duration::from_secs(5);
/// How long a teardown waits in all while requests keep completing (a trickle must end too).
pub const DRAIN_TIME_MAX: Duration = Duration::from_secs(60);
/// How often the cancels are sent again while requests are out: a request submitted in the
/// same batch as the cancel, or re-armed by the kernel, may have missed the first.
const CANCEL_AGAIN: Duration = Duration::from_millis(100);
/// The user data of the teardown's own cancels; no engine's token or slot reaches it.
const CANCEL_USER_DATA: u64 = u64::MAX - 0x7eda;

/// The requests the kernel holds of a ring: one for every SQE pushed, until the completion that
/// ends it (the first without IORING_CQE_F_MORE: a multishot request's last, a zero-copy send's
/// notification). An SQE pushed but not yet submitted counts: the teardown's first submit
/// hands it to the kernel.
#[derive(Debug, Default)]
pub struct InFlight {
    outstanding: u64,
}

impl InFlight {
    /// `entries` SQEs were pushed to the submission queue.
    pub fn pushed(&mut self, entries: usize) {
        self.outstanding += entries as u64;
    }

    /// A completion with `flags` was reaped: it ends its request unless more follow.
    pub fn completed(&mut self, flags: u32) {
        if !cqueue::more(flags) {
            debug_assert!(self.outstanding > 0, "a completion of no request");
            self.outstanding -= 1;
        }
    }

    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }
}

/// What an engine keeps alive for the kernel: the memory its requests read and write, the count
/// of those requests, and what it registered.
pub trait HeldMemory {
    fn in_flight(&mut self) -> &mut InFlight;

    /// The user data of each request that waits for something that may never come (a receive,
    /// an accept, a poll, a timeout): what a kernel without IORING_ASYNC_CANCEL_ANY is asked to
    /// cancel one by one. Requests that complete by themselves (file I/O, a send into a socket
    /// with room, a close) may be left out: the teardown waits for them.
    fn waiting(&self, user_data: &mut Vec<u64>);

    /// Unregisters what the engine registered with the ring (buffers, buffer rings, files), once
    /// the kernel holds no request. Errors are of no use here: the ring is dropped next.
    fn unregister(&mut self, submitter: &Submitter<'_>);

    /// What the memory is, for the sentence that says it is leaked.
    fn describe(&self) -> String;
}

/// A ring and the memory its requests use, torn down in the kernel's order when dropped (module
/// doc). Engines reach both through `parts`.
pub struct KernelHeld<M: HeldMemory> {
    ring: ManuallyDrop<IoUring>,
    memory: ManuallyDrop<M>,
    /// Per-request cancels even where IORING_ASYNC_CANCEL_ANY works (to test the old kernels'
    /// way on a new one).
    cancel_each: bool,
}

impl<M: HeldMemory> KernelHeld<M> {
    pub fn new(ring: IoUring, memory: M) -> KernelHeld<M> {
        KernelHeld {
            ring: ManuallyDrop::new(ring),
            memory: ManuallyDrop::new(memory),
            cancel_each: false,
        }
    }

    /// The ring and the memory, borrowed together.
    pub fn parts(&mut self) -> (&mut IoUring, &mut M) {
        (&mut self.ring, &mut self.memory)
    }

    /// Tears down now and gives the memory back, or says why it cannot: requests still out
    /// when a bound passed (`Bounds::DRAIN`; the memory is leaked).
    pub fn into_memory(mut self) -> anyhow::Result<M> {
        let drained = self.tear_down(Bounds::DRAIN);
        // SAFETY: `tear_down` dropped the ring and left the memory alone (freed by nothing);
        // `self` is forgotten below, so neither is touched again.
        let memory = unsafe { ManuallyDrop::take(&mut self.memory) };
        std::mem::forget(self);
        match drained {
            Ok(()) => Ok(memory),
            Err(held) => {
                std::mem::forget(memory);
                anyhow::bail!("{held}")
            }
        }
    }

    /// Cancels, reaps, unregisters and drops the ring; the memory is left to the caller when
    /// everything was reaped within `bounds`, and must be leaked otherwise (the error says what
    /// is held).
    fn tear_down(&mut self, bounds: Bounds) -> Result<(), String> {
        let drained = drain(&mut self.ring, &mut *self.memory, bounds, self.cancel_each);
        if drained.is_ok() {
            self.memory.unregister(&self.ring.submitter());
        }
        // SAFETY: dropped once, here; `ring` is not used again. With requests still out, the
        // kernel finishes them after the fd is closed, into memory that is then never freed.
        unsafe { ManuallyDrop::drop(&mut self.ring) };
        drained.map_err(|stuck| {
            let why = if stuck.stalled {
                format!(
                    "none completed in the last {} s",
                    bounds.stall.as_secs_f64()
                )
            } else {
                format!("the teardown's {} s were up", bounds.total.as_secs_f64())
            };
            format!(
                "the kernel still held {} io_uring requests {:.1} s after they were cancelled \
                 ({why}); {} stays allocated, never freed, so the kernel cannot write into \
                 memory used for something else",
                stuck.outstanding,
                stuck.after.as_secs_f64(),
                self.memory.describe()
            )
        })
    }
}

impl<M: HeldMemory> Drop for KernelHeld<M> {
    fn drop(&mut self) {
        match self.tear_down(Bounds::DRAIN) {
            // SAFETY: dropped once, here, after every request that used it completed.
            Ok(()) => unsafe { ManuallyDrop::drop(&mut self.memory) },
            Err(held) => eprintln!("ringside: {held}"),
        }
    }
}

/// How long a drain may wait: `stall` without an engine's request ending, `total` in all.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    stall: Duration,
    total: Duration,
}

impl Bounds {
    const DRAIN: Bounds = Bounds {
        stall: DRAIN_STALL_MAX,
        total: DRAIN_TIME_MAX,
    };
}

/// What a drain that gave up left: the requests still out, after how long, and whether the
/// stall bound (else the total) ended it.
#[derive(Debug)]
struct Stuck {
    outstanding: u64,
    after: Duration,
    stalled: bool,
}

/// Cancels every request of `ring` and reaps until none is outstanding, or says what was still
/// out when a bound passed. Never panics: it runs while a panic unwinds.
///
/// The requests the engine lists as waiting are cancelled first, one by one (module doc);
/// IORING_ASYNC_CANCEL_ANY then sweeps whatever is left, once those cancels are answered and
/// every `CANCEL_AGAIN` after, never while a cancel of its own is still out.
fn drain<M: HeldMemory>(
    ring: &mut IoUring,
    memory: &mut M,
    bounds: Bounds,
    cancel_each: bool,
) -> Result<(), Stuck> {
    let start = Instant::now();
    // Progress is an engine's request ending; the teardown's own cancels are answered every
    // `CANCEL_AGAIN` whether or not anything ends.
    let mut progress = start;
    let mut fewest = memory.in_flight().outstanding();
    let mut cancels = Cancels::new(ring, memory, !cancel_each);
    loop {
        let reaped = reap(ring, memory, &mut cancels);
        let outstanding = memory.in_flight().outstanding();
        if outstanding == 0 && cancels.out == 0 {
            return Ok(());
        }
        if outstanding < fewest {
            fewest = outstanding;
            progress = Instant::now();
        }
        let elapsed = start.elapsed();
        let stalled = progress.elapsed() >= bounds.stall;
        if stalled || elapsed >= bounds.total {
            return Err(Stuck {
                outstanding,
                after: elapsed,
                stalled,
            });
        }
        // The sooner of the two bounds; the wait below never sleeps past it.
        let left =
            (bounds.stall - progress.elapsed().min(bounds.stall)).min(bounds.total - elapsed);
        let mut sent = false;
        if outstanding > 0 && cancels.out == 0 {
            if !cancels.each.is_empty() {
                cancels.send_batch(ring);
                sent = true;
            } else if cancels.due() {
                cancels.send_again(ring, memory);
                sent = true;
            }
        }
        // After progress, collect what is ready without sleeping: every completion expected
        // (within half the queue) is asked for, which runs a DEFER_TASKRUN ring's completion
        // work in one go (`wait_for`). With nothing new, sleep until the next one.
        if reaped > 0 || sent {
            let expected = outstanding + cancels.out;
            wait_for(ring, expected.min(cancels.reap_max), Duration::ZERO);
        } else {
            wait_for(ring, 1, left.min(CANCEL_AGAIN));
        }
    }
}

/// The teardown's own cancels: the user data still to cancel one by one, whether
/// IORING_ASYNC_CANCEL_ANY is taken, how many are out, and when the last were sent.
struct Cancels {
    /// User data not cancelled yet, taken a batch at a time from the end.
    each: Vec<u64>,
    /// Cancels pushed per batch: each may post two completions (its own and its request's),
    /// so a batch fills at most half the completion queue.
    batch: usize,
    /// The most completions one wait asks for: half the completion queue, so what the kernel
    /// posts while the teardown waits never overflows it.
    reap_max: u64,
    any: bool,
    out: u64,
    sent: Option<Instant>,
}

impl Cancels {
    fn new<M: HeldMemory>(ring: &IoUring, memory: &M, any: bool) -> Cancels {
        let mut each = Vec::new();
        memory.waiting(&mut each);
        let params = ring.params();
        let cq_half = (params.cq_entries() / 2).max(1);
        Cancels {
            each,
            batch: params.sq_entries().min(cq_half / 2).max(1) as usize,
            reap_max: cq_half.into(),
            any,
            out: 0,
            sent: None,
        }
    }

    fn due(&self) -> bool {
        self.sent.is_none_or(|sent| sent.elapsed() >= CANCEL_AGAIN)
    }

    /// The sweep after the first pass: one IORING_ASYNC_CANCEL_ANY, or, where the kernel
    /// refused it, every waiting request by its user data again.
    fn send_again<M: HeldMemory>(&mut self, ring: &mut IoUring, memory: &M) {
        if self.any {
            let any = opcode::AsyncCancel2::new(CancelBuilder::any()).build();
            self.push(ring, &any);
            self.submit(ring);
        } else {
            memory.waiting(&mut self.each);
            self.send_batch(ring);
        }
    }

    /// Pushes a cancel of the next `batch` waiting requests, by user data, and submits them.
    fn send_batch(&mut self, ring: &mut IoUring) {
        let from = self.each.len().saturating_sub(self.batch);
        for user_data in self.each.split_off(from) {
            self.push(ring, &opcode::AsyncCancel::new(user_data).build());
        }
        self.submit(ring);
    }

    fn push(&mut self, ring: &mut IoUring, entry: &squeue::Entry) {
        let entry = entry.clone().user_data(CANCEL_USER_DATA);
        // SAFETY: a cancel points at no memory; it names requests by user data.
        while unsafe { ring.submission().push(&entry) }.is_err() {
            // The queue is full (of SQEs the loop pushed and never submitted, or of this
            // batch): hand them over first. An error here is a ring the kernel no longer
            // serves; the bound ends the wait.
            if ring.submit().is_err() {
                return;
            }
        }
        self.out += 1;
    }

    fn submit(&mut self, ring: &mut IoUring) {
        self.sent = Some(Instant::now());
        let _ = ring.submit();
    }
}

/// Takes every completion ready: the engine's end its requests, the teardown's own are counted
/// apart (one refused with EINVAL says the kernel has no IORING_ASYNC_CANCEL_ANY: the next round
/// cancels each request by its user data).
fn reap<M: HeldMemory>(ring: &mut IoUring, memory: &mut M, cancels: &mut Cancels) -> usize {
    let mut reaped = 0;
    for cqe in ring.completion() {
        reaped += 1;
        if cqe.user_data() == CANCEL_USER_DATA {
            cancels.out = cancels.out.saturating_sub(1);
            if cancels.any && cqe.result() == -libc::EINVAL {
                cancels.any = false;
                cancels.sent = None;
            }
            continue;
        }
        let in_flight = memory.in_flight();
        // A completion beyond the count would be a counting bug; the teardown must not panic.
        if in_flight.outstanding() > 0 {
            in_flight.completed(cqe.flags());
        }
    }
    reaped
}

/// Submits what is queued and waits up to `wait` for `want` completions (an enter with a
/// timeout, IORING_FEAT_EXT_ARG, 5.11; else a short sleep and a look). A DEFER_TASKRUN ring's
/// completion work (a cancelled request's completion among it) runs only inside such a wait
/// (IORING_ENTER_GETEVENTS), on the thread that submits, and one wait runs about as many items
/// as it asks for, 20 at least (`io_cqring_wait`, 6.18): waits for one reaped about 20
/// cancelled requests a call. With a zero `wait`, the kernel runs that work, posts what is
/// ready and returns ETIME at once. Errors (EINTR, ETIME, EBUSY) only end the wait early: the
/// caller reaps and looks again.
fn wait_for(ring: &mut IoUring, want: u64, wait: Duration) {
    if ring.params().is_feature_ext_arg() {
        let timeout = Timespec::from(wait);
        let args = SubmitArgs::new().timespec(&timeout);
        let _ = ring
            .submitter()
            .submit_with_args(want.max(1) as usize, &args);
    } else {
        let _ = ring.submit();
        std::thread::sleep(wait.min(Duration::from_millis(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::uring::ring::RingSetup;
    use std::cell::Cell;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::rc::Rc;

    /// A receive buffer the kernel writes into, with a record of how many requests were out
    /// when it was freed.
    struct Receiving {
        buffer: Vec<u8>,
        in_flight: InFlight,
        recv_user_data: u64,
        outstanding_when_freed: Rc<Cell<Option<u64>>>,
    }

    impl HeldMemory for Receiving {
        fn in_flight(&mut self) -> &mut InFlight {
            &mut self.in_flight
        }
        fn waiting(&self, user_data: &mut Vec<u64>) {
            user_data.push(self.recv_user_data);
        }
        fn unregister(&mut self, _submitter: &Submitter<'_>) {}
        fn describe(&self) -> String {
            format!("a {}-byte receive buffer", self.buffer.len())
        }
    }

    impl Drop for Receiving {
        fn drop(&mut self) {
            self.outstanding_when_freed
                .set(Some(self.in_flight.outstanding()));
        }
    }

    impl Receiving {
        /// A buffer of `bytes` with nothing in flight, and the record its drop writes.
        fn new(bytes: usize, recv_user_data: u64) -> (Receiving, Rc<Cell<Option<u64>>>) {
            let freed = Rc::new(Cell::new(None));
            let memory = Receiving {
                buffer: vec![0; bytes],
                in_flight: InFlight::default(),
                recv_user_data,
                outstanding_when_freed: Rc::clone(&freed),
            };
            (memory, freed)
        }
    }

    /// Arms a receive into held memory on a socket pair nobody writes to, then drops the lot:
    /// the receive must be cancelled and reaped before the buffer goes, by CANCEL_ANY or, as on
    /// kernels before 5.19, by its user data.
    fn a_receive_in_flight_is_reaped_before_its_buffer_goes(cancel_each: bool) {
        let Ok(ring) = RingSetup::with_entries(8).build() else {
            eprintln!("skipped: io_uring is not usable here");
            return;
        };
        let (_writer, reader) = UnixStream::pair().unwrap();
        let (memory, freed) = Receiving::new(4096, 42);
        let mut held = KernelHeld::new(ring, memory);
        held.cancel_each = cancel_each;
        let (ring, memory) = held.parts();
        let fd = io_uring::types::Fd(reader.as_raw_fd());
        let buffer = &mut memory.buffer;
        let recv = opcode::Recv::new(fd, buffer.as_mut_ptr(), buffer.len() as u32).build();
        // SAFETY: the buffer is held memory, freed only after the receive's completion.
        unsafe { ring.submission().push(&recv.user_data(42)).unwrap() };
        memory.in_flight.pushed(1);
        ring.submit().unwrap();
        let started = Instant::now();
        drop(held);
        assert_eq!(freed.get(), Some(0), "freed with requests out");
        assert!(
            started.elapsed() < CANCEL_AGAIN * 3,
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_receive_in_flight_is_cancelled_any_and_reaped_before_its_buffer_goes() {
        a_receive_in_flight_is_reaped_before_its_buffer_goes(false);
    }

    #[test]
    fn a_receive_in_flight_is_cancelled_by_user_data_and_reaped_before_its_buffer_goes() {
        a_receive_in_flight_is_reaped_before_its_buffer_goes(true);
    }

    /// A request the teardown cannot see complete (counted, never submitted) holds the memory
    /// past the bound: it is leaked, never freed, and the error says what is held. The stall
    /// bound is longer than `CANCEL_AGAIN`, so the teardown's own sweeps are answered inside it:
    /// those answers are not progress, and the stall, not the total, ends the drain.
    #[test]
    fn memory_still_held_past_the_bound_is_leaked_not_freed() {
        let Ok(ring) = RingSetup::with_entries(8).build() else {
            eprintln!("skipped: io_uring is not usable here");
            return;
        };
        let (mut memory, freed) = Receiving::new(64, 7);
        memory.in_flight.pushed(1);
        let mut held = KernelHeld::new(ring, memory);
        let bounds = Bounds {
            stall: CANCEL_AGAIN * 3,
            total: Duration::from_secs(1),
        };
        let error = held.tear_down(bounds).unwrap_err();
        // `tear_down` left the memory alone; forget the rest as `Drop` would have.
        std::mem::forget(held);
        assert_eq!(freed.get(), None, "the memory was freed");
        assert!(error.contains("still held 1 io_uring requests"), "{error}");
        assert!(error.contains("a 64-byte receive buffer"), "{error}");
        assert!(
            error.contains("none completed in the last 0.3 s"),
            "{error}"
        );
    }

    /// Requests that end one by one, each sooner than the stall bound but all later than it
    /// (timeouts 30 ms apart, which no cancel touches: they are not `waiting`, and the sweep is
    /// by user data), are drained, not leaked: the bound is on a stall, not on the drain. The
    /// total bound still ends it. None where io_uring is not usable.
    fn timeouts_ending_every_30_ms(bounds: Bounds) -> Option<(Result<(), String>, Option<u64>)> {
        let Ok(ring) = RingSetup::with_entries(8).build() else {
            eprintln!("skipped: io_uring is not usable here");
            return None;
        };
        let timespecs: Vec<Timespec> = (1..=6)
            .map(|i| Timespec::from(Duration::from_millis(30 * i)))
            .collect();
        let (memory, freed) = Receiving::new(64, 1);
        let mut held = KernelHeld::new(ring, memory);
        held.cancel_each = true;
        let (ring, memory) = held.parts();
        for (i, timespec) in timespecs.iter().enumerate() {
            let timeout = opcode::Timeout::new(timespec)
                .build()
                .user_data(100 + i as u64);
            // SAFETY: `timespecs` outlives the ring (declared before `held`).
            unsafe { ring.submission().push(&timeout).unwrap() };
        }
        memory.in_flight.pushed(timespecs.len());
        ring.submit().unwrap();
        let drained = held.tear_down(bounds);
        if drained.is_ok() {
            // SAFETY: every request ended; the memory is dropped once, here.
            unsafe { ManuallyDrop::drop(&mut held.memory) };
        }
        std::mem::forget(held);
        Some((drained, freed.get()))
    }

    #[test]
    fn a_drain_that_keeps_ending_requests_outlasts_the_stall_bound() {
        let stall = Duration::from_millis(100);
        let started = Instant::now();
        let total = Duration::from_secs(5);
        let Some((drained, freed)) = timeouts_ending_every_30_ms(Bounds { stall, total }) else {
            return;
        };
        assert_eq!(drained, Ok(()));
        assert_eq!(freed, Some(0), "freed with requests out");
        assert!(started.elapsed() > stall, "{:?}", started.elapsed());
        let total = Duration::from_millis(80);
        let (drained, freed) = timeouts_ending_every_30_ms(Bounds { stall, total }).unwrap();
        let error = drained.unwrap_err();
        assert!(error.contains("the teardown's 0.08 s were up"), "{error}");
        assert_eq!(freed, None, "the memory was freed");
    }

    /// A completion that says more follow ends nothing; a zero-copy send's notification ends
    /// its send.
    #[test]
    fn only_a_last_completion_ends_a_request() {
        const MORE: u32 = 1 << 1; // IORING_CQE_F_MORE
        let mut in_flight = InFlight::default();
        in_flight.pushed(2);
        in_flight.completed(MORE);
        assert_eq!(in_flight.outstanding(), 2);
        in_flight.completed(0);
        in_flight.completed(0);
        assert_eq!(in_flight.outstanding(), 0);
    }

    /// With nothing in flight the teardown frees at once.
    #[test]
    fn a_teardown_with_nothing_in_flight_is_immediate() {
        let Ok(ring) = RingSetup::with_entries(8).build() else {
            eprintln!("skipped: io_uring is not usable here");
            return;
        };
        let (memory, freed) = Receiving::new(64, 1);
        let started = Instant::now();
        drop(KernelHeld::new(ring, memory));
        assert!(started.elapsed() < Duration::from_millis(50));
        assert_eq!(freed.get(), Some(0));
    }
}
