//! What the network studies share: where servers and client run (`Rig`), a server engine as a
//! child process (`ringside serve`, measured from outside), and one cell of a study: a fresh
//! server, one load run, the server measured over exactly the load's window. A contender
//! (`contender.rs`, any server program) goes through the same cell.
//!
//! A fresh server process per run keeps one engine's leftovers (sockets in TIME_WAIT aside) off
//! the next.

mod cell;
pub mod contender;
mod process;
pub mod remote;
mod sweep;

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub use cell::{engine_failed_row, measure_server, rig_params, run_cell, Rig};
pub use process::{LastWords, ServerProcess};
pub use remote::{LoadHost, LoadHosts};
pub use sweep::{Runner, Sweep};

use super::serve::runs_event_loops;
use super::{
    attribution_rounds, choose, finish, run_rounds, Cell, Chosen, Destination, Plan, Round, Rounds,
};
use crate::engines::EngineDef;
use crate::load::{LoadPlan, Mode, STREAM_WINDOW_BYTES};
use crate::output::progress::{Progress, Say};
use crate::row::Row;
use crate::system::limits::{ensure_fds, fds_for_connections};
use crate::system::network::NetPath;
use crate::system::pin::CpuSplit;
use contender::Contender;
use remote::Hosts;

/// `serve echo`'s message size, which its `--work` is charged by.
pub const ECHO_PAYLOAD_FLAG: &str = "--payload";

/// A network study's shape, from its flags (the echo and HTTP studies add their own).
pub struct NetStudy {
    /// `echo` or `http`: which parent each engine extends (`engines::parent_of`).
    pub workload: &'static str,
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
    pub rounds: Rounds,
    /// The engines' work per request (`--work 0us,2us`): a cell each, a fresh server started
    /// with it; `[None]` without the flag. The contenders (who do their own) run at the first.
    pub works: Vec<Option<Duration>>,
    /// Offered rates (`--rate`): an open-loop cell each; empty: closed loop.
    pub rates: Vec<f64>,
    /// The equal-load sweep (`--sweep`) instead of one closed-loop cell per server.
    pub sweep: Option<Sweep>,
    /// Measured time per run, and the unmeasured time before it.
    pub duration: Duration,
    pub warmup: Duration,
    /// A message or response not answered within this time is a timeout.
    pub timeout: Duration,
    pub rig: Rig,
    /// The `serve` flag a cell's payload goes to: echo's `--payload` (its servers charge
    /// `--work` per message of that size), HTTP's `--body-size` (a fresh server per size);
    /// None: the servers serve their defaults.
    pub payload_flag: Option<&'static str>,
    pub destination: Destination,
    pub quiet: bool,
    /// Hosts the load runs on instead of this machine (`--load-host`, `--load-cmd`), checked
    /// before anything is measured.
    pub load_hosts: Option<LoadHosts>,
    /// A line per run (`-v`).
    pub verbose: bool,
}

/// What a run costs besides its warm-up and window, for the plan: a fresh server's start and
/// stop and the load's connects. Measured on a 2-vCPU VM: `echo` and `http` without flags took
/// 6.2 s a round of 10 runs and 4.9 s a round of 8 (0.55 s windows with their warm-ups), 0.06
/// to 0.07 s more a run; beside heavy builds (load average 12) 0.2 s more.
const RUN_START: Duration = Duration::from_millis(100);

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
    /// The engine's work per request (`serve --work`).
    pub work: Option<Duration>,
    /// Open loop at this many messages or requests per second; None: closed loop.
    pub rate: Option<f64>,
    /// Its part in an equal-load sweep.
    pub sweep: Option<SweepRole>,
    /// A sweep's second look at a rate the engine missed in its run (`params.second_look`):
    /// no round of its own.
    pub second_look: bool,
    /// Its measured window, and its warm-up and start before it: the run's planned time.
    pub window: Duration,
    pub lead: Duration,
}

/// A cell's part in an equal-load sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepRole {
    /// The closed-loop probe of what a server sustains.
    Probe,
    /// The open loop against the fastest server, finding the load's own ceiling.
    Ceiling,
    /// A point of the sweep, at an offered rate every server gets.
    Point,
}

impl NetCell {
    /// This cell in a sweep's `role`, at `rate` (None: the closed-loop probe).
    fn sweeping(&self, role: SweepRole, rate: Option<f64>) -> NetCell {
        NetCell {
            server: self.server.clone(),
            rate,
            sweep: Some(role),
            second_look: false,
            ..*self
        }
    }

    /// The same cell once more, as a second look.
    fn again(&self) -> NetCell {
        NetCell {
            server: self.server.clone(),
            second_look: true,
            ..*self
        }
    }

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
        let mut text = match self.payload_bytes {
            Some(payload) => format!("run {run} {server} {connections} conn {payload} B"),
            None => format!("run {run} {server} {connections} conn"),
        };
        match (self.sweep, self.rate) {
            (Some(SweepRole::Probe), _) => text.push_str(" probe"),
            (Some(SweepRole::Ceiling), Some(rate)) => {
                text.push_str(&format!(" load's ceiling at {rate:.0}/s"))
            }
            (_, Some(rate)) => text.push_str(&format!(" at {rate:.0}/s")),
            (_, None) => {}
        }
        if let Some(work) = self.work {
            text.push_str(&format!(" work {work:?}"));
        }
        text
    }

    fn failed(&self, run: u32) -> String {
        let (server, connections) = (self.server_label(), self.connections);
        format!("{server} run {run} with {connections} connections failed")
    }

    fn engine(&self) -> String {
        self.server.name()
    }

    fn planned(&self) -> Option<Duration> {
        Some(self.lead + self.window)
    }

    fn group(&self) -> String {
        format!(
            "{} {} {:?} {:?} {:?} {:?}",
            self.server_threads,
            self.connections,
            self.payload_bytes,
            self.work,
            self.rate,
            self.sweep
        )
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

impl NetStudy {
    /// The rig of `cell`'s server: the CPUs split for its loops, and its payload when the
    /// server takes it (`payload_flag`; every cell starts a fresh server, so each knows its
    /// own cell's size).
    fn rig(&self, cell: &NetCell) -> Rig {
        let mut serve = self.rig.serve.clone();
        if let (Some(flag), Some(bytes)) = (self.payload_flag, cell.payload_bytes) {
            serve.extend([flag.to_string(), bytes.to_string()]);
        }
        let charged_by_bytes = self.payload_flag == Some(ECHO_PAYLOAD_FLAG);
        Rig {
            server_threads: cell.server_threads,
            cpus: self.placement.split(cell.server_threads),
            serve,
            work: cell.work,
            work_bytes: cell.payload_bytes.filter(|_| charged_by_bytes),
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
            duration: match (&self.sweep, cell.sweep) {
                (Some(sweep), Some(SweepRole::Probe)) => sweep.probe,
                _ => self.duration,
            },
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
            rate_per_sec: cell.rate,
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
        // Before anything is measured, and before the engines are chosen: the route to the
        // servers decides what the rungs that need a NIC may do.
        let hosts = match &self.load_hosts {
            Some(load_hosts) => Some(Arc::new(self.check_hosts(load_hosts)?)),
            None => None,
        };
        let chosen = match self.engines.is_empty() {
            true => None,
            false => Some(choose(
                self.engines.clone(),
                self.engines_named,
                Say {
                    quiet: self.quiet,
                    verbose: self.verbose,
                },
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
        let rig_of = |cell: &NetCell| Rig {
            hosts: hosts.clone(),
            ..self.rig(cell)
        };
        let _idle = self.rig.idle.hold()?;
        // Set up once for the whole study, removed when it ends, however it ends.
        let path = match &hosts {
            Some(hosts) => NetPath::Listen(hosts.listen_on),
            None => self.rig.path.open()?,
        };
        let mut cells = Vec::new();
        let (first_count, first_work) = (self.server_thread_counts[0], self.works[0]);
        for &payload_bytes in payloads {
            for &connections in &self.connection_counts {
                for (&server_threads, &work) in (self.server_thread_counts.iter())
                    .flat_map(|t| self.works.iter().map(move |w| (t, w)))
                {
                    let runs_here = |server: &&Server| match server {
                        Server::Engine(engine) => server_threads == 1 || runs_event_loops(engine),
                        Server::Contender(_) => {
                            server_threads == first_count
                                && work == first_work
                                && self.contender_connection_counts.contains(&connections)
                        }
                    };
                    let rates: Vec<Option<f64>> = match self.rates.as_slice() {
                        [] => vec![None],
                        rates => rates.iter().copied().map(Some).collect(),
                    };
                    for rate in rates {
                        cells.extend(servers.iter().filter(runs_here).map(|server| NetCell {
                            server: server.clone(),
                            server_threads,
                            connections,
                            payload_bytes,
                            work,
                            rate,
                            sweep: None,
                            second_look: false,
                            window: self.duration,
                            lead: self.warmup + RUN_START,
                        }));
                    }
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
        // The sweep's runs are all timed: its rounds add no attribution round.
        let attribution = attribution_rounds(self.rig.ring_events && self.sweep.is_none());
        let plan = match &self.sweep {
            Some(sweep) => sweep.plan(self.workload, &cells, self.rounds),
            None => Plan::rounds(self.workload, &cells, self.rounds, None)
                .and_attribution(attribution, &cells),
        };
        let plan = match checks.is_empty() {
            true => plan,
            false => plan.and(Plan {
                what: format!("{} contenders' integrity streams", checks.len()),
                ..Plan::rounds(self.workload, &checks, Rounds::Exactly(1), None)
            }),
        };
        let say = Say {
            quiet: self.quiet,
            verbose: self.verbose,
        };
        let progress = plan.progress(say);
        let failures = ContenderFailures::default();
        let measure = |cell: &NetCell, round: Round, plan: LoadPlan| -> anyhow::Result<Row> {
            let run = round.run;
            let rig = Rig {
                ring_events: round.attribution,
                ..rig_of(cell)
            };
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
            if let (Some(sweep), Some(role)) = (&self.sweep, cell.sweep) {
                sweep.tag(&mut row, role, cell.second_look);
            }
            let mut text = line(cell, run, &mut row);
            if let Some(share) = row.client_late_share {
                text.push_str(&format!(", {:.1}% sends late", share * 100.0));
            }
            // Which side set the pace is each host's own CPU: each is said.
            for part in &row.load_hosts {
                let saturated = if part.client_saturated {
                    " saturated"
                } else {
                    ""
                };
                text.push_str(&format!(
                    "; {} {:.0}% busy{saturated}",
                    part.host,
                    part.client_busy_share * 100.0
                ));
            }
            if row.failure.is_none() {
                progress.run_line(text);
            }
            Ok(row)
        };
        // Only an engine's cell fails here: a contender's failure is already its row.
        let failed = |cell: &NetCell, run: u32, reason: &str, plan: LoadPlan| match &cell.server {
            Server::Engine(engine) => engine_failed_row(engine, &plan, run, &rig_of(cell), reason),
            Server::Contender(contender) => {
                contender::failed_row(contender, &plan, run, &rig_of(cell), reason)
            }
        };
        let mut outcome = match &self.sweep {
            Some(sweep) => sweep.run(
                self.rounds,
                &cells,
                &mut Runner {
                    workload: self.workload,
                    progress: &progress,
                    measure: |cell: &NetCell, run| measure(cell, Round::timed(run), plan_of(cell)),
                    failed_row: |cell: &NetCell, run, reason: &str| {
                        failed(cell, run, reason, plan_of(cell))
                    },
                },
            ),
            None => run_rounds(
                self.rounds,
                attribution,
                self.workload,
                &cells,
                &progress,
                |cell, round| measure(cell, round, plan_of(cell)),
                |cell, run, reason| failed(cell, run, reason, plan_of(cell)),
            ),
        };
        if let (Some(plan), false) = (integrity, outcome.interrupted || checks.is_empty()) {
            let more = run_rounds(
                Rounds::Exactly(1),
                0,
                self.workload,
                &checks,
                &progress,
                |cell, round| measure(cell, round, plan(cell)),
                |cell, run, reason| failed(cell, run, reason, plan(cell)),
            );
            outcome.rows.extend(more.rows);
            outcome.interrupted = more.interrupted;
        }
        progress.finish();
        let say = Say {
            quiet: self.quiet,
            verbose: self.verbose,
        };
        finish(outcome, Path::new("."), &self.destination, say, table)
    }
}

impl NetStudy {
    /// The load hosts checked before anything is measured, what they are said on stderr
    /// (unless quiet): both ends of the study.
    fn check_hosts(&self, load_hosts: &LoadHosts) -> anyhow::Result<Hosts> {
        let shortest = match &self.sweep {
            Some(sweep) => self.duration.min(sweep.probe),
            None => self.duration,
        };
        let hosts = load_hosts.check(shortest)?;
        if !self.quiet {
            for line in hosts.describe() {
                eprintln!("ringside: {line}");
            }
        }
        Ok(hosts)
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

/// The integrity cell of `contender`: the connections and payload `plan` asks for.
fn integrity_cell(contender: &Contender, plan: &dyn Fn(&NetCell) -> LoadPlan) -> NetCell {
    let mut cell = NetCell {
        server: Server::Contender(contender.clone()),
        server_threads: 1,
        connections: 1,
        payload_bytes: None,
        work: None,
        rate: None,
        sweep: None,
        second_look: false,
        window: Duration::ZERO,
        lead: RUN_START,
    };
    let load = plan(&cell);
    cell.connections = load.connections;
    cell.payload_bytes = Some(load.payload_bytes);
    (cell.window, cell.lead) = (load.duration, load.warmup + RUN_START);
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
