//! The `epoll` echo server: non-blocking sockets on one edge-triggered epoll instance, the way
//! a careful readiness loop is written (unlike the seeds' peers, which drop data on EAGAIN or
//! partial writes, or stall on bytes left behind an edge).
//!
//! Each connection is in one of two modes. Reading: interest is EPOLLIN | EPOLLRDHUP, and a
//! readiness edge is followed by `recv`s until one comes back short (the socket is empty) or the
//! peer hung up and the stream ended; at most `READS_PER_TURN` of them before the others get
//! their turn, the rest later in the same pass. Draining: a `send` was short or hit EAGAIN, what
//! is unsent waits in what the connection owes (`owed.rs`), interest switches to EPOLLOUT only,
//! and the connection reads nothing until it is gone. So a client that never reads costs the
//! server at most the answers to one receive, and bytes can never be reordered. With HTTP the
//! output is the answers the connection's `ServerSession` owes, sent as slices of the prebuilt
//! responses (a few bytes each to hold, whatever the body size), and a closing response switches
//! the connection to close once its output is gone (FIN behind it).

use std::os::fd::{AsFd, OwnedFd};

use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags, SocketFlags};
use slab::Slab;

use super::owed::Owed;
use super::server::{accept_failure, AcceptFailure, AcceptPause, IdleClock};
use super::server::{Run, ServerConfig, ServerCounters, STOP_POLL_INTERVAL};
use crate::protocols::http::ServerSession;
use crate::protocols::Reply;
use crate::system::epoll_wait::{empty_event, EpollWait};
use crate::system::stop::stopped;

/// One receive takes at most this much; what a connection owes is the answer to one receive.
const RECV_BUFFER_BYTES: usize = 64 * 1024;
const STOP_TOKEN: u64 = u64::MAX - 1;
/// The idle clock's timer (`--idle-timeout`).
const TICK_TOKEN: u64 = u64::MAX - 2;
/// Reads one connection may make before the loop serves the others (up to 1 MiB).
const READS_PER_TURN: usize = 16;
/// Connections are watched edge-triggered, with the peer's hang-up reported (see `receive`); the
/// listener level-triggered.
const EDGE: EventFlags = EventFlags::ET.union(EventFlags::RDHUP);
/// Events that say the peer closed or reset the connection.
const HUNG_UP: EventFlags = EventFlags::RDHUP
    .union(EventFlags::HUP)
    .union(EventFlags::ERR);

/// Readiness events taken per `epoll_wait`: one syscall reports up to this many connections.
const EVENTS_PER_WAIT: usize = 512;
/// Accepts per listener readiness event, so a connection storm cannot starve served clients.
const ACCEPTS_PER_EVENT: usize = 64;
const LISTENER_TOKEN: u64 = u64::MAX;

struct Connection {
    fd: OwnedFd,
    /// Output not yet sent; empty while reading.
    owed: Owed,
    session: ServerSession,
    /// The protocol ended the connection: close once the pending output is gone.
    close_after_drain: bool,
    /// Stopped at the read bound with bytes perhaps left: queued to be served again.
    turn_owed: bool,
    /// The idle clock's tick when the connection was last served (`--idle-timeout`).
    active_tick: u32,
}

pub fn serve(run: Run<'_>) -> anyhow::Result<()> {
    let (listener, config, counters) = (run.listener, run.config, run.counters);
    rustix::io::ioctl_fionbio(&listener, true)?;
    let epoll_fd = epoll::create(CreateFlags::CLOEXEC)?;
    epoll::add(
        &epoll_fd,
        &listener,
        EventData::new_u64(LISTENER_TOKEN),
        EventFlags::IN,
    )?;
    let mut connections: Slab<Connection> = Slab::with_capacity(config.max_connections.min(4096));
    let mut scratch = vec![0u8; RECV_BUFFER_BYTES];
    let mut events = vec![empty_event(); EVENTS_PER_WAIT];
    let waits = EpollWait::new(&epoll_fd)?;
    // Wait with no timeout, woken for Ctrl-C by the stop event; only without one look now and
    // then (a timeout costs every wait a timer).
    let stop = crate::system::stop::stop_event();
    if let Some(stop) = stop {
        epoll::add(
            &epoll_fd,
            stop,
            EventData::new_u64(STOP_TOKEN),
            EventFlags::IN,
        )?;
    }
    let timeout = match stop {
        Some(_) => None,
        None => Some(STOP_POLL_INTERVAL),
    };
    // `--idle-timeout`: one periodic timer for every connection (a timer structure of one
    // clock), not a timer per connection or per wait.
    let mut idle = match config.idle_timeout {
        Some(timeout) => {
            let timer = idle_timer(timeout)?;
            epoll::add(
                &epoll_fd,
                &timer,
                EventData::new_u64(TICK_TOKEN),
                EventFlags::IN,
            )?;
            Some((timer, IdleClock::default()))
        }
        None => None,
    };
    // Connections that hit the read bound with bytes left: served again before the next wait,
    // which then does not block. Swapped with `served`, so neither allocates once grown.
    let mut again: Vec<usize> = Vec::new();
    let mut served: Vec<usize> = Vec::new();
    let mut pause = AcceptPause::default();
    while !stopped() {
        let wait = if !again.is_empty() {
            Some(std::time::Duration::ZERO)
        } else {
            pause.left().or(timeout)
        };
        let waited = waits.wait(&epoll_fd, &mut events[..], wait);
        counters.syscalls(waits.take_syscalls());
        let ready = match waited {
            Ok(ready) => ready,
            Err(Errno::INTR) => continue,
            Err(error) => return Err(anyhow::anyhow!("epoll_wait failed: {error}")),
        };
        std::mem::swap(&mut again, &mut served);
        let mut loop_state = Loop {
            epoll_fd: &epoll_fd,
            connections: &mut connections,
            config,
            counters,
            scratch: &mut scratch[..],
            again: &mut again,
            active_tick: idle.as_ref().map_or(0, |(_, clock)| clock.now()),
        };
        for slot in served.drain(..) {
            if let Some(connection) = loop_state.connections.get_mut(slot) {
                connection.turn_owed = false;
                loop_state.serve(slot, false);
            }
        }
        for event in &events[..ready] {
            let token = event.data.u64();
            if token == STOP_TOKEN {
                continue; // The loop's condition sees the flag.
            }
            if token == TICK_TOKEN {
                if let Some((timer, clock)) = &mut idle {
                    close_idle(timer, clock, loop_state.connections, counters);
                }
                continue;
            }
            if token == LISTENER_TOKEN {
                let connections = &mut *loop_state.connections;
                let active_tick = loop_state.active_tick;
                let failure = accept_ready(
                    &listener,
                    &epoll_fd,
                    connections,
                    (config, counters),
                    active_tick,
                );
                if failure == Some(AcceptFailure::Pause) {
                    // Level-triggered, the waiting connection would wake every wait at once.
                    let data = EventData::new_u64(LISTENER_TOKEN);
                    counters.call(epoll::modify(
                        &epoll_fd,
                        &listener,
                        data,
                        EventFlags::empty(),
                    ))?;
                    pause.start(connections.len());
                }
                continue;
            }
            let flags = event.flags;
            loop_state.serve(token as usize, flags.intersects(HUNG_UP));
        }
        if pause.is_paused() && pause.end_if_due(connections.len()) {
            let data = EventData::new_u64(LISTENER_TOKEN);
            counters.call(epoll::modify(&epoll_fd, &listener, data, EventFlags::IN))?;
        }
    }
    Ok(())
}

/// What serving one ready connection needs from the loop.
struct Loop<'a> {
    epoll_fd: &'a OwnedFd,
    connections: &'a mut Slab<Connection>,
    config: ServerConfig,
    counters: &'a ServerCounters,
    scratch: &'a mut [u8],
    again: &'a mut Vec<usize>,
    /// The idle clock now (0 without `--idle-timeout`).
    active_tick: u32,
}

impl Loop<'_> {
    /// Serves the connection in `slot` (if it is still open): sends its pending output, or
    /// receives and replies; closes it when it ended.
    fn serve(&mut self, slot: usize, hung_up: bool) {
        let Some(connection) = self.connections.get_mut(slot) else {
            return; // Closed earlier in this batch.
        };
        connection.active_tick = self.active_tick;
        // Dispatch on the connection's mode, not on the event: a reset reports ERR|HUP
        // whatever the interest, and a draining connection must not read.
        let owners = (self.config, self.counters);
        let outcome = if !connection.owed.is_empty() {
            drain(connection, self.epoll_fd, slot, owners)
        } else {
            let scratch = &mut *self.scratch;
            let more = receive(connection, self.epoll_fd, slot, hung_up, owners, scratch);
            if more == Ok(true) && !connection.turn_owed {
                connection.turn_owed = true;
                self.again.push(slot);
            }
            more.map(drop)
        };
        if let Err(failed) = outcome {
            let connection = self.connections.remove(slot);
            if failed {
                ServerCounters::add(&self.counters.connections_failed, 1);
            }
            // Closing the fd also removes it from the epoll set.
            drop(connection);
            self.counters.syscalls(1);
        }
    }
}

/// A periodic timer ticking `IdleClock::interval(timeout)`.
fn idle_timer(timeout: std::time::Duration) -> anyhow::Result<OwnedFd> {
    use rustix::time::{timerfd_create, timerfd_settime, Itimerspec, Timespec};
    use rustix::time::{TimerfdClockId, TimerfdFlags, TimerfdTimerFlags};
    let flags = TimerfdFlags::CLOEXEC | TimerfdFlags::NONBLOCK;
    let timer = timerfd_create(TimerfdClockId::Monotonic, flags)?;
    let every = Timespec::try_from(IdleClock::interval(timeout))?;
    let spec = Itimerspec {
        it_interval: every,
        it_value: every,
    };
    timerfd_settime(&timer, TimerfdTimerFlags::empty(), &spec)?;
    Ok(timer)
}

/// The idle clock ticked: closes the connections not served for the idle timeout.
fn close_idle(
    timer: &OwnedFd,
    clock: &mut IdleClock,
    connections: &mut Slab<Connection>,
    counters: &ServerCounters,
) {
    let mut expirations = [0u8; 8];
    if counters.call(rustix::io::read(timer, &mut expirations)) != Ok(8) {
        return; // Read already, for this tick.
    }
    clock.tick(u64::from_ne_bytes(expirations).min(u64::from(u32::MAX)) as u32);
    let clock = *clock;
    // Dropping a connection closes its fd, which also removes it from the epoll set.
    connections.retain(|_, connection| {
        let idle = clock.expired(connection.active_tick);
        if idle {
            ServerCounters::add(&counters.connections_idle_closed, 1);
            counters.syscalls(1); // Its close, as it drops.
        }
        !idle
    });
}

/// Accepts the connections waiting, up to `ACCEPTS_PER_EVENT`; stops at the first accept that
/// says to pause (out of fds) and returns that.
fn accept_ready(
    listener: &OwnedFd,
    epoll_fd: &OwnedFd,
    connections: &mut Slab<Connection>,
    (config, counters): (ServerConfig, &ServerCounters),
    active_tick: u32,
) -> Option<AcceptFailure> {
    for _ in 0..ACCEPTS_PER_EVENT {
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        let fd = match counters.call(rustix::net::accept_with(listener, flags)) {
            Ok(fd) => fd,
            Err(Errno::AGAIN) => return None,
            Err(error) => match accept_failure(error, counters) {
                AcceptFailure::Retry => continue, // ECONNABORTED: that connection is lost.
                AcceptFailure::Pause => return Some(AcceptFailure::Pause),
            },
        };
        if connections.len() >= config.max_connections {
            ServerCounters::add(&counters.connections_refused, 1);
            counters.syscalls(1); // Its close, as it drops.
            continue;
        }
        let entry = connections.vacant_entry();
        let data = EventData::new_u64(entry.key() as u64);
        if counters
            .call(epoll::add(epoll_fd, &fd, data, EDGE | EventFlags::IN))
            .is_err()
        {
            ServerCounters::add(&counters.connections_failed, 1);
            counters.syscalls(1); // Its close, as it drops.
            continue;
        }
        ServerCounters::add(&counters.connections_accepted, 1);
        entry.insert(Connection {
            fd,
            owed: Owed::default(),
            session: ServerSession::default(),
            close_after_drain: false,
            turn_owed: false,
            active_tick,
        });
    }
    None
}

/// Receives and replies until the socket is empty. `Err(failed)` means close the connection
/// (`failed` when it ended with an error rather than an orderly close).
///
/// Interest is edge-triggered, so an event is not repeated for bytes left unread: a read that
/// filled the buffer may have left more behind and is followed by another, while a shorter read
/// emptied the socket (a TCP receive queue hands over all it holds) — unless the peer has hung
/// up (`hung_up`): its FIN or reset came with the data and raises no new edge, so the reads go
/// on to the end of the stream. Level-triggered, each ready socket was polled again by the next
/// wait, one more poll per message. So that one busy connection cannot hold the loop, it reads
/// at most `READS_PER_TURN` times; `Ok(true)` says it stopped there with bytes perhaps left.
fn receive(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    slot: usize,
    hung_up: bool,
    (config, counters): (ServerConfig, &ServerCounters),
    scratch: &mut [u8],
) -> Result<bool, bool> {
    for _ in 0..READS_PER_TURN {
        debug_assert!(connection.owed.is_empty());
        let received = counters.call(rustix::net::recv(
            &connection.fd,
            &mut *scratch,
            RecvFlags::empty(),
        ));
        let received = match received {
            Ok((0, _)) => return Err(false),
            Ok((received, _)) => received,
            Err(Errno::AGAIN) => return Ok(false),
            Err(Errno::INTR) => continue,
            Err(_) => return Err(true),
        };
        ServerCounters::add(&counters.bytes_received, received as u64);
        let input = &scratch[..received];
        let owed = &mut connection.owed;
        match config
            .proto
            .reply(&mut connection.session, input, &mut |of| owed.answer(of))
        {
            // Sent straight from the receive buffer; only what the socket did not take is kept.
            Reply::Input => {
                let sent = match counters.call(rustix::net::send(
                    &connection.fd,
                    input,
                    SendFlags::NOSIGNAL,
                )) {
                    Ok(sent) => sent,
                    Err(Errno::AGAIN | Errno::INTR) => 0,
                    Err(_) => return Err(true),
                };
                ServerCounters::add(&counters.bytes_sent, sent as u64);
                if sent < input.len() {
                    owed.echo(&input[sent..]);
                }
            }
            Reply::Http(reply) => connection.close_after_drain |= reply.closing.is_some(),
        }
        let responses = config.proto.responses();
        let sent_all = owed
            .flush(connection.fd.as_fd(), responses, counters)
            .map_err(|_| true)?;
        if !sent_all {
            // Backed up: stop reading until it is gone. Reading resumes when `drain` switches
            // the interest back, which reports bytes already waiting.
            let data = EventData::new_u64(slot as u64);
            counters
                .call(epoll::modify(
                    epoll_fd,
                    &connection.fd,
                    data,
                    EDGE | EventFlags::OUT,
                ))
                .map_err(|_| true)?;
            return Ok(false);
        }
        close_if_done(connection, counters)?;
        if received < scratch.len() && !hung_up {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Ends a connection whose protocol said so once its output is all sent: the FIN goes out
/// behind the last response, and the caller drops the fd.
fn close_if_done(connection: &Connection, counters: &ServerCounters) -> Result<(), bool> {
    if !connection.close_after_drain {
        return Ok(());
    }
    let _ = counters.call(rustix::net::shutdown(
        &connection.fd,
        rustix::net::Shutdown::Write,
    ));
    Err(false)
}

/// Sends what the connection owes; once it is all gone, the connection reads again.
fn drain(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    slot: usize,
    (config, counters): (ServerConfig, &ServerCounters),
) -> Result<(), bool> {
    debug_assert!(!connection.owed.is_empty());
    // Edge-triggered: send until the output is gone or the socket is full again, or no new
    // event comes for the rest.
    let responses = config.proto.responses();
    let sent_all = connection
        .owed
        .flush(connection.fd.as_fd(), responses, counters)
        .map_err(|_| true)?;
    if !sent_all {
        return Ok(());
    }
    close_if_done(connection, counters)?;
    let data = EventData::new_u64(slot as u64);
    counters
        .call(epoll::modify(
            epoll_fd,
            &connection.fd,
            data,
            EDGE | EventFlags::IN,
        ))
        .map_err(|_| true)?;
    Ok(())
}
