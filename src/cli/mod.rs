//! The command line: one subcommand per question, the same flag names meaning the same thing in
//! every subcommand (`--engine`, `--runs`, `--format`, `--output`, `--cpu`, `--size`,
//! `--block-size`, `--depth`, `--duration`), human units everywhere (`4k`, `1G`, `10s`).
//!
//! A thin layer: each subcommand's flags (one file per family) turn into a plain plan (a study,
//! a server, a load run) that the rest of the crate takes; nothing below this folder sees clap's
//! argument structs. Flags several subcommands share are defined once in `common.rs` and
//! flattened where they are used.

mod claims;
mod common;
mod fs;
mod load;
mod load_hosts;
mod net;
mod report;
mod serve;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use common::{EnginesArgs, ProbeArgs};

#[derive(Parser, Debug)]
#[command(
    name = "ringside",
    version,
    about = "How much do io_uring and its features buy over blocking syscalls and epoll, on this \
             machine?",
    long_about = crate::run::LONG_ABOUT.as_str(),
    after_help = "Sizes take k/m/g suffixes (powers of 1024, as in fio); durations take s/ms/m \
                  (as in wrk). Results: a table on stdout, or --format csv|json, or --output FILE."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    #[command(about = crate::run::RUN_ABOUT.as_str())]
    Run(report::RunArgs),
    /// What this machine and kernel offer: io_uring features, opcodes, setup flags, limits,
    /// mitigations, the target filesystem, and whether syscalls can be counted.
    Probe(ProbeArgs),
    /// Every engine of every workload, and whether it can run here (with the reason if not).
    Engines(EnginesArgs),
    /// File workloads: a file written in blocks, the write/fsync/read page cycle (as in
    /// TigerBeetle's io_uring demo), and random reads at queue depth (as fio's randread). Each
    /// lays out its file (1 GiB to write, 256 MiB to cycle or read) in --dir, the current
    /// directory unless told.
    #[command(subcommand)]
    Fs(FsCommand),
    #[command(about = crate::run::ECHO_ABOUT.as_str())]
    Echo(net::EchoArgs),
    #[command(about = crate::run::HTTP_ABOUT.as_str())]
    Http(net::HttpArgs),
    /// Run one network server engine until Ctrl-C/SIGTERM, for any client to drive.
    #[command(subcommand)]
    Serve(ServeCommand),
    /// Drive a network server (ringside's or any other) and verify every byte it returns.
    #[command(subcommand)]
    Load(LoadCommand),
    /// Re-render report.md and report.html from a results document (a results.json or its
    /// directory), with charts, the io_uring feature ladder and the measured verdicts.
    Report(report::ReportArgs),
    /// Compare two results documents: per engine and metric the ratio B/A with its interval,
    /// and the engine's ratio to its study's baseline in B over A (what the engine changed,
    /// whatever the machine did), each decided: faster/slower, equivalent, or undecided. Exit 2
    /// with --fail-if-slower PCT when a throughput was decided slower by more than PCT.
    Compare(report::CompareArgs),
    /// Combine the results of loads run at once on several hosts (`load --start-at`) into one
    /// document: operations, bytes and errors added, latency histograms added (so p99 is the
    /// p99 of every sample), refused with the reason when parameters differ or the measured
    /// windows do not overlap. See docs/multi-host.md.
    Merge(report::MergeArgs),
    /// Published io_uring claims (figures, their sources and set-ups), each with the
    /// experiment that tests it: list them, show one, or run them on this machine for a verdict
    /// (reproduced, not reproduced, reversed, inconclusive, cannot test here) and its cause.
    Claims(claims::ClaimsArgs),
}

#[derive(Subcommand, Debug)]
pub enum ServeCommand {
    /// An echo server: every byte received is sent back, in order.
    Echo(serve::EchoServeArgs),
    /// An HTTP/1.1 server with a fixed `200 OK` (keep-alive, pipelining, limits).
    Http(serve::HttpServeArgs),
}

#[derive(Subcommand, Debug)]
pub enum LoadCommand {
    /// Closed-loop echo load: per connection, send a message, wait for the whole echo, compare.
    ///
    /// Exits with 3 when an echo differed from what was sent (the row says `verified: false`).
    Echo(load::LoadArgs),
    /// HTTP/1.1 keep-alive load: closed loop (as wrk), or open loop with --rate (as wrk2);
    /// every response framed and its status counted.
    Http(load::HttpLoadArgs),
    /// What a study with load hosts runs on each before it measures: this host's facts, and
    /// whether it reaches the servers' address (one JSON line).
    #[command(hide = true)]
    HostCheck(load::HostCheckArgs),
}

#[derive(Subcommand, Debug)]
pub enum FsCommand {
    /// Write a file sequentially in blocks with each engine, read it back and compare (1 GiB in
    /// --dir, the current directory unless told).
    ///
    /// The file is laid out once and overwritten by every run (as fio does), so runs measure
    /// warm page cache and no discard from deletes; --fresh truncates it before each run
    /// instead (O_TRUNC).
    Write(fs::WriteArgs),
    /// For each page: write it, fsync, read it back and check it (a storage engine's durable
    /// write path, as in TigerBeetle's io_uring demo).
    Cycle(fs::CycleArgs),
    /// Read single blocks at random (or in order) at each queue depth, every read checked
    /// against the stamp its block was laid out with (fio randread): warm, --cold or --direct.
    Read(fs::ReadArgs),
}

/// The command line as clap parses it, its help in sentences: clap's derive drops the full stop
/// that ends a one-paragraph doc comment, and every help text here is written as sentences
/// (tests/help.rs checks the sources), so the stop is put back. A help text that ends in
/// other punctuation, or lists values, is left as written.
pub fn command() -> clap::Command {
    sentences(Cli::command())
}

fn sentences(command: clap::Command) -> clap::Command {
    let stopped = |text: Option<&clap::builder::StyledStr>| {
        let text = text?.to_string();
        Some(match text.trim_end().ends_with(['.', '?', '!', ':']) {
            true => text,
            false => format!("{}.", text.trim_end()),
        })
    };
    let mut command = command.mut_args(|arg| match stopped(arg.get_help()) {
        Some(help) => arg.help(help),
        None => arg,
    });
    if let Some(about) = stopped(command.get_about()) {
        command = command.about(about);
    }
    if let Some(about) = stopped(command.get_long_about()) {
        command = command.long_about(about);
    }
    command.mut_subcommands(sentences)
}

/// Parses the command line and runs it; the exit code says whether the run succeeded.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    // Connections are fds: start from the most this process may hold (children inherit it).
    crate::system::limits::raise_fd_limit();
    match cli.command {
        Command::Probe(args) => crate::probe::run_probe(&args.dir, args.format),
        Command::Engines(args) => {
            load_hosts::route_through(args.listen_on)?;
            crate::probe::run_engines(args.format, args.long)
        }
        Command::Fs(FsCommand::Write(args)) => args.run(),
        Command::Fs(FsCommand::Cycle(args)) => args.run(),
        Command::Fs(FsCommand::Read(args)) => args.run(),
        Command::Echo(args) => args.run(),
        Command::Http(args) => args.run(),
        Command::Serve(ServeCommand::Echo(args)) => args.run(),
        Command::Serve(ServeCommand::Http(args)) => args.run(),
        Command::Load(LoadCommand::Echo(args)) => args.run(),
        Command::Load(LoadCommand::Http(args)) => args.run(),
        Command::Load(LoadCommand::HostCheck(args)) => {
            crate::studies::net::remote::answer_host_check(args.target)
        }
        Command::Report(args) => args.run(),
        Command::Compare(args) => args.run(),
        Command::Merge(args) => args.run(),
        Command::Run(args) => args.run(),
        Command::Claims(args) => args.run(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every subcommand path (`["fs", "write"]`) with each long flag it takes a value for.
    fn value_flags() -> Vec<(Vec<String>, String)> {
        fn walk(command: &clap::Command, path: &[String], flags: &mut Vec<(Vec<String>, String)>) {
            for arg in command.get_arguments() {
                let takes_value = arg.get_action().takes_values();
                if let (true, Some(long)) = (takes_value, arg.get_long()) {
                    flags.push((path.to_vec(), format!("--{long}")));
                }
            }
            for sub in command.get_subcommands() {
                let mut deeper = path.to_vec();
                deeper.push(sub.get_name().to_string());
                walk(sub, &deeper, flags);
            }
        }
        let mut flags = Vec::new();
        walk(&Cli::command(), &[], &mut flags);
        flags
    }

    #[test]
    fn the_flags_under_test_include_every_value_flag_named_in_the_issue() {
        let flags: Vec<String> = value_flags().into_iter().map(|(_, flag)| flag).collect();
        for flag in [
            "--duration",
            "--warmup",
            "--timeout",
            "--idle-timeout",
            "--work",
            "--rate",
        ] {
            assert!(flags.iter().any(|known| known == flag), "{flag}");
        }
        assert!(flags.len() > 60, "{}", flags.len());
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(4096))]
        /// Any value for any flag of any subcommand is parsed or refused with clap's sentence:
        /// no value parser panics. Values are text of any kind and numbers of every shape
        /// (signs, exponents up to 1e999, units), where the known panics were.
        #[test]
        fn no_flag_value_panics_the_parser(
            which in proptest::prelude::any::<proptest::sample::Index>(),
            value in "\\PC{0,12}|[-+@]?[0-9]{1,22}(\\.[0-9]{0,4})?(e[-+]?[0-9]{1,3})?(ns|us|ms|s|m|h|d|y|k|m|g|t|bit|kbit|%)?",
        ) {
            let flags = value_flags();
            let (path, flag) = which.get(&flags);
            let mut argv = vec!["ringside".to_string()];
            argv.extend(path.iter().cloned());
            argv.push(format!("{flag}={value}"));
            let _ = Cli::try_parse_from(argv);
        }
    }
}
