//! What the network studies share: where servers and client run (`Rig`), a server engine as a
//! child process (`ringside serve`, measured from outside), and one cell of a study: a fresh
//! server, one load run, the server measured over exactly the load's window.
//!
//! A fresh server process per run keeps one engine's leftovers (sockets in TIME_WAIT aside) off
//! the next.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Map, Value};

use super::serve::{ServerStats, STATS_TO_STDOUT};
use super::{finish, run_alternating, Cell, Destination};
use crate::engines::uring::ring::Helpers;
use crate::engines::EngineDef;
use crate::load::{load_row, LoadPlan, Mode, WindowEdge, STREAM_WINDOW_BYTES};
use crate::measure::{CoreTimes, Measured, ProcessMeter};
use crate::output::progress::Progress;
use crate::row::Row;
use crate::system::limits::{ensure_fds, fds_for_connections};
use crate::system::tuning::{Idle, Sched};

/// How long a server may take to say where it listens, and to exit after SIGTERM.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(10);
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A network study's shape, from its flags (the echo and HTTP studies add their own).
pub struct NetStudy {
    /// The engines named (or the workload's defaults), before the availability check.
    pub engines: Vec<&'static EngineDef>,
    /// Connection counts: one column (echo) or table (HTTP) each.
    pub connection_counts: Vec<usize>,
    pub runs: u32,
    /// Measured time per run, and the unmeasured time before it.
    pub duration: Duration,
    pub warmup: Duration,
    /// A message or response not answered within this time is a timeout.
    pub timeout: Duration,
    pub rig: Rig,
    pub destination: Destination,
    pub quiet: bool,
}

/// One cell of a network study: an engine at a connection count (and, for echo, a payload).
pub struct NetCell {
    pub engine: &'static EngineDef,
    pub connections: usize,
    pub payload_bytes: Option<usize>,
}

impl Cell for NetCell {
    fn step(&self, run: u32, _runs: u32) -> String {
        let (engine, connections) = (self.engine.name, self.connections);
        match self.payload_bytes {
            Some(payload) => format!("run {run} {engine} {connections} conn {payload} B"),
            None => format!("run {run} {engine} {connections} conn"),
        }
    }

    fn failed(&self, run: u32) -> String {
        let (engine, connections) = (self.engine.name, self.connections);
        format!("{engine} run {run} with {connections} connections")
    }
}

/// Where a study runs its servers and client, shared by the echo and HTTP studies.
pub struct Rig {
    pub server_cpu: usize,
    pub client_cpu: usize,
    pub sched: Sched,
    pub idle: Idle,
    /// What follows `ringside serve`: the protocol and its flags (`echo`, `http --body-size 16k`).
    pub serve: Vec<String>,
    /// The io_uring servers' kernel threads, passed to every server and recorded in the rows of
    /// the engines that use a ring.
    pub helpers: Helpers,
}

/// One (engine, connections, payload, run): a fresh server, one load run, the server measured
/// over the load's window, the server stopped.
pub fn run_cell(
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
    let report = crate::load::run(&plan, &mut |edge| match edge {
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
    let stats = server.stop()?;
    let report = report?;
    started.context("cannot measure the server")?;
    let measured = measured
        .expect("a finished load run passed its window's end")
        .context("cannot measure the server")?;
    let mut params = Map::new();
    params.insert("idle".into(), Value::from(args.idle.name()));
    params.insert("server_cpu".into(), Value::from(args.server_cpu));
    params.insert("client_cpu".into(), Value::from(args.client_cpu));
    if engine.needs.uses_io_uring() {
        params.extend(args.helpers.params(engine.needs.setup.sqpoll));
    }
    let mut row = load_row(engine.name, params, run, &plan, &report, Some(&measured));
    let [server_core, client_core] = cores_during;
    row.server_core_softirq_s = server_core.map(|t| t.softirq_s);
    row.server_core_steal_s = server_core.map(|t| t.steal_s);
    row.client_core_softirq_s = client_core.map(|t| t.softirq_s);
    row.client_core_steal_s = client_core.map(|t| t.steal_s);
    if let Some(stats) = stats {
        add_server_stats(&mut row, &stats, plan.connections);
    }
    Ok(row)
}

/// What the server counted itself: the faults it recovered from, and its memory.
fn add_server_stats(row: &mut Row, stats: &ServerStats, connections: usize) {
    let counters = &stats.counters;
    row.connections_refused_fd_limit = Some(counters.connections_refused_fd_limit);
    row.provided_buffers_exhausted = Some(counters.provided_buffers_exhausted);
    row.cq_overflows = Some(counters.cq_overflows);
    row.server_rss_peak_bytes = stats.rss_bytes_peak;
    row.server_rss_bytes_per_connection = stats
        .rss_bytes_peak
        .zip(stats.rss_bytes_at_start)
        .map(|(peak, start)| peak.saturating_sub(start) / connections.max(1) as u64);
}

/// A `ringside serve` child process (also the server of `run`'s wrk control).
pub struct ServerProcess {
    pub child: Child,
    pub address: SocketAddr,
    /// What the server prints after its `listening on` line: its stats (`--stats -`), sent
    /// once it has exited.
    rest: Receiver<String>,
}

impl ServerProcess {
    pub fn start(engine: &EngineDef, args: &Rig) -> anyhow::Result<ServerProcess> {
        let exe = std::env::current_exe().context("cannot find the ringside binary")?;
        let mut child = Command::new(exe)
            .arg("serve")
            .args(&args.serve)
            .args([
                "--quiet",
                "--listen",
                "127.0.0.1:0",
                "--stats",
                STATS_TO_STDOUT,
            ])
            .arg("--engine")
            .arg(engine.name)
            .arg("--cpu")
            .arg(args.server_cpu.to_string())
            .arg("--sched")
            .arg(args.sched.name())
            .args(args.helpers.serve_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start the server process")?;
        let stdout = child.stdout.take().expect("piped stdout");
        // The first line says where the server listens; a server that fails says why on the
        // inherited stderr and exits, which ends the line with EOF.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            if sender.send(line).is_err() {
                return;
            }
            // Then the rest, up to the server's exit: its stats.
            let mut rest = String::new();
            let _ = stdout.read_to_string(&mut rest);
            let _ = sender.send(rest);
        });
        let line = receiver
            .recv_timeout(SERVER_START_TIMEOUT)
            .unwrap_or_default();
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|text| text.parse().ok());
        match address {
            Some(address) => Ok(ServerProcess {
                child,
                address,
                rest: receiver,
            }),
            None => {
                let _ = child.kill();
                let status = child.wait()?;
                anyhow::bail!("the {} server did not start ({status})", engine.name)
            }
        }
    }

    /// SIGTERM, then a bounded wait; a server that does not stop is killed and reported, as
    /// is one that had died already. Returns the stats the server printed as it stopped.
    pub fn stop(&mut self) -> anyhow::Result<Option<ServerStats>> {
        if let Some(status) = self.child.try_wait()? {
            anyhow::bail!("the server process died during the run ({status})");
        }
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("a child pid");
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + SERVER_STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                anyhow::ensure!(status.success(), "the server exited with {status}");
                let rest = self
                    .rest
                    .recv_timeout(SERVER_STOP_TIMEOUT)
                    .unwrap_or_default();
                let last = rest.lines().rfind(|line| !line.trim().is_empty());
                return Ok(last.and_then(|line| serde_json::from_str(line).ok()));
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

/// `amount` per message (or request) of `row` (NaN when it has none).
pub fn per_message(row: &Row, amount: f64) -> f64 {
    if row.ops > 0 {
        amount / row.ops as f64
    } else {
        f64::NAN
    }
}

/// A numeric parameter of `row` (`connections`, `payload_bytes`).
pub fn param(row: &Row, key: &str) -> Option<u64> {
    row.params.get(key).and_then(Value::as_u64)
}

/// What a study's table appends to a cell of `runs`: `*` a saturated client, `!` errors, and
/// ` NOT VERIFIED` in some run.
pub fn markers(runs: &[&Row]) -> String {
    let mut text = String::new();
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

/// The engines in the order the rows first name them.
pub fn engines_in(rows: &[Row]) -> Vec<&str> {
    let mut engines: Vec<&str> = Vec::new();
    for row in rows {
        if !engines.contains(&row.engine.as_str()) {
            engines.push(&row.engine);
        }
    }
    engines
}

impl NetStudy {
    /// The load run of one cell; the study's own flags fill in the rest.
    pub fn load_plan(&self, cell: &NetCell, payload_bytes: usize, mode: Mode) -> LoadPlan {
        LoadPlan {
            target: SocketAddr::from(([127, 0, 0, 1], 0)),
            connections: cell.connections,
            payload_bytes,
            duration: self.duration,
            warmup: self.warmup,
            threads: 1,
            timeout: self.timeout,
            cpu: Some(self.rig.client_cpu),
            sched: self.rig.sched,
            mode,
            read_bytes_per_sec: None,
            rcvbuf_bytes: None,
            window_bytes: STREAM_WINDOW_BYTES,
            http: None,
        }
    }

    /// Runs the study on the studies' runner: the engines that can run here, at every payload
    /// (None: the protocol's own messages) and connection count, `plan_of` giving each cell's
    /// load run, `line` turning each row (which it may complete) into its progress line, and
    /// `table` rendering the results.
    pub fn run(
        &self,
        payloads: &[Option<usize>],
        plan_of: impl Fn(&NetCell) -> LoadPlan,
        line: impl Fn(&NetCell, u32, &mut Row) -> String,
        table: impl FnOnce(&[Row]) -> String,
    ) -> anyhow::Result<ExitCode> {
        let engines = crate::engines::runnable(self.engines.clone(), self.quiet)?;
        // The load generator holds every connection here, the server another end of each.
        let most = self.connection_counts.iter().copied().max().unwrap_or(1);
        ensure_fds(
            fds_for_connections(most),
            &format!("a run with {most} connections"),
        )?;
        let _idle = self.rig.idle.hold()?;
        let mut cells = Vec::new();
        for &payload_bytes in payloads {
            for &connections in &self.connection_counts {
                cells.extend(engines.iter().map(|&engine| NetCell {
                    engine,
                    connections,
                    payload_bytes,
                }));
            }
        }
        let progress = Progress::new(cells.len() as u64 * u64::from(self.runs), self.quiet);
        let outcome = run_alternating(self.runs, &cells, &progress, |cell, run| {
            let mut row = run_cell(cell.engine, plan_of(cell), run, &self.rig)?;
            progress.line(line(cell, run, &mut row));
            Ok(row)
        });
        progress.finish();
        finish(outcome, Path::new("."), &self.destination, table)
    }
}
