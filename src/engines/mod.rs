//! Every engine ringside measures, in one table (`ENGINES`): file engines (`fs write`,
//! `fs cycle`) and server engines (`echo`, `http`), each row naming what it adds over the row
//! before it, the workloads it serves, whether a study runs it by default, what it needs from
//! the kernel, and how it is made. The studies, `run`, `serve`, `ringside engines`, the probe's
//! opcode list, docs/engines.md's engine table and the behaviour tests all read this table, so an
//! engine is one file plus one row here.
//!
//! The folders hold the engines by API: `blocking/` (plain syscalls, a file engine and a server),
//! `threads.rs` (a thread per connection), `epoll.rs`, and `uring/` (the ring, its tokens, the
//! provided-buffer ring, the file engine, and the server loop with its receive and send
//! strategies). `file.rs` and `server.rs` are the two interfaces an engine implements; `needs.rs`
//! turns a row's needs into its availability. Engines take plain values (jobs, a server config,
//! the io_uring helper settings) and never see the command line or the progress bar.

pub mod aligned;
pub mod blocking;
pub mod epoll;
pub mod file;
pub mod needs;
pub mod server;
pub mod threads;
pub mod uring;

use std::sync::OnceLock;

use serde::Serialize;

use file::FileEngine;
use needs::{Feature, Needs, Opcode, Registration, SetupFlags};
use needs::{ACCEPT, ACCEPT_MULTI, ASYNC_CANCEL, CLOSE, FSYNC, POLL_ADD, READ, READ_FIXED, RECV};
use needs::{RECV_MULTI, SEND, SEND_ZC, SHUTDOWN, WRITE, WRITE_FIXED};
use uring::file::Submit;
use uring::server::OwnBufferReceive;
use uring::server::{BundleReceive, BundleSend, IncrementalReceive, MultishotReceive};
use uring::server::{PlainSend, ZeroCopySend};

/// What a study measures; each engine serves some of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Workload {
    /// `fs write`: a file written sequentially in blocks (seed 003).
    FsWrite,
    /// `fs cycle`: per page, write, fsync, read back (seed 000).
    FsCycle,
    /// `echo`: a TCP echo server under ringside's load generator (seeds 000 and 004).
    Echo,
    /// `http`: a fixed-response HTTP/1.1 server (seed 001).
    Http,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::FsWrite,
        Workload::FsCycle,
        Workload::Echo,
        Workload::Http,
    ];

    /// The name rows carry in `workload`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::FsWrite => "fs-write",
            Workload::FsCycle => "fs-cycle",
            Workload::Echo => "echo",
            Workload::Http => "http",
        }
    }

    /// Served by a server engine over TCP (else by a file engine).
    pub fn is_network(self) -> bool {
        matches!(self, Workload::Echo | Workload::Http)
    }
}

/// How a row's engine is made: a file engine, or a server loop run on a listener. Each gets
/// its own row, so an engine reads its ring flags and registrations from what the row needs.
#[derive(Clone, Copy)]
pub enum Make {
    File(fn(&EngineDef) -> Box<dyn FileEngine>),
    Server(fn(&EngineDef, server::Run<'_>) -> anyhow::Result<()>),
}

/// One row of the engine table.
pub struct EngineDef {
    pub name: &'static str,
    /// What the engine adds over the row before it that serves the same workloads.
    pub about: &'static str,
    pub workloads: &'static [Workload],
    /// The workloads whose studies run this engine when `--engine` names none.
    pub default_for: &'static [Workload],
    pub needs: Needs,
    pub make: Make,
}

impl EngineDef {
    /// Whether the engine can run here; the reason (a missing opcode, flag or registration)
    /// when it cannot.
    pub fn availability(&self) -> Result<(), String> {
        self.needs.check()
    }

    pub fn serves(&self, workload: Workload) -> bool {
        self.workloads.contains(&workload)
    }
}

use Workload::{Echo, FsCycle, FsWrite, Http};

const FILE_WRITE: &[Opcode] = &[WRITE, FSYNC];
const FILE_CYCLE: &[Opcode] = &[WRITE, FSYNC, READ];
const FILE_FIXED: &[Opcode] = &[WRITE_FIXED, FSYNC, READ_FIXED];
/// What an IOPOLL ring submits: it refuses fsync, so it serves only `fs write`.
const FILE_POLLED: &[Opcode] = &[WRITE_FIXED];
const FIXED: &[Registration] = &[Registration::Files, Registration::Buffers];
const FIXED_RING_FD: &[Registration] = &[
    Registration::Files,
    Registration::Buffers,
    Registration::RingFd,
];
const MULTISHOT: &[Opcode] = &[ACCEPT_MULTI, RECV_MULTI, SEND, ASYNC_CANCEL, POLL_ADD];
/// Multishot on direct descriptors: shut down and closed with SQEs.
const DIRECT: &[Opcode] = &[
    ACCEPT_MULTI,
    RECV_MULTI,
    SEND,
    ASYNC_CANCEL,
    POLL_ADD,
    SHUTDOWN,
    CLOSE,
];
const DIRECT_ZERO_COPY: &[Opcode] = &[
    ACCEPT_MULTI,
    RECV_MULTI,
    SEND_ZC,
    ASYNC_CANCEL,
    POLL_ADD,
    SHUTDOWN,
    CLOSE,
];
const DEFER_REGISTRATIONS: &[Registration] = &[Registration::BufRing, Registration::RingFd];
const DIRECT_REGISTRATIONS: &[Registration] = &[
    Registration::BufRing,
    Registration::RingFd,
    Registration::Files,
];
const SEND_BUFFER_REGISTRATIONS: &[Registration] = &[
    Registration::BufRing,
    Registration::RingFd,
    Registration::Files,
    Registration::Buffers,
];

/// The file engine keeping --depth operations in flight: the file rungs that differ from it
/// only in their ring's setup and registrations.
const FILE_RING: Make =
    Make::File(|def| Box::new(uring::file::Uring::new(Submit::Ring, def.needs)));

/// The multishot server with plain sends: the rungs that differ from it only in their ring's
/// setup, registrations and features.
const SERVE_MULTISHOT: Make =
    Make::Server(|def, run| uring::server::serve::<MultishotReceive, PlainSend>(run, def.needs));

/// The make of a row that can never run on loopback or veth (its availability says why).
fn unavailable(def: &EngineDef) -> anyhow::Result<()> {
    let reason = def.availability().err().unwrap_or_default();
    anyhow::bail!("{} cannot run here: {reason}", def.name)
}

/// Every engine, file engines then servers, each family from the oldest API to the newest
/// io_uring feature: each io_uring row adds one feature to the one above it, and says so where
/// it builds on another (SQPOLL adds to `uring-fixed` and to `uring-multishot`: the kernel
/// refuses DEFER_TASKRUN with SQPOLL; `uring-send-zc` adds to `uring-fixed-bufs`). The NIC rungs
/// (`uring-napi`, `uring-zcrx`) and IOPOLL on a device without poll queues are listed with the
/// reason they cannot run.
pub const ENGINES: &[EngineDef] = &[
    EngineDef {
        name: "blocking",
        about: "pwrite/fsync/pread, one syscall per operation (the baseline)",
        workloads: &[FsWrite, FsCycle],
        default_for: &[FsWrite, FsCycle],
        needs: Needs::NOTHING,
        make: Make::File(|_| Box::new(blocking::file::Blocking)),
    },
    EngineDef {
        name: "uring-single",
        about: "io_uring, one SQE submitted and waited for at a time",
        workloads: &[FsWrite],
        default_for: &[FsWrite],
        needs: Needs {
            opcodes: FILE_WRITE,
            setup: SetupFlags::NONE,
            registrations: &[],
            features: &[],
        },
        make: Make::File(|def| Box::new(uring::file::Uring::new(Submit::Single, def.needs))),
    },
    EngineDef {
        name: "uring-batch",
        about: "io_uring, fill --depth SQEs, submit, wait for all, repeat",
        workloads: &[FsWrite],
        default_for: &[FsWrite],
        needs: Needs {
            opcodes: FILE_WRITE,
            setup: SetupFlags::NONE,
            registrations: &[],
            features: &[],
        },
        make: Make::File(|def| Box::new(uring::file::Uring::new(Submit::Batch, def.needs))),
    },
    EngineDef {
        name: "uring-ring",
        about: "io_uring, --depth SQEs kept in flight, completions reaped as they come",
        workloads: &[FsWrite],
        default_for: &[FsWrite],
        needs: Needs {
            opcodes: FILE_WRITE,
            setup: SetupFlags::NONE,
            registrations: &[],
            features: &[],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-link",
        about: "io_uring, write->fsync->read linked chains, --depth chains in flight",
        workloads: &[FsCycle],
        default_for: &[FsCycle],
        needs: Needs {
            opcodes: FILE_CYCLE,
            setup: SetupFlags::NONE,
            registrations: &[],
            features: &[],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-fixed",
        about: "ring + registered file and registered buffers (WriteFixed/ReadFixed)",
        workloads: &[FsWrite, FsCycle],
        default_for: &[FsWrite, FsCycle],
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
        about: "fixed + SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN: completions run when asked for",
        workloads: &[FsWrite, FsCycle],
        default_for: &[FsWrite, FsCycle],
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
        about: "fixed + SQPOLL: a kernel thread submits, syscalls near zero",
        workloads: &[FsWrite, FsCycle],
        default_for: &[FsWrite, FsCycle],
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
        about: "defer + the ring's fd registered: io_uring_enter skips looking it up",
        workloads: &[FsWrite, FsCycle],
        default_for: &[FsWrite, FsCycle],
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
        about: "ring-fd + NO_SQARRAY: SQEs taken in order, no index array between tail and SQE",
        workloads: &[FsWrite, FsCycle],
        default_for: &[FsWrite, FsCycle],
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
        about: "ring-fd + IOPOLL: O_DIRECT write completions polled from the device (--direct; \
                no fs cycle or --fsync-end: an IOPOLL ring refuses fsync)",
        workloads: &[FsWrite],
        default_for: &[FsWrite],
        needs: Needs {
            opcodes: FILE_POLLED,
            setup: SetupFlags::IOPOLL,
            registrations: FIXED_RING_FD,
            features: &[Feature::PolledBlockDevice],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "uring-hybrid-iopoll",
        about: "iopoll + HYBRID_IOPOLL: sleeps about half a completion's time before polling",
        workloads: &[FsWrite],
        default_for: &[FsWrite],
        needs: Needs {
            opcodes: FILE_POLLED,
            setup: SetupFlags::HYBRID_IOPOLL,
            registrations: FIXED_RING_FD,
            features: &[Feature::PolledBlockDevice],
        },
        make: FILE_RING,
    },
    EngineDef {
        name: "blocking",
        about: "one connection at a time, blocking recv/send (seed 000's net_blocking)",
        workloads: &[Echo, Http],
        default_for: &[Echo],
        needs: Needs::NOTHING,
        make: Make::Server(|_, run| blocking::server::serve(run)),
    },
    EngineDef {
        name: "threads",
        about: "a thread per connection, blocking recv/send (the pre-epoll answer)",
        workloads: &[Echo, Http],
        default_for: &[],
        needs: Needs::NOTHING,
        make: Make::Server(|_, run| threads::serve(run)),
    },
    EngineDef {
        name: "epoll",
        about: "non-blocking sockets, edge-triggered epoll, per-connection pending output",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs::NOTHING,
        make: Make::Server(|_, run| epoll::serve(run)),
    },
    EngineDef {
        name: "uring",
        about: "io_uring accept/recv/send SQEs relying on IORING_FEAT_FAST_POLL (seed 000)",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs {
            opcodes: &[ACCEPT, RECV, SEND],
            setup: SetupFlags::NONE,
            registrations: &[],
            features: &[],
        },
        make: Make::Server(|def, run| {
            uring::server::serve::<OwnBufferReceive, PlainSend>(run, def.needs)
        }),
    },
    EngineDef {
        name: "uring-multishot",
        about: "io_uring multishot accept and recv from a provided buffer ring (seed 004)",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
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
        about: "uring-multishot + SQPOLL: a kernel thread takes the SQEs, polling on the \
                server's CPU unless the server is real-time (the kernel refuses SQPOLL with \
                DEFER_TASKRUN, so this rung sits beside uring-defer)",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
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
        about:
            "uring-multishot on a SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN ring, ring fd registered",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
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
        about: "defer + direct descriptors: multishot accept into the ring's file table, \
                recv/send/close by index, no file lookup or reference per operation",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
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
        about: "fixed-files + multishot recv bundles (6.10): one completion for every buffer \
                a receive filled, when more bytes wait than one 8 KiB buffer holds",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[Feature::Bundles],
        },
        make: Make::Server(|def, run| {
            uring::server::serve::<BundleReceive, PlainSend>(run, def.needs)
        }),
    },
    EngineDef {
        name: "uring-send-bundle",
        about: "bundle + send bundles (6.10): a connection's queued chunks go to its own send \
                ring (incrementally consumed, 6.12) and one send carries them all, where a \
                plain send carries one 8 KiB chunk",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[Feature::Bundles, Feature::IncrementalBuffers],
        },
        make: Make::Server(|def, run| {
            uring::server::serve::<BundleReceive, BundleSend>(run, def.needs)
        }),
    },
    EngineDef {
        name: "uring-recv-inc",
        about: "fixed-files + a receive pool of 64 KiB buffers consumed incrementally (6.12): \
                each completion takes only the bytes it received, the rest of the buffer stays \
                the kernel's for the next",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs {
            opcodes: DIRECT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DIRECT_REGISTRATIONS,
            features: &[Feature::IncrementalBuffers],
        },
        make: Make::Server(|def, run| {
            uring::server::serve::<IncrementalReceive, PlainSend>(run, def.needs)
        }),
    },
    EngineDef {
        name: "uring-fixed-bufs",
        about: "fixed-files + sends from registered buffers (the receive pool and the HTTP \
                responses): no page pinning per send",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
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
        about: "fixed-files + batched waiting: wait for half the connections' completions, but \
                at most 50 µs for more than one (min_wait_usec)",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
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
        about: "fixed-files + SEND_ZC from registered buffers: no copy into socket buffers, a \
                notification per send before its buffer is reused",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs {
            opcodes: DIRECT_ZERO_COPY,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: SEND_BUFFER_REGISTRATIONS,
            features: &[],
        },
        make: Make::Server(|def, run| {
            uring::server::serve::<MultishotReceive, ZeroCopySend>(run, def.needs)
        }),
    },
    EngineDef {
        name: "uring-napi",
        about: "defer + NAPI busy polling (IORING_REGISTER_NAPI): the wait polls the NIC's \
                receive queue instead of sleeping for its interrupt",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs {
            opcodes: MULTISHOT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DEFER_REGISTRATIONS,
            features: &[Feature::NicTraffic],
        },
        make: Make::Server(|def, _| unavailable(def)),
    },
    EngineDef {
        name: "uring-zcrx",
        about: "defer + zero-copy receive (IORING_REGISTER_ZCRX_IFQ): the NIC writes payloads \
                into memory the ring shares with the server",
        workloads: &[Echo, Http],
        default_for: &[Echo, Http],
        needs: Needs {
            opcodes: MULTISHOT,
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: DEFER_REGISTRATIONS,
            features: &[Feature::NicTraffic],
        },
        make: Make::Server(|def, _| unavailable(def)),
    },
];

/// The engines that serve `workload`, in table order.
pub fn engines_of(workload: Workload) -> impl Iterator<Item = &'static EngineDef> {
    ENGINES.iter().filter(move |engine| engine.serves(workload))
}

/// The engine of `workload` called `name`.
pub fn find(workload: Workload, name: &str) -> anyhow::Result<&'static EngineDef> {
    engines_of(workload)
        .find(|engine| engine.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = engines_of(workload).map(|engine| engine.name).collect();
            let what = if workload.is_network() {
                "a network engine".to_string()
            } else {
                format!("an engine of {}", workload.name())
            };
            anyhow::anyhow!("'{name}' is not {what}: choose from {}", known.join(", "))
        })
}

/// Resolves `--engine` names for `workload`; none named means the workload's default set.
pub fn select(workload: Workload, names: &[String]) -> anyhow::Result<Vec<&'static EngineDef>> {
    if names.is_empty() {
        return Ok(engines_of(workload)
            .filter(|engine| engine.default_for.contains(&workload))
            .collect());
    }
    names.iter().map(|name| find(workload, name)).collect()
}

/// Keeps the engines that can run here; says on stderr why each other one is skipped (unless
/// `quiet`). Fails only when none is left.
pub fn runnable(
    engines: Vec<&'static EngineDef>,
    quiet: bool,
) -> anyhow::Result<Vec<&'static EngineDef>> {
    let mut kept = Vec::new();
    for engine in engines {
        match engine.availability() {
            Ok(()) => kept.push(engine),
            Err(reason) if !quiet => eprintln!("ringside: skipping {}: {reason}", engine.name),
            Err(_) => {}
        }
    }
    anyhow::ensure!(
        !kept.is_empty(),
        "none of the chosen engines can run here (see above)"
    );
    Ok(kept)
}

/// The default engines of `workload` as one comma-separated list (a flag's default).
pub fn default_list(workload: Workload) -> &'static str {
    static LISTS: OnceLock<Vec<String>> = OnceLock::new();
    let lists = LISTS.get_or_init(|| {
        Workload::ALL
            .iter()
            .map(|&workload| {
                let names: Vec<&str> = select(workload, &[])
                    .expect("defaults resolve")
                    .iter()
                    .map(|engine| engine.name)
                    .collect();
                names.join(",")
            })
            .collect()
    });
    let index = Workload::ALL.iter().position(|&w| w == workload);
    &lists[index.expect("every workload is in ALL")]
}

/// Every opcode some engine submits, in table order, each once: what the probe reports.
pub fn opcodes_used() -> Vec<Opcode> {
    let mut opcodes: Vec<Opcode> = Vec::new();
    for opcode in ENGINES.iter().flat_map(|engine| engine.needs.opcodes) {
        if !opcodes.contains(opcode) {
            opcodes.push(*opcode);
        }
    }
    opcodes
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let ladder = "uring,uring-multishot,uring-sqpoll,uring-defer,uring-fixed-files,\
                      uring-bundle,uring-send-bundle,uring-recv-inc,uring-fixed-bufs,uring-min-wait,\
                      uring-send-zc,uring-napi,uring-zcrx";
        assert_eq!(default_list(Echo), format!("blocking,epoll,{ladder}"));
        assert_eq!(default_list(Http), format!("epoll,{ladder}"));
        assert_eq!(
            default_list(FsCycle),
            "blocking,uring-link,uring-fixed,uring-defer,uring-sqpoll,uring-ring-fd,\
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
