//! The io_uring servers (echo or HTTP, per `Proto`): one event loop, three engines that differ
//! only in `UringOptions`.
//!
//! - `uring` (seed 000's net_io_uring): one accept SQE, and per connection one recv SQE into the
//!   connection's own buffer, then one send SQE of what arrived, resubmitting the rest after a
//!   short send, then the next recv. The kernel's FAST_POLL waits for readiness inside the
//!   ring, so there is no epoll and no separate readiness syscall.
//! - `uring-multishot` (seed 004): one multishot accept for all connections and one multishot
//!   recv per connection, which takes buffers from a registered provided-buffer ring
//!   (`buf_ring.rs`). Bytes are sent straight from the buffer that received them; a buffer goes
//!   back to the ring once all its bytes are sent. The kernel may end a multishot (no
//!   IORING_CQE_F_MORE: out of buffers, an error, a full CQ); the loop re-arms it.
//!   Beside each multishot recv sits a one-shot poll for the peer hanging up (`Op::Hangup`):
//!   on Linux 6.18, when many clients send half a request and reset at once, a multishot recv
//!   sometimes stays armed with no completion ever (the ring's fdinfo shows the RECV still in
//!   its poll list, the socket in TCP CLOSE), leaking the connection. When the hang-up poll fires,
//!   the recv is cancelled and re-armed, and the fresh recv reads the rest, the EOF or the reset.
//!   It costs one SQE and one CQE per connection, not per message.
//! - `uring-defer`: the same loop on a SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN ring with its
//!   fd registered, so completion work runs in a batch when the loop waits, on this thread.
//!
//! Invariants that keep bytes in order and memory bounded: one send in flight per connection
//! (two sends in flight on one socket may complete out of order); a connection's received
//! chunks queue in order behind it; a connection with too many queued chunks has its multishot
//! recv cancelled until it drains, so one slow reader cannot hold the whole buffer pool; an fd
//! is closed only when the kernel holds no operation of it. `user_data` is a `Token` (op kind,
//! connection slot, generation), so a completion that outlives its connection is recognised.
//!
//! With HTTP, received bytes are parsed at once (the pool buffer goes straight back) and the
//! chunks queued are slices of the prebuilt responses, so a response is sent without a copy;
//! after a closing response the connection reads no more and closes once it is sent.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};

use io_uring::{cqueue, opcode, squeue, types, SubmissionQueue};
use slab::Slab;

use super::buf_ring::BufRing;
use super::http::{Responses, ServerSession, SliceOf};
use super::proto::Reply;
use super::{ServerConfig, ServerCounters, UringOptions, STOP_POLL_INTERVAL};
use crate::progress::stopped;
use crate::ring::{Helpers, RingSetup};

/// Submission queue size; a full queue spills into the loop's backlog, never drops an SQE.
const SQ_ENTRIES: u32 = 1024;
/// Completion queue size: multishot operations post many CQEs per SQE.
const CQ_ENTRIES: u32 = 8192;
/// Receive buffer of each connection of the plain `uring` engine.
const CONNECTION_BUFFER_BYTES: u32 = 16 * 1024;
/// Size of each buffer of the multishot engines' shared pool (`--provided-buffers` of them).
pub const POOL_BUFFER_BYTES: u32 = 8 * 1024;
const POOL_GROUP: u16 = 0;
/// Received chunks a connection may hold unsent before its multishot recv is cancelled.
const CHUNKS_PER_CONNECTION_MAX: usize = 8;

/// Whether the engine with `options` can run here; the reason when it cannot.
pub fn availability(options: UringOptions) -> Result<(), String> {
    crate::ring::on_trial_thread(|| trial(options))
}

fn trial(options: UringOptions) -> Result<(), String> {
    let mut buffers = BufRing::new(1, 64, POOL_GROUP);
    let ring = ring_setup(options, None).build()?;
    if options.multishot {
        buffers.register(&ring.submitter()).map_err(|error| {
            format!(
                "the kernel refused a provided-buffer ring ({error}); multishot recv needs \
                 Linux 6.0 or later"
            )
        })?;
    }
    drop(ring);
    Ok(())
}

fn ring_setup(options: UringOptions, helpers: Option<&Helpers>) -> RingSetup {
    RingSetup {
        helpers: helpers.cloned(),
        cq_entries: Some(CQ_ENTRIES),
        single_issuer: options.defer_taskrun,
        defer_taskrun: options.defer_taskrun,
        coop_taskrun: options.defer_taskrun,
        ..RingSetup::with_entries(SQ_ENTRIES)
    }
}

/// The operation a completion belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Op {
    Accept = 1,
    Recv = 2,
    Send = 3,
    Cancel = 4,
    Hangup = 5,
    /// The stop event became readable (Ctrl-C): the loop's condition sees the flag.
    Stop = 6,
}

/// What `user_data` carries: the op kind in the top byte, the connection's generation in the
/// next 24 bits, its slab slot in the low 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Token {
    op: Op,
    generation: u32,
    slot: u32,
}

const GENERATION_MASK: u32 = (1 << 24) - 1;

impl Token {
    fn encode(self) -> u64 {
        debug_assert!(self.generation <= GENERATION_MASK);
        (self.op as u64) << 56 | u64::from(self.generation) << 32 | u64::from(self.slot)
    }

    fn decode(user_data: u64) -> Option<Token> {
        let op = match (user_data >> 56) as u8 {
            1 => Op::Accept,
            2 => Op::Recv,
            3 => Op::Send,
            4 => Op::Cancel,
            5 => Op::Hangup,
            6 => Op::Stop,
            _ => return None,
        };
        Some(Token {
            op,
            generation: (user_data >> 32) as u32 & GENERATION_MASK,
            slot: user_data as u32,
        })
    }
}

/// Where the bytes of a chunk live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// A pool buffer that received them (multishot engines, echo).
    Pool(u16),
    /// The connection's own receive buffer (plain engine, echo).
    Own,
    /// A slice of the prebuilt HTTP responses, which outlive every connection.
    Response(SliceOf),
}

/// Bytes queued to send and not yet all sent.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    source: Source,
    len: u32,
    sent: u32,
}

struct Connection {
    fd: OwnedFd,
    generation: u32,
    /// Operations of this connection the kernel still holds; the fd closes only at zero.
    in_flight: u32,
    recv_armed: bool,
    /// The multishot engines' poll for the peer hanging up is armed.
    hangup_armed: bool,
    send_in_flight: bool,
    cancel_sent: bool,
    /// Waiting for a pool buffer after a recv ended with ENOBUFS.
    starved: bool,
    closing: bool,
    /// The protocol ended the connection: close once the queued output is sent.
    close_after_send: bool,
    session: ServerSession,
    /// The plain engine's receive buffer (empty for the multishot engines).
    own_buffer: Box<[u8]>,
    pending: VecDeque<Chunk>,
}

struct Server<'a> {
    options: UringOptions,
    config: ServerConfig,
    counters: &'a ServerCounters,
    listener: types::Fd,
    /// The HTTP responses chunks point into (None for echo).
    responses: Option<&'static Responses>,
    connections: Slab<Connection>,
    pool: Option<&'a mut BufRing>,
    /// Pool buffers held by connections (received, not yet sent).
    pool_held: usize,
    /// Connections whose recv ended for want of a pool buffer, re-armed as buffers return.
    starved: VecDeque<(usize, u32)>,
    /// SQEs that did not fit the submission queue, pushed before the next submit.
    backlog: VecDeque<squeue::Entry>,
    generation_next: u32,
}

pub fn serve(
    listener: OwnedFd,
    config: ServerConfig,
    counters: &ServerCounters,
    options: UringOptions,
    helpers: &Helpers,
) -> anyhow::Result<()> {
    // Declared before the ring so that it is dropped after it (see buf_ring.rs).
    let mut pool = options
        .multishot
        .then(|| BufRing::new(config.provided_buffers, POOL_BUFFER_BYTES, POOL_GROUP));
    let mut ring = ring_setup(options, Some(helpers))
        .build()
        .map_err(anyhow::Error::msg)?;
    if let Some(pool) = pool.as_mut() {
        pool.register(&ring.submitter())?;
    }
    let (mut submitter, mut sq, mut cq) = ring.split();
    if options.defer_taskrun {
        submitter.register_ring_fd()?;
    }
    let mut server = Server {
        options,
        config,
        counters,
        listener: types::Fd(listener.as_raw_fd()),
        responses: config.proto.responses(),
        connections: Slab::new(),
        pool: pool.as_mut(),
        pool_held: 0,
        starved: VecDeque::new(),
        backlog: VecDeque::new(),
        generation_next: 0,
    };
    server.arm_accept(&mut sq);
    // Wait with no timeout, woken for Ctrl-C by a poll on the stop event; only without one look
    // now and then (a timeout costs every wait a timer).
    let stop = crate::progress::stop_event();
    if let Some(stop) = stop {
        let poll = opcode::PollAdd::new(types::Fd(stop.as_raw_fd()), libc::POLLIN as u32);
        let token = Token {
            op: Op::Stop,
            generation: 0,
            slot: 0,
        };
        server.push(&mut sq, poll.build().user_data(token.encode()));
    }
    let timeout = types::Timespec::from(STOP_POLL_INTERVAL);
    let args = types::SubmitArgs::new().timespec(&timeout);
    while !stopped() {
        server.flush_backlog(&mut sq);
        sq.sync();
        let entered = match stop {
            Some(_) => submitter.submit_and_wait(1),
            None => submitter.submit_with_args(1, &args),
        };
        match entered {
            Ok(_) => {}
            // ETIME: the stop-flag tick. EBUSY: completions are backed up, reap them first.
            Err(error)
                if matches!(
                    error.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(error) => return Err(anyhow::anyhow!("io_uring_enter failed: {error}")),
        }
        cq.sync();
        for cqe in &mut cq {
            server.complete(&mut sq, cqe.user_data(), cqe.result(), cqe.flags());
        }
        // Publish the new head before entering the kernel again. A split completion queue
        // writes its head back only on sync; without this the kernel still counts the CQEs
        // just reaped as waiting, so the next wait for one completion returns at once, empty:
        // one wasted io_uring_enter per loop (measured: exactly one per message at 1 conn).
        cq.sync();
    }
    // Closing the fds first and then the ring cancels whatever is still in flight.
    server.connections.clear();
    Ok(())
}

impl Server<'_> {
    fn push(&mut self, sq: &mut SubmissionQueue<'_>, entry: squeue::Entry) {
        // SAFETY: every entry points only at memory that outlives its completion: a
        // connection's own buffer (freed only when no op of it is in flight) or pool buffers.
        if !self.backlog.is_empty() || unsafe { sq.push(&entry) }.is_err() {
            self.backlog.push_back(entry);
        }
    }

    fn flush_backlog(&mut self, sq: &mut SubmissionQueue<'_>) {
        while let Some(entry) = self.backlog.front() {
            // SAFETY: as in `push`.
            if unsafe { sq.push(entry) }.is_err() {
                return;
            }
            self.backlog.pop_front();
        }
    }

    fn arm_accept(&mut self, sq: &mut SubmissionQueue<'_>) {
        let token = Token {
            op: Op::Accept,
            generation: 0,
            slot: 0,
        };
        let entry = if self.options.multishot {
            opcode::AcceptMulti::new(self.listener)
                .flags(libc::SOCK_CLOEXEC)
                .build()
        } else {
            opcode::Accept::new(self.listener, std::ptr::null_mut(), std::ptr::null_mut())
                .flags(libc::SOCK_CLOEXEC)
                .build()
        };
        self.push(sq, entry.user_data(token.encode()));
    }

    fn complete(&mut self, sq: &mut SubmissionQueue<'_>, user_data: u64, result: i32, flags: u32) {
        let token = Token::decode(user_data).expect("every SQE carries a token");
        match token.op {
            Op::Accept => self.accepted(sq, result, flags),
            Op::Recv => self.received(sq, token, result, flags),
            Op::Send => self.sent(sq, token, result),
            Op::Hangup => self.hung_up(sq, token, result),
            // The cancelled recv reports itself with -ECANCELED.
            Op::Cancel | Op::Stop => {}
        }
    }

    fn accepted(&mut self, sq: &mut SubmissionQueue<'_>, result: i32, flags: u32) {
        if !self.options.multishot || !cqueue::more(flags) {
            self.arm_accept(sq);
        }
        if result < 0 {
            return; // ECONNABORTED, EMFILE: that connection is lost, not the server.
        }
        // SAFETY: a successful accept CQE carries a new fd that nothing else owns.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(result) };
        if self.connections.len() >= self.config.max_connections {
            ServerCounters::add(&self.counters.connections_refused, 1);
            return;
        }
        ServerCounters::add(&self.counters.connections_accepted, 1);
        let generation = self.generation_next;
        self.generation_next = (self.generation_next + 1) & GENERATION_MASK;
        let own_buffer = if self.options.multishot {
            Box::default()
        } else {
            vec![0u8; CONNECTION_BUFFER_BYTES as usize].into_boxed_slice()
        };
        let slot = self.connections.insert(Connection {
            fd,
            generation,
            in_flight: 0,
            recv_armed: false,
            hangup_armed: false,
            send_in_flight: false,
            cancel_sent: false,
            starved: false,
            closing: false,
            close_after_send: false,
            session: ServerSession::default(),
            own_buffer,
            pending: VecDeque::new(),
        });
        self.arm_recv(sq, slot);
        if self.options.multishot {
            self.arm_hangup(sq, slot);
        }
    }

    fn token(&self, op: Op, slot: usize) -> u64 {
        Token {
            op,
            generation: self.connections[slot].generation,
            slot: slot as u32,
        }
        .encode()
    }

    fn arm_recv(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let user_data = self.token(Op::Recv, slot);
        let connection = &mut self.connections[slot];
        debug_assert!(!connection.recv_armed && !connection.closing);
        let fd = types::Fd(connection.fd.as_raw_fd());
        let entry = if self.options.multishot {
            opcode::RecvMulti::new(fd, POOL_GROUP).build()
        } else {
            let buffer = &mut connection.own_buffer;
            opcode::Recv::new(fd, buffer.as_mut_ptr(), buffer.len() as u32).build()
        };
        connection.recv_armed = true;
        connection.cancel_sent = false;
        connection.starved = false;
        connection.in_flight += 1;
        self.push(sq, entry.user_data(user_data));
    }

    /// Watches for the peer's FIN or reset, which a stuck multishot recv may miss (module doc).
    fn arm_hangup(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let user_data = self.token(Op::Hangup, slot);
        let connection = &mut self.connections[slot];
        let fd = types::Fd(connection.fd.as_raw_fd());
        // POLLERR and POLLHUP are always reported; POLLRDHUP adds the peer's FIN.
        let entry = opcode::PollAdd::new(fd, libc::POLLRDHUP as u32).build();
        connection.hangup_armed = true;
        connection.in_flight += 1;
        self.push(sq, entry.user_data(user_data));
    }

    /// The peer hung up: a fresh recv replaces the armed one, so the rest of its bytes, its EOF
    /// or its reset is read now rather than never.
    fn hung_up(&mut self, sq: &mut SubmissionQueue<'_>, token: Token, result: i32) {
        let Some(slot) = self.connection_of(token) else {
            return;
        };
        let connection = &mut self.connections[slot];
        connection.hangup_armed = false;
        connection.in_flight -= 1;
        if result != -libc::ECANCELED
            && !connection.closing
            && connection.recv_armed
            && !connection.cancel_sent
        {
            self.cancel(sq, slot, Op::Recv);
        }
        self.rearm_or_close(sq, slot);
    }

    /// The connection in `slot` if it is still the one `token` was issued for.
    fn connection_of(&mut self, token: Token) -> Option<usize> {
        let slot = token.slot as usize;
        let connection = self.connections.get(slot)?;
        debug_assert_eq!(
            connection.generation, token.generation,
            "a stale completion"
        );
        (connection.generation == token.generation).then_some(slot)
    }

    fn received(&mut self, sq: &mut SubmissionQueue<'_>, token: Token, result: i32, flags: u32) {
        let Some(slot) = self.connection_of(token) else {
            return;
        };
        let multishot = self.options.multishot;
        let connection = &mut self.connections[slot];
        if !multishot || !cqueue::more(flags) {
            connection.recv_armed = false;
            connection.in_flight -= 1;
        }
        if result > 0 {
            let len = result as u32;
            let source = match cqueue::buffer_select(flags) {
                Some(id) => {
                    self.pool_held += 1;
                    debug_assert!(self.pool_held <= usize::from(self.config.provided_buffers));
                    Source::Pool(id)
                }
                None => Source::Own,
            };
            debug_assert_eq!(multishot, cqueue::buffer_select(flags).is_some());
            ServerCounters::add(&self.counters.bytes_received, u64::from(len));
            if self.connections[slot].closing {
                self.connections[slot].pending.push_back(Chunk {
                    source,
                    len,
                    sent: 0,
                });
                self.release_pending(slot);
            } else {
                self.reply(sq, slot, source, len);
                let connection = &self.connections[slot];
                if !connection.send_in_flight && !connection.pending.is_empty() {
                    self.send_head(sq, slot);
                }
                self.limit_backlog(sq, slot);
            }
        } else if result == -libc::ENOBUFS {
            // The pool is empty: wait for a buffer to come back, then re-arm.
            connection.starved = true;
            self.starved.push_back((slot, connection.generation));
        } else if result != -libc::ECANCELED {
            // 0 is an orderly close; anything else is the peer gone (reset) or a fault.
            if result < 0 {
                ServerCounters::add(&self.counters.connections_failed, 1);
            }
            self.start_closing(sq, slot);
        }
        self.rearm_or_close(sq, slot);
    }

    fn sent(&mut self, sq: &mut SubmissionQueue<'_>, token: Token, result: i32) {
        let Some(slot) = self.connection_of(token) else {
            return;
        };
        let connection = &mut self.connections[slot];
        connection.in_flight -= 1;
        connection.send_in_flight = false;
        if result <= 0 {
            // A send of at least one byte that moved none means the peer is gone.
            if !connection.closing {
                ServerCounters::add(&self.counters.connections_failed, 1);
            }
            self.start_closing(sq, slot);
            // Closing may have begun while this send was in flight; its chunk is free now.
            self.release_pending(slot);
            self.rearm_or_close(sq, slot);
            return;
        }
        ServerCounters::add(&self.counters.bytes_sent, result as u64);
        let head = connection.pending.front_mut().expect("a send has a chunk");
        head.sent += result as u32;
        debug_assert!(head.sent <= head.len);
        if head.sent == head.len {
            let done = connection.pending.pop_front().expect("the head");
            if let Source::Pool(buffer_id) = done.source {
                self.recycle(sq, buffer_id);
            }
        }
        let connection = &self.connections[slot];
        if connection.closing {
            self.release_pending(slot);
        } else if !connection.pending.is_empty() {
            // A short send: the rest of the head, or the next chunk, goes out next.
            self.send_head(sq, slot);
        } else if connection.close_after_send {
            // The last response is out: FIN behind it, then close once the kernel lets go.
            let _ = rustix::net::shutdown(&connection.fd, rustix::net::Shutdown::Write);
            self.start_closing(sq, slot);
        }
        self.rearm_or_close(sq, slot);
    }

    /// Queues what the protocol answers to `len` bytes just received into `source`.
    fn reply(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, source: Source, len: u32) {
        let connection = &mut self.connections[slot];
        let input = match source {
            Source::Pool(id) => {
                let pool = self.pool.as_deref().expect("multishot has a pool");
                pool.bytes(id, len as usize)
            }
            Source::Own => &connection.own_buffer[..len as usize],
            Source::Response(_) => unreachable!("responses are never received"),
        };
        let reply = self.config.proto.reply(&mut connection.session, input);
        let http = match reply {
            Reply::Input => {
                connection.pending.push_back(Chunk {
                    source,
                    len,
                    sent: 0,
                });
                return;
            }
            Reply::Http(http) => http,
        };
        let responses = self.responses.expect("HTTP has responses");
        connection.close_after_send |= http.closing.is_some();
        responses.for_each_slice(http, |of| {
            connection.pending.push_back(Chunk {
                source: Source::Response(of),
                len: responses.slice(of).len() as u32,
                sent: 0,
            });
        });
        // The request bytes are parsed (the session copied any unfinished head): the buffer
        // goes back to the pool at once.
        if let Source::Pool(buffer_id) = source {
            self.recycle(sq, buffer_id);
        }
    }

    fn chunk_bytes(&self, slot: usize, index: usize) -> &[u8] {
        let connection = &self.connections[slot];
        let chunk = connection.pending[index];
        match chunk.source {
            Source::Pool(id) => {
                let pool = self.pool.as_deref().expect("multishot has a pool");
                pool.bytes(id, chunk.len as usize)
            }
            Source::Own => &connection.own_buffer[..chunk.len as usize],
            Source::Response(of) => self.responses.expect("HTTP has responses").slice(of),
        }
    }

    /// Sends the unsent rest of the connection's first chunk.
    fn send_head(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let user_data = self.token(Op::Send, slot);
        let chunk = self.connections[slot].pending[0];
        let rest = &self.chunk_bytes(slot, 0)[chunk.sent as usize..];
        let (address, len) = (rest.as_ptr(), rest.len() as u32);
        let connection = &mut self.connections[slot];
        debug_assert!(!connection.send_in_flight && len > 0);
        let fd = types::Fd(connection.fd.as_raw_fd());
        let entry = opcode::Send::new(fd, address, len)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data);
        connection.send_in_flight = true;
        connection.in_flight += 1;
        self.push(sq, entry);
    }

    /// Cancels the multishot recv of a connection whose client does not read its echoes fast
    /// enough; `rearm_or_close` re-arms it once the queue has drained.
    fn limit_backlog(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let connection = &self.connections[slot];
        let backed_up = connection.pending.len() >= CHUNKS_PER_CONNECTION_MAX;
        if backed_up && connection.recv_armed && !connection.cancel_sent {
            self.cancel(sq, slot, Op::Recv);
        }
    }

    /// Cancels the connection's `op` (its recv or its hang-up poll).
    fn cancel(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, op: Op) {
        let target = self.token(op, slot);
        let user_data = self.token(Op::Cancel, slot);
        if op == Op::Recv {
            self.connections[slot].cancel_sent = true;
        }
        let entry = opcode::AsyncCancel::new(target)
            .build()
            .user_data(user_data);
        self.push(sq, entry);
    }

    fn start_closing(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let connection = &mut self.connections[slot];
        if connection.closing {
            return;
        }
        connection.closing = true;
        let cancel_recv =
            self.options.multishot && connection.recv_armed && !connection.cancel_sent;
        let cancel_hangup = connection.hangup_armed;
        self.release_pending(slot);
        if cancel_recv {
            self.cancel(sq, slot, Op::Recv);
        }
        if cancel_hangup {
            self.cancel(sq, slot, Op::Hangup);
        }
    }

    /// Gives back the pool buffers of a closing connection, except one a send still reads.
    fn release_pending(&mut self, slot: usize) {
        let connection = &mut self.connections[slot];
        debug_assert!(connection.closing);
        let keep = usize::from(connection.send_in_flight);
        let released: Vec<Chunk> = connection.pending.drain(keep..).collect();
        for chunk in released {
            if let Source::Pool(buffer_id) = chunk.source {
                self.recycle_quietly(buffer_id);
            }
        }
    }

    fn recycle_quietly(&mut self, buffer_id: u16) {
        let pool = self.pool.as_deref_mut().expect("multishot has a pool");
        pool.recycle(buffer_id);
        self.pool_held -= 1;
    }

    /// Returns a buffer to the pool and re-arms a connection that was starved of one.
    fn recycle(&mut self, sq: &mut SubmissionQueue<'_>, buffer_id: u16) {
        self.recycle_quietly(buffer_id);
        while let Some((slot, generation)) = self.starved.pop_front() {
            let still_waiting = self
                .connections
                .get(slot)
                .is_some_and(|c| c.generation == generation && c.starved && !c.closing);
            if still_waiting {
                self.arm_recv(sq, slot);
                return;
            }
        }
    }

    /// After a completion: re-arm the connection's recv when it may read again, or close it
    /// when it is closing and the kernel holds nothing of it.
    fn rearm_or_close(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let connection = &self.connections[slot];
        if connection.closing {
            if connection.in_flight == 0 {
                debug_assert!(connection.pending.is_empty());
                self.connections.remove(slot);
            }
            return;
        }
        let may_read = if self.options.multishot {
            connection.pending.len() <= CHUNKS_PER_CONNECTION_MAX / 2 && !connection.starved
        } else {
            // One buffer per connection: read again only once it is all sent back.
            connection.pending.is_empty()
        };
        if !connection.recv_armed && may_read && !connection.close_after_send {
            self.arm_recv(sq, slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_at_the_edges() {
        for op in [
            Op::Accept,
            Op::Recv,
            Op::Send,
            Op::Cancel,
            Op::Hangup,
            Op::Stop,
        ] {
            for (generation, slot) in [(0, 0), (GENERATION_MASK, u32::MAX), (12345, 77)] {
                let token = Token {
                    op,
                    generation,
                    slot,
                };
                assert_eq!(Token::decode(token.encode()), Some(token));
            }
        }
    }

    #[test]
    fn generations_tell_reused_slots_apart() {
        let old = Token {
            op: Op::Recv,
            generation: 1,
            slot: 5,
        };
        let new = Token {
            generation: 2,
            ..old
        };
        assert_ne!(old.encode(), new.encode());
        assert_eq!(Token::decode(0), None, "zero is no token");
    }
}
