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

/// What every block of the read study's file carries, as fio's verify does: a header with the
/// block's index keyed by the study's seed (a read of the wrong block, or of another layout,
/// fails) and a CRC-32 of the whole block, header word and every byte after the header (a byte
/// changed anywhere, a short read or a block torn between two writes fails). The check costs
/// one CRC over each block read (crc32fast: about 0.2 µs per 4 KiB here, bench/read.md).
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    key: u64,
}

/// Where the block's CRC lies in its header; the header's first 8 bytes are its keyed index.
const STAMP_CRC: std::ops::Range<usize> = 8..12;

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

    /// The CRC-32 of `data` but the bytes that hold it.
    fn crc(data: &[u8]) -> [u8; 4] {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&data[..STAMP_CRC.start]);
        hasher.update(&data[STAMP_CRC.end..]);
        hasher.finalize().to_le_bytes()
    }

    /// Stamps `data` (block `block` of the file): its header, then its CRC over everything.
    pub fn write(self, data: &mut [u8], block: u32) {
        assert!(data.len() >= Self::MIN_BLOCK, "a block too small to stamp");
        data[..8].copy_from_slice(&self.word(block));
        let crc = Self::crc(data);
        data[STAMP_CRC].copy_from_slice(&crc);
    }

    /// Whether `data` is block `block` as laid out, every byte of it.
    pub fn matches(self, data: &[u8], block: u32) -> bool {
        data.len() >= Self::MIN_BLOCK
            && data[..8] == self.word(block)
            && data[STAMP_CRC] == Self::crc(data)
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

    /// Goal: a block changed after layout in any byte fails, as fio's verify would (the stamp
    /// used to check 16 bytes of each block). Method: every byte of a stamped block, in turn,
    /// changed in one bit and then in all; and a block cut short by one byte.
    #[test]
    fn a_block_changed_in_any_byte_fails() {
        let stamp = Stamp::new(11);
        for size in [Stamp::MIN_BLOCK, 512, 4096] {
            let mut block: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
            stamp.write(&mut block, 3);
            assert!(stamp.matches(&block, 3));
            for at in 0..size {
                for flip in [0x01, 0xff] {
                    block[at] ^= flip;
                    assert!(!stamp.matches(&block, 3), "byte {at} of {size} ^ {flip:#x}");
                    block[at] ^= flip;
                }
            }
            assert!(stamp.matches(&block, 3), "restored");
            assert!(!stamp.matches(&block[..size - 1], 3), "a short read");
        }
    }
}
