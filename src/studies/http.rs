//! `ringside http`: seed 001's study done so that its numbers can be trusted. Each server engine
//! runs as a child process (`ringside serve http`) pinned to one core, ringside's HTTP load
//! generator runs pinned to the other, runs alternate engines, and the server is measured from
//! outside over exactly the measured window, through the same cell as the echo study
//! (`net::run_cell`), so the two studies differ only in what goes over the wire.
//!
//! The table is seed 001's (API, median, p99, p99.9, requests/s, % more requests than epoll),
//! one per connection count, plus what explains it: server CPU µs and syscalls per request.
//! FINDINGS measured the first as the steadier comparison on this VM, so it is always printed.

use std::process::ExitCode;

use comfy_table::{presets, Cell, CellAlignment, Table};

use super::net::{
    failure_lines, lines_in, markers, param, per_message, NetCell, NetStudy, TableLine,
};
use crate::load::{HttpLoad, LoadPlan, Mode};
use crate::protocols::http::request_bytes;
use crate::row::Row;
use crate::stats::median;

/// The HTTP study, as its flags asked for it.
pub struct HttpStudy {
    pub net: NetStudy,
    /// The servers' body sizes in bytes and as given (`16k`): a cell each, recorded in its
    /// rows; empty: "Hello, World!".
    pub body_sizes: Vec<(usize, String)>,
}

pub fn run(study: &HttpStudy) -> anyhow::Result<ExitCode> {
    let net = &study.net;
    let request = request_bytes("127.0.0.1", "/");
    let plan_of = |cell: &NetCell| LoadPlan {
        http: Some(HttpLoad {
            request: request.clone(),
        }),
        ..net.load_plan(cell, request.len(), Mode::Http)
    };
    let line = |cell: &NetCell, run: u32, row: &mut Row| {
        let size = (study.body_sizes.iter()).find(|(bytes, _)| Some(*bytes) == cell.payload_bytes);
        if let Some((bytes, text)) = size {
            row.params.insert("body_size".into(), text.as_str().into());
            row.params.insert("body_bytes".into(), (*bytes).into());
        }
        format!(
            "{:<16} run {run} conn {:>4}: {:>9.0} req/s, {:.2} syscalls/req, \
             {:.1} µs server CPU/req",
            cell.server_label(),
            cell.connections,
            row.ops_per_sec,
            per_message(row, row.syscalls as f64),
            per_message(row, row.cpu_s() * 1e6),
        )
    };
    let table = |rows: &[Row]| render_study(rows, &net.connection_counts);
    let sizes: Vec<Option<usize>> = match study.body_sizes.as_slice() {
        [] => vec![None],
        sizes => sizes.iter().map(|(bytes, _)| Some(*bytes)).collect(),
    };
    net.run(&sizes, plan_of, None, line, table)
}

/// Seed 001's table per body size and connection count; every figure is the median over the
/// runs.
pub fn render_study(all_rows: &[Row], connection_counts: &[usize]) -> String {
    let mut sizes: Vec<Option<&str>> = Vec::new();
    for row in all_rows {
        let size = row.params.get("body_size").and_then(|size| size.as_str());
        if !sizes.contains(&size) {
            sizes.push(size);
        }
    }
    let mut text = String::new();
    for size in sizes {
        let rows: Vec<Row> = (all_rows.iter())
            .filter(|row| row.params.get("body_size").and_then(|s| s.as_str()) == size)
            .cloned()
            .collect();
        if let Some(size) = size {
            text.push_str(&format!("Bodies of {size} bytes\n\n"));
        }
        text.push_str(&render_size(&rows, connection_counts));
    }
    text.push_str(
        "* the load generator was saturated in some run (it may have set the pace); ! errors \
         (timeouts, resets) in some run; NOT VERIFIED: a response could not be framed or was \
         not 2xx\n",
    );
    text.push_str(&failure_lines(all_rows));
    text
}

/// The tables of one body size.
fn render_size(rows: &[Row], connection_counts: &[usize]) -> String {
    let lines = lines_in(rows);
    // The first epoll line (one loop, in a sweep) is the baseline of every other line.
    let baseline_line = lines.iter().find(|line| line.engine == "epoll");
    let mut text = String::new();
    for &connections in connection_counts {
        let cell = |line: &TableLine| -> Vec<&Row> {
            rows.iter()
                .filter(|r| line.holds(r))
                .filter(|r| param(r, "connections") == Some(connections as u64))
                .collect()
        };
        let rate = |runs: &[&Row]| median(&runs.iter().map(|r| r.ops_per_sec).collect::<Vec<_>>());
        let baseline = baseline_line.map(|line| rate(&cell(line)));
        text.push_str(&format!(
            "HTTP, {connections} connections: median of {} runs per engine\n",
            rows.iter().map(|r| r.run).max().unwrap_or(0)
        ));
        let mut table = Table::new();
        table.load_style(presets::ASCII_MARKDOWN);
        table.set_header(vec![
            "API",
            "Median",
            "p(99)",
            "p(99.9)",
            "Req/s",
            "% More Requests",
            "server CPU µs/req",
            "server syscalls/req",
        ]);
        for line in &lines {
            let runs = cell(line);
            if !runs.is_empty() {
                let is_baseline = Some(line) == baseline_line;
                table.add_row(engine_cells(&line.label(), &runs, baseline, is_baseline));
            }
        }
        text.push_str(&table.to_string());
        text.push_str("\n\n");
    }
    text
}

/// One engine's line, `label`: the medians of its runs, and its requests against the epoll
/// baseline (the line that `is_baseline`).
fn engine_cells(label: &str, runs: &[&Row], baseline: Option<f64>, is_baseline: bool) -> Vec<Cell> {
    let latency = |f: fn(&Row) -> Option<u64>| {
        let values: Vec<f64> = runs.iter().filter_map(|r| f(r)).map(|v| v as f64).collect();
        format_ns(median(&values))
    };
    let requests = median(&runs.iter().map(|r| r.ops_per_sec).collect::<Vec<_>>());
    let more = match baseline {
        Some(_) if is_baseline => "Baseline".to_string(),
        Some(base) if base > 0.0 => format!("{:+.2}%", (requests / base - 1.0) * 100.0),
        _ => "-".to_string(),
    };
    let cpu: Vec<f64> = runs
        .iter()
        .map(|r| per_message(r, r.cpu_s() * 1e6))
        .collect();
    let syscalls: Vec<f64> = runs
        .iter()
        .map(|r| per_message(r, r.syscalls as f64))
        .collect();
    let right = |text: String| Cell::new(text).set_alignment(CellAlignment::Right);
    if runs.iter().all(|run| run.failure.is_some()) {
        let mut cells = vec![Cell::new(format!("{label} FAILED"))];
        cells.extend((0..7).map(|_| right("-".to_string())));
        return cells;
    }
    vec![
        Cell::new(format!("{label}{}", markers(runs))),
        right(latency(|r| r.latency_ns_p50)),
        right(latency(|r| r.latency_ns_p99)),
        right(latency(|r| r.latency_ns_p999)),
        right(format!("{requests:.0}")),
        right(more),
        right(format!("{:.1}", median(&cpu))),
        right(format!("{:.2}", median(&syscalls))),
    ]
}

/// A latency as seed 001 prints it: milliseconds with two decimals, or µs below 1 ms.
fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.0}µs", ns / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};

    fn row(engine: &str, server_threads: u64, ops_per_sec: f64) -> Row {
        let mut params = Map::new();
        params.insert("connections".into(), Value::from(50));
        params.insert("server_threads".into(), Value::from(server_threads));
        Row {
            workload: "http".into(),
            engine: engine.into(),
            params,
            run: 1,
            seconds: 1.0,
            ops: ops_per_sec as u64,
            ops_per_sec,
            verified: true,
            ..Row::default()
        }
    }

    /// A sweep's table has a line per engine and loop count, each engine's counts together,
    /// and the one-loop epoll line is everyone's baseline.
    #[test]
    fn a_sweep_has_a_line_per_engine_and_loops_against_one_epoll_loop() {
        let rows = [
            row("epoll", 1, 100_000.0),
            row("uring-defer", 1, 110_000.0),
            row("epoll", 2, 80_000.0),
            row("uring-defer", 2, 90_000.0),
        ];
        let text = render_study(&rows, &[50]);
        let lines: Vec<&str> = text.lines().filter(|line| line.starts_with("| ")).collect();
        let labels: Vec<&str> = (lines.iter().skip(1))
            .map(|line| line.split('|').nth(1).unwrap().trim())
            .collect();
        let expected = [
            "epoll, 1 loop",
            "epoll, 2 loops",
            "uring-defer, 1 loop",
            "uring-defer, 2 loops",
        ];
        assert_eq!(labels, expected, "{text}");
        assert!(lines[1].contains("Baseline"), "{text}");
        assert!(lines[2].contains("-20.00%"), "{text}");
        assert!(lines[4].contains("-10.00%"), "{text}");
    }
}
