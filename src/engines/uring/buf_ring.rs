//! A provided-buffer ring (`IORING_REGISTER_PBUF_RING`, kernel 5.19): a pool of equal buffers
//! the kernel picks from when a receive completes, so a server need not dedicate a buffer to
//! every idle connection (seed 004's `io_uring_buf_ring_init`).
//!
//! io-uring the crate exposes only the raw registration; this is the small wrapper around it,
//! modelled on the crate's own test (`io-uring-test/src/tests/register_buf_ring.rs`). The
//! kernel takes buffers from the head of the ring; the application gives them back at the tail,
//! writing the entry first and publishing the new tail with a release store.
//!
//! Lifetime: once registered, the kernel reads the ring's entries, and writes into the buffers
//! they name, whenever a request of the ring picks one, until the group is unregistered; a
//! ring merely dropped (its fd closed) cancels its requests only later. So what lets the kernel
//! at memory is `unsafe`, with the duty written down: `register` (the entries, and a pool's
//! buffers, must outlive the kernel's use) and `RingEntries::push` (any address). The engines
//! meet it by keeping the ring in a `KernelHeld` (`teardown.rs`), whose teardown reaps every
//! request and unregisters before this memory is freed.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::Submitter;

const PAGE_BYTES: usize = 4096;

/// The ring of a provided-buffer group: `entries` slots naming buffers (address, length, id),
/// page aligned as the kernel requires, and the tail the application publishes. Who owns the
/// buffers is the user's business: the receive pool below owns them, a connection's send ring
/// (`uring/server/send_bundle.rs`) names bytes that live elsewhere.
pub struct RingEntries {
    memory: *mut BufRingEntry,
    layout: Layout,
    entries: u16,
    /// The next tail to publish; wraps as a u16, as the kernel's does.
    tail: u16,
    /// The buffer group it is registered as, until unregistered.
    group: Option<u16>,
}

impl RingEntries {
    /// `entries` empty slots (a power of two, at most 32768).
    pub fn new(entries: u16) -> RingEntries {
        assert!(entries.is_power_of_two() && entries <= 32768);
        let layout = Layout::from_size_align(
            usize::from(entries) * std::mem::size_of::<BufRingEntry>(),
            PAGE_BYTES,
        )
        .expect("a valid layout");
        // SAFETY: the layout has a non-zero size.
        let memory = unsafe { alloc_zeroed(layout) }.cast::<BufRingEntry>();
        assert!(!memory.is_null(), "out of memory for a buffer ring");
        RingEntries {
            memory,
            layout,
            entries,
            tail: 0,
            group: None,
        }
    }

    /// Registers the ring as buffer group `group` with `flags` (IOU_PBUF_RING_INC or 0); the
    /// kernel starts reading at entry 0, so the tail starts there too.
    ///
    /// # Safety
    /// From here until `unregister`, the kernel reads these entries (and, incrementally
    /// consumed, writes them) whenever a request of the ring picks a buffer of `group`: `self`
    /// must not be dropped before `unregister`, or before every request of the ring has
    /// completed. Every entry published must name memory as `push` requires.
    pub unsafe fn register(
        &mut self,
        submitter: &Submitter<'_>,
        group: u16,
        flags: u16,
    ) -> io::Result<()> {
        debug_assert!(self.group.is_none(), "registered twice");
        self.tail = 0;
        self.publish();
        // SAFETY: the entries live in `self`, which the caller keeps past the kernel's use
        // (this function's contract).
        unsafe {
            submitter.register_buf_ring_with_flags(self.memory as u64, self.entries, group, flags)
        }?;
        self.group = Some(group);
        Ok(())
    }

    /// Unregisters the ring (nothing when it is not registered): the kernel keeps no pointer
    /// into it or its buffers from here on.
    pub fn unregister(&mut self, submitter: &Submitter<'_>) -> io::Result<()> {
        match self.group.take() {
            Some(group) => submitter.unregister_buf_ring(group),
            None => Ok(()),
        }
    }

    /// Registers and at once unregisters the ring with `flags` (a trial): whether this kernel
    /// takes them.
    pub fn register_trial(&mut self, submitter: &Submitter<'_>, flags: u16) -> bool {
        const TRIAL_GROUP: u16 = u16::MAX;
        // SAFETY: no entry is published (the tail is 0), so no request can pick one, and the
        // ring is unregistered before this returns.
        let taken = unsafe { self.register(submitter, TRIAL_GROUP, flags) }.is_ok();
        taken && self.unregister(submitter).is_ok()
    }

    pub fn entries(&self) -> u16 {
        self.entries
    }

    /// The tail as the application sees it: entries pushed, published or not.
    pub fn tail(&self) -> u16 {
        self.tail
    }

    /// Writes the next entry: `len` bytes at `address`, called `id` in completions. The kernel
    /// sees it once `publish` runs.
    ///
    /// # Safety
    /// Once published, a request of the ring may write `len` bytes at `address` (a receive) or
    /// read them (a send): they must stay valid for that until the completion that consumed
    /// the entry has been reaped, the ring is unregistered, or every request of the ring has
    /// completed.
    pub unsafe fn push(&mut self, address: u64, len: u32, id: u16) {
        let index = usize::from(self.tail & (self.entries - 1));
        // SAFETY: index < entries, inside the allocation; the kernel reads this entry only
        // after the tail that covers it is published.
        let entry = unsafe { &mut *self.memory.add(index) };
        entry.set_addr(address);
        entry.set_len(len);
        entry.set_bid(id);
        self.tail = self.tail.wrapping_add(1);
    }

    /// The id in the entry at ring position `position` (wrapping).
    pub fn id_at(&self, position: u16) -> u16 {
        let index = usize::from(position & (self.entries - 1));
        // SAFETY: index < entries, inside the allocation; the kernel only reads entries.
        unsafe { &*self.memory.add(index) }.bid()
    }

    pub fn publish(&self) {
        // SAFETY: the tail field lives in entry 0's reserved word, inside the allocation; it is
        // u16-aligned and shared with the kernel, hence the atomic.
        let tail = unsafe { &*BufRingEntry::tail(self.memory).cast::<AtomicU16>() };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for RingEntries {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.memory.cast(), self.layout) };
    }
}

/// A pool of equal buffers the kernel picks from when a receive completes.
pub struct BufRing {
    ring: RingEntries,
    buffers: Box<[u8]>,
    buffer_bytes: u32,
    group: u16,
    /// The ring position each buffer was last given back at (by buffer id), to follow a bundle.
    entry_of: Box<[u16]>,
}

impl BufRing {
    /// `entries` buffers (a power of two, at most 32768) of `buffer_bytes` each, for buffer
    /// group `group`. Nothing is given to the kernel before `register`.
    pub fn new(entries: u16, buffer_bytes: u32, group: u16) -> BufRing {
        assert!(buffer_bytes > 0);
        let ring = RingEntries::new(entries);
        let buffers = vec![0u8; usize::from(entries) * buffer_bytes as usize].into_boxed_slice();
        BufRing {
            ring,
            buffers,
            buffer_bytes,
            group,
            entry_of: vec![0; usize::from(entries)].into_boxed_slice(),
        }
    }

    /// Registers the ring as buffer group `group` with `flags` (IOU_PBUF_RING_INC or 0) and
    /// hands every buffer to the kernel.
    ///
    /// # Safety
    /// The kernel writes into the buffers whenever a receive of the ring picks one: `self` must
    /// not be dropped before `unregister`, or before every request of the ring has completed.
    pub unsafe fn register(&mut self, submitter: &Submitter<'_>, flags: u16) -> io::Result<()> {
        // SAFETY: the entries live in `self` (this function's contract) and name its buffers.
        unsafe { self.ring.register(submitter, self.group, flags) }?;
        for id in 0..self.entries() {
            self.push(id);
        }
        self.ring.publish();
        Ok(())
    }

    /// Unregisters the pool: the kernel picks none of its buffers from here on.
    pub fn unregister(&mut self, submitter: &Submitter<'_>) {
        let _ = self.ring.unregister(submitter);
    }

    /// How many buffers the pool holds.
    pub fn entries(&self) -> u16 {
        self.ring.entries()
    }

    pub fn group(&self) -> u16 {
        self.group
    }

    /// Every buffer of the pool, back to back (to register them for sends).
    pub fn memory(&self) -> &[u8] {
        &self.buffers
    }

    /// The `len` bytes of buffer `id` from `offset` on, as a completion that selected it
    /// reported them (an incrementally consumed buffer's later completions start past 0).
    pub fn bytes(&self, id: u16, offset: usize, len: usize) -> &[u8] {
        assert!(id < self.entries() && offset + len <= self.buffer_bytes as usize);
        let start = usize::from(id) * self.buffer_bytes as usize + offset;
        &self.buffers[start..start + len]
    }

    /// Gives buffer `id` back to the kernel. The caller must hold no reference into it and
    /// must not have given it back already.
    pub fn recycle(&mut self, id: u16) {
        self.push(id);
        self.ring.publish();
    }

    /// The buffer the kernel took after buffer `id` for the same bundle: a bundle takes
    /// consecutive ring entries from the head, in the order they were given back, not by id.
    /// Neither `id` nor the buffers after it may have been given back since the kernel took
    /// them (the bundle holds them), so their entries still name the buffers the kernel filled.
    pub fn next_in_ring(&self, id: u16) -> u16 {
        let position = self.entry_of[usize::from(id)].wrapping_add(1);
        // The kernel takes only entries before the tail: one at or past it means `id` was
        // given back already, and the entry read would be stale.
        let behind_tail = self.ring.tail().wrapping_sub(position);
        assert!(
            (1..=self.entries()).contains(&behind_tail),
            "buffer {id} was given back before its bundle was followed past it"
        );
        let next = self.ring.id_at(position);
        assert!(next < self.entries() && next != id);
        next
    }

    fn push(&mut self, id: u16) {
        assert!(id < self.entries());
        self.entry_of[usize::from(id)] = self.ring.tail();
        let address = self.buffers.as_ptr() as u64 + u64::from(id) * u64::from(self.buffer_bytes);
        // SAFETY: buffer `id` lies inside `self.buffers`, which live as long as the ring's
        // registration (`register`'s contract); the caller gives back only buffers no one
        // reads (`recycle`).
        unsafe { self.ring.push(address, self.buffer_bytes, id) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{cqueue, opcode, squeue, types, IoUring};
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// Receives more messages than the ring has buffers, recycling each after reading it: the
    /// kernel must keep finding buffers, report ids inside the pool, and the bytes must match.
    #[test]
    fn buffers_come_back_after_recycling() {
        let Ok(mut ring) = crate::engines::uring::ring::RingSetup::with_entries(8).build() else {
            eprintln!("skipped: io_uring is not usable here");
            return;
        };
        let mut buffers = BufRing::new(4, 64, 7);
        // SAFETY: every receive is reaped below before `buffers` goes; the ring is dropped
        // first.
        unsafe { buffers.register(&ring.submitter(), 0) }.expect("register the buffer ring");
        let (mut writer, reader) = UnixStream::pair().unwrap();
        for round in 0..10u8 {
            let message = [round; 5];
            writer.write_all(&message).unwrap();
            let recv = opcode::Recv::new(types::Fd(reader.as_raw_fd()), std::ptr::null_mut(), 64)
                .buf_group(buffers.group())
                .build()
                .flags(squeue::Flags::BUFFER_SELECT)
                .user_data(u64::from(round));
            // SAFETY: the entry points into no user memory (the kernel picks the buffer).
            unsafe { ring.submission().push(&recv).unwrap() };
            ring.submit_and_wait(1).unwrap();
            let cqe = ring.completion().next().expect("a completion");
            assert_eq!(cqe.result(), 5, "round {round}");
            let id = cqueue::buffer_select(cqe.flags()).expect("a selected buffer");
            assert!(id < 4);
            assert_eq!(buffers.bytes(id, 0, 5), &message);
            buffers.recycle(id);
        }
        drop(ring);
    }

    /// A bundle receives into consecutive ring entries: after buffers came back out of order
    /// (so ids no longer follow ring order), following `next_in_ring` from each completion's
    /// first buffer must give back the bytes in the order they were sent.
    #[test]
    fn a_bundle_is_followed_through_the_ring() {
        let Ok(mut ring) = crate::engines::uring::ring::RingSetup::with_entries(8).build() else {
            eprintln!("skipped: io_uring is not usable here");
            return;
        };
        if !ring.params().is_feature_recvsend_bundle() {
            eprintln!("skipped: this kernel has no bundles");
            return;
        }
        let mut buffers = BufRing::new(8, 16, 3);
        // SAFETY: every receive is reaped (or cancelled and reaped) below before `buffers`
        // goes; the ring is dropped first.
        unsafe { buffers.register(&ring.submitter(), 0) }.unwrap();
        let (mut writer, reader) = UnixStream::pair().unwrap();
        let fd = types::Fd(reader.as_raw_fd());
        let mut receive = |ring: &mut IoUring, buffers: &mut BufRing, sent: &[u8]| {
            writer.write_all(sent).unwrap();
            let recv = opcode::RecvMultiBundle::new(fd, buffers.group()).build();
            // SAFETY: the entry points into no user memory (the kernel picks the buffers).
            unsafe { ring.submission().push(&recv.user_data(1)).unwrap() };
            let mut got = Vec::new();
            let mut ids = Vec::new();
            while got.len() < sent.len() {
                ring.submit_and_wait(1).unwrap();
                let cqe = ring.completion().next().expect("a completion");
                assert!(cqe.result() > 0, "recv failed: {}", cqe.result());
                let mut id = cqueue::buffer_select(cqe.flags()).expect("a buffer");
                let mut rest = cqe.result() as usize;
                loop {
                    let len = rest.min(16);
                    got.extend_from_slice(buffers.bytes(id, 0, len));
                    ids.push(id);
                    rest -= len;
                    if rest == 0 {
                        break;
                    }
                    id = buffers.next_in_ring(id);
                }
            }
            assert_eq!(got, sent);
            let cancel = opcode::AsyncCancel::new(1).build().user_data(2);
            // SAFETY: as above.
            unsafe { ring.submission().push(&cancel).unwrap() };
            ring.submit_and_wait(2).unwrap();
            ring.completion().for_each(drop);
            ids
        };
        let sent: Vec<u8> = (0..100u8).collect();
        let mut ids = receive(&mut ring, &mut buffers, &sent);
        ids.reverse();
        for id in ids {
            buffers.recycle(id);
        }
        let sent: Vec<u8> = (100..200u8).collect();
        receive(&mut ring, &mut buffers, &sent);
        drop(ring);
    }

    /// The kernel took buffers 0 and 1 as one bundle; once 0 is given back, its ring entry is
    /// new and no longer says that 1 followed it: the walk must refuse, not read a stale entry.
    #[test]
    #[should_panic(expected = "given back before its bundle was followed")]
    fn a_bundle_is_not_followed_past_a_buffer_given_back() {
        let mut buffers = BufRing::new(4, 16, 0);
        for id in 0..4 {
            buffers.push(id);
        }
        assert_eq!(buffers.next_in_ring(0), 1);
        buffers.recycle(0);
        buffers.next_in_ring(0);
    }

    #[test]
    #[should_panic]
    fn entries_must_be_a_power_of_two() {
        BufRing::new(3, 64, 0);
    }
}
