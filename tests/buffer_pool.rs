//! A provided-buffer pool under abuse, against the real binary: clients that stream far ahead
//! of their echoes, reset mid-stream (SO_LINGER 0) and are replaced by new ones, so the pool
//! runs dry and connections close with receive bundles still in flight.
//!
//! Goal: the bundle engines (one completion naming several ring buffers) survive it and echo
//! every later byte right. A closing connection gives a bundle's buffers back as it meets them;
//! the server once gave the first back before reading off the ring which buffer followed it, so
//! it walked stale ring entries: it gave back buffers other connections still held (wrong
//! bytes echoed), leaked others (streams starved) and, once, tripped the ring walk's assert.
//! The pool must also be shared: a starved connection is woken whenever a buffer comes back,
//! and no connection takes more of the pool than it may hold. The server once held churned
//! connections open with their peers' bytes unread until new traffic came (a buffer given back
//! woke only the connections starved before it, not one whose ENOBUFS was reaped after it),
//! and one bundle took every free buffer, so a stream started at once waited a whole second.
//! Methodology: each engine serves with a small pool (64 buffers of 8 KiB) for three seconds
//! of churn from raw non-blocking sockets, then at once `ringside load` verifies every byte of
//! a fresh streaming run; after a second churn and no traffic, the server must close every
//! connection within `IO_TIMEOUT` (it takes well under a second here), and stop cleanly.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use ringside::engines::needs::Feature;
use ringside::engines::{engines_of, Workload};

mod common;
use common::{linger_zero, Server, IO_TIMEOUT};

/// Connections open at once during the churn.
const CHURNING: usize = 48;
const CHURN_FOR: Duration = Duration::from_secs(3);

/// Writes as much as the socket takes and reads whatever echo waits, without blocking.
fn stream_ahead(stream: &mut TcpStream, block: &[u8], sink: &mut [u8]) {
    while let Ok(written) = stream.write(block) {
        if written == 0 {
            break;
        }
    }
    loop {
        match stream.read(sink) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(error) if error.kind() == ErrorKind::WouldBlock => break,
            Err(_) => break,
        }
    }
}

/// `CHURNING` connections stream far ahead; every round one in three is reset, one in three
/// closed, and each is replaced by a new connection.
fn churn(server: &Server) {
    let block = vec![0x5a_u8; 64 * 1024];
    let mut sink = vec![0u8; 64 * 1024];
    let open = |server: &Server| {
        let stream = TcpStream::connect(server.address)
            .unwrap_or_else(|error| panic!("the server stopped accepting mid-churn: {error}"));
        stream.set_nonblocking(true).unwrap();
        stream
    };
    let mut streams: Vec<TcpStream> = (0..CHURNING).map(|_| open(server)).collect();
    let start = Instant::now();
    let mut round = 0usize;
    while start.elapsed() < CHURN_FOR {
        for stream in &mut streams {
            stream_ahead(stream, &block, &mut sink);
        }
        std::thread::sleep(Duration::from_millis(5));
        for (index, stream) in streams.iter_mut().enumerate() {
            match (index + round) % 3 {
                0 => linger_zero(stream),
                1 => {}
                _ => continue,
            }
            *stream = open(server);
        }
        round += 1;
    }
}

/// Connections to the server's port still open (/proc/net/tcp, IPv4 loopback: neither the
/// listener, 0A, nor closed ones waiting out TIME_WAIT, 06).
fn server_connections(server: &Server) -> usize {
    let port = format!(":{:04X}", server.address.port());
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    (table.lines().skip(1))
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 3 && fields[1].ends_with(&port) && !["0A", "06"].contains(&fields[3])
        })
        .count()
}

/// Waits, bounded, for the server to close every connection once all its peers are gone.
fn assert_the_connections_go(server: &Server, engine: &str) {
    let start = Instant::now();
    let mut open = server_connections(server);
    while open > 0 && start.elapsed() < IO_TIMEOUT {
        std::thread::sleep(Duration::from_millis(20));
        open = server_connections(server);
    }
    assert_eq!(
        open, 0,
        "{engine}: connections still open {IO_TIMEOUT:?} after their peers left"
    );
}

#[test]
fn bundles_survive_a_dry_pool_and_reset_connections() {
    let bundles = |engine: &&'static ringside::engines::EngineDef| {
        engine.needs.features.contains(&Feature::Bundles)
    };
    let engines: Vec<_> = engines_of(Workload::Echo).filter(bundles).collect();
    assert!(!engines.is_empty(), "the table has no bundle engine");
    for engine in engines {
        let Some(server) = Server::start("echo", engine.name, &["--provided-buffers", "64"]) else {
            continue;
        };
        churn(&server);
        common::assert_a_stream_verifies(&server, "16k", engine.name);
        churn(&server);
        assert_the_connections_go(&server, engine.name);
        server.stop();
    }
}
