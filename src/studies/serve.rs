//! `ringside serve echo` and `ringside serve http`: one server engine as a process of its own,
//! so that a study (or any other client, e.g. rust_echo_bench, tcpkali or wrk) can drive it and
//! measure it from outside.
//!
//! The first line on stdout is `listening on ADDRESS`, flushed at once, so a parent that asked
//! for port 0 learns the port. Ctrl-C or SIGTERM stops the loop; the server then prints its own
//! counters (connections, bytes, kernel-counted syscalls, CPU) on stderr and, with `--stats`,
//! writes them as JSON.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde::Serialize;

use crate::engines::server::{listen, local_address, run_server, CountersSnapshot, Run};
use crate::engines::server::{ServerConfig, ServerCounters};
use crate::engines::uring::ring::Helpers;
use crate::engines::EngineDef;
use crate::measure::{meter_for_run, Meter};
use crate::protocols::Proto;
use crate::system::tuning::Sched;

/// One server to run, as `serve`'s flags asked for it.
pub struct Serve {
    pub engine: &'static EngineDef,
    pub proto: Proto,
    pub listen: SocketAddr,
    /// Pin the server to this CPU.
    pub cpu: Option<usize>,
    pub max_connections: usize,
    pub provided_buffers: u16,
    /// Close connections silent for this long.
    pub idle_timeout: Option<std::time::Duration>,
    pub sched: Sched,
    /// The io_uring engines' kernel threads.
    pub helpers: Helpers,
    /// Also write the counters as JSON here when the server stops.
    pub stats: Option<PathBuf>,
    /// Count the server's own syscalls (a tracepoint on every syscall it makes).
    pub count_syscalls: bool,
    /// No summary on stderr when the server stops.
    pub quiet: bool,
}

/// What a server did between start and stop, by its own count and the kernel's.
#[derive(Debug, Serialize)]
pub struct ServerStats {
    pub engine: String,
    pub proto: String,
    pub address: String,
    pub seconds: f64,
    #[serde(flatten)]
    pub counters: CountersSnapshot,
    /// Syscalls of every server thread, counted by the kernel; absent when it refused.
    pub syscalls: Option<u64>,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub ctx_switches_voluntary: u64,
    pub ctx_switches_involuntary: u64,
}

pub fn run(args: &Serve) -> anyhow::Result<ExitCode> {
    let (engine, proto) = (args.engine, args.proto);
    engine
        .availability()
        .map_err(|reason| anyhow::anyhow!("engine {} cannot run here: {reason}", engine.name))?;
    if let Some(cpu) = args.cpu {
        crate::system::pin::pin_current_thread(cpu)?;
    }
    args.sched.apply_to_current_thread()?;
    let listener =
        listen(args.listen).with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = local_address(&listener)?;
    crate::system::stop::stop_flag();
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
    };
    let counters = ServerCounters::default();
    let mut meter = if args.count_syscalls {
        meter_for_run()
    } else {
        Meter::without_syscall_counter()
    };
    meter.start();
    let run = Run {
        listener,
        config,
        counters: &counters,
        helpers: &args.helpers,
    };
    let served = run_server(engine, run);
    let measured = meter.stop();
    let stats = ServerStats {
        engine: engine.name.to_string(),
        proto: proto.name().to_string(),
        address: address.to_string(),
        seconds: measured.elapsed.as_secs_f64(),
        counters: counters.snapshot(),
        syscalls: measured.syscalls_kernel,
        cpu_user_s: measured.usage.cpu_user_s,
        cpu_sys_s: measured.usage.cpu_sys_s,
        ctx_switches_voluntary: measured.usage.ctx_switches_voluntary,
        ctx_switches_involuntary: measured.usage.ctx_switches_involuntary,
    };
    if !args.quiet {
        eprintln!("{}", summary(&stats));
    }
    if let Some(path) = &args.stats {
        let text = serde_json::to_string_pretty(&stats)? + "\n";
        std::fs::write(path, text)
            .with_context(|| format!("cannot write server stats to {}", path.display()))?;
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

fn summary(stats: &ServerStats) -> String {
    let syscalls = stats.syscalls.map_or(
        "not counted (--count-syscalls counts them, where the kernel allows it)".to_string(),
        |n| n.to_string(),
    );
    format!(
        "{} {} server on {} stopped after {:.1} s: {} connections ({} refused, {} failed, \
         {} idle closed), {} bytes in, {} bytes out, syscalls {syscalls}, CPU user {:.2} s sys \
         {:.2} s",
        stats.engine,
        stats.proto,
        stats.address,
        stats.seconds,
        stats.counters.connections_accepted,
        stats.counters.connections_refused,
        stats.counters.connections_failed,
        stats.counters.connections_idle_closed,
        stats.counters.bytes_received,
        stats.counters.bytes_sent,
        stats.cpu_user_s,
        stats.cpu_sys_s,
    )
}
