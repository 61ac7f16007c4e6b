//! `ringside report DIR --format json|csv`: the analysis as data, for scripts and write-ups to
//! format instead of recomputing. JSON carries every decided comparison (its family, ratio,
//! interval at its level, rounds, outcome and p-values) and every statement of the first screen
//! with the comparisons it rests on, and each study's engines with the figures its tables show
//! (`studies`); CSV the comparisons alone, one row each.

use serde::Serialize;

use crate::analysis::Analysis;
use crate::model::comparison::Comparison;
use crate::model::equal_load::EqualLoad;
use crate::model::study::Study;
use crate::model::summary::Metric;
use crate::model::summary::{EngineSummary, PERCENTILES};
use crate::stats::rank::Outcome;
use crate::stats::Spread;

/// One decided comparison.
#[derive(Clone, Debug, Serialize)]
pub struct VerdictRow {
    /// `first_screen` (decided with the screen's questions, simultaneous) or `table` (on its own).
    pub family: &'static str,
    pub study: String,
    pub workload: String,
    pub params: String,
    pub subject: String,
    pub reference: String,
    pub metric: Metric,
    pub rounds: usize,
    pub ratio: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub confidence: f64,
    pub outcome: Outcome,
    pub p_different: f64,
    pub p_equivalent: f64,
    /// How many comparisons were decided together with this one.
    pub family_size: usize,
    /// Where not decided different: the smallest difference this run could have decided.
    pub detectable: Option<f64>,
    /// The comparison's 95% interval on its own (whatever its family's level), for comparing
    /// runs with one another.
    pub low_95: Option<f64>,
    pub high_95: Option<f64>,
}

impl VerdictRow {
    fn of(study: &Study, comparison: &Comparison) -> VerdictRow {
        let place = (
            study.title.clone(),
            study.workload.clone(),
            study.params_text(),
        );
        VerdictRow::at(place, comparison)
    }

    fn of_load(load: &EqualLoad, comparison: &Comparison) -> VerdictRow {
        let rate = load.verdict_rate().map_or(0.0, |(rate, _)| rate);
        let place = (
            format!("{} at equal load", load.title()),
            load.workload.clone(),
            format!("connections={} offered_rate={rate:.0}", load.connections),
        );
        VerdictRow::at(place, comparison)
    }

    fn at(place: (String, String, String), comparison: &Comparison) -> Self {
        let (study, workload, params) = place;
        let (low_95, high_95) = comparison.interval_95();
        VerdictRow {
            family: match comparison.family_size {
                1 => "table",
                _ => "first_screen",
            },
            study,
            workload,
            params,
            subject: comparison.subject.clone(),
            reference: comparison.reference.clone(),
            metric: comparison.metric,
            rounds: comparison.rounds,
            ratio: comparison.ratio,
            low: comparison.low,
            high: comparison.high,
            confidence: comparison.confidence,
            outcome: comparison.outcome,
            p_different: comparison.p_different,
            p_equivalent: comparison.p_equivalent,
            family_size: comparison.family_size,
            detectable: comparison.detectable,
            low_95,
            high_95,
        }
    }
}

/// Every decided comparison of the analysis, the first screen's first.
pub fn verdict_rows(analysis: &Analysis) -> Vec<VerdictRow> {
    let mut rows: Vec<VerdictRow> = Vec::new();
    for study in &analysis.studies {
        rows.extend(
            (study.decided.iter())
                .filter(|c| c.rounds > 0)
                .map(|c| VerdictRow::of(study, c)),
        );
    }
    for load in &analysis.loads {
        rows.extend(load.decided.iter().map(|c| VerdictRow::of_load(load, c)));
    }
    rows.sort_by_key(|row| row.family != "first_screen");
    rows
}

/// The whole analysis as one JSON document.
#[derive(Serialize)]
pub struct Export<'a> {
    pub machine: &'a str,
    /// The levels the intervals are at, in words.
    pub levels: String,
    pub first_screen: &'a crate::analysis::Screen,
    pub regimes: Vec<(String, Option<crate::model::regime::CellRegime>)>,
    pub comparisons: Vec<VerdictRow>,
    /// Each study with its engines' figures, in the report's order.
    pub studies: Vec<StudyFigures>,
    /// The A/A pairs: how often the baseline was called different from itself, and the noise
    /// between blocks of rounds per metric.
    pub self_check: Option<&'a crate::model::calibration::SelfCheck>,
}

/// A study's figures as its table shows them: what a write-up prints beside the comparisons.
#[derive(Serialize)]
pub struct StudyFigures {
    pub study: String,
    pub workload: String,
    pub params: String,
    /// The headline's unit (`MB/s`, `reads/s`, …): what `throughput` is in.
    pub unit: String,
    pub rounds: usize,
    pub engines: Vec<EngineFigures>,
    pub contenders: Vec<EngineFigures>,
}

/// The middle and the ends of one figure over an engine's runs.
#[derive(Serialize)]
pub struct Range {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl From<Spread> for Range {
    fn from(spread: Spread) -> Range {
        Range {
            median: spread.median,
            min: spread.min,
            max: spread.max,
        }
    }
}

/// One engine's runs in one study, summarised as the report's tables and causes read them.
#[derive(Serialize)]
pub struct EngineFigures {
    pub engine: String,
    pub control: bool,
    pub runs: usize,
    pub verified: bool,
    /// Runs that did not verify and were left out of the figures.
    pub left_out: Vec<u32>,
    pub failure: Option<String>,
    pub server_api: Option<String>,
    /// The headline, in the study's unit.
    pub throughput: Range,
    pub cpu_us_per_op: Range,
    pub syscalls_per_op: Option<Range>,
    pub p99_us: Option<Range>,
    /// The median over the runs of each latency percentile, in µs (null where the rows lack it).
    pub latency_us: Option<serde_json::Map<String, serde_json::Value>>,
    pub rss_peak_mib: Option<Range>,
    /// What the kernel counted (the medians the causes read): per operation, seconds, shares.
    pub counted: Counted,
}

/// The medians over an engine's runs of what the kernel counted, each count per operation (the
/// median count over the median operations, as the causes divide them).
#[derive(Serialize)]
pub struct Counted {
    pub ops: f64,
    pub seconds: f64,
    pub ctx_switches_per_op: Option<f64>,
    pub sqes_per_op: Option<f64>,
    pub cqes_per_op: Option<f64>,
    pub iowq_punts_per_op: Option<f64>,
    pub iowq_workers: Option<f64>,
    pub iowq_ctx_switches_per_op: Option<f64>,
    pub device_flushes_per_op: Option<f64>,
    /// The device's flushes in a run (a run that fsyncs once flushes once, others' fsyncs aside).
    pub device_flushes: Option<f64>,
    pub client_cpu_share: Option<f64>,
    pub client_saturated_share: f64,
    pub server_busy_share: Option<f64>,
    pub client_busy_share: Option<f64>,
}

impl EngineFigures {
    fn of(engine: &EngineSummary) -> EngineFigures {
        let figures = &engine.figures;
        let latency_us = engine.latency_us.as_ref().map(|medians| {
            (PERCENTILES.iter().zip(medians))
                .map(|((name, _), &us)| (name.to_string(), serde_json::json!(us)))
                .collect()
        });
        EngineFigures {
            engine: engine.engine.clone(),
            control: engine.control,
            runs: engine.runs,
            verified: engine.verified,
            left_out: engine.left_out.clone(),
            failure: engine.failure.clone(),
            server_api: engine.server_api.clone(),
            throughput: engine.throughput.into(),
            cpu_us_per_op: engine.cpu_us_per_op.into(),
            syscalls_per_op: engine.syscalls_per_op.map(Range::from),
            p99_us: engine.p99_us.map(Range::from),
            latency_us,
            rss_peak_mib: engine.rss_peak_mib.map(Range::from),
            counted: Counted {
                ops: figures.ops,
                seconds: figures.seconds,
                ctx_switches_per_op: figures.per_op(Some(figures.ctx_switches)),
                sqes_per_op: figures.per_op(figures.sqes_submitted),
                cqes_per_op: figures.per_op(figures.cqes_posted),
                iowq_punts_per_op: figures.per_op(figures.iowq_punts),
                iowq_workers: figures.iowq_workers,
                iowq_ctx_switches_per_op: figures.per_op(figures.iowq_ctx_switches),
                device_flushes_per_op: figures.per_op(figures.device_flushes),
                device_flushes: figures.device_flushes,
                client_cpu_share: figures.client_cpu_share,
                client_saturated_share: figures.client_saturated_share,
                server_busy_share: figures.server_busy_share,
                client_busy_share: figures.client_busy_share,
            },
        }
    }
}

impl StudyFigures {
    fn of(study: &Study) -> StudyFigures {
        StudyFigures {
            study: study.title.clone(),
            workload: study.workload.clone(),
            params: study.params_text(),
            unit: study.unit(),
            rounds: study.rounds(),
            engines: study.engines.iter().map(EngineFigures::of).collect(),
            contenders: study.contenders.iter().map(EngineFigures::of).collect(),
        }
    }
}

pub fn export(analysis: &Analysis) -> Export<'_> {
    Export {
        machine: &analysis.machine,
        levels: analysis.levels_text(),
        first_screen: &analysis.screen,
        regimes: (analysis.studies.iter())
            .zip(&analysis.regimes)
            .map(|(study, regime)| (study.title.clone(), regime.clone()))
            .collect(),
        comparisons: verdict_rows(analysis),
        studies: analysis.studies.iter().map(StudyFigures::of).collect(),
        self_check: analysis.self_check.as_ref(),
    }
}

/// The comparisons as CSV, one header line, columns named like the JSON keys.
pub fn csv(rows: &[VerdictRow]) -> anyhow::Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    Ok(String::from_utf8(writer.into_inner()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::paired_rows;

    #[test]
    fn the_export_carries_each_engines_figures_beside_its_comparisons() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 1500.0, 10)],
            12,
        );
        let analysis = Analysis::of_rows(&rows);
        let exported = serde_json::to_value(export(&analysis)).unwrap();
        let study = &exported["studies"][0];
        assert_eq!(study["unit"], "MB/s");
        assert_eq!(study["rounds"], 12);
        let engines = study["engines"].as_array().unwrap();
        let names: Vec<&str> = engines
            .iter()
            .map(|e| e["engine"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["blocking", "uring-ring"]);
        // The table's figures: the median and the runs' range of the rows' own MB/s.
        let rates: Vec<f64> = (rows.iter())
            .filter(|row| row.engine == "uring-ring")
            .map(|row| row.bytes_per_sec / 1e6)
            .collect();
        let throughput = &engines[1]["throughput"];
        let (low, high) = (
            throughput["min"].as_f64().unwrap(),
            throughput["max"].as_f64().unwrap(),
        );
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9 * b;
        assert!(near(
            low,
            rates.iter().copied().fold(f64::INFINITY, f64::min)
        ));
        assert!(near(
            high,
            rates.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        ));
        assert!(low < throughput["median"].as_f64().unwrap());
        assert_eq!(engines[1]["syscalls_per_op"]["median"], 0.01);
        assert_eq!(engines[1]["counted"]["ops"], 1000.0);
        // Beside the comparison those figures are compared by: uring-ring over blocking.
        let compared = (exported["comparisons"].as_array().unwrap().iter())
            .find(|c| c["subject"] == "uring-ring" && c["reference"] == "blocking")
            .unwrap();
        assert_eq!(compared["study"], study["study"]);
        assert!((compared["ratio"].as_f64().unwrap() - 1.5).abs() < 0.05);
    }
}
