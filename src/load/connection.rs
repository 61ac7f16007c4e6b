//! One client connection and what the load generator does with it: fill and send its next
//! message (or stretch of stream, or request), receive and check what comes back, and close it
//! when the server misbehaves or goes away, open it again when the server closed it in order
//! after an answer (HTTP/1.0, `Connection: close`, as wrk does), and hang it up in order when the
//! run ends. Every function here works on one connection; the client loop (`client.rs`) decides
//! when to call them.

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
use crate::system::epoll_wait::EpollWait;

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
    /// Opened again after the server closed it (`reopen`), and not yet connected: it waits
    /// for EPOLLOUT, and its next request goes out once it is connected.
    pub connecting: bool,
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
    /// HTTP: the server closed the connection in order while no request was in flight (an idle
    /// connection of an open loop); it may be opened again.
    Closed,
}

/// Connects to `target` within `timeout`, or fails (`Interrupted` once the stop flag is up).
/// `rcvbuf_bytes` (the slow reader) is set on the socket before it connects, so that the
/// window scale and the first advertised window already follow it.
pub fn connect(
    target: &SocketAddr,
    timeout: Duration,
    rcvbuf_bytes: Option<usize>,
) -> io::Result<TcpStream> {
    use rustix::event::{PollFd, PollFlags};
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    let family = match target {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    let socket = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
    if let Some(rcvbuf_bytes) = rcvbuf_bytes {
        sockopt::set_socket_recv_buffer_size(&socket, rcvbuf_bytes)?;
    }
    match rustix::net::connect(&socket, target) {
        Ok(()) => {}
        Err(Errno::INPROGRESS) => {
            // The stop event is polled beside the socket: a SYN the server never answers (a
            // full listen queue) would otherwise hold Ctrl-C for the whole --timeout, since
            // the signal may land on another thread and poll restarts nothing to look again.
            let stop = crate::system::stop::stop_event();
            let stop_fd = stop.unwrap_or(socket.as_fd());
            let watched = if stop.is_some() { 2 } else { 1 };
            let until = Instant::now() + timeout;
            loop {
                let left = until.saturating_duration_since(Instant::now());
                let limit = rustix::event::Timespec::try_from(left).map_err(io::Error::other)?;
                let mut polled = [
                    PollFd::new(&socket, PollFlags::OUT),
                    PollFd::new(&stop_fd, PollFlags::IN),
                ];
                match rustix::event::poll(&mut polled[..watched], Some(&limit)) {
                    _ if crate::system::stop::stopped() => {
                        return Err(io::ErrorKind::Interrupted.into());
                    }
                    Err(Errno::INTR) => continue,
                    Err(error) => return Err(error.into()),
                    Ok(_) if !polled[0].revents().is_empty() => break,
                    Ok(_) if left.is_zero() => return Err(io::ErrorKind::TimedOut.into()),
                    Ok(_) => continue,
                }
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
    if connection.idle && connection.framer.is_idle() {
        // Nothing awaited: the end of the stream is a server closing an idle connection (an
        // idle timeout), which a client meets by connecting again when it next has a request.
        let mut byte = [0u8; 1];
        if let Ok((0, _)) = rustix::net::recv(&connection.stream, &mut byte, RecvFlags::PEEK) {
            return Received::Closed;
        }
    }
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

/// Replaces the connection's socket with a new one to the same target, connecting without
/// waiting (the loop goes on with the others meanwhile; EPOLLOUT says when it is connected, then
/// `connected`). The old socket had its last answer read whole, so closing it sends a FIN.
pub fn reopen(
    connection: &mut Connection,
    (target, rcvbuf_bytes): (&SocketAddr, Option<usize>),
    epoll_fd: &OwnedFd,
    index: usize,
) -> io::Result<()> {
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    let _ = epoll::delete(epoll_fd, connection.stream.as_fd());
    connection.open = false;
    let family = match target {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    let socket = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
    if let Some(bytes) = rcvbuf_bytes {
        sockopt::set_socket_recv_buffer_size(&socket, bytes)?;
    }
    sockopt::set_tcp_nodelay(&socket, true)?;
    match rustix::net::connect(&socket, target) {
        Ok(()) | Err(Errno::INPROGRESS) => {}
        Err(error) => return Err(error.into()),
    }
    let data = EventData::new_u64(index as u64);
    epoll::add(epoll_fd, &socket, data, EventFlags::OUT)?;
    // The old socket closes as it is replaced.
    connection.stream = TcpStream::from(socket);
    connection.framer = ResponseFramer::default();
    connection.sent = connection.message.len();
    connection.writing = false;
    connection.connecting = true;
    connection.open = true;
    // A connect that never completes times out like an answer that never comes.
    connection.started = Instant::now();
    Ok(())
}

/// A reopened connection's socket became writable: whether it connected (then it waits for
/// answers again) or failed (counted as a connect error, and closed).
pub fn connected(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    index: usize,
    errors: &mut LoadErrors,
) -> bool {
    debug_assert!(connection.connecting);
    connection.connecting = false;
    if !matches!(
        rustix::net::sockopt::socket_error(&connection.stream),
        Ok(Ok(()))
    ) {
        errors.connect += 1;
        close(connection, epoll_fd);
        return false;
    }
    register(connection, epoll_fd, index, errors);
    connection.open
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

/// Hangs up the connections still open when the run is over as a client that is done does: a
/// FIN after its last request, then what the server still sends read and dropped until it
/// closes too (or `wait` passes). Closing at once with an answer unread would send a reset, and
/// the server would count every connection of a clean run as failed.
pub fn hang_up(
    connections: &mut [Connection],
    (epoll_fd, waits): (&OwnedFd, &EpollWait),
    scratch: &mut [u8],
    wait: Duration,
) {
    let mut open = 0;
    for (index, connection) in connections.iter_mut().enumerate() {
        if !connection.open {
            continue;
        }
        let data = EventData::new_u64(index as u64);
        let hung_up = !connection.connecting
            && connection
                .stream
                .shutdown(std::net::Shutdown::Write)
                .is_ok()
            && epoll::modify(epoll_fd, connection.stream.as_fd(), data, EventFlags::IN).is_ok();
        match hung_up {
            true => open += 1,
            false => close(connection, epoll_fd),
        }
    }
    let deadline = Instant::now() + wait;
    let mut events = [crate::system::epoll_wait::empty_event(); 64];
    while open > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let ready = match waits.wait(epoll_fd, &mut events[..], Some(left)) {
            Ok(ready) => ready,
            Err(Errno::INTR) => continue,
            Err(_) => break,
        };
        for event in &events[..ready] {
            let connection = &mut connections[event.data.u64() as usize];
            if connection.open && read_to_end(&connection.stream, scratch) {
                close(connection, epoll_fd);
                open -= 1;
            }
        }
    }
}

/// Reads and drops what `stream` holds; whether its end came (or an error).
fn read_to_end(stream: &TcpStream, scratch: &mut [u8]) -> bool {
    loop {
        match rustix::net::recv(stream, &mut *scratch, RecvFlags::empty()) {
            Ok((0, _)) => return true,
            Ok(_) | Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return false,
            Err(_) => return true,
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
