//! The receive strategy of the io_uring server: how a connection's bytes arrive. A strategy
//! says which SQE arms a receive, where the received bytes live, when they can be given back,
//! and when a connection may read again. The loop (`handlers.rs`) is generic over it, so each
//! completion is dispatched statically and a strategy's constants fold away. A new way to
//! receive is one file implementing this trait and one row of
//! the engine table.

use io_uring::{squeue, types, Submitter};

use crate::engines::server::ServerConfig;

pub trait ReceiveStrategy: Sized {
    /// One multishot SQE receives for many completions (and one multishot accept takes every
    /// connection). The loop then cancels it to pause or close a connection, and watches for the
    /// peer hanging up beside it (a multishot receive may stay armed after a reset; see the
    /// server's module doc). A one-shot receive ends with its completion.
    const MULTISHOT: bool;

    /// Receives take buffers from a pool every connection shares, which can run short: the
    /// loop then decides whose turn it is (`handlers/pool.rs`).
    const POOLED: bool;

    /// Sets up the strategy's memory (nothing is given to the kernel yet).
    fn new(config: &ServerConfig) -> Self;

    /// Registers the memory the kernel picks buffers from, if any, with the ring.
    ///
    /// # Safety
    /// Once registered, the kernel writes into that memory whenever a receive of the ring picks
    /// a buffer: the strategy must not be dropped while the ring may still run one, that is
    /// before `unregister`, or before every request of the ring has completed (the server is
    /// held by `KernelHeld`, whose teardown does both before it frees it).
    unsafe fn register(&mut self, submitter: &Submitter<'_>) -> anyhow::Result<()>;

    /// Unregisters what `register` registered (the teardown calls it once the kernel holds no
    /// request of the ring).
    fn unregister(&mut self, _submitter: &Submitter<'_>) {}

    /// The memory received bytes land in that the ring can register for sends (empty: none,
    /// as with a buffer per connection).
    fn shared_memory(&self) -> &[u8];

    /// The buffer a new connection receives into (empty when the bytes land elsewhere). Made
    /// once per connection, never per message.
    fn connection_buffer(&self) -> Box<[u8]>;

    /// The SQE that arms a receive on `fd`; `own` is the connection's own buffer.
    fn arm(&self, fd: types::Fd, own: &mut [u8]) -> squeue::Entry;

    /// The receives `arm` makes carry a cap that a kernel may lack (`receive_multishot.rs`).
    fn capped(&self) -> bool {
        false
    }

    /// The kernel refused a capped receive with EINVAL: receives are armed without the cap from
    /// now on.
    fn drop_cap(&mut self) {}

    /// The buffer that holds the `len` bytes of a receive completion with `flags` (the first
    /// of them, for a bundle): a pool buffer's id, or the strategy's handle for part of one.
    /// None when the strategy cannot name one more held chunk: the bytes are dropped, and the
    /// loop closes their connection (which gives its held chunks back) instead of panicking.
    fn buffer_of(&mut self, flags: u32, len: u32) -> Option<u16>;

    /// How many bytes one buffer holds: a completion of more filled the buffers after the
    /// first (a bundle).
    fn buffer_bytes(&self) -> u32;

    /// The buffer a bundle filled after `buffer`.
    fn bundled_after(&mut self, buffer: u16) -> u16;

    /// The `len` bytes buffer `buffer` received; `own` is the connection's own buffer.
    fn bytes<'a>(&'a self, own: &'a [u8], buffer: u16, len: usize) -> &'a [u8];

    /// Gives `buffer` back once nothing reads it any more.
    fn release(&mut self, buffer: u16);

    /// Whether the kernel may find a buffer in the pool now, as far as the completions reaped
    /// so far tell. Never false while it could (it can only have taken more, for completions
    /// not reaped yet), so connections that found the pool empty wait for a buffer back only
    /// while this is false. True for a strategy without a pool: it never runs out.
    fn pool_has_room(&self) -> bool;

    /// How many received chunks one connection can hold queued: the bound on its memory.
    fn received_chunks_max(&self) -> usize;

    /// Whether a connection with `pending` chunks still to send may read again.
    fn may_read(pending: usize) -> bool;

    /// A queued chunk holds a whole pool buffer however few bytes it has (an incrementally
    /// consumed buffer is shared by the slices of many connections), so when the pool runs dry
    /// the chunks queued behind sends move out of it (`copy_queued`): else a few peers that do
    /// not read hold every buffer, each with fewer chunks than pause its reading, and nobody
    /// else can read.
    const COPIES_BACKLOG: bool = false;

    /// How many buffers the shared pool has (0 without one): the copies' spare blocks are
    /// kept up to as many.
    fn received_buffers(&self) -> usize {
        0
    }
}
