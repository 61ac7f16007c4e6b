//! `ringside serve echo` and `ringside serve http`: one server engine as a process of its own,
//! so that a study (or any other client, e.g. rust_echo_bench, tcpkali or wrk) can drive it and
//! measure it from outside.
//!
//! The first line on stdout is `listening on ADDRESS`, flushed at once, so a parent that asked
//! for port 0 learns the port. Ctrl-C or SIGTERM stops the loop; the server then prints its own
//! counters (connections, bytes, kernel-counted syscalls, CPU, memory) on stderr and, with
//! `--stats`, writes them as JSON (`--stats -`: as one line on stdout, after the `listening on`
//! line, which is how a study reads a server's own counters into its row).

use std::io::Write;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::engines::run_server;
use crate::engines::server::{listen, listen_shared, local_address};
use crate::engines::server::{CountersSnapshot, Run};
use crate::engines::server::{ServerConfig, ServerCounters};
use crate::engines::shared_counters::SharedCounters;
use crate::engines::uring::ring::{Helpers, ServerHelpers, SqpollShare};
use crate::engines::{EngineDef, Serving};
use crate::measure::{meter_for_run, Meter};
use crate::protocols::Proto;
use crate::system::limits::{fds_for_connections, FdLimit};
use crate::system::tuning::Sched;

/// One server to run, as `serve`'s flags asked for it.
pub struct Serve {
    pub engine: &'static EngineDef,
    pub proto: Proto,
    pub listen: SocketAddr,
    /// Pin the server's loops to these CPUs, loop i to the i-th (round robin); empty: unpinned.
    pub cpus: Vec<usize>,
    /// Event loops, one per thread, each with its own listening socket on the one port
    /// (SO_REUSEPORT) and, for io_uring, its own ring. One: the loop runs on the main thread
    /// and the process has no other loop (an HTTP server also has the thread that rewrites its
    /// responses' `Date` once a second).
    pub threads: usize,
    /// The loops' SQPOLL rings share the first one's poller (IORING_SETUP_ATTACH_WQ).
    pub share_sqpoll: bool,
    pub max_connections: usize,
    pub provided_buffers: u16,
    /// Close connections silent for this long.
    pub idle_timeout: Option<std::time::Duration>,
    pub cq_entries: u32,
    pub sched: Sched,
    /// The io_uring engines' kernel threads.
    pub helpers: Helpers,
    /// Also write the counters as JSON here when the server stops.
    pub stats: Option<PathBuf>,
    /// Count the server's own syscalls (a tracepoint on every syscall it makes).
    pub count_syscalls: bool,
    /// Keep the loops' counters in this file (a study's memfd, `/proc/PID/fd/N`), which the
    /// study reads at its window's edges; None: in memory of the server's own.
    pub counters: Option<PathBuf>,
    /// No summary on stderr when the server stops.
    pub quiet: bool,
}

/// What a server did between start and stop, by its own count and the kernel's.
#[derive(Debug, Serialize, Deserialize)]
pub struct ServerStats {
    pub engine: String,
    pub proto: String,
    pub address: String,
    pub seconds: f64,
    /// The sums over the loops.
    #[serde(flatten)]
    pub counters: CountersSnapshot,
    /// Each loop's own counters and CPU, in thread order: how the kernel spread connections.
    #[serde(default)]
    pub threads: Vec<LoopStats>,
    /// Syscalls of every server thread, counted by the kernel; absent when it refused.
    pub syscalls: Option<u64>,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub ctx_switches_voluntary: u64,
    pub ctx_switches_involuntary: u64,
    /// Resident memory once the listener is open, before the engine makes its ring, pools and
    /// loop, and its peak over the server's life: what the engine and its connections cost,
    /// from the kernel's count (pages of a pool count once touched).
    #[serde(default)]
    pub rss_bytes_at_start: Option<u64>,
    #[serde(default)]
    pub rss_bytes_peak: Option<u64>,
}

/// One event loop's share of a server's work.
#[derive(Debug, Serialize, Deserialize)]
pub struct LoopStats {
    pub cpu: Option<usize>,
    #[serde(flatten)]
    pub counters: CountersSnapshot,
}

/// `--stats -`: the stats go to stdout.
pub const STATS_TO_STDOUT: &str = "-";

pub fn run(args: &Serve) -> anyhow::Result<ExitCode> {
    let (engine, proto) = (args.engine, args.proto);
    engine
        .availability()
        .map_err(|reason| anyhow::anyhow!("engine {} cannot run here: {reason}", engine.name))?;
    anyhow::ensure!(
        args.threads == 1 || runs_event_loops(engine),
        "--threads applies to the event-loop engines (epoll and io_uring); {} already serves \
         with a thread per connection or one connection at a time",
        engine.name
    );
    anyhow::ensure!(
        !args.share_sqpoll || engine.needs.setup.sqpoll,
        "--share-sqpoll shares an SQPOLL thread between the loops' rings; {} has no SQPOLL \
         ring (uring-sqpoll has)",
        engine.name
    );
    pin_loop(args, 0)?;
    let listeners = if args.threads == 1 {
        listen(args.listen).map(|listener| vec![listener])
    } else {
        listen_shared(args.listen, args.threads)
    };
    let listeners = listeners.with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = local_address(&listeners[0])?;
    crate::system::stop::stop_flag();
    let fds = FdLimit::read().soft;
    if let Some(fds) = fds.filter(|&fds| fds < fds_for_connections(args.max_connections)) {
        if !args.quiet {
            eprintln!(
                "ringside: serve: this process may open {fds} fds, fewer than \
                 --max-connections {} needs; connections beyond that wait in the listen queue \
                 (counted as refused at the fd limit); `ulimit -n` raises it",
                args.max_connections
            );
        }
    }
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {address}")?;
        stdout.flush()?;
    }
    let config = ServerConfig {
        proto,
        max_connections: args.max_connections,
        provided_buffers: args.provided_buffers,
        idle_timeout: args.idle_timeout,
        cq_entries: args.cq_entries,
    };
    let shared = match &args.counters {
        Some(path) => SharedCounters::open(path, args.threads)
            .with_context(|| format!("cannot map the counters in {}", path.display()))?,
        None => SharedCounters::anonymous(args.threads)?,
    };
    let counters = shared.loops();
    let rss_bytes_at_start = resident_bytes("VmRSS:");
    // The stats report no helper threads; a `threads` server stopping with thousands of
    // connections would otherwise have each of them read as it exits.
    let mut meter = if args.count_syscalls {
        meter_for_run()
    } else {
        Meter::without_syscall_counter()
    }
    .without_helpers();
    meter.start();
    let served = run_loops(args, listeners, config, counters);
    let measured = meter.stop();
    let threads: Vec<LoopStats> = counters
        .iter()
        .enumerate()
        .map(|(index, counters)| LoopStats {
            cpu: loop_cpu(args, index),
            counters: counters.snapshot(),
        })
        .collect();
    let stats = ServerStats {
        engine: engine.name.to_string(),
        proto: proto.name().to_string(),
        address: address.to_string(),
        seconds: measured.elapsed.as_secs_f64(),
        counters: threads
            .iter()
            .map(|thread| thread.counters)
            .fold(CountersSnapshot::default(), |sum, counters| sum + counters),
        threads,
        syscalls: measured.syscalls_kernel,
        cpu_user_s: measured.usage.cpu_user_s,
        cpu_sys_s: measured.usage.cpu_sys_s,
        ctx_switches_voluntary: measured.usage.ctx_switches_voluntary,
        ctx_switches_involuntary: measured.usage.ctx_switches_involuntary,
        rss_bytes_at_start,
        rss_bytes_peak: resident_bytes("VmHWM:"),
    };
    if !args.quiet {
        eprintln!("{}", summary(&stats));
    }
    match &args.stats {
        Some(path) if path.as_os_str() == STATS_TO_STDOUT => {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{}", serde_json::to_string(&stats)?)?;
            stdout.flush()?;
        }
        Some(path) => {
            let text = serde_json::to_string_pretty(&stats)? + "\n";
            std::fs::write(path, text)
                .with_context(|| format!("cannot write server stats to {}", path.display()))?;
        }
        None => {}
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Whether `engine` serves from event loops that can be multiplied (one per thread): epoll and
/// the io_uring engines, not the thread-per-connection or one-at-a-time servers (the table says).
pub fn runs_event_loops(engine: &EngineDef) -> bool {
    engine.serving == Serving::EventLoops
}

/// The CPU of loop `index`: the CPUs given, round robin.
fn loop_cpu(args: &Serve, index: usize) -> Option<usize> {
    (!args.cpus.is_empty()).then(|| args.cpus[index % args.cpus.len()])
}

/// Pins the calling thread as loop `index` and gives it the server's scheduling class.
fn pin_loop(args: &Serve, index: usize) -> anyhow::Result<()> {
    if let Some(cpu) = loop_cpu(args, index) {
        crate::system::pin::pin_current_thread(cpu)?;
    }
    args.sched.apply_to_current_thread()
}

/// Runs one loop per listener until the stop flag rises: loop 0 on this thread, the others on
/// threads of their own. A loop that fails stops the others (SIGTERM to the process, which
/// raises the flag and wakes every loop) and its error is returned.
fn run_loops(
    args: &Serve,
    listeners: Vec<OwnedFd>,
    config: ServerConfig,
    counters: &[ServerCounters],
) -> anyhow::Result<()> {
    assert_eq!(listeners.len(), counters.len());
    let engine = args.engine;
    let sqpoll_share =
        (args.share_sqpoll && args.threads > 1).then(|| SqpollShare::new(args.threads));
    // Loop 0 is this thread, pinned already.
    let serve = |index: usize, listener: OwnedFd, counters: &ServerCounters| {
        let run = Run {
            listener,
            config,
            counters,
            loop_index: index,
        };
        let helpers = ServerHelpers {
            helpers: &args.helpers,
            sqpoll_share: sqpoll_share.as_ref(),
        };
        let pinned = if index == 0 {
            Ok(())
        } else {
            pin_loop(args, index)
        };
        let served = pinned.and_then(|()| run_server(engine, run, &helpers));
        if served.is_err() && args.threads > 1 {
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::TERM,
            );
        }
        served
    };
    std::thread::scope(|scope| {
        let mut loops = listeners.into_iter().zip(counters).enumerate();
        let (_, (first, first_counters)) = loops.next().expect("at least one loop");
        let others: Vec<_> = loops
            .map(|(index, (listener, counters))| {
                std::thread::Builder::new()
                    .name(format!("ringside-loop-{index}"))
                    .spawn_scoped(scope, move || serve(index, listener, counters))
                    .expect("spawn a server loop")
            })
            .collect();
        let mut outcome = serve(0, first, first_counters);
        for other in others {
            let served = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            outcome = outcome.and(served);
        }
        outcome
    })
}

/// A memory figure of this process from `/proc/self/status` (`VmRSS:` now, `VmHWM:` its peak).
fn resident_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kib: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

fn summary(stats: &ServerStats) -> String {
    let counters = &stats.counters;
    let syscalls = stats.syscalls.map_or(
        format!(
            "{} by its own count (--count-syscalls asks the kernel, where it allows it)",
            counters.syscalls_self
        ),
        |n| format!("{n} by the kernel's count"),
    );
    let mut text = format!(
        "{} {} server on {} stopped after {:.1} s: {} connections ({} refused, {} refused at \
         the fd limit, {} reset or failed, {} idle closed), {} bytes in, {} bytes out, syscalls {syscalls}, CPU user \
         {:.2} s sys {:.2} s",
        stats.engine,
        stats.proto,
        stats.address,
        stats.seconds,
        counters.connections_accepted,
        counters.connections_refused,
        counters.connections_refused_fd_limit,
        counters.connections_failed,
        counters.connections_idle_closed,
        counters.bytes_received,
        counters.bytes_sent,
        stats.cpu_user_s,
        stats.cpu_sys_s,
    );
    if counters.provided_buffers_exhausted + counters.cq_overflows > 0 {
        text += &format!(
            "; receives out of provided buffers {}, completion queue overflows {}",
            counters.provided_buffers_exhausted, counters.cq_overflows
        );
    }
    text
}
