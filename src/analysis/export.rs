//! `ringside report DIR --format json|csv`: the analysis as data, for scripts and write-ups to
//! format instead of recomputing. JSON carries every decided comparison (its family, ratio,
//! interval at its level, rounds, outcome and p-values) and every statement of the first screen
//! with the comparisons it rests on; CSV the comparisons alone, one row each.

use serde::Serialize;

use crate::analysis::Analysis;
use crate::model::comparison::{Comparison, Metric};
use crate::model::equal_load::EqualLoad;
use crate::model::study::Study;
use crate::stats::rank::Outcome;

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
