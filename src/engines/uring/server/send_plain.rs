//! Plain send: one `IORING_OP_SEND` of the unsent rest of a connection's first chunk, with
//! MSG_NOSIGNAL so a peer that went away is an error on this connection, not a signal.

use io_uring::{opcode, squeue, types};

use super::send::SendStrategy;

pub struct PlainSend;

impl SendStrategy for PlainSend {
    fn prepare(fd: types::Fd, bytes: &[u8]) -> squeue::Entry {
        opcode::Send::new(fd, bytes.as_ptr(), bytes.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
    }
}
