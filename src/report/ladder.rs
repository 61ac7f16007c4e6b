//! The io_uring feature ladder: each engine in table order adds one feature to the engine above
//! it (batching, a ring kept full, registered files and buffers, DEFER_TASKRUN, SQPOLL, ...), so
//! the ratio of neighbours is what that feature bought on this machine. The rung's range divides
//! the extreme runs, so a rung whose range spans 1.0 bought nothing the noise can't explain.

use crate::report::summary::{EngineSummary, Study};

/// What one engine bought over the engine before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rung {
    pub engine: String,
    pub previous: String,
    /// Ratio of the medians of the headline metric.
    pub ratio: f64,
    /// This engine's slowest run over the previous engine's fastest run.
    pub low: f64,
    /// This engine's fastest run over the previous engine's slowest run.
    pub high: f64,
}

impl Rung {
    /// What `engine` bought over `previous` (any two engines of a study).
    pub fn between(previous: &EngineSummary, engine: &EngineSummary) -> Rung {
        let (before, after) = (&previous.throughput, &engine.throughput);
        Rung {
            engine: engine.engine.clone(),
            previous: previous.engine.clone(),
            ratio: after.median / before.median,
            low: after.min / before.max,
            high: after.max / before.min,
        }
    }

    pub fn within_noise(&self) -> bool {
        self.low <= 1.0 && 1.0 <= self.high
    }
}

/// The rungs of ringside's own engines in table order; controls are not rungs.
pub fn ladder(study: &Study) -> Vec<Rung> {
    study
        .measured()
        .windows(2)
        .filter(|pair| pair[0].throughput.median > 0.0 && pair[0].throughput.min > 0.0)
        .map(|pair| Rung::between(pair[0], pair[1]))
        .collect()
}

/// The rung that ends at `engine`, if the engine has one.
pub fn rung_of<'a>(rungs: &'a [Rung], engine: &str) -> Option<&'a Rung> {
    rungs.iter().find(|rung| rung.engine == engine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::studies;
    use crate::report::summary::tests::row;

    #[test]
    fn each_rung_divides_neighbours_and_knows_its_noise() {
        let rows = vec![
            row("blocking", 1, 100.0, 1),
            row("uring-batch", 1, 200.0, 1),
            row("uring-ring", 1, 210.0, 1),
            row("blocking", 2, 100.0, 1),
            row("uring-batch", 2, 220.0, 1),
            row("uring-ring", 2, 215.0, 1),
        ];
        let rungs = ladder(&studies(&rows)[0]);
        assert_eq!(rungs.len(), 2);
        assert_eq!(rungs[0].previous, "blocking");
        assert!((rungs[0].ratio - 2.1).abs() < 1e-9);
        assert!(!rungs[0].within_noise());
        assert!(rungs[1].within_noise(), "{:?}", rungs[1]);
        assert!(rung_of(&rungs, "blocking").is_none());
    }
}
