//! `ringside compare A B`: two results documents side by side. For every engine both measured
//! at the same parameters, each metric's ratio B/A with both sides' run ranges; where the ranges
//! overlap the change is "within noise". Documents from different kernels or with different
//! parameters are refused, because the comparison would then measure that difference rather
//! than the change under test; `--force` compares them anyway, loudly. `--fail-if-slower PCT`
//! turns a throughput drop beyond PCT, outside the noise, into exit code 2 for CI.

use std::path::PathBuf;
use std::process::ExitCode;

use comfy_table::{presets, Table};
use serde_json::Value;

use crate::model::study::{studies, EngineSummary, Study};
use crate::report::load::load_document;
use crate::report::numbers::{per_op, ratio};
use crate::row::Document;
use crate::stats::Spread;

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
    /// Exit with `EXIT_SLOWER` when any throughput dropped by more than this percent, outside
    /// noise.
    pub fail_if_slower: Option<f64>,
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
    pub base: Spread,
    pub new: Spread,
    /// True for throughput (higher is better); false for costs (lower is better).
    pub is_throughput: bool,
}

impl Change {
    pub fn ratio(&self) -> f64 {
        if self.base.median == 0.0 {
            return f64::NAN;
        }
        self.new.median / self.base.median
    }

    pub fn within_noise(&self) -> bool {
        self.base.overlaps(&self.new)
    }

    /// The one-word reading of the change.
    pub fn verdict(&self) -> &'static str {
        match (self.within_noise(), self.is_throughput, self.ratio() >= 1.0) {
            (true, _, _) => "within noise",
            (false, true, true) => "faster",
            (false, true, false) => "slower",
            (false, false, true) => "costlier",
            (false, false, false) => "cheaper",
        }
    }

    /// True when throughput dropped more than `percent`, outside the noise.
    pub fn slower_than(&self, percent: f64) -> bool {
        self.is_throughput && !self.within_noise() && self.ratio() < 1.0 - percent / 100.0
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
    println!("{}", render(&changes));
    let Some(percent) = args.fail_if_slower else {
        return Ok(ExitCode::SUCCESS);
    };
    let slower: Vec<&Change> = changes.iter().filter(|c| c.slower_than(percent)).collect();
    for change in &slower {
        eprintln!(
            "ringside: {} {} is {:.0}% slower outside noise, more than --fail-if-slower {percent}%",
            change.study,
            change.engine,
            (1.0 - change.ratio()) * 100.0
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

/// Every metric of every engine that both documents measured.
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
            if let Some((_, other)) = matched {
                changes.extend(metric_changes(study, engine, other));
            }
        }
    }
    changes
}

fn metric_changes(study: &Study, base: &EngineSummary, new: &EngineSummary) -> Vec<Change> {
    let noun = crate::model::study::op_noun(&study.workload);
    let mut pairs = vec![(study.unit(), base.throughput, new.throughput, true)];
    if let (Some(a), Some(b)) = (base.syscalls_per_op, new.syscalls_per_op) {
        pairs.push((format!("syscalls/{noun}"), a, b, false));
    }
    pairs.push((
        format!("CPU µs/{noun}"),
        base.cpu_us_per_op,
        new.cpu_us_per_op,
        false,
    ));
    if let (Some(a), Some(b)) = (base.p99_us, new.p99_us) {
        pairs.push(("p99 µs".to_string(), a, b, false));
    }
    pairs
        .into_iter()
        .map(|(metric, a, b, is_throughput)| Change {
            study: study.title.clone(),
            engine: base.engine.clone(),
            params: study.params_text(),
            metric,
            base: a,
            new: b,
            is_throughput,
        })
        .collect()
}

fn render(changes: &[Change]) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "study",
        "engine",
        "metric",
        "A median (min–max)",
        "B median (min–max)",
        "B/A",
        "verdict",
    ]);
    let spread = |s: &Spread| format!("{} ({}–{})", per_op(s.median), per_op(s.min), per_op(s.max));
    for change in changes {
        table.add_row([
            change.study.clone(),
            change.engine.clone(),
            change.metric.clone(),
            spread(&change.base),
            spread(&change.new),
            ratio(change.ratio()),
            change.verdict().to_string(),
        ]);
    }
    let mut studies: Vec<String> = Vec::new();
    for change in changes {
        let line = format!("{}: {}", change.study, change.params);
        if !studies.contains(&line) {
            studies.push(line);
        }
    }
    format!("{}\n{table}", studies.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::row;
    use serde_json::json;

    fn document(kernel: &str, rows: Vec<crate::row::Row>) -> Document {
        let mut document = Document::new(json!({"host": {"kernel_release": kernel}}), rows);
        document.command = "test".into();
        document
    }

    #[test]
    fn overlapping_ranges_are_noise_and_separate_ones_have_a_direction() {
        let base = document(
            "6.1",
            vec![
                row("blocking", 1, 1000.0, 1000),
                row("blocking", 2, 1100.0, 1000),
            ],
        );
        let new = document(
            "6.1",
            vec![row("blocking", 1, 700.0, 10), row("blocking", 2, 800.0, 10)],
        );
        assert!(comparability(&base, &new).is_empty());
        let changes = changes(&base, &new, false);
        assert_eq!(changes[0].metric, "MB/s");
        assert_eq!(changes[0].verdict(), "slower");
        assert!(changes[0].slower_than(10.0));
        assert!(!changes[0].slower_than(40.0));
        assert_eq!(changes[1].verdict(), "cheaper");
        assert_eq!(changes[2].verdict(), "within noise");
        let same = document("6.1", vec![row("blocking", 1, 1050.0, 1000)]);
        assert_eq!(
            super::changes(&base, &same, false)[0].verdict(),
            "within noise"
        );
    }

    #[test]
    fn different_kernels_and_parameters_are_named() {
        let base = document("6.1", vec![row("blocking", 1, 1000.0, 1000)]);
        let mut other = row("blocking", 1, 1000.0, 1000);
        other.params.insert("size".into(), Value::from("1G"));
        let new = document("6.2", vec![other]);
        let problems = comparability(&base, &new);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("kernel \"6.1\" and B on kernel \"6.2\""));
        assert!(problems[1].contains("size=64M vs size=1G"));
        assert!(changes(&base, &new, false).is_empty());
        assert_eq!(changes(&base, &new, true).len(), 3);
    }
}
