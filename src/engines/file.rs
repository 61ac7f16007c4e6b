//! The interface of a file engine: the two file workloads as plain jobs (`WriteJob`,
//! `CycleJob`), what a run of one returns (`FileOutcome`), and the trait each engine implements
//! with its own API calls. The studies in `studies/fs/` own the file, the data, the runs and
//! the verification; an engine owns only its calls and its measured loop.

use std::os::fd::BorrowedFd;

use crate::measure::{Measured, Meter, PoolThreads};
use crate::row::Tally;

/// One sequential write of `data` into an open file, `block_size` bytes per operation.
pub struct WriteJob<'a> {
    pub file: BorrowedFd<'a>,
    pub data: &'a [u8],
    pub block_size: usize,
    /// In-flight operations for the io_uring engines.
    pub depth: u32,
    /// Threads of the `threads` engine's pool (None: as many as `depth`).
    pub threads: Option<u32>,
    /// fsync the file (with the engine's own API) before the clock stops.
    pub fsync_end: bool,
    /// Stop early (Ctrl-C or the runtime cap) once this returns true; checked between blocks.
    pub should_stop: &'a dyn Fn() -> bool,
}

/// The page cycle over an open file: for page i, write `data[page i]`, fsync, read it back into
/// a buffer and compare.
pub struct CycleJob<'a> {
    pub file: BorrowedFd<'a>,
    pub data: &'a [u8],
    pub page_size: usize,
    /// Chains in flight for the io_uring engines.
    pub depth: u32,
    /// Threads of the `threads` engine's pool (None: as many as `depth`).
    pub threads: Option<u32>,
    /// fdatasync instead of fsync.
    pub datasync: bool,
    pub should_stop: &'a dyn Fn() -> bool,
}

/// Reads of single blocks of a file laid out with `stamp`, in the order `blocks` gives (shuffled
/// for random reads), each into a block-sized buffer and checked against its stamp.
pub struct ReadJob<'a> {
    pub file: BorrowedFd<'a>,
    /// The index of the block each read fetches, in order.
    pub blocks: &'a [u32],
    pub block_size: usize,
    /// Reads in flight: the ring's depth, the pool's threads, libaio's queue.
    pub depth: u32,
    /// Threads of the `threads` engine's pool (None: as many as `depth`).
    pub threads: Option<u32>,
    pub stamp: Stamp,
    /// The access advice the file was given (random or sequential, as fio's `fadvise_hint`),
    /// for an engine that opens the file again: advice belongs to one open file description.
    pub advice: rustix::fs::Advice,
    /// Stop early (Ctrl-C or the runtime cap) once this returns true; checked between reads.
    pub should_stop: &'a dyn Fn() -> bool,
}

/// What every block of the read study's file carries: its index, keyed by the study's seed, in
/// its first and its last 8 bytes, so a read of the wrong block, a short read or a block torn
/// between two writes fails the check, for two 8-byte compares per read.
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    key: u64,
}

impl Stamp {
    /// The smallest block a stamp fits in (and the study accepts).
    pub const MIN_BLOCK: usize = 16;

    pub fn new(seed: u64) -> Stamp {
        Stamp {
            key: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x7269_6e67_7369_6465,
        }
    }

    fn word(self, block: u32) -> [u8; 8] {
        (self.key ^ u64::from(block)).to_le_bytes()
    }

    /// Stamps `data` (block `block` of the file).
    pub fn write(self, data: &mut [u8], block: u32) {
        assert!(data.len() >= Self::MIN_BLOCK, "a block too small to stamp");
        let word = self.word(block);
        let end = data.len();
        data[..8].copy_from_slice(&word);
        data[end - 8..].copy_from_slice(&word);
    }

    /// Whether `data` is block `block` as laid out.
    pub fn matches(self, data: &[u8], block: u32) -> bool {
        let word = self.word(block);
        data.len() >= Self::MIN_BLOCK && data[..8] == word && data[data.len() - 8..] == word
    }
}

/// What a file engine did: what it measured, its tally, pages (or blocks) whose read-back
/// differed, and (page cycle, reads) each operation's latency.
#[derive(Clone, Debug)]
pub struct FileOutcome {
    pub measured: Measured,
    pub tally: Tally,
    pub mismatches: u64,
    /// The page cycle's latency per page: from its write (blocking) or from queueing its linked
    /// chain (io_uring) to its read's completion. None for the write workload.
    pub latency_ns: Option<hdrhistogram::Histogram<u64>>,
    /// What the engine set up for itself, for the row's params (io-wq limits and CPUs, the
    /// SQPOLL CPU); empty for the blocking engine.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Sentences about how the engine ran (a poller sharing the engine's CPU).
    pub notes: Vec<String>,
    /// What a pool of threads making blocking calls did (the `threads` engine only).
    pub pool: Option<PoolThreads>,
}

impl FileOutcome {
    /// What a write measured: no read-back, no latencies, nothing set up beyond the defaults.
    pub fn new(measured: Measured, tally: Tally) -> FileOutcome {
        FileOutcome {
            measured,
            tally,
            mismatches: 0,
            latency_ns: None,
            params: serde_json::Map::new(),
            notes: Vec::new(),
            pool: None,
        }
    }
}

/// The API calls of one engine for the file workloads. Each method sets up what its API needs
/// (rings, registrations) first, then starts `meter` right before the first operation and stops
/// it right after the last completes, so setup and teardown are not measured.
/// The table's rows say which workloads each engine serves; a study calls only those, so an
/// engine implements only what its rows list (libaio: reads).
pub trait FileEngine {
    fn write(&mut self, _job: &WriteJob, _meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        anyhow::bail!("this engine does not serve fs write")
    }
    fn cycle(&mut self, _job: &CycleJob, _meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        anyhow::bail!("this engine does not serve fs cycle")
    }
    fn read(&mut self, _job: &ReadJob, _meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        anyhow::bail!("this engine does not serve fs read")
    }
}

#[cfg(test)]
mod tests {
    use super::Stamp;

    #[test]
    fn a_stamp_tells_blocks_apart_and_catches_a_torn_block() {
        let stamp = Stamp::new(7);
        let mut block = vec![0u8; 4096];
        stamp.write(&mut block, 41);
        assert!(stamp.matches(&block, 41));
        assert!(!stamp.matches(&block, 42));
        assert!(!Stamp::new(8).matches(&block, 41));
        block[4090] ^= 1;
        assert!(!stamp.matches(&block, 41), "a changed tail");
        assert!(!stamp.matches(&block[..8], 41), "a short read");
    }
}
