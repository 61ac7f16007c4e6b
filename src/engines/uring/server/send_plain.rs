//! Plain send: one `IORING_OP_SEND` of the unsent rest of a connection's first chunk, with
//! MSG_NOSIGNAL so a peer that went away is an error on this connection, not a signal. When the
//! row registers buffers (`uring-fixed-bufs`), the send names the registered buffer that holds
//! the bytes (IORING_RECVSEND_FIXED_BUF), so the kernel skips pinning and mapping the pages.

use io_uring::{opcode, squeue, types};

use super::send::SendStrategy;
use crate::engines::server::ServerConfig;

/// IORING_RECVSEND_FIXED_BUF, in the SQE's ioprio: `buf_index` names a registered buffer.
const RECVSEND_FIXED_BUF: u16 = 1 << 2;
/// Where `buf_index` sits in the 64-byte SQE (struct io_uring_sqe, a stable kernel ABI).
const SQE_BUF_INDEX_OFFSET: usize = 40;

pub struct PlainSend;

impl SendStrategy for PlainSend {
    const NOTIFIES: bool = false;
    const BUNDLES: bool = false;

    fn new(_config: &ServerConfig) -> anyhow::Result<Self> {
        Ok(PlainSend)
    }

    fn prepare(
        &mut self,
        _slot: usize,
        fd: types::Fd,
        bytes: &[u8],
        registered: Option<u16>,
    ) -> squeue::Entry {
        let send =
            opcode::Send::new(fd, bytes.as_ptr(), bytes.len() as u32).flags(libc::MSG_NOSIGNAL);
        match registered {
            None => send.build(),
            Some(index) => with_buf_index(send.ioprio(RECVSEND_FIXED_BUF).build(), index),
        }
    }
}

/// Sets the SQE's `buf_index`, which io-uring 0.7.15's `Send` builder has no setter for.
fn with_buf_index(entry: squeue::Entry, index: u16) -> squeue::Entry {
    const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
    // SAFETY: `squeue::Entry` is `#[repr(C)]` around the kernel's 64-byte io_uring_sqe, plain
    // data for which every bit pattern is valid.
    let mut bytes = unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(entry) };
    bytes[SQE_BUF_INDEX_OFFSET..SQE_BUF_INDEX_OFFSET + 2].copy_from_slice(&index.to_ne_bytes());
    // SAFETY: as above.
    unsafe { std::mem::transmute::<[u8; 64], squeue::Entry>(bytes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte this writes is the one the crate's own `SendZc::buf_index` writes.
    #[test]
    fn buf_index_lands_where_the_crate_puts_it() {
        let bytes = [0u8; 8];
        let zc = opcode::SendZc::new(types::Fd(3), bytes.as_ptr(), 8)
            .buf_index(Some(0x1234))
            .build();
        let send = PlainSend.prepare(0, types::Fd(3), &bytes, Some(0x1234));
        // SAFETY: plain data, as in `with_buf_index`.
        let as_bytes = |entry| unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(entry) };
        let (zc, send) = (as_bytes(zc), as_bytes(send));
        let at = SQE_BUF_INDEX_OFFSET..SQE_BUF_INDEX_OFFSET + 2;
        assert_eq!(zc[at.clone()], send[at]);
        assert_eq!(u16::from_ne_bytes([send[2], send[3]]), RECVSEND_FIXED_BUF);
    }
}
