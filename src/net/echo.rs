//! `ringside echo`: the echo study. Every server engine runs as a child process (`ringside serve
//! echo`) pinned to one core, the load generator runs in this process pinned to the other, and
//! the server is measured from outside over exactly the measured window: kernel-counted
//! syscalls of all its threads, CPU time and context switches from /proc. The client's own
//! costs go into the rows' `client_` fields.
//!
//! Runs alternate engines (A B C A B C ...), never all of A then all of B: on this VM the
//! run-to-run spread is ±30%, and drift would otherwise land on one engine. A fresh server
//! process per run keeps one engine's leftovers (sockets in TIME_WAIT aside) off the next.
//!
//! The table is the seeds': engines as rows, connection counts as columns, messages/s median
//! with the best in parentheses, then what explains it: server syscalls and CPU µs per message.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use comfy_table::{presets, Cell, CellAlignment, Table};
use serde_json::{Map, Value};

use super::load::{load_row, run as run_load, LoadPlan, Mode, WindowEdge, STREAM_WINDOW_BYTES};
use super::{select_engines, EngineDef};
use crate::cli::duration_arg;
use crate::measure::{CoreTimes, Measured, ProcessMeter};
use crate::output::{median, Format};
use crate::progress::Progress;
use crate::row::{Document, Row};
use crate::tuning::{Idle, Sched};

/// The study's flags. They carry the names of `CommonArgs` (`--engine`, `--runs`, `--format`,
/// `--output`, `--quiet`) but not all its defaults: 3 runs, not 5, so the default matrix ends in
/// a few minutes; and two CPUs (`--server-cpu`, `--client-cpu`) instead of one `--cpu`.
#[derive(clap::Args, Debug, Clone)]
pub struct EchoArgs {
    /// Server engines, comma separated (see `ringside engines`).
    #[arg(
        long,
        short = 'e',
        value_delimiter = ',',
        default_value = "blocking,epoll,uring,uring-multishot,uring-defer"
    )]
    pub engine: Vec<String>,
    /// Connection counts, comma separated: one column each.
    #[arg(long, short = 'c', value_delimiter = ',', default_value = "1,50,256")]
    pub connections: Vec<String>,
    /// Message sizes, comma separated (k suffix allowed): one table each.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    pub payload: Vec<String>,
    /// Measured runs per cell; engines alternate run by run.
    #[arg(long, short = 'r', default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Measured time per run.
    #[arg(long, short = 'd', default_value = "5s", value_parser = duration_arg)]
    pub duration: Duration,
    /// Unmeasured time before each run's window.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub warmup: Duration,
    /// A message not echoed within this time is a timeout (a client `blocking` never serves).
    #[arg(long, default_value = "2s", value_parser = duration_arg)]
    pub timeout: Duration,
    /// Load generator threads.
    #[arg(long, short = 't', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
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

/// How long a server may take to say where it listens, and to exit after SIGTERM.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(10);
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(5);

pub fn run(args: &EchoArgs) -> anyhow::Result<ExitCode> {
    let stop = crate::progress::stop_flag();
    let engines = runnable_engines(&args.engine, args.quiet)?;
    let connection_counts = parse_list(&args.connections, "--connections", |text| {
        text.parse::<usize>()
            .ok()
            .filter(|&n| (1..=65_000).contains(&n))
    })?;
    let payloads = parse_list(&args.payload, "--payload", |text| {
        crate::units::parse_size(text)
            .ok()
            .filter(|&n| (1..=1 << 24).contains(&n))
            .map(|n| n as usize)
    })?;
    let _idle = args.idle.hold()?;
    let rig = Rig {
        server_cpu: args.server_cpu,
        client_cpu: args.client_cpu,
        sched: args.sched,
        idle: args.idle,
        serve: vec!["echo".into()],
    };
    let cells = engines.len() * connection_counts.len() * payloads.len() * args.runs as usize;
    let progress = Progress::new(cells as u64, args.quiet);
    let mut rows = Vec::with_capacity(cells);
    let mut failure: Option<anyhow::Error> = None;
    'study: for run in 1..=args.runs {
        for &payload_bytes in &payloads {
            for &connections in &connection_counts {
                for engine in &engines {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break 'study;
                    }
                    progress.step(format!(
                        "run {run} {} {connections} conn {payload_bytes} B",
                        engine.name
                    ));
                    let plan = LoadPlan {
                        target: SocketAddr::from(([127, 0, 0, 1], 0)),
                        connections,
                        payload_bytes,
                        duration: args.duration,
                        warmup: args.warmup,
                        threads: args.threads as usize,
                        timeout: args.timeout,
                        cpu: Some(args.client_cpu),
                        sched: args.sched,
                        mode: Mode::PingPong,
                        read_bytes_per_sec: None,
                        rcvbuf_bytes: None,
                        window_bytes: STREAM_WINDOW_BYTES,
                        http: None,
                    };
                    let row = match run_cell(engine, plan, run, &rig) {
                        Ok(row) => row,
                        Err(error) => {
                            // Keep what finished: it is written below, then the error.
                            let cell =
                                format!("{} run {run} with {connections} connections", engine.name);
                            failure = Some(error.context(cell));
                            break 'study;
                        }
                    };
                    progress.line(format!(
                        "{:<16} run {run} conn {connections:>4} payload {payload_bytes:>5} B: \
                         {:>9.0} msg/s, {:.2} syscalls/msg, {:.1} µs server CPU/msg",
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
    }
    progress.finish();
    let table = |rows: &[Row]| render_study(rows, &connection_counts);
    let output = (args.json.as_deref(), args.format, args.output.as_deref());
    finish_study(rows, failure, output, table)
}

/// The named engines that can run here; the others are reported and left out.
pub(super) fn runnable_engines(
    names: &[String],
    quiet: bool,
) -> anyhow::Result<Vec<&'static EngineDef>> {
    let mut runnable = Vec::new();
    for engine in select_engines(names)? {
        match engine.availability() {
            Ok(()) => runnable.push(engine),
            Err(reason) if !quiet => eprintln!("ringside: skipping {}: {reason}", engine.name),
            Err(_) => {}
        }
    }
    anyhow::ensure!(
        !runnable.is_empty(),
        "none of the named engines can run here"
    );
    Ok(runnable)
}

pub(super) fn parse_list<T>(
    texts: &[String],
    flag: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> anyhow::Result<Vec<T>> {
    anyhow::ensure!(!texts.is_empty(), "{flag} needs at least one value");
    texts
        .iter()
        .map(|text| {
            parse(text.trim()).ok_or_else(|| {
                anyhow::anyhow!("{flag} value '{text}' is not a positive number in range")
            })
        })
        .collect()
}

/// Where a study runs its servers and client, shared by the echo and HTTP studies.
pub(crate) struct Rig {
    pub server_cpu: usize,
    pub client_cpu: usize,
    pub sched: Sched,
    pub idle: Idle,
    /// What follows `ringside serve`: the protocol and its flags (`echo`, `http --body-size 16k`).
    pub serve: Vec<String>,
}

/// One (engine, connections, payload, run): a fresh server, one load run, the server measured
/// over the load's window, the server stopped.
pub(super) fn run_cell(
    engine: &EngineDef,
    mut plan: LoadPlan,
    run: u32,
    args: &Rig,
) -> anyhow::Result<Row> {
    let mut server = ServerProcess::start(engine, args)?;
    plan.target = server.address;
    let mut meter = ProcessMeter::new(server.child.id() as i32);
    let mut measured: Option<std::io::Result<Measured>> = None;
    let mut started: std::io::Result<()> = Ok(());
    let cores = [args.server_cpu, args.client_cpu];
    let mut cores_before = [None, None];
    let mut cores_during = [None, None];
    let report = run_load(&plan, &mut |edge| match edge {
        WindowEdge::Start => {
            cores_before = cores.map(|cpu| CoreTimes::read(cpu).ok());
            started = meter.start();
        }
        WindowEdge::Stop => {
            measured = Some(meter.stop());
            for (index, cpu) in cores.into_iter().enumerate() {
                let after = CoreTimes::read(cpu).ok();
                cores_during[index] = after.zip(cores_before[index]).map(|(a, b)| a.since(&b));
            }
        }
    });
    server.stop()?;
    let report = report?;
    started.context("cannot measure the server")?;
    let measured = measured
        .expect("a finished load run passed its window's end")
        .context("cannot measure the server")?;
    let mut params = Map::new();
    params.insert("idle".into(), Value::from(args.idle.name()));
    params.insert("server_cpu".into(), Value::from(args.server_cpu));
    params.insert("client_cpu".into(), Value::from(args.client_cpu));
    let mut row = load_row(engine.name, params, run, &plan, &report, Some(&measured));
    let [server_core, client_core] = cores_during;
    row.server_core_softirq_s = server_core.map(|t| t.softirq_s);
    row.server_core_steal_s = server_core.map(|t| t.steal_s);
    row.client_core_softirq_s = client_core.map(|t| t.softirq_s);
    row.client_core_steal_s = client_core.map(|t| t.steal_s);
    Ok(row)
}

/// A `ringside serve` child process (also the server of `run`'s wrk control).
pub(crate) struct ServerProcess {
    pub child: Child,
    pub address: SocketAddr,
}

impl ServerProcess {
    pub fn start(engine: &EngineDef, args: &Rig) -> anyhow::Result<ServerProcess> {
        let exe = std::env::current_exe().context("cannot find the ringside binary")?;
        let mut child = Command::new(exe)
            .arg("serve")
            .args(&args.serve)
            .args(["--quiet", "--listen", "127.0.0.1:0", "--engine"])
            .arg(engine.name)
            .arg("--cpu")
            .arg(args.server_cpu.to_string())
            .arg("--sched")
            .arg(args.sched.name())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start the server process")?;
        let stdout = child.stdout.take().expect("piped stdout");
        // The first line says where the server listens; a server that fails says why on the
        // inherited stderr and exits, which ends the line with EOF.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        let line = receiver
            .recv_timeout(SERVER_START_TIMEOUT)
            .unwrap_or_default();
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|text| text.parse().ok());
        match address {
            Some(address) => Ok(ServerProcess { child, address }),
            None => {
                let _ = child.kill();
                let status = child.wait()?;
                anyhow::bail!("the {} server did not start ({status})", engine.name)
            }
        }
    }

    /// SIGTERM, then a bounded wait; a server that does not stop is killed and reported.
    pub fn stop(&mut self) -> anyhow::Result<()> {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("a child pid");
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + SERVER_STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                anyhow::ensure!(status.success(), "the server exited with {status}");
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        anyhow::bail!("the server did not stop within {SERVER_STOP_TIMEOUT:?} of SIGTERM")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // An error path left the server running: do not leave it behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Ends a network study: writes its rows (those that finished, also after a failure or Ctrl-C)
/// as the JSON document to `--json` when asked and as the study's own table (or CSV/JSON) to
/// `--output` or stdout, then turns the failure or interruption into the result.
pub(super) fn finish_study(
    rows: Vec<Row>,
    failure: Option<anyhow::Error>,
    (json, format, output): (Option<&std::path::Path>, Format, Option<&std::path::Path>),
    table: impl FnOnce(&[Row]) -> String,
) -> anyhow::Result<ExitCode> {
    let document = Document::new(crate::probe::environment(std::path::Path::new(".")), rows);
    if let Some(path) = json {
        crate::output::emit(&document, Format::Json, Some(path))?;
    }
    match format {
        Format::Table => {
            let text = table(&document.results);
            match output {
                Some(path) => std::fs::write(path, text)
                    .with_context(|| format!("cannot write results to {}", path.display()))?,
                None => print!("{text}"),
            }
        }
        format => crate::output::emit(&document, format, output)?,
    }
    if let Some(error) = failure {
        return Err(error);
    }
    if crate::progress::stopped() {
        anyhow::bail!("interrupted; the runs that finished are above");
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn per_message(row: &Row, amount: f64) -> f64 {
    if row.ops > 0 {
        amount / row.ops as f64
    } else {
        f64::NAN
    }
}

/// The seeds' table per payload size, then the tables that explain it.
pub fn render_study(rows: &[Row], connection_counts: &[usize]) -> String {
    let mut payloads: Vec<u64> = rows
        .iter()
        .filter_map(|r| param(r, "payload_bytes"))
        .collect();
    payloads.dedup();
    payloads.sort_unstable();
    payloads.dedup();
    let mut engines: Vec<&str> = Vec::new();
    for row in rows {
        if !engines.contains(&row.engine.as_str()) {
            engines.push(&row.engine);
        }
    }
    let mut text = String::new();
    type Metric = (&'static str, fn(&[&Row]) -> String);
    let metrics: [Metric; 6] = [
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
        ("server CPU µs per message (user+sys), median", |runs| {
            let values: Vec<f64> = runs
                .iter()
                .map(|r| per_message(r, (r.cpu_user_s + r.cpu_sys_s) * 1e6))
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
        (
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
        ),
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
    for payload in &payloads {
        for (title, metric) in &metrics {
            text.push_str(&format!("echo, {payload} B messages: {title}\n"));
            let mut table = Table::new();
            table.load_style(presets::ASCII_MARKDOWN);
            let mut header = vec!["engine".to_string()];
            header.extend(connection_counts.iter().map(|c| format!("{c} conn")));
            table.set_header(header);
            for engine in &engines {
                let mut cells = vec![Cell::new(engine)];
                for &connections in connection_counts {
                    let runs: Vec<&Row> = rows
                        .iter()
                        .filter(|r| r.engine == *engine)
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
    for note in rows
        .iter()
        .flat_map(|row| row.notes.iter().map(move |note| (row, note)))
        .filter(|(_, note)| note.starts_with("NOT VERIFIED"))
    {
        text.push_str(&format!(
            "{} {}: {}\n",
            note.0.engine,
            note.0.params_text(),
            note.1
        ));
    }
    text
}

fn cell_text(runs: &[&Row], metric: fn(&[&Row]) -> String) -> String {
    if runs.is_empty() {
        return "-".into();
    }
    let mut text = metric(runs);
    if runs.iter().any(|r| r.client_saturated == Some(true)) {
        text.push('*');
    }
    if runs.iter().any(|r| r.errors > 0) {
        text.push('!');
    }
    if runs.iter().any(|r| !r.verified) {
        text.push_str(" NOT VERIFIED");
    }
    text
}

pub(super) fn param(row: &Row, key: &str) -> Option<u64> {
    row.params.get(key).and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_unverified_run_is_marked_in_every_table() {
        let mut bad = row("epoll", 1, 10_000.0, false);
        bad.verified = false;
        bad.notes
            .push("NOT VERIFIED: 1 echoes came back with different bytes".into());
        let text = render_study(&[bad], &[1]);
        assert!(text.matches("NOT VERIFIED").count() >= 6, "{text}");
    }

    #[test]
    fn lists_reject_zero_and_garbage_with_the_flag_name() {
        let parse = |text: &str| text.parse::<usize>().ok().filter(|&n| n > 0);
        let good = parse_list(&["1".into(), " 50".into()], "--connections", parse).unwrap();
        assert_eq!(good, [1, 50]);
        let error = parse_list(&["0".into()], "--connections", parse).unwrap_err();
        assert!(error.to_string().contains("--connections value '0'"));
    }
}
