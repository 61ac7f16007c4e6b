//! The io_uring servers (echo or HTTP, per `Proto`): one event loop, generic over how a
//! connection receives (`ReceiveStrategy`) and how it sends (`SendStrategy`), on a ring built
//! with the setup flags its table row needs. Each strategy is one file:
//!
//! - `receive_own_buffer.rs` (the `uring` engine, seed 000's net_io_uring): one accept SQE,
//!   and per connection one recv SQE into the connection's own buffer; the kernel's FAST_POLL
//!   waits for readiness inside the ring, so there is no epoll and no readiness syscall.
//! - `receive_async.rs` (`uring-async`): the plain receive with IOSQE_ASYNC on every recv, so
//!   each waits in an io-wq worker instead of a poll (netty's forced-async mode).
//! - `receive_multishot.rs` (`uring-multishot`, seed 004, and `uring-defer`): one multishot
//!   accept for all connections and one multishot recv per connection, taking buffers from a
//!   registered provided-buffer ring. Beside each multishot recv sits a one-shot poll for the
//!   peer hanging up (`Op::Hangup`): on Linux 6.18, when many clients send half a request and
//!   reset at once, a multishot recv sometimes stays armed with no completion ever (the ring's
//!   fdinfo shows the RECV still in its poll list, the socket in TCP CLOSE), leaking the
//!   connection. When the hang-up poll fires, the recv is cancelled and re-armed, and the fresh
//!   recv reads the rest, the EOF or the reset. It costs one SQE and one CQE per connection,
//!   not per message.
//! - `receive_incremental.rs` (`uring-recv-inc`): the multishot recv from a pool of few 64 KiB
//!   buffers consumed incrementally, each completion a slice of the buffer at the ring's head.
//! - `send_plain.rs`: one send SQE of what arrived, the rest resubmitted after a short send;
//!   from a registered buffer when the row registers buffers.
//! - `send_zero_copy.rs` (`uring-send-zc`): SEND_ZC from registered buffers, each buffer held
//!   until the kernel's notification says no packet reads it any more.
//! - `send_bundle.rs` (`uring-send-bundle`): every chunk a connection has queued handed to its
//!   own incrementally consumed send ring, and one send bundle for all of them.
//! - `socket.rs`: a connection's socket as a plain fd, or as a direct descriptor in the ring's
//!   file table (`uring-fixed-files`: the multishot accept installs it, SQEs name its index,
//!   an SQE closes it).
//!
//! The other rungs are rows of the engine table, not code: `uring-defer` is the multishot
//! server on a SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN ring with its fd registered, so
//! completion work runs in a batch when the loop waits, on this thread; `uring-sqpoll` the
//! multishot server with a kernel thread polling its submission queue; `uring-min-wait` waits
//! for several completions with a minimum wait (`wait_for_completions`).
//!
//! Invariants that keep bytes in order and memory bounded, asserted in `Connection::check` after
//! every completion: one send in flight per connection (two sends in flight on one socket may
//! complete out of order); a connection's chunks queue in order behind it; a connection with too
//! many queued chunks (or, with zero copy, buffers whose notification is still due) has its
//! multishot recv cancelled until they drain, so one slow reader cannot hold the whole buffer
//! pool; an fd is closed only when the kernel holds no operation of
//! it. `user_data` is a `Token` (op kind, connection slot, generation), so a completion that
//! outlives its connection is recognised.
//!
//! With HTTP, received bytes are parsed at once (the receive buffer goes straight back) and the
//! chunks queued are slices of the prebuilt responses, so a response is sent without a copy;
//! after a closing response the connection reads no more and closes once it is sent.

mod connection;
mod handlers;
mod receive;
mod receive_async;
mod receive_incremental;
mod receive_multishot;
mod receive_own_buffer;
mod send;
mod send_bundle;
mod send_plain;
mod send_zero_copy;
mod socket;

use std::os::fd::AsRawFd;
use std::time::Duration;

use io_uring::{types, EnterFlags, Submitter};

use crate::engines::needs::{Feature, Needs, Registration};
use crate::engines::server::{Run, ServerCounters, STOP_POLL_INTERVAL};
use crate::engines::uring::registered::{Regions, PIN_RELEASE_WAIT};
use crate::engines::uring::ring::{RingSetup, ServerHelpers};
use crate::engines::uring::teardown::KernelHeld;
use crate::system::limits::PinLimit;
use crate::system::stop::stopped;
use crate::units::format_size;
use handlers::Server;

pub use receive::ReceiveStrategy;
pub use receive_async::AsyncReceive;
pub use receive_incremental::IncrementalReceive;
pub use receive_multishot::{BundleReceive, MultishotReceive};
pub use receive_own_buffer::OwnBufferReceive;
pub use send::SendStrategy;
pub use send_bundle::BundleSend;
pub use send_plain::PlainSend;
pub use send_zero_copy::ZeroCopySend;

/// Submission queue size; a full queue spills into the loop's backlog, never drops an SQE.
const SQ_ENTRIES: u32 = 1024;
/// Completion queue size: multishot operations post many CQEs per SQE.
pub const CQ_ENTRIES: u32 = 8192;
/// The smallest receive pool a server that registers its buffers shrinks to, to fit the
/// locked-memory limit (`register_fitted`).
const POOL_BUFFERS_MIN: u16 = 16;
/// Received chunks a connection may hold unsent before its multishot recv is cancelled.
const CHUNKS_PER_CONNECTION_MAX: usize = 8;

/// Slots of the file table beyond `--max-connections`, so a connection over the limit is
/// accepted, counted as refused and closed, rather than failing to find a slot.
const DIRECT_SLOTS_SPARE: usize = 64;
/// Batched waiting (`uring-min-wait`): wait for up to this share of the open connections'
/// completions (at most `MIN_WAIT_BATCH_MAX`), but no longer than `MIN_WAIT_USEC` for more
/// than one.
const MIN_WAIT_SHARE: usize = 2;
const MIN_WAIT_BATCH_MAX: usize = 64;
const MIN_WAIT_USEC: u32 = 50;

/// Serves `run.listener` until the stop flag rises, receiving with `R` and sending with `S` on
/// a ring with the setup flags, registrations and features of `needs` and the kernel threads of
/// `helpers`: registered files mean
/// direct descriptors (`socket.rs`), registered buffers mean sends from them, min-wait means
/// batched waiting.
pub fn serve<R: ReceiveStrategy, S: SendStrategy>(
    run: Run<'_>,
    needs: Needs,
    helpers: &ServerHelpers<'_>,
) -> anyhow::Result<()> {
    let config = run.config;
    let cq_entries = config.cq_entries;
    assert!(cq_entries.is_power_of_two());
    let ring_setup = RingSetup {
        helpers: Some(helpers.helpers.clone()),
        cq_entries: Some(cq_entries),
        ..RingSetup::with_flags(SQ_ENTRIES.min(cq_entries), needs.setup)
    };
    let send = S::new(&config)?;
    let ring = match helpers.sqpoll_share {
        Some(share) => share.build(&ring_setup, run.loop_index == 0),
        None => ring_setup.build(),
    }
    .map_err(anyhow::Error::msg)?;
    let listener = types::Fd(run.listener.as_raw_fd());
    let direct = needs.registrations.contains(&Registration::Files);
    let server: Server<R, S> = Server::new(
        config,
        run.counters,
        listener,
        (R::new(&config), send),
        direct,
    );
    // From here on the ring's requests use the server's memory: on every way out of this
    // function (the loop's end, an error, a panic) the teardown cancels them, reaps them all,
    // unregisters, and only then frees the server and drops the ring.
    let mut held = KernelHeld::new(ring, server);
    let (ring, server) = held.parts();
    register(&ring.submitter(), server, needs, run.counters)?;
    let batched = needs.features.contains(&Feature::MinWait);
    let (mut submitter, mut sq, mut cq) = ring.split();
    if needs.registrations.contains(&Registration::RingFd) {
        submitter.register_ring_fd()?;
    }
    server.arm_accept(&mut sq);
    server.arm_tick(&mut sq);
    let stop = crate::system::stop::stop_event();
    if let Some(stop) = stop {
        server.arm_stop(&mut sq, types::Fd(stop.as_raw_fd()));
    }
    while !stopped() {
        server.register_sends(&mut sq, &submitter)?;
        server.flush_backlog(&mut sq);
        sq.sync();
        // A full queue goes to the kernel before the wait: the SQEs left in the backlog may be
        // the ones whose completions the wait is for (cancels, closes), and the SQEs in the
        // queue may complete only much later (receives and polls armed), so waiting first
        // could block with work left undone.
        while server.backlogged() {
            let handed = run.counters.call(if needs.setup.sqpoll {
                submitter.squeue_wait() // Until the kernel thread took some.
            } else {
                submitter.submit()
            });
            if let Err(error) = handed {
                anyhow::ensure!(
                    matches!(error.raw_os_error(), Some(libc::EBUSY | libc::EINTR)),
                    "io_uring_enter failed: {error}"
                );
                break; // Completions are backed up: reap them first.
            }
            sq.sync();
            server.flush_backlog(&mut sq);
            sq.sync();
        }
        let want = if batched {
            (server.connections.len() / MIN_WAIT_SHARE).clamp(1, MIN_WAIT_BATCH_MAX)
        } else {
            1
        };
        // An SQPOLL ring's poller, once asleep, is woken only for submissions: woken by a
        // wait with nothing queued, it spins its idle time (100 ms) for nothing, and a server
        // whose accepting is paused (out of fds) would wake it every pause.
        let wake_poller = !(needs.setup.sqpoll && sq.is_empty());
        run.counters.syscalls(1);
        wait_for_completions(
            &mut submitter,
            (stop.is_some(), wake_poller),
            want,
            server.accept_pause_left(),
        )?;
        cq.sync();
        // The kernel held completions back because the queue was full: count it, and make
        // room by reaping; the flag clears once they are flushed in.
        if sq.cq_overflow() {
            ServerCounters::add(&run.counters.cq_overflows, 1);
        }
        for cqe in &mut cq {
            server.complete(&mut sq, &cqe);
        }
        // Receives are armed after the whole batch, the starved first (`handlers/pool.rs`).
        server.arm_queued(&mut sq);
        if let Some(error) = server.accept_refused.take() {
            anyhow::bail!(
                "the kernel refused the io_uring accept ({error}): no connection can be served"
            );
        }
        server.resume_accept(&mut sq);
        // Publish the new head before entering the kernel again. A split completion queue
        // writes its head back only on sync; without this the kernel still counts the CQEs
        // just reaped as waiting, so the next wait for one completion returns at once, empty:
        // one wasted io_uring_enter per loop (measured: exactly one per message at 1 conn).
        cq.sync();
    }
    server.disconnect_zero_copy_senders(&mut sq);
    sq.sync();
    Ok(())
}

/// Registers what the server's requests use with the ring: the receive pool (with the buffers
/// sends read from, fitted to the locked-memory limit, when the row registers buffers) and the
/// file table of direct descriptors.
fn register<R: ReceiveStrategy, S: SendStrategy>(
    submitter: &Submitter<'_>,
    server: &mut Server<'_, R, S>,
    needs: Needs,
    counters: &ServerCounters,
) -> anyhow::Result<()> {
    if needs.registrations.contains(&Registration::Buffers) {
        let regions = register_fitted(submitter, server)?;
        let buffers = server.config.provided_buffers;
        ServerCounters::add(&counters.provided_buffers, buffers.into());
        ServerCounters::add(&counters.registered_bytes, regions.bytes());
        server.registered = Some(regions);
    } else {
        // SAFETY: the pool lives in the server, held beside the ring by `KernelHeld`, whose
        // teardown unregisters it once no request is left, before the server is freed.
        unsafe { server.receive.register(submitter) }?;
    }
    if needs.registrations.contains(&Registration::Files) {
        let slots = direct_slots(server.config.max_connections);
        submitter.register_files_sparse(slots)?;
    }
    Ok(())
}

/// The receive pool of a server that sends from registered buffers, registered with the ring,
/// and the buffers (the pool and the prebuilt responses), fitted to the locked-memory limit. A
/// plain user's RLIMIT_MEMLOCK (8 MiB on Debian) is charged for the registered buffers and,
/// on Linux 6.18, for the rings themselves; the pool only lends buffers to receives in flight
/// (an empty pool is counted, `provided_buffers_exhausted`, and waited out), so on ENOMEM it is
/// halved, down to `POOL_BUFFERS_MIN`, and `config` says what fitted. The first refusal is
/// tried again after `PIN_RELEASE_WAIT`, for an exited server's charge to be released.
fn register_fitted<R: ReceiveStrategy, S: SendStrategy>(
    submitter: &Submitter<'_>,
    server: &mut Server<'_, R, S>,
) -> anyhow::Result<Regions> {
    let mut waited = false;
    loop {
        let mut memory = vec![server.receive.shared_memory()];
        let responses = server.config.proto.responses();
        memory.extend(responses.into_iter().flat_map(|r| r.memory()));
        let bytes: usize = memory.iter().map(|m| m.len()).sum();
        // SAFETY: the pool lives in the server, held beside the ring by `KernelHeld`, whose
        // teardown unregisters once no request is left, before it frees the server (or it is
        // unregistered below before a smaller pool replaces it); the responses are static.
        let registered = unsafe { Regions::register(submitter, &memory) };
        let refused = match registered {
            // SAFETY: as above.
            Ok(regions) => match unsafe { server.receive.register(submitter) } {
                Ok(()) => return Ok(regions),
                Err(error) => {
                    submitter.unregister_buffers()?;
                    error
                }
            },
            Err(error) => anyhow::Error::from(error),
        };
        let out_of_memory = refused
            .downcast_ref::<std::io::Error>()
            .is_some_and(|error| error.raw_os_error() == Some(libc::ENOMEM));
        if !out_of_memory {
            return Err(refused);
        }
        let config = &mut server.config;
        if !waited {
            waited = true;
            std::thread::sleep(PIN_RELEASE_WAIT);
        } else if config.provided_buffers > POOL_BUFFERS_MIN {
            config.provided_buffers /= 2;
            // Nothing of the old pool is registered any more: the kernel holds none of it.
            server.receive = R::new(config);
        } else {
            let limit = PinLimit::read().map_or("no limit applies".to_string(), |limit| {
                format!(
                    "RLIMIT_MEMLOCK is {}, {} of it held by this process",
                    format_size(limit.limit),
                    format_size(limit.held)
                )
            });
            anyhow::bail!(
                "the kernel refused to register {} bytes of buffers ({} receive buffers and the \
                 responses) and the ring's buffer pool ({refused}); {limit}, and the rings are \
                 charged too: raise the locked-memory limit (`ulimit -l`) or run as root",
                format_size(bytes as u64),
                config.provided_buffers
            );
        }
    }
}

/// The file table of a server on direct descriptors: every connection allowed plus a few to
/// refuse with, within the fd limit (the kernel refuses a larger table with EMFILE).
fn direct_slots(max_connections: usize) -> u32 {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    let wanted = (max_connections + DIRECT_SLOTS_SPARE) as u64;
    wanted.min(limit).clamp(1, u64::from(u32::MAX)) as u32
}

/// The loop's one syscall: submits what is queued and waits for `want` completions (more than
/// one only when batching, and then at most `MIN_WAIT_USEC` for more than one). With the stop
/// pipe polled in the ring (`stoppable`), that is all: Ctrl-C completes the poll. A timeout
/// would arm and cancel a timer on every wait, a cost the seeds' servers do not pay. Without
/// it, the wait also ends at the stop-flag tick (`STOP_POLL_INTERVAL`); while accepting is
/// paused (`accept_pause`, out of fds), at the pause's end. `wake_poller` false: an SQPOLL
/// ring's queue is empty, so the wait only waits (the crate's submit calls wake a sleeping
/// poller whenever they enter).
fn wait_for_completions(
    submitter: &mut Submitter<'_>,
    (stoppable, wake_poller): (bool, bool),
    want: usize,
    accept_pause: Option<Duration>,
) -> anyhow::Result<()> {
    let limit = match (stoppable, accept_pause) {
        (true, None) => None,
        (true, Some(pause)) => Some(pause),
        (false, pause) => Some(pause.map_or(STOP_POLL_INTERVAL, |p| p.min(STOP_POLL_INTERVAL))),
    };
    let entered = match (limit, want) {
        (limit, _) if !wake_poller => {
            let timeout = limit.map(types::Timespec::from);
            let args = match &timeout {
                Some(timeout) => types::SubmitArgs::new().timespec(timeout),
                None => types::SubmitArgs::new(),
            };
            let flags = EnterFlags::GETEVENTS | EnterFlags::EXT_ARG;
            // SAFETY: nothing is submitted, and the extended argument is the kernel's
            // io_uring_getevents_arg (SubmitArgs is transparent over it), alive for the call.
            unsafe { submitter.enter(0, want as u32, flags.bits(), Some(&args)) }
        }
        (None, 1) => submitter.submit_and_wait(1),
        (limit, _) => {
            // Batching waits for `want` completions, but settles for any after MIN_WAIT_USEC
            // and, with none by then, for the first until the limit or the stop-flag tick:
            // without that general timeout the kernel ends every wait at the minimum, and an
            // idle server would wake 20,000 times a second.
            let timeout = types::Timespec::from(limit.unwrap_or(STOP_POLL_INTERVAL));
            let min_wait_usec = if want > 1 { MIN_WAIT_USEC } else { 0 };
            let args = types::SubmitArgs::new()
                .min_wait_usec(min_wait_usec)
                .timespec(&timeout);
            submitter.submit_with_args(want, &args)
        }
    };
    match entered {
        Ok(_) => Ok(()),
        // ETIME: the stop-flag tick. EBUSY: completions are backed up, reap them first.
        Err(error)
            if matches!(
                error.raw_os_error(),
                Some(libc::ETIME | libc::EINTR | libc::EBUSY)
            ) =>
        {
            Ok(())
        }
        Err(error) => Err(anyhow::anyhow!("io_uring_enter failed: {error}")),
    }
}
