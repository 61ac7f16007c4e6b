//! The send strategy of the io_uring server: the SQE that sends what a connection has queued.
//! The loop keeps one send in flight per connection and resubmits the rest after a short send,
//! whatever the strategy. A new way to send is one file implementing this trait and one row of
//! the engine table.

use io_uring::{squeue, types, Submitter};

use crate::engines::server::ServerConfig;

pub trait SendStrategy: Sized {
    /// A send that moved bytes posts a second completion, a notification, once the kernel no
    /// longer reads them (zero-copy): the bytes stay untouched until then, not only until the
    /// send completes.
    const NOTIFIES: bool;

    /// Chunks are handed to the kernel ahead of the send (`hand`), and one send carries every
    /// chunk handed (a bundle); a completion with IORING_CQE_F_MORE means it goes on sending.
    const BUNDLES: bool;

    fn new(config: &ServerConfig) -> anyhow::Result<Self>;

    /// Registers with the ring what the connections opened since the last call need, and
    /// says how many syscalls that took. The loop calls it before every submit, so a
    /// connection's first send finds it registered.
    ///
    /// # Safety
    /// What is registered is memory of the strategy's that the kernel reads and writes while a
    /// send of the ring runs: the strategy must not be dropped before `unregister`, or before
    /// every request of the ring has completed (`KernelHeld`'s teardown does both first).
    unsafe fn register(&mut self, _submitter: &Submitter<'_>) -> anyhow::Result<u64> {
        Ok(0)
    }

    /// Unregisters what `register` registered (once the kernel holds no request of the ring).
    fn unregister(&mut self, _submitter: &Submitter<'_>) {}

    /// A connection whose registration the kernel refused (e.g. out of memory), once each:
    /// the loop closes it and keeps serving the others.
    fn refused(&mut self) -> Option<usize> {
        None
    }

    /// A connection opened in `slot`.
    fn opened(&mut self, _slot: usize) {}

    /// The connection in `slot` is gone, the kernel holding none of its operations, with
    /// `handed` chunks handed and never sent.
    fn closed(&mut self, _slot: usize, _handed: usize) {}

    /// Hands `bytes` to the kernel behind the `handed` chunks handed before; false when there
    /// is no room (or the strategy hands nothing ahead).
    fn hand(&mut self, _slot: usize, _handed: usize, _bytes: &[u8]) -> bool {
        false
    }

    /// The SQE that sends on the connection in `slot` (socket `fd`): `rest`, the unsent rest of
    /// its first chunk (in registered buffer `registered`, when the row registers buffers), or
    /// every chunk handed.
    fn prepare(
        &mut self,
        slot: usize,
        fd: types::Fd,
        rest: &[u8],
        registered: Option<u16>,
    ) -> squeue::Entry;
}
