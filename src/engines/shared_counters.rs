//! A server's counters in memory shared with the process that started it, so that a study can
//! read the loops' own syscall tallies at the edges of its measured window, as it reads the
//! kernel's counter there. The study makes a memfd and names it to `ringside serve` by path
//! (`--counters /proc/PID/fd/N`, which the server opens as the same file); without one the
//! counters live in anonymous memory of the server's own.
//!
//! This is what carries a plain user's syscall counts to the row: the kernel refuses its
//! syscall counter below root at the usual perf_event_paranoid (2), so the engines count their
//! own syscalls (`ServerCounters::syscalls_self`).

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::Ordering;

use rustix::mm::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};

use super::server::ServerCounters;

/// One `ServerCounters` per event loop, in shared memory.
pub struct SharedCounters {
    memory: *mut ServerCounters,
    loops: usize,
}

// SAFETY: the memory holds only atomics and is unmapped only on drop, so sharing references to
// it between threads is as safe as sharing a `&[ServerCounters]`.
unsafe impl Send for SharedCounters {}
unsafe impl Sync for SharedCounters {}

impl SharedCounters {
    /// Counters for `loops` loops in this process's own memory.
    pub fn anonymous(loops: usize) -> io::Result<SharedCounters> {
        let len = Self::bytes(loops);
        // SAFETY: a fresh mapping of `len` bytes, owned by the result until its drop.
        let memory = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
            )
        }?;
        Ok(SharedCounters {
            memory: memory.cast(),
            loops,
        })
    }

    /// Counters for `loops` loops in a new memfd, and the memfd to name to the server.
    pub fn create(loops: usize) -> io::Result<(SharedCounters, OwnedFd)> {
        let fd = rustix::fs::memfd_create("ringside-counters", rustix::fs::MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&fd, Self::bytes(loops) as u64)?;
        Ok((SharedCounters::map(&fd, loops)?, fd))
    }

    /// The counters of `loops` loops in the file at `path` (a study's memfd), which must be
    /// exactly that large.
    pub fn open(path: &Path, loops: usize) -> io::Result<SharedCounters> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        let len = file.metadata()?.len();
        if len != Self::bytes(loops) as u64 {
            return Err(io::Error::other(format!(
                "{} holds {len} bytes, not the counters of {loops} loops",
                path.display()
            )));
        }
        SharedCounters::map(&file, loops)
    }

    fn map(fd: impl AsFd, loops: usize) -> io::Result<SharedCounters> {
        // SAFETY: a fresh shared mapping of the whole file, owned by the result; zero bytes are
        // valid counters (every field is an AtomicU64).
        let memory = unsafe {
            mmap(
                std::ptr::null_mut(),
                Self::bytes(loops),
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )
        }?;
        Ok(SharedCounters {
            memory: memory.cast(),
            loops,
        })
    }

    fn bytes(loops: usize) -> usize {
        loops.max(1) * std::mem::size_of::<ServerCounters>()
    }

    /// Each loop's counters, in loop order.
    pub fn loops(&self) -> &[ServerCounters] {
        // SAFETY: the mapping holds `loops` zero-initialised or server-written counters, page
        // aligned, and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.memory, self.loops) }
    }

    /// The syscalls every loop counted so far.
    pub fn syscalls(&self) -> u64 {
        self.loops()
            .iter()
            .map(|counters| counters.syscalls_self.load(Ordering::Relaxed))
            .sum()
    }
}

impl Drop for SharedCounters {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `anonymous` or `map`, of this size; nothing borrows it
        // past `self`.
        let _ = unsafe { munmap(self.memory.cast(), Self::bytes(self.loops)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_server_and_its_study_see_the_same_counters() {
        let (study, fd) = SharedCounters::create(2).expect("a memfd");
        let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let server = SharedCounters::open(Path::new(&path), 2).expect("the memfd by path");
        ServerCounters::add(&server.loops()[0].syscalls_self, 5);
        ServerCounters::add(&server.loops()[1].syscalls_self, 2);
        assert_eq!(study.syscalls(), 7);
        assert!(SharedCounters::open(Path::new(&path), 3).is_err());
        assert_eq!(SharedCounters::anonymous(1).expect("memory").syscalls(), 0);
    }
}
