//! Network workloads: single-threaded TCP servers, one file per I/O API, and the load generator
//! that drives them (seeds 000 and 004, "Network benchmarks").
//!
//! The division of labour: a server engine file (`blocking.rs`, `threads.rs`, `epoll.rs`,
//! `uring.rs`) owns the API calls and the event loop; the protocol (`proto.rs`) owns the bytes,
//! so the HTTP server of a later issue reuses every loop and differs only in its `Proto`; the load
//! generator (`load.rs`) is the fixed control that never changes with the server; the study
//! (`echo.rs`) runs servers as child processes and measures them from outside. HTTP is the second
//! protocol on the same loops (`http.rs`), with its own study (`http_study.rs`) on the echo
//! study's runner. `ENGINES` below is the one table that lists the server engines.

pub mod blocking;
pub mod buf_ring;
pub mod echo;
pub mod epoll;
pub mod http;
pub mod http_study;
pub mod load;
pub mod proto;
pub mod serve;
pub mod threads;
pub mod uring;

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::net::{AddressFamily, SocketFlags, SocketType};
use serde::Serialize;

pub use proto::Proto;

/// The io_uring features one server turns on; each engine adds one step to the one above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UringOptions {
    /// Multishot accept and multishot recv into a registered provided-buffer ring (seed 004).
    pub multishot: bool,
    /// SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN ring with a registered ring fd: completion
    /// work runs only when the loop asks for it, in batches, on the loop's own thread.
    pub defer_taskrun: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Blocking,
    Threads,
    Epoll,
    Uring(UringOptions),
}

pub struct EngineDef {
    pub name: &'static str,
    pub about: &'static str,
    pub kind: EngineKind,
}

impl EngineDef {
    /// Whether the engine can run here; the reason when it cannot.
    pub fn availability(&self) -> Result<(), String> {
        match self.kind {
            EngineKind::Blocking | EngineKind::Threads | EngineKind::Epoll => Ok(()),
            EngineKind::Uring(options) => uring::availability(options),
        }
    }
}

const fn uring(multishot: bool, defer_taskrun: bool) -> EngineKind {
    EngineKind::Uring(UringOptions {
        multishot,
        defer_taskrun,
    })
}

/// Every server engine, from the oldest API to the newest io_uring features.
pub const ENGINES: &[EngineDef] = &[
    EngineDef {
        name: "blocking",
        about: "one connection at a time, blocking recv/send (seed 000's net_blocking)",
        kind: EngineKind::Blocking,
    },
    EngineDef {
        name: "threads",
        about: "a thread per connection, blocking recv/send (the pre-epoll answer)",
        kind: EngineKind::Threads,
    },
    EngineDef {
        name: "epoll",
        about: "non-blocking sockets, level-triggered epoll, per-connection pending output",
        kind: EngineKind::Epoll,
    },
    EngineDef {
        name: "uring",
        about: "io_uring accept/recv/send SQEs relying on IORING_FEAT_FAST_POLL (seed 000)",
        kind: uring(false, false),
    },
    EngineDef {
        name: "uring-multishot",
        about: "io_uring multishot accept and recv from a provided buffer ring (seed 004)",
        kind: uring(true, false),
    },
    EngineDef {
        name: "uring-defer",
        about:
            "uring-multishot on a SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN ring, ring fd registered",
        kind: uring(true, true),
    },
];

/// Resolves `--engine` names (every engine when none are named).
pub fn select_engines(names: &[String]) -> anyhow::Result<Vec<&'static EngineDef>> {
    if names.is_empty() {
        return Ok(ENGINES.iter().collect());
    }
    names.iter().map(|name| find_engine(name)).collect()
}

pub fn find_engine(name: &str) -> anyhow::Result<&'static EngineDef> {
    ENGINES
        .iter()
        .find(|engine| engine.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = ENGINES.iter().map(|engine| engine.name).collect();
            anyhow::anyhow!(
                "'{name}' is not a network engine: choose from {}",
                known.join(", ")
            )
        })
}

/// What every server loop needs besides its listener: the protocol and its limits.
#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    pub proto: Proto,
    /// Connections open at once; further ones are accepted and closed at once (counted as
    /// refused) so memory stays bounded.
    pub max_connections: usize,
    /// Buffers in the provided-buffer pool of the multishot io_uring engines (a power of two);
    /// `POOL_BUFFER_BYTES` each. Other engines ignore it.
    pub provided_buffers: u16,
}

/// A server's own counters, shared with the threads of the `threads` engine (hence atomics; the
/// single-threaded loops pay one uncontended add per message).
#[derive(Debug, Default)]
pub struct ServerCounters {
    pub connections_accepted: AtomicU64,
    pub connections_refused: AtomicU64,
    /// Connections that ended with an error (reset, broken pipe) rather than an orderly close.
    pub connections_failed: AtomicU64,
    pub bytes_received: AtomicU64,
    pub bytes_sent: AtomicU64,
}

impl ServerCounters {
    pub fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CountersSnapshot {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CountersSnapshot {
            connections_accepted: get(&self.connections_accepted),
            connections_refused: get(&self.connections_refused),
            connections_failed: get(&self.connections_failed),
            bytes_received: get(&self.bytes_received),
            bytes_sent: get(&self.bytes_sent),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CountersSnapshot {
    pub connections_accepted: u64,
    pub connections_refused: u64,
    pub connections_failed: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
}

/// How often a loop blocked in the kernel wakes up to look at the stop flag. Only an idle
/// server pays for it: a busy loop returns from the kernel long before.
pub const STOP_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Runs the server loop of `engine` on `listener` until the stop flag rises; an io_uring
/// engine sets up its ring's kernel threads as `helpers` says.
pub fn run_server(
    engine: &EngineDef,
    listener: OwnedFd,
    config: ServerConfig,
    counters: &ServerCounters,
    helpers: &crate::ring::Helpers,
) -> anyhow::Result<()> {
    assert!(config.max_connections > 0);
    match engine.kind {
        EngineKind::Blocking => blocking::serve(listener, config, counters),
        EngineKind::Threads => threads::serve(listener, config, counters),
        EngineKind::Epoll => epoll::serve(listener, config, counters),
        EngineKind::Uring(options) => uring::serve(listener, config, counters, options, helpers),
    }
}

/// A listening TCP socket with a backlog deep enough for 256 clients connecting at once (std's
/// `TcpListener` uses 128, and a SYN dropped on a full backlog costs a client a 1 s retry).
pub fn listen(address: SocketAddr) -> std::io::Result<OwnedFd> {
    let family = match address {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let socket = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    rustix::net::sockopt::set_socket_reuseaddr(&socket, true)?;
    rustix::net::bind(&socket, &address)?;
    rustix::net::listen(&socket, 4096)?;
    Ok(socket)
}

/// The address a socket is bound to (port 0 resolved to the port the kernel chose).
pub fn local_address(socket: &OwnedFd) -> std::io::Result<SocketAddr> {
    let address = rustix::net::getsockname(socket)?;
    SocketAddr::try_from(address).map_err(|_| std::io::Error::other("not an IP socket"))
}

/// Whether an error from a connection means the peer went away (reset, broken pipe) rather
/// than a fault of the server; such errors end that connection only.
pub fn is_peer_gone(errno: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    matches!(
        errno,
        Errno::CONNRESET | Errno::PIPE | Errno::TIMEDOUT | Errno::HOSTUNREACH | Errno::NOTCONN
    )
}
