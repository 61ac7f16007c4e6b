//! The command line: one subcommand per question, the same flag names meaning the same thing in
//! every subcommand (`--engine`, `--runs`, `--format`, `--output`, `--cpu`, `--size`,
//! `--block-size`, `--depth`, `--duration`), human units everywhere (`4k`, `1G`, `10s`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::output::Format;
use crate::units::{parse_duration, parse_size};

#[derive(Parser, Debug)]
#[command(
    name = "ringside",
    version,
    about = "How much do io_uring and its features buy over blocking syscalls and epoll, on this \
             machine?",
    long_about = "ringside measures blocking syscalls, epoll and io_uring variants side by side on \
                  the same workload, in one run, with syscalls counted by the kernel, CPU time of \
                  every thread (io_uring's kernel workers included) and every byte verified.\n\n\
                  Start with `ringside probe` to see what this kernel offers, then e.g. \
                  `ringside fs write` or `ringside fs cycle`.",
    after_help = "Sizes take k/m/g suffixes (powers of 1024, as in fio); durations take s/ms/m \
                  (as in wrk). Results: a table on stdout, or --format csv|json, or --output FILE."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// What this machine and kernel offer: io_uring features, opcodes, setup flags, limits,
    /// mitigations, the target filesystem, and whether syscalls can be counted.
    Probe(ProbeArgs),
    /// Every engine of every workload, and whether it can run here (with the reason if not).
    Engines(ProbeArgs),
    /// File workloads: sequential write (seed 003) and write/fsync/read page cycle (seed 000).
    #[command(subcommand)]
    Fs(FsCommand),
    /// Echo study (seeds 000 and 004): every server engine as a child process on one core, the
    /// load generator on the other, connections x payload x runs, engines alternating.
    Echo(crate::net::echo::EchoArgs),
    /// HTTP study (seed 001): fixed-response HTTP/1.1 servers per engine as child processes on
    /// one core, ringside's HTTP load generator on the other; seed 001's table.
    Http(crate::net::http_study::HttpArgs),
    /// Run one network server engine until Ctrl-C/SIGTERM, for any client to drive.
    #[command(subcommand)]
    Serve(ServeCommand),
    /// Drive a network server (ringside's or any other) and verify every byte it returns.
    #[command(subcommand)]
    Load(LoadCommand),
    /// Re-render report.md and report.html from a results document (a results.json or its
    /// directory), with charts, the io_uring feature ladder and the measured verdicts.
    Report(crate::report::ReportArgs),
    /// Compare two results documents: per engine and metric the ratio B/A, each side's run
    /// range, and "within noise" where the ranges overlap. Exit 2 with --fail-if-slower PCT
    /// when a throughput dropped by more than PCT outside noise.
    Compare(crate::report::compare::CompareArgs),
    /// The whole study in one command: every workload, the engines that matter, fio controls
    /// where installed, and results.json, results.csv, report.md and report.html in one
    /// directory. About five minutes; --quick about one.
    Run(crate::run::RunArgs),
}

#[derive(Subcommand, Debug)]
pub enum ServeCommand {
    /// An echo server: every byte received is sent back, in order.
    Echo(crate::net::serve::ServeArgs),
    /// An HTTP/1.1 server with a fixed `200 OK` (keep-alive, pipelining, limits).
    Http(crate::net::serve::HttpServeArgs),
}

#[derive(Subcommand, Debug)]
pub enum LoadCommand {
    /// Closed-loop echo load: per connection, send a message, wait for the whole echo, compare.
    ///
    /// Exits with 3 when an echo differed from what was sent (the row says `verified: false`).
    Echo(crate::net::load::LoadArgs),
    /// HTTP/1.1 keep-alive load: closed loop (as wrk), or open loop with --rate (as wrk2);
    /// every response framed and its status counted.
    Http(crate::net::load::HttpLoadArgs),
}

#[derive(Subcommand, Debug)]
pub enum FsCommand {
    /// Write a file sequentially in blocks with each engine, read it back and compare.
    ///
    /// The file is laid out once and overwritten by every run (as fio does), so runs measure
    /// warm page cache and no discard from deletes; --fresh truncates it before each run
    /// instead (seed 003's O_TRUNC).
    Write(crate::fs::write::WriteArgs),
    /// For each page: write it, fsync, read it back and check it (seed 000's storage loop).
    Cycle(crate::fs::cycle::CycleArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Directory whose filesystem to probe (type, O_DIRECT).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// table for people, json for scripts.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Flags every measuring subcommand shares, with the same meaning everywhere.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Engines to compare, comma separated (default: every engine of the workload).
    #[arg(long, short = 'e', value_delimiter = ',')]
    pub engine: Vec<String>,
    /// Measured runs per engine; engines alternate run by run (A B A B ...).
    #[arg(long, short = 'r', default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Output format on stdout (or in --output).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write results to this file instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Pin the measured thread to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub helpers: HelperArgs,
}

/// The kernel threads that work for io_uring engines, set on purpose and recorded in every row
/// (`params.iowq_*`, `params.sqpoll_cpu`), never left to an accident of setup order.
#[derive(Args, Debug, Clone, Default)]
pub struct HelperArgs {
    /// Most io-wq worker threads for the file I/O io_uring cannot finish inline (buffered writes,
    /// fsyncs). Default: 16 per online CPU. The kernel gives a ring at most 4 per CPU by itself,
    /// sized by the *first* ring a thread makes (2 workers made the page cycle 2.3x slower
    /// here); fsyncs block in workers, so more of them share more device flushes: the page
    /// cycle took 1.17 s on 8 workers and 0.85-0.92 s on 16 to 64 on a 2-CPU VM.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub iowq_workers: Option<u32>,
    /// CPUs the io-wq workers may run on, e.g. `1` or `0-1`. Default: every online CPU, as for
    /// an unpinned process (otherwise workers inherit --cpu and queue behind the engine).
    #[arg(long, value_name = "LIST", value_parser = cpus_arg)]
    pub iowq_cpus: Option<crate::pin::CpuList>,
    /// CPU of uring-sqpoll's kernel submission thread. Default: a CPU other than --cpu when the
    /// engine is pinned (the poller spins and would take the engine's own CPU), else any.
    #[arg(long, value_name = "N")]
    pub sqpoll_cpu: Option<usize>,
}

impl HelperArgs {
    /// The settings for an engine pinned to `engine_cpu` (if any): the defaults, overridden
    /// by the flags given, each CPU checked against the machine.
    pub fn resolve(&self, engine_cpu: Option<usize>) -> anyhow::Result<crate::ring::Helpers> {
        let mut helpers = crate::ring::Helpers::defaults(engine_cpu);
        let online = crate::pin::cpus_online();
        if let Some(workers) = self.iowq_workers {
            helpers.iowq_bounded_max = workers;
        }
        if let Some(crate::pin::CpuList(cpus)) = &self.iowq_cpus {
            if let Some(cpu) = cpus.iter().find(|cpu| !online.contains(cpu)) {
                anyhow::bail!(
                    "--iowq-cpus names CPU {cpu}, which is not online here (online: {})",
                    crate::ring::format_cpus(&online)
                );
            }
            helpers.iowq_cpus = cpus.clone();
        }
        if let Some(cpu) = self.sqpoll_cpu {
            anyhow::ensure!(
                online.contains(&cpu),
                "--sqpoll-cpu {cpu} is not an online CPU here (online: {})",
                crate::ring::format_cpus(&online)
            );
            helpers.sqpoll_cpu = Some(cpu);
        }
        Ok(helpers)
    }
}

fn cpus_arg(text: &str) -> Result<crate::pin::CpuList, String> {
    crate::pin::parse_cpus(text).map(crate::pin::CpuList)
}

pub fn size_arg(text: &str) -> Result<u64, String> {
    parse_size(text)
}

pub fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

/// Parses the command line and runs it; the exit code says whether the run succeeded.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Probe(args) => crate::probe::run_probe(&args),
        Command::Engines(args) => crate::probe::run_engines(&args),
        Command::Fs(FsCommand::Write(args)) => crate::fs::write::run(&args),
        Command::Fs(FsCommand::Cycle(args)) => crate::fs::cycle::run(&args),
        Command::Echo(args) => crate::net::echo::run(&args),
        Command::Http(args) => crate::net::http_study::run(&args),
        Command::Serve(ServeCommand::Echo(args)) => crate::net::serve::run_echo(&args),
        Command::Serve(ServeCommand::Http(args)) => crate::net::serve::run_http(&args),
        Command::Load(LoadCommand::Echo(args)) => crate::net::load::run_echo(&args),
        Command::Load(LoadCommand::Http(args)) => crate::net::load::run_http(&args),
        Command::Report(args) => crate::report::run(&args),
        Command::Compare(args) => crate::report::compare::run(&args),
        Command::Run(args) => crate::run::run(&args),
    }
}
