//! The interface of a file engine: the two file workloads as plain jobs (`WriteJob`,
//! `CycleJob`), what a run of one returns (`FileOutcome`), and the trait each engine implements
//! with its own API calls. The studies in `studies/fs/` own the file, the data, the runs and
//! the verification; an engine owns only its calls and its measured loop.

use std::os::fd::BorrowedFd;

use crate::engines::uring::ring::Helpers;
use crate::measure::{Measured, Meter};
use crate::row::Tally;

/// One sequential write of `data` into an open file, `block_size` bytes per operation.
pub struct WriteJob<'a> {
    pub file: BorrowedFd<'a>,
    pub data: &'a [u8],
    pub block_size: usize,
    /// In-flight operations for the io_uring engines.
    pub depth: u32,
    /// fsync the file (with the engine's own API) before the clock stops.
    pub fsync_end: bool,
    /// The kernel threads an io_uring engine sets up for its ring.
    pub helpers: &'a Helpers,
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
    /// fdatasync instead of fsync.
    pub datasync: bool,
    /// The kernel threads an io_uring engine sets up for its ring.
    pub helpers: &'a Helpers,
    pub should_stop: &'a dyn Fn() -> bool,
}

/// What a file engine did: what it measured, its tally, pages whose read-back differed, and
/// (page cycle) each page's latency.
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
        }
    }
}

/// The API calls of one engine for the file workloads. Each method sets up what its API needs
/// (rings, registrations) first, then starts `meter` right before the first operation and stops
/// it right after the last completes, so setup and teardown are not measured.
pub trait FileEngine {
    fn write(&mut self, job: &WriteJob, meter: &mut Meter) -> anyhow::Result<FileOutcome>;
    fn cycle(&mut self, job: &CycleJob, meter: &mut Meter) -> anyhow::Result<FileOutcome>;
}
