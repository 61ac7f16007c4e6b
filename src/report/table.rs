//! The cells of a study's table, shared by the Markdown and the HTML report so both show the
//! same numbers: engines as rows (controls marked), the headline's median and min–max, the
//! ladder's step over the engine each extends (named in the cell), syscalls and CPU per operation, and latency when measured.

use crate::analysis::numbers::{per_op, range, ratio, throughput};
use crate::model::ladder::{step_of, steps};
use crate::model::study::{op_noun, Study};
use crate::model::summary::EngineSummary;
use crate::report::threads::{Sweep, Swept};
use crate::stats::rank::Outcome;

/// A header and one line of cells per engine.
#[derive(Clone, Debug)]
pub struct Cells {
    pub header: Vec<String>,
    pub lines: Vec<Vec<String>>,
}

/// How a table marks a comparison's outcome: ★ a decided difference, = equivalent within the
/// margin, ~ undecided (benchstat's mark for "no significant change").
pub fn mark(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Different => "★",
        Outcome::Equivalent => "=",
        Outcome::Within => "≈",
        Outcome::Undecided => "~",
    }
}

/// A unit as a table header says it ("msg/s" for "messages/s").
fn short_unit(unit: &str) -> String {
    unit.replace("messages/s", "msg/s")
        .replace("requests/s", "req/s")
}

/// An operation's noun as a table header says it.
fn short_noun(noun: &str) -> &str {
    match noun {
        "message" => "msg",
        "request" => "req",
        other => other,
    }
}

/// The legend under a table with marked comparisons.
pub const MARKS_LEGEND: &str = "★ decided different (beyond 3%; syscalls 1%, p99 15%), = no \
     difference beyond that margin, ≈ within 10% but not shown within 3%, ~ undecided; each \
     comparison paired round by round, its interval at 95% (the first screen's at its own level: \
     see how to read this report).";

impl Cells {
    /// The table without the columns headed `headers`.
    pub fn drop_columns(&mut self, headers: &[&str]) {
        let keep: Vec<bool> = (self.header.iter())
            .map(|header| !headers.contains(&header.as_str()))
            .collect();
        let filter = |cells: &mut Vec<String>| {
            let mut index = 0;
            cells.retain(|_| {
                index += 1;
                keep.get(index - 1).copied().unwrap_or(true)
            });
        };
        filter(&mut self.header);
        self.lines.iter_mut().for_each(filter);
    }
}

pub fn cells(study: &Study) -> Cells {
    let unit = study.unit();
    let noun = op_noun(&study.workload);
    // Short headers, so the table fits a terminal of 100 columns (`markdown::TERMINAL_COLUMNS`).
    let unit = short_unit(&unit);
    let noun = short_noun(noun);
    let mut header = vec![
        "engine".to_string(),
        "rounds".to_string(),
        format!("{unit} median"),
        "min–max".to_string(),
        "× parent".to_string(),
        format!("sys/{noun}"),
        format!("CPU µs/{noun}"),
    ];
    if study.has_latency() {
        header.extend(["p50 µs".to_string(), "p99 µs".to_string()]);
    }
    header.push("verified".to_string());
    let steps = steps(study);
    let lines = study
        .engines
        .iter()
        .map(|engine| {
            let step = match step_of(&steps, &engine.engine) {
                None => "—".to_string(),
                Some(Ok(rung)) => format!(
                    "{} {} {}",
                    ratio(rung.ratio()),
                    mark(rung.comparison.outcome),
                    rung.parent_label()
                ),
                Some(Err(none)) => format!("— ({} {})", none.parent, none.why),
            };
            line(study, engine, step)
        })
        .collect();
    Cells { header, lines }
}

fn line(study: &Study, engine: &EngineSummary, step: String) -> Vec<String> {
    let name = if engine.control {
        format!("{} (control)", engine.engine)
    } else {
        engine.engine.clone()
    };
    let syscalls = match &engine.syscalls_per_op {
        Some(spread) if engine.syscalls_self_counted => format!("{} (self)", per_op(spread.median)),
        Some(spread) => per_op(spread.median),
        None => "—".to_string(),
    };
    let mut cells = vec![
        name,
        engine.runs.to_string(),
        throughput(study.headline, engine.throughput.median),
        range(study.headline, &engine.throughput),
        step,
        syscalls,
        per_op(engine.cpu_us_per_op.median),
    ];
    if study.has_latency() {
        for index in [0, 2] {
            let value = engine.latency_us.as_ref().map(|us| per_op(us[index]));
            cells.push(value.unwrap_or_else(|| "—".to_string()));
        }
    }
    cells.push(
        match (engine.control, engine.verified) {
            (true, _) => "n/a",
            (false, true) => "yes",
            (false, false) if engine.failure.is_some() => "FAILED",
            (false, false) => "NO",
        }
        .to_string(),
    );
    cells
}

/// A server-thread sweep's cells: per engine and count, the headline's median and min–max,
/// × the engine's own first count, CPU per operation, and the CPUs the load shared.
pub fn sweep_cells(sweep: &Sweep) -> Cells {
    let (_, first) = sweep.points[0];
    let (unit, noun) = (sweep.unit(), op_noun(&first.workload));
    let header = vec![
        "engine".to_string(),
        sweep.noun().to_string(),
        format!("{unit} median"),
        format!("{unit} min–max"),
        match sweep.swept {
            Swept::ServerThreads => "× its fewest threads".to_string(),
            Swept::Size => "× its smallest size".to_string(),
            Swept::Work => "× its least work".to_string(),
            Swept::Depth => "× its lowest depth".to_string(),
        },
        format!("CPU µs/{noun}"),
        "CPUs shared with the load".to_string(),
    ];
    let mut lines = Vec::new();
    for engine in sweep.engines() {
        let mut base = None;
        for (threads, summary) in sweep.runs_of(engine) {
            let base = *base.get_or_insert(summary.throughput.median);
            lines.push(vec![
                engine.to_string(),
                sweep.point_text(threads),
                throughput(first.headline, summary.throughput.median),
                range(first.headline, &summary.throughput),
                ratio(summary.throughput.median / base),
                per_op(summary.cpu_us_per_op.median),
                sweep.shared_cpus(threads).unwrap_or("none").to_string(),
            ]);
        }
    }
    Cells { header, lines }
}

/// An equal-load comparison's table: per offered rate, each engine's achieved rate, server CPU
/// per operation (median and the runs' range), server CPU share, p50 and p99, and whether it
/// held the rate.
pub fn equal_load_cells(load: &crate::report::equal_load::EqualLoad) -> Cells {
    let header = [
        "offered/s",
        "engine",
        "achieved/s",
        "server CPU µs/op",
        "range",
        "server CPU",
        "p50 µs",
        "p99 µs",
        "held",
        "runs",
    ];
    let mut rates: Vec<f64> = (load.engines.iter())
        .flat_map(|(_, points)| points.iter().map(|p| p.offered))
        .collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let mut lines = Vec::new();
    for rate in rates {
        for (engine, points) in &load.engines {
            let Some(p) = points.iter().find(|p| p.offered == rate) else {
                continue;
            };
            let cpu = p.cpu_us_per_op;
            lines.push(vec![
                format!("{rate:.0}"),
                engine.clone(),
                format!("{:.0}", p.achieved),
                format!("{:.2}", cpu.median),
                format!("{:.2}–{:.2}", cpu.min, cpu.max),
                format!("{:.0}%", p.cpu_utilisation * 100.0),
                format!("{:.0}", p.p50_us),
                format!("{:.0}", p.p99_us),
                if p.held { "yes" } else { "no" }.to_string(),
                p.runs.to_string(),
            ]);
        }
    }
    Cells {
        header: header.map(String::from).to_vec(),
        lines,
    }
}
