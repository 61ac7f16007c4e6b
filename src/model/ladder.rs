//! The io_uring feature ladder: each engine adds one feature to the engine it extends (its
//! parent in the engine table, `EngineDef::over`: batching over one SQE at a time, registered
//! files over the ring, SQPOLL and DEFER_TASKRUN side by side over registered files, ...), so the
//! ratio of an engine to its parent is what that feature bought on this machine. A neighbour in
//! the table is not a parent: `uring-ring-fd` extends `uring-defer`, not `uring-sqpoll` above it.
//! A rung whose parent did not run has no ratio and says so. The ratio is a paired comparison
//! over the rounds both ran (`model::comparison`), decided with the study's table as one
//! exploratory family: a rung bought something only when its comparison is *different*.

use crate::engines::{nearest_ran, parent_of};
use crate::model::comparison::Comparison;
use crate::model::study::table_comparisons;
use crate::model::study::Study;
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;

/// What one engine bought over the engine it extends (or, in the first screen's finding, over
/// the study's baseline): the comparison of their headline metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Rung {
    pub engine: String,
    /// The engine divided by: the parent, or the baseline.
    pub parent: String,
    /// The rungs between the two that did not run (the parent is then the nearest ancestor
    /// that did): the ratio is what they and this engine's feature bought together.
    pub via: Vec<String>,
    pub comparison: Comparison,
}

impl Rung {
    /// What `engine` bought over `parent` (any two engines of a study), not yet decided.
    pub fn between(study: &Study, parent: &EngineSummary, engine: &EngineSummary) -> Rung {
        Rung {
            engine: engine.engine.clone(),
            parent: parent.engine.clone(),
            via: Vec::new(),
            comparison: Comparison::paired(engine, parent, Metric::Throughput, &study.judging),
        }
    }

    /// "uring-ring", or "uring-ring via uring-fixed" where rungs between did not run.
    pub fn parent_label(&self) -> String {
        match self.via.as_slice() {
            [] => self.parent.clone(),
            via => format!("{} via {}", self.parent, via.join(", ")),
        }
    }

    /// The headline's ratio, engine over parent.
    pub fn ratio(&self) -> f64 {
        self.comparison.ratio
    }

    /// Whether the feature made a decided difference.
    pub fn decided(&self) -> bool {
        self.comparison.is_different()
    }
}

/// Why a rung has no ratio when none of its ancestors is in the study (not chosen, not
/// available, or not run at this parameter: no one-at-a-time engine runs at depth 32).
pub const DID_NOT_RUN: &str = "did not run";

/// A rung without a ratio: the engine ran, its parent gave nothing to divide by.
#[derive(Clone, Debug, PartialEq)]
pub struct NoRatio {
    pub engine: String,
    pub parent: String,
    /// Why, after the parent's name: "did not run" (unavailable, not chosen, or failed before
    /// its row), "failed (...)", or "measured nothing in some run".
    pub why: String,
}

impl NoRatio {
    /// "uring-ring-fd: no ratio, its parent uring-defer did not run".
    pub fn text(&self) -> String {
        format!(
            "{}: no ratio, its parent {} {}",
            self.engine, self.parent, self.why
        )
    }
}

/// Each engine ringside measured that extends another, in table order: its rung over its parent,
/// or why it has none, decided with the study's table (`table_comparisons`). Baselines, controls and
/// contenders are not rungs.
pub fn steps(study: &Study) -> Vec<Result<Rung, NoRatio>> {
    let measured = study.measured();
    let ran = |name: &str| measured.iter().any(|e| e.engine == name);
    let mut steps: Vec<Result<Rung, NoRatio>> = measured
        .iter()
        .filter_map(|engine| {
            let parent = parent_of(&study.workload, &engine.engine)?;
            let no_ratio = |parent: String, why: String| NoRatio {
                engine: engine.engine.clone(),
                parent,
                why,
            };
            let Some((nearest, via)) = nearest_ran(&study.workload, &engine.engine, &ran) else {
                return Some(Err(no_ratio(parent, DID_NOT_RUN.to_string())));
            };
            let summary = measured.iter().find(|e| e.engine == nearest)?;
            Some(if summary.throughput.min <= 0.0 {
                Err(no_ratio(
                    nearest,
                    summary.failure.as_ref().map_or_else(
                        || "measured nothing in some run".to_string(),
                        |failure| format!("failed ({failure})"),
                    ),
                ))
            } else {
                let mut rung = Rung::between(study, summary, engine);
                rung.via = via;
                Ok(rung)
            })
        })
        .collect();
    // Decided with the rest of the study's table, so a rung and the table agree.
    let decided = table_comparisons(study, Metric::Throughput);
    for rung in steps.iter_mut().filter_map(|step| step.as_mut().ok()) {
        let same =
            (decided.iter()).find(|c| c.subject == rung.engine && c.reference == rung.parent);
        if let Some(same) = same {
            rung.comparison = same.clone();
        }
    }
    steps
}

/// The rungs with a ratio, in table order.
pub fn ladder(study: &Study) -> Vec<Rung> {
    steps(study).into_iter().filter_map(Result::ok).collect()
}

/// The step that ends at `engine`, if the engine extends another.
pub fn step_of<'a>(
    steps: &'a [Result<Rung, NoRatio>],
    engine: &str,
) -> Option<&'a Result<Rung, NoRatio>> {
    steps.iter().find(|step| match step {
        Ok(rung) => rung.engine == engine,
        Err(none) => none.engine == engine,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::studies;

    fn rounds(engines: &[(&str, f64)], rounds: u32) -> Vec<crate::row::Row> {
        let engines: Vec<(&str, f64, u64)> = engines.iter().map(|(e, mb)| (*e, *mb, 1)).collect();
        crate::model::study::tests::paired_rows(&engines, rounds)
    }

    #[test]
    fn a_rung_divides_by_its_parent_not_its_neighbour_and_skips_what_did_not_run() {
        let rows = rounds(
            &[
                ("blocking", 100.0),
                ("uring-fixed", 200.0),
                ("uring-defer", 300.0),
                ("uring-sqpoll", 150.0),
                ("uring-ring-fd", 330.0),
            ],
            12,
        );
        let rungs = ladder(&studies(&rows)[0]);
        let pairs: Vec<(&str, String)> = rungs
            .iter()
            .map(|rung| (rung.engine.as_str(), rung.parent_label()))
            .collect();
        // uring-fixed's parent (uring-ring) and the rungs below it did not run: it is compared
        // with the nearest that did, and says which it skipped.
        assert_eq!(
            pairs,
            [
                (
                    "uring-fixed",
                    "blocking via uring-ring, uring-batch, uring-single".to_string()
                ),
                ("uring-defer", "uring-fixed".to_string()),
                ("uring-sqpoll", "uring-fixed".to_string()),
                ("uring-ring-fd", "uring-defer".to_string())
            ]
        );
        let ring_fd = &rungs[3];
        assert!((ring_fd.ratio() - 1.1).abs() < 0.01, "{ring_fd:?}");
        assert!(ring_fd.decided(), "{ring_fd:?}");
        let sqpoll = &rungs[2];
        assert!(sqpoll.ratio() < 1.0 && sqpoll.decided(), "{sqpoll:?}");
    }

    #[test]
    fn a_rung_with_no_ancestor_that_ran_has_no_ratio_and_says_why() {
        let rows = rounds(&[("uring-fixed", 200.0), ("uring-ring-fd", 330.0)], 1);
        let study = &studies(&rows)[0];
        let steps = steps(study);
        let Some(Err(none)) = step_of(&steps, "uring-fixed") else {
            panic!("uring-fixed has a ratio with no ancestor: {steps:?}");
        };
        assert_eq!(
            none.text(),
            "uring-fixed: no ratio, its parent uring-ring did not run"
        );
        let Some(Ok(rung)) = step_of(&steps, "uring-ring-fd") else {
            panic!("{steps:?}");
        };
        assert_eq!(rung.parent_label(), "uring-fixed via uring-defer");
    }

    #[test]
    fn a_rung_within_its_margin_or_on_few_rounds_is_not_decided() {
        // 2% apart: equivalent (inside the 3% margin), never a difference.
        let rows = rounds(&[("uring-single", 100.0), ("uring-batch", 102.0)], 12);
        let rungs = ladder(&studies(&rows)[0]);
        assert!(!rungs[0].decided(), "{:?}", rungs[0]);
        assert_eq!(rungs[0].comparison.word(), "no difference beyond 3%");
        // Twice as fast, but five rounds are too few to decide anything.
        let rows = rounds(&[("uring-single", 100.0), ("uring-batch", 200.0)], 5);
        let rungs = ladder(&studies(&rows)[0]);
        assert_eq!(rungs[0].comparison.word(), "undecided");
    }

    #[test]
    fn a_second_copy_of_an_engine_is_compared_with_the_first() {
        assert_eq!(parent_of("echo", "epoll#2").as_deref(), Some("epoll"));
        assert_eq!(
            parent_of("fs-write", "uring-defer").as_deref(),
            Some("uring-fixed")
        );
    }
}
