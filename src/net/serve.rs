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

use super::{find_engine, listen, local_address, run_server, CountersSnapshot};
use super::{Proto, ServerConfig, ServerCounters};
use crate::measure::{meter_for_run, Meter};
use crate::tuning::Sched;

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The server engine (see `ringside engines`): blocking, threads, epoll, uring,
    /// uring-multishot, uring-defer.
    #[arg(long, short = 'e')]
    pub engine: String,
    /// Address to listen on; port 0 lets the kernel choose (the first line of stdout says which).
    #[arg(long, default_value = "127.0.0.1:3001")]
    pub listen: SocketAddr,
    /// Pin the server to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Connections served at once; more are accepted and closed at once.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Buffers in the provided-buffer pool of the multishot io_uring engines (a power of two,
    /// 8 KiB each): fewer connections' worth of unsent echoes fit before recv runs out.
    #[arg(long, default_value_t = 1024, value_parser = provided_buffers_arg)]
    pub provided_buffers: u16,
    /// Scheduling class of the server (fifo = SCHED_FIFO 50, as `chrt -f 50`).
    #[arg(long, value_enum, default_value_t = Sched::Other)]
    pub sched: Sched,
    /// The io_uring engines' kernel threads. A server pinned with --cpu keeps its io-wq workers
    /// on that CPU unless --iowq-cpus says otherwise: a study gives the server one core and its
    /// load generator the other, and sockets rarely need workers.
    #[command(flatten)]
    pub helpers: crate::cli::HelperArgs,
    /// Also write the counters as JSON to this file when the server stops.
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Count the server's own syscalls (kernel tracepoint) for the summary and --stats. Off by
    /// default: the tracepoint sends every syscall down the kernel's slow path, a cost the
    /// server's peers do not pay (a study counts its servers from outside, over its window).
    #[arg(long)]
    pub count_syscalls: bool,
    /// No summary on stderr when the server stops.
    #[arg(long, short = 'q')]
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

/// `serve http`: the echo server's flags plus the response body.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpServeArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Serve bodies of this many bytes (k/m suffixes) instead of the 13-byte "Hello, World!",
    /// so that larger sends are measured.
    #[arg(long, value_parser = body_size_arg)]
    pub body_size: Option<usize>,
}

fn body_size_arg(text: &str) -> Result<usize, String> {
    match crate::cli::size_arg(text)? {
        bytes if bytes > 1 << 24 => Err("bodies above 16 MiB are not supported".into()),
        bytes => Ok(bytes as usize),
    }
}

pub fn run_echo(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    serve(args, Proto::Echo)
}

pub fn run_http(args: &HttpServeArgs) -> anyhow::Result<ExitCode> {
    serve(&args.serve, Proto::http(args.body_size))
}

fn serve(args: &ServeArgs, proto: Proto) -> anyhow::Result<ExitCode> {
    let engine = find_engine(&args.engine)?;
    engine
        .availability()
        .map_err(|reason| anyhow::anyhow!("engine {} cannot run here: {reason}", engine.name))?;
    if let Some(cpu) = args.cpu {
        crate::pin::pin_current_thread(cpu)?;
    }
    args.sched.apply_to_current_thread()?;
    let listener =
        listen(args.listen).with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = local_address(&listener)?;
    crate::progress::stop_flag();
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {address}")?;
        stdout.flush()?;
    }
    let config = ServerConfig {
        proto,
        max_connections: args.max_connections as usize,
        provided_buffers: args.provided_buffers,
    };
    let mut helpers = args.helpers.resolve(args.cpu)?;
    if let (Some(cpu), None) = (args.cpu, &args.helpers.iowq_cpus) {
        helpers.iowq_cpus = vec![cpu];
    }
    let counters = ServerCounters::default();
    let mut meter = if args.count_syscalls {
        meter_for_run()
    } else {
        Meter::without_syscall_counter()
    };
    meter.start();
    let served = run_server(engine, listener, config, &counters, &helpers);
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

fn provided_buffers_arg(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(count) if count.is_power_of_two() && count <= 32768 => Ok(count),
        _ => Err(format!("'{text}' is not a power of two from 1 to 32768")),
    }
}

fn summary(stats: &ServerStats) -> String {
    let syscalls = stats.syscalls.map_or(
        "not counted (--count-syscalls counts them, where the kernel allows it)".to_string(),
        |n| n.to_string(),
    );
    format!(
        "{} {} server on {} stopped after {:.1} s: {} connections ({} refused, {} failed), \
         {} bytes in, {} bytes out, syscalls {syscalls}, CPU user {:.2} s sys {:.2} s",
        stats.engine,
        stats.proto,
        stats.address,
        stats.seconds,
        stats.counters.connections_accepted,
        stats.counters.connections_refused,
        stats.counters.connections_failed,
        stats.counters.bytes_received,
        stats.counters.bytes_sent,
        stats.cpu_user_s,
        stats.cpu_sys_s,
    )
}
