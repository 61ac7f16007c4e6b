//! Multishot receive from an incrementally consumed buffer ring (`uring-recv-inc`,
//! IOU_PBUF_RING_INC, Linux 6.12): the pool holds few large buffers, and a completion takes
//! only the bytes it received from the buffer at the ring's head. The kernel advances that
//! ring entry past them and keeps the buffer (IORING_CQE_F_BUF_MORE in the flags), so the next
//! completion naming the same buffer id, of this connection or another, continues at the byte
//! after. Only a completion without BUF_MORE says the kernel is done with the buffer.
//!
//! So one buffer holds the slices of many completions. The loop names a received chunk by a
//! u16; here that is a handle into a table of slices (buffer, offset), made at start. A buffer
//! goes back to the ring once the kernel is done with it and no queued chunk uses it.

use io_uring::types::IOU_PBUF_RING_INC;
use io_uring::{cqueue, opcode, squeue, types, Submitter};

use super::receive::ReceiveStrategy;
use super::CHUNKS_PER_CONNECTION_MAX;
use crate::engines::server::ServerConfig;
use crate::engines::uring::buf_ring::BufRing;

/// Size of each pool buffer: large, so one buffer takes a whole 64 KiB message.
const POOL_BUFFER_BYTES: u32 = 64 * 1024;
/// `--provided-buffers` counts 8 KiB buffers (the other pools'); this pool has as many bytes
/// in fewer, larger buffers.
const COUNTED_BUFFER_BYTES: u32 = 8 * 1024;
const POOL_GROUP: u16 = 0;

pub struct IncrementalReceive {
    pool: BufRing,
    slices: Slices,
}

impl ReceiveStrategy for IncrementalReceive {
    const MULTISHOT: bool = true;
    const POOLED: bool = true;

    fn new(config: &ServerConfig) -> Self {
        let per_buffer = (POOL_BUFFER_BYTES / COUNTED_BUFFER_BYTES) as u16;
        let entries = (config.provided_buffers / per_buffer).max(1);
        IncrementalReceive {
            pool: BufRing::new(entries, POOL_BUFFER_BYTES, POOL_GROUP),
            slices: Slices::new(entries),
        }
    }

    unsafe fn register(&mut self, submitter: &Submitter<'_>) -> anyhow::Result<()> {
        // SAFETY: the pool lives in `self`, which the caller keeps as long as the ring may pick
        // its buffers (this function's contract).
        Ok(unsafe { self.pool.register(submitter, IOU_PBUF_RING_INC as u16) }?)
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
        opcode::RecvMulti::new(fd, self.pool.group()).build()
    }

    fn buffer_of(&mut self, flags: u32, len: u32) -> Option<u16> {
        let id = cqueue::buffer_select(flags).expect("a multishot recv selects a buffer");
        match self.slices.take(id, len, cqueue::buffer_more(flags)) {
            Taken::Slice(handle) => Some(handle),
            Taken::Dropped { recycle } => {
                if recycle {
                    self.pool.recycle(id);
                }
                None
            }
        }
    }

    /// A completion never spans buffers (no bundles), so the loop makes one chunk of it.
    fn buffer_bytes(&self) -> u32 {
        POOL_BUFFER_BYTES
    }

    fn bundled_after(&mut self, _buffer: u16) -> u16 {
        unreachable!("a receive without bundles fills part of one buffer")
    }

    fn bytes<'a>(&'a self, _own: &'a [u8], handle: u16, len: usize) -> &'a [u8] {
        let slice = self.slices.slice(handle);
        self.pool.bytes(slice.buffer, slice.offset as usize, len)
    }

    fn release(&mut self, handle: u16) {
        if let Some(id) = self.slices.release(handle) {
            self.pool.recycle(id);
        }
    }

    /// A buffer stays in the ring, partly consumed, until the kernel lets go of it.
    fn pool_has_room(&self) -> bool {
        self.slices.let_go < self.slices.buffers.len()
    }

    fn received_chunks_max(&self) -> usize {
        self.slices.table.len()
    }

    /// Half the cap, so a paused connection resumes with room to read before it pauses again.
    fn may_read(pending: usize) -> bool {
        pending <= CHUNKS_PER_CONNECTION_MAX / 2
    }

    /// Eight peers that do not read held every buffer of a 2 MiB pool (32 buffers): a newcomer
    /// went unanswered in 5 of 5 tries, against 0 of 5 for `uring-defer` with the same bytes
    /// in 8 KiB buffers, since a slice pins 64 KiB. Copying only a connection whose reading
    /// was paused (8 chunks) still failed 3 of 10: four chunks each of eight peers fill 32.
    const COPIES_BACKLOG: bool = true;

    fn received_buffers(&self) -> usize {
        usize::from(self.pool.entries())
    }
}

/// Handles a u16 can name: the bound on received chunks held at once across connections.
const SLICES_MAX: usize = u16::MAX as usize;

/// Where a handle's bytes start.
#[derive(Clone, Copy, Default)]
struct Slice {
    buffer: u16,
    offset: u32,
}

/// What became of a completion's bytes.
#[derive(Debug, PartialEq)]
enum Taken {
    /// A handle names them.
    Slice(u16),
    /// Every handle was in use, so they are dropped; `recycle`: their buffer may go back to
    /// the ring (the kernel let go of it and no handle names it).
    Dropped { recycle: bool },
}

/// What the kernel and the queued chunks do with one pool buffer.
#[derive(Clone, Copy, Default)]
struct Buffer {
    /// Bytes the kernel has filled: where its next completion for this buffer starts.
    consumed: u32,
    /// Handles naming a slice of it.
    users: u32,
    /// A completion without BUF_MORE named it: the kernel writes no more into it.
    kernel_done: bool,
}

/// The table of received slices: handles, each buffer's consumed offset and users.
struct Slices {
    table: Box<[Slice]>,
    /// Handles not in use; taken from the end.
    free: Vec<u16>,
    buffers: Box<[Buffer]>,
    /// Buffers the kernel let go of and not yet back in the ring.
    let_go: usize,
}

impl Slices {
    fn new(buffers: u16) -> Slices {
        Slices {
            table: vec![Slice::default(); SLICES_MAX].into_boxed_slice(),
            free: (0..SLICES_MAX as u16).rev().collect(),
            buffers: vec![Buffer::default(); usize::from(buffers)].into_boxed_slice(),
            let_go: 0,
        }
    }

    /// Records a completion of `len` bytes in buffer `id`, which the kernel keeps when `more`
    /// (BUF_MORE): a handle to the slice at the buffer's consumed offset. The kernel may cut a
    /// buffer into any number of slices, so the handles can run out (more chunks held at once
    /// than a u16 names, e.g. thousands of connections that do not read their echoes); then
    /// the bytes are dropped, and the buffer's offset still moves past them.
    fn take(&mut self, id: u16, len: u32, more: bool) -> Taken {
        let buffer = &mut self.buffers[usize::from(id)];
        debug_assert!(
            !buffer.kernel_done,
            "a completion for a buffer the kernel let go"
        );
        debug_assert!(buffer.consumed + len <= POOL_BUFFER_BYTES);
        let offset = buffer.consumed;
        buffer.consumed += len;
        buffer.kernel_done = !more;
        self.let_go += usize::from(!more);
        let Some(handle) = self.free.pop() else {
            let recycle = buffer.kernel_done && buffer.users == 0;
            if recycle {
                *buffer = Buffer::default();
                self.let_go -= 1;
            }
            return Taken::Dropped { recycle };
        };
        self.table[usize::from(handle)] = Slice { buffer: id, offset };
        buffer.users += 1;
        Taken::Slice(handle)
    }

    fn slice(&self, handle: u16) -> Slice {
        self.table[usize::from(handle)]
    }

    /// Drops `handle`'s use of its buffer: the buffer's id when it may go back to the ring
    /// (the kernel let go of it and no handle names it any more).
    fn release(&mut self, handle: u16) -> Option<u16> {
        self.free.push(handle);
        let id = self.table[usize::from(handle)].buffer;
        let buffer = &mut self.buffers[usize::from(id)];
        debug_assert!(buffer.users > 0);
        buffer.users -= 1;
        if buffer.users > 0 || !buffer.kernel_done {
            return None;
        }
        *buffer = Buffer::default();
        self.let_go -= 1;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handle, where the test knows one is free.
    fn handle(taken: Taken) -> u16 {
        match taken {
            Taken::Slice(handle) => handle,
            Taken::Dropped { .. } => panic!("no handle left"),
        }
    }

    /// Completions continue in one buffer at the byte after the last, each its own handle;
    /// the buffer comes back only once the kernel let go of it and every handle is released,
    /// in whatever order.
    #[test]
    fn a_buffer_comes_back_after_the_kernel_and_every_slice_let_go() {
        let mut slices = Slices::new(2);
        let a = handle(slices.take(1, 100, true));
        let b = handle(slices.take(1, 50, true));
        let other = handle(slices.take(0, 10, true));
        assert_ne!(a, b);
        assert_eq!((slices.slice(a).buffer, slices.slice(a).offset), (1, 0));
        assert_eq!((slices.slice(b).buffer, slices.slice(b).offset), (1, 100));
        assert_eq!(
            (slices.slice(other).buffer, slices.slice(other).offset),
            (0, 0)
        );
        // Every user gone, but the kernel still owns the rest of buffer 1.
        assert_eq!(slices.release(a), None);
        assert_eq!(slices.release(b), None);
        // The kernel's last completion for buffer 1 (no BUF_MORE) starts after the others.
        let last = handle(slices.take(1, 7, false));
        assert_eq!(slices.slice(last).offset, 150);
        assert_eq!(
            slices.let_go, 1,
            "buffer 1 is out of the ring until its slice goes"
        );
        assert_eq!(slices.release(last), Some(1));
        assert_eq!(slices.let_go, 0);
        // Recycled, it starts again at 0; one user still holds it after the kernel let go.
        let again = handle(slices.take(1, 8, false));
        let held = handle(slices.take(0, 5, false));
        assert_eq!(slices.slice(again).offset, 0);
        assert_eq!(slices.slice(held).offset, 10);
        assert_eq!(slices.release(again), Some(1));
        assert_eq!(slices.release(held), None);
        assert_eq!(slices.let_go, 1, "buffer 0, let go with a slice still held");
        assert_eq!(slices.release(other), Some(0));
        assert_eq!(slices.let_go, 0);
        assert_eq!(slices.free.len(), SLICES_MAX);
    }

    /// With every handle holding a chunk, a completion's bytes are dropped (the loop then
    /// closes their connection) instead of a panic, the buffer's offset still moves past them,
    /// and a buffer the kernel let go with no handle on it goes back to the ring.
    #[test]
    fn bytes_no_handle_can_name_are_dropped_and_their_buffer_still_comes_back() {
        let mut slices = Slices::new(2);
        let first = handle(slices.take(0, 1, true));
        let handles: Vec<u16> = (1..SLICES_MAX)
            .map(|_| handle(slices.take(0, 0, true)))
            .collect();
        assert_eq!(slices.take(0, 10, true), Taken::Dropped { recycle: false });
        assert_eq!(slices.buffers[0].consumed, 11);
        assert_eq!(slices.take(1, 10, false), Taken::Dropped { recycle: true });
        assert_eq!(
            slices.buffers[1].consumed, 0,
            "recycled, it starts again at 0"
        );
        assert_eq!(slices.release(first), None);
        let next = handle(slices.take(0, 5, true));
        assert_eq!(slices.slice(next).offset, 11);
        for held in handles.into_iter().chain([next]) {
            slices.release(held);
        }
        assert_eq!(slices.free.len(), SLICES_MAX);
    }
}
