//! `--work` costs the server the CPU it asks for. Alone in its binary, so no other test of this
//! suite runs beside it (cargo runs the test binaries one after another): the scheduler's clock
//! counts a busy sibling vCPU's interference as the server's own time.

use std::io::{Read, Write};
use std::net::TcpStream;

mod common;
use common::Server;

/// Messages per round: a few milliseconds, short against the machine's slow swings.
const MESSAGES: u32 = 100;
/// Rounds per server in one attempt, alternated between the two servers.
const ROUNDS: usize = 40;

/// One server of the pair and its connection, one 64-byte message in flight at a time (no
/// batching hides the work).
struct Echo {
    server: Server,
    stream: TcpStream,
}

impl Echo {
    fn start(work: &str) -> Echo {
        let server = Server::start("echo", "epoll", &["--work", work, "--cpu", "0"]).unwrap();
        let stream = server.connect();
        Echo { server, stream }
    }

    /// Server CPU µs per message over one round. The server's CPU is read from the scheduler's
    /// own clock (`/proc/PID/task/*/schedstat`, nanoseconds): /proc's user and system times
    /// are sampled at the timer tick, too coarse for a few µs per message.
    fn round(&mut self) -> f64 {
        let (message, mut echo) = ([0x2au8; 64], [0u8; 64]);
        let before = runtime_ns(self.server.pid());
        for _ in 0..MESSAGES {
            self.stream.write_all(&message).unwrap();
            self.stream.read_exact(&mut echo).unwrap();
            assert_eq!(echo, message);
        }
        (runtime_ns(self.server.pid()) - before) as f64 / 1e3 / f64::from(MESSAGES)
    }
}

/// Nanoseconds every thread of process `pid` has run, by the scheduler's clock.
fn runtime_ns(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .map(|task| {
            let path = task.unwrap().path().join("schedstat");
            let text = std::fs::read_to_string(path).unwrap();
            text.split_whitespace()
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

/// The server CPU per message of each round of two servers on the same CPU, one without work
/// and one with `work`, their rounds alternated so that a slow spell of the machine falls on
/// both alike: (baseline, with work) per round.
fn alternated_rounds(work: &str) -> Vec<(f64, f64)> {
    let (mut without, mut with) = (Echo::start("0us"), Echo::start(work));
    without.round();
    with.round();
    let pairs = (0..ROUNDS)
        .map(|_| (without.round(), with.round()))
        .collect();
    without.server.stop();
    with.server.stop();
    pairs
}

/// The CPU the work added over the round pairs whose baseline ran near the quietest of the
/// whole test: a round that ran well above it (a stolen vCPU, a busy sibling, a build's cache
/// traffic: the scheduler's clock counts them all as the server's) says nothing about the
/// work. Of the quiet pairs the lower quartile: a disturbance in the round with work only adds
/// to it (under other builds the median of quiet pairs read 22.4–23.9 µs for 20; alone
/// 20.0–20.6). None when fewer than a few rounds were quiet.
fn added_when_quiet(pairs: &[(f64, f64)], quiet: f64) -> Option<f64> {
    let mut added: Vec<f64> = pairs
        .iter()
        .filter(|&&(base, _)| base <= quiet * 1.5)
        .map(|&(base, worked)| worked - base)
        .collect();
    added.sort_by(f64::total_cmp);
    (added.len() >= 5).then(|| added[added.len() / 4])
}

/// One message at a time, `--work 20us` adds 20 µs of server CPU per message, within 10%. On a
/// loaded machine the baseline of 2.5 µs per message measured 8–28 µs for whole seconds, so
/// the test alternates two servers and judges only quiet rounds; each attempt starts its
/// servers (and their calibration) afresh, and one of up to eight must hold.
#[test]
fn work_adds_the_cpu_it_asks_for() {
    let mut attempts: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut seen = Vec::new();
    for _ in 0..8 {
        attempts.push(alternated_rounds("20us"));
        let quiet = attempts
            .iter()
            .flatten()
            .map(|&(base, _)| base)
            .fold(f64::MAX, f64::min);
        seen = attempts
            .iter()
            .map(|pairs| added_when_quiet(pairs, quiet))
            .collect();
        eprintln!(
            "--work 20us over a quiet baseline of {quiet:.1} µs per message added {seen:.1?} µs"
        );
        if seen
            .iter()
            .flatten()
            .any(|added| (18.0..=22.0).contains(added))
        {
            return;
        }
    }
    panic!("--work 20us never added 20 µs (±10%) per message in quiet rounds: {seen:.1?}");
}
