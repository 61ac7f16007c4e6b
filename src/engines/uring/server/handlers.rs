//! What each completion does to the io_uring server's state. `Server` is generic over its
//! receive and send strategies, so every call below is static and a strategy's constants fold
//! away: the plain and the multishot servers compile to the loops they would be if written by
//! hand, with nothing allocated per message (a connection's buffer and queue are made when it is
//! accepted).

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::os::fd::OwnedFd;

use io_uring::{cqueue, opcode, squeue, types, SubmissionQueue};
use slab::Slab;

use super::connection::{Chunk, Connection, Source};
use super::receive::ReceiveStrategy;
use super::send::SendStrategy;
use super::CHUNKS_PER_CONNECTION_MAX;
use crate::engines::server::{accept_failure, AcceptFailure, AcceptPause};
use crate::engines::server::{ServerConfig, ServerCounters};
use crate::engines::uring::token::{Op, Token, GENERATION_MASK};
use crate::protocols::http::Responses;
use crate::protocols::Reply;

pub struct Server<'a, R, S> {
    config: ServerConfig,
    counters: &'a ServerCounters,
    listener: types::Fd,
    /// The HTTP responses chunks point into (None for echo).
    responses: Option<&'static Responses>,
    pub connections: Slab<Connection>,
    /// Borrowed: it owns memory registered with the ring, so it must outlive the ring, which
    /// the caller drops first.
    receive: &'a mut R,
    /// Connections whose receive ended for want of a pool buffer, re-armed as buffers return.
    starved: VecDeque<(usize, u32)>,
    /// SQEs that did not fit the submission queue, pushed before the next submit.
    backlog: VecDeque<squeue::Entry>,
    generation_next: u32,
    /// Accepting stops for a while when the process runs out of fds (`AcceptPause`).
    accept_pause: AcceptPause,
    send: PhantomData<S>,
}

impl<'a, R: ReceiveStrategy, S: SendStrategy> Server<'a, R, S> {
    pub fn new(
        config: ServerConfig,
        counters: &'a ServerCounters,
        listener: types::Fd,
        receive: &'a mut R,
    ) -> Self {
        Server {
            config,
            counters,
            listener,
            responses: config.proto.responses(),
            connections: Slab::new(),
            receive,
            starved: VecDeque::new(),
            backlog: VecDeque::new(),
            generation_next: 0,
            accept_pause: AcceptPause::default(),
            send: PhantomData,
        }
    }

    fn push(&mut self, sq: &mut SubmissionQueue<'_>, entry: squeue::Entry) {
        // SAFETY: every entry points only at memory that outlives its completion: a
        // connection's own buffer (freed only when no op of it is in flight), pool buffers, or
        // the prebuilt responses.
        if !self.backlog.is_empty() || unsafe { sq.push(&entry) }.is_err() {
            self.backlog.push_back(entry);
        }
    }

    pub fn flush_backlog(&mut self, sq: &mut SubmissionQueue<'_>) {
        while let Some(entry) = self.backlog.front() {
            // SAFETY: as in `push`.
            if unsafe { sq.push(entry) }.is_err() {
                return;
            }
            self.backlog.pop_front();
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
                .flags(libc::SOCK_CLOEXEC)
                .build()
        } else {
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
        let slot = match token.op {
            Op::Accept => return self.accepted(sq, result, flags),
            // The cancelled operation reports itself with -ECANCELED.
            // The stop poll fired: the loop's condition sees the flag.
            Op::Cancel | Op::Stop => return,
            _ => match self.connection_of(token) {
                Some(slot) => slot,
                None => return,
            },
        };
        match token.op {
            Op::Recv => self.received(sq, slot, result, flags),
            Op::Send => self.sent(sq, slot, result),
            Op::Hangup => self.hung_up(sq, slot, result),
            Op::Accept | Op::Cancel | Op::Stop => unreachable!("handled above"),
        }
        self.rearm_or_close(sq, slot);
    }

    fn accepted(&mut self, sq: &mut SubmissionQueue<'_>, result: i32, flags: u32) {
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
        // SAFETY: a successful accept CQE carries a new fd that nothing else owns.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(result) };
        if self.connections.len() >= self.config.max_connections {
            ServerCounters::add(&self.counters.connections_refused, 1);
            return;
        }
        ServerCounters::add(&self.counters.connections_accepted, 1);
        let generation = self.generation_next;
        self.generation_next = (self.generation_next + 1) & GENERATION_MASK;
        let own_buffer = self.receive.connection_buffer();
        let slot = self
            .connections
            .insert(Connection::new(fd, generation, own_buffer));
        self.arm_recv(sq, slot);
        if R::MULTISHOT {
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
            .arm(connection.fd(), &mut connection.own_buffer);
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
        // POLLERR and POLLHUP are always reported; POLLRDHUP adds the peer's FIN.
        let entry = opcode::PollAdd::new(connection.fd(), libc::POLLRDHUP as u32).build();
        connection.hangup_armed = true;
        connection.in_flight += 1;
        self.push(sq, entry.user_data(user_data));
    }

    /// The peer hung up: a fresh recv replaces the armed one, so the rest of its bytes, its EOF
    /// or its reset is read now rather than never.
    fn hung_up(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, result: i32) {
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
    }

    fn received(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, result: i32, flags: u32) {
        let connection = &mut self.connections[slot];
        if !R::MULTISHOT || !cqueue::more(flags) {
            connection.recv_armed = false;
            connection.in_flight -= 1;
        }
        if result > 0 {
            let len = result as u32;
            let buffer = self.receive.buffer_of(flags);
            ServerCounters::add(&self.counters.bytes_received, u64::from(len));
            if self.connections[slot].closing {
                let chunk = Chunk::new(Source::Received(buffer), len);
                self.connections[slot].pending.push_back(chunk);
                self.release_pending(slot);
            } else {
                self.reply(sq, slot, buffer, len);
                let connection = &self.connections[slot];
                if !connection.send_in_flight && !connection.pending.is_empty() {
                    self.send_head(sq, slot);
                }
                self.limit_backlog(sq, slot);
            }
        } else if result == -libc::ENOBUFS {
            // The pool is empty: wait for a buffer to come back, then re-arm.
            ServerCounters::add(&self.counters.provided_buffers_exhausted, 1);
            connection.starved = true;
            self.starved.push_back((slot, connection.generation));
        } else if result != -libc::ECANCELED {
            // 0 is an orderly close; anything else is the peer gone (reset) or a fault.
            if result < 0 {
                ServerCounters::add(&self.counters.connections_failed, 1);
            }
            self.start_closing(sq, slot);
        }
    }

    fn sent(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, result: i32) {
        let connection = &mut self.connections[slot];
        debug_assert!(connection.send_in_flight);
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
            return;
        }
        ServerCounters::add(&self.counters.bytes_sent, result as u64);
        let head = connection.pending.front_mut().expect("a send has a chunk");
        head.sent += result as u32;
        debug_assert!(head.sent <= head.len);
        if head.sent == head.len {
            let done = connection.pending.pop_front().expect("the head");
            if let Source::Received(buffer) = done.source {
                self.release(sq, buffer);
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
    }

    /// Queues what the protocol answers to `len` bytes just received into `buffer`.
    fn reply(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize, buffer: u16, len: u32) {
        let connection = &mut self.connections[slot];
        let input = self
            .receive
            .bytes(&connection.own_buffer, buffer, len as usize);
        let http = match self.config.proto.reply(&mut connection.session, input) {
            Reply::Input => {
                let chunk = Chunk::new(Source::Received(buffer), len);
                connection.pending.push_back(chunk);
                return;
            }
            Reply::Http(http) => http,
        };
        let responses = self.responses.expect("HTTP has responses");
        connection.close_after_send |= http.closing.is_some();
        responses.for_each_slice(http, |of| {
            let len = responses.slice(of).len() as u32;
            connection
                .pending
                .push_back(Chunk::new(Source::Response(of), len));
        });
        // The request bytes are parsed (the session copied any unfinished head): the buffer
        // goes back at once.
        self.release(sq, buffer);
    }

    /// Sends the unsent rest of the connection's first chunk.
    fn send_head(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let user_data = self.token(Op::Send, slot);
        let connection = &self.connections[slot];
        debug_assert!(!connection.send_in_flight);
        let chunk = connection.pending[0];
        let bytes = match chunk.source {
            Source::Received(buffer) => {
                self.receive
                    .bytes(&connection.own_buffer, buffer, chunk.len as usize)
            }
            Source::Response(of) => self.responses.expect("HTTP has responses").slice(of),
        };
        let rest = &bytes[chunk.sent as usize..];
        debug_assert!(!rest.is_empty());
        let entry = S::prepare(connection.fd(), rest).user_data(user_data);
        let connection = &mut self.connections[slot];
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

    /// Gives back the receive buffers of a closing connection, except one a send still reads.
    fn release_pending(&mut self, slot: usize) {
        let connection = &mut self.connections[slot];
        debug_assert!(connection.closing);
        let keep = usize::from(connection.send_in_flight);
        for chunk in connection.pending.drain(keep..) {
            if let Source::Received(buffer) = chunk.source {
                self.receive.release(buffer);
            }
        }
    }

    /// Gives a receive buffer back and re-arms a connection that was starved of one.
    fn release(&mut self, sq: &mut SubmissionQueue<'_>, buffer: u16) {
        if !self.receive.release(buffer) {
            return;
        }
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
        connection.check(self.receive.received_chunks_max());
        if connection.closing {
            if connection.in_flight == 0 {
                assert!(connection.pending.is_empty() && !connection.send_in_flight);
                self.connections.remove(slot);
            }
            return;
        }
        let may_read = R::may_read(connection.pending.len()) && !connection.starved;
        if !connection.recv_armed && may_read && !connection.close_after_send {
            self.arm_recv(sq, slot);
        }
    }
}
