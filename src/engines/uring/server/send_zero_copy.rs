//! Zero-copy send (`IORING_OP_SEND_ZC`, 6.0): the kernel sends from the registered buffer that
//! holds the bytes instead of copying them into socket buffers, and posts two completions: the
//! send's result (with IORING_CQE_F_MORE), then a notification (IORING_CQE_F_NOTIF) once no
//! packet refers to the bytes any more. The loop holds a received buffer until every
//! notification of its connection has come. IORING_SEND_ZC_REPORT_USAGE makes a notification
//! say whether the kernel had to copy after all (`zero_copy_copied`): loopback delivers to a
//! local socket, which must not pin the sender's pages, so it copies there.

use io_uring::{opcode, squeue, types};

use super::send::SendStrategy;
use crate::engines::server::ServerConfig;

/// IORING_SEND_ZC_REPORT_USAGE: the notification's result says whether the bytes were copied.
const SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// IORING_NOTIF_USAGE_ZC_COPIED, in a notification's result.
pub const NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;

pub struct ZeroCopySend;

impl SendStrategy for ZeroCopySend {
    const NOTIFIES: bool = true;
    const BUNDLES: bool = false;

    fn new(_config: &ServerConfig) -> anyhow::Result<Self> {
        Ok(ZeroCopySend)
    }

    fn prepare(
        &mut self,
        _slot: usize,
        fd: types::Fd,
        bytes: &[u8],
        registered: Option<u16>,
    ) -> squeue::Entry {
        opcode::SendZc::new(fd, bytes.as_ptr(), bytes.len() as u32)
            .buf_index(registered)
            .flags(libc::MSG_NOSIGNAL)
            .zc_flags(SEND_ZC_REPORT_USAGE)
            .build()
    }
}
