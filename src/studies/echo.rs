//! `ringside echo`: the echo study. Every server engine runs as a child process (`ringside serve
//! echo`) pinned to one core, the load generator runs in this process pinned to the other, and
//! the server is measured from outside over exactly the measured window: kernel-counted
//! syscalls of all its threads, CPU time and context switches from /proc. The client's own
//! costs go into the rows' `client_` fields.
//!
//! Runs alternate engines (A B C A B C ...), never all of A then all of B: on this VM the
//! run-to-run spread is ±30%, and drift would otherwise land on one engine.
//!
//! The table is the seeds': engines as rows, connection counts as columns, messages/s median
//! with the best in parentheses, then what explains it: server syscalls and CPU µs per message.

use std::process::ExitCode;
use std::time::Duration;

use comfy_table::{presets, Cell, CellAlignment, Table};

use super::net::{failure_lines, lines_in, markers, param, per_message, NetCell, NetStudy};
use crate::load::{LoadPlan, Mode, SLOW_READER_WINDOW_BYTES};
use crate::row::Row;
use crate::stats::median;

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
    let table = |rows: &[Row]| render_study(rows, &net.connection_counts);
    net.run(&payloads, plan_of, Some(&integrity), line, table)
}

/// The integrity stream's shape: what caught a short-send-ignoring server within 3 s
/// (`load echo --mode stream --read-rate`'s help), and ringside's own engines' test.
const INTEGRITY_CONNECTIONS: usize = 4;
const INTEGRITY_PAYLOAD_BYTES: usize = 1000;
const INTEGRITY_READ_BYTES_PER_SEC: u64 = 4 << 20;
const INTEGRITY_RCVBUF_BYTES: usize = 4096;
const INTEGRITY_DURATION: Duration = Duration::from_millis(1500);

/// One of the echo study's tables: its title, and a cell's text from the cell's runs.
type Metric = (&'static str, fn(&[&Row]) -> String);

/// The median of a figure over the runs that have it, `-` where none has.
fn median_text(runs: &[&Row], figure: fn(&Row) -> Option<f64>, decimals: usize) -> String {
    let values: Vec<f64> = runs.iter().filter_map(|r| figure(r)).collect();
    match values.is_empty() {
        true => "-".into(),
        false => format!("{:.decimals$}", median(&values)),
    }
}

/// The core shares every echo table ends its explanation with.
const CORE_SHARES: Metric = (
    "server core softirq / steal share of the window, median",
    |runs| {
        let share = |f: fn(&Row) -> Option<f64>| {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| f(r).map(|s| s / r.seconds))
                .collect();
            median(&values) * 100.0
        };
        format!(
            "{:.0}% / {:.0}%",
            share(|r| r.server_core_softirq_s),
            share(|r| r.server_core_steal_s)
        )
    },
);

/// The streaming tables, in order: MB/s (tcpkali's figure), then what explains it.
const STREAM_METRICS: [Metric; 6] = [
    (
        "MB/s echoed and checked, median (lowest-highest) of the runs",
        |runs| {
            let rates: Vec<f64> = runs.iter().filter_map(|r| r.mb_per_sec).collect();
            let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
            let high = rates.iter().copied().fold(0.0, f64::max);
            match rates.is_empty() {
                true => "-".into(),
                false => format!("{:.1} ({low:.1}-{high:.1})", median(&rates)),
            }
        },
    ),
    ("server CPU µs per MB, median", |runs| {
        median_text(runs, |r| r.server_cpu_us_per_mb, 0)
    }),
    ("server syscalls per MB, median", |runs| {
        median_text(runs, |r| r.syscalls_per_mb, 0)
    }),
    (
        "server SQEs per MB, median (counted with --ring-events)",
        |runs| median_text(runs, |r| r.sqes_per_mb, 0),
    ),
    (
        "client CPU µs per MB, median (its sends run the server's TCP receive)",
        |runs| {
            median_text(
                runs,
                |r| {
                    let client = r.client_cpu_user_s? + r.client_cpu_sys_s?;
                    (r.bytes > 0).then(|| client * 1e6 / (r.bytes as f64 / 1e6))
                },
                0,
            )
        },
    ),
    CORE_SHARES,
];

/// The echo study's tables, in order: the seeds' messages/s, then what explains it.
const METRICS: [Metric; 6] = [
    ("messages/s, median (best) of the runs", |runs| {
        let rates: Vec<f64> = runs.iter().map(|r| r.ops_per_sec).collect();
        let best = rates.iter().copied().fold(0.0, f64::max);
        format!("{:.0} ({best:.0})", median(&rates))
    }),
    ("server syscalls per message, median", |runs| {
        let values: Vec<f64> = runs
            .iter()
            .map(|r| per_message(r, r.syscalls as f64))
            .collect();
        format!("{:.2}", median(&values))
    }),
    ("server CPU µs per message, median", |runs| {
        let values: Vec<f64> = runs
            .iter()
            .map(|r| per_message(r, r.cpu_s() * 1e6))
            .collect();
        format!("{:.1}", median(&values))
    }),
    (
        "client CPU µs per message, median (its sends run the server's TCP receive)",
        |runs| {
            let values: Vec<f64> = runs
                .iter()
                .map(|r| {
                    let client =
                        r.client_cpu_user_s.unwrap_or(0.0) + r.client_cpu_sys_s.unwrap_or(0.0);
                    per_message(r, client * 1e6)
                })
                .collect();
            format!("{:.1}", median(&values))
        },
    ),
    CORE_SHARES,
    ("round-trip latency p50 / p99 µs, median", |runs| {
        let p = |f: fn(&Row) -> Option<u64>| {
            let values: Vec<f64> = runs.iter().filter_map(|r| f(r)).map(|v| v as f64).collect();
            median(&values) / 1e3
        };
        format!(
            "{:.0} / {:.0}",
            p(|r| r.latency_ns_p50),
            p(|r| r.latency_ns_p99)
        )
    }),
];

/// The seeds' table per payload size (or the streaming tables), then the tables that explain
/// it, then the contenders' integrity streams.
pub fn render_study(all_rows: &[Row], connection_counts: &[usize]) -> String {
    // The integrity streams are the slow reader's: the only rows with a read rate.
    let (streams, rows): (Vec<Row>, Vec<Row>) = all_rows
        .iter()
        .cloned()
        .partition(|row| row.params.contains_key("read_bytes_per_sec"));
    let rows = rows.as_slice();
    let streaming =
        (rows.iter()).any(|row| row.params.get("mode") == Some(&Mode::Stream.name().into()));
    let (shape, metrics): (fn(u64) -> String, _) = match streaming {
        true => (
            |bytes| format!("echo stream, {bytes} B writes"),
            &STREAM_METRICS,
        ),
        false => (|bytes| format!("echo, {bytes} B messages"), &METRICS),
    };
    let mut payloads: Vec<u64> = rows
        .iter()
        .filter_map(|r| param(r, "payload_bytes"))
        .collect();
    payloads.dedup();
    payloads.sort_unstable();
    payloads.dedup();
    let lines = lines_in(rows);
    let mut text = String::new();
    for payload in &payloads {
        for (title, metric) in metrics {
            text.push_str(&format!("{}: {title}\n", shape(*payload)));
            let mut table = Table::new();
            table.load_style(presets::ASCII_MARKDOWN);
            let mut header = vec!["engine".to_string()];
            header.extend(connection_counts.iter().map(|c| format!("{c} conn")));
            table.set_header(header);
            for line in &lines {
                let mut cells = vec![Cell::new(line.label())];
                for &connections in connection_counts {
                    let runs: Vec<&Row> = rows
                        .iter()
                        .filter(|r| line.holds(r))
                        .filter(|r| param(r, "payload_bytes") == Some(*payload))
                        .filter(|r| param(r, "connections") == Some(connections as u64))
                        .collect();
                    cells.push(
                        Cell::new(cell_text(&runs, *metric)).set_alignment(CellAlignment::Right),
                    );
                }
                table.add_row(cells);
            }
            text.push_str(&table.to_string());
            text.push_str("\n\n");
        }
    }
    text.push_str(
        "* a load thread was saturated in some run (the client may have set the pace); \
         ! errors (timeouts, resets) in some run; NOT VERIFIED: an echo differed\n",
    );
    for row in &streams {
        let outcome = match (&row.failure, row.verified) {
            (Some(failure), _) => format!("FAILED: {failure}"),
            (None, true) => format!("passed, {} MiB echoed and checked", row.bytes >> 20),
            (None, false) => "NOT VERIFIED".to_string(),
        };
        text.push_str(&format!(
            "slow-reader integrity stream, {}: {outcome}\n",
            row.engine
        ));
    }
    text.push_str(&failure_lines(all_rows));
    text
}

fn cell_text(runs: &[&Row], metric: fn(&[&Row]) -> String) -> String {
    if runs.is_empty() {
        return "-".into();
    }
    if runs.iter().all(|run| run.failure.is_some()) {
        return "FAILED".into();
    }
    format!("{}{}", metric(runs), markers(runs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};

    fn row(engine: &str, connections: u64, ops_per_sec: f64, saturated: bool) -> Row {
        let mut params = Map::new();
        params.insert("connections".into(), Value::from(connections));
        params.insert("payload_bytes".into(), Value::from(64));
        Row {
            workload: "echo".into(),
            engine: engine.into(),
            params,
            seconds: 1.0,
            ops: ops_per_sec as u64,
            ops_per_sec,
            syscalls: 2 * ops_per_sec as u64,
            cpu_sys_s: 0.5,
            verified: true,
            client_saturated: Some(saturated),
            ..Row::default()
        }
    }

    #[test]
    fn the_table_has_engines_as_rows_and_connections_as_columns() {
        let rows = vec![
            row("epoll", 1, 10_000.0, false),
            row("uring", 1, 12_000.0, false),
            row("epoll", 1, 30_000.0, false),
            row("uring", 1, 14_000.0, false),
            row("epoll", 50, 100_000.0, true),
            row("epoll", 1, 20_000.0, false),
        ];
        let text = render_study(&rows, &[1, 50]);
        let line = text
            .lines()
            .find(|line| line.starts_with("| epoll"))
            .expect("an epoll row");
        assert!(line.contains("20000 (30000)"), "median (best): {line}");
        assert!(
            line.contains("100000 (100000)*"),
            "saturated marker: {line}"
        );
        let uring = text
            .lines()
            .find(|line| line.starts_with("| uring"))
            .unwrap();
        assert!(
            uring.contains("13000 (14000)") && uring.contains(" - "),
            "{uring}"
        );
        assert!(text.contains("server syscalls per message"));
        assert!(text.contains(" 2.00 |"), "syscalls per message: {text}");
    }

    #[test]
    fn streams_get_the_streaming_tables_and_integrity_streams_a_line() {
        let mut stream = row("epoll", 128, 1000.0, false);
        stream.params.insert("mode".into(), Value::from("stream"));
        stream.mb_per_sec = Some(512.5);
        stream.server_cpu_us_per_mb = Some(400.0);
        let mut integrity = stream.clone();
        integrity.engine = "contender:x".into();
        integrity.bytes = 3 << 20;
        (integrity.params).insert("read_bytes_per_sec".into(), Value::from(4 << 20));
        let text = render_study(&[stream, integrity], &[128]);
        assert!(text.contains("echo stream, 64 B writes: MB/s"), "{text}");
        assert!(text.contains("512.5 (512.5-512.5)"), "{text}");
        assert!(text.contains("| epoll  |      400 |"), "{text}");
        assert!(!text.contains("messages/s"), "{text}");
        assert!(
            text.contains("slow-reader integrity stream, contender:x: passed, 3 MiB"),
            "{text}"
        );
        assert!(!text.contains("| contender:x"), "{text}");
    }

    #[test]
    fn an_unverified_run_is_marked_in_every_table() {
        let mut bad = row("epoll", 1, 10_000.0, false);
        bad.verified = false;
        bad.notes
            .push("NOT VERIFIED: 1 echoes came back with different bytes".into());
        let text = render_study(&[bad], &[1]);
        assert!(text.matches("NOT VERIFIED").count() >= 6, "{text}");
    }
}
