//! The verdict table: every comparison the report decides, one row each, for scripts and bench
//! write-ups to read instead of recomputing (`ringside report DIR --format json|csv`). The
//! first screen's comparisons are one confirmatory family; each study's table, per metric, an
//! exploratory one.

use serde::Serialize;

use crate::model::comparison::{table_comparisons, Comparison, Metric};
use crate::model::study::Study;
use crate::report::answer::Verdicts;
use crate::stats::rank::Outcome;

/// One decided comparison.
#[derive(Clone, Debug, Serialize)]
pub struct VerdictRow {
    /// `first_screen` (Holm) or `table` (Benjamini–Hochberg).
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
}

impl VerdictRow {
    fn of(family: &'static str, study: &Study, comparison: &Comparison) -> VerdictRow {
        VerdictRow {
            family,
            study: study.title.clone(),
            workload: study.workload.clone(),
            params: study.params_text(),
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
        }
    }
}

/// The first screen's comparisons, then every study's table per metric.
pub fn verdict_rows(studies: &[Study]) -> Vec<VerdictRow> {
    let verdicts = Verdicts::of(studies);
    let mut rows = Vec::new();
    for ((study, finding), rungs) in studies.iter().zip(&verdicts.findings).zip(&verdicts.rungs) {
        let first = finding.iter().map(|finding| &finding.comparison);
        for comparison in first.chain(rungs.iter().map(|rung| &rung.comparison)) {
            rows.push(VerdictRow::of("first_screen", study, comparison));
        }
    }
    for study in studies {
        for metric in Metric::ALL {
            for comparison in table_comparisons(study, metric) {
                if comparison.rounds > 0 {
                    rows.push(VerdictRow::of("table", study, &comparison));
                }
            }
        }
    }
    rows
}

/// The rows as CSV, one header line, columns named like the JSON keys.
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
    use crate::model::study::studies;
    use crate::model::study::tests::paired_rows;

    #[test]
    fn every_decided_comparison_is_a_row_in_both_families() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)],
            12,
        );
        let rows = verdict_rows(&studies(&rows));
        let first: Vec<&VerdictRow> = rows.iter().filter(|r| r.family == "first_screen").collect();
        assert_eq!(first.len(), 1, "{rows:?}");
        assert_eq!(first[0].outcome, Outcome::Different);
        assert_eq!(
            (first[0].subject.as_str(), first[0].reference.as_str()),
            ("uring-ring", "blocking")
        );
        let syscalls = (rows.iter())
            .find(|r| r.family == "table" && r.metric == Metric::SyscallsPerOp)
            .unwrap();
        assert!((syscalls.ratio - 0.01).abs() < 1e-3, "{syscalls:?}");
        let text = csv(&rows).unwrap();
        assert!(text.starts_with("family,study,workload,params,subject,reference,metric,rounds,"));
        assert!(text.contains(
            "first_screen,fs-write,fs-write,size=64M,uring-ring,blocking,throughput,12,"
        ));
    }
}
