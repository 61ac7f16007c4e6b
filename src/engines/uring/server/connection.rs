//! One connection of the io_uring server: its fd, what the kernel holds of it, and the chunks it
//! still has to send, in order. `check` states the loop's invariants in one place; the loop
//! asserts them after every completion it handles (in debug builds: they cost a few branches per
//! message).

use std::collections::VecDeque;

use super::socket::Socket;
use crate::protocols::http::{ServerSession, SliceOf};

/// Where the bytes of a chunk live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The receive buffer that received them (the strategy's buffer id), sent as they came
    /// (echo).
    Received(u16),
    /// A slice of the prebuilt HTTP responses, which outlive every connection.
    Response(SliceOf),
    /// Received bytes moved out of the shared pool into the connection's `copied` queue (the
    /// pool ran dry while they waited behind a send), by sequence number: `copied_front` names
    /// the first.
    Copied(u32),
}

/// Bytes queued to send and not yet all sent.
#[derive(Clone, Copy, Debug)]
pub struct Chunk {
    pub source: Source,
    pub len: u32,
    pub sent: u32,
}

impl Chunk {
    pub fn new(source: Source, len: u32) -> Chunk {
        debug_assert!(len > 0);
        Chunk {
            source,
            len,
            sent: 0,
        }
    }
}

pub struct Connection {
    pub socket: Socket,
    pub generation: u32,
    /// Operations of this connection the kernel still holds; the fd closes only at zero.
    pub in_flight: u32,
    pub recv_armed: bool,
    /// The armed (or last) receive carries the strategy's cap, which a kernel may refuse.
    pub recv_capped: bool,
    /// The multishot strategies' poll for the peer hanging up is armed.
    pub hangup_armed: bool,
    pub send_in_flight: bool,
    /// A timeout is linked to the armed one-shot receive (`--idle-timeout`).
    pub timeout_armed: bool,
    /// A cancel of the armed receive is on its way.
    pub cancel_sent: bool,
    /// In a queue for its turn at the shared pool (`handlers/pool.rs`): its receive ended with
    /// ENOBUFS, or it is re-armed at the end of the batch of completions.
    pub queued: bool,
    pub closing: bool,
    /// The protocol ended the connection: close once the queued output is sent.
    pub close_after_send: bool,
    pub session: ServerSession,
    /// The receive strategy's per-connection buffer (empty when bytes land in a shared pool).
    pub own_buffer: Box<[u8]>,
    /// Chunks to send, in order; the head is the one a send in flight reads.
    pub pending: VecDeque<Chunk>,
    /// Chunks at the head of `pending` handed to the kernel's send ring and not yet sent
    /// (send bundles; zero otherwise). A closing connection may have given their buffers back.
    pub handed: usize,
    /// Zero-copy notifications still to come for sends of this connection.
    pub notifications_due: u32,
    /// Receive buffers sent with zero copy, given back once `notifications_due` is zero.
    pub held: Vec<u16>,
    /// The idle clock's tick when the connection last received or sent (`--idle-timeout`).
    pub active_tick: u32,
    /// The blocks of the `Copied` chunks queued, in their order: each a block of its own, so
    /// one a send reads stays put while others come and go.
    pub copied: VecDeque<Box<[u8]>>,
    /// The sequence number of `copied`'s first block.
    pub copied_front: u32,
}

impl Connection {
    /// Chunks the connection holds: queued to send, and received buffers sent with zero copy
    /// whose notification is still due. Both count against its reading, so a peer that never
    /// reads cannot take the shared pool: its zero-copy sends complete while the bytes sit
    /// in its socket, and the notifications, with the buffers, come only once it reads.
    pub fn holding(&self) -> usize {
        self.pending.len() + self.held.len()
    }

    pub fn new(socket: Socket, generation: u32, own_buffer: Box<[u8]>) -> Connection {
        Connection {
            socket,
            generation,
            in_flight: 0,
            recv_armed: false,
            recv_capped: false,
            hangup_armed: false,
            send_in_flight: false,
            timeout_armed: false,
            cancel_sent: false,
            queued: false,
            closing: false,
            close_after_send: false,
            session: ServerSession::default(),
            own_buffer,
            pending: VecDeque::new(),
            handed: 0,
            notifications_due: 0,
            held: Vec::new(),
            active_tick: 0,
            copied: VecDeque::new(),
            copied_front: 0,
        }
    }

    /// The loop's invariants for one connection:
    /// - one send in flight at most (two sends on one socket may complete out of order), and
    ///   only with a chunk to read from;
    /// - the kernel holds at least the operations the flags say are armed, and the fd closes
    ///   only when it holds none (checked where the connection is removed);
    /// - a closing connection arms nothing new;
    /// - `received_chunks_max` bounds the received chunks queued (the receive strategy's
    ///   buffers: one for an own buffer, the pool for a shared one);
    /// - buffers sent with zero copy are held only while a notification is due;
    /// - the `Copied` chunks queued name the copied blocks in order, one each.
    pub fn check(&self, received_chunks_max: usize) {
        if !cfg!(debug_assertions) {
            return;
        }
        debug_assert!(!self.send_in_flight || !self.pending.is_empty());
        let armed = u32::from(self.recv_armed)
            + u32::from(self.hangup_armed)
            + u32::from(self.send_in_flight)
            + u32::from(self.timeout_armed)
            + self.notifications_due;
        debug_assert!(self.in_flight >= armed, "{} < {armed}", self.in_flight);
        debug_assert!(!(self.queued && self.recv_armed));
        let received = self
            .pending
            .iter()
            .filter(|chunk| matches!(chunk.source, Source::Received(_)))
            .count();
        debug_assert!(received <= received_chunks_max, "{received} chunks queued");
        debug_assert!(self.held.is_empty() || self.notifications_due > 0);
        debug_assert!(self.pending.iter().all(|chunk| chunk.sent < chunk.len));
        debug_assert!(self.closing || self.handed <= self.pending.len());
        let copied = self.pending.iter().filter_map(|chunk| match chunk.source {
            Source::Copied(sequence) => Some(sequence),
            _ => None,
        });
        let mut count = 0u32;
        for sequence in copied {
            debug_assert_eq!(
                sequence,
                self.copied_front.wrapping_add(count),
                "out of order"
            );
            count += 1;
        }
        debug_assert_eq!(
            count as usize,
            self.copied.len(),
            "a copied block per chunk"
        );
    }

    /// The `len` bytes of the `Copied` chunk numbered `sequence`.
    pub fn copied_bytes(&self, sequence: u32, len: u32) -> &[u8] {
        &self.copied[sequence.wrapping_sub(self.copied_front) as usize][..len as usize]
    }

    /// The chunk queued at `at` now names `block`, which holds a copy of its bytes.
    pub fn hold_copy(&mut self, at: usize, block: Box<[u8]>) {
        let sequence = self.copied_front.wrapping_add(self.copied.len() as u32);
        self.copied.push_back(block);
        self.pending[at].source = Source::Copied(sequence);
    }

    /// The first copied block is sent: it goes.
    pub fn copied_sent(&mut self) -> Box<[u8]> {
        self.copied_front = self.copied_front.wrapping_add(1);
        self.copied.pop_front().expect("a copied block")
    }
}
