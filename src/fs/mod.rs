//! File workloads: `fs write` (seed 003, sequential write) and `fs cycle` (seed 000, write a
//! page, fsync, read it back). The workload files (`write.rs`, `cycle.rs`) own the study: the
//! data, the file, the runs and the verification. The engine files (`blocking.rs`, `uring.rs`)
//! own the API calls. `ENGINES` below is the one table that lists them.

pub mod blocking;
pub mod cycle;
pub mod scratch;
pub mod study;
pub mod uring;
pub mod write;

use std::os::fd::BorrowedFd;

use crate::measure::{Measured, Meter};
use crate::row::Tally;

/// How an io_uring file engine submits: the rungs of the feature ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// One SQE, submit and wait for it, every block (seed 003's first io_uring attempt).
    Single,
    /// Fill `depth` SQEs, submit, wait for all of them, repeat (seed 003's "N entries").
    Batch,
    /// Keep `depth` SQEs in flight; reap completions as they arrive (seed 003's "ring buffer").
    Ring,
}

/// The io_uring features one engine turns on; every engine adds one step to the previous one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UringFeatures {
    pub submit: Submit,
    /// Registered file (`types::Fixed`) and registered buffers (`WriteFixed`/`ReadFixed`).
    pub fixed: bool,
    /// A kernel thread polls the submission queue: no `io_uring_enter` to submit.
    pub sqpoll: bool,
    /// SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN: completion work runs only when the
    /// submitter asks for it, instead of interrupting it (kernel 6.1+; not with SQPOLL).
    pub defer_taskrun: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Blocking,
    Uring(UringFeatures),
}

/// Which file workload an engine takes part in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Write,
    Cycle,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Write => "fs-write",
            Workload::Cycle => "fs-cycle",
        }
    }
}

pub struct EngineDef {
    pub name: &'static str,
    pub about: &'static str,
    pub kind: EngineKind,
    pub workloads: &'static [Workload],
}

impl EngineDef {
    /// Whether the engine can run here; the reason when it cannot.
    pub fn availability(&self) -> Result<(), String> {
        match self.kind {
            EngineKind::Blocking => Ok(()),
            EngineKind::Uring(features) => uring::availability(features),
        }
    }
}

/// The bottom rung; every other io_uring engine names what it adds to it.
const PLAIN: UringFeatures = UringFeatures {
    submit: Submit::Single,
    fixed: false,
    sqpoll: false,
    defer_taskrun: false,
};
const RING: UringFeatures = UringFeatures {
    submit: Submit::Ring,
    ..PLAIN
};
const FIXED: UringFeatures = UringFeatures {
    fixed: true,
    ..RING
};

use Workload::{Cycle, Write};

/// Every file engine, in ladder order: each io_uring line adds one feature to the one above
/// (SQPOLL adds to `uring-fixed`: the kernel refuses DEFER_TASKRUN with SQPOLL).
pub const ENGINES: &[EngineDef] = &[
    EngineDef {
        name: "blocking",
        about: "pwrite/fsync/pread, one syscall per operation (the baseline)",
        kind: EngineKind::Blocking,
        workloads: &[Write, Cycle],
    },
    EngineDef {
        name: "uring-single",
        about: "io_uring, one SQE submitted and waited for at a time",
        kind: EngineKind::Uring(PLAIN),
        workloads: &[Write],
    },
    EngineDef {
        name: "uring-batch",
        about: "io_uring, fill --depth SQEs, submit, wait for all, repeat",
        kind: EngineKind::Uring(UringFeatures {
            submit: Submit::Batch,
            ..PLAIN
        }),
        workloads: &[Write],
    },
    EngineDef {
        name: "uring-ring",
        about: "io_uring, --depth SQEs kept in flight, completions reaped as they come",
        kind: EngineKind::Uring(RING),
        workloads: &[Write],
    },
    EngineDef {
        name: "uring-link",
        about: "io_uring, write->fsync->read linked chains, --depth chains in flight",
        kind: EngineKind::Uring(RING),
        workloads: &[Cycle],
    },
    EngineDef {
        name: "uring-fixed",
        about: "ring + registered file and registered buffers (WriteFixed/ReadFixed)",
        kind: EngineKind::Uring(FIXED),
        workloads: &[Write, Cycle],
    },
    EngineDef {
        name: "uring-defer",
        about: "fixed + SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN: completions run when asked for",
        kind: EngineKind::Uring(UringFeatures {
            defer_taskrun: true,
            ..FIXED
        }),
        workloads: &[Write, Cycle],
    },
    EngineDef {
        name: "uring-sqpoll",
        about: "fixed + SQPOLL: a kernel thread submits, syscalls near zero",
        kind: EngineKind::Uring(UringFeatures {
            sqpoll: true,
            ..FIXED
        }),
        workloads: &[Write, Cycle],
    },
];

/// The engines of `workload`, in table order.
pub fn engines_of(workload: Workload) -> impl Iterator<Item = &'static EngineDef> {
    ENGINES
        .iter()
        .filter(move |engine| engine.workloads.contains(&workload))
}

/// Resolves `--engine` names for `workload` (all of its engines when none are named).
pub fn select_engines(
    workload: Workload,
    names: &[String],
) -> anyhow::Result<Vec<&'static EngineDef>> {
    if names.is_empty() {
        return Ok(engines_of(workload).collect());
    }
    names
        .iter()
        .map(|name| {
            engines_of(workload)
                .find(|engine| engine.name == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = engines_of(workload).map(|engine| engine.name).collect();
                    anyhow::anyhow!(
                        "'{name}' is not an engine of {}: choose from {}",
                        workload.name(),
                        known.join(", ")
                    )
                })
        })
        .collect()
}

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
    pub helpers: &'a crate::ring::Helpers,
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
    pub helpers: &'a crate::ring::Helpers,
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

/// The API calls of one engine for the file workloads. Each method sets up what its API needs
/// (rings, registrations) first, then starts `meter` right before the first operation and stops
/// it right after the last completes, so setup and teardown are not measured.
pub trait FileEngine {
    fn write(&mut self, job: &WriteJob, meter: &mut Meter) -> anyhow::Result<FileOutcome>;
    fn cycle(&mut self, job: &CycleJob, meter: &mut Meter) -> anyhow::Result<FileOutcome>;
}

/// Builds the engine for `def`.
pub fn make_engine(def: &EngineDef) -> Box<dyn FileEngine> {
    match def.kind {
        EngineKind::Blocking => Box::new(blocking::Blocking),
        EngineKind::Uring(features) => Box::new(uring::Uring::new(features)),
    }
}

/// Keeps the engines that can run here; says on stderr why each other one is skipped. Fails
/// only when none is left.
pub fn runnable(
    engines: Vec<&'static EngineDef>,
    common: &crate::cli::CommonArgs,
) -> anyhow::Result<Vec<&'static EngineDef>> {
    let mut kept = Vec::new();
    for engine in engines {
        match engine.availability() {
            Ok(()) => kept.push(engine),
            Err(reason) => {
                if !common.quiet {
                    eprintln!("ringside: skipping {}: {reason}", engine.name);
                }
            }
        }
    }
    anyhow::ensure!(
        !kept.is_empty(),
        "none of the chosen engines can run here (see above)"
    );
    Ok(kept)
}
