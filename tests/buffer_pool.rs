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
//! takes its turn before the connections served last time, and no connection takes more of the
//! pool than it may hold. The server once held churned
//! connections open with their peers' bytes unread until new traffic came (a buffer given back
//! woke only the connections starved before it, not one whose ENOBUFS was reaped after it),
//! and one bundle took every free buffer, so a stream started at once waited a whole second.
//! Methodology: each engine serves with a small pool (64 buffers of 8 KiB) for three seconds
//! of churn from raw non-blocking sockets, then at once `ringside load` verifies every byte of
//! a fresh streaming run; after a second churn and no traffic, the server must close every
//! connection within `IO_TIMEOUT` (it takes well under a second here), and stop cleanly.
//!
//! A connection accepted while the pool is dry waits for a buffer with no receive armed, and
//! the server once dropped its peer's reset there (the hang-up poll found no receive to
//! replace), so it stayed open until the pool had room again, which a dry pool with nothing
//! flowing never has. It also lost the reset of an idle connection whose receive was armed
//! before the pool ran dry: the reset woke the hang-up poll and the receive at once, the
//! receive ended out of buffers, and the poll's completion, handled first, only cancelled it.
//! So every engine that receives into the pool (`Registration::BufRing`) is starved on
//! purpose: idle connections first, then a few holders that stream ahead and never read, until
//! the server takes no more of their bytes; then connections accepted meanwhile, their bytes
//! unread, and the idle ones are reset, and the server must close each within `IO_TIMEOUT`
//! (its own sockets: plain fds, and the ring's registered files) while the holders still hold
//! the pool, then serve a fresh verified stream.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ringside::engines::needs::{Feature, Registration};
use ringside::engines::server::ServerCounters;
use ringside::engines::shared_counters::SharedCounters;
use ringside::engines::{engines_of, EngineDef, Workload};

mod common;
use common::{for_each_engine, linger_zero, not_applicable, Server, IO_TIMEOUT};

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

/// Streams that share a pool far smaller than what they keep in flight (64 x 256 KiB windows
/// against 64 buffers of 8 KiB), against a server that spends CPU on every byte, so the pool
/// stays short for the whole run.
const SHARING: &str = "64";

/// Every stream gets its turn at a pool that stays short. Receives armed together take the
/// pool's buffers in the order they are armed; the server re-armed them in the order their
/// completions came, so the connections served last time took every buffer back, batch after
/// batch, and 39 to 53 of these 64 streams read nothing for the whole run (their bytes sent were
/// never echoed within the load's --timeout: NOT VERIFIED).
#[test]
fn every_stream_gets_its_turn_at_a_short_pool() {
    let pooled = |engine: &EngineDef| engine.needs.registrations.contains(&Registration::BufRing);
    for_each_engine(Workload::Echo, |engine| {
        if !pooled(engine) {
            return not_applicable(engine.name, "no receive pool the connections share");
        }
        let flags = [
            "--provided-buffers",
            "64",
            "--payload",
            "1k",
            "--work",
            "2us",
        ];
        let Some(server) = Server::start("echo", engine.name, &flags) else {
            return;
        };
        let output = std::process::Command::new(common::BIN)
            .args(["load", "echo", "--mode", "stream", "--connections", SHARING])
            .args(["--payload", "1k", "--duration", "3s", "--warmup", "0s"])
            .args(["--timeout", "2s", "--format", "json"])
            .args(["--target", &server.address.to_string()])
            .output()
            .unwrap();
        server.stop();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{}: {stderr}", engine.name);
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(document["results"][0]["verified"], true, "{}", engine.name);
    });
}

/// Connections that hold the pool (they stream ahead and never read their echoes), those
/// accepted after it ran dry, which wait for a buffer until their peers reset, and those idle
/// since before, whose receive is armed until their peers reset.
const HOLDERS: usize = 4;
const STARVED: usize = 4;
const IDLE: usize = 4;

#[test]
fn a_starved_connection_closes_at_once_when_its_peer_resets() {
    let pooled = |engine: &EngineDef| engine.needs.registrations.contains(&Registration::BufRing);
    assert!(
        engines_of(Workload::Echo).any(pooled),
        "no engine uses a pool"
    );
    for_each_engine(Workload::Echo, |engine| {
        if pooled(engine) {
            starved_reset_with(engine.name);
        }
    });
}

fn starved_reset_with(engine: &str) {
    let (shared, memfd) = SharedCounters::create(1).unwrap();
    let counters = format!("/proc/{}/fd/{}", std::process::id(), memfd.as_raw_fd());
    // Eight 8 KiB buffers, or `uring-recv-inc`'s one 64 KiB buffer: that engine moves queued
    // chunks out of a dry pool, so only the slices the holders' sends read keep it dry, and
    // with two buffers their four slices could sit in one.
    let flags = ["--provided-buffers", "8", "--counters", &counters];
    let Some(server) = Server::start("echo", engine, &flags) else {
        return;
    };
    let counters = &shared.loops()[0];
    let idle: Vec<TcpStream> = (0..IDLE).map(|_| server.connect()).collect();
    // The listener and the idle (read again while the ring's file table was busy).
    wait_for_sockets(&server, |open| open > IDLE, engine, "the idle");
    let holders = dry_the_pool(&server, counters, engine);
    let held = wait_for_sockets(&server, |open| open > IDLE + HOLDERS, engine, "the holders");
    let exhausted = count(&counters.provided_buffers_exhausted);
    let mut starved: Vec<TcpStream> = (0..STARVED).map(|_| server.connect()).collect();
    for stream in &mut starved {
        stream.write_all(&[0x5a; 1000]).unwrap();
    }
    wait_for_sockets(
        &server,
        |open| open == held + STARVED,
        engine,
        "the starved",
    );
    // Each found the pool dry as its receive was armed (ENOBUFS) and waits for a buffer.
    let deadline = Instant::now() + IO_TIMEOUT;
    while count(&counters.provided_buffers_exhausted) < exhausted + STARVED as u64 {
        assert!(
            Instant::now() < deadline,
            "{engine}: the new connections got buffers"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for stream in starved.iter().chain(&idle) {
        linger_zero(stream);
    }
    drop((starved, idle));
    let after = |open| open == held - IDLE;
    wait_for_sockets(&server, after, engine, "after their resets");
    drop(holders);
    common::assert_a_stream_verifies(&server, "16k", engine);
    server.stop();
}

fn count(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// Opens `HOLDERS` connections that stream ahead and never read, until the pool is dry and
/// nothing moves: the server took no more of their bytes over five polls in a row.
fn dry_the_pool(server: &Server, counters: &ServerCounters, engine: &str) -> Vec<TcpStream> {
    let block = vec![0x5a_u8; 64 * 1024];
    let mut holders: Vec<TcpStream> = (0..HOLDERS).map(|_| server.connect()).collect();
    for holder in &holders {
        holder.set_nonblocking(true).unwrap();
    }
    let deadline = Instant::now() + IO_TIMEOUT;
    let (mut received, mut still) = (u64::MAX, 0);
    while still < 5 {
        assert!(
            Instant::now() < deadline,
            "{engine}: the pool never ran dry"
        );
        let mut taken = 0;
        for holder in &mut holders {
            while let Ok(written) = holder.write(&block) {
                taken += written;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
        let now = count(&counters.bytes_received);
        let dry = count(&counters.provided_buffers_exhausted) > 0;
        still = if dry && taken == 0 && now == received {
            still + 1
        } else {
            0
        };
        received = now;
    }
    holders
}

/// Waits, bounded, until the server's open sockets satisfy `done`; returns their count.
fn wait_for_sockets(
    server: &Server,
    done: impl Fn(usize) -> bool,
    engine: &str,
    what: &str,
) -> usize {
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        let open = server_sockets(server);
        if done(open) {
            return open;
        }
        assert!(
            Instant::now() < deadline,
            "{engine}: {open} sockets open {IO_TIMEOUT:?} on ({what})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's open sockets: its socket fds, and the files registered in its rings (direct
/// descriptors). Not /proc/net/tcp: a socket leaves it as its peer's reset arrives, while the
/// server still holds it open.
fn server_sockets(server: &Server) -> usize {
    let mut open = 0;
    let fds = format!("/proc/{}/fd", server.pid());
    for entry in std::fs::read_dir(&fds).unwrap().flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let target = target.display().to_string();
        if target.starts_with("socket:") {
            open += 1;
        } else if target == "anon_inode:[io_uring]" {
            let info = format!(
                "/proc/{}/fdinfo/{}",
                server.pid(),
                entry.file_name().display()
            );
            open += registered_files(&std::fs::read_to_string(info).unwrap_or_default());
        }
    }
    open
}

/// The files a ring's fdinfo lists after `UserFiles:`, one `N: name` line each (older kernels
/// list empty slots as `<none>`). The kernel lists them only when it takes the ring's lock at
/// once, so a busy ring may show none for a moment.
fn registered_files(fdinfo: &str) -> usize {
    let listed = fdinfo
        .lines()
        .skip_while(|line| !line.starts_with("UserFiles:"));
    listed
        .skip(1)
        .take_while(|line| {
            line.trim_start()
                .split_once(": ")
                .is_some_and(|(slot, _)| slot.parse::<u32>().is_ok())
        })
        .filter(|line| !line.ends_with("<none>"))
        .count()
}
