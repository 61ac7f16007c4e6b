//! The `epoll` echo server: non-blocking sockets on one level-triggered epoll instance, the way
//! a careful readiness loop is written (unlike the seeds' peers, which drop data on EAGAIN or
//! partial writes).
//!
//! Each connection is in one of two modes. Reading: interest is EPOLLIN, and one `recv` per
//! readiness event (level-triggered, so bytes left in the socket simply report again, and no
//! connection starves the others). Draining: a `send` was short or hit EAGAIN, the unsent rest
//! waits in the connection's pending output, interest switches to EPOLLOUT only, and the
//! connection reads nothing until its output is gone. So a client that never reads costs the
//! server at most one receive buffer, and bytes can never be reordered. With HTTP the output is
//! the responses the connection's `ServerSession` owes rather than the input, and a closing
//! response switches the connection to close once its output is gone (FIN behind it).

use std::os::fd::OwnedFd;

use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags, SocketFlags};
use slab::Slab;

use super::server::{Run, ServerConfig, ServerCounters, STOP_POLL_INTERVAL};
use crate::protocols::http::ServerSession;
use crate::protocols::Reply;
use crate::system::stop::stopped;

/// One receive takes at most this much; it is also the bound on a connection's pending output.
const RECV_BUFFER_BYTES: usize = 64 * 1024;
/// Readiness events taken per `epoll_wait`: one syscall reports up to this many connections.
const EVENTS_PER_WAIT: usize = 512;
/// Accepts per listener readiness event, so a connection storm cannot starve served clients.
const ACCEPTS_PER_EVENT: usize = 64;
const LISTENER_TOKEN: u64 = u64::MAX;

struct Connection {
    fd: OwnedFd,
    /// Bytes received but not yet sent back; empty while reading.
    pending: Vec<u8>,
    pending_sent: usize,
    session: ServerSession,
    /// The protocol ended the connection: close once the pending output is gone.
    close_after_drain: bool,
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
    // Replies that are not one slice of the prebuilt responses are assembled here.
    let mut assembled = Vec::new();
    let empty = Event {
        flags: EventFlags::empty(),
        data: EventData::new_u64(0),
    };
    let mut events = vec![empty; EVENTS_PER_WAIT];
    let timeout = rustix::event::Timespec::try_from(STOP_POLL_INTERVAL)?;
    while !stopped() {
        let ready = match epoll::wait(&epoll_fd, &mut events[..], Some(&timeout)) {
            Ok(ready) => ready,
            Err(Errno::INTR) => continue,
            Err(error) => return Err(anyhow::anyhow!("epoll_wait failed: {error}")),
        };
        for event in &events[..ready] {
            let token = event.data.u64();
            if token == LISTENER_TOKEN {
                accept_ready(&listener, &epoll_fd, &mut connections, config, counters);
                continue;
            }
            let slot = token as usize;
            let Some(connection) = connections.get_mut(slot) else {
                continue; // Closed earlier in this batch.
            };
            // Dispatch on the connection's mode, not on the event: a reset reports ERR|HUP
            // whatever the interest, and a draining connection must not read.
            let outcome = if !connection.pending.is_empty() {
                drain(connection, &epoll_fd, slot, counters)
            } else {
                let buffers = (&mut scratch[..], &mut assembled);
                receive(connection, &epoll_fd, slot, config, counters, buffers)
            };
            if let Err(failed) = outcome {
                let connection = connections.remove(slot);
                if failed {
                    ServerCounters::add(&counters.connections_failed, 1);
                }
                // Closing the fd also removes it from the epoll set.
                drop(connection);
            }
        }
    }
    Ok(())
}

fn accept_ready(
    listener: &OwnedFd,
    epoll_fd: &OwnedFd,
    connections: &mut Slab<Connection>,
    config: ServerConfig,
    counters: &ServerCounters,
) {
    for _ in 0..ACCEPTS_PER_EVENT {
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        let fd = match rustix::net::accept_with(listener, flags) {
            Ok(fd) => fd,
            Err(Errno::AGAIN) => return,
            Err(_) => continue, // ECONNABORTED, EMFILE: that connection is lost, not the server.
        };
        if connections.len() >= config.max_connections {
            ServerCounters::add(&counters.connections_refused, 1);
            continue;
        }
        let entry = connections.vacant_entry();
        let data = EventData::new_u64(entry.key() as u64);
        if epoll::add(epoll_fd, &fd, data, EventFlags::IN).is_err() {
            ServerCounters::add(&counters.connections_failed, 1);
            continue;
        }
        ServerCounters::add(&counters.connections_accepted, 1);
        entry.insert(Connection {
            fd,
            pending: Vec::new(),
            pending_sent: 0,
            session: ServerSession::default(),
            close_after_drain: false,
        });
    }
}

/// One receive and its reply. `Err(failed)` means close the connection (`failed` when it ended
/// with an error rather than an orderly close).
fn receive(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    slot: usize,
    config: ServerConfig,
    counters: &ServerCounters,
    (scratch, assembled): (&mut [u8], &mut Vec<u8>),
) -> Result<(), bool> {
    debug_assert!(connection.pending.is_empty());
    let received = match rustix::net::recv(&connection.fd, &mut *scratch, RecvFlags::empty()) {
        Ok((0, _)) => return Err(false),
        Ok((received, _)) => received,
        Err(Errno::AGAIN | Errno::INTR) => return Ok(()),
        Err(_) => return Err(true),
    };
    ServerCounters::add(&counters.bytes_received, received as u64);
    let input = &scratch[..received];
    let output = match config.proto.reply(&mut connection.session, input) {
        Reply::Input => input,
        Reply::Http(reply) => {
            if reply.is_empty() {
                return Ok(()); // Half a request; the rest comes with a later read.
            }
            connection.close_after_drain = reply.closing.is_some();
            let responses = config.proto.responses().expect("HTTP has responses");
            match responses.contiguous(reply) {
                Some(bytes) => bytes,
                None => {
                    assembled.clear();
                    responses.write(reply, assembled);
                    &assembled[..]
                }
            }
        }
    };
    let sent = match rustix::net::send(&connection.fd, output, SendFlags::NOSIGNAL) {
        Ok(sent) => sent,
        Err(Errno::AGAIN | Errno::INTR) => 0,
        Err(_) => return Err(true),
    };
    ServerCounters::add(&counters.bytes_sent, sent as u64);
    if sent < output.len() {
        // Backed up: keep the rest and stop reading until it is gone.
        connection.pending.extend_from_slice(&output[sent..]);
        connection.pending_sent = 0;
        let data = EventData::new_u64(slot as u64);
        epoll::modify(epoll_fd, &connection.fd, data, EventFlags::OUT).map_err(|_| true)?;
        return Ok(());
    }
    close_if_done(connection)
}

/// Ends a connection whose protocol said so once its output is all sent: the FIN goes out
/// behind the last response, and the caller drops the fd.
fn close_if_done(connection: &Connection) -> Result<(), bool> {
    if !connection.close_after_drain {
        return Ok(());
    }
    let _ = rustix::net::shutdown(&connection.fd, rustix::net::Shutdown::Write);
    Err(false)
}

/// Sends pending output; once it is all gone, the connection reads again.
fn drain(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    slot: usize,
    counters: &ServerCounters,
) -> Result<(), bool> {
    let rest = &connection.pending[connection.pending_sent..];
    debug_assert!(!rest.is_empty());
    match rustix::net::send(&connection.fd, rest, SendFlags::NOSIGNAL) {
        Ok(sent) => {
            connection.pending_sent += sent;
            ServerCounters::add(&counters.bytes_sent, sent as u64);
        }
        Err(Errno::AGAIN | Errno::INTR) => return Ok(()),
        Err(_) => return Err(true),
    }
    if connection.pending_sent == connection.pending.len() {
        connection.pending.clear();
        connection.pending_sent = 0;
        close_if_done(connection)?;
        let data = EventData::new_u64(slot as u64);
        epoll::modify(epoll_fd, &connection.fd, data, EventFlags::IN).map_err(|_| true)?;
    }
    Ok(())
}
