//! Plain receive (seed 000's net_io_uring): one recv SQE at a time per connection, into the
//! connection's own buffer; the kernel's FAST_POLL waits for readiness inside the ring. With one
//! buffer per connection, a connection reads again only once all it owes is sent.

use io_uring::{cqueue, opcode, squeue, types, Submitter};

use super::receive::ReceiveStrategy;
use crate::engines::server::ServerConfig;

/// Receive buffer of each connection.
const CONNECTION_BUFFER_BYTES: usize = 16 * 1024;

pub struct OwnBufferReceive;

impl ReceiveStrategy for OwnBufferReceive {
    const MULTISHOT: bool = false;
    const POOLED: bool = false;

    fn new(_config: &ServerConfig) -> Self {
        OwnBufferReceive
    }

    unsafe fn register(&mut self, _submitter: &Submitter<'_>) -> anyhow::Result<()> {
        Ok(())
    }

    fn shared_memory(&self) -> &[u8] {
        &[]
    }

    fn connection_buffer(&self) -> Box<[u8]> {
        vec![0u8; CONNECTION_BUFFER_BYTES].into_boxed_slice()
    }

    fn arm(&self, fd: types::Fd, own: &mut [u8]) -> squeue::Entry {
        opcode::Recv::new(fd, own.as_mut_ptr(), own.len() as u32).build()
    }

    fn buffer_of(&mut self, flags: u32, _len: u32) -> Option<u16> {
        debug_assert!(cqueue::buffer_select(flags).is_none());
        Some(0)
    }

    fn buffer_bytes(&self) -> u32 {
        CONNECTION_BUFFER_BYTES as u32
    }

    fn bundled_after(&mut self, _buffer: u16) -> u16 {
        unreachable!("a recv into the connection's buffer fills that buffer alone")
    }

    fn bytes<'a>(&'a self, own: &'a [u8], _buffer: u16, len: usize) -> &'a [u8] {
        &own[..len]
    }

    fn release(&mut self, _buffer: u16) {}

    fn pool_has_room(&self) -> bool {
        true
    }

    fn received_chunks_max(&self) -> usize {
        1
    }

    fn may_read(pending: usize) -> bool {
        pending == 0
    }
}
