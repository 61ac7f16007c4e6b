//! The network engines under one set of test bodies, run against the real binary on real
//! sockets on 127.0.0.1 only, every wait bounded.
//!
//! Goal: every server engine must echo every byte intact and in order whatever the client does
//! (many clients, tiny writes, coalesced messages, parallel streams with a slow reader, clients
//! that vanish or reset), must survive clients that misbehave, and must not leak fds; the load
//! generator's own checks and the command line's errors are in `load_checks.rs`, the studies
//! as a user runs them in `net_study.rs`. Methodology: each test starts its own `ringside serve
//! echo --listen 127.0.0.1:0` child and reads the port from its first line; each behaviour is
//! one test that runs its body for every engine of the engine table (`for_each_engine`), so a
//! new engine gets the whole suite by its table row alone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use ringside::engines::needs::Registration;
use ringside::engines::{engines_of, EngineDef, Workload};
use ringside::protocols::echo::fill_echo_message;

mod common;
use common::{for_each_engine, linger_zero, serves_one_at_a_time, slow_reader_stream};
use common::{not_applicable, Server, BIN, IO_TIMEOUT};

/// Sends `count` messages of varying odd sizes one at a time and checks every echo.
fn ping_pong(stream: &mut TcpStream, connection: u64, count: u64) {
    let mut message = vec![0u8; 4000];
    let mut echo = vec![0u8; 4000];
    for sequence in 0..count {
        let len = 1 + (sequence as usize * 397 + connection as usize * 13) % 3999;
        fill_echo_message(&mut message[..len], connection, sequence);
        stream.write_all(&message[..len]).unwrap();
        stream.read_exact(&mut echo[..len]).unwrap();
        assert!(
            message[..len] == echo[..len],
            "connection {connection} message {sequence}: echo differs"
        );
    }
}

#[test]
fn echoes_intact_for_concurrent_clients() {
    for_each_engine(Workload::Echo, echoes_intact_for_concurrent_clients_with);
}

fn echoes_intact_for_concurrent_clients_with(def: &EngineDef) {
    let engine = def.name;
    let Some(server) = Server::start("echo", engine, &[]) else {
        return;
    };
    let counts: &[u64] = if serves_one_at_a_time(def) {
        &[1]
    } else {
        &[1, 2, 50]
    };
    for &clients in counts {
        std::thread::scope(|scope| {
            for connection in 0..clients {
                let mut stream = server.connect();
                scope.spawn(move || ping_pong(&mut stream, connection, 30));
            }
        });
    }
    server.stop();
}

/// Large echoes one at a time must not wait for delayed ACKs: with Nagle on the server's
/// sockets, the io_uring servers, which send a 64 KiB echo as several 8 KiB chunks, held each
/// echo's tail segment for the client's delayed ACK (measured: 20 round trips in 790–880 ms);
/// without it they take a few milliseconds.
#[test]
fn large_echoes_are_not_paced_by_delayed_acks() {
    for_each_engine(
        Workload::Echo,
        large_echoes_are_not_paced_by_delayed_acks_with,
    );
}

fn large_echoes_are_not_paced_by_delayed_acks_with(def: &EngineDef) {
    const ROUND_TRIPS: u64 = 20;
    /// Half of what 20 delayed ACKs cost, and far above what 20 echoes take on a busy machine.
    const ROUND_TRIPS_TIME_MAX: Duration = Duration::from_millis(400);
    let Some(server) = Server::start("echo", def.name, &[]) else {
        return;
    };
    let mut stream = server.connect();
    let mut message = vec![0u8; 64 * 1024];
    let mut echo = vec![0u8; message.len()];
    let started = Instant::now();
    for sequence in 0..ROUND_TRIPS {
        fill_echo_message(&mut message, 3, sequence);
        stream.write_all(&message).unwrap();
        stream.read_exact(&mut echo).unwrap();
        assert!(echo == message, "{}: echo {sequence} differs", def.name);
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed < ROUND_TRIPS_TIME_MAX,
        "{}: {ROUND_TRIPS} echoes of 64 KiB took {elapsed:?}",
        def.name
    );
    drop(stream);
    server.stop();
}

#[test]
fn split_writes_and_coalesced_reads() {
    for_each_engine(Workload::Echo, split_writes_and_coalesced_reads_with);
}

fn split_writes_and_coalesced_reads_with(def: &EngineDef) {
    let engine = def.name;
    let Some(server) = Server::start("echo", engine, &[]) else {
        return;
    };
    let mut stream = server.connect();
    stream.set_nodelay(true).unwrap();
    // One message written a few bytes at a time: the server sees many tiny receives.
    let mut message = vec![0u8; 3001];
    fill_echo_message(&mut message, 7, 0);
    for piece in message.chunks(7) {
        stream.write_all(piece).unwrap();
    }
    let mut echo = vec![0u8; message.len()];
    stream.read_exact(&mut echo).unwrap();
    assert!(echo == message, "byte-by-byte message came back different");
    // Ten messages written back to back before reading any: coalesced receives.
    let mut all = Vec::new();
    for sequence in 1..=10 {
        let mut message = vec![0u8; 100 + sequence as usize];
        fill_echo_message(&mut message, 7, sequence);
        all.extend_from_slice(&message);
    }
    stream.write_all(&all).unwrap();
    let mut echo = vec![0u8; all.len()];
    stream.read_exact(&mut echo).unwrap();
    assert!(echo == all, "coalesced messages came back different");
    drop(stream);
    server.stop();
}

/// Several connections stream at once, in odd-sized writes, while their readers read slowly:
/// the server must handle short sends and a full socket without losing, duplicating or
/// reordering a byte (four of five peer servers failed this, FINDINGS.md).
#[test]
fn parallel_streams_with_a_slow_reader() {
    for_each_engine(Workload::Echo, parallel_streams_with_a_slow_reader_with);
}

fn parallel_streams_with_a_slow_reader_with(def: &EngineDef) {
    let engine = def.name;
    let Some(server) = Server::start("echo", engine, &[]) else {
        return;
    };
    let streams = if serves_one_at_a_time(def) { 1 } else { 4 };
    const STREAM_BYTES: usize = 768 * 1024;
    std::thread::scope(|scope| {
        for connection in 0..streams {
            let stream = server.connect();
            scope.spawn(move || {
                let mut data = vec![0u8; STREAM_BYTES];
                fill_echo_message(&mut data, connection, 99);
                let mut writer = stream.try_clone().unwrap();
                let mut reader = stream;
                std::thread::scope(|inner| {
                    let data = &data;
                    inner.spawn(move || {
                        for piece in data.chunks(997 + connection as usize * 2) {
                            writer.write_all(piece).unwrap();
                        }
                    });
                    let mut received = vec![0u8; STREAM_BYTES];
                    let mut filled = 0;
                    let mut reads = 0u32;
                    while filled < STREAM_BYTES {
                        let end = (filled + 1500).min(STREAM_BYTES);
                        let n = reader.read(&mut received[filled..end]).unwrap();
                        assert!(n > 0, "stream {connection} ended at byte {filled}");
                        filled += n;
                        reads += 1;
                        if reads.is_multiple_of(64) {
                            // The slow reader: the server's sends back up meanwhile.
                            std::thread::sleep(Duration::from_millis(2));
                        }
                    }
                    let first_bad = received.iter().zip(data).position(|(a, b)| a != b);
                    assert_eq!(first_bad, None, "stream {connection} corrupted");
                });
            });
        }
    });
    server.stop();
}

/// The same test run by the load generator (`load echo --mode stream --read-rate`): each
/// connection reads its echo at 4 MiB/s through a 64 KiB SO_RCVBUF (`slow_reader_stream` says
/// why not less) while it writes up to 8 MiB ahead, so the server's send buffer fills and its
/// sends go short (strace of the epoll server under this run: 17 of 646 sends short and 21
/// EAGAIN in 1.5 s). Every byte must come back in order.
#[test]
fn slow_reader_stream_from_the_load_generator() {
    for_each_engine(
        Workload::Echo,
        slow_reader_stream_from_the_load_generator_with,
    );
}

fn slow_reader_stream_from_the_load_generator_with(def: &EngineDef) {
    let engine = def.name;
    let Some(server) = Server::start("echo", engine, &[]) else {
        return;
    };
    let connections = if serves_one_at_a_time(def) { "1" } else { "4" };
    let output = slow_reader_stream(server.address, connections);
    assert!(output.status.success(), "{engine}: {output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &document["results"][0];
    assert_eq!(row["verified"], true, "{row}");
    assert_eq!(row["params"]["window_bytes"], 8 << 20, "{row}");
    assert!(row["bytes"].as_u64().unwrap() > 1 << 20, "{row}");
    server.stop();
}

#[test]
fn vanishing_and_resetting_clients_do_not_stop_the_server() {
    for_each_engine(
        Workload::Echo,
        vanishing_and_resetting_clients_do_not_stop_the_server_with,
    );
}

fn vanishing_and_resetting_clients_do_not_stop_the_server_with(def: &EngineDef) {
    let engine = def.name;
    let Some(server) = Server::start("echo", engine, &[]) else {
        return;
    };
    // Half a message, then gone (orderly close before the echo is read).
    let mut half = server.connect();
    half.write_all(&[1u8; 500]).unwrap();
    drop(half);
    // A reset (SO_LINGER 0) right after sending, with the echo unread.
    for _ in 0..3 {
        let reset = server.connect();
        linger_zero(&reset);
        (&reset).write_all(&[2u8; 5000]).unwrap();
        drop(reset);
    }
    // A reset while the server may be mid-send of a large echo.
    let big = server.connect();
    linger_zero(&big);
    (&big).write_all(&vec![3u8; 200_000]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    drop(big);
    // The server still serves everyone else.
    let mut good = server.connect();
    ping_pong(&mut good, 11, 20);
    drop(good);
    server.stop();
}

#[test]
fn thousand_connects_leak_no_fds() {
    for_each_engine(Workload::Echo, thousand_connects_leak_no_fds_with);
}

fn thousand_connects_leak_no_fds_with(def: &EngineDef) {
    let engine = def.name;
    let Some(server) = Server::start("echo", engine, &[]) else {
        return;
    };
    // One served connection first, so that lazily created fds (ring, epoll) exist already.
    let mut warm = server.connect();
    ping_pong(&mut warm, 1, 2);
    drop(warm);
    std::thread::sleep(Duration::from_millis(100));
    let before = server.open_fds();
    for round in 0..1000u32 {
        let stream = server.connect();
        if round % 2 == 0 {
            linger_zero(&stream);
        }
        drop(stream);
    }
    let after = server.open_fds_settled(before);
    assert!(
        after <= before,
        "fds before {before}, after 1000 connections {after}: {:?}",
        server.fd_targets()
    );
    let mut last = server.connect();
    ping_pong(&mut last, 2, 5);
    drop(last);
    server.stop();
}

#[test]
fn connections_beyond_the_limit_are_refused() {
    for_each_engine(
        Workload::Echo,
        connections_beyond_the_limit_are_refused_with,
    );
}

fn connections_beyond_the_limit_are_refused_with(def: &EngineDef) {
    let engine = def.name;
    if serves_one_at_a_time(def) {
        let reason = "serves one connection at a time by design; the rest wait in the backlog";
        return not_applicable(engine, reason);
    }
    let Some(server) = Server::start("echo", engine, &["--max-connections", "2"]) else {
        return;
    };
    let mut first = server.connect();
    let mut second = server.connect();
    ping_pong(&mut first, 1, 2);
    ping_pong(&mut second, 2, 2);
    let mut third = server.connect();
    let _ = third.write_all(b"refused?");
    let mut byte = [0u8; 1];
    // Closed by the server at once: end of stream, or a reset if it saw the bytes.
    let refused = matches!(third.read(&mut byte), Ok(0) | Err(_));
    assert!(refused, "a third connection was served");
    ping_pong(&mut first, 1, 2);
    drop((first, second));
    // Once the first two are gone, new connections are served again.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut next = server.connect();
        let served = next.write_all(b"x").is_ok() && matches!(next.read(&mut byte), Ok(1));
        if served {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no connection served after the others closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
}

/// Many clients send a lot before reading anything: the server's sends back up on every
/// connection at once. Bounded servers must stop reading those connections (the multishot
/// io_uring servers cancel the recv of each connection holding 8 unsent chunks; checked once by
/// hand: 130 cancels for 130 clients), then resume as readers drain, and lose nothing. The
/// provided-buffer pool running dry (ENOBUFS) is not reached here: clients' receive buffers
/// absorb too much.
#[test]
fn many_clients_that_read_late() {
    for_each_engine(Workload::Echo, many_clients_that_read_late_with);
}

fn many_clients_that_read_late_with(def: &EngineDef) {
    let engine = def.name;
    if serves_one_at_a_time(def) {
        let reason = "one connection at a time: covered by the stream test";
        return not_applicable(engine, reason);
    }
    let Some(server) = Server::start("echo", engine, &[]) else {
        return;
    };
    const CLIENTS: u64 = 130;
    const BYTES: usize = 96 * 1024;
    std::thread::scope(|scope| {
        for connection in 0..CLIENTS {
            let late = Duration::from_millis(300);
            write_then_read_late(scope, engine, server.connect(), connection, BYTES, late);
        }
    });
    let mut after = server.connect();
    ping_pong(&mut after, 1, 5);
    drop(after);
    server.stop();
}

/// The multishot engines with a pool of 16 buffers and 4 clients that each send more than the
/// server's socket can buffer before reading, with 64 KiB receive buffers (not 4 KiB: see
/// `slow_reader_stream` on zero copy's window at that size): the server's sends
/// block, each connection holds up to 8 received buffers, the pool runs dry, recvs end with
/// ENOBUFS (the server counts them), and the connections must be re-armed as buffers come back,
/// every byte intact. (256 KiB each was not enough: the kernel grows a socket's send buffer up
/// to tcp_wmem's maximum, 4 MiB by default, so a send bundle, which hands the socket all that
/// is queued, often had every echo buffered at once and the pool never ran dry, 3 runs of 6 on
/// one CPU.)
#[test]
fn an_exhausted_buffer_pool_recovers_without_losing_bytes() {
    let pooled = |engine: &&EngineDef| engine.needs.registrations.contains(&Registration::BufRing);
    assert!(engines_of(Workload::Echo).any(|engine| pooled(&engine)));
    for engine in engines_of(Workload::Echo)
        .filter(pooled)
        .map(|engine| engine.name)
    {
        let stats = tempfile::NamedTempFile::new().unwrap();
        let stats_path = stats.path().to_str().unwrap();
        let flags = ["--provided-buffers", "16", "--stats", stats_path];
        let Some(server) = Server::start("echo", engine, &flags) else {
            return;
        };
        let bytes = send_buffer_max() + (1 << 20);
        std::thread::scope(|scope| {
            for connection in 0..4u64 {
                let stream = small_receive_buffer_connection(server.address);
                let late = Duration::from_millis(200);
                write_then_read_late(scope, engine, stream, connection, bytes, late);
            }
        });
        server.stop();
        let counters: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(stats.path()).unwrap()).unwrap();
        let exhausted = counters["provided_buffers_exhausted"].as_u64().unwrap();
        assert!(exhausted > 0, "{engine}: the pool never ran dry");
    }
}

/// The most a TCP socket's send buffer grows to by itself (tcp_wmem's maximum).
fn send_buffer_max() -> usize {
    let wmem = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem").unwrap();
    wmem.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// Writes `bytes` of connection `connection`'s pattern on one thread while another starts
/// reading the echo only after `late`, so the server's sends back up; the echo must be intact.
fn write_then_read_late<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    engine: &'scope str,
    stream: TcpStream,
    connection: u64,
    bytes: usize,
    late: Duration,
) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = stream;
    let mut data = vec![0u8; bytes];
    fill_echo_message(&mut data, connection, 5);
    let data = std::sync::Arc::new(data);
    let sent = std::sync::Arc::clone(&data);
    scope.spawn(move || writer.write_all(&sent).unwrap());
    scope.spawn(move || {
        std::thread::sleep(late);
        let mut echo = vec![0u8; bytes];
        if let Err(error) = reader.read_exact(&mut echo) {
            panic!("{engine} connection {connection}: the echo stalled: {error}");
        }
        assert!(
            echo == *data,
            "{engine} connection {connection} echo differs"
        );
    });
}

fn small_receive_buffer_connection(address: SocketAddr) -> TcpStream {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: plain socket calls on a socket this function owns from creation.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0);
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let size: libc::c_int = 64 * 1024;
    let result = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(result, 0);
    let stream = TcpStream::from(owned);
    // The receive buffer must be set before connecting to limit the advertised window; std
    // cannot connect an existing socket, so connect with libc.
    let SocketAddr::V4(v4) = address else {
        panic!("tests use 127.0.0.1")
    };
    let sockaddr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*v4.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    let result = unsafe {
        libc::connect(
            std::os::fd::AsRawFd::as_raw_fd(&stream),
            (&sockaddr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    assert_eq!(result, 0, "connect: {}", std::io::Error::last_os_error());
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    stream
}

#[test]
fn unserved_connections_time_out_and_are_counted() {
    // The blocking engine serves one connection; the second waits and must time out.
    let Some(server) = Server::start("echo", "blocking", &[]) else {
        return;
    };
    let output = Command::new(BIN)
        .args(["load", "echo", "--connections", "2", "--timeout", "300ms"])
        .args(["--duration", "1s", "--warmup", "0s", "--format", "json"])
        .args(["--target", &server.address.to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &document["results"][0];
    assert_eq!(row["error_counts"]["timeout"], 1, "{row}");
    assert_eq!(row["verified"], true);
    server.stop();
}

#[test]
fn server_writes_its_counters_on_sigterm() {
    let stats = tempfile::NamedTempFile::new().unwrap();
    let stats_path = stats.path().to_str().unwrap();
    let server = Server::start(
        "echo",
        "epoll",
        &["--stats", stats_path, "--count-syscalls"],
    )
    .unwrap();
    let mut stream = server.connect();
    ping_pong(&mut stream, 0, 3);
    drop(stream);
    server.stop();
    let counters: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats.path()).unwrap()).unwrap();
    assert_eq!(counters["connections_accepted"], 1);
    assert!(counters["bytes_sent"].as_u64().unwrap() > 0);
    assert_eq!(counters["bytes_sent"], counters["bytes_received"]);
    // Asked to, it counts its own syscalls (where the kernel allows the counter).
    assert!(counters["syscalls"].is_null() || counters["syscalls"].as_u64().unwrap() > 0);
}

// Bad input: one clear sentence on stderr and a non-zero exit.

/// `--idle-timeout 300ms` (seed 002's linked timeouts): a connection that sends nothing is
/// closed after 300 ms and well before a second (the event loops tick a third of the timeout,
/// so they close between 1 and 1.33 timeouts; the blocking servers count socket timeouts),
/// while a connection that sends every 60 ms for 1.5 s is never closed.
#[test]
fn idle_connections_close_on_time_and_busy_ones_never() {
    for_each_engine(Workload::Echo, idle_connections_close_on_time_with);
}

fn idle_connections_close_on_time_with(def: &EngineDef) {
    let Some(server) = Server::start("echo", def.name, &["--idle-timeout", "300ms"]) else {
        return;
    };
    // Never idle for 300 ms in its 1.5 s, unless the machine holds this thread back: a close
    // is then right only if it came after 300 ms without a message (a loaded CI machine held
    // the thread past its 60 ms sleep by more than 240 ms once). Timed from the connect, as
    // the idle one is: under the canary its first message met the server's close 60 µs into
    // the thread, which had first run 300 ms or more after the connect.
    let busy = |(mut stream, connected): (TcpStream, Instant)| {
        let mut last = connected;
        for sequence in 0..25 {
            if let Err(error) = try_ping_pong(&mut stream, 3, sequence) {
                let quiet = last.elapsed();
                assert!(
                    quiet >= Duration::from_millis(280),
                    "{}: the busy connection ended after {quiet:?} without a message: {error}",
                    def.name
                );
                return;
            }
            last = Instant::now();
            std::thread::sleep(Duration::from_millis(60));
        }
    };
    // Timed from the connect, which the server's idle clock follows, not from when the
    // reading thread first ran: on a loaded machine that came 200 ms later, and a close on
    // time looked early (90 ms). Late is bounded loosely (10x): a loaded machine closed it
    // after 1.2 s. The busy connection, never idle for 300 ms in its 1.5 s, checks the other side.
    let idle = |(mut stream, connected): (TcpStream, Instant)| {
        let mut byte = [0u8; 1];
        let closed = matches!(stream.read(&mut byte), Ok(0) | Err(_));
        let after = connected.elapsed();
        assert!(closed, "{}: the idle connection got a byte", def.name);
        assert!(
            after >= Duration::from_millis(280) && after <= Duration::from_millis(3000),
            "{}: idle connection closed after {after:?}",
            def.name
        );
    };
    let connect_timed = || {
        let connected = Instant::now();
        (server.connect(), connected)
    };
    if serves_one_at_a_time(def) {
        busy(connect_timed());
        idle(connect_timed());
    } else {
        std::thread::scope(|scope| {
            let (first, second) = (connect_timed(), connect_timed());
            scope.spawn(move || busy(first));
            scope.spawn(move || idle(second));
        });
    }
    server.stop();
}

/// One message of connection `connection` echoed and checked, or the socket's error.
fn try_ping_pong(stream: &mut TcpStream, connection: u64, sequence: u64) -> std::io::Result<()> {
    let mut message = [0u8; 100];
    fill_echo_message(&mut message, connection, sequence);
    stream.write_all(&message)?;
    let mut echo = [0u8; 100];
    stream.read_exact(&mut echo)?;
    assert!(echo == message, "message {sequence}: echo differs");
    Ok(())
}
