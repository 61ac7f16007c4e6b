//! `ringside http`: seed 001's study done so that its numbers can be trusted. Each server engine
//! runs as a child process (`ringside serve http`) pinned to one core, ringside's HTTP load
//! generator runs pinned to the other, runs alternate engines, and the server is measured from
//! outside over exactly the measured window, all through the echo study's runner
//! (`echo::run_cell`), so the two studies differ only in what goes over the wire.
//!
//! The table is seed 001's (API, median, p99, p99.9, requests/s, % more requests than epoll),
//! one per connection count, plus what explains it: server CPU µs and syscalls per request.
//! FINDINGS measured the first as the steadier comparison on this VM, so it is always printed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use comfy_table::{presets, Cell, CellAlignment, Table};

use super::echo::{finish_study, param, parse_list, per_message, run_cell, runnable_engines, Rig};
use super::http::request_bytes;
use super::load::{HttpLoad, LoadPlan, Mode, STREAM_WINDOW_BYTES};
use crate::cli::duration_arg;
use crate::output::{median, Format};
use crate::progress::Progress;
use crate::row::Row;
use crate::tuning::{Idle, Sched};

/// The study's flags: the echo study's, with HTTP's defaults (seed 001's engines and
/// connection counts, 10 s runs as wrk's default) and a body size instead of a payload.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpArgs {
    /// Server engines, comma separated (see `ringside engines`); the first `epoll` in the list
    /// is the baseline of "% more requests".
    #[arg(
        long,
        short = 'e',
        value_delimiter = ',',
        default_value = "epoll,uring,uring-multishot,uring-defer"
    )]
    pub engine: Vec<String>,
    /// Connection counts, comma separated: one table each.
    #[arg(long, short = 'c', value_delimiter = ',', default_value = "50,256")]
    pub connections: Vec<String>,
    /// Serve bodies of this many bytes (k suffix allowed) instead of "Hello, World!".
    #[arg(long)]
    pub body_size: Option<String>,
    /// Measured runs per cell; engines alternate run by run.
    #[arg(long, short = 'r', default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Measured time per run.
    #[arg(long, short = 'd', default_value = "10s", value_parser = duration_arg)]
    pub duration: Duration,
    /// Unmeasured time before each run's window.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub warmup: Duration,
    /// A response not in within this time is a timeout.
    #[arg(long, default_value = "2s", value_parser = duration_arg)]
    pub timeout: Duration,
    /// CPU of the server process.
    #[arg(long, default_value_t = 0)]
    pub server_cpu: usize,
    /// CPU of the load generator.
    #[arg(long, default_value_t = 1)]
    pub client_cpu: usize,
    /// Scheduling class of server and client (fifo = SCHED_FIFO 50, as `chrt -f 50`).
    #[arg(long, value_enum, default_value_t = Sched::Other)]
    pub sched: Sched,
    /// CPU idle state during the study (poll = hold /dev/cpu_dma_latency at 0).
    #[arg(long, value_enum, default_value_t = Idle::Default)]
    pub idle: Idle,
    /// Output format on stdout (or in --output).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write results to this file instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Also write the JSON document (every run's row) to this file, whatever --format says.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

pub fn run(args: &HttpArgs) -> anyhow::Result<ExitCode> {
    let stop = crate::progress::stop_flag();
    let engines = runnable_engines(&args.engine, args.quiet)?;
    let connection_counts = parse_list(&args.connections, "--connections", |text| {
        text.parse::<usize>()
            .ok()
            .filter(|&n| (1..=65_000).contains(&n))
    })?;
    let mut serve = vec!["http".to_string()];
    if let Some(body_size) = &args.body_size {
        serve.extend(["--body-size".to_string(), body_size.clone()]);
    }
    let _idle = args.idle.hold()?;
    let rig = Rig {
        server_cpu: args.server_cpu,
        client_cpu: args.client_cpu,
        sched: args.sched,
        idle: args.idle,
        serve,
    };
    let request = request_bytes("127.0.0.1", "/");
    let cells = engines.len() * connection_counts.len() * args.runs as usize;
    let progress = Progress::new(cells as u64, args.quiet);
    let mut rows = Vec::with_capacity(cells);
    let mut failure = None;
    'study: for run in 1..=args.runs {
        for &connections in &connection_counts {
            for engine in &engines {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break 'study;
                }
                progress.step(format!("run {run} {} {connections} conn", engine.name));
                let plan = LoadPlan {
                    target: SocketAddr::from(([127, 0, 0, 1], 0)),
                    connections,
                    payload_bytes: request.len(),
                    duration: args.duration,
                    warmup: args.warmup,
                    threads: 1,
                    timeout: args.timeout,
                    cpu: Some(args.client_cpu),
                    sched: args.sched,
                    mode: Mode::Http,
                    read_bytes_per_sec: None,
                    rcvbuf_bytes: None,
                    window_bytes: STREAM_WINDOW_BYTES,
                    http: Some(HttpLoad {
                        request: request.clone(),
                        rate_per_sec: None,
                    }),
                };
                let mut row = match run_cell(engine, plan, run, &rig) {
                    Ok(row) => row,
                    Err(error) => {
                        // Keep what finished: it is written below, then the error.
                        let cell =
                            format!("{} run {run} with {connections} connections", engine.name);
                        failure = Some(error.context(cell));
                        break 'study;
                    }
                };
                if let Some(body_size) = &args.body_size {
                    row.params
                        .insert("body_size".into(), body_size.as_str().into());
                }
                progress.line(format!(
                    "{:<16} run {run} conn {connections:>4}: {:>9.0} req/s, {:.2} syscalls/req, \
                     {:.1} µs server CPU/req",
                    engine.name,
                    row.ops_per_sec,
                    per_message(&row, row.syscalls as f64),
                    per_message(&row, (row.cpu_user_s + row.cpu_sys_s) * 1e6),
                ));
                rows.push(row);
                progress.done_step();
            }
        }
    }
    progress.finish();
    let table = |rows: &[Row]| render_study(rows, &connection_counts);
    let output = (args.json.as_deref(), args.format, args.output.as_deref());
    finish_study(rows, failure, output, table)
}

/// Seed 001's table per connection count; every figure is the median over the runs.
pub fn render_study(rows: &[Row], connection_counts: &[usize]) -> String {
    let mut engines: Vec<&str> = Vec::new();
    for row in rows {
        if !engines.contains(&row.engine.as_str()) {
            engines.push(&row.engine);
        }
    }
    let mut text = String::new();
    for &connections in connection_counts {
        let cell = |engine: &str| -> Vec<&Row> {
            rows.iter()
                .filter(|r| r.engine == engine)
                .filter(|r| param(r, "connections") == Some(connections as u64))
                .collect()
        };
        let rate = |runs: &[&Row]| median(&runs.iter().map(|r| r.ops_per_sec).collect::<Vec<_>>());
        let baseline = engines
            .iter()
            .find(|&&engine| engine == "epoll")
            .map(|&engine| rate(&cell(engine)));
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
        for engine in &engines {
            let runs = cell(engine);
            if runs.is_empty() {
                continue;
            }
            let latency = |f: fn(&Row) -> Option<u64>| {
                let values: Vec<f64> = runs.iter().filter_map(|r| f(r)).map(|v| v as f64).collect();
                format_ns(median(&values))
            };
            let requests = rate(&runs);
            let more = match baseline {
                Some(_) if *engine == "epoll" => "Baseline".to_string(),
                Some(base) if base > 0.0 => format!("{:+.2}%", (requests / base - 1.0) * 100.0),
                _ => "-".to_string(),
            };
            let cpu: Vec<f64> = runs
                .iter()
                .map(|r| per_message(r, (r.cpu_user_s + r.cpu_sys_s) * 1e6))
                .collect();
            let syscalls: Vec<f64> = runs
                .iter()
                .map(|r| per_message(r, r.syscalls as f64))
                .collect();
            let mut name = engine.to_string();
            if runs.iter().any(|r| r.client_saturated == Some(true)) {
                name.push('*');
            }
            if runs.iter().any(|r| r.errors > 0) {
                name.push('!');
            }
            if runs.iter().any(|r| !r.verified) {
                name.push_str(" NOT VERIFIED");
            }
            let right = |text: String| Cell::new(text).set_alignment(CellAlignment::Right);
            table.add_row(vec![
                Cell::new(name),
                right(latency(|r| r.latency_ns_p50)),
                right(latency(|r| r.latency_ns_p99)),
                right(latency(|r| r.latency_ns_p999)),
                right(format!("{requests:.0}")),
                right(more),
                right(format!("{:.1}", median(&cpu))),
                right(format!("{:.2}", median(&syscalls))),
            ]);
        }
        text.push_str(&table.to_string());
        text.push_str("\n\n");
    }
    text.push_str(
        "* the load generator was saturated in some run (it may have set the pace); ! errors \
         (timeouts, resets) in some run; NOT VERIFIED: a response could not be framed or was \
         not 2xx\n",
    );
    text
}

/// A latency as seed 001 prints it: milliseconds with two decimals, or µs below 1 ms.
fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.0}µs", ns / 1e3)
    }
}
