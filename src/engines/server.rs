//! The interface of a server engine: what a server loop is given (`Run`: its listener, the
//! protocol and limits, the counters it keeps), the counters themselves, and the socket
//! plumbing every server shares. A loop runs until the stop flag rises; `run_server` (the
//! table's, `mod.rs`) starts the loop of a row, giving the io_uring rows their kernel helpers.

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use serde::{Deserialize, Serialize};

use crate::protocols::Proto;
use crate::system::stop::stopped;

/// What every server loop needs besides its listener: the protocol and its limits.
#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    pub proto: Proto,
    /// Connections open at once; further ones are accepted and closed at once (counted as
    /// refused) so memory stays bounded.
    pub max_connections: usize,
    /// Buffers in the provided-buffer pool of the multishot io_uring engines (a power of two);
    /// 8 KiB each (`uring/server/receive_multishot.rs`). Other engines ignore it.
    pub provided_buffers: u16,
    /// Close a connection that sends nothing for this long (`--idle-timeout`; None: never).
    pub idle_timeout: Option<Duration>,
    /// Completion queue entries of the io_uring servers (a power of two; the submission queue
    /// is no larger). Other engines ignore it.
    pub cq_entries: u32,
}

/// A server's own counters, shared with the threads of the `threads` engine (hence atomics; the
/// single-threaded loops pay one uncontended add per message) and, in shared memory, with the
/// study that started the server (`shared_counters.rs`; hence `repr(C)` and atomics only).
#[derive(Debug, Default)]
#[repr(C)]
pub struct ServerCounters {
    pub connections_accepted: AtomicU64,
    pub connections_refused: AtomicU64,
    /// Connections that ended with an error (reset, broken pipe) rather than an orderly close.
    pub connections_failed: AtomicU64,
    /// Connections closed by `--idle-timeout`.
    pub connections_idle_closed: AtomicU64,
    pub bytes_received: AtomicU64,
    pub bytes_sent: AtomicU64,
    /// Zero-copy send notifications (`uring-send-zc`), and those that said the kernel copied.
    pub zero_copy_notifications: AtomicU64,
    pub zero_copy_copied: AtomicU64,
    /// Accepts that failed because the process (EMFILE) or the system (ENFILE) had no fd left;
    /// each paused accepting (`AcceptPause`) while the connection waited in the listen queue.
    pub connections_refused_fd_limit: AtomicU64,
    /// Multishot receives that ended because the provided-buffer pool was empty (ENOBUFS), each
    /// re-armed once a buffer came back.
    pub provided_buffers_exhausted: AtomicU64,
    /// Bytes a connection whose peer did not read moved out of the shared receive pool into
    /// memory of its own (`uring-recv-inc`: a queued slice holds a whole large buffer).
    pub pool_bytes_copied: AtomicU64,
    /// Waits after which the io_uring completion queue had overflowed: the kernel held the
    /// completions that did not fit (and ended the multishot operations that posted them) until
    /// the loop made room.
    pub cq_overflows: AtomicU64,
    /// Set once at start by a server that sends from registered buffers: its receive pool as
    /// fitted to the locked-memory limit, and the bytes it registered.
    pub provided_buffers: AtomicU64,
    pub registered_bytes: AtomicU64,
    /// Syscalls the loop made, by its own count: what a row carries when the kernel refuses its
    /// syscall counter (`syscalls_source: "self"`).
    pub syscalls_self: AtomicU64,
}

impl ServerCounters {
    pub fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }

    /// Counts `calls` syscalls the loop made.
    pub fn syscalls(&self, calls: u64) {
        Self::add(&self.syscalls_self, calls);
    }

    /// Counts the one syscall that produced `result` and passes it on:
    /// `counters.call(rustix::net::recv(..))`.
    pub fn call<T>(&self, result: T) -> T {
        self.syscalls(1);
        result
    }

    pub fn snapshot(&self) -> CountersSnapshot {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CountersSnapshot {
            connections_accepted: get(&self.connections_accepted),
            connections_refused: get(&self.connections_refused),
            connections_failed: get(&self.connections_failed),
            connections_idle_closed: get(&self.connections_idle_closed),
            bytes_received: get(&self.bytes_received),
            bytes_sent: get(&self.bytes_sent),
            zero_copy_notifications: get(&self.zero_copy_notifications),
            zero_copy_copied: get(&self.zero_copy_copied),
            connections_refused_fd_limit: get(&self.connections_refused_fd_limit),
            provided_buffers_exhausted: get(&self.provided_buffers_exhausted),
            pool_bytes_copied: get(&self.pool_bytes_copied),
            cq_overflows: get(&self.cq_overflows),
            provided_buffers: get(&self.provided_buffers),
            registered_bytes: get(&self.registered_bytes),
            syscalls_self: get(&self.syscalls_self),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CountersSnapshot {
    pub connections_accepted: u64,
    pub connections_refused: u64,
    pub connections_failed: u64,
    #[serde(default)]
    pub connections_idle_closed: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
    #[serde(default)]
    pub zero_copy_notifications: u64,
    #[serde(default)]
    pub zero_copy_copied: u64,
    #[serde(default)]
    pub connections_refused_fd_limit: u64,
    #[serde(default)]
    pub provided_buffers_exhausted: u64,
    #[serde(default)]
    pub pool_bytes_copied: u64,
    #[serde(default)]
    pub cq_overflows: u64,
    #[serde(default)]
    pub provided_buffers: u64,
    #[serde(default)]
    pub registered_bytes: u64,
    #[serde(default)]
    pub syscalls_self: u64,
}

/// Idle connections counted in ticks of one periodic timer (a third of the idle timeout), so a
/// message costs the server one store of the tick count, not a clock read or a timer of its
/// own (the event loops' `--idle-timeout`; a blocking server uses its socket timeout). A
/// connection last active during tick n is closed at tick n + 4: between 1 and 1.33 idle
/// timeouts after its last message.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdleClock {
    now: u32,
}

impl IdleClock {
    /// Ticks per idle timeout.
    const TICKS_IDLE: u32 = 3;

    /// How often the loop's timer ticks for `timeout`.
    pub fn interval(timeout: Duration) -> Duration {
        (timeout / Self::TICKS_IDLE).max(Duration::from_millis(1))
    }

    pub fn tick(&mut self, ticks: u32) {
        self.now = self.now.wrapping_add(ticks);
    }

    /// The mark a connection keeps of its last message.
    pub fn now(&self) -> u32 {
        self.now
    }

    /// Whether a connection last marked `mark` has been idle for the timeout.
    pub fn expired(&self, mark: u32) -> bool {
        self.now.wrapping_sub(mark) > Self::TICKS_IDLE
    }
}

/// How long a server stops accepting after an accept failed for want of an fd (EMFILE, ENFILE)
/// or of kernel memory. The connection stays in the listen queue, so an accept retried at once
/// fails again at once: servers that did so spun at 98-100% of a core while they held their
/// connections. A connection closing ends the pause early (its fd is free again); at the end of
/// its time the pause is renewed while no fd is free (`fd_free`), so a server at its limit
/// retries nothing. That matters for SQPOLL: each accept re-armed is a submission, after which
/// the kernel's poller spins for its idle time (100 ms), so a retry every 50 ms kept it spinning
/// for as long as the limit held.
pub const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// What a server loop does after a failed accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcceptFailure {
    /// That connection is lost (aborted before it was accepted) or the call was interrupted:
    /// accept the next at once.
    Retry,
    /// The process or the machine is out of fds or memory: stop accepting for `ACCEPT_PAUSE`
    /// or until a connection closes, and keep serving the open ones.
    Pause,
}

/// Sorts a failed accept, counting the refusals for want of an fd.
pub fn accept_failure(errno: Errno, counters: &ServerCounters) -> AcceptFailure {
    match errno {
        Errno::MFILE | Errno::NFILE => {
            ServerCounters::add(&counters.connections_refused_fd_limit, 1);
            AcceptFailure::Pause
        }
        Errno::NOBUFS | Errno::NOMEM => AcceptFailure::Pause,
        _ => AcceptFailure::Retry,
    }
}

/// A paused accept: until when, and how many connections were open when it began.
#[derive(Clone, Copy, Debug, Default)]
pub struct AcceptPause {
    paused: Option<(Instant, usize)>,
}

impl AcceptPause {
    pub fn start(&mut self, open: usize) {
        self.paused = Some((Instant::now() + ACCEPT_PAUSE, open));
    }

    pub fn is_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// How long the pause still lasts (None when accepting); what a loop's wait may take.
    pub fn left(&self) -> Option<Duration> {
        let (until, _) = self.paused?;
        Some(until.saturating_duration_since(Instant::now()))
    }

    /// Ends the pause, and says so, once fewer than the connections open when it began are
    /// open now, or once its time is up and the process could take an fd; a pause whose time
    /// is up while none is free starts over.
    pub fn end_if_due(&mut self, open: usize) -> bool {
        let Some((until, open_then)) = self.paused else {
            return false;
        };
        if open < open_then {
            self.paused = None;
            return true;
        }
        if Instant::now() < until {
            return false;
        }
        if !fd_free() {
            self.start(open_then);
            return false;
        }
        self.paused = None;
        true
    }

    /// Blocks the calling thread (an acceptor of its own) until the pause ends or the server
    /// stops; `open` counts the connections open now.
    pub fn sleep(&mut self, open: impl Fn() -> usize) {
        const STEP: Duration = Duration::from_millis(5);
        while !self.end_if_due(open()) && !stopped() {
            std::thread::sleep(STEP);
        }
    }
}

/// Whether the process could take one more fd now: an eventfd made and closed at once fails
/// with EMFILE or ENFILE exactly when an accept would, without a submission to a ring.
fn fd_free() -> bool {
    rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).is_ok()
}

impl std::ops::Add for CountersSnapshot {
    type Output = CountersSnapshot;

    fn add(self, other: CountersSnapshot) -> CountersSnapshot {
        CountersSnapshot {
            connections_accepted: self.connections_accepted + other.connections_accepted,
            connections_refused: self.connections_refused + other.connections_refused,
            connections_failed: self.connections_failed + other.connections_failed,
            connections_idle_closed: self.connections_idle_closed + other.connections_idle_closed,
            zero_copy_notifications: self.zero_copy_notifications + other.zero_copy_notifications,
            zero_copy_copied: self.zero_copy_copied + other.zero_copy_copied,
            bytes_received: self.bytes_received + other.bytes_received,
            bytes_sent: self.bytes_sent + other.bytes_sent,
            connections_refused_fd_limit: self.connections_refused_fd_limit
                + other.connections_refused_fd_limit,
            provided_buffers_exhausted: self.provided_buffers_exhausted
                + other.provided_buffers_exhausted,
            pool_bytes_copied: self.pool_bytes_copied + other.pool_bytes_copied,
            cq_overflows: self.cq_overflows + other.cq_overflows,
            provided_buffers: self.provided_buffers + other.provided_buffers,
            registered_bytes: self.registered_bytes + other.registered_bytes,
            syscalls_self: self.syscalls_self + other.syscalls_self,
        }
    }
}

/// How often a loop blocked in the kernel wakes up to look at the stop flag. Only an idle
/// server pays for it: a busy loop returns from the kernel long before.
pub const STOP_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Everything a server loop is given.
pub struct Run<'a> {
    pub listener: OwnedFd,
    pub config: ServerConfig,
    pub counters: &'a ServerCounters,
    /// Which of the server's loops this is (0: the first).
    pub loop_index: usize,
}

/// A listening TCP socket with a backlog deep enough for 256 clients connecting at once (std's
/// `TcpListener` uses 128, and a SYN dropped on a full backlog costs a client a 1 s retry).
pub fn listen(address: SocketAddr) -> std::io::Result<OwnedFd> {
    listening_socket(address, false)
}

/// `count` listening sockets on one address with SO_REUSEPORT, so that each server thread has
/// its own accept queue and the kernel spreads new connections over them by a hash of the
/// connection's addresses and ports. Port 0 is resolved by the first socket; the others bind
/// to the port it got.
pub fn listen_shared(address: SocketAddr, count: usize) -> std::io::Result<Vec<OwnedFd>> {
    assert!(count > 0);
    let mut listeners: Vec<OwnedFd> = Vec::with_capacity(count);
    let mut bound = address;
    for _ in 0..count {
        let socket = listening_socket(bound, true)?;
        bound = local_address(&socket)?;
        listeners.push(socket);
    }
    Ok(listeners)
}

fn listening_socket(address: SocketAddr, reuse_port: bool) -> std::io::Result<OwnedFd> {
    let family = match address {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let socket = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    rustix::net::sockopt::set_socket_reuseaddr(&socket, true)?;
    // Without it, the tail segment of a reply larger than one MSS waits for the client's
    // delayed ACK (up to 40 ms): Nagle paced every engine at about 22 echoes a second per
    // connection at 16 KiB. Linux copies the option into every socket this one accepts, plain
    // fd or direct descriptor, so no engine sets it per connection.
    rustix::net::sockopt::set_tcp_nodelay(&socket, true)?;
    if reuse_port {
        rustix::net::sockopt::set_socket_reuseport(&socket, true)?;
    }
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
pub fn is_peer_gone(errno: Errno) -> bool {
    matches!(
        errno,
        Errno::CONNRESET | Errno::PIPE | Errno::TIMEDOUT | Errno::HOSTUNREACH | Errno::NOTCONN
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every engine relies on the listener's TCP_NODELAY reaching the sockets it accepts.
    #[test]
    fn accepted_sockets_inherit_nodelay() {
        let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = local_address(&listener).unwrap();
        let _client = std::net::TcpStream::connect(address).unwrap();
        let accepted = rustix::net::accept(&listener).unwrap();
        assert!(rustix::net::sockopt::tcp_nodelay(&accepted).unwrap());
    }
}
