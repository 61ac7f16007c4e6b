//! `ringside echo`: the echo study. Every server engine runs as a child process (`ringside serve
//! echo`) pinned to one core, the load generator runs in this process pinned to the other, and
//! the server is measured from outside over exactly the measured window: kernel-counted
//! syscalls of all its threads, CPU time and context switches from /proc. The client's own
//! costs go into the rows' `client_` fields.
//!
//! Runs alternate engines (A B C A B C ...), never all of A then all of B: on this VM the
//! run-to-run spread is ±30%, and drift would otherwise land on one engine.
//!
//! It prints the report's own sections (`report::terminal_text`, handed over in its `Destination`): per connection count and
//! payload the engines' table with each rung over its parent, decided, and the verdict.

use std::process::ExitCode;
use std::time::Duration;

use super::net::{per_message, NetCell, NetStudy};
use crate::load::{LoadPlan, Mode, SLOW_READER_WINDOW_BYTES};
use crate::row::Row;

/// The echo study, as its flags asked for it.
pub struct EchoStudy {
    pub net: NetStudy,
    /// Message sizes: one table each.
    pub payloads: Vec<usize>,
    /// Ping-pong (messages/s), or stream (MB/s and the server's costs per MB).
    pub mode: Mode,
}

pub fn run(study: &EchoStudy) -> anyhow::Result<ExitCode> {
    let net = &study.net;
    let payloads: Vec<Option<usize>> = study.payloads.iter().copied().map(Some).collect();
    let plan_of =
        |cell: &NetCell| net.load_plan(cell, cell.payload_bytes.expect("a payload"), study.mode);
    let line = |cell: &NetCell, run: u32, row: &mut Row| {
        let head = format!(
            "{:<16} run {run} conn {:>4} payload {:>5} B",
            cell.server_label(),
            cell.connections,
            cell.payload_bytes.unwrap_or(0),
        );
        match study.mode {
            Mode::Stream => format!(
                "{head}: {:>7.1} MB/s, {:.0} syscalls/MB, {:.0} µs server CPU/MB",
                row.mb_per_sec.unwrap_or(0.0),
                row.syscalls_per_mb.unwrap_or(f64::NAN),
                row.server_cpu_us_per_mb.unwrap_or(f64::NAN),
            ),
            _ => format!(
                "{head}: {:>9.0} msg/s, {:.2} syscalls/msg, {:.1} µs server CPU/msg",
                row.ops_per_sec,
                per_message(row, row.syscalls as f64),
                per_message(row, row.cpu_s() * 1e6),
            ),
        }
    };
    // The slow-reader integrity stream every contender gets once per study: its connections
    // stream odd-sized writes while reading their echo slowly through a small SO_RCVBUF, far
    // ahead, so the server's send buffer fills and its sends go short; every byte must come
    // back in order (four of five peer servers failed this, FINDINGS.md). ringside's own
    // engines pass it in the tests.
    let integrity = |cell: &NetCell| LoadPlan {
        connections: INTEGRITY_CONNECTIONS,
        duration: INTEGRITY_DURATION,
        warmup: Duration::ZERO,
        read_bytes_per_sec: Some(INTEGRITY_READ_BYTES_PER_SEC),
        rcvbuf_bytes: Some(INTEGRITY_RCVBUF_BYTES),
        window_bytes: SLOW_READER_WINDOW_BYTES,
        ..net.load_plan(cell, INTEGRITY_PAYLOAD_BYTES, Mode::Stream)
    };
    let table = net.destination.render_terminal;
    net.run(&payloads, plan_of, Some(&integrity), line, table)
}

/// The integrity stream's shape: what caught a short-send-ignoring server within 3 s
/// (`load echo --mode stream --read-rate`'s help), and ringside's own engines' test.
const INTEGRITY_CONNECTIONS: usize = 4;
const INTEGRITY_PAYLOAD_BYTES: usize = 1000;
const INTEGRITY_READ_BYTES_PER_SEC: u64 = 4 << 20;
const INTEGRITY_RCVBUF_BYTES: usize = 4096;
const INTEGRITY_DURATION: Duration = Duration::from_millis(1500);
