//! `report`, `compare` and `run`: their flags, and the plain values they turn into.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::common::{output_form, positive_duration_arg, ExportArgs, SayArgs};
use super::load_hosts::LoadHostArgs;
use super::net::{server_thread_counts, PathArgs};
use crate::output::Format;
use crate::report::compare::Comparison;
use crate::report::merge::Merge;
use crate::run::contenders::Choice;
use crate::run::steps::{Mode, Only};
use crate::run::RunPlan;

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// A results directory (holding results.json) or a results JSON file.
    pub input: PathBuf,
    /// Where to write report.md and report.html (default: beside the JSON).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// html: write report.md and report.html; json or csv: print the verdict table instead,
    /// every comparison the report decides (ratio, interval, rounds, outcome), for scripts.
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
}

/// What `report` produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Html,
    Json,
    Csv,
}

impl ReportArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        match self.format {
            ReportFormat::Html => crate::report::run(&self.input, self.out.as_deref()),
            format => crate::report::print_verdicts(&self.input, format == ReportFormat::Csv),
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The results documents of one load run per host (`load ... --start-at TIME --format
    /// json -o HOST.json`), two or more.
    #[arg(required = true, num_args = 2..)]
    pub inputs: Vec<PathBuf>,
    /// Write the merged document to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// json (a results document, for `report`, `compare` and another merge), csv (a row per
    /// host's load run and one merged) or table [default: json, or in --output what its name
    /// ends in: .json, .csv, or .md for the report in Markdown].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
}

impl MergeArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let (form, said) = output_form(self.format, self.output.as_deref(), Format::Json);
        let code = crate::report::merge::run(&Merge {
            inputs: self.inputs.clone(),
            format: form.format,
            output: self.output.clone(),
            markdown: form.markdown,
        })?;
        if let Some(said) = said {
            eprintln!("{said}");
        }
        Ok(code)
    }
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// The baseline: a results JSON or a results directory.
    pub base: PathBuf,
    /// The candidate compared with the baseline.
    pub new: PathBuf,
    /// Compare even when the kernels or the parameters differ (with a warning).
    #[arg(long)]
    pub force: bool,
    /// Exit with code 2 when any throughput was decided slower by more than PCT percent
    /// (against its study's baseline where it has one, so that the machine's own drift does not
    /// count as a drop).
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<f64>,
    /// table for people; json or csv for scripts: one row per engine and metric (both medians,
    /// B/A and the ratio to the baseline, each with its interval and outcome).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

impl CompareArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        crate::report::compare::run(&Comparison {
            base: self.base.clone(),
            new: self.new.clone(),
            force: self.force,
            fail_if_slower: self.fail_if_slower,
            format: self.format,
        })
    }
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// A smoke run for CI and a first look: small files, one or two rounds of 1 s windows at 50
    /// connections, and the equal-load sweeps at one point in 6 rounds. Most comparisons stay
    /// undecided on so few rounds.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Every engine and rung, 1 GiB files and 5 s network windows, the sizes of the published
    /// benchmarks ringside's studies repeat: hours.
    #[arg(long)]
    pub full: bool,
    /// Only a part of the study: fs (the file steps), net (echo and HTTP) or claims (the steps
    /// the report judges published claims from).
    #[arg(long, value_enum)]
    pub only: Option<Only>,
    /// Engines to measure, comma separated: each step runs those of its workload beside its
    /// baseline (blocking or epoll, to compare with); a step with none of them is left out.
    #[arg(long, short = 'e', value_delimiter = ',')]
    pub engine: Vec<String>,
    /// The longest the run may take (e.g. 5m): it keeps the steps that answer the most, each
    /// in the form that fits (fewer rounds, no contenders), says what it left out before it
    /// starts, and ends a step at the budget's end with its finished runs kept.
    #[arg(long, value_name = "DURATION", value_parser = budget_arg)]
    pub budget: Option<Duration>,
    /// Results directory (default: results/<UTC timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Directory for the scratch files of the file studies (default: the results directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub exports: ExportArgs,
    #[command(flatten)]
    pub say: SayArgs,
    /// The reference contenders (node, go, tokio, monoio) measured beside the engines in the
    /// echo and HTTP steps at 50 connections: auto (those that are built or can be, whose
    /// runtime is installed; the report says why any other was left out), none, or a
    /// comma-separated list (each must run, or the run stops before it starts). Built once,
    /// from sources inside this binary, into $RINGSIDE_CONTENDERS, else a checkout's
    /// target/contenders, else ~/.cache/ringside/contenders ($XDG_CACHE_HOME).
    #[arg(long, default_value = "auto", value_parser = Choice::parse)]
    pub contenders: Choice,
    /// The echo and HTTP steps' path between server and client.
    #[command(flatten)]
    pub path: PathArgs,
    /// The echo and HTTP steps' load on other hosts.
    #[command(flatten)]
    pub load_hosts: LoadHostArgs,
    /// Every step also counts io_uring's own events in the kernel (`--ring-events`), so the
    /// report can name causes such as io-wq punts and polls armed: in 2 attribution rounds after
    /// each study's timed rounds, never in a timed one (the tracepoints cost some engines far
    /// more than others: docs/rows.md gives what they cost on a 2-vCPU VM). Off by default:
    /// they add 2 rounds to every study.
    #[arg(long)]
    pub ring_events: bool,
    /// The echo and HTTP steps' server loops, comma separated (`1,2,4`): a cell each, as
    /// `echo --server-threads` (the CPUs split for each count; engines without loops at 1).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "COUNTS",
        default_value = "1"
    )]
    pub server_threads: Vec<String>,
    /// How long any step may run before it is stopped (SIGTERM, then SIGKILL): for tests of
    /// that watchdog. Default: ten times the step's estimate, at least two minutes.
    #[arg(long, hide = true, value_parser = positive_duration_arg)]
    pub step_limit: Option<Duration>,
}

/// `--budget`: at least a minute (a step and the report need that much).
fn budget_arg(text: &str) -> Result<Duration, String> {
    match positive_duration_arg(text)? {
        budget if budget < Duration::from_secs(60) => {
            Err(format!("'{text}' is under a minute, which no step fits in"))
        }
        budget => Ok(budget),
    }
}

impl RunArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let mode = match (self.quick, self.full) {
            (true, _) => Mode::Quick,
            (_, true) => Mode::Full,
            _ => Mode::Default,
        };
        self.path.plan().check()?;
        // Checked as each step would check them, before any step runs.
        self.load_hosts.plan(None, Vec::new())?;
        let server_threads = server_thread_counts(&self.server_threads)?;
        let exports = self.exports.files()?;
        crate::run::schedule::check_engines(&self.engine)?;
        anyhow::ensure!(
            server_threads.contains(&1),
            "run --server-threads must include 1: the echo and HTTP steps' engines without \
             event loops (blocking, threads) run at 1 only"
        );
        crate::run::run(&RunPlan {
            mode,
            out: self.out.clone(),
            dir: self.dir.clone(),
            exports,
            json_on_stdout: self.exports.json_on_stdout(),
            say: self.say.say(),
            only: self.only,
            engines: self.engine.clone(),
            budget: self.budget,
            contenders: self.contenders.clone(),
            path: self.path.plan(),
            load_hosts: self.load_hosts.args(),
            ring_events: self.ring_events,
            server_threads,
            step_limit: self.step_limit,
        })
    }
}
