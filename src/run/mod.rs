//! `ringside run`: the whole study in one command. Each step of the table in `steps` runs as a
//! child process of this same binary (`--format json`), so a step is exactly what a user gets
//! from the subcommand by hand; the rows are merged into one document, fio's controls are run
//! beside the file-write steps where fio is installed (wrk's beside the HTTP step where wrk is),
//! and the results directory gets `results.json`, `results.csv`, `report.md` and `report.html`.
//! Ctrl-C (or SIGTERM, passed on to the step) ends the study within the current step, which
//! keeps the runs it finished, and still writes everything for the steps that ran.

pub mod claims;
pub mod contenders;
pub mod control;
pub mod fio_read;
pub mod schedule;
pub mod steps;
pub mod timestamp;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::engines::{self, Workload};
use crate::output::progress::{took_line, Progress, Say};
use crate::output::{render, render_csv, Format};
use crate::report::load::load_document;
use crate::row::{Document, Row};
use crate::studies::{Export, ENGINE_FAILED_EXIT};
use crate::system::network::{Network, PathPlan};
use crate::system::stop::stopped;
use crate::system::stop::{interrupted_exit_code, is_interrupted_exit, stop_flag, stop_signal};
use crate::system::tuning::Sched;
use schedule::{Scheduled, Wishes};
use steps::{Control, Mode, Only, Step};

/// How long `run`, `run --quick`, and `echo` and `http` without flags take on a 2-vCPU VM, the
/// reference contenders already built ([bench/run.md](../../bench/run.md)): `ringside --help`,
/// the README and docs/run.md say these words, and a test keeps them equal.
pub const MEASURED_TIME: &str = "about 11 min";
pub const MEASURED_QUICK_TIME: &str = "about 2.5 min";
pub const MEASURED_ECHO_TIME: &str = "about 2 min";
pub const MEASURED_HTTP_TIME: &str = "about 1.5 min";

/// `run`'s line in `ringside --help`, with the measured times.
pub static RUN_ABOUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "The whole study in one command: every workload, the engines that answer the most, fio \
         and wrk controls where installed, and results.json, results.csv, report.md and \
         report.html in one directory. Takes {MEASURED_TIME} on a 2-vCPU VM, --quick \
         {MEASURED_QUICK_TIME}; --budget 5m fits it to five minutes."
    )
});

/// `ringside --help`'s opening: what ringside does, and where to start.
pub static LONG_ABOUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "ringside measures blocking syscalls, epoll and io_uring variants side by side on the \
         same workload, with syscalls counted by the kernel, the CPU time of every thread \
         (io_uring's kernel workers included) and every byte verified.\n\n\
         Start with `ringside run`: every study, {MEASURED_TIME} on a 2-vCPU VM (--quick \
         {MEASURED_QUICK_TIME}, --budget 5m to fit five minutes), ending with the path of its \
         report. `ringside probe` says what this kernel offers; each study can also run on its \
         own (`ringside echo`, `ringside fs write`)."
    )
});

/// `echo`'s and `http`'s lines in `ringside --help`, with their measured times.
pub static ECHO_ABOUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "TCP echo study: each server engine as a child process on one core, the load generator \
         on the other, in rounds until decided. Without flags: epoll and four io_uring rungs at \
         1 and 50 connections, {MEASURED_ECHO_TIME} on a 2-vCPU VM (at most 3 as planned); \
         --full for every engine and the published sizes."
    )
});
pub static HTTP_ABOUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "HTTP study: a fixed-response HTTP/1.1 server per engine as a child process on one \
         core, ringside's HTTP load generator on the other; requests/s, latency and \"% more \
         requests\" than epoll. Without flags: epoll and three io_uring rungs at 50 and 256 \
         connections, {MEASURED_HTTP_TIME} on a 2-vCPU VM (at most 2.5 as planned); --full \
         for every engine and 10 s windows."
    )
});

/// The whole study, as `run`'s flags asked for it.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub mode: Mode,
    /// Results directory (default: results/<UTC timestamp>).
    pub out: Option<PathBuf>,
    /// Directory for the scratch files of the file studies (default: the results directory).
    pub dir: Option<PathBuf>,
    /// Copies of the results in other forms (`--json FILE`, `--export-csv FILE`, ...).
    pub exports: Vec<(PathBuf, Export)>,
    /// `--json` without a file: the document on stdout instead of the directory's path.
    pub json_on_stdout: bool,
    /// What the run says on stderr (`--quiet`, `-v`), and its steps with it.
    pub say: Say,
    /// The reference contenders the network steps add.
    pub contenders: contenders::Choice,
    /// The network steps' path between server and client.
    pub path: PathPlan,
    /// The network steps' load hosts, as flags (`--load-host ... --listen-on ADDR`); empty:
    /// the load runs here.
    pub load_hosts: Vec<String>,
    /// Every step counts io_uring's tracepoints too (`--ring-events`).
    pub ring_events: bool,
    /// The echo and HTTP steps' server loops (`--server-threads 1,2`), a cell each.
    pub server_threads: Vec<usize>,
    /// How long any step may run before the watchdog ends it (None: `step_limit`'s).
    pub step_limit: Option<Duration>,
    /// `--only fs|net|claims`: the part of the study to run.
    pub only: Option<Only>,
    /// `--engine`: the engines each step runs, beside its baseline.
    pub engines: Vec<String>,
    /// `--budget`: the time the whole run may take.
    pub budget: Option<Duration>,
}

/// What a run keeps of its budget for writing the results and the report after its steps (2–4 s
/// on a 2-vCPU VM for a default run's 760 rows) and for starting each step.
const REPORT_RESERVE: Duration = Duration::from_secs(10);

/// What the steps produced so far.
#[derive(Default)]
struct Collected {
    rows: Vec<Row>,
    notes: Vec<String>,
    failed_steps: usize,
    /// Steps that finished with some engine failed (`ENGINE_FAILED_EXIT`).
    steps_with_failed_engines: usize,
}

impl Collected {
    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

pub fn run(args: &RunPlan) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mode = args.mode;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(timestamp::now_utc()));
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create the results directory {}", out.display()))?;
    let scratch = args.dir.clone().unwrap_or_else(|| out.clone());
    let exe = std::env::current_exe().context("cannot find this ringside binary to run steps")?;
    let contenders_dir = contenders::directory(&exe);
    // Ctrl-C during the contenders' build ends the run like one during a step.
    stop_flag();
    let say = args.say;
    let said = |line: String| {
        if !say.quiet {
            eprintln!("ringside run: {line}");
        }
    };
    contenders::sweep_sources(said);
    // Contenders listen on 127.0.0.1 only: not beside a veth pair or load hosts.
    let loopback_only = args.path.network == Network::Loopback && args.load_hosts.is_empty();
    let built = match (&contenders_dir, loopback_only) {
        (Ok(dir), true) => contenders::build(&args.contenders, dir, said),
        _ => None,
    };
    // Nothing ran when the run stops here: the results directory goes if it is still empty.
    let nothing_ran = |error: anyhow::Error| {
        let _ = std::fs::remove_dir(&out);
        error
    };
    let (mut references, mut contender_notes) = contenders::choose(
        &args.contenders,
        contenders_dir.as_deref().map_err(String::as_str),
    )
    .map_err(|error| match &built {
        Some(note) => anyhow::anyhow!("{error} ({note})"),
        None => error,
    })
    .map_err(nothing_ran)?;
    contender_notes.splice(0..0, built);
    // A contender is chosen only once built, so only where there is a directory.
    let contenders_dir = contenders_dir.unwrap_or_default();
    if !loopback_only && !references.is_empty() {
        // The steps refuse them beside --network veth and load hosts.
        references.clear();
        contender_notes.push("contenders: skipped, they run on loopback only".into());
    }
    // The budget's deadline for the steps: what the contenders' build left of it, less the
    // report's time.
    let deadline = args
        .budget
        .map(|budget| started + budget.saturating_sub(REPORT_RESERVE));
    let schedule = schedule::schedule(&Wishes {
        mode,
        only: args.only,
        engines: &args.engines,
        budget: deadline.map(|deadline| deadline.saturating_duration_since(Instant::now())),
        contenders: !references.is_empty(),
        loops: args.server_threads.len() as u64,
    })
    .map_err(nothing_ran)?;
    let total_seconds = schedule.seconds();
    let progress = Progress::timed(total_seconds, say);
    progress.line(schedule::plan_text(&schedule));
    let mut collected = Collected::default();
    for note in schedule.left_out.iter().cloned().chain(contender_notes) {
        progress.run_line(format!("ringside run: {note}"));
        collected.note(note);
    }
    let mut done_seconds = 0;
    let count = schedule.steps.len();
    for (index, scheduled) in schedule.steps.iter().enumerate() {
        let name = scheduled.step.name;
        if stopped() {
            collected.note(format!("{name}: not run, the study was interrupted"));
            continue;
        }
        let planned = Duration::from_secs(scheduled.seconds);
        let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left < planned / 2) {
            let note = format!("{name}: left out, the budget ran out");
            progress.line(format!("ringside run: {note}"));
            collected.note(note);
            continue;
        }
        let counter = format!("step {}/{count}", index + 1);
        progress.step(format!("{counter}: {name}"));
        let step_started = Instant::now();
        let context = StepContext {
            exe: &exe,
            scheduled,
            scratch: &scratch,
            out: &out,
            progress: &progress,
            say,
            path: args.path,
            load_hosts: &args.load_hosts,
            ring_events: args.ring_events,
            server_threads: &args.server_threads,
            done_seconds,
            contenders: &references,
            contenders_dir: &contenders_dir,
            step_limit: args.step_limit,
            budget_left: left,
        };
        let ended = run_step(&context, &mut collected);
        done_seconds += scheduled.seconds;
        progress.set_seconds(done_seconds);
        let what = format!("ringside run: {counter}, {name}");
        let mut line = took_line(&what, step_started, Some(planned));
        if ended {
            line.push_str(", ended at the budget's end with its finished runs kept");
        }
        progress.line(line);
    }
    progress.finish();
    let mut document = Document::new(crate::probe::environment(&scratch), collected.rows);
    document.notes = collected.notes;
    let written = write_results(&document, &out)?;
    for (path, export) in &args.exports {
        let copied = written.iter().find(|(_, form)| form == export);
        let (from, _) = copied.expect("every form is written");
        std::fs::copy(from, path).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json_on_stdout {
        crate::output::emit(&document, Format::Json, None)?;
    } else {
        println!("{}", out.display());
    }
    let report = (written.iter()).find_map(|(path, form)| (*form == Written::Html).then_some(path));
    say_the_end(&document, report, say);
    Ok(if stopped() {
        ExitCode::from(interrupted_exit_code())
    } else if collected.failed_steps > 0 {
        ExitCode::from(1)
    } else if collected.steps_with_failed_engines > 0 {
        ExitCode::from(ENGINE_FAILED_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}

/// The end of a run on the terminal (stderr, after the results directory on stdout), as
/// hyperfine ends with its comparison: the answer (the report's headline sentences and its
/// table, from the one analysis) and where the report is.
fn say_the_end(document: &Document, report: Option<&PathBuf>, say: Say) {
    if stopped() {
        eprintln!("ringside run: interrupted; the report covers the steps that finished");
    }
    if say.quiet && !stopped() {
        return;
    }
    let answer =
        crate::report::markdown::answer_text(&crate::analysis::Analysis::of(document), true);
    if !answer.is_empty() {
        eprint!("\n{answer}");
    }
    if let Some(report) = report {
        eprintln!("ringside run: the report: {}", report.display());
    }
}

/// What a step runs with: the run's settings and its own schedule.
struct StepContext<'a> {
    exe: &'a Path,
    scheduled: &'a Scheduled,
    scratch: &'a Path,
    out: &'a Path,
    progress: &'a Progress,
    /// What the run says: its steps say nothing but failures, a line per run with `-v`.
    say: Say,
    /// The network steps' path.
    path: PathPlan,
    /// The network steps' load hosts, as flags.
    load_hosts: &'a [String],
    /// `run --ring-events`: every step counts io_uring's tracepoints too.
    ring_events: bool,
    /// `run --server-threads`: the network steps' server loops.
    server_threads: &'a [usize],
    /// Estimated seconds of the steps before this one: where the bar stands when it starts.
    done_seconds: u64,
    /// The reference contenders the network steps add, and where they were built.
    contenders: &'a [&'static contenders::Reference],
    contenders_dir: &'a Path,
    /// `run --step-limit`, for tests of the watchdog.
    step_limit: Option<Duration>,
    /// What is left of `run --budget`: the step ends there, its finished runs kept.
    budget_left: Option<Duration>,
}

/// The step's arguments (its `--engine` as `run --engine` narrowed it), less the engines its
/// `--engine` names that this kernel cannot run: the run chose those cells, so on an older
/// kernel they are left out with a note rather than failed (as a user's own `--engine` is).
/// None when none of them can run here: the step is skipped.
fn args_for_this_kernel(scheduled: &Scheduled, collected: &mut Collected) -> Option<Vec<String>> {
    let step = scheduled.step;
    let mut args: Vec<String> = step
        .args(scheduled.mode)
        .unwrap_or_default()
        .iter()
        .map(|arg| arg.to_string())
        .collect();
    if let Some(engines) = &scheduled.engines {
        match args.iter().position(|arg| arg == "--engine") {
            Some(flag) => args[flag + 1] = engines.clone(),
            None => args.extend(["--engine".to_string(), engines.clone()]),
        }
    }
    let workload =
        (Workload::ALL.into_iter()).find(|workload| workload.name() == step.command.join("-"));
    let list =
        (args.iter().position(|arg| arg == "--engine")).and_then(|flag| args.get_mut(flag + 1));
    let (Some(workload), Some(list)) = (workload, list) else {
        return Some(args);
    };
    let mut here = Vec::new();
    for name in list.split(',') {
        let runs = (engines::find(workload, name).map_err(|error| error.to_string()))
            .and_then(|engine| engine.availability());
        match runs {
            Ok(()) => here.push(name),
            Err(reason) => collected.note(format!("{}: {name} left out: {reason}", step.name)),
        }
    }
    if here.is_empty() {
        collected.note(format!(
            "{}: skipped, none of its engines runs on this kernel",
            step.name
        ));
        return None;
    }
    *list = here.join(",");
    Some(args)
}

/// Runs one step as a child process and keeps its rows (the finished ones, if it failed);
/// true when the budget's end ended it.
fn run_step(context: &StepContext, collected: &mut Collected) -> bool {
    let StepContext {
        exe,
        scheduled,
        scratch,
        out,
        progress,
        ..
    } = *context;
    let (step, mode) = (scheduled.step, scheduled.mode);
    let command_text = step.command.join(" ");
    if !has_subcommand(exe, step.command) {
        collected.note(format!(
            "{}: skipped, this ringside has no `{command_text}` subcommand yet",
            step.name
        ));
        return false;
    }
    let Some(args) = args_for_this_kernel(scheduled, collected) else {
        return false;
    };
    let file = match StepOutput::new(out) {
        Ok(file) => file,
        Err(error) => {
            collected.failed_steps += 1;
            collected.note(format!(
                "{}: not run, no file for its rows in {}: {error}",
                step.name,
                out.display()
            ));
            return false;
        }
    };
    let mut command = Command::new(exe);
    command.args(step.command).args(&args);
    file.pass_to(&mut command);
    if step.takes_dir {
        command.arg("--dir").arg(scratch);
    }
    if step.takes_network {
        command.args(context.path.args());
        command.args(context.load_hosts);
        if context.server_threads != [1] {
            let counts: Vec<String> = context
                .server_threads
                .iter()
                .map(usize::to_string)
                .collect();
            command.args(["--server-threads", &counts.join(",")]);
        }
    }
    if step.realtime {
        match Sched::Fifo.refusal() {
            None => {
                command.args(["--sched", "fifo"]);
            }
            Some(reason) => collected.note(format!(
                "{}: ran under SCHED_OTHER instead of SCHED_FIFO, which was refused: {reason}. \
                 Other work on the machine delays the open loop's sends and answers there, so \
                 fewer offered rates may be held",
                step.name
            )),
        }
    }
    // A line per run from the steps only with `-v`; else their own plans, rounds and
    // skipped engines would be the run's lines.
    command.arg(if context.say.verbose { "-v" } else { "--quiet" });
    let with_contenders = match (step.contenders(mode), context.contenders) {
        (Some(counts), references @ [_, ..]) if scheduled.contenders => {
            command.args(["--contender-connections", counts]);
            for reference in references {
                let flag = reference.flag(context.contenders_dir, step.command[0]);
                command.arg("--contender").arg(flag);
            }
            true
        }
        _ => false,
    };
    if context.ring_events {
        command.arg("--ring-events");
    }
    let loops = context.server_threads.len() as u64;
    let estimate = Duration::from_secs(step.seconds(mode, with_contenders, loops));
    let limit = context.step_limit.unwrap_or_else(|| step_limit(estimate));
    // A budget's end is no failure: the step ends there and keeps its finished runs.
    let (limit, budget_ends_it) = match context.budget_left {
        Some(left) if left < limit => (left, true),
        _ => (limit, false),
    };
    let advance = |elapsed: Duration| {
        progress.set_seconds(context.done_seconds + elapsed.min(estimate).as_secs());
    };
    let status =
        spawn_step(command, progress).and_then(|child| wait_bounded(child, limit, advance));
    let rows = file.rows();
    if matches!(status, Ok(None)) {
        // A step the watchdog had to kill could not remove its scratch directory.
        for (stale, bytes) in crate::studies::fs::scratch::sweep(scratch) {
            collected.note(format!(
                "{}: its scratch directory {} ({bytes} bytes) was removed after it was stopped",
                step.name,
                stale.display()
            ));
        }
    }
    let ended_by_budget = budget_ends_it && matches!(status, Ok(None));
    match status {
        Ok(Some(status)) if status.success() => {}
        Ok(Some(status)) if status.code() == Some(ENGINE_FAILED_EXIT.into()) => {
            collected.steps_with_failed_engines += 1;
            for note in failure_notes(step.name, &rows) {
                collected.note(note);
            }
        }
        Ok(Some(status)) if status.code().is_some_and(is_interrupted_exit) => {
            collected.note(format!(
                "{}: interrupted; only its finished runs are shown",
                step.name
            ));
        }
        Ok(None) if budget_ends_it => {
            collected.note(format!(
                "{}: ended at the end of the budget; only its finished runs are shown",
                step.name
            ));
        }
        outcome => {
            collected.failed_steps += 1;
            let reason = match outcome {
                Ok(Some(status)) => format!("it exited with {status}"),
                Ok(None) => format!(
                    "it was stopped after {} s without finishing",
                    limit.as_secs()
                ),
                Err(error) => format!("it could not start ({error})"),
            };
            collected.note(format!(
                "{}: failed, {reason}; `ringside {command_text}` shows why",
                step.name
            ));
        }
    }
    let controls = match (step.control, rows.is_empty() || stopped()) {
        (Some(Control::WrkHttp), false) if context.path.network != Network::Loopback => {
            collected.note(format!(
                "{}: wrk control skipped, it runs on loopback only",
                step.name
            ));
            Vec::new()
        }
        (Some(control), false) => run_control(control, step, &rows, context, collected),
        _ => Vec::new(),
    };
    // Controls follow the step's rows so the tables list ringside's engines first.
    collected.rows.extend(rows);
    collected.rows.extend(controls);
    ended_by_budget
}

/// One note per engine that failed in a step: how many of its runs, and the first reason.
fn failure_notes(step: &str, rows: &[Row]) -> Vec<String> {
    let mut engines: Vec<&str> = Vec::new();
    for row in rows.iter().filter(|row| row.failure.is_some()) {
        if !engines.contains(&row.engine.as_str()) {
            engines.push(&row.engine);
        }
    }
    engines
        .into_iter()
        .map(|engine| {
            let runs: Vec<&Row> = rows.iter().filter(|row| row.engine == engine).collect();
            let failed: Vec<&str> = runs
                .iter()
                .filter_map(|row| row.failure.as_deref())
                .collect();
            format!(
                "{step}: {engine} failed in {} of {} runs: {}",
                failed.len(),
                runs.len(),
                failed[0]
            )
        })
        .collect()
}

/// How long a step may take before it is stopped: ten times its estimate, at least two
/// minutes. An engine stuck waiting for a completion must not hang the whole study.
pub(crate) fn step_limit(estimate: Duration) -> Duration {
    (estimate * 10).max(Duration::from_secs(120))
}

/// Where a step writes its rows: a file with no name in the results directory (O_TMPFILE, or
/// one unlinked as it is made), open in this process and passed to the step as
/// `--output /proc/self/fd/N`. Nothing of it outlives the last process that holds it: a
/// `.step.json` stayed in the results directory of a `run` killed during a step (the step, sent
/// SIGTERM as its parent died, wrote its finished runs there for no one to read).
pub(crate) struct StepOutput {
    file: std::fs::File,
}

impl StepOutput {
    pub(crate) fn new(out: &Path) -> std::io::Result<StepOutput> {
        Ok(StepOutput {
            file: tempfile::tempfile_in(out)?,
        })
    }

    /// The file as this process names it; the step inherits the same descriptor number.
    fn path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }

    /// Makes `command`'s child inherit the file and write its rows into it as JSON.
    pub(crate) fn pass_to(&self, command: &mut Command) {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        command
            .args(["--format", "json", "--output"])
            .arg(self.path());
        let fd = self.file.as_raw_fd();
        // SAFETY: the hook makes one fcntl(2) on a descriptor this process owns, which is
        // async-signal-safe, and allocates nothing.
        unsafe {
            command.pre_exec(move || match libc::fcntl(fd, libc::F_SETFD, 0) {
                -1 => Err(std::io::Error::last_os_error()),
                _ => Ok(()),
            });
        }
    }

    /// The rows the step wrote (none if it wrote no document).
    pub(crate) fn rows(&self) -> Vec<Row> {
        load_document(&self.path())
            .map(|document| document.results)
            .unwrap_or_default()
    }
}

/// How long a step has to end after the watchdog's SIGTERM before its process group is killed:
/// on SIGTERM a step ends its current run at once, stops its servers (each within 5 s) and
/// removes its scratch directory.
const STEP_TERM_GRACE: Duration = Duration::from_secs(10);

/// A step's running process and, when its stderr is forwarded, word from the forwarding
/// thread that the pipe has ended.
pub(crate) struct StepProcess {
    child: Child,
    forwarded: Option<std::sync::mpsc::Receiver<()>>,
}

/// How long to wait for a finished step's last stderr lines. A server the step left behind
/// (the step was killed) would hold the pipe open for ever.
const FORWARD_DRAIN: Duration = Duration::from_secs(2);

/// Starts a step. While the bar is drawn, the step's stderr goes through a pipe and each of its
/// lines is printed above the bar: the step then sees no terminal and draws no bar of its own
/// over ours. Otherwise the step writes to our stderr directly, as it would run by hand.
pub(crate) fn spawn_step(
    mut command: Command,
    progress: &Progress,
) -> std::io::Result<StepProcess> {
    // A group of its own, so the watchdog can end it with whatever it started; ended with
    // this process too, whatever ends it (Ctrl-C in a terminal reaches this process alone,
    // which passes it on).
    command.process_group(0);
    crate::system::children::die_with_parent(&mut command, rustix::process::Signal::TERM);
    if !progress.is_drawn() {
        return command.spawn().map(|child| StepProcess {
            child,
            forwarded: None,
        });
    }
    let mut child = command.stderr(Stdio::piped()).spawn()?;
    let stderr = child.stderr.take().expect("piped stderr");
    let progress = progress.clone();
    let (done, forwarded) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
            match line {
                Ok(line) => progress.line(line),
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    Ok(StepProcess {
        child,
        forwarded: Some(forwarded),
    })
}

/// Waits for a step's process, calling `advance` with the time it has run about every 100 ms;
/// passes on the signal that raised the stop flag; ends it (`end_step`) and returns None once
/// `limit` has passed.
pub(crate) fn wait_bounded(
    step: StepProcess,
    limit: Duration,
    advance: impl Fn(Duration),
) -> std::io::Result<Option<ExitStatus>> {
    let StepProcess {
        mut child,
        forwarded,
    } = step;
    let started = Instant::now();
    let mut signal_passed_on = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        // A signal sent to this process alone (`kill PID`, a service manager's SIGTERM) must
        // end the step too, which then keeps its finished runs and stops its servers.
        if let (Some(signal), false) = (stop_signal(), signal_passed_on) {
            signal_passed_on = true;
            // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
            unsafe { libc::kill(child.id() as i32, signal) };
        }
        if started.elapsed() > limit {
            end_step(&mut child)?;
            break None;
        }
        advance(started.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    };
    // The step's last lines go above the bar before the next step's.
    if let Some(forwarded) = forwarded {
        let _ = forwarded.recv_timeout(FORWARD_DRAIN);
    }
    Ok(status)
}

/// The watchdog's end of a step past its limit: SIGTERM to its process group, which ends its
/// current run, keeps its finished runs, stops its servers and removes its scratch directory;
/// SIGKILL to the group after `STEP_TERM_GRACE` (its servers, in groups of their own, die with
/// it by their parent-death signal). The step is reaped only then: until reaped, its pid,
/// the group's id, cannot be another process's.
fn end_step(child: &mut Child) -> std::io::Result<()> {
    use rustix::process::{kill_process_group, waitid, Pid, Signal, WaitId, WaitIdOptions};
    let pid = Pid::from_child(child);
    let _ = kill_process_group(pid, Signal::TERM);
    let deadline = Instant::now() + STEP_TERM_GRACE;
    let unreaped = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
    while Instant::now() < deadline && waitid(WaitId::Pid(pid), unreaped)?.is_none() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = kill_process_group(pid, Signal::KILL);
    child.wait()?;
    Ok(())
}

/// True when this binary has `command` (`ringside <command> --help` succeeds).
fn has_subcommand(exe: &Path, command: &[&str]) -> bool {
    Command::new(exe)
        .args(command)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Runs a step's control tool and returns its rows; a missing or failing tool becomes a note,
/// never a failure.
fn run_control(
    control: Control,
    step: &Step,
    rows: &[Row],
    context: &StepContext,
    collected: &mut Collected,
) -> Vec<Row> {
    match control {
        Control::FioWrite if !control::installed("fio") => {
            collected.note("fio is not installed: the file-write controls did not run".into());
            Vec::new()
        }
        Control::FioWrite => {
            context.progress.run_line(
                "ringside run: control: fio psync and io_uring at the same size and block size"
                    .into(),
            );
            control::fio_write(rows, context.scratch).unwrap_or_else(|error| {
                collected.note(format!("the fio control failed: {error:#}"));
                Vec::new()
            })
        }
        Control::FioRead if !control::installed("fio") => {
            collected.note("fio is not installed: the file-read controls did not run".into());
            Vec::new()
        }
        Control::FioRead => {
            let runtime = step
                .flag(context.scheduled.mode, "--runtime")
                .unwrap_or("1s");
            context.progress.run_line(
                "ringside run: control: fio psync (jobs = depth), libaio and io_uring reading \
                 at the same depths"
                    .into(),
            );
            fio_read::fio_read(rows, runtime, context.scratch).unwrap_or_else(|error| {
                collected.note(format!("the fio read control failed: {error:#}"));
                Vec::new()
            })
        }
        Control::WrkHttp => match ["wrk", "taskset"]
            .into_iter()
            .find(|t| !control::on_path(t))
        {
            Some(tool) => {
                collected.note(format!(
                    "{tool} is not installed: the wrk HTTP control did not run"
                ));
                Vec::new()
            }
            None => {
                let duration = step
                    .flag(context.scheduled.mode, "--duration")
                    .unwrap_or("10s");
                context.progress.run_line(format!(
                    "ringside run: control: wrk against ringside's {} server, same connections \
                     and {duration} runs",
                    control::WRK_SERVER_ENGINE
                ));
                control::wrk_http(rows, duration).unwrap_or_else(|error| {
                    collected.note(format!("the wrk control failed: {error:#}"));
                    Vec::new()
                })
            }
        },
    }
}

/// A file of a results directory, by its form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    Json,
    Csv,
    Markdown,
    Html,
}

impl PartialEq<Export> for Written {
    fn eq(&self, export: &Export) -> bool {
        matches!(
            (self, export),
            (Written::Json, Export::Json)
                | (Written::Csv, Export::Csv)
                | (Written::Markdown, Export::Markdown)
        )
    }
}

/// Writes the four files of a results directory; returns each with its form.
pub(crate) fn write_results(
    document: &Document,
    out: &Path,
) -> anyhow::Result<Vec<(PathBuf, Written)>> {
    let json = out.join(crate::report::load::RESULTS_FILE);
    std::fs::write(&json, render(document, Format::Json)?)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let csv = out.join("results.csv");
    std::fs::write(&csv, render_csv(&document.results)?)
        .with_context(|| format!("cannot write {}", csv.display()))?;
    let reports = crate::report::write_reports(document, out)?;
    let mut written = vec![(json, Written::Json), (csv, Written::Csv)];
    for path in reports {
        let form = match path.extension().and_then(|ext| ext.to_str()) {
            Some("html") => Written::Html,
            _ => Written::Markdown,
        };
        written.push((path, form));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's named engine this kernel cannot run (here: NAPI, which needs a NIC's receive
    /// queue) is left out with a note; a step left with none is skipped; `run --engine`'s list
    /// takes the place of the step's.
    #[test]
    fn a_step_runs_only_the_engines_this_kernel_has() {
        let step = |args: &'static [&'static str], engines: Option<&str>| Scheduled {
            step: Box::leak(Box::new(Step {
                name: "echo shape",
                command: &["echo"],
                args: [None, Some(args), None],
                takes_dir: false,
                takes_network: true,
                realtime: false,
                seconds: [0, 1, 0],
                control: None,
                contenders: [None, None, None],
                contender_seconds: [0, 0, 0],
                rank: 1,
                claims: false,
            })),
            mode: Mode::Default,
            contenders: false,
            engines: engines.map(String::from),
            seconds: 1,
        };
        let mut collected = Collected::default();
        let both = step(
            &["--engine", "epoll,uring-napi", "--connections", "50"],
            None,
        );
        let args = args_for_this_kernel(&both, &mut collected).unwrap();
        assert_eq!(args, ["--engine", "epoll", "--connections", "50"]);
        assert!(collected.notes[0].starts_with("echo shape: uring-napi left out: "));
        let none = step(&["--engine", "uring-napi"], None);
        assert!(args_for_this_kernel(&none, &mut collected).is_none());
        assert!(collected.notes.iter().any(|note| note.contains("skipped")));
        let narrowed = step(
            &["--engine", "epoll,uring", "-c", "1"],
            Some("epoll,uring-defer"),
        );
        let args = args_for_this_kernel(&narrowed, &mut collected).unwrap();
        assert_eq!(args, ["--engine", "epoll,uring-defer", "-c", "1"]);
    }
}
