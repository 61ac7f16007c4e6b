//! Every engine ringside measures, in one table (`ENGINES`): file engines (`fs write`,
//! `fs cycle`) and server engines (`echo`, `http`), each row naming the engine it extends
//! (`over`) and what it adds to it, the workloads it serves, whether a study runs it by default,
//! what it needs from the kernel, and how it is made. The studies, `run`, `serve`, `ringside
//! engines`, the probe's opcode list, docs/engines.md's engine table and the behaviour tests all
//! read this table, so an engine is one file plus one row here.
//!
//! The folders hold the engines by API: `blocking/` (plain syscalls, a file engine and a server),
//! `threads/` (a file pool, a thread per connection), `libaio.rs`, `epoll.rs`, and `uring/` (the
//! ring, its tokens, the provided-buffer ring, the file engine, and the server loop with its
//! receive and send strategies). `file.rs` and `server.rs` are the two interfaces an engine implements; `needs.rs`
//! turns a row's needs into its availability. Engines take plain values (jobs, a server config,
//! the io_uring helper settings) and never see the command line or the progress bar.

pub mod aligned;
pub mod blocking;
pub mod epoll;
pub mod file;
pub mod libaio;
mod lookup;
pub mod needs;
pub mod owed;
pub mod server;
pub mod shared_counters;
pub mod slots;
pub mod threads;
pub mod uring;
mod workload;

pub use lookup::{
    baseline, default_list, engines_of, find, full_list, nearest_ran, opcodes_used, parent_of,
    select, with_aa_pair,
};

pub use workload::Workload;

use file::FileEngine;
use needs::SEND_BUFFER_REGISTRATIONS;
use needs::{Feature, Needs, Registration, SetupFlags, ACCEPT, RECV, SEND};
use needs::{DEFER_REGISTRATIONS, DIRECT, DIRECT_REGISTRATIONS, DIRECT_ZERO_COPY, MULTISHOT};
use needs::{FILE_CYCLE, FILE_FIXED, FILE_PLAIN, FILE_POLLED, FIXED, FIXED_RING_FD, NOP};
use uring::file::Submit;
use uring::ring::{Helpers, ServerHelpers};
use uring::server::{AsyncReceive, OwnBufferReceive};
use uring::server::{BundleReceive, BundleSend, IncrementalReceive, MultishotReceive};
use uring::server::{PlainSend, ZeroCopySend};

/// How a row's engine is made: a file engine, or a server loop run on a listener. Each gets
/// its own row, so an engine reads its ring flags and registrations from what the row needs;
/// the kernel threads that work for a ring (`Helpers`; a server loop's shared SQPOLL thread)
/// are given here, to the rows, so the interfaces every engine implements (`file.rs`,
/// `server.rs`) know nothing of io_uring. The other rows ignore them.
#[derive(Clone, Copy)]
pub enum Make {
    File(fn(&EngineDef, &Helpers) -> Box<dyn FileEngine>),
    Server(fn(&EngineDef, server::Run<'_>, &ServerHelpers<'_>) -> anyhow::Result<()>),
}

/// Runs the server loop of `engine` until the stop flag rises, with `helpers` for its ring.
pub fn run_server(
    engine: &EngineDef,
    run: server::Run<'_>,
    helpers: &ServerHelpers<'_>,
) -> anyhow::Result<()> {
    assert!(run.config.max_connections > 0);
    match engine.make {
        Make::Server(serve) => serve(engine, run, helpers),
        Make::File(_) => anyhow::bail!("{} is a file engine, not a server", engine.name),
    }
}

/// How a server engine holds its connections. An engine that serves one at a time cannot be
/// offered the load of many (its other connections wait until the first closes), so it never
/// sets the scale of a many-connection comparison; an engine without event loops runs at one
/// loop only (`--server-threads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serving {
    /// A file engine: no connections.
    NotAServer,
    /// One connection at a time, the next accepted when it closes (`blocking`).
    OneAtATime,
    /// A thread per connection, blocking calls on each (`threads`).
    ThreadPerConnection,
    /// Event loops, each multiplexing many connections (`serve --threads N` runs N of them).
    EventLoops,
}

impl Serving {
    /// Whether the engine serves many connections at once (a thread each, or event loops).
    pub fn at_once(self) -> bool {
        matches!(self, Serving::ThreadPerConnection | Serving::EventLoops)
    }
}

/// One row of the engine table.
pub struct EngineDef {
    pub name: &'static str,
    /// The engine this one extends, by name (empty for a baseline): the report divides this
    /// engine's results by that engine's, so a ratio is what `about`'s addition bought. One
    /// name serves all of this row's workloads; where the engine it extends goes by another
    /// name in another workload, the names are listed and each workload takes the first that
    /// serves it. Every name is an earlier row (a test checks).
    pub over: &'static [&'static str],
    /// What the engine adds to the one it extends (`over`).
    pub about: &'static str,
    pub workloads: &'static [Workload],
    /// The workloads whose studies run this engine when `--engine` names none.
    pub default_for: &'static [Workload],
    /// How a server engine holds its connections: what load can compare it with the others.
    pub serving: Serving,
    pub needs: Needs,
    pub make: Make,
}

impl EngineDef {
    /// Whether the engine can run here; the reason (a missing opcode, flag or registration)
    /// when it cannot.
    pub fn availability(&self) -> Result<(), String> {
        uring::trial::availability(&self.needs)
    }

    pub fn serves(&self, workload: Workload) -> bool {
        self.workloads.contains(&workload)
    }

    /// The engine this one extends in `workload` (None for a baseline, or a workload it does
    /// not serve).
    pub fn parent(&self, workload: Workload) -> Option<&'static EngineDef> {
        if !self.serves(workload) {
            return None;
        }
        self.over
            .iter()
            .find_map(|name| engines_of(workload).find(|engine| engine.name == *name))
    }
}

/// The name of the engine `engine` extends in the workload called `workload`, from the table:
/// what the report divides a rung by. None for a baseline, a contender or an unknown name.
pub fn parent_name(workload: &str, engine: &str) -> Option<&'static str> {
    let workload = Workload::ALL.into_iter().find(|w| w.name() == workload)?;
    let def = engines_of(workload).find(|def| def.name == engine)?;
    def.parent(workload).map(|parent| parent.name)
}

/// What the engine called `engine` adds to the engine it extends in the workload called
/// `workload`, in the table's words less the parent's name ("SQPOLL: a kernel thread submits,
/// syscalls near zero"): the setting a decided rung stands for. None for an unknown name.
pub fn addition(workload: &str, engine: &str) -> Option<&'static str> {
    let workload = Workload::ALL.into_iter().find(|w| w.name() == workload)?;
    let base = engine.split_once('#').map_or(engine, |(base, _)| base);
    let def = engines_of(workload).find(|def| def.name == base)?;
    Some(match def.about.split_once(" + ") {
        Some((parent, added)) if def.over.iter().any(|over| parent.starts_with(over)) => added,
        _ => def.about,
    })
}

/// How the engine called `engine` serves its connections in the workload called `workload`
/// (a copy, `epoll#2`, as its engine): None for a contender or an unknown name.
pub fn serving_of(workload: &str, engine: &str) -> Option<Serving> {
    let workload = Workload::ALL.into_iter().find(|w| w.name() == workload)?;
    let base = engine.split_once('#').map_or(engine, |(base, _)| base);
    engines_of(workload)
        .find(|def| def.name == base)
        .map(|def| def.serving)
}

use Workload::{Echo, FsCycle, FsRead, FsWrite, Http};

/// The file engine keeping --depth operations in flight: the file rungs that differ from it
/// only in their ring's setup and registrations.
const FILE_RING: Make =
    Make::File(|def, helpers| Box::new(uring::file::Uring::new(Submit::Ring, def.needs, helpers)));

/// The multishot server with plain sends: the rungs that differ from it only in their ring's
/// setup, registrations and features.
const SERVE_MULTISHOT: Make = Make::Server(|def, run, helpers| {
    uring::server::serve::<MultishotReceive, PlainSend>(run, def.needs, helpers)
});

/// The make of a row that can never run on loopback or veth (its availability says why).
fn unavailable(def: &EngineDef) -> anyhow::Result<()> {
    let reason = def.availability().err().unwrap_or_default();
    anyhow::bail!("{} cannot run here: {reason}", def.name)
}

/// Every engine, file engines then servers, each family from the oldest API to the newest
/// io_uring feature. The table is a tree: each row names the engine it extends (`over`, always
/// an earlier row serving all its workloads) and `about` says what it adds to it, so rungs that
/// sit side by side (SQPOLL and DEFER_TASKRUN, which the kernel refuses together; the rungs on
/// `uring-fixed-files`) are each measured against their own parent. The NIC rungs
/// (`uring-napi`, `uring-zcrx`) and IOPOLL on a device without poll queues are listed with the
/// reason they cannot run; the NIC rungs are in no study's list, for every network a study
/// has (loopback, veth) carries no NIC's traffic; `uring-fixed-bufs` is no default: no released
/// kernel takes a registered buffer on a plain send (only SEND_ZC does), and its trial says so.
/// A network study's default is epoll and the rungs that answer most (the first multishot
/// rung, DEFER_TASKRUN, bundles): a few minutes; `--full` runs every server (`full_list`).
pub const ENGINES: &[EngineDef] = &[
    EngineDef {
        name: "blocking",
        over: &[],
        about: "pwrite/fsync/pread, one syscall per operation (the baseline)",
        workloads: &[FsWrite, FsCycle, FsRead],
        default_for: &[FsWrite, FsCycle, FsRead],
        serving: Serving::NotAServer,
        needs: Needs::NOTHING,
        make: Make::File(|_, _| Box::new(blocking::file::Blocking)),
    },
    EngineDef {
        name: "threads",
        over: &["blocking"],
        about: "blocking + a pool of --depth threads sharing the blocks (io-wq's user-space twin)",
        workloads: &[FsWrite, FsCycle, FsRead],
        default_for: &[FsCycle, FsRead],
        serving: Serving::NotAServer,
        needs: Needs::NOTHING,
        make: Make::File(|_, _| Box::new(threads::file::ThreadPool)),
    },
    EngineDef {
        name: "libaio",
        over: &["blocking"],
        about: "blocking + Linux AIO: --depth O_DIRECT reads via io_submit/io_getevents (--direct)",
        workloads: &[FsRead],
        default_for: &[FsRead],
        serving: Serving::NotAServer,
        needs: Needs {
            features: &[Feature::DirectFile],
            ..Needs::NOTHING
        },
        make: Make::File(|_, _| Box::new(libaio::Libaio)),
    },
    EngineDef {
        name: "uring-single",
        over: &["blocking"],
        about: "blocking's one operation at a time through io_uring: one SQE submitted and waited \
                for at a time",
        workloads: &[FsWrite, FsRead],
        default_for: &[FsWrite, FsRead],
        serving: Serving::NotAServer,
        needs: Needs::io_uring(FILE_PLAIN),
        make: Make::File(|def, helpers| {
            Box::new(uring::file::Uring::new(Submit::Single, def.needs, helpers))
        }),
    },
    EngineDef {
        name: "uring-batch",
        over: &["uring-single"],
        about: "uring-single + batches: fill --depth SQEs, submit, wait for all, repeat",
        workloads: &[FsWrite, FsRead],
        default_for: &[FsWrite, FsRead],
        serving: Serving::NotAServer,
        needs: Needs::io_uring(FILE_PLAIN),
        make: Make::File(|def, helpers| {
            Box::new(uring::file::Uring::new(Submit::Batch, def.needs, helpers))
        }),
    },
    EngineDef {
        name: "uring-ring",
        over: &["uring-batch"],
        about:
            "uring-batch + a ring kept full: --depth SQEs in flight, completions reaped as they \
                come",
        workloads: &[FsWrite, FsRead],
        default_for: &[FsWrite, FsRead],
        serving: Serving::NotAServer,
        needs: Needs::io_uring(FILE_PLAIN),
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-link",
        over: &["blocking"],
        about: "blocking's page cycle through io_uring: write->fsync->read linked chains, --depth \
                chains in flight",
        workloads: &[FsCycle],
        default_for: &[FsCycle],
        serving: Serving::NotAServer,
        needs: Needs::io_uring(FILE_CYCLE),
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-fixed",
        over: &["uring-ring", "uring-link"],
        about: "uring-ring (in fs cycle uring-link) + registered file and registered buffers \
                (WriteFixed/ReadFixed)",
        workloads: &[FsWrite, FsCycle, FsRead],
        default_for: &[FsWrite, FsCycle, FsRead],
        serving: Serving::NotAServer,
        needs: Needs {
            opcodes: FILE_FIXED,
            setup: SetupFlags::NONE,
            registrations: FIXED,
            features: &[],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-defer",
        over: &["uring-fixed"],
        about:
            "uring-fixed + SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN: completions run when asked \
                for",
        workloads: &[FsWrite, FsCycle, FsRead],
        default_for: &[FsWrite, FsCycle, FsRead],
        serving: Serving::NotAServer,
        needs: Needs {
            opcodes: FILE_FIXED,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: FIXED,
            features: &[],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-sqpoll",
        over: &["uring-fixed"],
        about: "uring-fixed + SQPOLL: a kernel thread submits, syscalls near zero",
        workloads: &[FsWrite, FsCycle, FsRead],
        default_for: &[FsWrite, FsCycle, FsRead],
        serving: Serving::NotAServer,
        needs: Needs {
            opcodes: FILE_FIXED,
            setup: SetupFlags::SQPOLL,
            registrations: FIXED,
            features: &[],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-ring-fd",
        over: &["uring-defer"],
        about: "uring-defer + the ring's fd registered: io_uring_enter skips looking it up",
        workloads: &[FsWrite, FsCycle, FsRead],
        default_for: &[FsWrite, FsCycle, FsRead],
        serving: Serving::NotAServer,
        needs: Needs {
            opcodes: FILE_FIXED,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: FIXED_RING_FD,
            features: &[],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-no-sqarray",
        over: &["uring-ring-fd"],
        about: "uring-ring-fd + NO_SQARRAY: SQEs taken in order, no index array between tail and \
                SQE",
        workloads: &[FsWrite, FsCycle, FsRead],
        default_for: &[FsWrite, FsCycle, FsRead],
        serving: Serving::NotAServer,
        needs: Needs {
            opcodes: FILE_FIXED,
            setup: SetupFlags::DEFER_NO_SQARRAY,
            registrations: FIXED_RING_FD,
            features: &[],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-iopoll",
        over: &["uring-ring-fd"],
        about:
            "uring-ring-fd + IOPOLL: O_DIRECT write and read completions polled from the device \
                (--direct; no fs cycle or --fsync-end: an IOPOLL ring refuses fsync)",
        workloads: &[FsWrite, FsRead],
        default_for: &[FsWrite, FsRead],
        serving: Serving::NotAServer,
        needs: Needs {
            opcodes: FILE_POLLED,
            setup: SetupFlags::IOPOLL,
            registrations: FIXED_RING_FD,
            features: &[Feature::PolledBlockDevice],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-nop",
        over: &["uring-ring"],
        about: "uring-ring with NOPs in place of reads: io_uring's own cost (t/io_uring -N1)",
        workloads: &[FsRead],
        default_for: &[FsRead],
        serving: Serving::NotAServer,
        needs: Needs::io_uring(&[NOP]),
        make: FILE_RING,
    },
    EngineDef {
        name: "blocking",
        over: &[],
        about: "one connection at a time, blocking recv/send (the simplest server)",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::OneAtATime,
        needs: Needs::NOTHING,
        make: Make::Server(|_, run, _| blocking::server::serve(run)),
    },
    EngineDef {
        name: "threads",
        over: &["blocking"],
        about: "blocking + a thread per connection (the pre-epoll answer)",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::ThreadPerConnection,
        needs: Needs::NOTHING,
        make: Make::Server(|_, run, _| threads::server::serve(run)),
    },
    EngineDef {
        name: "epoll",
        over: &[],
        about: "non-blocking sockets, edge-triggered epoll, per-connection pending output",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        serving: Serving::EventLoops,
        needs: Needs::NOTHING,
        make: Make::Server(|_, run, _| epoll::serve(run)),
    },
    EngineDef {
        name: "uring",
        over: &["epoll"],
        about: "epoll's server on io_uring: accept/recv/send SQEs, the kernel polling the sockets \
                itself (IORING_FEAT_FAST_POLL)",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        serving: Serving::EventLoops,
        needs: Needs::io_uring(&[ACCEPT, RECV, SEND]),
        make: Make::Server(|def, run, helpers| {
            uring::server::serve::<OwnBufferReceive, PlainSend>(run, def.needs, helpers)
        }),
    },
    EngineDef {
        name: "uring-async",
        over: &["uring"],
        about: "uring + IOSQE_ASYNC on every recv: each blocks in an io-wq worker thread instead \
                of a poll armed in the ring (netty's forced-async mode)",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs::io_uring(&[ACCEPT, RECV, SEND]),
        make: Make::Server(|def, run, helpers| {
            uring::server::serve::<AsyncReceive, PlainSend>(run, def.needs, helpers)
        }),
    },
    EngineDef {
        name: "uring-multishot",
        over: &["uring"],
        about: "uring + multishot accept and recv from a provided buffer ring",
        workloads: &[Echo, Http],
        default_for: &[Echo],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: MULTISHOT,
            setup: SetupFlags::NONE,
            registrations: &[Registration::BufRing],
            features: &[],
        },
        make: SERVE_MULTISHOT,
    },
    EngineDef {
        name: "uring-sqpoll",
        over: &["uring-multishot"],
        about: "uring-multishot + SQPOLL: a kernel thread takes the SQEs, polling on the \
                server's CPU unless the server is real-time (the kernel refuses SQPOLL with \
                DEFER_TASKRUN, so this rung sits beside uring-defer)",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: MULTISHOT,
            setup: SetupFlags::SQPOLL,
            registrations: &[Registration::BufRing],
            features: &[],
        },
        make: SERVE_MULTISHOT,
    },
    EngineDef {
        name: "uring-defer",
        over: &["uring-multishot"],
        about: "uring-multishot + a SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN ring, ring fd \
                registered",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: MULTISHOT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DEFER_REGISTRATIONS,
            features: &[],
        },
        make: SERVE_MULTISHOT,
    },
    EngineDef {
        name: "uring-fixed-files",
        over: &["uring-defer"],
        about: "uring-defer + direct descriptors: multishot accept into the ring's file table, \
                recv/send/close by index, no file lookup or reference per operation",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[],
        },
        make: SERVE_MULTISHOT,
    },
    EngineDef {
        name: "uring-bundle",
        over: &["uring-fixed-files"],
        about: "uring-fixed-files + multishot recv bundles (6.10): one completion for every \
                buffer a receive filled, when more bytes wait than one 8 KiB buffer holds",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[Feature::Bundles],
        },
        make: Make::Server(|def, run, helpers| {
            uring::server::serve::<BundleReceive, PlainSend>(run, def.needs, helpers)
        }),
    },
    EngineDef {
        name: "uring-send-bundle",
        over: &["uring-bundle"],
        about: "uring-bundle + send bundles (6.10): a connection's queued chunks go to its own \
                send ring (incrementally consumed, 6.12) and one send carries them all, where a \
                plain send carries one 8 KiB chunk",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[Feature::Bundles, Feature::IncrementalBuffers],
        },
        make: Make::Server(|def, run, helpers| {
            uring::server::serve::<BundleReceive, BundleSend>(run, def.needs, helpers)
        }),
    },
    EngineDef {
        name: "uring-recv-inc",
        over: &["uring-fixed-files"],
        about: "uring-fixed-files + a receive pool of 64 KiB buffers consumed incrementally \
                (6.12): each completion takes only the bytes it received, the rest of the buffer \
                stays the kernel's for the next",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[Feature::IncrementalBuffers],
        },
        make: Make::Server(|def, run, helpers| {
            uring::server::serve::<IncrementalReceive, PlainSend>(run, def.needs, helpers)
        }),
    },
    EngineDef {
        name: "uring-fixed-bufs",
        over: &["uring-fixed-files"],
        about: "uring-fixed-files + sends from registered buffers (the receive pool and the HTTP \
                responses): no page pinning per send",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: SEND_BUFFER_REGISTRATIONS,
            features: &[Feature::SendFromRegisteredBuffers],
        },
        make: SERVE_MULTISHOT,
    },
    EngineDef {
        name: "uring-min-wait",
        over: &["uring-fixed-files"],
        about: "uring-fixed-files + batched waiting: wait for half the connections' completions, \
                but at most 50 µs for more than one (min_wait_usec)",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[Feature::MinWait],
        },
        make: SERVE_MULTISHOT,
    },
    EngineDef {
        name: "uring-send-zc",
        over: &["uring-fixed-files"],
        about: "uring-fixed-files + SEND_ZC from registered buffers: no copy into socket buffers, \
                a notification per send before its buffer is reused",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: DIRECT_ZERO_COPY,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: SEND_BUFFER_REGISTRATIONS,
            features: &[],
        },
        make: Make::Server(|def, run, helpers| {
            uring::server::serve::<MultishotReceive, ZeroCopySend>(run, def.needs, helpers)
        }),
    },
    EngineDef {
        name: "uring-napi",
        over: &["uring-defer"],
        about: "uring-defer + NAPI busy polling (IORING_REGISTER_NAPI): the wait polls the NIC's \
                receive queue instead of sleeping for its interrupt",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: MULTISHOT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DEFER_REGISTRATIONS,
            features: &[Feature::NapiBusyPoll],
        },
        make: Make::Server(|def, _, _| unavailable(def)),
    },
    EngineDef {
        name: "uring-zcrx",
        over: &["uring-defer"],
        about: "uring-defer + zero-copy receive (IORING_REGISTER_ZCRX_IFQ): the NIC writes \
                payloads into memory the ring shares with the server",
        workloads: &[Echo, Http],
        default_for: &[],
        serving: Serving::EventLoops,
        needs: Needs {
            opcodes: MULTISHOT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DEFER_REGISTRATIONS,
            features: &[Feature::ZeroCopyReceive],
        },
        make: Make::Server(|def, _, _| unavailable(def)),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use needs::{RECV_MULTI, WRITE_FIXED};

    #[test]
    fn every_parent_is_an_earlier_row_serving_the_childs_workloads() {
        for (index, engine) in ENGINES.iter().enumerate() {
            for name in engine.over {
                let known = ENGINES[..index].iter().any(|earlier| earlier.name == *name);
                assert!(known, "{} is over {name}, no earlier row", engine.name);
            }
            for &workload in engine.workloads {
                let Some(parent) = engine.parent(workload) else {
                    assert!(
                        engine.over.is_empty(),
                        "{}: no parent in {workload:?}",
                        engine.name
                    );
                    continue;
                };
                let position = |def: &EngineDef| ENGINES.iter().position(|e| std::ptr::eq(e, def));
                assert!(position(parent) < position(engine), "{}", engine.name);
                assert!(parent.serves(workload), "{} in {workload:?}", engine.name);
                assert!(
                    engine.about.starts_with(parent.name)
                        || engine.about.contains(&format!(
                            "(in {} {})",
                            workload.name().replace('-', " "),
                            parent.name
                        )),
                    "{}'s about does not start from its parent {}",
                    engine.name,
                    parent.name
                );
            }
        }
    }

    #[test]
    fn the_rungs_the_issue_named_have_their_own_parents() {
        let parent = |workload, name| parent_name(Workload::name(workload), name);
        assert_eq!(parent(FsWrite, "uring-ring-fd"), Some("uring-defer"));
        assert_eq!(parent(FsCycle, "uring-fixed"), Some("uring-link"));
        assert_eq!(parent(FsWrite, "uring-fixed"), Some("uring-ring"));
        assert_eq!(parent(Echo, "uring-defer"), Some("uring-multishot"));
        for rung in [
            "uring-recv-inc",
            "uring-fixed-bufs",
            "uring-min-wait",
            "uring-send-zc",
        ] {
            assert_eq!(parent(Http, rung), Some("uring-fixed-files"));
        }
        assert_eq!(parent(Echo, "uring-napi"), Some("uring-defer"));
        assert_eq!(parent(Echo, "epoll"), None);
        assert_eq!(parent(Echo, "contender:nginx"), None);
    }

    #[test]
    fn every_row_is_consistent() {
        for engine in ENGINES {
            assert!(!engine.workloads.is_empty(), "{}", engine.name);
            for workload in engine.default_for {
                assert!(
                    engine.serves(*workload),
                    "{} default for {workload:?}",
                    engine.name
                );
            }
            let server = matches!(engine.make, Make::Server(_));
            assert_eq!(
                engine.serving != Serving::NotAServer,
                server,
                "{}: a server says how it serves its connections, a file engine does not",
                engine.name
            );
            for workload in engine.workloads {
                assert_eq!(workload.is_network(), server, "{}", engine.name);
            }
            for workload in Workload::ALL {
                let same_name = engines_of(workload).filter(|e| e.name == engine.name);
                assert!(
                    same_name.count() <= 1,
                    "{} twice in {workload:?}",
                    engine.name
                );
            }
        }
    }

    #[test]
    fn defaults_are_the_studies_lists() {
        assert_eq!(
            default_list(Echo),
            "epoll,uring,uring-multishot,uring-defer,uring-bundle"
        );
        assert_eq!(default_list(Http), "epoll,uring,uring-defer,uring-bundle");
        let full: Vec<&str> = full_list(Echo).iter().map(|e| e.name).collect();
        assert!(full.contains(&"blocking") && full.contains(&"uring-send-zc"));
        assert!(!full.contains(&"uring-napi") && !full.contains(&"uring-zcrx"));
        assert_eq!(
            default_list(FsCycle),
            "blocking,threads,uring-link,uring-fixed,uring-defer,uring-sqpoll,uring-ring-fd,\
             uring-no-sqarray"
        );
    }

    #[test]
    fn unknown_names_list_the_choices() {
        let error = find(FsWrite, "epoll").map(drop).unwrap_err().to_string();
        assert!(error.contains("not an engine of fs-write"), "{error}");
        let error = find(Echo, "nope").map(drop).unwrap_err().to_string();
        assert!(error.contains("not a network engine"), "{error}");
    }

    #[test]
    fn the_probe_lists_each_opcode_once() {
        let opcodes = opcodes_used();
        assert!(opcodes.contains(&RECV_MULTI) && opcodes.contains(&WRITE_FIXED));
        let mut names: Vec<&str> = opcodes.iter().map(|o| o.name).collect();
        names.dedup();
        assert_eq!(names.len(), opcodes.len());
    }
}
