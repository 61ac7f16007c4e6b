//! The io_uring feature ladder: each engine adds one feature to the engine it extends (its
//! parent in the engine table, `EngineDef::over`: batching over one SQE at a time, registered
//! files over the ring, SQPOLL and DEFER_TASKRUN side by side over registered files, ...), so the
//! ratio of an engine to its parent is what that feature bought on this machine. A neighbour in
//! the table is not a parent: `uring-ring-fd` extends `uring-defer`, not `uring-sqpoll` above it.
//! A rung whose parent did not run has no ratio and says so. The rung's range divides the
//! extreme runs, so a rung whose range spans 1.0 bought nothing the noise can't explain.

use crate::engines::parent_name;
use crate::report::summary::{EngineSummary, Study};

/// What one engine bought over the engine it extends (or, in the first screen's finding, over
/// the study's baseline).
#[derive(Clone, Debug, PartialEq)]
pub struct Rung {
    pub engine: String,
    /// The engine divided by: the parent, or the baseline.
    pub parent: String,
    /// Ratio of the medians of the headline metric.
    pub ratio: f64,
    /// This engine's slowest run over the parent's fastest run.
    pub low: f64,
    /// This engine's fastest run over the parent's slowest run.
    pub high: f64,
}

impl Rung {
    /// What `engine` bought over `parent` (any two engines of a study).
    pub fn between(parent: &EngineSummary, engine: &EngineSummary) -> Rung {
        let (before, after) = (&parent.throughput, &engine.throughput);
        Rung {
            engine: engine.engine.clone(),
            parent: parent.engine.clone(),
            ratio: after.median / before.median,
            low: after.min / before.max,
            high: after.max / before.min,
        }
    }

    pub fn within_noise(&self) -> bool {
        self.low <= 1.0 && 1.0 <= self.high
    }
}

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
/// or why it has none. Baselines, controls and contenders are not rungs.
pub fn steps(study: &Study) -> Vec<Result<Rung, NoRatio>> {
    let measured = study.measured();
    measured
        .iter()
        .filter_map(|engine| {
            let parent = parent_name(&study.workload, &engine.engine)?;
            let no_ratio = |why: String| NoRatio {
                engine: engine.engine.clone(),
                parent: parent.to_string(),
                why,
            };
            Some(match measured.iter().find(|e| e.engine == parent) {
                None => Err(no_ratio("did not run".to_string())),
                Some(summary) if summary.throughput.min <= 0.0 => {
                    Err(no_ratio(summary.failure.as_ref().map_or_else(
                        || "measured nothing in some run".to_string(),
                        |failure| format!("failed ({failure})"),
                    )))
                }
                Some(summary) => Ok(Rung::between(summary, engine)),
            })
        })
        .collect()
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
    use crate::report::summary::studies;
    use crate::report::summary::tests::row;

    #[test]
    fn a_rung_divides_by_its_parent_not_its_neighbour() {
        let mut rows = Vec::new();
        for run in 1..=2 {
            let wobble = f64::from(run);
            rows.push(row("blocking", run, 100.0 + wobble, 1));
            rows.push(row("uring-fixed", run, 200.0 + wobble, 1));
            rows.push(row("uring-defer", run, 300.0 + wobble, 1));
            rows.push(row("uring-sqpoll", run, 150.0 + wobble, 1));
            rows.push(row("uring-ring-fd", run, 330.0 + wobble, 1));
        }
        let rungs = ladder(&studies(&rows)[0]);
        let pairs: Vec<(&str, &str)> = rungs
            .iter()
            .map(|rung| (rung.engine.as_str(), rung.parent.as_str()))
            .collect();
        // uring-fixed's parent (uring-ring) did not run: no rung; blocking is a baseline.
        assert_eq!(
            pairs,
            [
                ("uring-defer", "uring-fixed"),
                ("uring-sqpoll", "uring-fixed"),
                ("uring-ring-fd", "uring-defer")
            ]
        );
        let ring_fd = &rungs[2];
        assert!((ring_fd.ratio - 331.5 / 301.5).abs() < 1e-9, "{ring_fd:?}");
        assert!(!ring_fd.within_noise());
        let sqpoll = &rungs[1];
        assert!(sqpoll.ratio < 1.0 && !sqpoll.within_noise(), "{sqpoll:?}");
    }

    #[test]
    fn a_missing_parent_gives_no_ratio_and_says_why() {
        let rows = vec![
            row("blocking", 1, 100.0, 1),
            row("uring-fixed", 1, 200.0, 1),
            row("uring-sqpoll", 1, 150.0, 1),
            row("uring-ring-fd", 1, 330.0, 1),
        ];
        let study = &studies(&rows)[0];
        let steps = steps(study);
        let Some(Err(none)) = step_of(&steps, "uring-ring-fd") else {
            panic!("uring-ring-fd has a ratio without its parent: {steps:?}");
        };
        assert_eq!(
            none.text(),
            "uring-ring-fd: no ratio, its parent uring-defer did not run"
        );
        assert!(step_of(&steps, "blocking").is_none());
        assert!(ladder(study)
            .iter()
            .all(|rung| rung.engine != "uring-ring-fd"));
    }

    #[test]
    fn a_rung_knows_its_noise() {
        let rows = vec![
            row("uring-single", 1, 100.0, 1),
            row("uring-batch", 1, 220.0, 1),
            row("uring-single", 2, 110.0, 1),
            row("uring-batch", 2, 105.0, 1),
        ];
        let rungs = ladder(&studies(&rows)[0]);
        assert_eq!(rungs.len(), 1);
        assert!(rungs[0].within_noise(), "{:?}", rungs[0]);
    }
}
