//! The `blocking` echo server: accept one connection, serve it with blocking `recv`/`send` until
//! it closes, then accept the next (seed 000's net_blocking.zig). Two syscalls a message and no
//! event loop at all, so with one client it is the floor every other engine is measured
//! against; with more clients it cannot keep up, and the study shows that as a row, not a hang.
//!
//! `serve_connection` is also the body of every thread of the `threads` engine. It speaks
//! whichever `Proto` it is given: an echo sends the input back, HTTP sends the responses the
//! connection's `ServerSession` owes as slices of the prebuilt responses, gathered into
//! `sendmsg`s and never copied (`owed.rs`), and closes after a closing one. It reads again only
//! once everything owed is sent, so a client that never reads holds the thread in its send, not
//! memory.

use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags, SocketFlags};

use crate::engines::owed::Owed;
use crate::engines::server::{accept_failure, AcceptFailure, AcceptPause, STOP_POLL_INTERVAL};
use crate::engines::server::{is_peer_gone, Run, ServerConfig, ServerCounters};
use crate::protocols::http::{Responses, ServerSession};
use crate::protocols::Reply;
use crate::system::stop::stopped;

/// Receive buffer per connection: larger than any message the study sends, so one `recv`
/// takes all a client has sent.
pub const RECV_BUFFER_BYTES: usize = 64 * 1024;

pub fn serve(run: Run<'_>) -> anyhow::Result<()> {
    let (listener, config, counters) = (run.listener, run.config, run.counters);
    set_timeouts(&listener)?;
    let mut buffer = vec![0u8; RECV_BUFFER_BYTES];
    let mut pause = AcceptPause::default();
    while !stopped() {
        let accepted = counters.call(rustix::net::accept_with(&listener, SocketFlags::CLOEXEC));
        let connection = match accepted {
            Ok(connection) => connection,
            Err(error) => {
                // No connection is open here while it accepts: only time ends a pause.
                if accept_failure(error, counters) == AcceptFailure::Pause {
                    pause.start(0);
                    pause.sleep(|| 0);
                }
                continue;
            }
        };
        ServerCounters::add(&counters.connections_accepted, 1);
        serve_connection(connection, config, counters, &mut buffer);
    }
    Ok(())
}

/// Socket timeouts so a blocked `accept`, `recv` or `send` returns now and then to look at the
/// stop flag (Ctrl-C must end even a server whose client went silent).
pub fn set_timeouts(socket: &OwnedFd) -> anyhow::Result<()> {
    set_timeouts_every(socket, STOP_POLL_INTERVAL)
}

fn set_timeouts_every(socket: &OwnedFd, every: Duration) -> anyhow::Result<()> {
    use rustix::net::sockopt::{set_socket_timeout, Timeout};
    set_socket_timeout(socket, Timeout::Recv, Some(every))?;
    set_socket_timeout(socket, Timeout::Send, Some(every))?;
    Ok(())
}

/// `--idle-timeout` as socket timeouts: a receive timeout that divides the idle timeout into
/// waits no longer than the stop-flag tick, and how many of them in a row mean idle. A message
/// costs a counter reset, not a clock read.
fn idle_waits(idle_timeout: Option<Duration>) -> (Duration, Option<u32>) {
    match idle_timeout {
        None => (STOP_POLL_INTERVAL, None),
        Some(timeout) => {
            let waits = timeout
                .as_nanos()
                .div_ceil(STOP_POLL_INTERVAL.as_nanos())
                .max(1) as u32;
            ((timeout / waits).max(Duration::from_millis(1)), Some(waits))
        }
    }
}

/// Serves one connection until the peer closes it, resets it, or the server stops, and closes
/// it. Errors end the connection only.
pub fn serve_connection(
    connection: OwnedFd,
    config: ServerConfig,
    counters: &ServerCounters,
    buffer: &mut [u8],
) {
    serve_until_closed(&connection, config, counters, buffer);
    counters.syscalls(1); // The close, as `connection` drops.
}

fn serve_until_closed(
    connection: &OwnedFd,
    config: ServerConfig,
    counters: &ServerCounters,
    buffer: &mut [u8],
) {
    let (every, idle_waits_max) = idle_waits(config.idle_timeout);
    counters.syscalls(2); // The two timeouts set.
    if set_timeouts_every(connection, every).is_err() {
        ServerCounters::add(&counters.connections_failed, 1);
        return;
    }
    // Receive timeouts in a row, each a silent `every`.
    let mut silent_waits = 0u32;
    let mut session = ServerSession::default();
    let mut owed = Owed::default();
    while !stopped() {
        let received = counters.call(rustix::net::recv(
            connection,
            &mut *buffer,
            RecvFlags::empty(),
        ));
        let received = match received {
            Ok((0, _)) => return,
            Ok((received, _)) => received,
            Err(Errno::AGAIN) => {
                silent_waits += 1;
                if idle_waits_max.is_some_and(|max| silent_waits >= max) {
                    ServerCounters::add(&counters.connections_idle_closed, 1);
                    return;
                }
                continue;
            }
            Err(Errno::INTR) => continue,
            Err(error) => {
                debug_assert!(is_peer_gone(error), "recv: {error}");
                ServerCounters::add(&counters.connections_failed, 1);
                return;
            }
        };
        silent_waits = 0;
        ServerCounters::add(&counters.bytes_received, received as u64);
        let input = &buffer[..received];
        let (sent, close) = match config
            .proto
            .reply(&mut session, input, &mut |of| owed.answer(of))
        {
            Reply::Input => {
                let sent = send_all(connection, input, counters);
                if sent.is_ok() {
                    ServerCounters::add(&counters.bytes_sent, input.len() as u64);
                }
                (sent, false)
            }
            Reply::Http(reply) => {
                let responses = config.proto.responses();
                let sent = send_owed(connection, &mut owed, responses, counters);
                (sent, reply.closing.is_some())
            }
        };
        if sent.is_err() {
            ServerCounters::add(&counters.connections_failed, 1);
            return;
        }
        if close {
            // The FIN goes out behind the response; the fd closes when `connection` drops.
            let _ = counters.call(rustix::net::shutdown(
                connection,
                rustix::net::Shutdown::Write,
            ));
            return;
        }
    }
}

/// Sends everything `owed` holds, resuming after short sends and send timeouts (a client that
/// reads slowly, or not at all), giving up only when the peer is gone or the server stops.
fn send_owed(
    connection: &OwnedFd,
    owed: &mut Owed,
    responses: Option<&Responses>,
    counters: &ServerCounters,
) -> Result<(), Errno> {
    loop {
        match owed.flush(connection.as_fd(), responses, counters) {
            Ok(true) => return Ok(()),
            Ok(false) if !stopped() => continue,
            Ok(false) => return Err(Errno::AGAIN),
            Err(error) => return Err(error),
        }
    }
}

/// Sends every byte of `bytes`, resuming after short sends and send timeouts (a client that
/// reads slowly), giving up only when the peer is gone or the server stops.
fn send_all(
    connection: &OwnedFd,
    mut bytes: &[u8],
    counters: &ServerCounters,
) -> Result<(), Errno> {
    while !bytes.is_empty() {
        match counters.call(rustix::net::send(connection, bytes, SendFlags::NOSIGNAL)) {
            Ok(sent) => bytes = &bytes[sent..],
            Err(Errno::AGAIN | Errno::INTR) if !stopped() => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
