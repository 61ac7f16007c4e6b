//! Buffers registered with a ring (IORING_REGISTER_BUFFERS), and which registered buffer a
//! slice lies in: `WriteFixed`/`ReadFixed` and sends from registered buffers name it by index,
//! so the kernel skips pinning and mapping the pages on every operation.

use std::time::Duration;

use io_uring::Submitter;

/// How long a registration the kernel refused for want of locked memory (ENOMEM) waits before
/// it is tried once more: the kernel releases a dropped ring's charge (an exited server's, or a
/// file study's previous run's) a moment after it is dropped. Measured here: a server started
/// at once after another was refused, one started 20 ms later was not.
pub const PIN_RELEASE_WAIT: Duration = Duration::from_millis(100);

/// The largest buffer the kernel registers in one iovec is 1 GiB; stay well under it.
const REGION_BYTES_MAX: usize = 256 << 20;

/// The registered regions (start, length), in registration order (a region's index is its
/// buffer index).
#[derive(Debug, Default)]
pub struct Regions {
    regions: Vec<(usize, usize)>,
}

impl Regions {
    /// Registers `buffers` (split into regions the kernel accepts) with the ring.
    ///
    /// # Safety
    /// The buffers must outlive the ring's use of them: the caller drops the ring (or
    /// unregisters) before it frees them.
    pub unsafe fn register(
        submitter: &Submitter<'_>,
        buffers: &[&[u8]],
    ) -> std::io::Result<Regions> {
        let mut regions = Vec::new();
        let mut iovecs = Vec::new();
        for buffer in buffers.iter().filter(|buffer| !buffer.is_empty()) {
            for chunk in buffer.chunks(REGION_BYTES_MAX) {
                regions.push((chunk.as_ptr() as usize, chunk.len()));
                iovecs.push(libc::iovec {
                    iov_base: chunk.as_ptr() as *mut _,
                    iov_len: chunk.len(),
                });
            }
        }
        assert!(iovecs.len() <= usize::from(u16::MAX), "too many regions");
        // SAFETY: the caller keeps the buffers alive as long as the ring uses them.
        unsafe { submitter.register_buffers(&iovecs) }?;
        Ok(Regions { regions })
    }

    /// The bytes registered.
    pub fn bytes(&self) -> u64 {
        self.regions.iter().map(|&(_, len)| len as u64).sum()
    }

    /// The index of the registered buffer that holds all of `bytes`.
    pub fn index_of(&self, bytes: &[u8]) -> u16 {
        let (start, len) = (bytes.as_ptr() as usize, bytes.len());
        let index = self
            .regions
            .iter()
            .position(|&(region, region_len)| start >= region && start + len <= region + region_len)
            .expect("the bytes lie inside one registered region");
        index as u16
    }
}
