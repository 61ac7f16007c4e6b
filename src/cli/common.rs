//! Flags several subcommands share, defined once and flattened where they are used, with the
//! same meaning everywhere; and the parsers for human units (`4k`, `1G`, `10s`).

use crate::studies::Rounds;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use crate::engines::uring::ring::{format_cpus, Helpers};
use crate::engines::{select, with_aa_pair, EngineDef, Workload};
use crate::output::progress::Say;
use crate::output::Format;
use crate::probe::ProbeFormat;
use crate::row::Document;
use crate::studies::{Destination, Export};
use crate::system::pin::{cpus_online, parse_cpus, CpuList};
use crate::units::{parse_duration, parse_size};

#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Directory whose filesystem to probe (type, O_DIRECT).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// table for people, json for scripts.
    #[arg(long, value_enum, default_value_t = ProbeFormat::Table)]
    pub format: ProbeFormat,
}

#[derive(Args, Debug, Clone)]
pub struct EnginesArgs {
    /// table for people, one engine a line (as wide as COLUMNS says, else the terminal); csv or
    /// json for scripts, with every field: what each engine adds and needs of the kernel.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The address servers would listen on for load hosts (`echo --listen-on`): the rungs that
    /// need a NIC say what its route allows them.
    #[arg(long, value_name = "ADDR")]
    pub listen_on: Option<std::net::IpAddr>,
    /// The table with what each engine adds to the engine it is over.
    #[arg(long)]
    pub long: bool,
}

/// How large a document `report`, `compare`, `merge` and `claims --claims-dir` read.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// The largest document read (k/m/g suffixes); a larger one, or anything but a regular
    /// file (a FIFO, /dev/zero), is refused before a byte of it is read.
    #[arg(long, global = true, value_name = "SIZE", default_value = "512m")]
    #[arg(value_parser = size_arg)]
    pub max_input: u64,
}

impl InputArgs {
    /// Sets the bound for every document this process reads.
    pub fn apply(&self) {
        crate::system::input::set_input_limit(self.max_input);
    }
}

/// Where results go: every subcommand that writes rows has these.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format on stdout or in --output [default: table, or in --output what its name
    /// ends in: .json, .csv, or .md for the report in Markdown, as `ringside report` writes it].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write results to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub exports: ExportArgs,
}

/// Copies of the results in other forms, as hyperfine and oha name them: every subcommand that
/// writes rows has these, and `run`.
#[derive(Args, Debug, Clone, Default)]
pub struct ExportArgs {
    /// The JSON document (every run's row): with FILE, also written there whatever --format
    /// says (as hyperfine's --export-json); without, printed on stdout (as oha's --json).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = JSON_ON_STDOUT)]
    pub json: Option<PathBuf>,
    /// Also write the JSON document to this file (hyperfine's name for --json FILE).
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write every run's row as CSV to this file (as hyperfine's --export-csv).
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the report in Markdown to this file (as hyperfine's --export-markdown).
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

/// What `--json` holds when given without a file: the document goes to stdout.
const JSON_ON_STDOUT: &str = "-";

impl ExportArgs {
    /// The files to write a copy to, each in its form, checked before anything runs.
    pub fn files(&self) -> anyhow::Result<Vec<(PathBuf, Export)>> {
        let files: Vec<(PathBuf, Export)> = [
            (
                self.json.clone().filter(|_| !self.json_on_stdout()),
                Export::Json,
            ),
            (self.export_json.clone(), Export::Json),
            (self.export_csv.clone(), Export::Csv),
            (self.export_markdown.clone(), Export::Markdown),
        ]
        .into_iter()
        .filter_map(|(path, export)| Some((path?, export)))
        .collect();
        for (path, _) in &files {
            check_writable(path)?;
        }
        Ok(files)
    }

    /// Whether `--json` was given without a file.
    pub fn json_on_stdout(&self) -> bool {
        self.json.as_deref() == Some(Path::new(JSON_ON_STDOUT))
    }

    /// A target given after `--json` without a file (`load http --json URL`), which clap read
    /// as the file: taken back as the target, the JSON document then going to stdout. None
    /// when `--json`'s value does not read as `is_target` says a target does.
    pub fn target_after_json(&mut self, is_target: impl Fn(&str) -> bool) -> Option<String> {
        let text = self.json.as_deref()?.to_str()?.to_string();
        if self.json_on_stdout() || !is_target(&text) {
            return None;
        }
        self.json = Some(PathBuf::from(JSON_ON_STDOUT));
        Some(text)
    }
}

impl OutputArgs {
    /// Where the results go, checked before anything runs: a study that ran for minutes must
    /// not find out at the end that it cannot write them.
    pub fn destination(&self) -> anyhow::Result<Destination> {
        let exports = self.exports.files()?;
        if let Some(path) = &self.output {
            check_writable(path)?;
        }
        let format = match (self.exports.json_on_stdout(), self.format) {
            (true, Some(format)) if format != Format::Json => anyhow::bail!(
                "--json without a file prints the JSON document; leave out --format {}, or \
                 give --json a file to write it to",
                format!("{format:?}").to_lowercase()
            ),
            (true, _) => Some(Format::Json),
            (false, format) => format,
        };
        let (form, said) = output_form(format, self.output.as_deref(), Format::Table);
        Ok(Destination {
            format: form.format,
            path: self.output.clone(),
            exports,
            markdown: form.markdown,
            render_markdown: render_markdown_report,
            render_terminal: crate::report::terminal_text,
            render_answer,
            said,
        })
    }
}

/// What goes into an output file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Form {
    pub format: Format,
    /// The report in Markdown instead of `format` (`-o FILE.md`).
    pub markdown: bool,
}

/// The form of `--output`'s file: `--format` when given; else what the file's name ends in
/// (`.json`, `.csv`, `.md`); else `default`, with a line for stderr saying what was written
/// where, since the name promised nothing (or something else).
pub fn output_form(
    format: Option<Format>,
    output: Option<&Path>,
    default: Format,
) -> (Form, Option<String>) {
    let form = |format| Form {
        format,
        markdown: false,
    };
    let extension = output
        .and_then(Path::extension)
        .map(|ext| ext.to_string_lossy().to_ascii_lowercase());
    match (format, extension.as_deref()) {
        (Some(format), _) => (form(format), None),
        (None, Some("json")) => (form(Format::Json), None),
        (None, Some("csv")) => (form(Format::Csv), None),
        (None, Some("md")) => (
            Form {
                format: default,
                markdown: true,
            },
            None,
        ),
        (None, _) => {
            let said = output.map(|path| {
                format!(
                    "ringside: wrote the results to {} as {} (a name ending in .json, .csv or \
                     .md, or --format, picks another form)",
                    path.display(),
                    match default {
                        Format::Table => "a table",
                        Format::Csv => "CSV",
                        Format::Json => "JSON",
                    }
                )
            });
            (form(default), said)
        }
    }
}

/// The report of a results document in Markdown, as `ringside report` writes report.md.
fn render_markdown_report(document: &Document) -> String {
    let analysis = crate::analysis::Analysis::of(document);
    crate::report::markdown::render_markdown(document, &analysis)
}

/// The answer a study ends with: the report's headline sentences.
fn render_answer(document: &Document) -> String {
    let analysis = crate::analysis::Analysis::of(document);
    crate::report::markdown::answer_text(&analysis, false)
}

/// Refuses a results file that cannot be written, creating nothing that stays: an existing file
/// must open for writing (not truncated here); a new one is tried as a sibling created and
/// removed at once, since permission bits do not tell (root passes `access`, yet /proc and a
/// read-only mount refuse to create).
pub(super) fn check_writable(path: &Path) -> anyhow::Result<()> {
    let refused = |error: std::io::Error| {
        anyhow::anyhow!("cannot write results to {}: {error}", path.display())
    };
    anyhow::ensure!(
        !path.is_dir(),
        "cannot write results to {}: it is a directory",
        path.display()
    );
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(refused)?;
        return Ok(());
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let trial = path.with_file_name(format!(".{name}.ringside-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&trial)
        .map_err(refused)?;
    let _ = std::fs::remove_file(&trial);
    Ok(())
}

/// Flags every file study shares, with the same meaning everywhere.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Engines to compare, comma separated (default: the workload's default engines, those
    /// `ringside engines` marks).
    #[arg(long, short = 'e', value_delimiter = ',')]
    pub engine: Vec<String>,
    /// Rounds: each round runs every engine once, in a fresh random order (each rung next to
    /// the engine it extends). `auto` adds rounds in stages (12, 16, 24) until the questions
    /// the answer asks (each engine against the baseline, each rung against the engine it
    /// extends) are decided or cannot be, each depth on its own; a number runs exactly that
    /// many.
    #[arg(long, short = 'r', default_value = "auto", value_parser = Rounds::parse)]
    pub runs: Rounds,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Pin the measured thread to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    #[command(flatten)]
    pub say: SayArgs,
    #[command(flatten)]
    pub helpers: HelperArgs,
    /// Also count io_uring's own events in the kernel (SQEs, CQEs, io-wq punts, polls armed,
    /// task-work runs, CQ overflows, short writes) on its tracepoints, for the report's causes:
    /// in 2 attribution rounds after the timed ones, whose rows are marked `attribution` and
    /// never compared. The tracepoints cost some engines far more than others (docs/rows.md
    /// gives what they cost on a 2-vCPU VM).
    #[arg(long)]
    pub ring_events: bool,
    /// Leave out the A/A pair: without --engine a study also measures its baseline a second
    /// time (blocking#2), an ordinary cell of every round, so the report can say how often it
    /// tells an engine from itself.
    #[arg(long)]
    pub no_aa: bool,
}

impl CommonArgs {
    /// The engines `--engine` names, or the workload's defaults with the A/A pair (unless
    /// `--no-aa`).
    pub fn engines(&self, workload: Workload) -> anyhow::Result<Vec<&'static EngineDef>> {
        let engines = select(workload, &self.engine)?;
        Ok(match self.engine.is_empty() && !self.no_aa {
            true => with_aa_pair(workload, engines),
            false => engines,
        })
    }
}

/// How much a study says on stderr while it runs: every study and `run` have these.
#[derive(Args, Debug, Clone, Default)]
pub struct SayArgs {
    /// Nothing on stderr but failures: no plan, no progress.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,
    /// A line per run too (engine, figures, syscalls), above the progress bar.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

impl SayArgs {
    pub fn say(&self) -> Say {
        Say {
            quiet: self.quiet,
            verbose: self.verbose,
        }
    }
}

/// The kernel threads that work for io_uring engines, set on purpose and recorded in every row
/// (`params.iowq_*`, `params.sqpoll_cpu`), never left to an accident of setup order. The help
/// here is the file studies'; a server's is `server_helper_help`'s.
#[derive(Args, Debug, Clone, Default)]
pub struct HelperArgs {
    /// Most io-wq worker threads for the file I/O io_uring cannot finish inline (buffered writes,
    /// fsyncs). Default: 16 per online CPU. The kernel gives a ring at most 4 per CPU by itself,
    /// sized by the *first* ring a thread makes; fsyncs block in workers, so more of them share
    /// more device flushes (docs/studies.md gives what that changed on a 2-vCPU VM).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub iowq_workers: Option<u32>,
    /// CPUs the io-wq workers may run on, e.g. `1` or `0-1`. Default: every online CPU, as for
    /// an unpinned process (otherwise workers inherit --cpu and queue behind the engine).
    #[arg(long, value_name = "LIST", value_parser = cpus_arg)]
    pub iowq_cpus: Option<CpuList>,
    /// CPU of uring-sqpoll's kernel submission thread. Default: a CPU other than --cpu when the
    /// engine is pinned (its poller would take the engine's CPU), else any.
    #[arg(long, value_name = "N")]
    pub sqpoll_cpu: Option<usize>,
}

/// The help of the kernel-thread flags for a server (`serve`, `echo`, `http`), in place of the
/// file studies' (`#[command(mut_args(server_helper_help))]` on their flags): a server's io-wq
/// workers take network receives and sends, and its threads stay on its own CPU.
pub fn server_helper_help(arg: clap::Arg) -> clap::Arg {
    let help = match arg.get_id().as_str() {
        "iowq_workers" => {
            "Most io-wq worker threads for the receives and sends io_uring cannot finish \
             inline: a socket with nothing to read is polled in the ring, not handed to a worker, \
             unless the engine forces it (uring-async). Default: 16 per online CPU; the kernel \
             gives a ring at most 4 per CPU by itself, sized by the *first* ring a thread makes."
        }
        "iowq_cpus" => {
            "CPUs the io-wq workers may run on, e.g. `1` or `0-1`. Default: the server's CPU, \
             for the other CPU is the load generator's."
        }
        "sqpoll_cpu" => {
            "CPU of uring-sqpoll's kernel submission thread. Default: the server's own CPU under \
             the normal class, for the other is the load generator's (docs/studies.md gives what \
             a poller there cost on a 2-vCPU VM); under --sched fifo another CPU, since a \
             real-time server would starve a poller beside it."
        }
        _ => return arg,
    };
    arg.help(help)
}

impl HelperArgs {
    /// The settings for an engine pinned to `engine_cpu` (if any): the defaults, overridden
    /// by the flags given, each CPU checked against the machine.
    pub fn resolve(&self, engine_cpu: Option<usize>) -> anyhow::Result<Helpers> {
        let mut helpers = Helpers::defaults(engine_cpu);
        let online = cpus_online();
        if let Some(workers) = self.iowq_workers {
            helpers.iowq_bounded_max = workers;
        }
        if let Some(CpuList(cpus)) = &self.iowq_cpus {
            if let Some(cpu) = cpus.iter().find(|cpu| !online.contains(cpu)) {
                anyhow::bail!(
                    "--iowq-cpus names CPU {cpu}, which is not online here (online: {})",
                    format_cpus(&online)
                );
            }
            helpers.iowq_cpus = cpus.clone();
        }
        if let Some(cpu) = self.sqpoll_cpu {
            anyhow::ensure!(
                online.contains(&cpu),
                "--sqpoll-cpu {cpu} is not an online CPU here (online: {})",
                format_cpus(&online)
            );
            helpers.sqpoll_cpu = Some(cpu);
        }
        Ok(helpers)
    }
}

/// The offered rates `--rate` takes, in operations per second over all connections. Below
/// the least, one connection's interval (connections / rate, up to 65,000 / 0.001 s, two
/// years) would pass `--duration`'s bound; `--rate 1e-300` overflowed the schedule.
pub const RATE_MIN: f64 = 0.001;
pub const RATE_MAX: f64 = 10_000_000.0;

/// An offered rate: from `RATE_MIN` to `RATE_MAX` operations per second.
pub fn rate_arg(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if (RATE_MIN..=RATE_MAX).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "'{text}' is not a rate from {RATE_MIN} to 10M requests (or messages)/s"
        )),
    }
}

pub fn cpus_arg(text: &str) -> Result<CpuList, String> {
    parse_cpus(text).map(CpuList)
}

pub fn size_arg(text: &str) -> Result<u64, String> {
    parse_size(text)
}

pub fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

/// A duration that must not be zero: a measured window or a timeout.
pub fn positive_duration_arg(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        duration if duration.is_zero() => Err(format!("'{text}' must be longer than zero")),
        duration => Ok(duration),
    }
}

/// Parses a comma-separated list flag's values, each with `parse`; the flag is named in the
/// error.
pub fn parse_list<T>(
    texts: &[String],
    flag: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> anyhow::Result<Vec<T>> {
    anyhow::ensure!(!texts.is_empty(), "{flag} needs at least one value");
    texts
        .iter()
        .map(|text| {
            parse(text.trim()).ok_or_else(|| {
                anyhow::anyhow!("{flag} value '{text}' is not a positive number in range")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_file_takes_the_form_its_name_says_unless_format_is_given() {
        let form =
            |format, name: &str, default| output_form(format, Some(Path::new(name)), default);
        let plain = |format| Form {
            format,
            markdown: false,
        };
        assert_eq!(
            form(None, "a.JSON", Format::Table),
            (plain(Format::Json), None)
        );
        assert_eq!(
            form(None, "a.csv", Format::Json),
            (plain(Format::Csv), None)
        );
        assert!(form(None, "a.md", Format::Json).0.markdown);
        let given = form(Some(Format::Table), "a.json", Format::Json);
        assert_eq!(given, (plain(Format::Table), None));
        let (unknown, said) = form(None, "a.out", Format::Json);
        assert_eq!(unknown, plain(Format::Json));
        assert!(said.unwrap().contains("wrote the results to a.out as JSON"));
        assert_eq!(
            output_form(None, None, Format::Table),
            (plain(Format::Table), None)
        );
    }

    #[test]
    fn lists_reject_zero_and_garbage_with_the_flag_name() {
        let parse = |text: &str| text.parse::<usize>().ok().filter(|&n| n > 0);
        let good = parse_list(&["1".into(), " 50".into()], "--connections", parse).unwrap();
        assert_eq!(good, [1, 50]);
        let error = parse_list(&["0".into()], "--connections", parse).unwrap_err();
        assert!(error.to_string().contains("--connections value '0'"));
    }

    proptest::proptest! {
        /// Any rate `--rate` accepts gives every connection count the flags allow (up to
        /// 65,000) an interval the open loop's schedule can hold and add to a deadline:
        /// `--rate 1e-300` panicked in a load thread.
        #[test]
        fn accepted_rates_give_schedules_that_fit(
            text in "\\PC{0,12}|[0-9]{1,12}(\\.[0-9]{0,12})?(e-?[0-9]{1,3})?",
            rate in proptest::num::f64::ANY,
            connections in 1u32..=65_000,
        ) {
            for text in [text, rate.to_string()] {
                let Ok(rate) = rate_arg(&text) else { continue };
                let interval = Duration::try_from_secs_f64(f64::from(connections) / rate);
                let interval = interval.expect("an interval a Duration holds");
                proptest::prop_assert!(interval <= crate::units::DURATION_MAX * 3);
                proptest::prop_assert!(std::time::Instant::now().checked_add(interval).is_some());
            }
        }
    }
}
