//! Sending: what a connection's queue of chunks becomes on the wire (plain sends, bundles,
//! zero-copy sends and their notifications), and what the protocol answers to the bytes received.

use io_uring::{cqueue, SubmissionQueue};

use super::Server;
use crate::engines::server::ServerCounters;
use crate::engines::uring::server::connection::{Chunk, Connection, Source};
use crate::engines::uring::server::receive::ReceiveStrategy;
use crate::engines::uring::server::send::SendStrategy;
use crate::engines::uring::server::send_zero_copy::NOTIF_USAGE_ZC_COPIED;
use crate::engines::uring::server::CHUNKS_PER_CONNECTION_MAX;
use crate::engines::uring::token::Op;
use crate::protocols::http::Responses;
use crate::protocols::Reply;

impl<R: ReceiveStrategy, S: SendStrategy> Server<'_, R, S> {
    pub(super) fn sent(
        &mut self,
        sq: &mut SubmissionQueue<'_>,
        slot: usize,
        result: i32,
        flags: u32,
    ) {
        let connection = &mut self.connections[slot];
        debug_assert!(connection.send_in_flight);
        // A bundle that goes on sending what its ring holds stays in flight.
        let continues = S::BUNDLES && cqueue::more(flags);
        connection.send_in_flight = continues;
        // A zero-copy send's notification is still to come: the kernel holds it until then.
        if S::NOTIFIES && cqueue::more(flags) {
            connection.notifications_due += 1;
        } else if !continues {
            connection.in_flight -= 1;
        }
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
        if let Some((clock, _)) = &self.idle {
            connection.active_tick = clock.now();
        }
        // The bytes went out in chunk order: a plain send's within the head, a bundle's across
        // the chunks handed to it.
        let mut rest = result as u32;
        while rest > 0 {
            let connection = &mut self.connections[slot];
            let head = connection.pending.front_mut().expect("a send has a chunk");
            let now = rest.min(head.len - head.sent);
            head.sent += now;
            rest -= now;
            if head.sent < head.len {
                break;
            }
            let done = connection.pending.pop_front().expect("the head");
            if S::BUNDLES {
                debug_assert!(connection.handed > 0, "a bundle sends only chunks handed");
                connection.handed -= 1;
            }
            match done.source {
                Source::Received(buffer) if connection.notifications_due > 0 => {
                    connection.held.push(buffer);
                }
                Source::Received(buffer) => self.receive.release(buffer),
                Source::Copied(_) => {
                    let block = connection.copied_sent();
                    self.spare(block);
                }
                Source::Response(_) => {}
            }
        }
        debug_assert_eq!(rest, 0, "sent more than was queued");
        if continues {
            return; // Its next completion says what else went out.
        }
        if S::NOTIFIES {
            self.limit_backlog(sq, slot);
        }
        let connection = &self.connections[slot];
        if connection.closing {
            self.release_pending(slot);
        } else if !connection.pending.is_empty() {
            // A short send: the rest of the head, or the next chunk, goes out next.
            self.send_head(sq, slot);
        } else if connection.close_after_send {
            // The last response is out: FIN behind it, then close once the kernel lets go.
            match connection.socket.shutdown_write() {
                Some(shutdown) => {
                    let user_data = self.token(Op::Shutdown, slot);
                    self.connections[slot].in_flight += 1;
                    self.push(sq, shutdown.user_data(user_data));
                }
                None => self.counters.syscalls(1), // shutdown(2) on the plain fd.
            }
            self.start_closing(sq, slot);
        }
    }

    /// A zero-copy send's notification: the kernel no longer reads the bytes of one send. When
    /// none is due any more, the buffers those sends read go back.
    pub(super) fn notified(&mut self, slot: usize, result: i32) {
        if result as u32 & NOTIF_USAGE_ZC_COPIED != 0 {
            ServerCounters::add(&self.counters.zero_copy_copied, 1);
        }
        ServerCounters::add(&self.counters.zero_copy_notifications, 1);
        let connection = &mut self.connections[slot];
        debug_assert!(connection.notifications_due > 0);
        connection.notifications_due -= 1;
        connection.in_flight -= 1;
        if connection.notifications_due > 0 {
            return;
        }
        while let Some(buffer) = self.connections[slot].held.pop() {
            self.receive.release(buffer);
        }
    }

    /// Queues what the protocol answers to `len` bytes just received into `buffer`.
    pub(super) fn reply(&mut self, slot: usize, buffer: u16, len: u32) {
        let connection = &mut self.connections[slot];
        let input = self
            .receive
            .bytes(&connection.own_buffer, buffer, len as usize);
        // HTTP's answers are queued as they are decided, slices of the prebuilt responses.
        let responses = self.responses;
        let pending = &mut connection.pending;
        let reply = self
            .config
            .proto
            .reply(&mut connection.session, input, &mut |of| {
                let bytes = responses.expect("HTTP has responses").slice(of);
                pending.push_back(Chunk::new(Source::Response(of), bytes.len() as u32));
            });
        let http = match reply {
            Reply::Input => {
                let chunk = Chunk::new(Source::Received(buffer), len);
                connection.pending.push_back(chunk);
                return;
            }
            Reply::Http(http) => http,
        };
        connection.close_after_send |= http.closing.is_some();
        // The request bytes are parsed (the session copied any unfinished head): the buffer
        // goes back at once.
        self.receive.release(buffer);
    }

    /// Sends the unsent rest of the connection's first chunk, or, with bundles, every chunk
    /// queued that fits the connection's send ring.
    pub(super) fn send_head(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let user_data = self.token(Op::Send, slot);
        let connection = &mut self.connections[slot];
        debug_assert!(!connection.send_in_flight);
        if S::BUNDLES {
            while connection.handed < connection.pending.len() {
                let chunk = connection.pending[connection.handed];
                let rest = unsent(&self.receive, self.responses, connection, chunk);
                if !self.send.hand(slot, connection.handed, rest) {
                    break;
                }
                connection.handed += 1;
            }
            debug_assert!(connection.handed > 0);
        }
        let chunk = connection.pending[0];
        let rest = unsent(&self.receive, self.responses, connection, chunk);
        let registered = self
            .registered
            .as_ref()
            .map(|regions| regions.index_of(rest));
        let send = self
            .send
            .prepare(slot, connection.socket.target(), rest, registered);
        let entry = connection.socket.aim(send).user_data(user_data);
        let connection = &mut self.connections[slot];
        connection.send_in_flight = true;
        connection.in_flight += 1;
        self.push(sq, entry);
    }

    /// Cancels the multishot recv of a connection whose client does not read its echoes fast
    /// enough (its chunks queued, or sent with zero copy and not yet notified: `holding`);
    /// `rearm_or_close` re-arms it once they have gone.
    pub(super) fn limit_backlog(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let connection = &self.connections[slot];
        let backed_up = connection.holding() >= CHUNKS_PER_CONNECTION_MAX;
        if backed_up && connection.recv_armed && !connection.cancel_sent {
            self.cancel(sq, slot, Op::Recv);
        }
    }

    /// Moves the received chunks the connection in `slot` queued out of the shared pool into
    /// blocks of its own (`ReceiveStrategy::COPIES_BACKLOG`), all but the one a send reads, and
    /// gives their buffers back. The chunks keep their order, since every chunk queued behind
    /// a copied one is copied too.
    pub(super) fn copy_out(&mut self, slot: usize) {
        debug_assert!(
            !S::BUNDLES && !S::NOTIFIES,
            "a send may read any queued chunk"
        );
        let reading = usize::from(self.connections[slot].send_in_flight);
        for at in reading..self.connections[slot].pending.len() {
            let chunk = self.connections[slot].pending[at];
            let Source::Received(buffer) = chunk.source else {
                continue;
            };
            let block_bytes = self.receive.buffer_bytes() as usize;
            let mut block = (self.spare_blocks.pop())
                .unwrap_or_else(|| vec![0; block_bytes].into_boxed_slice());
            let (connection, len) = (&mut self.connections[slot], chunk.len as usize);
            block[..len].copy_from_slice(self.receive.bytes(&connection.own_buffer, buffer, len));
            connection.hold_copy(at, block);
            self.receive.release(buffer);
            ServerCounters::add(&self.counters.pool_bytes_copied, u64::from(chunk.len));
        }
    }

    /// A copied block nothing reads any more: kept for the next copy while the blocks kept
    /// hold fewer bytes than the pool (a burst of copies costs no lasting memory beyond it).
    pub(super) fn spare(&mut self, block: Box<[u8]>) {
        if self.spare_blocks.len() < self.receive.received_buffers() {
            self.spare_blocks.push(block);
        }
    }
}

/// The bytes of `chunk` not sent yet: in a receive buffer (or the connection's `own` buffer), or
/// in the prebuilt HTTP responses.
fn unsent<'b, R: ReceiveStrategy>(
    receive: &'b R,
    responses: Option<&'static Responses>,
    connection: &'b Connection,
    chunk: Chunk,
) -> &'b [u8] {
    let bytes = match chunk.source {
        Source::Received(buffer) => {
            receive.bytes(&connection.own_buffer, buffer, chunk.len as usize)
        }
        Source::Response(of) => responses.expect("HTTP has responses").slice(of),
        Source::Copied(sequence) => connection.copied_bytes(sequence, chunk.len),
    };
    let rest = &bytes[chunk.sent as usize..];
    debug_assert!(!rest.is_empty());
    rest
}
