//! One client connection and what the load generator does with it: fill and send its next
//! message (or stretch of stream, or request), receive and check what comes back, and close it
//! when the server misbehaves or goes away. Every function here works on one connection; the
//! client loop (`client.rs`) decides when to call them.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};

use super::{LoadErrors, Mode};
use crate::protocols::echo::{
    fill_echo_message, fill_echo_stream, first_mismatch, stream_mismatch,
};
use crate::protocols::http::{Framed, ResponseFramer};

/// One client connection and the message (ping-pong) or stretch of stream it is sending.
pub struct Connection {
    pub stream: TcpStream,
    pub id: u64,
    pub sequence: u64,
    pub message: Box<[u8]>,
    /// Bytes of `message` sent; `message.len()` means the sender is idle.
    pub sent: usize,
    /// Ping-pong: bytes of the echo of `message` received.
    pub received: usize,
    /// Stream: offset of `message` in the stream, and bytes of echo received and checked.
    pub stream_sent: u64,
    pub stream_received: u64,
    /// When the message was sent (ping-pong) or the echo last moved (stream).
    pub started: Instant,
    /// When the request was due (HTTP open loop); equals `started` in a closed loop.
    pub due: Instant,
    /// Open loop: waiting for the next request's due time, nothing in flight.
    pub idle: bool,
    pub framer: ResponseFramer,
    /// EPOLLOUT is registered: the last send was short.
    pub writing: bool,
    /// Slow reader: EPOLLIN is withdrawn until `read_at`, so the echo backs up meanwhile.
    pub paused: bool,
    /// Slow reader: when the reader's rate allows its next `recv`.
    pub read_at: Instant,
    /// Stream: how far the sender may run ahead of the checked echo.
    pub window_bytes: u64,
    pub open: bool,
}

/// What one receive did.
pub enum Received {
    Nothing,
    /// Ping-pong: the whole echo is back, after this long.
    Message(Duration),
    /// Stream: this many more bytes of echo are back and checked.
    Bytes(usize),
    /// HTTP: a whole response is framed.
    Response(Framed),
}

/// window scale and the first advertised window already follow it.
pub fn connect(
    target: &SocketAddr,
    timeout: Duration,
    rcvbuf_bytes: Option<usize>,
) -> io::Result<TcpStream> {
    use rustix::event::{PollFd, PollFlags};
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    let Some(rcvbuf_bytes) = rcvbuf_bytes else {
        return TcpStream::connect_timeout(target, timeout);
    };
    let family = match target {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    let socket = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
    sockopt::set_socket_recv_buffer_size(&socket, rcvbuf_bytes)?;
    match rustix::net::connect(&socket, target) {
        Ok(()) => {}
        Err(Errno::INPROGRESS) => {
            let mut polled = [PollFd::new(&socket, PollFlags::OUT)];
            let limit = rustix::event::Timespec::try_from(timeout).map_err(io::Error::other)?;
            if rustix::event::poll(&mut polled, Some(&limit))? == 0 {
                return Err(io::ErrorKind::TimedOut.into());
            }
            sockopt::socket_error(&socket)??;
        }
        Err(error) => return Err(error.into()),
    }
    // The caller sets non-blocking mode again; `TcpStream` starts as what the fd is.
    Ok(TcpStream::from(socket))
}

/// Fills the connection's next message (or next stretch of its stream) and sends as much of
/// it as the socket takes.
pub fn start_message(
    connection: &mut Connection,
    mode: Mode,
    epoll_fd: &OwnedFd,
    index: usize,
    errors: &mut LoadErrors,
) {
    match mode {
        Mode::PingPong => {
            fill_echo_message(&mut connection.message, connection.id, connection.sequence);
            connection.received = 0;
            connection.started = Instant::now();
        }
        Mode::Stream => {
            let offset = connection.stream_sent;
            fill_echo_stream(&mut connection.message, connection.id, offset);
        }
        // The request never changes.
        Mode::Http => connection.started = Instant::now(),
    }
    connection.sent = 0;
    continue_send(connection, mode, epoll_fd, index, errors);
}

/// Whether a stream may send another stretch without running too far ahead of its echo.
pub fn may_send_more(connection: &Connection) -> bool {
    let sent_total = connection.stream_sent + connection.sent as u64;
    let ahead = sent_total - connection.stream_received;
    ahead + connection.message.len() as u64 <= connection.window_bytes
}

/// Sends the unsent rest of the message; registers for EPOLLOUT while the socket is full. A
/// stream goes on with its next stretch while its window allows.
pub fn continue_send(
    connection: &mut Connection,
    mode: Mode,
    epoll_fd: &OwnedFd,
    index: usize,
    errors: &mut LoadErrors,
) {
    loop {
        let rest = &connection.message[connection.sent..];
        if rest.is_empty() {
            if mode != Mode::Stream || !may_send_more(connection) {
                break;
            }
            connection.stream_sent += connection.message.len() as u64;
            let offset = connection.stream_sent;
            fill_echo_stream(&mut connection.message, connection.id, offset);
            connection.sent = 0;
            continue;
        }
        match rustix::net::send(&connection.stream, rest, SendFlags::NOSIGNAL) {
            Ok(sent) => connection.sent += sent,
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => break,
            Err(_) => {
                errors.write += 1;
                close(connection, epoll_fd);
                return;
            }
        }
    }
    let want_writing = connection.sent < connection.message.len();
    if want_writing != connection.writing {
        connection.writing = want_writing;
        register(connection, epoll_fd, index, errors);
    }
}

/// Registers what the connection waits for: its echo unless its reader is paused, and room to
/// send while its last send was short.
pub fn register(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    index: usize,
    errors: &mut LoadErrors,
) {
    let mut flags = EventFlags::empty();
    if !connection.paused {
        flags |= EventFlags::IN;
    }
    if connection.writing {
        flags |= EventFlags::OUT;
    }
    let data = EventData::new_u64(index as u64);
    if epoll::modify(epoll_fd, connection.stream.as_fd(), data, flags).is_err() {
        errors.reset += 1;
        close(connection, epoll_fd);
    }
}

/// One `recv` into `buffer`: the bytes received, or None when there were none yet or the
/// connection ended (closed or reset while bytes were awaited: counted, and closed here).
fn recv_or_close(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    buffer: &mut [u8],
    errors: &mut LoadErrors,
) -> Option<usize> {
    match rustix::net::recv(&connection.stream, buffer, RecvFlags::empty()) {
        Ok((received, _)) if received > 0 => Some(received),
        Err(Errno::AGAIN | Errno::INTR) => None,
        // 0: the server closed while bytes were awaited; any other error: a reset.
        Ok(_) | Err(_) => {
            errors.reset += 1;
            close(connection, epoll_fd);
            None
        }
    }
}

/// One `recv` of at most `scratch.len()` bytes, checked against what was sent.
pub fn receive(
    connection: &mut Connection,
    mode: Mode,
    epoll_fd: &OwnedFd,
    scratch: &mut [u8],
    errors: &mut LoadErrors,
) -> Received {
    debug_assert!(mode != Mode::Http, "HTTP answers go to receive_http");
    let Some(received) = recv_or_close(connection, epoll_fd, scratch, errors) else {
        return Received::Nothing;
    };
    let got = &scratch[..received];
    let verdict = match mode {
        Mode::PingPong | Mode::Http => {
            let end = connection.received + received;
            match connection.message.get(connection.received..end) {
                Some(want) => first_mismatch(want, got),
                // More bytes than were sent: the server made some up.
                None => Some(0),
            }
        }
        Mode::Stream => {
            let sent_end = connection.stream_sent + connection.sent as u64;
            if connection.stream_received + received as u64 > sent_end {
                Some(0)
            } else {
                stream_mismatch(got, connection.id, connection.stream_received)
            }
        }
    };
    if verdict.is_some() {
        errors.mismatch += 1;
        close(connection, epoll_fd);
        return Received::Nothing;
    }
    if mode == Mode::Stream {
        connection.stream_received += received as u64;
        connection.started = Instant::now();
        return Received::Bytes(received);
    }
    connection.received += received;
    if connection.received < connection.message.len() {
        return Received::Nothing;
    }
    connection.sequence += 1;
    Received::Message(connection.started.elapsed())
}

/// One `recv` on an HTTP connection, fed to its response framer. A response must end exactly
/// where the bytes of this read end: one request is in flight, so anything after its response
/// is bytes the server should not have sent.
pub fn receive_http(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    scratch: &mut [u8],
    errors: &mut LoadErrors,
) -> Received {
    let Some(received) = recv_or_close(connection, epoll_fd, scratch, errors) else {
        return Received::Nothing;
    };
    let mut bytes = &scratch[..received];
    let mut framed = None;
    while !bytes.is_empty() {
        match connection.framer.feed(bytes) {
            Ok((used, done)) if framed.is_none() && !connection.idle => {
                bytes = &bytes[used..];
                framed = done;
            }
            // Bad framing, or bytes beyond the one response owed.
            _ => {
                errors.mismatch += 1;
                close(connection, epoll_fd);
                return Received::Nothing;
            }
        }
    }
    match framed {
        Some(framed) => Received::Response(framed),
        None => Received::Nothing,
    }
}

/// Closes connections whose message has waited longer than `timeout`.
pub fn expire(
    connections: &mut [Connection],
    epoll_fd: &OwnedFd,
    timeout: Duration,
    errors: &mut LoadErrors,
) {
    // A paused reader waits by choice; its clock restarts when it reads again.
    for connection in connections
        .iter_mut()
        .filter(|c| c.open && !c.idle && !c.paused)
    {
        if connection.started.elapsed() > timeout {
            errors.timeout += 1;
            close(connection, epoll_fd);
        }
    }
}

/// Stops using a connection: out of the epoll set (a shut-down socket would report readiness
/// forever), shut down so the server sees the end, closed when the run ends.
pub fn close(connection: &mut Connection, epoll_fd: &OwnedFd) {
    connection.open = false;
    let _ = epoll::delete(epoll_fd, connection.stream.as_fd());
    let _ = connection.stream.shutdown(std::net::Shutdown::Both);
}
