//! Whether the machine moved under a study: an engine's own figure, round by round, jumped or
//! trended. Paired comparisons divide such a move out (both engines of a round share it), but a
//! reader of absolute figures (a table's medians, `compare` across documents) must know. The
//! check splits the rounds in two at every point that leaves three on each side and keeps the
//! split whose two medians differ most; a move is named when they differ by more than
//! `MOVE_MARGIN` and a rank test (Mann–Whitney, exact) says so beyond chance, with its error
//! shared among the splits tried (Bonferroni).

use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::stats::median;
use crate::stats::rank::Ranked;

/// The smallest move between the two halves worth naming: 15%, beyond the 3% margin of a
/// comparison by far, so only a machine that changed state is named (noise of ±25% moves
/// single rounds, not the median of several).
pub const MOVE_MARGIN: f64 = 0.15;

/// The error the check may spend over all its splits.
const ALPHA: f64 = 0.05;

/// Fewest rounds on either side of a split.
const SIDE: usize = 3;

/// An engine's figure moved during the study.
#[derive(Clone, Debug, PartialEq)]
pub struct Drift {
    pub engine: String,
    pub metric: Metric,
    /// The medians before and after the split, and the first round after it.
    pub before: f64,
    pub after: f64,
    pub from_round: u32,
}

impl Drift {
    /// "blocking's MB/s moved during the study: a median of 1350 in rounds 1–7, 2600 from
    /// round 8 on", in the study's unit.
    pub fn text(&self, unit: &str, format: impl Fn(f64) -> String) -> String {
        format!(
            "{}'s {unit} moved during the study, from a median of {} before round {} to {} from \
             it on: the machine changed under the study (each round's ratios share the move \
             and divide it out; its absolute figures do not)",
            self.engine,
            format(self.before),
            self.from_round,
            format(self.after)
        )
    }
}

/// The move of `engine`'s `metric` over its rounds, if there was one.
pub fn drift(engine: &EngineSummary, metric: Metric) -> Option<Drift> {
    let mut rounds: Vec<(u32, f64)> = (engine.rounds.iter())
        .filter_map(|round| Some((round.run, round.value(metric)?)))
        .filter(|(_, value)| *value > 0.0 && value.is_finite())
        .collect();
    rounds.sort_by_key(|(run, _)| *run);
    if rounds.len() < 2 * SIDE {
        return None;
    }
    let logs: Vec<f64> = rounds.iter().map(|(_, value)| value.ln()).collect();
    let splits = rounds.len() - 2 * SIDE + 1;
    // The split the rank test separates best, and among equals the one that moved most.
    let (split, p, shift) = (SIDE..=rounds.len() - SIDE)
        .map(|split| {
            let ranked = Ranked::two_samples(&logs[..split], &logs[split..]);
            let p = 2.0 * ranked.p_above(0.0).min(ranked.p_below(0.0));
            (split, p, median(&logs[split..]) - median(&logs[..split]))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1).then(b.2.abs().total_cmp(&a.2.abs())))?;
    if shift.abs() < MOVE_MARGIN.ln_1p() || p * splits as f64 > ALPHA {
        return None;
    }
    let values: Vec<f64> = rounds.iter().map(|(_, value)| *value).collect();
    Some(Drift {
        engine: engine.engine.clone(),
        metric,
        before: median(&values[..split]),
        after: median(&values[split..]),
        from_round: rounds[split].0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::studies;
    use crate::model::study::tests::row;

    fn baseline(values: &[f64]) -> EngineSummary {
        let rows: Vec<_> = (values.iter().enumerate())
            .map(|(index, value)| row("blocking", index as u32 + 1, *value, 1000))
            .collect();
        studies(&rows)[0].engines[0].clone()
    }

    #[test]
    fn a_machine_that_doubled_its_speed_halfway_is_named() {
        let values = [
            1000.0, 1050.0, 980.0, 1020.0, 990.0, 1010.0, 2000.0, 2100.0, 1950.0, 2050.0, 1990.0,
            2020.0,
        ];
        let drift = drift(&baseline(&values), Metric::Throughput).expect("a move");
        assert_eq!(drift.from_round, 7);
        assert!(
            (drift.before - 1000.0).abs() < 15.0 && (drift.after - 2010.0).abs() < 25.0,
            "{drift:?}"
        );
        assert!(drift.text("MB/s", |v| format!("{v:.0}")).starts_with(
            "blocking's MB/s moved during the study, from a median of 1005 before round 7 to 2010"
        ));
    }

    #[test]
    fn noise_without_a_move_and_a_small_move_are_not_named() {
        let noise = [
            1000.0, 1250.0, 800.0, 1200.0, 850.0, 1100.0, 900.0, 1150.0, 950.0, 1050.0,
        ];
        assert_eq!(drift(&baseline(&noise), Metric::Throughput), None);
        let small = [
            1000.0, 1010.0, 990.0, 1005.0, 1080.0, 1090.0, 1085.0, 1095.0,
        ];
        assert_eq!(drift(&baseline(&small), Metric::Throughput), None);
        assert_eq!(
            drift(&baseline(&[1000.0, 2000.0, 1000.0]), Metric::Throughput),
            None
        );
    }
}
