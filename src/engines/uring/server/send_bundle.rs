//! Send bundles (`uring-send-bundle`, IORING_RECVSEND_BUNDLE on IORING_OP_SEND, Linux 6.10, as
//! liburing's examples/proxy.c does with `-u1 -C1`): each connection has its own send ring, a
//! provided-buffer ring whose entries name the bytes it has queued (receive buffers, slices of
//! the HTTP responses), and one send SQE sends every entry from the ring's head in one
//! `sendmsg` of many segments, where a plain send carries one 8 KiB chunk and waits for its
//! completion before the next. On 6.18 a bundle completes only once every entry is sent, even
//! through a send buffer 32 times smaller (the test below); the ring is incrementally consumed
//! anyway (IOU_PBUF_RING_INC, 6.12), so that a short send, should a kernel post one, leaves the
//! unsent rest of its last entry at the head for the next send (the loop resubmits after a
//! short send) instead of counting the whole entry as consumed.
//!
//! A ring belongs to a connection slot, not to a connection: registered when a slot is first
//! used, kept while the server runs (one page each, buffer group = slot + 1), and registered
//! afresh only when a connection left unsent entries behind.

use io_uring::types::IOU_PBUF_RING_INC;
use io_uring::{opcode, squeue, types, Submitter};

use super::send::SendStrategy;
use crate::engines::server::ServerConfig;
use crate::engines::uring::buf_ring::RingEntries;

/// Entries of a connection's send ring: one page of 16-byte entries, more than the chunks a
/// connection queues before its receive pauses.
const SEND_RING_ENTRIES: u16 = 256;
/// Buffer groups are 16 bits and group 0 is the receive pool.
const SLOTS_MAX: usize = u16::MAX as usize - 1;

/// The send ring of one connection slot.
enum SlotRing {
    /// Registered and empty: the kernel's head is at our tail.
    Clean(RingEntries),
    /// Registered, with entries a closed connection never sent: register afresh before use.
    Dirty(RingEntries),
}

pub struct BundleSend {
    /// By connection slot; None until the slot is first used.
    rings: Vec<Option<SlotRing>>,
    /// Slots opened since the last `register`.
    opened: Vec<usize>,
    /// Slots whose ring the kernel would not register: their connections are to be closed.
    refused: Vec<usize>,
}

impl BundleSend {
    fn group(slot: usize) -> u16 {
        debug_assert!(slot < SLOTS_MAX);
        slot as u16 + 1
    }

    fn ring(&mut self, slot: usize) -> &mut RingEntries {
        match &mut self.rings[slot] {
            Some(SlotRing::Clean(ring)) => ring,
            _ => unreachable!("a connection's send ring is registered before it sends"),
        }
    }
}

impl SendStrategy for BundleSend {
    const NOTIFIES: bool = false;
    const BUNDLES: bool = true;

    fn new(config: &ServerConfig) -> anyhow::Result<Self> {
        anyhow::ensure!(
            config.max_connections <= SLOTS_MAX,
            "send bundles give each connection a 16-bit buffer group: --max-connections may be \
             at most {SLOTS_MAX} with this engine"
        );
        Ok(BundleSend {
            rings: Vec::new(),
            opened: Vec::new(),
            refused: Vec::new(),
        })
    }

    unsafe fn register(&mut self, submitter: &Submitter<'_>) -> anyhow::Result<u64> {
        let mut syscalls = 0;
        for slot in self.opened.drain(..) {
            if self.rings.len() <= slot {
                self.rings.resize_with(slot + 1, || None);
            }
            let group = BundleSend::group(slot);
            let mut ring = match self.rings[slot].take() {
                Some(SlotRing::Clean(ring)) => {
                    self.rings[slot] = Some(SlotRing::Clean(ring));
                    continue;
                }
                Some(SlotRing::Dirty(mut ring)) => {
                    syscalls += 1;
                    ring.unregister(submitter)?;
                    ring
                }
                None => RingEntries::new(SEND_RING_ENTRIES),
            };
            // A ring pins a page per connection: past the kernel's memory (or a locked-memory
            // limit) this one connection is refused, not the server.
            syscalls += 1;
            // SAFETY: the ring lives in `self`, which the caller keeps past the kernel's use
            // (this function's contract); its entries name what `hand` gives it.
            match unsafe { ring.register(submitter, group, IOU_PBUF_RING_INC as u16) } {
                Ok(()) => self.rings[slot] = Some(SlotRing::Clean(ring)),
                Err(_) => self.refused.push(slot),
            }
        }
        Ok(syscalls)
    }

    fn unregister(&mut self, submitter: &Submitter<'_>) {
        for slot_ring in self.rings.iter_mut().flatten() {
            let (SlotRing::Clean(ring) | SlotRing::Dirty(ring)) = slot_ring;
            let _ = ring.unregister(submitter);
        }
    }

    fn refused(&mut self) -> Option<usize> {
        self.refused.pop()
    }

    fn opened(&mut self, slot: usize) {
        self.opened.push(slot);
    }

    fn closed(&mut self, slot: usize, handed: usize) {
        if handed == 0 {
            return;
        }
        let Some(entry) = self.rings.get_mut(slot) else {
            return;
        };
        if let Some(SlotRing::Clean(ring)) = entry.take() {
            *entry = Some(SlotRing::Dirty(ring));
        }
    }

    fn hand(&mut self, slot: usize, handed: usize, bytes: &[u8]) -> bool {
        let ring = self.ring(slot);
        if handed >= usize::from(ring.entries()) {
            return false;
        }
        let id = ring.tail() & (ring.entries() - 1);
        // SAFETY: `bytes` are a queued chunk's (a receive buffer the connection holds until
        // the chunk is sent, or the static responses), and a send reads them only while the
        // connection keeps the chunk: a closing one keeps its handed chunks until its send
        // completes (`release_pending`), and the teardown reaps every send before the memory
        // goes.
        unsafe { ring.push(bytes.as_ptr() as u64, bytes.len() as u32, id) };
        true
    }

    fn prepare(
        &mut self,
        slot: usize,
        fd: types::Fd,
        _rest: &[u8],
        _registered: Option<u16>,
    ) -> squeue::Entry {
        self.ring(slot).publish();
        opcode::SendBundle::new(fd, BundleSend::group(slot))
            .flags(libc::MSG_NOSIGNAL)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::uring::ring::RingSetup;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    /// Sends four 64 KiB chunks through a send ring on a TCP connection over loopback with a
    /// 4 KiB send buffer (8 KiB once the kernel doubles it), resubmitting after any short
    /// send, as the server does: returns the bytes sent, what the peer got, and how many sends
    /// it took.
    fn send_through_ring() -> Option<(Vec<u8>, Vec<u8>, usize)> {
        let mut ring = RingSetup::with_entries(8).build().ok()?;
        if !ring.params().is_feature_recvsend_bundle() {
            return None;
        }
        let data: Vec<u8> = (0..4 * 65536u32).map(|i| (i % 251) as u8).collect();
        let mut entries = RingEntries::new(4);
        let incremental = IOU_PBUF_RING_INC as u16;
        // SAFETY: every send is reaped below, and the ring dropped, before `entries` and
        // `data` go.
        unsafe { entries.register(&ring.submitter(), 1, incremental) }.ok()?;
        for (id, chunk) in data.chunks(65536).enumerate() {
            // SAFETY: as above; the chunks are `data`'s.
            unsafe { entries.push(chunk.as_ptr() as u64, chunk.len() as u32, id as u16) };
        }
        entries.publish();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut receiver, _) = listener.accept().unwrap();
        sender.set_nodelay(true).unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&sender, 4096).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut got, mut piece) = (Vec::new(), [0u8; 4096]);
            loop {
                match receiver.read(&mut piece).unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&piece[..n]),
                }
            }
        });
        let (mut sent, mut sends) = (0usize, 0);
        while sent < data.len() && sends < 100_000 {
            let send = opcode::SendBundle::new(types::Fd(sender.as_raw_fd()), 1).build();
            // SAFETY: the ring's entries point into `data`, alive until the loop ends.
            unsafe { ring.submission().push(&send.user_data(1)).unwrap() };
            ring.submit_and_wait(1).unwrap();
            let cqe = ring.completion().next().expect("a completion");
            if cqe.result() <= 0 {
                break; // The ring ran dry: entries counted as consumed before they were sent.
            }
            sent += cqe.result() as usize;
            sends += 1;
        }
        drop(sender);
        let got = reader.join().unwrap();
        drop(ring);
        Some((data, got, sends))
    }

    /// A send bundle through a socket buffer far smaller than what its ring holds, the way the
    /// server submits it, must deliver every byte once and in order. (On 6.18 it takes one
    /// send: the kernel completes a bundle only once every entry is sent.)
    #[test]
    fn a_bundle_delivers_every_byte_through_a_small_socket_buffer() {
        let Some((data, got, sends)) = send_through_ring() else {
            eprintln!("skipped: no bundles or incremental buffer rings here");
            return;
        };
        eprintln!("{} bytes in {sends} sends", data.len());
        assert_eq!(got.len(), data.len());
        assert!(got == data, "bytes differ");
    }
}
