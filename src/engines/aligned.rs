//! Page-aligned memory for file engines: O_DIRECT and registered buffers take it as it is.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Alignment for O_DIRECT and registered buffers: a page.
pub const ALIGNMENT: usize = 4096;

/// A zero-initialised, page-aligned heap buffer.
pub struct AlignedBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer owns its allocation and hands out access only through `&self`/`&mut self`,
// like a `Box<[u8]>`, so moving it or sharing `&` between threads is as safe as for one.
unsafe impl Send for AlignedBuffer {}
unsafe impl Sync for AlignedBuffer {}

impl AlignedBuffer {
    pub fn zeroed(len: usize) -> AlignedBuffer {
        let layout = Layout::from_size_align(len.max(1), ALIGNMENT).expect("a valid buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuffer { ptr, len }
    }

    /// `len` random bytes from `seed`, every page touched.
    pub fn random(len: usize, seed: u64) -> AlignedBuffer {
        let mut buffer = AlignedBuffer::zeroed(len);
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut words = buffer.as_mut_slice().chunks_exact_mut(8);
        for word in &mut words {
            word.copy_from_slice(&rng.u64(..).to_ne_bytes());
        }
        for byte in words.into_remainder() {
            *byte = rng.u8(..);
        }
        buffer
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is a live allocation of len initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        let layout =
            Layout::from_size_align(self.len.max(1), ALIGNMENT).expect("a valid buffer layout");
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { dealloc(self.ptr, layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_and_random_is_reproducible() {
        let first = AlignedBuffer::random(10_000, 7);
        let second = AlignedBuffer::random(10_000, 7);
        assert_eq!(first.as_slice().as_ptr() as usize % ALIGNMENT, 0);
        assert_eq!(first.as_slice(), second.as_slice());
        assert_ne!(
            first.as_slice(),
            AlignedBuffer::random(10_000, 8).as_slice()
        );
    }
}
