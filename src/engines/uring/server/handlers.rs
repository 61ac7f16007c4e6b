//! What each completion does to the io_uring server's state. `Server` is generic over its
//! receive and send strategies, so every call below is static and a strategy's constants fold
//! away: the plain and the multishot servers compile to the loops they would be if written by
//! hand, with nothing allocated per message (a connection's buffer and queue are made when it is
//! accepted).
//!
//! The server owns every byte its requests use (the connections' buffers and queues, the
//! receive and send strategies' memory, the idle timeout the kernel reads) and counts its
//! requests (`InFlight`), so that the teardown (`teardown.rs`, which holds the server beside its
//! ring) frees none of it while the kernel holds a request.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;

use io_uring::{cqueue, opcode, squeue, types, SubmissionQueue, Submitter};
use slab::Slab;

use super::connection::{Chunk, Connection, Source};
use super::receive::ReceiveStrategy;
use super::send::SendStrategy;
use super::socket::Socket;
use crate::engines::server::{accept_failure, AcceptFailure, AcceptPause, IdleClock};
use crate::engines::server::{ServerConfig, ServerCounters};
use crate::engines::uring::registered::Regions;
use crate::engines::uring::teardown::{HeldMemory, InFlight};
use crate::engines::uring::token::{Op, Token, GENERATION_MASK};
use crate::protocols::http::Responses;

mod pool;
mod sending;

pub struct Server<'a, R, S> {
    pub config: ServerConfig,
    counters: &'a ServerCounters,
    listener: types::Fd,
    /// The HTTP responses chunks point into (None for echo).
    responses: Option<&'static Responses>,
    pub connections: Slab<Connection>,
    /// It owns the memory receives land in (a pool, or nothing for a buffer per connection).
    pub receive: R,
    /// Connections whose receive ended for want of a pool buffer, in the order it ended.
    starved: VecDeque<(usize, u32)>,
    /// Connections whose receive is re-armed at the end of the batch, behind the starved ones.
    rearm_due: VecDeque<(usize, u32)>,
    /// SQEs that did not fit the submission queue, pushed before the next submit; a linked
    /// pair stays one entry, so a link is never split across two submissions.
    backlog: VecDeque<Linked>,
    generation_next: u32,
    /// Accepted sockets go straight into the ring's file table (direct descriptors).
    direct: bool,
    /// The buffers sends read from, registered with the ring (None: plain pointers).
    pub registered: Option<Regions>,
    /// `--idle-timeout`: its clock and its timeout (the tick of the multishot servers, the
    /// timeout linked to each recv of the one-shot one), which the kernel reads when the SQE is
    /// submitted.
    idle: Option<(IdleClock, types::Timespec)>,
    /// Connections found idle by a tick (kept, so a tick allocates nothing once grown).
    idle_found: Vec<usize>,
    /// The kernel refused the accept itself (not one connection): the server cannot go on.
    pub accept_refused: Option<std::io::Error>,
    /// Accepting stops for a while when the process runs out of fds (`AcceptPause`).
    accept_pause: AcceptPause,
    /// It owns what sends are handed from ahead of time (a send ring per connection).
    send: S,
    /// Requests the kernel holds: what the teardown waits for.
    in_flight: InFlight,
    /// Blocks for copies of received bytes (`copy_out`) that nothing reads now, for reuse.
    spare_blocks: Vec<Box<[u8]>>,
}

impl<'a, R: ReceiveStrategy, S: SendStrategy> Server<'a, R, S> {
    pub fn new(
        config: ServerConfig,
        counters: &'a ServerCounters,
        listener: types::Fd,
        (receive, send): (R, S),
        direct: bool,
    ) -> Self {
        Server {
            config,
            counters,
            listener,
            responses: config.proto.responses(),
            connections: Slab::new(),
            receive,
            starved: VecDeque::new(),
            rearm_due: VecDeque::new(),
            backlog: VecDeque::new(),
            generation_next: 0,
            direct,
            registered: None,
            idle: config.idle_timeout.map(|timeout| {
                let every = if R::MULTISHOT {
                    IdleClock::interval(timeout)
                } else {
                    timeout
                };
                (IdleClock::default(), types::Timespec::from(every))
            }),
            idle_found: Vec::new(),
            accept_refused: None,
            accept_pause: AcceptPause::default(),
            send,
            in_flight: InFlight::default(),
            spare_blocks: Vec::new(),
        }
    }

    /// Registers what the send strategy needs for the connections opened since the last call,
    /// and closes those it could not register for (counted as failed).
    pub fn register_sends(
        &mut self,
        sq: &mut SubmissionQueue<'_>,
        submitter: &Submitter<'_>,
    ) -> anyhow::Result<()> {
        // SAFETY: the server, which owns the send rings, is held beside the ring by the
        // teardown, which frees it only once the kernel holds no request (`KernelHeld`).
        let registrations = unsafe { self.send.register(submitter) }?;
        self.counters.syscalls(registrations);
        while let Some(slot) = self.send.refused() {
            ServerCounters::add(&self.counters.connections_failed, 1);
            self.start_closing(sq, slot);
        }
        Ok(())
    }

    fn push(&mut self, sq: &mut SubmissionQueue<'_>, entry: squeue::Entry) {
        self.push_linked(sq, Linked::One(entry));
    }

    fn push_linked(&mut self, sq: &mut SubmissionQueue<'_>, entries: Linked) {
        if !self.backlog.is_empty() || !entries.push_into(sq) {
            self.backlog.push_back(entries);
            return;
        }
        self.in_flight.pushed(entries.len());
    }

    /// SQEs are waiting for room in the submission queue.
    pub fn backlogged(&self) -> bool {
        !self.backlog.is_empty()
    }

    pub fn flush_backlog(&mut self, sq: &mut SubmissionQueue<'_>) {
        while let Some(entries) = self.backlog.front() {
            if !entries.push_into(sq) {
                return;
            }
            self.in_flight.pushed(entries.len());
            self.backlog.pop_front();
        }
    }

    /// Starts the idle clock's periodic tick (multishot servers with `--idle-timeout`).
    pub fn arm_tick(&mut self, sq: &mut SubmissionQueue<'_>) {
        let Some((_, every)) = &self.idle else {
            return;
        };
        if !R::MULTISHOT {
            return; // The one-shot server links a timeout to each recv instead.
        }
        let token = Token {
            op: Op::Tick,
            generation: 0,
            slot: 0,
        };
        let tick = opcode::Timeout::new(every)
            .count(0)
            .flags(types::TimeoutFlags::MULTISHOT)
            .build();
        self.push(sq, tick.user_data(token.encode()));
    }

    /// A tick of the idle clock: closes the connections silent for the idle timeout.
    fn ticked(&mut self, sq: &mut SubmissionQueue<'_>, flags: u32) {
        if !cqueue::more(flags) {
            self.arm_tick(sq);
        }
        let Some((clock, _)) = &mut self.idle else {
            return;
        };
        clock.tick(1);
        let clock = *clock;
        let mut idle = std::mem::take(&mut self.idle_found);
        idle.extend(
            self.connections
                .iter()
                .filter(|(_, c)| !c.closing && clock.expired(c.active_tick))
                .map(|(slot, _)| slot),
        );
        for &slot in &idle {
            ServerCounters::add(&self.counters.connections_idle_closed, 1);
            self.start_closing(sq, slot);
            self.rearm_or_close(sq, slot);
        }
        idle.clear();
        self.idle_found = idle;
    }

    /// Marks the connection in `slot` active now (`--idle-timeout`).
    fn mark_active(&mut self, slot: usize) {
        if let Some((clock, _)) = &self.idle {
            self.connections[slot].active_tick = clock.now();
        }
    }

    /// Polls the stop pipe, so that Ctrl-C completes a wait that has no timeout.
    pub fn arm_stop(&mut self, sq: &mut SubmissionQueue<'_>, stop: types::Fd) {
        let token = Token {
            op: Op::Stop,
            generation: 0,
            slot: 0,
        };
        let poll = opcode::PollAdd::new(stop, libc::POLLIN as u32).build();
        self.push(sq, poll.user_data(token.encode()));
    }

    pub fn arm_accept(&mut self, sq: &mut SubmissionQueue<'_>) {
        let token = Token {
            op: Op::Accept,
            generation: 0,
            slot: 0,
        };
        let entry = if R::MULTISHOT {
            opcode::AcceptMulti::new(self.listener)
                .allocate_file_index(self.direct)
                // The kernel refuses SOCK_CLOEXEC for a direct descriptor (EINVAL): it has no
                // fd to close on exec.
                .flags(if self.direct { 0 } else { libc::SOCK_CLOEXEC })
                .build()
        } else {
            debug_assert!(
                !self.direct,
                "direct descriptors come from the multishot accept"
            );
            opcode::Accept::new(self.listener, std::ptr::null_mut(), std::ptr::null_mut())
                .flags(libc::SOCK_CLOEXEC)
                .build()
        };
        self.push(sq, entry.user_data(token.encode()));
    }

    /// How long the loop's wait may last while accepting is paused (None: no limit).
    pub fn accept_pause_left(&self) -> Option<std::time::Duration> {
        self.accept_pause.left()
    }

    /// Re-arms the accept once its pause is over or a connection has closed.
    pub fn resume_accept(&mut self, sq: &mut SubmissionQueue<'_>) {
        if self.accept_pause.end_if_due(self.connections.len()) {
            self.arm_accept(sq);
        }
    }

    pub fn complete(&mut self, sq: &mut SubmissionQueue<'_>, cqe: &cqueue::Entry) {
        let token = Token::decode(cqe.user_data()).expect("every SQE carries a token");
        let (result, flags) = (cqe.result(), cqe.flags());
        self.in_flight.completed(flags);
        let slot = match token.op {
            Op::Accept => return self.accepted(sq, result, flags),
            Op::Tick => return self.ticked(sq, flags),
            // The cancelled operation reports itself with -ECANCELED.
            // The stop poll fired: the loop's condition sees the flag.
            // A direct descriptor's slot is free (its connection is gone already).
            Op::Cancel | Op::Stop | Op::Close => return,
            _ => match self.connection_of(token) {
                Some(slot) => slot,
                None => return,
            },
        };
        match token.op {
            Op::Recv => self.received(sq, slot, result, flags),
            Op::Send if S::NOTIFIES && cqueue::notif(flags) => self.notified(slot, result),
            Op::Send => self.sent(sq, slot, result, flags),
            Op::Hangup => self.hung_up(sq, slot, result),
            Op::Shutdown => self.connections[slot].in_flight -= 1,
            Op::Timeout => self.timed_out(slot),
            Op::Accept | Op::Cancel | Op::Stop | Op::Close | Op::Tick => {
                unreachable!("handled above")
            }
        }
        self.rearm_or_close(sq, slot);
    }

    fn accepted(&mut self, sq: &mut SubmissionQueue<'_>, result: i32, flags: u32) {
        // An accept the kernel refuses as such would be refused again at once: re-arming it
        // would spin, so the loop ends with the reason.
        if matches!(
            -result,
            libc::EINVAL | libc::EBADF | libc::ENOTSOCK | libc::EOPNOTSUPP
        ) {
            self.accept_refused = Some(std::io::Error::from_raw_os_error(-result));
            return;
        }
        // An error ends a multishot accept too, so it never comes with IORING_CQE_F_MORE.
        let ended = !R::MULTISHOT || !cqueue::more(flags);
        if result < 0 {
            let errno = rustix::io::Errno::from_raw_os_error(-result);
            match accept_failure(errno, self.counters) {
                // ECONNABORTED: that connection is lost, not the server.
                AcceptFailure::Retry => self.arm_accept(sq),
                // Out of fds: re-armed by `resume_accept` once the pause ends.
                AcceptFailure::Pause => self.accept_pause.start(self.connections.len()),
            }
            return;
        }
        if ended {
            self.arm_accept(sq);
        }
        let socket = if self.direct {
            Socket::Direct(result as u32)
        } else {
            // SAFETY: a successful accept CQE carries a new fd that nothing else owns.
            Socket::Fd(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(result) })
        };
        if self.connections.len() >= self.config.max_connections {
            ServerCounters::add(&self.counters.connections_refused, 1);
            self.close(sq, &socket);
            return;
        }
        ServerCounters::add(&self.counters.connections_accepted, 1);
        let generation = self.generation_next;
        self.generation_next = (self.generation_next + 1) & GENERATION_MASK;
        let own_buffer = self.receive.connection_buffer();
        let slot = self
            .connections
            .insert(Connection::new(socket, generation, own_buffer));
        self.send.opened(slot);
        self.mark_active(slot);
        self.arm_recv_in_turn(sq, slot);
        if R::MULTISHOT {
            self.arm_hangup(sq, slot);
        }
    }

    /// At stop, disconnects every connection whose zero-copy sends the kernel still holds. A
    /// notification comes only once no packet refers to the bytes, and bytes a peer never reads
    /// stay queued on its socket: the teardown would wait for them until its bound (5 s, then
    /// a leak). A stopping server owes such a peer nothing more; the reset purges the queue and
    /// the notifications come at once. Sends that copied are cancelled by the teardown.
    pub fn disconnect_zero_copy_senders(&mut self, sq: &mut SubmissionQueue<'_>) {
        if !S::NOTIFIES {
            return;
        }
        let senders: Vec<usize> = (self.connections.iter())
            .filter(|(_, connection)| connection.notifications_due > 0 || connection.send_in_flight)
            .map(|(slot, _)| slot)
            .collect();
        for slot in senders {
            let user_data = self.token(Op::Shutdown, slot);
            let entry = self.connections[slot].socket.disconnect();
            self.connections[slot].in_flight += 1;
            self.push(sq, entry.user_data(user_data));
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

    /// The connection in `token`'s slot if it is still the one `token` was issued for.
    fn connection_of(&self, token: Token) -> Option<usize> {
        let slot = token.slot as usize;
        let connection = self.connections.get(slot)?;
        debug_assert_eq!(
            connection.generation, token.generation,
            "a stale completion"
        );
        (connection.generation == token.generation).then_some(slot)
    }

    fn arm_recv(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let user_data = self.token(Op::Recv, slot);
        let connection = &mut self.connections[slot];
        debug_assert!(!connection.recv_armed && !connection.closing);
        let entry = self
            .receive
            .arm(connection.socket.target(), &mut connection.own_buffer);
        let entry = connection.socket.aim(entry);
        connection.recv_armed = true;
        connection.recv_capped = self.receive.capped();
        connection.cancel_sent = false;
        connection.queued = false;
        connection.in_flight += 1;
        let entry = entry.user_data(user_data);
        match &self.idle {
            // The one-shot recv with `--idle-timeout`: a timeout linked to it cancels it when
            // the peer stays silent that long (seed 002's linked requests).
            Some((_, timeout)) if !R::MULTISHOT => {
                let timer = opcode::LinkTimeout::new(timeout).build();
                let timer = timer.user_data(self.token(Op::Timeout, slot));
                let connection = &mut self.connections[slot];
                connection.timeout_armed = true;
                connection.in_flight += 1;
                let linked = Linked::Two([entry.flags(squeue::Flags::IO_LINK), timer]);
                self.push_linked(sq, linked);
            }
            _ => self.push(sq, entry),
        }
    }

    /// The timeout linked to a one-shot recv completed: it fired (the recv ends cancelled, and
    /// `received` closes the connection), or the recv came first and cancelled it.
    fn timed_out(&mut self, slot: usize) {
        let connection = &mut self.connections[slot];
        debug_assert!(connection.timeout_armed);
        connection.timeout_armed = false;
        connection.in_flight -= 1;
    }

    /// Watches for the peer's FIN or reset, which a stuck multishot recv may miss (module doc).
    fn arm_hangup(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let user_data = self.token(Op::Hangup, slot);
        let connection = &mut self.connections[slot];
        // POLLERR and POLLHUP are always reported; POLLRDHUP adds the peer's FIN.
        let poll = opcode::PollAdd::new(connection.socket.target(), libc::POLLRDHUP as u32);
        let entry = connection.socket.aim(poll.build());
        connection.hangup_armed = true;
        connection.in_flight += 1;
        self.push(sq, entry.user_data(user_data));
    }

    /// The peer hung up: a fresh recv replaces the armed one, so the rest of its bytes, its EOF
    /// or its reset is read now rather than never. A connection waiting for a pool buffer has no
    /// recv to replace: reset, it closes now (nothing it sent can be echoed any more, and the
    /// pool may stay dry for long); after a FIN alone its peer may still read, so it waits on.
    fn hung_up(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, result: i32) {
        let connection = &mut self.connections[slot];
        connection.hangup_armed = false;
        connection.in_flight -= 1;
        if result == -libc::ECANCELED || connection.closing {
            return;
        }
        let reset = result > 0 && result & i32::from(libc::POLLERR | libc::POLLHUP) != 0;
        if connection.recv_armed && !connection.cancel_sent {
            self.cancel(sq, slot, Op::Recv);
        } else if connection.queued && reset {
            ServerCounters::add(&self.counters.connections_failed, 1);
            self.start_closing(sq, slot);
        }
    }

    fn received(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, result: i32, flags: u32) {
        let connection = &mut self.connections[slot];
        if !R::MULTISHOT || !cqueue::more(flags) {
            connection.recv_armed = false;
            connection.in_flight -= 1;
        }
        if result > 0 {
            self.mark_active(slot);
            ServerCounters::add(&self.counters.bytes_received, result as u64);
            // One buffer, or the consecutive buffers of a bundle, each its own chunk.
            let mut rest = result as u32;
            let Some(mut buffer) = self.receive.buffer_of(flags, rest) else {
                // Thousands of connections hold chunks they could not send yet: the bytes
                // could not be kept, so this connection closes and gives its chunks back.
                ServerCounters::add(&self.counters.connections_failed, 1);
                self.start_closing(sq, slot);
                return;
            };
            loop {
                let len = rest.min(self.receive.buffer_bytes());
                rest -= len;
                // The ring says which buffer the bundle filled next only while this one is not
                // given back: giving it back (a closing connection, a parsed HTTP request)
                // writes it into a fresh ring entry, and the walk would follow stale entries.
                let next = (rest > 0).then(|| self.receive.bundled_after(buffer));
                self.received_into(sq, slot, buffer, len);
                let Some(next) = next else { break };
                buffer = next;
            }
        } else if result == -libc::ENOBUFS {
            self.starve(sq, slot);
        } else if result == -libc::EINVAL && self.connections[slot].recv_capped {
            // A kernel before the cap (6.17): `rearm_or_close` re-arms it without. Every
            // receive armed before this refusal was reaped carries the cap too, so each one's
            // refusal is a re-arm, not a failed connection.
            self.receive.drop_cap();
        } else if result == -libc::ECANCELED && !R::MULTISHOT {
            // Only its linked timeout cancels a one-shot recv: the peer was idle too long.
            ServerCounters::add(&self.counters.connections_idle_closed, 1);
            self.start_closing(sq, slot);
        } else if result != -libc::ECANCELED {
            // 0 is an orderly close; anything else is the peer gone (reset) or a fault.
            if result < 0 {
                ServerCounters::add(&self.counters.connections_failed, 1);
            }
            self.start_closing(sq, slot);
        }
    }

    /// `len` bytes received into `buffer`: answered, or given back if the connection closes.
    fn received_into(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, buffer: u16, len: u32) {
        if self.connections[slot].closing {
            let chunk = Chunk::new(Source::Received(buffer), len);
            self.connections[slot].pending.push_back(chunk);
            self.release_pending(slot);
            return;
        }
        self.reply(slot, buffer, len);
        let connection = &self.connections[slot];
        if !connection.send_in_flight && !connection.pending.is_empty() {
            self.send_head(sq, slot);
        }
        self.limit_backlog(sq, slot);
    }

    /// Frees a direct descriptor's slot (a plain fd closes when its `OwnedFd` drops).
    fn close(&mut self, sq: &mut SubmissionQueue<'_>, socket: &Socket) {
        match socket.close() {
            Some(close) => {
                let token = Token {
                    op: Op::Close,
                    generation: 0,
                    slot: 0,
                };
                self.push(sq, close.user_data(token.encode()));
            }
            None => self.counters.syscalls(1), // The plain fd's close, as it drops.
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
        let cancel_recv = R::MULTISHOT && connection.recv_armed && !connection.cancel_sent;
        let cancel_hangup = connection.hangup_armed;
        self.release_pending(slot);
        if cancel_recv {
            self.cancel(sq, slot, Op::Recv);
        }
        if cancel_hangup {
            self.cancel(sq, slot, Op::Hangup);
        }
    }

    /// After a completion: re-arm the connection's recv when it may read again, or close it
    /// when it is closing and the kernel holds nothing of it.
    fn rearm_or_close(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let connection = &self.connections[slot];
        connection.check(self.receive.received_chunks_max());
        if connection.closing {
            if connection.in_flight == 0 {
                assert!(connection.pending.is_empty() && !connection.send_in_flight);
                let connection = self.connections.remove(slot);
                self.send.closed(slot, connection.handed);
                self.close(sq, &connection.socket);
            }
            return;
        }
        if self.may_arm_recv(slot) {
            self.arm_recv_in_turn(sq, slot);
        }
    }

    /// The connection reads nothing now and may read again: not closing or about to, not
    /// queued for a pool buffer, and not holding more unsent chunks than its strategy allows.
    fn may_arm_recv(&self, slot: usize) -> bool {
        let connection = &self.connections[slot];
        !connection.recv_armed
            && !connection.closing
            && !connection.queued
            && !connection.close_after_send
            && R::may_read(connection.holding())
    }
}

impl<R: ReceiveStrategy, S: SendStrategy> HeldMemory for Server<'_, R, S> {
    fn in_flight(&mut self) -> &mut InFlight {
        &mut self.in_flight
    }

    /// The requests that wait for a peer or a clock: the accept, the stop poll, the idle
    /// tick, and each connection's receive, hang-up poll, linked timeout and send (one into a
    /// full socket waits for its peer to read).
    fn waiting(&self, user_data: &mut Vec<u64>) {
        for op in [Op::Accept, Op::Stop, Op::Tick] {
            user_data.push(
                Token {
                    op,
                    generation: 0,
                    slot: 0,
                }
                .encode(),
            );
        }
        for (slot, connection) in &self.connections {
            let armed = [
                (Op::Recv, connection.recv_armed),
                (Op::Hangup, connection.hangup_armed),
                (Op::Timeout, connection.timeout_armed),
                (Op::Send, connection.send_in_flight),
            ];
            for (op, _) in armed.into_iter().filter(|&(_, armed)| armed) {
                user_data.push(self.token(op, slot));
            }
        }
    }

    fn unregister(&mut self, submitter: &Submitter<'_>) {
        self.receive.unregister(submitter);
        self.send.unregister(submitter);
        if self.registered.is_some() {
            let _ = submitter.unregister_buffers();
        }
        if self.direct {
            let _ = submitter.unregister_files();
        }
    }

    fn describe(&self) -> String {
        format!(
            "the memory of the server's {} connections, its receive pool and its send rings",
            self.connections.len()
        )
    }
}

/// SQEs pushed together: one, or two linked ones that must reach the kernel in one submission.
enum Linked {
    One(squeue::Entry),
    Two([squeue::Entry; 2]),
}

impl Linked {
    fn len(&self) -> usize {
        match self {
            Linked::One(_) => 1,
            Linked::Two(_) => 2,
        }
    }

    /// Pushes all of it, or nothing when the queue lacks room.
    fn push_into(&self, sq: &mut SubmissionQueue<'_>) -> bool {
        // SAFETY: every entry points only at memory that outlives its completion: the server's
        // (a connection's own buffer, freed only when no op of it is in flight; the receive
        // pool; a connection's send ring; the idle timespec), which the teardown frees only
        // once the kernel holds no request (`KernelHeld`), or the static prebuilt responses.
        unsafe {
            match self {
                Linked::One(entry) => sq.push(entry).is_ok(),
                Linked::Two(entries) => sq.push_multiple(entries).is_ok(),
            }
        }
    }
}
