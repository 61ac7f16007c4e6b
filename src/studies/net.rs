//! What the network studies share: where servers and client run (`Rig`), a server engine as a
//! child process (`ringside serve`, measured from outside), and one cell of a study: a fresh
//! server, one load run, the server measured over exactly the load's window. A contender
//! (`contender.rs`, any server program) goes through the same cell.
//!
//! A fresh server process per run keeps one engine's leftovers (sockets in TIME_WAIT aside) off
//! the next.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ExitCode, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Map, Value};

use super::contender::{self, Contender};
use super::serve::{runs_event_loops, ServerStats, STATS_TO_STDOUT};
use super::{choose, finish, run_alternating, Cell, Chosen, Destination};
use crate::engines::uring::ring::{format_cpus, Helpers};
use crate::engines::EngineDef;
use crate::load::{load_row, LoadPlan, LoadReport, Mode, WindowEdge, STREAM_WINDOW_BYTES};
use crate::measure::{CoreTimes, Measured, ProcessMeter, ProcessSyscallCounter};
use crate::output::progress::Progress;
use crate::row::Row;
use crate::system::limits::{ensure_fds, fds_for_connections};
use crate::system::network::{NetPath, PathPlan};
use crate::system::pin::CpuSplit;
use crate::system::tuning::{Idle, Sched};

/// How long a server may take to say where it listens, and to exit after SIGTERM.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(10);
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A network study's shape, from its flags (the echo and HTTP studies add their own).
pub struct NetStudy {
    /// The engines named (or the workload's defaults), before the availability check.
    pub engines: Vec<&'static EngineDef>,
    /// Whether `--engine` named them: a named engine that cannot run here gets failure rows.
    pub engines_named: bool,
    /// Server programs measured beside the engines (`--contender`), after them in each run.
    pub contenders: Vec<Contender>,
    /// Connection counts: one column (echo) or table (HTTP) each.
    pub connection_counts: Vec<usize>,
    /// Event loops of the engines' servers (`--server-threads 1,2,4`): a cell each, the CPUs
    /// split afresh for each count (`Placement`). The contenders run at the first.
    pub server_thread_counts: Vec<usize>,
    pub placement: Placement,
    /// The connection counts the contenders run at (`--contender-connections`; all of them by
    /// default), so `ringside run` can add them within its time.
    pub contender_connection_counts: Vec<usize>,
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

/// What serves a cell: one of ringside's engines, or a contender.
#[derive(Clone)]
pub enum Server {
    Engine(&'static EngineDef),
    Contender(Contender),
}

impl Server {
    /// The name its rows carry in `engine`.
    pub fn name(&self) -> String {
        match self {
            Server::Engine(engine) => engine.name.to_string(),
            Server::Contender(contender) => contender.engine(),
        }
    }
}

/// One cell of a network study: a server with its event loops at a connection count (and,
/// for echo, a payload).
pub struct NetCell {
    pub server: Server,
    pub server_threads: usize,
    pub connections: usize,
    pub payload_bytes: Option<usize>,
}

impl NetCell {
    /// The engine serving the cell (None for a contender).
    fn server_def(&self) -> Option<&'static EngineDef> {
        match self.server {
            Server::Engine(engine) => Some(engine),
            Server::Contender(_) => None,
        }
    }

    /// The server's name, and its loops when it has more than one (`epoll x2`).
    pub fn server_label(&self) -> String {
        match self.server_threads {
            1 => self.server.name(),
            threads => format!("{} x{threads}", self.server.name()),
        }
    }
}

impl Cell for NetCell {
    fn step(&self, run: u32, _runs: u32) -> String {
        let (server, connections) = (self.server_label(), self.connections);
        match self.payload_bytes {
            Some(payload) => format!("run {run} {server} {connections} conn {payload} B"),
            None => format!("run {run} {server} {connections} conn"),
        }
    }

    fn failed(&self, run: u32) -> String {
        let (server, connections) = (self.server_label(), self.connections);
        format!("{server} run {run} with {connections} connections failed")
    }
}

/// Where the study's flags put servers and load, before a server-thread count is known.
#[derive(Clone, Debug)]
pub struct Placement {
    pub online: Vec<usize>,
    /// `--server-cpu` and `--client-cpu` when given.
    pub server_cpus: Option<Vec<usize>>,
    pub client_cpus: Option<Vec<usize>>,
    /// Load threads (`--threads`); None: one per CPU the load gets.
    pub client_threads: Option<usize>,
}

impl Placement {
    /// The CPUs of a server with `server_threads` loops and of its load (`CpuSplit::fair`).
    pub fn split(&self, server_threads: usize) -> CpuSplit {
        let (server, client) = (self.server_cpus.as_deref(), self.client_cpus.as_deref());
        CpuSplit::fair(&self.online, server_threads, server, client)
    }
}

/// Where a study runs its servers and client, shared by the echo and HTTP studies.
#[derive(Clone, Debug)]
pub struct Rig {
    /// The server's event loops (`serve --threads`), pinned to `cpus.server` round robin; the
    /// load's threads on `cpus.client`.
    pub server_threads: usize,
    pub cpus: CpuSplit,
    /// Record `server_threads` in every row, also at 1 (a study that sweeps it).
    pub record_threads: bool,
    /// Later loops' SQPOLL rings attach to the first loop's poller (`serve --share-sqpoll`).
    pub share_sqpoll: bool,
    pub sched: Sched,
    pub idle: Idle,
    /// What follows `ringside serve`: the protocol and its flags (`echo`, `http --body-size 16k`).
    pub serve: Vec<String>,
    /// The io_uring servers' kernel threads, passed to every server and recorded in the rows of
    /// the engines that use a ring.
    pub helpers: Helpers,
    /// The path between server and client (loopback, or a veth pair between namespaces).
    pub path: PathPlan,
    /// Count io_uring's tracepoints on the server's threads (`--ring-events`).
    pub ring_events: bool,
    /// Servers close connections silent for this long (`serve --idle-timeout`), recorded in
    /// the rows as `idle_timeout_ms` so that runs with and without it tell apart.
    pub idle_timeout: Option<Duration>,
}

impl Rig {
    /// The server's first CPU: its core's softirq and steal are recorded, and its io-wq
    /// workers stay there.
    pub fn server_cpu(&self) -> usize {
        self.cpus.server[0]
    }

    /// The load's first CPU: its core's softirq and steal are recorded.
    pub fn client_cpu(&self) -> usize {
        self.cpus.client[0]
    }

    /// Whether this server's later SQPOLL rings attach to its first loop's poller.
    fn shares_sqpoll(&self, engine: &EngineDef) -> bool {
        self.share_sqpoll && engine.needs.setup.sqpoll && self.server_threads > 1
    }
}

/// One (engine, connections, payload, run): a fresh server, one load run, the server measured
/// over the load's window, the server stopped.
pub fn run_cell(
    engine: &EngineDef,
    plan: LoadPlan,
    run: u32,
    args: &Rig,
    path: &NetPath,
) -> anyhow::Result<Row> {
    let server = ServerProcess::start(engine, args, path)?;
    let mut params = rig_params(args);
    if engine.needs.uses_io_uring() {
        params.extend(args.helpers.params(engine.needs.setup.sqpoll));
    }
    if args.shares_sqpoll(engine) {
        params.insert("sqpoll_shared".into(), Value::Bool(true));
    }
    measure_server(server, engine.name, params, plan, run, args, path)
}

/// The row of an engine's cell that measured nothing: the cell's parameters, no result, the
/// reason (a contender's is `contender::failed_row`).
pub fn engine_failed_row(
    engine: &EngineDef,
    plan: &LoadPlan,
    run: u32,
    args: &Rig,
    reason: &str,
) -> Row {
    let empty = (LoadReport::empty(), Measured::default());
    let mut row = load_row(
        engine.name,
        rig_params(args),
        run,
        plan,
        &empty.0,
        Some(&empty.1),
    );
    row.fail(reason);
    row
}

/// The parameters of the rig every network row carries.
pub fn rig_params(args: &Rig) -> Map<String, Value> {
    let mut params = args.path.params();
    params.insert("idle".into(), Value::from(args.idle.name()));
    params.insert("server_cpu".into(), Value::from(args.server_cpu()));
    if args.server_threads > 1 || args.record_threads {
        params.insert("server_threads".into(), Value::from(args.server_threads));
        params.insert(
            "server_cpus".into(),
            Value::from(format_cpus(&args.cpus.server)),
        );
    }
    params.insert("client_cpu".into(), Value::from(args.client_cpu()));
    if args.cpus.client.len() > 1 {
        let cpus = format_cpus(&args.cpus.client);
        params.insert("client_cpus".into(), Value::from(cpus));
    }
    let shared = args.cpus.shared();
    if !shared.is_empty() {
        params.insert("cpus_shared".into(), Value::from(format_cpus(&shared)));
    }
    if let Some(timeout) = args.idle_timeout {
        params.insert(
            "idle_timeout_ms".into(),
            Value::from(timeout.as_millis() as u64),
        );
    }
    params
}

/// One load run against a started server (an engine's or a contender's), the server measured
/// from outside over exactly the load's window, then stopped; its row, named `engine`.
pub fn measure_server(
    mut server: ServerProcess,
    engine: &str,
    params: Map<String, Value>,
    mut plan: LoadPlan,
    run: u32,
    args: &Rig,
    path: &NetPath,
) -> anyhow::Result<Row> {
    plan.target = server.address;
    let mut meter = server.meter().with_ring_events(args.ring_events);
    let mut measured: Option<std::io::Result<Measured>> = None;
    let mut started: std::io::Result<()> = Ok(());
    let cores = [args.server_cpu(), args.client_cpu()];
    let mut cores_before = [None, None];
    let mut cores_during = [None, None];
    let report = path.as_client(|| {
        crate::load::run(&plan, &mut |edge| match edge {
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
        })
    });
    let stats = server.stop()?;
    let report = report??;
    started.context("cannot measure the server")?;
    let measured = measured
        .expect("a finished load run passed its window's end")
        .context("cannot measure the server")?;
    let mut row = load_row(engine, params, run, &plan, &report, Some(&measured));
    let [server_core, client_core] = cores_during;
    row.server_core_softirq_s = server_core.map(|t| t.softirq_s);
    row.server_core_steal_s = server_core.map(|t| t.steal_s);
    row.client_core_softirq_s = client_core.map(|t| t.softirq_s);
    row.client_core_steal_s = client_core.map(|t| t.steal_s);
    row.server_core_net_rx_softirqs = server_core.and_then(|t| t.net_rx_softirqs);
    row.client_core_net_rx_softirqs = client_core.and_then(|t| t.net_rx_softirqs);
    if let Some(stats) = stats {
        add_server_stats(&mut row, &stats, plan.connections);
    }
    let shared = args.cpus.shared();
    if !shared.is_empty() {
        row.notes.push(format!(
            "the server and the load generator shared CPU {}: a run that measures sharing, \
             not scaling (a fair split gives the server's loops CPUs of their own)",
            format_cpus(&shared)
        ));
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

/// A server child process: `ringside serve` (also the server of `run`'s wrk control), or a
/// contender's command.
pub struct ServerProcess {
    pub child: Child,
    pub address: SocketAddr,
    /// What `ringside serve` prints after its `listening on` line: its stats (`--stats -`),
    /// sent once it has exited. None for a contender.
    rest: Option<Receiver<String>>,
    /// Some for a contender: it leads a process group of its own (stopped as a whole), and
    /// this holds the last line it wrote to stderr.
    last_words: Option<Arc<Mutex<String>>>,
    /// A contender's syscall counter, opened before its command ran (None: opened when the
    /// window opens, or not counting).
    syscalls: Option<ProcessSyscallCounter>,
}

impl ServerProcess {
    /// Starts `engine` on the server's side of `path`.
    pub fn start(engine: &EngineDef, args: &Rig, path: &NetPath) -> anyhow::Result<ServerProcess> {
        let exe = std::env::current_exe().context("cannot find the ringside binary")?;
        let mut child = path
            .server_command(&exe)
            .arg("serve")
            .args(&args.serve)
            .args(["--quiet", "--stats", STATS_TO_STDOUT, "--listen"])
            .arg(path.server_listen().to_string())
            .arg("--engine")
            .arg(engine.name)
            .arg("--cpu")
            .arg(format_cpus(&args.cpus.server))
            .arg("--threads")
            .arg(args.server_threads.to_string())
            .args(args.shares_sqpoll(engine).then_some("--share-sqpoll"))
            .arg("--sched")
            .arg(args.sched.name())
            .args(args.helpers.serve_args())
            .args(args.idle_timeout.iter().flat_map(|timeout| {
                [
                    "--idle-timeout".to_string(),
                    format!("{}ms", timeout.as_millis()),
                ]
            }))
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
                rest: Some(receiver),
                last_words: None,
                syscalls: None,
            }),
            None => {
                let _ = child.kill();
                let status = child.wait()?;
                anyhow::bail!("the {} server did not start ({status})", engine.name)
            }
        }
    }

    /// A started contender, leading its own process group, whose stderr `last_words` keeps,
    /// counted by `syscalls` since before it ran.
    pub fn contender(
        child: Child,
        address: SocketAddr,
        last_words: Arc<Mutex<String>>,
        syscalls: Option<ProcessSyscallCounter>,
    ) -> ServerProcess {
        ServerProcess {
            child,
            address,
            rest: None,
            last_words: Some(last_words),
            syscalls,
        }
    }

    /// The meter of this server's window (once: it takes a contender's counter).
    pub fn meter(&mut self) -> ProcessMeter {
        ProcessMeter::with_counter(self.child.id() as i32, self.syscalls.take())
    }

    /// "; its last words on stderr: ..." when a contender wrote any, for a failure to quote.
    pub fn last_words(&self) -> String {
        let Some(kept) = &self.last_words else {
            return String::new();
        };
        match kept.lock().unwrap_or_else(|e| e.into_inner()).as_str() {
            "" => String::new(),
            line => format!("; its last words on stderr: {line}"),
        }
    }

    /// SIGTERM (to a contender's whole group), then a bounded wait; a server that does not
    /// stop is killed (and reported, unless it is a contender), and one that had exited before
    /// it was asked to is reported. Returns the stats `ringside serve` printed as it stopped.
    pub fn stop(&mut self) -> anyhow::Result<Option<ServerStats>> {
        if let Some(status) = self.child.try_wait()? {
            self.kill();
            anyhow::bail!(
                "the server exited during the run with {status}{}",
                self.last_words()
            );
        }
        self.signal(rustix::process::Signal::TERM);
        let deadline = Instant::now() + SERVER_STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                // A contender may die of the signal; ringside's servers exit 0 on it.
                anyhow::ensure!(
                    self.last_words.is_some() || status.success(),
                    "the server exited with {status}"
                );
                if !self.group_alive() {
                    return Ok(self.stats());
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        // A contender that ignores SIGTERM is killed and its measurement stands (the issue's
        // contract: SIGTERM, then SIGKILL after a bound); ringside's own servers must stop.
        anyhow::ensure!(
            self.last_words.is_some(),
            "the server did not stop within {SERVER_STOP_TIMEOUT:?} of SIGTERM"
        );
        Ok(None)
    }

    /// The stats `ringside serve` printed as it exited (None for a contender).
    fn stats(&self) -> Option<ServerStats> {
        let rest = self.rest.as_ref()?.recv_timeout(SERVER_STOP_TIMEOUT).ok()?;
        let last = rest.lines().rfind(|line| !line.trim().is_empty())?;
        serde_json::from_str(last).ok()
    }

    fn pid(&self) -> rustix::process::Pid {
        rustix::process::Pid::from_raw(self.child.id() as i32).expect("a child pid")
    }

    /// Sends `signal` to the server, or to a contender's whole process group.
    fn signal(&self, signal: rustix::process::Signal) {
        let _ = match self.last_words {
            Some(_) => rustix::process::kill_process_group(self.pid(), signal),
            None => rustix::process::kill_process(self.pid(), signal),
        };
    }

    /// Whether a contender's process group still has a process (false for ringside's servers,
    /// which have no group of their own).
    fn group_alive(&self) -> bool {
        self.last_words.is_some() && rustix::process::test_kill_process_group(self.pid()).is_ok()
    }

    /// SIGKILL to the server (and its group), and the child reaped.
    fn kill(&mut self) {
        self.signal(rustix::process::Signal::KILL);
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // An error path left the server (or a contender's group) running: do not leave it
        // behind.
        if matches!(self.child.try_wait(), Ok(None)) || self.group_alive() {
            self.kill();
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

/// What a study's table appends to a cell of `runs`: `*` a saturated client, `!` errors,
/// ` FAILED` (the notes below the table say why) and ` NOT VERIFIED` in some run.
pub fn markers(runs: &[&Row]) -> String {
    let mut text = String::new();
    if runs.iter().any(|r| r.client_saturated == Some(true)) {
        text.push('*');
    }
    if runs.iter().any(|r| r.errors > 0) {
        text.push('!');
    }
    if runs.iter().any(|r| r.failure.is_some()) {
        text.push_str(" FAILED");
    }
    if runs.iter().any(|r| !r.verified && r.failure.is_none()) {
        text.push_str(" NOT VERIFIED");
    }
    text
}

/// The lines below a study's tables that say why a run failed or did not verify.
pub fn failure_lines(rows: &[Row]) -> String {
    let mut text = String::new();
    for (row, note) in rows
        .iter()
        .flat_map(|row| row.notes.iter().map(move |note| (row, note)))
        .filter(|(_, note)| note.starts_with("NOT VERIFIED") || note.starts_with("FAILED"))
    {
        text.push_str(&format!("{} {}: {note}\n", row.engine, row.params_text()));
    }
    text
}

/// One line of a study's table: an engine, at one server-thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLine<'a> {
    pub engine: &'a str,
    /// `params.server_threads` (absent: one loop).
    pub server_threads: u64,
    /// Whether the study swept server threads, so the label names the count.
    sweep: bool,
}

impl TableLine<'_> {
    pub fn label(&self) -> String {
        match self.sweep {
            true if self.server_threads == 1 => format!("{}, 1 loop", self.engine),
            true => format!("{}, {} loops", self.engine, self.server_threads),
            false => self.engine.to_string(),
        }
    }

    /// Whether `row` is a run of this line.
    pub fn holds(&self, row: &Row) -> bool {
        row.engine == self.engine && server_threads(row) == self.server_threads
    }
}

/// The server's event loops a row ran with (one unless it records more).
pub fn server_threads(row: &Row) -> u64 {
    param(row, "server_threads").unwrap_or(1)
}

/// The table's lines, engines in the order the rows first name them, each engine's thread
/// counts ascending.
pub fn lines_in(rows: &[Row]) -> Vec<TableLine<'_>> {
    let mut counts: Vec<u64> = rows.iter().map(server_threads).collect();
    counts.sort_unstable();
    counts.dedup();
    let sweep = counts.len() > 1;
    let mut lines: Vec<TableLine> = Vec::new();
    for row in rows {
        let line = TableLine {
            engine: &row.engine,
            server_threads: server_threads(row),
            sweep,
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let mut engines: Vec<&str> = lines.iter().map(|line| line.engine).collect();
    engines.dedup();
    lines.sort_by_key(|line| {
        let first = engines.iter().position(|&engine| engine == line.engine);
        (first, line.server_threads)
    });
    lines
}

impl NetStudy {
    /// The rig of a server with `server_threads` loops: the CPUs split for that count.
    fn rig(&self, server_threads: usize) -> Rig {
        Rig {
            server_threads,
            cpus: self.placement.split(server_threads),
            ..self.rig.clone()
        }
    }

    /// The load run of one cell; the study's own flags fill in the rest: one load thread per
    /// CPU the server leaves, unless `--threads` says otherwise.
    pub fn load_plan(&self, cell: &NetCell, payload_bytes: usize, mode: Mode) -> LoadPlan {
        let client_cpus = self.placement.split(cell.server_threads).client;
        LoadPlan {
            target: SocketAddr::from(([127, 0, 0, 1], 0)),
            connections: cell.connections,
            payload_bytes,
            duration: self.duration,
            warmup: self.warmup,
            threads: (self.placement.client_threads).unwrap_or(client_cpus.len()),
            timeout: self.timeout,
            cpus: client_cpus,
            sched: self.rig.sched,
            mode,
            read_bytes_per_sec: None,
            rcvbuf_bytes: None,
            window_bytes: STREAM_WINDOW_BYTES,
            http: None,
            start_at: None,
        }
    }

    /// Runs the study on the studies' runner: the engines that can run here and then the
    /// contenders, at every payload (None: the protocol's own messages) and connection count,
    /// `plan_of` giving each cell's load run, `line` turning each row (which it may complete)
    /// into its progress line, and `table` rendering the results. With `integrity`, every
    /// contender then gets one more cell, that plan's run (the echo study's slow-reader stream).
    pub fn run(
        &self,
        payloads: &[Option<usize>],
        plan_of: impl Fn(&NetCell) -> LoadPlan,
        integrity: Option<&dyn Fn(&NetCell) -> LoadPlan>,
        line: impl Fn(&NetCell, u32, &mut Row) -> String,
        table: impl FnOnce(&[Row]) -> String,
    ) -> anyhow::Result<ExitCode> {
        let chosen = match self.engines.is_empty() {
            true => None,
            false => Some(choose(
                self.engines.clone(),
                self.engines_named,
                self.quiet,
            )?),
        };
        let engines = chosen.as_ref().map(Chosen::cells).unwrap_or_default();
        let servers: Vec<Server> = (engines.into_iter().map(Server::Engine))
            .chain(self.contenders.iter().cloned().map(Server::Contender))
            .collect();
        // The load generator holds every connection here, the server another end of each.
        let most = self.connection_counts.iter().copied().max().unwrap_or(1);
        ensure_fds(
            fds_for_connections(most),
            &format!("a run with {most} connections"),
        )?;
        let _idle = self.rig.idle.hold()?;
        // Set up once for the whole study, removed when it ends, however it ends.
        let path = self.rig.path.open()?;
        let mut cells = Vec::new();
        let first_count = self.server_thread_counts[0];
        for &payload_bytes in payloads {
            for &connections in &self.connection_counts {
                for &server_threads in &self.server_thread_counts {
                    let runs_here = |server: &&Server| match server {
                        Server::Engine(engine) => server_threads == 1 || runs_event_loops(engine),
                        Server::Contender(_) => {
                            server_threads == first_count
                                && self.contender_connection_counts.contains(&connections)
                        }
                    };
                    cells.extend(servers.iter().filter(runs_here).map(|server| NetCell {
                        server: server.clone(),
                        server_threads,
                        connections,
                        payload_bytes,
                    }));
                }
            }
        }
        let checks: Vec<NetCell> = match integrity {
            Some(plan) => self
                .contenders
                .iter()
                .map(|c| integrity_cell(c, plan))
                .collect(),
            None => Vec::new(),
        };
        let steps = cells.len() as u64 * u64::from(self.runs) + checks.len() as u64;
        let progress = Progress::new(steps, self.quiet);
        let failures = ContenderFailures::default();
        let measure = |cell: &NetCell, run: u32, plan: LoadPlan| -> anyhow::Result<Row> {
            let rig = self.rig(cell.server_threads);
            let unavailable = chosen
                .as_ref()
                .and_then(|c| c.unavailable(cell.server_def()?));
            let mut row = match &cell.server {
                Server::Engine(engine) => match unavailable {
                    Some(reason) => engine_failed_row(engine, &plan, run, &rig, &reason),
                    None => run_cell(engine, plan, run, &rig, &path)?,
                },
                Server::Contender(contender) => {
                    failures.run_cell(contender, plan, run, &rig, &progress)
                }
            };
            let text = line(cell, run, &mut row);
            if row.failure.is_none() {
                progress.line(text);
            }
            Ok(row)
        };
        // Only an engine's cell fails here: a contender's failure is already its row.
        let failed = |cell: &NetCell, run: u32, reason: &str, plan: LoadPlan| match &cell.server {
            Server::Engine(engine) => {
                engine_failed_row(engine, &plan, run, &self.rig(cell.server_threads), reason)
            }
            Server::Contender(contender) => {
                contender::failed_row(contender, &plan, run, &self.rig(1), reason)
            }
        };
        let mut outcome = run_alternating(
            self.runs,
            &cells,
            &progress,
            |cell, run| measure(cell, run, plan_of(cell)),
            |cell, run, reason| failed(cell, run, reason, plan_of(cell)),
        );
        if let (Some(plan), false) = (integrity, outcome.interrupted || checks.is_empty()) {
            let more = run_alternating(
                1,
                &checks,
                &progress,
                |cell, run| measure(cell, run, plan(cell)),
                |cell, run, reason| failed(cell, run, reason, plan(cell)),
            );
            outcome.rows.extend(more.rows);
            outcome.interrupted = more.interrupted;
        }
        progress.finish();
        finish(outcome, Path::new("."), &self.destination, table)
    }
}

/// The integrity cell of `contender`: the connections and payload `plan` asks for.
fn integrity_cell(contender: &Contender, plan: &dyn Fn(&NetCell) -> LoadPlan) -> NetCell {
    let mut cell = NetCell {
        server: Server::Contender(contender.clone()),
        server_threads: 1,
        connections: 1,
        payload_bytes: None,
    };
    let load = plan(&cell);
    cell.connections = load.connections;
    cell.payload_bytes = Some(load.payload_bytes);
    cell
}

/// The contenders of a study that did not start, so that their later cells do not wait for
/// them again.
#[derive(Default)]
struct ContenderFailures {
    not_started: std::cell::RefCell<Vec<(String, String)>>,
}

impl ContenderFailures {
    /// A contender's cell; a failure is one line on stderr and a row that says why.
    fn run_cell(
        &self,
        contender: &Contender,
        plan: LoadPlan,
        run: u32,
        rig: &Rig,
        progress: &Progress,
    ) -> Row {
        let connections = plan.connections;
        let earlier = (self.not_started.borrow().iter())
            .find(|(name, _)| *name == contender.name)
            .map(|(_, reason)| reason.clone());
        if let Some(reason) = earlier {
            let reason = format!("not started again: it failed to start before ({reason})");
            return contender::failed_row(contender, &plan, run, rig, &reason);
        }
        let (row, failure) = contender::run_cell(contender, plan, run, rig);
        if let Some(failure) = failure {
            progress.alert(format!(
                "ringside: {} run {run} with {connections} connections failed: {}",
                contender.engine(),
                failure.reason
            ));
            if !failure.started {
                self.not_started
                    .borrow_mut()
                    .push((contender.name.clone(), failure.reason));
            }
        }
        row
    }
}
