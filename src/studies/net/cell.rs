//! Where a network cell runs (`Rig`), and the cell itself: a fresh server, one load run, the
//! server measured over exactly the load's window.

use std::time::Duration;

use serde_json::{Map, Value};

use anyhow::Context;

use super::process::ServerProcess;
use super::remote::Hosts;
use crate::engines::shared_counters::SharedCounters;
use crate::engines::uring::ring::{format_cpus, Helpers};
use crate::engines::EngineDef;
use crate::load::{load_row, LoadPlan, LoadReport, Mode, WindowEdge};
use crate::measure::{CoreTimes, Measured, ProcessMeter};
use crate::row::params::{Param, Params};
use crate::row::{Row, LATE_SHARE_LIMIT};
use crate::studies::serve::ServerStats;
use crate::system::network::{NetPath, PathPlan};
use crate::system::pin::CpuSplit;
use crate::system::tuning::{Idle, Sched};

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
    /// The engines' work per request (`serve --work`), recorded in their rows as `work_ns`
    /// (contenders do their own).
    pub work: Option<Duration>,
    /// The load hosts, checked, when the load runs on other hosts (`--load-host`): each
    /// run's load starts there and the server is measured here.
    pub hosts: Option<std::sync::Arc<Hosts>>,
    /// Echo's message size, which its servers charge `work` by (`serve echo --payload`: a
    /// receive of n bytes pays n / this of it), recorded as `work_bytes`; None where the work
    /// is charged per request parsed (HTTP).
    pub work_bytes: Option<usize>,
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
    pub(super) fn shares_sqpoll(&self, engine: &EngineDef) -> bool {
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
        params.put(Param::SqpollShared, Value::Bool(true));
    }
    if let Some(work) = args.work {
        params.put(Param::WorkNs, work.as_nanos() as u64);
    }
    if let Some(bytes) = args.work.and(args.work_bytes) {
        params.put(Param::WorkBytes, bytes);
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
    if let Some(hosts) = &args.hosts {
        // The same parameters as the cell's measured rows, so the failure stays in its study.
        hosts.adjust_params(&mut row.params, plan);
    }
    row.fail(reason);
    row
}

/// The parameters of the rig every network row carries.
pub fn rig_params(args: &Rig) -> Map<String, Value> {
    let mut params = args.path.params();
    params.put(Param::Idle, args.idle.name());
    params.put(Param::ServerCpu, args.server_cpu());
    if args.server_threads > 1 || args.record_threads {
        params.put(Param::ServerThreads, args.server_threads);
        params.put(
            Param::ServerCpus,
            Value::from(format_cpus(&args.cpus.server)),
        );
    }
    params.put(Param::ClientCpu, args.client_cpu());
    if args.cpus.client.len() > 1 {
        let cpus = format_cpus(&args.cpus.client);
        params.put(Param::ClientCpus, cpus);
    }
    let shared = args.cpus.shared();
    if !shared.is_empty() {
        params.put(Param::CpusShared, format_cpus(&shared));
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
/// from outside over exactly the load's window, then stopped; its row, named `engine`. The
/// load runs here, or on the rig's load hosts.
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
    // The load's core is this machine's only when the load runs here.
    let cores = match args.hosts {
        None => vec![args.server_cpu(), args.client_cpu()],
        Some(_) => vec![args.server_cpu()],
    };
    let mut window = ServerWindow {
        meter: server.meter().with_ring_events(args.ring_events),
        cores,
        before: Vec::new(),
        during: Vec::new(),
        own_syscalls: [None, None],
        started: Ok(()),
        measured: None,
    };
    let own = server.own_counters();
    let mut row = match &args.hosts {
        None => {
            let on_window = &mut |edge| window.edge(edge, own);
            let report = path.as_client(|| crate::load::run(&plan, on_window));
            let stats = server.stop()?;
            let report = report??;
            let measured = window.measured()?;
            let mut row = load_row(engine, params, run, &plan, &report, Some(&measured));
            window.record(&mut row, stats, &plan);
            row
        }
        Some(hosts) => {
            let load = hosts.run(&plan, &mut |edge| window.edge(edge, own));
            let stats = server.stop()?;
            let load = load?;
            let measured = window.measured()?;
            let mut row = hosts.study_row(load, &plan, engine, params, run);
            row.set_server_costs(&measured);
            window.record(&mut row, stats, &plan);
            row
        }
    };
    let shared = args.cpus.shared();
    if !shared.is_empty() && args.hosts.is_none() {
        row.notes.push(format!(
            "the server and the load generator shared CPU {}: a run that measures sharing, \
             not scaling (a fair split gives the server's loops CPUs of their own)",
            format_cpus(&shared)
        ));
    }
    Ok(row)
}

/// The server's measurement over a load's window: its meter, its own counters, and the cores'
/// times (the server's, and the load's when it runs here), taken at the window's edges.
struct ServerWindow {
    meter: ProcessMeter,
    cores: Vec<usize>,
    before: Vec<Option<CoreTimes>>,
    during: Vec<Option<CoreTimes>>,
    own_syscalls: [Option<u64>; 2],
    started: std::io::Result<()>,
    measured: Option<std::io::Result<Measured>>,
}

impl ServerWindow {
    /// Takes the window's `edge`, and `own`, the server's own counters when it keeps them.
    fn edge(&mut self, edge: WindowEdge, own: Option<&SharedCounters>) {
        match edge {
            WindowEdge::Start => {
                self.before = self
                    .cores
                    .iter()
                    .map(|&cpu| CoreTimes::read(cpu).ok())
                    .collect();
                self.started = self.meter.start();
                self.own_syscalls[0] = own.map(SharedCounters::syscalls);
            }
            WindowEdge::Stop => {
                self.own_syscalls[1] = own.map(SharedCounters::syscalls);
                self.measured = Some(self.meter.stop());
                self.during = (self.cores.iter().zip(&self.before))
                    .map(|(&cpu, before)| {
                        let after = CoreTimes::read(cpu).ok();
                        after.zip(*before).map(|(a, b)| a.since(&b))
                    })
                    .collect();
            }
        }
    }

    /// What the meter measured over a window that opened and closed.
    fn measured(&mut self) -> anyhow::Result<Measured> {
        std::mem::replace(&mut self.started, Ok(())).context("cannot measure the server")?;
        let measured = (self.measured.take())
            .expect("a finished load run passed its window's end")
            .context("cannot measure the server")?;
        Ok(measured)
    }

    /// The server's own syscalls, the cores' times and what the server counted, in `row`.
    fn record(&self, row: &mut Row, stats: Option<ServerStats>, plan: &LoadPlan) {
        let [own_start, own_stop] = self.own_syscalls;
        row.set_server_own_syscalls(own_stop.zip(own_start).map(|(stop, start)| stop - start));
        if plan.mode == Mode::Stream {
            // Again: the syscall count may be the server's own now.
            row.set_per_megabyte();
        }
        let core = |index: usize| self.during.get(index).copied().flatten();
        let (server_core, client_core) = (core(0), core(1));
        row.server_core_softirq_s = server_core.map(|t| t.softirq_s);
        row.server_core_steal_s = server_core.map(|t| t.steal_s);
        row.client_core_softirq_s = client_core.map(|t| t.softirq_s);
        row.client_core_steal_s = client_core.map(|t| t.steal_s);
        row.server_core_net_rx_softirqs = server_core.and_then(|t| t.net_rx_softirqs);
        row.client_core_net_rx_softirqs = client_core.and_then(|t| t.net_rx_softirqs);
        note_stolen_sends(row);
        if let (Some(_), Some(late)) = (row.offered_rate, row.client_late_share) {
            // The open loop's saturation signal, now that the host's share of its core is known.
            row.client_saturated = Some(late > row.late_share_allowed());
        }
        if let Some(stats) = stats {
            add_server_stats(row, &stats, plan.connections);
        }
    }
}

/// An open loop that fell behind (the note `load_row` wrote: too many sends late, or the rate
/// short) while the host took more of its core (steal) than the late share it may have: the
/// note says how much, and that late sends up to that share are counted as the host's
/// (`Row::late_share_allowed`).
fn note_stolen_sends(row: &mut Row) {
    let (Some(true), Some(late), Some(stolen)) = (
        row.open_loop_fell_behind(),
        row.client_late_share,
        row.load_core_stolen_share(),
    ) else {
        return;
    };
    if stolen > LATE_SHARE_LIMIT {
        row.notes.push(format!(
            "the host took at least {:.1}% of the load's core over the window (steal) while \
             {:.1}% of its sends were late: late sends up to {:.1}% are counted as the host's, \
             not the load's",
            stolen * 100.0,
            late * 100.0,
            row.late_share_allowed() * 100.0
        ));
    }
}

/// What the server counted itself: the faults it recovered from, and its memory.
fn add_server_stats(row: &mut Row, stats: &ServerStats, connections: usize) {
    let counters = &stats.counters;
    row.connections_refused_fd_limit = Some(counters.connections_refused_fd_limit);
    row.provided_buffers_exhausted = Some(counters.provided_buffers_exhausted);
    row.cq_overflows = Some(counters.cq_overflows);
    // A server that sends from registered buffers fitted its receive pool to the locked-memory
    // limit: the pool and the bytes pinned are part of what was measured.
    if counters.registered_bytes > 0 {
        let params = &mut row.params;
        params.put(Param::ProvidedBuffers, counters.provided_buffers);
        params.put(Param::RegisteredBytes, counters.registered_bytes);
    }
    row.server_rss_peak_bytes = stats.rss_bytes_peak;
    row.server_rss_bytes_per_connection = stats
        .rss_bytes_peak
        .zip(stats.rss_bytes_at_start)
        .map(|(peak, start)| peak.saturating_sub(start) / connections.max(1) as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::tests::late_open_loop_row;

    #[test]
    fn late_sends_while_the_host_took_the_core_say_so() {
        let mut row = late_open_loop_row(0.26);
        note_stolen_sends(&mut row);
        assert_eq!(row.notes.len(), 1);
        // 0.26 s of 2 s, less the one tick /proc/stat may have rounded up.
        assert!(row.notes[0].starts_with("the host took at least 12.5% of the load's core"));
        // A host that took less than the late share allowed explains nothing.
        let mut row = late_open_loop_row(0.01);
        note_stolen_sends(&mut row);
        assert!(row.notes.is_empty());
    }
}
