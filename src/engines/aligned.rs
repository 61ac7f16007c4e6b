//! Page-aligned memory for file engines: O_DIRECT and registered buffers take it as it is.

use rustix::mm::{mmap_anonymous, munmap, MapFlags, ProtFlags};

/// Alignment for O_DIRECT and registered buffers: a page.
pub const ALIGNMENT: usize = 4096;

/// A zero-initialised, page-aligned buffer: an anonymous mapping of its own.
pub struct AlignedBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer owns its mapping and hands out access only through `&self`/`&mut self`,
// like a `Box<[u8]>`, so moving it or sharing `&` between threads is as safe as for one.
unsafe impl Send for AlignedBuffer {}
unsafe impl Sync for AlignedBuffer {}

impl AlignedBuffer {
    /// `len` zero bytes with every page faulted in (MAP_POPULATE), so an engine's buffers cost
    /// it no first touch inside its measured loop.
    pub fn zeroed(len: usize) -> AlignedBuffer {
        AlignedBuffer::mapped(len, MapFlags::POPULATE)
    }

    /// `len` zero bytes whose pages the kernel supplies at their first touch. The allocator
    /// cannot give this: for an alignment above 16 bytes Rust's `alloc_zeroed` writes the zeros
    /// itself, and for 1 GiB that took 0.57-0.62 s here with no way to stop it.
    fn untouched(len: usize) -> AlignedBuffer {
        AlignedBuffer::mapped(len, MapFlags::empty())
    }

    fn mapped(len: usize, flags: MapFlags) -> AlignedBuffer {
        // SAFETY: a fresh private mapping (never a fixed address), owned by the result until
        // its drop unmaps it.
        let mapping = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len.max(1),
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | flags,
            )
        };
        match mapping {
            Ok(ptr) => AlignedBuffer {
                ptr: ptr.cast(),
                len,
            },
            // Out of address space or over RLIMIT_AS: as the allocator does, abort saying so.
            Err(_) => std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(len.max(1), ALIGNMENT)
                    .expect("a valid buffer layout"),
            ),
        }
    }

    /// `len` random bytes from `seed`, filled a MiB at a time on pages no one touched before,
    /// until `stop()` says to stop; the pieces after that stay zero (and unfaulted), for a
    /// stopped study uses none. In CI, the allocator's zeros and a fill that did not look at
    /// the flag held Ctrl-C off for 2.06 s; the zeros alone, for 1.52 s. The bytes do not
    /// depend on the piece size (a multiple of 8).
    pub fn random_until(len: usize, seed: u64, stop: impl Fn() -> bool) -> AlignedBuffer {
        const PIECE: usize = 1 << 20;
        let mut buffer = AlignedBuffer::untouched(len);
        let mut rng = fastrand::Rng::with_seed(seed);
        for piece in buffer.as_mut_slice().chunks_mut(PIECE) {
            if stop() {
                break;
            }
            let mut words = piece.chunks_exact_mut(8);
            for word in &mut words {
                word.copy_from_slice(&rng.u64(..).to_ne_bytes());
            }
            for byte in words.into_remainder() {
                *byte = rng.u8(..);
            }
        }
        buffer
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is a live mapping of len initialised (zero-filled) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `mapped` with this length; no slice of it outlives self.
        // munmap fails only for a range that is not a mapping, which this is.
        let _ = unsafe { munmap(self.ptr.cast(), self.len.max(1)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_and_random_is_reproducible() {
        let first = AlignedBuffer::random_until(10_000, 7, || false);
        let second = AlignedBuffer::random_until(10_000, 7, || false);
        assert_eq!(first.as_slice().as_ptr() as usize % ALIGNMENT, 0);
        assert_eq!(first.as_slice(), second.as_slice());
        assert_ne!(
            first.as_slice(),
            AlignedBuffer::random_until(10_000, 8, || false).as_slice()
        );
    }

    /// Goal: the bytes are one stream of words from the seed across pieces (a study's data is
    /// the same whatever the piece size), and a stop leaves the pieces after it zero.
    #[test]
    fn random_is_one_stream_across_pieces_and_a_stop_leaves_the_rest_zero() {
        let len = (3 << 20) + 13;
        let whole = AlignedBuffer::random_until(len, 9, || false);
        let mut rng = fastrand::Rng::with_seed(9);
        let mut expected: Vec<u8> = (0..len / 8)
            .flat_map(|_| rng.u64(..).to_ne_bytes())
            .collect();
        expected.extend((0..len % 8).map(|_| rng.u8(..)));
        assert!(whole.as_slice() == expected.as_slice());
        let pieces = std::cell::Cell::new(0);
        let stopped = AlignedBuffer::random_until(len, 9, || {
            pieces.set(pieces.get() + 1);
            pieces.get() > 2
        });
        let (filled, rest) = stopped.as_slice().split_at(2 << 20);
        assert!(filled == &expected[..2 << 20]);
        assert!(rest.iter().all(|&byte| byte == 0));
    }
}
