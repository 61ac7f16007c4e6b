//! The studies: each turns a plan into rows by running engines, and every one of them runs on
//! the one runner here. A study is a list of cells (an engine with the workload's parameters)
//! measured in rounds: each round runs every cell once, in an order drawn afresh for the round
//! (its seed recorded), each rung next to the engine it extends so their pair stays close in
//! time; so the drift of a noisy machine falls on both sides of every comparison, and no engine
//! always goes first. With `--runs auto` the study looks at its comparisons after stages of
//! rounds (`model::comparison::LOOKS`) and stops when each is decided or cannot be. Progress on
//! stderr, Ctrl-C ending the study after the current cell, and the results written even when a
//! run failed or was interrupted.
//!
//! `fs/` holds the file studies (`fs write`, `fs cycle`, their scratch file), `echo.rs` and
//! `http.rs` the network studies, which run each server as a child process through
//! `net.rs` (and any other server program beside them, `contender.rs`); `serve.rs` is that child (`ringside serve`), `load.rs` the `load`
//! subcommand (one load run against any server).

pub mod echo;
pub mod fs;
pub mod http;
pub mod load;
pub mod net;
pub mod serve;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::analysis::Analysis;
use crate::engines::nearest_ran;
use crate::engines::EngineDef;
use crate::model::comparison::{Comparison, LOOKS};
use crate::output::progress::{took_line, Progress, Say};
use crate::output::{emit, write_text, Format};
use crate::row::{block_of, Document, Row, PARTIAL_NOTE};
use crate::system::stop::{interrupted_exit_code, stop_flag, stopped};

/// One cell of a study: what one measurement in a run covers.
pub trait Cell {
    /// What the progress bar says while the cell runs.
    fn step(&self, run: u32, runs: u32) -> String;
    /// What the line saying a run of the cell failed starts with.
    fn failed(&self, run: u32) -> String;
    /// The engine (or contender) its rows carry in `engine`.
    fn engine(&self) -> String;
    /// What, besides the engine, tells the cell apart from the study's other cells (a depth,
    /// a connection count): cells of one group are compared with one another.
    fn group(&self) -> String;
    /// The planned time of one run of the cell: its warm-up, its window and a server's start
    /// (None: the plan's time per cell, as a file run capped by `--runtime`).
    fn planned(&self) -> Option<Duration> {
        None
    }
}

/// What a study will run and how long that takes, said on stderr before it starts
/// (`Plan::progress`): its cells (engines × settings) × rounds, and the time their planned
/// windows take.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The study as typed: `echo`, `fs write`.
    pub study: String,
    /// What runs, in words.
    pub what: String,
    /// The planned time as far as the first look (every round with `--runs N`), and at most;
    /// None where a run's time cannot be planned.
    pub about: Option<Duration>,
    pub most: Option<Duration>,
    /// Cell runs at most.
    pub runs: u64,
    /// The most a cell's run may take where the cell has no planned time of its own
    /// (`Cell::planned`): a file run's `--runtime`. Such a plan's times are caps.
    pub cell: Option<Duration>,
}

impl Plan {
    /// `rounds` of `cells`, each run as long as it plans, or at most `cell` (a cap: the plan
    /// then says only how long the rounds may take at most).
    pub fn rounds<C: Cell>(
        study: &str,
        cells: &[C],
        rounds: Rounds,
        cell: Option<Duration>,
    ) -> Plan {
        let distinct = |of: &dyn Fn(&C) -> String| {
            let mut seen: Vec<String> = cells.iter().map(of).collect();
            seen.sort();
            seen.dedup();
            seen.len()
        };
        let (engines, settings) = (distinct(&|c| c.engine()), distinct(&|c| c.group()));
        let round: Option<Duration> = cells.iter().map(|c| c.planned().or(cell)).sum();
        let (first, last) = match rounds {
            Rounds::Auto => (LOOKS[0], rounds.budget()),
            Rounds::Exactly(n) => (n, n),
        };
        let shape = match settings {
            1 => format!("{engines} engines"),
            _ => format!("{engines} engines × {settings} settings"),
        };
        let rounds_text = match rounds {
            Rounds::Auto => {
                format!("{first} to {last} rounds (fewer once its questions are settled)")
            }
            Rounds::Exactly(1) => "1 round".to_string(),
            Rounds::Exactly(n) => format!("{n} rounds"),
        };
        Plan {
            study: study.to_string(),
            what: format!("{} cells ({shape}) × {rounds_text}", cells.len()),
            about: round.filter(|_| cell.is_none()).map(|round| round * first),
            most: round.map(|round| round * last),
            runs: cells.len() as u64 * u64::from(last),
            cell,
        }
    }

    /// The plan of a study bounded in runs, not rounds (the equal-load sweep), each run about
    /// `cell` long: `what` it runs, at most `runs` runs.
    pub fn bounded(study: &str, what: String, runs: u64, cell: Duration) -> Plan {
        Plan {
            study: study.to_string(),
            what,
            about: None,
            most: Some(cell * u32::try_from(runs).unwrap_or(u32::MAX)),
            runs,
            cell: Some(cell),
        }
    }

    /// `self`, then `attribution` rounds of `cells` with the io_uring tracepoints on (none:
    /// `self` as it is).
    pub fn and_attribution<C: Cell>(self, attribution: u32, cells: &[C]) -> Plan {
        if attribution == 0 {
            return self;
        }
        let study = self.study.clone();
        let rounds = Plan::rounds(&study, cells, Rounds::Exactly(attribution), self.cell);
        self.and(Plan {
            what: format!("{attribution} attribution rounds, the tracepoints on"),
            ..rounds
        })
    }

    /// `self`, then `more` (a contender's integrity stream after the rounds).
    pub fn and(self, more: Plan) -> Plan {
        let sum = |a: Option<Duration>, b: Option<Duration>| Some(a? + b?);
        Plan {
            what: format!("{}; then {}", self.what, more.what),
            about: sum(self.about, more.about.or(more.most)),
            most: sum(self.most, more.most),
            runs: self.runs + more.runs,
            ..self
        }
    }

    /// The line said before the study starts.
    pub fn text(&self) -> String {
        use crate::output::progress::time_text;
        let time = match (self.about, self.most) {
            (Some(about), Some(most)) if about < most => {
                format!("about {}, at most {}", time_text(about), time_text(most))
            }
            (Some(_), Some(most)) => time_text(most),
            (None, Some(most)) => format!("at most {}", time_text(most)),
            _ => "its runs' time is not planned (nothing caps them)".to_string(),
        };
        let from = match self.cell {
            Some(_) => "each run's --runtime cap",
            None => "the runs' windows",
        };
        format!(
            "ringside {}: {}; planned {time} from {from}",
            self.study, self.what
        )
    }

    /// Says the plan (unless quiet) and returns the study's bar over it.
    pub fn progress(&self, say: Say) -> Progress {
        if !say.quiet {
            eprintln!("{}", self.text());
        }
        Progress::study(self.most, self.runs, self.cell, say)
    }
}

/// How many rounds a study measures (`--runs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounds {
    /// Rounds in stages until the first screen's questions are decided or cannot be, each
    /// group of cells on its own, at most the last look.
    Auto,
    /// Exactly this many.
    Exactly(u32),
}

/// The most rounds a study takes: its rows are reserved up front (`run_rounds`), and
/// 4294967295 rounds of 8 engines asked for 3.4 TB at once.
pub const ROUNDS_MAX: u32 = 1000;

impl Rounds {
    /// The most rounds the study may run.
    pub fn budget(self) -> u32 {
        match self {
            Rounds::Auto => *LOOKS.last().expect("looks"),
            Rounds::Exactly(rounds) => rounds,
        }
    }

    /// The looks the rows record (`Row::looks`).
    fn looks(self) -> Option<Vec<u32>> {
        (self == Rounds::Auto).then(|| LOOKS.to_vec())
    }

    /// `--runs`'s text: `auto` or a count of at least one.
    pub fn parse(text: &str) -> Result<Rounds, String> {
        if text == "auto" {
            return Ok(Rounds::Auto);
        }
        match text.parse::<u32>() {
            Ok(rounds) if (1..=ROUNDS_MAX).contains(&rounds) => Ok(Rounds::Exactly(rounds)),
            _ => Err(format!(
                "'{text}' is not a number of rounds: give 'auto' (add rounds until decided) or \
                 a whole number from 1 to {ROUNDS_MAX}"
            )),
        }
    }
}

impl std::fmt::Display for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rounds::Auto => write!(f, "auto"),
            Rounds::Exactly(rounds) => write!(f, "{rounds}"),
        }
    }
}

/// Where a study's results go.
#[derive(Clone, Debug)]
pub struct Destination {
    pub format: Format,
    /// A file instead of stdout.
    pub path: Option<PathBuf>,
    /// Copies in other forms, whatever `format` says (`--json FILE`, `--export-csv FILE`).
    pub exports: Vec<(PathBuf, Export)>,
    /// The report in Markdown instead of `format` (`-o FILE.md`).
    pub markdown: bool,
    /// The report in Markdown, rendered by report/, which studies do not import.
    pub render_markdown: fn(&Document) -> String,
    /// The report's own sections for the terminal (`report::terminal_text`), likewise.
    pub render_terminal: fn(&[Row]) -> String,
    /// The answer a study ends with on stderr (the report's headline sentences), rendered by
    /// report/ from the one analysis.
    pub render_answer: fn(&Document) -> String,
    /// What was written where, for stderr, when the file's name did not say.
    pub said: Option<String>,
}

/// A copy of the results in another form (hyperfine's `--export-json`, `--export-csv`,
/// `--export-markdown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    Json,
    Csv,
    Markdown,
}

impl Destination {
    /// Writes `document` where it goes: the copies, then the file or stdout in its form,
    /// `table` rendering the table form.
    pub fn write(
        &self,
        document: &Document,
        table: impl FnOnce(&[Row]) -> String,
    ) -> anyhow::Result<()> {
        for (path, export) in &self.exports {
            match export {
                Export::Json => emit(document, Format::Json, Some(path))?,
                Export::Csv => emit(document, Format::Csv, Some(path))?,
                Export::Markdown => write_text(&(self.render_markdown)(document), Some(path))?,
            }
        }
        match (self.markdown, self.format) {
            (true, _) => write_text(&(self.render_markdown)(document), self.path.as_deref())?,
            (false, Format::Table) => write_text(&table(&document.results), self.path.as_deref())
                .context("cannot write the results")?,
            (false, format) => emit(document, format, self.path.as_deref())?,
        }
        if let Some(said) = &self.said {
            eprintln!("{said}");
        }
        Ok(())
    }
}

/// What a study produced: its rows (a failed run's among them, saying why), and whether Ctrl-C
/// ended it early.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub interrupted: bool,
}

/// The exit code of a study whose every measured run verified, but where some engine failed
/// (its server exited, the kernel refused its setup, it ran out of memory or erred) or an
/// engine asked for by name cannot run here: their rows say why, the others were measured.
/// (1 is an error, or a run that did not verify its data; 2 is clap's for bad arguments and
/// `compare --fail-if-slower`'s; 3 `load`'s unverified answers; 130/143 an interruption: every
/// code is listed in docs/exit-codes.md.)
pub const ENGINE_FAILED_EXIT: u8 = 4;

/// The chosen engines: those that can run here, and those named by `--engine` that cannot,
/// each with why.
pub struct Chosen {
    pub runnable: Vec<&'static EngineDef>,
    pub unavailable: Vec<(&'static EngineDef, String)>,
}

impl Chosen {
    /// Every engine that gets cells, in the order chosen: a named engine that cannot run here
    /// gets rows too, each saying why.
    pub fn cells(&self) -> Vec<&'static EngineDef> {
        (self.runnable.iter().copied())
            .chain(self.unavailable.iter().map(|(engine, _)| *engine))
            .collect()
    }

    /// Why `engine` cannot run here, when it was named and cannot.
    pub fn unavailable(&self, engine: &EngineDef) -> Option<String> {
        (self.unavailable.iter())
            .find(|(named, _)| named.name == engine.name)
            .map(|(_, reason)| format!("unavailable here: {reason}"))
    }
}

/// Splits `engines` by whether they can run here. The defaults that cannot are left out with
/// a line per reason naming them (unless quiet): io_uring switched off is one line, not one
/// per rung. One the user `named` is kept, so that the study measures the others, gives it rows
/// that say why, and exits `ENGINE_FAILED_EXIT`. Fails when none can run.
pub fn choose(engines: Vec<&'static EngineDef>, named: bool, say: Say) -> anyhow::Result<Chosen> {
    let mut chosen = Chosen {
        runnable: Vec::new(),
        unavailable: Vec::new(),
    };
    let mut left_out: Vec<(String, Vec<&str>)> = Vec::new();
    for engine in engines {
        match engine.availability() {
            Ok(()) => chosen.runnable.push(engine),
            Err(reason) if named => {
                eprintln!("ringside: {} cannot run here: {reason}", engine.name);
                chosen.unavailable.push((engine, reason));
            }
            Err(reason) => match left_out.iter_mut().find(|(known, _)| *known == reason) {
                Some((_, names)) => names.push(engine.name),
                None => left_out.push((reason, vec![engine.name])),
            },
        }
    }
    for (reason, names) in left_out.iter().filter(|_| !say.quiet) {
        eprintln!("ringside: left out {}: {reason}", names.join(", "));
    }
    anyhow::ensure!(
        !chosen.runnable.is_empty(),
        "none of the chosen engines can run here (`ringside engines` says why)"
    );
    Ok(chosen)
}

/// One round as a cell's measurement sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    /// The number its rows carry in `run` (attribution rounds count on after the timed ones).
    pub run: u32,
    /// Its block of `BLOCK_ROUNDS` consecutive rounds: a study that keeps something across
    /// rounds (a file study's file) makes it afresh when the block changes.
    pub block: u32,
    /// An attribution round: measured with the io_uring tracepoints on, for the causes only.
    /// A timed round never has them (they cost the engines unevenly: docs/rows.md).
    pub attribution: bool,
}

impl Round {
    /// Timed round `run`.
    pub fn timed(run: u32) -> Round {
        Round {
            run,
            block: block_of(run),
            attribution: false,
        }
    }
}

/// Attribution rounds a study adds after its timed rounds when `--ring-events` asks for the
/// io_uring tracepoints: the causes read the median of each engine's counts over them, and
/// counts of work done per operation vary far less from run to run than its time does.
pub const ATTRIBUTION_ROUNDS: u32 = 2;

/// The attribution rounds of a study that was (or was not) asked for the tracepoints.
pub fn attribution_rounds(ring_events: bool) -> u32 {
    if ring_events {
        ATTRIBUTION_ROUNDS
    } else {
        0
    }
}

/// Runs `measure(cell, round)` for every round and cell, each round in its own order
/// (`round_order`). A run that fails becomes `failed_row(cell, run, reason)` and a line on
/// stderr, and the study goes on; Ctrl-C ends it after the current cell, keeping what finished.
/// With `Rounds::Auto` each group of cells stops at a look where its questions are settled
/// (`settled`), and the study once every group has. Then, unless interrupted, `attribution`
/// more rounds with the io_uring tracepoints on (`Round::attribution`; their rows marked
/// `attribution`). Every row records
/// the looks, its block and the order's seed.
pub fn run_rounds<C: Cell>(
    rounds: Rounds,
    attribution: u32,
    workload: &str,
    cells: &[C],
    progress: &Progress,
    mut measure: impl FnMut(&C, Round) -> anyhow::Result<Row>,
    failed_row: impl Fn(&C, u32, &str) -> Row,
) -> Outcome {
    let looks = rounds.looks();
    let stages = Stages {
        first: 1,
        last: rounds.budget(),
        looks: looks.clone(),
    };
    let mut outcome = run_ordered(
        stages,
        false,
        (workload, cells, progress),
        &mut measure,
        &failed_row,
        settled,
    );
    if attribution == 0 || outcome.interrupted {
        return outcome;
    }
    let timed = outcome.rows.iter().map(|row| row.run).max().unwrap_or(0);
    progress.line(format!(
        "ringside: {attribution} attribution round(s) with the io_uring tracepoints on, for the \
         causes (their figures are not compared)"
    ));
    let stages = Stages {
        first: timed + 1,
        last: timed + attribution,
        looks,
    };
    let more = run_ordered(
        stages,
        true,
        (workload, cells, progress),
        &mut measure,
        &failed_row,
        |_| false,
    );
    outcome.rows.extend(more.rows);
    outcome.interrupted = more.interrupted;
    outcome
}

/// The rounds a study runs: `first` to `last`, numbered so, and the looks at which it may stop
/// (None: every round runs).
pub struct Stages {
    pub first: u32,
    pub last: u32,
    pub looks: Option<Vec<u32>>,
}

/// `run_rounds` over the rounds `stages` names, stopping a group of cells at a look (a round
/// count in `stages.looks`, before the last) where `settled` says the group's rows decide what
/// they were measured for. (The equal-load sweep measures its verdict's rate in rounds after
/// its screening round, and settles on its own comparisons.)
pub fn run_stages<C: Cell>(
    stages: Stages,
    workload: &str,
    cells: &[C],
    progress: &Progress,
    mut measure: impl FnMut(&C, u32) -> anyhow::Result<Row>,
    failed_row: impl Fn(&C, u32, &str) -> Row,
    settled: impl Fn(&[Row]) -> bool,
) -> Outcome {
    run_ordered(
        stages,
        false,
        (workload, cells, progress),
        &mut |cell: &C, round: Round| measure(cell, round.run),
        &failed_row,
        settled,
    )
}

/// `run_stages`, each round's measurement told its block and whether it is an `attribution`
/// round (whose rows are marked so).
fn run_ordered<C: Cell>(
    stages: Stages,
    attribution: bool,
    (workload, cells, progress): (&str, &[C], &Progress),
    measure: &mut impl FnMut(&C, Round) -> anyhow::Result<Row>,
    failed_row: &impl Fn(&C, u32, &str) -> Row,
    settled: impl Fn(&[Row]) -> bool,
) -> Outcome {
    stop_flag();
    let Stages { first, last, looks } = stages;
    let seed = fastrand::u64(..);
    let rounds = last.saturating_sub(first) + 1;
    let mut rows = Vec::with_capacity(cells.len() * rounds as usize);
    // Each row's round and cell: the document lists them so, whatever order they ran in.
    let mut places: Vec<(u32, usize)> = Vec::with_capacity(rows.capacity());
    // A line per round for a log without the bar, where the stage is rounds (not a sweep's
    // single screening run).
    let counted = looks.is_some() || last > first;
    let units = |cell: &C| progress.units(cell.planned());
    // The groups whose questions were settled at a look: their cells run no more rounds.
    let mut settled_groups: Vec<String> = Vec::new();
    let running =
        |index: &usize, settled_groups: &[String]| !settled_groups.contains(&cells[*index].group());
    for round in first..=last {
        let started = Instant::now();
        let round = Round {
            attribution,
            ..Round::timed(round)
        };
        let order: Vec<usize> = round_order(cells, workload, seed ^ u64::from(round.run))
            .into_iter()
            .filter(|index| running(index, &settled_groups))
            .collect();
        let round_units: u64 = order.iter().map(|&index| units(&cells[index])).sum();
        for &index in &order {
            let cell = &cells[index];
            if stopped() {
                return Outcome {
                    rows: in_table_order(rows, &places),
                    interrupted: true,
                };
            }
            progress.step(cell.step(round.run, last));
            let mut row = match measure(cell, round) {
                Ok(row) => row,
                // A run cut short by Ctrl-C is not a failure of its engine.
                Err(_) if stopped() => {
                    return Outcome {
                        rows: in_table_order(rows, &places),
                        interrupted: true,
                    };
                }
                Err(error) => {
                    let reason = format!("{error:#}");
                    progress.alert(format!("ringside: {}: {reason}", cell.failed(round.run)));
                    failed_row(cell, round.run, &reason)
                }
            };
            (row.looks, row.order_seed) = (looks.clone(), Some(seed));
            (row.block, row.attribution) = (Some(round.block), attribution.then_some(true));
            rows.push(row);
            places.push((round.run, index));
            progress.done_cell(cell.planned());
        }
        if counted {
            let what = format!(
                "ringside: round {} of {last}, {} runs",
                round.run,
                order.len()
            );
            progress.log_line(took_line(&what, started, progress.time_of(round_units)));
        }
        let round = round.run;
        let look = looks.as_ref().is_some_and(|looks| looks.contains(&round));
        if !look || round == last {
            continue;
        }
        // Each group's cells are compared only with one another (`Cell::group`), so a group
        // whose questions are settled stops while the others go on: its comparisons are
        // judged at this look, as if it were a study of its own.
        let mut newly: Vec<String> = Vec::new();
        for &index in &order {
            let group = cells[index].group();
            if newly.contains(&group) {
                continue;
            }
            let of_group = |(row, (_, at)): (&Row, &(u32, usize))| {
                (cells[*at].group() == group).then(|| row.clone())
            };
            let group_rows: Vec<Row> = rows.iter().zip(&places).filter_map(of_group).collect();
            if settled(&group_rows) {
                newly.push(group);
            }
        }
        if newly.is_empty() {
            continue;
        }
        let stopping: u64 = (cells.iter())
            .filter(|cell| newly.contains(&cell.group()))
            .map(units)
            .sum();
        progress.skip(u64::from(last - round) * stopping);
        settled_groups.extend(newly);
        if (0..cells.len()).all(|index| !running(&index, &settled_groups)) {
            progress.line(format!(
                "ringside: every question settled after {round} rounds (--runs auto)"
            ));
            break;
        }
        let mut groups: Vec<String> = cells.iter().map(Cell::group).collect();
        groups.sort();
        groups.dedup();
        progress.line(format!(
            "ringside: {} of {} groups of cells settled after {round} rounds (--runs auto) and \
             stop; the others go on",
            settled_groups.len(),
            groups.len()
        ));
    }
    Outcome {
        rows: in_table_order(rows, &places),
        interrupted: stopped(),
    }
}

/// `rows` sorted by round, then by their cell's place in the study's cells (the engine table's
/// order): the order a reader and a diff expect. The order they ran in is each round's
/// `order_seed`.
fn in_table_order(rows: Vec<Row>, places: &[(u32, usize)]) -> Vec<Row> {
    assert_eq!(rows.len(), places.len());
    let mut placed: Vec<((u32, usize), Row)> = places.iter().copied().zip(rows).collect();
    placed.sort_by_key(|(place, _)| *place);
    placed.into_iter().map(|(_, row)| row).collect()
}

/// What an interrupted study says it kept: the runs that finished, the one the signal cut
/// short (its row says "partial"), or plainly nothing.
fn interrupted_summary(rows: &[Row]) -> String {
    let partial = (rows.iter())
        .filter(|row| row.notes.iter().any(|note| note.starts_with(PARTIAL_NOTE)))
        .count();
    match (rows.len() - partial, partial) {
        (0, 0) => "interrupted before any run finished: nothing was measured".to_string(),
        (0, cut) => format!(
            "interrupted before any run finished; the results above cover the {} cut short \
             (marked partial)",
            if cut == 1 { "run" } else { "runs" }
        ),
        (finished, 0) => {
            format!("interrupted; the results above cover the {finished} run(s) that finished")
        }
        (finished, _) => format!(
            "interrupted; the results above cover the {finished} run(s) that finished and the \
             one cut short (marked partial)"
        ),
    }
}

/// The order of the cells in one round: the groups (depths, connection counts) in a random
/// order, and within each group a random depth-first walk of the engines' ladder (the tree of
/// `parent_of`), so every rung runs next to the engine it extends or a sibling's branch away;
/// the walk is turned round in half the rounds, so no engine always runs before the engine it
/// is compared with (the one before can leave the machine warm or busy for the next).
pub fn round_order<C: Cell>(cells: &[C], workload: &str, seed: u64) -> Vec<usize> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut groups: Vec<String> = Vec::new();
    for cell in cells {
        if !groups.contains(&cell.group()) {
            groups.push(cell.group());
        }
    }
    rng.shuffle(&mut groups);
    let mut order = Vec::with_capacity(cells.len());
    for group in &groups {
        let members: Vec<usize> = (0..cells.len())
            .filter(|&index| cells[index].group() == *group)
            .collect();
        let engines: Vec<String> = members.iter().map(|&index| cells[index].engine()).collect();
        // Each engine's parent among the group's engines: the nearest ancestor that runs here.
        let ran = |name: &str| engines.iter().any(|engine| engine == name);
        let parent = |index: usize| {
            let (parent, _) = nearest_ran(workload, &engines[index], &ran)?;
            engines.iter().position(|engine| *engine == parent)
        };
        let mut roots: Vec<usize> = (0..members.len())
            .filter(|&i| parent(i).is_none())
            .collect();
        rng.shuffle(&mut roots);
        // Depth first: a stack of the nodes still to visit, children pushed in random order.
        let mut stack: Vec<usize> = roots.into_iter().rev().collect();
        while let Some(node) = stack.pop() {
            order.push(members[node]);
            let mut children: Vec<usize> = (0..members.len())
                .filter(|&i| parent(i) == Some(node))
                .collect();
            rng.shuffle(&mut children);
            stack.extend(children.into_iter().rev());
        }
        if rng.bool() {
            let walked = order.len() - members.len();
            order[walked..].reverse();
        }
    }
    debug_assert_eq!(order.len(), cells.len(), "every cell once a round");
    order
}

/// Whether the questions the study's first screen asks are settled: the analysis its report
/// prints has decided each (different, no difference beyond the margin, or within the
/// equivalence margin), finds it unlikely to be decided by the last look
/// (`Comparison::futile`), or has no interval for it (fewer than six rounds in which both
/// measured it). The tables' other comparisons are decided at whatever look the study stopped
/// at: each look's level holds over all of them. (Waiting for every table comparison ran every
/// study of the default run to its last look: at 12 rounds each still had 2-17 unsettled, at 16
/// rounds 1-18, most of them p99 and syscalls; its screen questions were settled at 12 rounds
/// in every network study and the page cycle.)
fn settled(rows: &[Row]) -> bool {
    let budget = *LOOKS.last().expect("looks") as usize;
    let analysis = Analysis::of_rows(rows);
    let settled = |c: &Comparison| c.outcome.decided() || c.low.is_none() || c.futile(budget);
    (analysis.questions.iter()).all(|question| settled(&question.comparison))
}

/// Writes the results (partial ones too) and turns the outcome into an exit code: 130 (Ctrl-C)
/// or 143 (SIGTERM) when interrupted, 1 when a run did not verify its data,
/// `ENGINE_FAILED_EXIT` when runs failed (their rows say why), else 0. `table` renders the
/// study's own table for `Format::Table`; the environment is probed in `env_dir` (the
/// directory the study wrote to).
pub fn finish(
    outcome: Outcome,
    env_dir: &Path,
    destination: &Destination,
    say: Say,
    table: impl FnOnce(&[Row]) -> String,
) -> anyhow::Result<ExitCode> {
    let failed: Vec<&str> = outcome
        .rows
        .iter()
        .filter(|row| row.failure.is_some())
        .map(|row| row.engine.as_str())
        .collect();
    let mut failed_engines: Vec<&str> = Vec::new();
    for engine in &failed {
        if !failed_engines.contains(engine) {
            failed_engines.push(engine);
        }
    }
    let (failed_runs, failed_engines) = (failed.len(), failed_engines.join(", "));
    let unverified = (outcome.rows.iter())
        .filter(|row| !row.verified && row.failure.is_none())
        .count();
    let document = Document::new(crate::probe::environment(env_dir), outcome.rows);
    destination.write(&document, table)?;
    let (code, said) = if outcome.interrupted {
        (
            interrupted_exit_code(),
            Some(interrupted_summary(&document.results)),
        )
    } else if unverified > 0 {
        (
            1,
            Some(format!(
                "{unverified} run(s) did not verify their data; see the 'verified' column"
            )),
        )
    } else if failed_runs > 0 {
        (
            ENGINE_FAILED_EXIT,
            Some(format!(
                "{failed_runs} run(s) failed ({failed_engines}); each has a row that says why, \
                 the others were measured"
            )),
        )
    } else {
        (0, None)
    };
    if let Some(said) = said {
        eprintln!("ringside: {said}");
    }
    // The study ends with its answer and where its results are, as `run` does.
    if !say.quiet {
        eprint!("{}", (destination.render_answer)(&document));
        if let Some(path) = &destination.path {
            eprintln!("ringside: the results: {}", path.display());
        }
    }
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file-write engine at a depth.
    struct Named(&'static str, u32);

    impl Cell for Named {
        fn step(&self, run: u32, _runs: u32) -> String {
            format!("{} {run}", self.0)
        }
        fn failed(&self, run: u32) -> String {
            format!("{} {run} failed", self.0)
        }
        fn engine(&self) -> String {
            self.0.to_string()
        }
        fn group(&self) -> String {
            self.1.to_string()
        }
    }

    /// Goal: every round runs every cell once, groups kept together, each rung next to the
    /// engine it extends (or a sibling's branch away), before it in some rounds and after it in
    /// others, and the order varies from round to round.
    #[test]
    fn a_round_runs_every_cell_once_each_rung_after_its_parent() {
        let names = [
            "blocking",
            "uring-single",
            "uring-batch",
            "uring-ring",
            "uring-fixed",
            "uring-defer",
            "uring-sqpoll",
            "blocking#2",
        ];
        let cells: Vec<Named> = [1, 32]
            .iter()
            .flat_map(|&depth| names.iter().map(move |name| Named(name, depth)))
            .collect();
        let mut orders = Vec::new();
        let mut before = 0;
        for seed in 0..50 {
            let order = round_order(&cells, "fs-write", seed);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..cells.len()).collect::<Vec<_>>());
            // The two depths' cells each run together.
            let depths: Vec<u32> = order.iter().map(|&i| cells[i].1).collect();
            assert_eq!(
                depths.windows(2).filter(|w| w[0] != w[1]).count(),
                1,
                "{depths:?}"
            );
            let at =
                |name: &str| (order.iter()).position(|&i| cells[i].0 == name && cells[i].1 == 1);
            let (parent, rung) = (at("blocking").unwrap(), at("blocking#2").unwrap());
            before += usize::from(parent < rung);
            // uring-defer and uring-sqpoll both extend uring-fixed: one of them is next to it.
            let fixed = at("uring-fixed").unwrap() as i64;
            let nearest = ["uring-defer", "uring-sqpoll"]
                .iter()
                .map(|name| (at(name).unwrap() as i64 - fixed).abs())
                .min();
            assert_eq!(nearest, Some(1), "{order:?}");
            orders.push(order);
        }
        assert!(
            (10..=40).contains(&before),
            "blocking ran first in {before} of 50"
        );
        orders.sort();
        orders.dedup();
        assert!(
            orders.len() > 25,
            "only {} orders in 50 rounds",
            orders.len()
        );
    }

    /// `run_rounds` over fs-write cells `engines`, each at its MB/s times the machine's speed in
    /// that round and its own move (`noise`, a share); how many rounds it ran.
    fn auto_rounds(engines: &[(&'static str, f64)], noise: f64, seed: u64) -> u32 {
        let cells: Vec<(&'static str, u32, f64)> = (engines.iter())
            .map(|&(name, mb_per_sec)| (name, 1, mb_per_sec))
            .collect();
        auto_rounds_by_depth(&cells, noise, seed)[&1]
    }

    /// `auto_rounds` over cells at queue depths (a group each, a study each in the analysis):
    /// how many rounds each depth ran.
    fn auto_rounds_by_depth(
        engines: &[(&'static str, u32, f64)],
        noise: f64,
        seed: u64,
    ) -> std::collections::BTreeMap<u32, u32> {
        let cells: Vec<Named> = (engines.iter())
            .map(|&(name, depth, _)| Named(name, depth))
            .collect();
        let measure = |cell: &Named, run: u32| -> anyhow::Result<Row> {
            let (index, (_, _, mb_per_sec)) = (engines.iter().enumerate())
                .find(|(_, (name, depth, _))| *name == cell.0 && *depth == cell.1)
                .unwrap();
            let machine = 1.0 + 0.2 * (f64::from(run) * 1.3).sin();
            // Drawn from the engine and round alone: the rounds' random order changes nothing.
            let mut rng =
                fastrand::Rng::with_seed(seed * 1_000_003 + u64::from(run) * 64 + index as u64);
            let own = 1.0 + noise * (rng.f64() * 2.0 - 1.0);
            let mut params = serde_json::Map::new();
            params.insert("depth".into(), cell.1.into());
            Ok(Row {
                workload: "fs-write".into(),
                engine: cell.0.into(),
                params,
                run,
                ops: 1000,
                bytes_per_sec: mb_per_sec * machine * own * 1e6,
                verified: true,
                ..Row::default()
            })
        };
        let failed = |_: &Named, _: u32, _: &str| Row::default();
        let progress = Progress::hidden();
        let measure = |cell: &Named, round: Round| measure(cell, round.run);
        let outcome = run_rounds(
            Rounds::Auto,
            0,
            "fs-write",
            &cells,
            &progress,
            measure,
            failed,
        );
        assert!(outcome
            .rows
            .iter()
            .all(|row| row.looks.as_deref() == Some(&LOOKS[..])));
        let mut rounds = std::collections::BTreeMap::new();
        for row in &outcome.rows {
            let depth = row.params["depth"].as_u64().unwrap() as u32;
            let ran = rounds.entry(depth).or_insert(0);
            *ran = row.run.max(*ran);
        }
        for &(_, depth, _) in engines {
            let rows = (outcome.rows.iter())
                .filter(|row| row.params["depth"] == depth)
                .count();
            let cells = engines.iter().filter(|cell| cell.1 == depth).count();
            assert_eq!(
                rows,
                rounds[&depth] as usize * cells,
                "every round of the depth"
            );
        }
        rounds
    }

    /// Goal: a group of cells whose questions are settled stops at the look, while a group still
    /// undecided goes on: one noisy group does not make the others run to the budget.
    #[test]
    fn a_settled_group_stops_while_the_others_go_on() {
        let cells = [
            ("blocking", 1, 1000.0),
            ("uring-single", 1, 2000.0),
            ("blocking", 32, 1000.0),
            ("uring-single", 32, 1070.0),
        ];
        let runs: Vec<std::collections::BTreeMap<u32, u32>> = (4..10)
            .map(|seed| auto_rounds_by_depth(&cells, 0.08, seed))
            .collect();
        assert!(
            runs.iter().all(|rounds| rounds[&1] == 12),
            "a twofold difference stops at the first look: {runs:?}"
        );
        assert!(
            runs.iter().any(|rounds| rounds[&32] > 12),
            "the close call goes on: {runs:?}"
        );
    }

    /// Goal: `--runs auto` stops at its first look when every comparison is decided, stops early
    /// when more rounds could not decide one (futility), and otherwise runs to its budget.
    #[test]
    fn auto_rounds_stop_when_decided_at_futility_and_at_the_budget() {
        let twice = [("blocking", 1000.0), ("uring-single", 2000.0)];
        assert_eq!(
            auto_rounds(&twice, 0.01, 1),
            12,
            "a twofold difference decides at once"
        );
        let same = [("blocking", 1000.0), ("blocking#2", 1000.0)];
        assert_eq!(
            auto_rounds(&same, 0.005, 2),
            12,
            "an A/A pair is equivalent at once"
        );
        // Moves of ±40% within a round hide a 3% margin for ever: an identical pair can be
        // neither told apart nor shown within 3% in 24 rounds, so it stops at the first look.
        let hidden = [("blocking", 1000.0), ("blocking#2", 1000.0)];
        let rounds: Vec<u32> = (10..20)
            .map(|seed| auto_rounds(&hidden, 0.4, seed))
            .collect();
        let first = rounds.iter().filter(|&&n| n == 12).count();
        assert!(
            first >= 8,
            "futile pairs stop at the first look: {rounds:?}"
        );
        // 7% apart with ±8% moves: at 12 rounds the interval still reaches into the margin, but
        // more rounds could clear it.
        let close = [("blocking", 1000.0), ("uring-single", 1070.0)];
        let rounds: Vec<u32> = (4..10)
            .map(|seed| auto_rounds(&close, 0.08, seed))
            .collect();
        assert!(
            rounds.iter().any(|&n| n > 12),
            "a close call takes more rounds: {rounds:?}"
        );
        assert!(
            rounds.iter().all(|&n| n <= 24),
            "never past the budget: {rounds:?}"
        );
    }

    /// Goal: rows carry their block; attribution rounds follow the timed ones, numbered on,
    /// their measurement told so and their rows marked; the timed rounds never are.
    #[test]
    fn attribution_rounds_follow_the_timed_ones_marked() {
        let cells = [Named("blocking", 1), Named("uring-single", 1)];
        let mut told = Vec::new();
        let measure = |cell: &Named, round: Round| -> anyhow::Result<Row> {
            told.push((round.run, round.block, round.attribution));
            Ok(Row {
                workload: "fs-write".into(),
                engine: cell.0.into(),
                run: round.run,
                verified: true,
                ..Row::default()
            })
        };
        let failed = |_: &Named, _: u32, _: &str| Row::default();
        let progress = Progress::hidden();
        let outcome = run_rounds(
            Rounds::Exactly(5),
            2,
            "fs-write",
            &cells,
            &progress,
            measure,
            failed,
        );
        assert_eq!(outcome.rows.len(), 14);
        for row in &outcome.rows {
            assert_eq!(row.block, Some(row.block()));
            assert_eq!(row.block(), (row.run - 1) / 4 + 1);
            assert_eq!(row.is_attribution(), row.run > 5, "run {}", row.run);
        }
        let attributed: Vec<(u32, u32, bool)> = told.iter().filter(|t| t.2).copied().collect();
        assert_eq!(
            attributed,
            [(6, 2, true), (6, 2, true), (7, 2, true), (7, 2, true)]
        );
        assert!(told[..10].iter().all(|&(run, _, on)| run <= 5 && !on));
    }

    #[test]
    fn runs_take_auto_or_a_count() {
        assert_eq!(Rounds::parse("auto"), Ok(Rounds::Auto));
        assert_eq!(Rounds::parse("7"), Ok(Rounds::Exactly(7)));
        assert!(Rounds::parse("0").unwrap_err().contains("from 1 to 1000"));
        assert!(Rounds::parse("many").is_err());
        // Reserved up front: 4294967295 rounds aborted the allocation.
        assert!(Rounds::parse("1001").is_err() && Rounds::parse("4294967295").is_err());
        assert_eq!(Rounds::Auto.budget(), 24);
    }
}
