//! Multishot receive (seed 004): one multishot recv per connection, which takes buffers from a
//! registered provided-buffer ring (`buf_ring.rs`) shared by every connection, so an idle
//! connection holds no buffer. Bytes are sent straight from the buffer that received them, and
//! the buffer goes back to the ring once all its bytes are sent. The kernel may end a multishot
//! (no IORING_CQE_F_MORE: out of buffers, an error, a full CQ); the loop re-arms it.
//!
//! `BundleReceive` (`uring-bundle`, Linux 6.10) is the same receive as a bundle
//! (IORING_RECVSEND_BUNDLE): when more bytes wait than one buffer holds, one completion
//! reports every buffer it filled, taken in ring order from the first one it names. Left to
//! itself a bundle takes every byte queued on the socket, as many buffers as the pool has, long
//! before the loop's cancel for a connection with too many unsent chunks lands: after
//! tcpkali's run one connection held 735 of 1024 buffers, and with `--work 100us` new streams
//! waited over 2 s for a buffer. So each completion is capped at the chunks one connection may
//! hold (`CHUNKS_PER_CONNECTION_MAX`) by the multishot receive's per-invocation cap (its SQE's
//! length), which also ends the kernel's retries on that socket for the round, so the other
//! sockets' receives get their turn. The cap is Linux 6.17's: kernel commit 6a8afb9fff64
//! ("io_uring/net: allow multishot receive per-invocation cap", in the io_uring pull for
//! 6.17-rc1, tag for-6.17/io_uring-20250728); liburing's test/recv-mshot-fair.c (3e68abb) was
//! written "based on code slated for 6.17". Before it the kernel refuses a multishot receive
//! with a length (EINVAL, as the 6.10-6.16 bundle kernels do), and the receives go on uncapped.

use io_uring::{cqueue, opcode, squeue, types, Submitter};

use super::receive::ReceiveStrategy;
use super::CHUNKS_PER_CONNECTION_MAX;
use crate::engines::server::ServerConfig;
use crate::engines::uring::buf_ring::BufRing;

/// Size of each buffer of the shared pool (`--provided-buffers` of them).
const POOL_BUFFER_BYTES: u32 = 8 * 1024;
const POOL_GROUP: u16 = 0;

pub struct MultishotReceive<const BUNDLE: bool = false> {
    pool: BufRing,
    /// Pool buffers held by connections (received, not yet sent).
    held: usize,
    /// The bytes one bundle completion may hold (0: none, or the kernel refused the cap).
    bundle_cap: u32,
}

/// Multishot receive bundles: one completion for every buffer a receive filled.
pub type BundleReceive = MultishotReceive<true>;

impl<const BUNDLE: bool> ReceiveStrategy for MultishotReceive<BUNDLE> {
    const MULTISHOT: bool = true;
    const POOLED: bool = true;

    fn new(config: &ServerConfig) -> Self {
        let pool = BufRing::new(config.provided_buffers, POOL_BUFFER_BYTES, POOL_GROUP);
        let bundle_cap = if BUNDLE {
            CHUNKS_PER_CONNECTION_MAX as u32 * POOL_BUFFER_BYTES
        } else {
            0
        };
        MultishotReceive {
            pool,
            held: 0,
            bundle_cap,
        }
    }

    unsafe fn register(&mut self, submitter: &Submitter<'_>) -> anyhow::Result<()> {
        // SAFETY: the pool lives in `self`, which the caller keeps as long as the ring may pick
        // its buffers (this function's contract).
        Ok(unsafe { self.pool.register(submitter, 0) }?)
    }

    fn unregister(&mut self, submitter: &Submitter<'_>) {
        self.pool.unregister(submitter);
    }

    fn shared_memory(&self) -> &[u8] {
        self.pool.memory()
    }

    fn connection_buffer(&self) -> Box<[u8]> {
        Box::default()
    }

    fn arm(&self, fd: types::Fd, _own: &mut [u8]) -> squeue::Entry {
        if BUNDLE {
            let entry = opcode::RecvMultiBundle::new(fd, self.pool.group()).build();
            with_len(entry, self.bundle_cap)
        } else {
            opcode::RecvMulti::new(fd, self.pool.group()).build()
        }
    }

    fn buffer_of(&mut self, flags: u32, _len: u32) -> Option<u16> {
        let id = cqueue::buffer_select(flags).expect("a multishot recv selects a buffer");
        self.held += 1;
        debug_assert!(self.held <= usize::from(self.pool.entries()));
        Some(id)
    }

    fn buffer_bytes(&self) -> u32 {
        POOL_BUFFER_BYTES
    }

    fn bundled_after(&mut self, buffer: u16) -> u16 {
        debug_assert!(BUNDLE, "only a bundle fills more than one buffer");
        self.held += 1;
        debug_assert!(self.held <= usize::from(self.pool.entries()));
        self.pool.next_in_ring(buffer)
    }

    fn capped(&self) -> bool {
        self.bundle_cap > 0
    }

    fn drop_cap(&mut self) {
        self.bundle_cap = 0;
    }

    fn bytes<'a>(&'a self, _own: &'a [u8], buffer: u16, len: usize) -> &'a [u8] {
        self.pool.bytes(buffer, 0, len)
    }

    fn release(&mut self, buffer: u16) {
        debug_assert!(self.held > 0);
        self.pool.recycle(buffer);
        self.held -= 1;
    }

    /// Every buffer not held by a connection is in the ring.
    fn pool_has_room(&self) -> bool {
        self.held < usize::from(self.pool.entries())
    }

    fn received_chunks_max(&self) -> usize {
        usize::from(self.pool.entries())
    }

    /// Half the cap, so a paused connection resumes with room to read before it pauses again.
    fn may_read(pending: usize) -> bool {
        pending <= CHUNKS_PER_CONNECTION_MAX / 2
    }
}

/// `entry` with its length field set: io-uring the crate builds a multishot receive with none.
fn with_len(entry: squeue::Entry, len: u32) -> squeue::Entry {
    /// Where the kernel's `struct io_uring_sqe` keeps `len` (uapi, stable since 5.1).
    const LEN_OFFSET: usize = 24;
    const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
    let mut entry = entry;
    // SAFETY: `Entry` is `#[repr(C)]` around the kernel's 64-byte SQE, in which `len` is the
    // u32 at byte 24; the write stays inside the entry and replaces a plain integer.
    unsafe {
        let raw = std::ptr::addr_of_mut!(entry).cast::<u8>();
        raw.add(LEN_OFFSET).cast::<u32>().write_unaligned(len);
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// With more bytes queued than the cap, every completion of a capped receive bundle holds at
    /// most the cap, and together they hold every byte: the length written into the SQE is the
    /// one the kernel reads as the multishot receive's cap.
    #[test]
    fn a_capped_bundle_holds_no_more_than_its_cap() {
        const BUFFER: u32 = 16;
        const CAP: u32 = 4 * BUFFER;
        let Ok(mut ring) = crate::engines::uring::ring::RingSetup::with_entries(64).build() else {
            eprintln!("skipped: io_uring is not usable here");
            return;
        };
        if !ring.params().is_feature_recvsend_bundle() {
            eprintln!("skipped: this kernel has no bundles");
            return;
        }
        let mut pool = BufRing::new(64, BUFFER, 5);
        // SAFETY: every byte written is received and reaped below; nothing more arrives for
        // the receive still armed when the ring is dropped, before `pool`.
        unsafe { pool.register(&ring.submitter(), 0) }.unwrap();
        let (mut writer, reader) = UnixStream::pair().unwrap();
        let sent = [7u8; 512];
        writer.write_all(&sent).unwrap();
        let recv = opcode::RecvMultiBundle::new(types::Fd(reader.as_raw_fd()), pool.group());
        let recv = with_len(recv.build(), CAP).user_data(1);
        // SAFETY: the entry points into no user memory (the kernel picks the buffers).
        unsafe { ring.submission().push(&recv).unwrap() };
        let mut got = 0;
        while got < sent.len() {
            ring.submit_and_wait(1).unwrap();
            let cqe = ring.completion().next().expect("a completion");
            if cqe.result() == -libc::EINVAL && got == 0 {
                eprintln!("skipped: this kernel has no multishot receive cap");
                drop(ring);
                return;
            }
            assert!(cqe.result() > 0, "recv failed: {}", cqe.result());
            assert!(
                cqe.result() as u32 <= CAP,
                "{} bytes past the cap",
                cqe.result()
            );
            got += cqe.result() as usize;
            assert!(
                cqueue::more(cqe.flags()),
                "the cap ended the multishot receive"
            );
        }
        assert_eq!(got, sent.len());
        drop(ring);
    }
}
