//! `ringside compare A B`: two results documents side by side. Two documents are independent
//! samples, and the machine itself may have moved between them (a cloud VM's speed drifts by
//! ±25% for minutes), so every engine both measured at the same parameters is compared twice:
//! - **absolutely**: its rounds in A against its rounds in B, per metric (`Comparison`'s two
//!   samples: the median of all B/A ratios, an exact rank interval);
//! - **relatively**: its ratio to its study's baseline, round by round within each document,
//!   A's ratios against B's. The machine moves an engine and its baseline together, so this is
//!   what the engine itself changed.
//!
//! Both use the three outcomes (different, equivalent, undecided) against the metric's margin,
//! each comparison decided at 95%. Where the baseline moved absolutely and an engine's
//! ratio to it did not, the change is the machine's, and compare says so instead of calling the
//! engine faster. Documents from different kernels or with different parameters are refused,
//! because the comparison would then measure that difference rather than the change under
//! test; `--force` compares them anyway, loudly. `--fail-if-slower PCT` turns a throughput
//! decided slower by more than PCT into exit code 2 for CI.

use std::path::PathBuf;
use std::process::ExitCode;

use comfy_table::{presets, Table};
use serde::Serialize;
use serde_json::Value;

use crate::analysis::numbers::per_op;
use crate::model::comparison::{decide, Comparison as Decided, Family};
use crate::model::study::{op_noun, studies, Study};
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::output::Format;
use crate::report::load::load_document;
use crate::row::Document;
use crate::stats::median;
use crate::stats::rank::Outcome;

/// Exit code when `--fail-if-slower` caught a regression (1 stays "could not compare").
pub const EXIT_SLOWER: u8 = 2;

/// What to compare, and how strictly.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The baseline: a results JSON or a results directory.
    pub base: PathBuf,
    /// The candidate compared with the baseline.
    pub new: PathBuf,
    /// Compare even when the kernels or the parameters differ (with a warning).
    pub force: bool,
    /// Exit with `EXIT_SLOWER` when any throughput was decided slower by more than this percent.
    pub fail_if_slower: Option<f64>,
    /// The table for people, or one row per engine and metric for scripts.
    pub format: Format,
}

/// One metric of one engine in both documents.
#[derive(Clone, Debug)]
pub struct Change {
    /// The study's title: its workload and, when it has siblings, the parameters that differ.
    pub study: String,
    pub engine: String,
    pub params: String,
    /// The metric with its unit, e.g. "MB/s" or "syscalls/write".
    pub metric: String,
    /// The medians of the rounds in A and in B.
    pub base: f64,
    pub new: f64,
    /// B over A, decided.
    pub absolute: Decided,
    /// B's ratio to its study's baseline over A's, decided; None for the baseline itself.
    pub relative: Option<Decided>,
    /// The study's baseline moved absolutely in this metric (the machine, or the baseline).
    pub baseline_moved: bool,
}

impl Change {
    pub fn ratio(&self) -> f64 {
        self.absolute.ratio
    }

    /// The one-word reading of the change: the relative comparison's where there is one (what
    /// the engine changed), the absolute one's for the baseline; "the machine" where the
    /// baseline moved and the engine moved with it.
    pub fn verdict(&self) -> String {
        match &self.relative {
            Some(relative) if relative.is_different() => relative.word().to_string(),
            Some(_) if self.baseline_moved && self.absolute.is_different() => {
                format!("{} with the machine", self.absolute.word())
            }
            Some(relative) => relative.word().to_string(),
            None if self.absolute.is_different() && self.baseline_moved => {
                format!("{} (the baseline: the machine?)", self.absolute.word())
            }
            None => self.absolute.word().to_string(),
        }
    }

    /// True when throughput was decided slower by more than `percent`: relative to the
    /// baseline where there is one, else absolutely.
    pub fn slower_than(&self, percent: f64) -> bool {
        let decided = self.relative.as_ref().unwrap_or(&self.absolute);
        decided.metric == Metric::Throughput
            && decided.is_different()
            && decided.ratio < 1.0 - percent / 100.0
    }
}

pub fn run(args: &Comparison) -> anyhow::Result<ExitCode> {
    let base = load_document(&args.base)?;
    let new = load_document(&args.new)?;
    for problem in comparability(&base, &new) {
        anyhow::ensure!(args.force, "{problem}; pass --force to compare them anyway");
        eprintln!("ringside: WARNING: {problem}; comparing anyway because of --force");
    }
    let changes = changes(&base, &new, args.force);
    anyhow::ensure!(
        !changes.is_empty(),
        "the two documents have no engine measured at the same workload and parameters"
    );
    match args.format {
        Format::Table => println!("{}", render(&changes)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&change_rows(&changes))?),
        Format::Csv => print!("{}", csv(&change_rows(&changes))?),
    }
    let Some(percent) = args.fail_if_slower else {
        return Ok(ExitCode::SUCCESS);
    };
    let slower: Vec<&Change> = changes.iter().filter(|c| c.slower_than(percent)).collect();
    for change in &slower {
        let decided = change.relative.as_ref().unwrap_or(&change.absolute);
        eprintln!(
            "ringside: {} {} is {:.0}% slower ({}), more than --fail-if-slower {percent}%",
            change.study,
            change.engine,
            (1.0 - decided.ratio) * 100.0,
            decided.interval_text()
        );
    }
    Ok(if slower.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SLOWER)
    })
}

/// Why the documents should not be compared: a different kernel, or an engine both measured
/// only at different parameters. Empty when they are comparable.
pub fn comparability(base: &Document, new: &Document) -> Vec<String> {
    let mut problems = Vec::new();
    let kernel = |document: &Document| document.env.pointer("/host/kernel_release").cloned();
    let (kernel_base, kernel_new) = (kernel(base), kernel(new));
    if kernel_base != kernel_new {
        let text =
            |value: Option<Value>| value.map_or("an unknown kernel".into(), |v| v.to_string());
        problems.push(format!(
            "A ran on kernel {} and B on kernel {}, so the comparison would measure the kernels",
            text(kernel_base),
            text(kernel_new)
        ));
    }
    let (studies_base, studies_new) = (studies(&base.results), studies(&new.results));
    for study in &studies_base {
        for engine in &study.engines {
            if find(&studies_new, study, &engine.engine, false).is_some() {
                continue;
            }
            if let Some((other, _)) = find(&studies_new, study, &engine.engine, true) {
                problems.push(format!(
                    "A and B measured {} {} with different parameters ({} vs {})",
                    study.workload,
                    engine.engine,
                    study.params_text(),
                    other.params_text()
                ));
            }
        }
    }
    problems
}

/// The study and engine in `studies` that matches `study`'s engine: at the same parameters, or
/// (when `loose`) at any parameters of the same workload.
fn find<'a>(
    studies: &'a [Study],
    study: &Study,
    engine: &str,
    loose: bool,
) -> Option<(&'a Study, &'a EngineSummary)> {
    studies
        .iter()
        .filter(|other| other.workload == study.workload)
        .filter(|other| loose || other.params == study.params)
        .find_map(|other| Some((other, other.engines.iter().find(|e| e.engine == engine)?)))
}

/// Every metric of every engine that both documents measured, decided as one family.
pub fn changes(base: &Document, new: &Document, force: bool) -> Vec<Change> {
    let (studies_base, studies_new) = (studies(&base.results), studies(&new.results));
    let mut changes = Vec::new();
    for study in &studies_base {
        for engine in &study.engines {
            let matched = find(&studies_new, study, &engine.engine, false).or_else(|| {
                force
                    .then(|| find(&studies_new, study, &engine.engine, true))
                    .flatten()
            });
            if let Some((other_study, other)) = matched {
                changes.extend(metric_changes(study, other_study, engine, other));
            }
        }
    }
    decide_all(&mut changes);
    changes
}

/// Decides every absolute and relative comparison, each at 95%, then notes where
/// each study's baseline moved.
fn decide_all(changes: &mut [Change]) {
    let mut family: Vec<Decided> = Vec::new();
    for change in changes.iter() {
        family.push(change.absolute.clone());
        family.extend(change.relative.clone());
    }
    decide(&mut family, Family::Each);
    let mut decided = family.into_iter();
    for change in changes.iter_mut() {
        change.absolute = decided.next().expect("one decision each");
        if change.relative.is_some() {
            change.relative = decided.next();
        }
    }
    for index in 0..changes.len() {
        let (study, metric) = (&changes[index].study, &changes[index].metric);
        let moved = changes.iter().any(|c| {
            c.study == *study
                && c.metric == *metric
                && c.relative.is_none()
                && c.absolute.is_different()
        });
        changes[index].baseline_moved = moved;
    }
}

fn metric_changes(
    study: &Study,
    other_study: &Study,
    base: &EngineSummary,
    new: &EngineSummary,
) -> Vec<Change> {
    let noun = op_noun(&study.workload);
    let baselines = (baseline(study), baseline(other_study));
    Metric::ALL
        .iter()
        .filter_map(|&metric| {
            let before = logs(base, metric);
            let after = logs(new, metric);
            if before.is_empty() || after.is_empty() {
                return None;
            }
            let name = match metric {
                Metric::Throughput => study.unit(),
                Metric::SyscallsPerOp => format!("syscalls/{noun}"),
                Metric::CpuPerOp => format!("CPU µs/{noun}"),
                Metric::P99 => "p99 µs".to_string(),
            };
            let absolute =
                Decided::two_samples(&base.engine, &base.engine, metric, &before, &after);
            let relative = match baselines {
                (Some(a), Some(b)) if a.engine != base.engine && a.engine == b.engine => {
                    let (before, after) = (
                        relative_logs(base, a, metric),
                        relative_logs(new, b, metric),
                    );
                    (!before.is_empty() && !after.is_empty()).then(|| {
                        Decided::two_samples(&base.engine, &a.engine, metric, &before, &after)
                    })
                }
                _ => None,
            };
            Some(Change {
                study: study.title.clone(),
                engine: base.engine.clone(),
                params: study.params_text(),
                metric: name,
                base: median(&before).exp(),
                new: median(&after).exp(),
                absolute,
                relative,
                baseline_moved: false,
            })
        })
        .collect()
}

/// The study's baseline: its first verified engine ringside measured.
fn baseline(study: &Study) -> Option<&EngineSummary> {
    study.measured().into_iter().find(|engine| engine.verified)
}

/// The log of each round's value of `metric`.
fn logs(engine: &EngineSummary, metric: Metric) -> Vec<f64> {
    (engine.rounds.iter())
        .filter_map(|round| round.value(metric))
        .filter(|value| *value > 0.0 && value.is_finite())
        .map(f64::ln)
        .collect()
}

/// The log of each round's ratio of `engine` to `baseline` in `metric`, paired by round.
fn relative_logs(engine: &EngineSummary, baseline: &EngineSummary, metric: Metric) -> Vec<f64> {
    (engine.rounds.iter())
        .filter_map(|round| {
            let other = baseline.rounds.iter().find(|r| r.run == round.run)?;
            let (a, b) = (round.value(metric)?, other.value(metric)?);
            (a > 0.0 && b > 0.0).then(|| (a / b).ln())
        })
        .filter(|value| value.is_finite())
        .collect()
}

/// One change flattened for scripts: JSON and CSV share its keys.
#[derive(Clone, Debug, Serialize)]
pub struct ChangeRow {
    pub study: String,
    pub engine: String,
    pub params: String,
    pub metric: Metric,
    pub unit: String,
    /// The medians of the rounds in A and in B.
    pub base: f64,
    pub new: f64,
    /// B over A, its interval and outcome.
    pub ratio: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub outcome: Outcome,
    /// B's ratio to the study's baseline over A's; empty for the baseline itself.
    pub relative_ratio: Option<f64>,
    pub relative_low: Option<f64>,
    pub relative_high: Option<f64>,
    pub relative_outcome: Option<Outcome>,
    pub baseline_moved: bool,
    /// The word the table prints: faster, equivalent, undecided, "faster with the machine", …
    pub verdict: String,
}

fn change_rows(changes: &[Change]) -> Vec<ChangeRow> {
    let row = |change: &Change| ChangeRow {
        study: change.study.clone(),
        engine: change.engine.clone(),
        params: change.params.clone(),
        metric: change.absolute.metric,
        unit: change.metric.clone(),
        base: change.base,
        new: change.new,
        ratio: change.absolute.ratio,
        low: change.absolute.low,
        high: change.absolute.high,
        outcome: change.absolute.outcome,
        relative_ratio: change.relative.as_ref().map(|r| r.ratio),
        relative_low: change.relative.as_ref().and_then(|r| r.low),
        relative_high: change.relative.as_ref().and_then(|r| r.high),
        relative_outcome: change.relative.as_ref().map(|r| r.outcome),
        baseline_moved: change.baseline_moved,
        verdict: change.verdict(),
    };
    changes.iter().map(row).collect()
}

fn csv(rows: &[ChangeRow]) -> anyhow::Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    Ok(String::from_utf8(writer.into_inner()?)?)
}

fn render(changes: &[Change]) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "study",
        "engine",
        "metric",
        "A",
        "B",
        "B/A",
        "÷ baseline, B/A",
        "verdict",
    ]);
    for change in changes {
        let relative = change
            .relative
            .as_ref()
            .map_or("—".to_string(), Decided::ratio_text);
        table.add_row([
            change.study.clone(),
            change.engine.clone(),
            change.metric.clone(),
            per_op(change.base),
            per_op(change.new),
            change.absolute.ratio_text(),
            relative,
            change.verdict(),
        ]);
    }
    let mut studies: Vec<String> = Vec::new();
    for change in changes {
        let line = format!("{}: {}", change.study, change.params);
        if !studies.contains(&line) {
            studies.push(line);
        }
    }
    let relative: Vec<&Decided> = changes.iter().filter_map(|c| c.relative.as_ref()).collect();
    let different = relative
        .iter()
        .filter(|c| c.outcome == Outcome::Different)
        .count();
    let moved: Vec<&str> = (changes.iter())
        .filter(|c| c.relative.is_none() && c.absolute.is_different())
        .map(|c| c.study.as_str())
        .collect();
    let mut summary = format!(
        "{different} of {} comparisons of an engine with its study's baseline differ between \
         A and B (each decided at 95%; margins: throughput and CPU 3%, syscalls 1%, p99 \
         15%).",
        relative.len()
    );
    if !moved.is_empty() {
        let mut unique = moved.clone();
        unique.dedup();
        summary.push_str(&format!(
            " The baseline itself moved in {}: a change every engine there shares is the \
             machine's, not the engines'.",
            unique.join(", ")
        ));
    }
    format!("{}\n{table}\n{summary}", studies.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::row;
    use crate::row::params::{Param, Params};
    use serde_json::json;

    fn document(kernel: &str, rows: Vec<crate::row::Row>) -> Document {
        let mut document = Document::new(json!({"host": {"kernel_release": kernel}}), rows);
        document.command = "test".into();
        document
    }

    /// Eight rounds of blocking and uring-ring at `scale` × their MB/s (the machine), uring-ring
    /// at `ring` × blocking.
    fn rounds(scale: f64, ring: f64) -> Vec<crate::row::Row> {
        (1..=8)
            .flat_map(|run| {
                let wobble = 1.0 + 0.01 * f64::from(run).sin();
                [
                    row("blocking", run, 1000.0 * scale * wobble, 1000),
                    row("uring-ring", run, 1000.0 * scale * ring * wobble, 10),
                ]
            })
            .collect()
    }

    #[test]
    fn an_engine_that_changed_against_its_baseline_is_called_so() {
        let base = document("6.1", rounds(1.0, 1.0));
        let new = document("6.1", rounds(1.0, 0.7));
        assert!(comparability(&base, &new).is_empty());
        let changes = changes(&base, &new, false);
        let ring = (changes.iter())
            .find(|c| c.engine == "uring-ring" && c.metric == "MB/s")
            .unwrap();
        assert_eq!(ring.verdict(), "slower");
        assert!(ring.slower_than(10.0) && !ring.slower_than(40.0));
        let rows = change_rows(&changes);
        let ring_row = (rows.iter())
            .find(|r| r.engine == "uring-ring" && r.metric == Metric::Throughput)
            .unwrap();
        assert_eq!(ring_row.relative_outcome, Some(Outcome::Different));
        assert_eq!(ring_row.verdict, "slower");
        let text = csv(&rows).unwrap();
        assert_eq!(text.lines().count(), rows.len() + 1, "{text}");
        assert!(text.starts_with("study,engine,params,metric,unit,base,new,ratio,"));
        let blocking = (changes.iter())
            .find(|c| c.engine == "blocking" && c.metric == "MB/s")
            .unwrap();
        assert_eq!(blocking.verdict(), "no difference beyond 3%");
    }

    #[test]
    fn a_machine_that_moved_everything_is_named_not_the_engines() {
        let base = document("6.1", rounds(1.0, 1.5));
        let new = document("6.1", rounds(1.9, 1.5));
        let changes = changes(&base, &new, false);
        let ring = (changes.iter())
            .find(|c| c.engine == "uring-ring" && c.metric == "MB/s")
            .unwrap();
        assert_eq!(ring.verdict(), "faster with the machine");
        assert!(!ring.slower_than(1.0));
        assert_eq!(
            ring.relative.as_ref().unwrap().word(),
            "no difference beyond 3%"
        );
        assert!(render(&changes).contains("The baseline itself moved in fs-write"));
    }

    #[test]
    fn different_kernels_and_parameters_are_named() {
        let base = document("6.1", vec![row("blocking", 1, 1000.0, 1000)]);
        let mut other = row("blocking", 1, 1000.0, 1000);
        other.params.put(Param::Size, "1G");
        let new = document("6.2", vec![other]);
        let problems = comparability(&base, &new);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("kernel \"6.1\" and B on kernel \"6.2\""));
        assert!(problems[1].contains("size=64M vs size=1G"));
        assert!(changes(&base, &new, false).is_empty());
        assert_eq!(changes(&base, &new, true).len(), 3);
    }
}
