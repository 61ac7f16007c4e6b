//! Forced io-wq receive (`uring-async`, netty's io_uring transport past its IOSQE_ASYNC
//! threshold): the plain receive of `receive_own_buffer.rs`, each recv SQE flagged
//! IOSQE_ASYNC, so the kernel does not try it inline or arm a poll (FAST_POLL) but hands it to
//! an io-wq worker that blocks in the recv until bytes arrive. Every connection waiting to be
//! read then holds a worker thread: the cost netty measured as 1300% CPU
//! (netty-incubator-transport-io_uring#106), counted here as io-wq workers, their CPU and punts.

use io_uring::{squeue, types, Submitter};

use super::receive::ReceiveStrategy;
use super::receive_own_buffer::OwnBufferReceive;
use crate::engines::server::ServerConfig;

pub struct AsyncReceive(OwnBufferReceive);

impl ReceiveStrategy for AsyncReceive {
    const MULTISHOT: bool = OwnBufferReceive::MULTISHOT;
    const POOLED: bool = OwnBufferReceive::POOLED;

    fn new(config: &ServerConfig) -> Self {
        AsyncReceive(OwnBufferReceive::new(config))
    }

    unsafe fn register(&mut self, submitter: &Submitter<'_>) -> anyhow::Result<()> {
        // SAFETY: the caller keeps this strategy, and so the one it wraps, as `register` asks.
        unsafe { self.0.register(submitter) }
    }

    fn unregister(&mut self, submitter: &Submitter<'_>) {
        self.0.unregister(submitter)
    }

    fn shared_memory(&self) -> &[u8] {
        self.0.shared_memory()
    }

    fn connection_buffer(&self) -> Box<[u8]> {
        self.0.connection_buffer()
    }

    fn arm(&self, fd: types::Fd, own: &mut [u8]) -> squeue::Entry {
        self.0.arm(fd, own).flags(squeue::Flags::ASYNC)
    }

    fn buffer_of(&mut self, flags: u32, len: u32) -> Option<u16> {
        self.0.buffer_of(flags, len)
    }

    fn buffer_bytes(&self) -> u32 {
        self.0.buffer_bytes()
    }

    fn bundled_after(&mut self, buffer: u16) -> u16 {
        self.0.bundled_after(buffer)
    }

    fn bytes<'a>(&'a self, own: &'a [u8], buffer: u16, len: usize) -> &'a [u8] {
        self.0.bytes(own, buffer, len)
    }

    fn release(&mut self, buffer: u16) {
        self.0.release(buffer)
    }

    fn pool_has_room(&self) -> bool {
        self.0.pool_has_room()
    }

    fn received_chunks_max(&self) -> usize {
        self.0.received_chunks_max()
    }

    fn may_read(pending: usize) -> bool {
        OwnBufferReceive::may_read(pending)
    }
}
