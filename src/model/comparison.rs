//! One engine against another in the same study, paired round by round: each round ran both,
//! close in time, so the ratio of the two in that round carries the machine's drift on both
//! sides and divides it out. The estimate is the Hodges–Lehmann median of the rounds' log
//! ratios, the interval the exact signed-rank one, and the decision one of three outcomes
//! against the metric's margin (`stats::rank`): only a *different* comparison is called faster,
//! slower, helped or hurt.
//!
//! Decisions are made per family, so that many comparisons do not make false alarms likely:
//! the first screen's verdicts are one family (Holm: the chance of any false "different" stays
//! under α), a table's are exploratory (Benjamini–Hochberg: the expected share of false ones
//! stays under α, and the table says so). A study measured with `--runs auto` looked at its
//! comparisons after several stages of rounds; each look spends part of α (`spent_alpha`), so
//! stopping when decided does not inflate the error.

use serde::{Deserialize, Serialize};

use crate::model::study::{EngineSummary, Round, Study};
use crate::stats::rank::{benjamini_hochberg, holm, Outcome, Ranked, MIN_ROUNDS};

/// The error rate every decision is held to: 5%.
pub const ALPHA: f64 = 0.05;

/// What a comparison measures. Per-operation metrics are ratios of totals within each run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The study's headline: MB/s for file writes, operations per second everywhere else.
    Throughput,
    /// CPU µs per operation (the server's, for network rows).
    CpuPerOp,
    /// Syscalls per operation, where they were counted.
    SyscallsPerOp,
    /// The 99th latency percentile.
    P99,
}

impl Metric {
    pub const ALL: [Metric; 4] = [
        Metric::Throughput,
        Metric::CpuPerOp,
        Metric::SyscallsPerOp,
        Metric::P99,
    ];

    /// The smallest relative difference worth a verdict: throughput and CPU 3%, syscalls 1%
    /// (counted exactly, so smaller differences are real, but say nothing), p99 15% (a tail
    /// moves with a few slow operations).
    pub fn margin(self) -> f64 {
        match self {
            Metric::Throughput | Metric::CpuPerOp => 0.03,
            Metric::SyscallsPerOp => 0.01,
            Metric::P99 => 0.15,
        }
    }

    /// The widest relative difference an *equivalent* may hide: throughput and CPU 10%, the
    /// others as `margin`. Equivalence needs the whole interval inside it, and at 12–24 rounds a
    /// file or echo ratio's 90% interval here spans ±5–10% (bench/verdicts.md), so "within 3%"
    /// could never be shown: two back-to-back default runs left 74% of the first screen
    /// undecided with it, 35% with 10%. A difference is still called beyond `margin`; a
    /// comparison that is both (1.05× [1.03–1.08]) is called different.
    pub fn equivalence_margin(self) -> f64 {
        match self {
            Metric::Throughput | Metric::CpuPerOp => 0.10,
            Metric::SyscallsPerOp | Metric::P99 => self.margin(),
        }
    }

    /// Whether more is better (throughput) or less (the costs).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Throughput)
    }

    pub fn index(self) -> usize {
        match self {
            Metric::Throughput => 0,
            Metric::CpuPerOp => 1,
            Metric::SyscallsPerOp => 2,
            Metric::P99 => 3,
        }
    }

    /// The word for a decided difference in this metric's good or bad direction.
    pub fn word(self, better: bool) -> &'static str {
        match (self.higher_is_better(), better) {
            (true, true) => "faster",
            (true, false) => "slower",
            (false, true) => "cheaper",
            (false, false) => "costlier",
        }
    }
}

/// How a family of comparisons is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The first screen's verdicts: Holm's family-wise error.
    Confirmatory,
    /// A table's comparisons: Benjamini–Hochberg's false discovery rate, labelled exploratory.
    Exploratory,
}

/// `subject` against `reference` on one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub subject: String,
    pub reference: String,
    pub metric: Metric,
    /// Rounds in which both ran and measured the metric.
    pub rounds: usize,
    /// subject ÷ reference: the Hodges–Lehmann estimate of the rounds' ratios.
    pub ratio: f64,
    /// The interval of the ratio at `confidence`, when the rounds are enough for one.
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub confidence: f64,
    pub outcome: Outcome,
    /// Two-sided p-value of "differs by more than the margin", and the two one-sided tests'
    /// p-value of "differs by less" (equivalence).
    pub p_different: f64,
    pub p_equivalent: f64,
    /// The error this comparison may spend (α, less what earlier looks spent).
    #[serde(skip)]
    alpha: f64,
    #[serde(skip)]
    ranked: Option<Ranked>,
}

impl Comparison {
    /// `subject` over `reference` on `metric`, paired by round; undecided until `decide`.
    pub fn paired(
        subject: &EngineSummary,
        reference: &EngineSummary,
        metric: Metric,
        alpha: f64,
    ) -> Comparison {
        let ratios: Vec<f64> = (subject.rounds.iter())
            .filter_map(|round| {
                let other = reference.rounds.iter().find(|r| r.run == round.run)?;
                log_ratio(round, other, metric)
            })
            .collect();
        let ranked = Ranked::paired(&ratios);
        Comparison::of(&subject.engine, &reference.engine, metric, ranked, alpha)
    }

    /// A comparison of two independent sets of values (two documents' rounds): `before` and
    /// `after` are log values of the same quantity.
    pub fn two_samples(
        subject: &str,
        reference: &str,
        metric: Metric,
        before: &[f64],
        after: &[f64],
    ) -> Comparison {
        let ranked = Ranked::two_samples(before, after);
        Comparison::of(subject, reference, metric, ranked, ALPHA)
    }

    fn of(subject: &str, reference: &str, metric: Metric, ranked: Ranked, alpha: f64) -> Self {
        let margin = metric.margin().ln_1p();
        let p_different = (2.0 * ranked.p_above(margin).min(ranked.p_below(-margin))).min(1.0);
        let within = metric.equivalence_margin().ln_1p();
        let p_equivalent = ranked.p_below(within).max(ranked.p_above(-within));
        let mut comparison = Comparison {
            subject: subject.to_string(),
            reference: reference.to_string(),
            metric,
            rounds: ranked.samples(),
            ratio: ranked.estimate().exp(),
            low: None,
            high: None,
            confidence: 1.0 - alpha,
            outcome: Outcome::Undecided,
            p_different,
            p_equivalent,
            alpha,
            ranked: Some(ranked),
        };
        comparison.set_interval(alpha);
        comparison
    }

    fn set_interval(&mut self, alpha: f64) {
        let interval = self
            .ranked
            .as_ref()
            .and_then(|ranked| ranked.interval(alpha));
        self.low = interval.map(|(low, _)| low.exp());
        self.high = interval.map(|(_, high)| high.exp());
        self.confidence = 1.0 - alpha;
    }

    /// Whether the interval shown lies wholly beyond the margin (an undecided comparison whose
    /// family asked for more than its own α).
    pub fn beyond_margin(&self) -> bool {
        let margin = 1.0 + self.metric.margin();
        match (self.low, self.high) {
            (Some(low), Some(high)) => low > margin || high < 1.0 / margin,
            _ => false,
        }
    }

    /// The interval's confidence as a sentence says it: "95%", "99.8%".
    pub fn confidence_text(&self) -> String {
        let percent = self.confidence * 100.0;
        match percent.fract() {
            f if !(0.05..=0.95).contains(&f) => format!("{percent:.0}%"),
            _ => format!("{percent:.1}%"),
        }
    }

    /// Whether the subject did better than the reference (a decided difference only).
    pub fn better(&self) -> bool {
        (self.ratio > 1.0) == self.metric.higher_is_better()
    }

    pub fn is_different(&self) -> bool {
        self.outcome == Outcome::Different
    }

    /// "faster", "cheaper", …, "equivalent" or "undecided".
    pub fn word(&self) -> &'static str {
        match self.outcome {
            Outcome::Different => self.metric.word(self.better()),
            outcome => outcome.word(),
        }
    }

    /// "1.66× [1.52–1.80], 12 rounds": the ratio with its interval.
    pub fn ratio_text(&self) -> String {
        match self.ratio.is_finite() {
            true => format!("{:.2}× {}", self.ratio, self.interval_text()),
            false => format!("— ({})", self.interval_text()),
        }
    }

    /// "[1.52–1.80], 12 rounds", or "no interval, 2 rounds" below the rounds one needs.
    pub fn interval_text(&self) -> String {
        let interval = match (self.low, self.high) {
            (Some(low), Some(high)) => format!("[{low:.2}–{high:.2}]"),
            _ => "no interval".to_string(),
        };
        let rounds = match self.rounds {
            1 => "1 round".to_string(),
            n => format!("{n} rounds"),
        };
        format!("{interval}, {rounds}")
    }

    /// Whether no number of rounds up to `budget` is likely to decide it: were its interval to
    /// narrow as 1/√rounds around today's estimate, it would still neither clear the margin
    /// nor fit inside the equivalence margin. Undecided comparisons without an interval yet are not futile.
    pub fn futile(&self, budget: usize) -> bool {
        let (Some(low), Some(high)) = (self.low, self.high) else {
            return false;
        };
        if self.rounds >= budget {
            return true;
        }
        let (low, high, estimate) = (low.ln(), high.ln(), self.ratio.ln());
        let margin = self.metric.margin().ln_1p();
        let within = self.metric.equivalence_margin().ln_1p();
        let half = (high - low) / 2.0 * (self.rounds as f64 / budget as f64).sqrt();
        let can_differ = estimate.abs() - half > margin;
        let can_be_equivalent = estimate.abs() + half < within;
        !can_differ && !can_be_equivalent
    }

    /// The comparison turned round: `reference` over `subject`.
    pub fn inverse(&self) -> Comparison {
        Comparison {
            subject: self.reference.clone(),
            reference: self.subject.clone(),
            ratio: 1.0 / self.ratio,
            low: self.high.map(f64::recip),
            high: self.low.map(f64::recip),
            ranked: None,
            ..self.clone()
        }
    }
}

/// The log of `subject`'s value over `reference`'s in one round, when both have it.
fn log_ratio(subject: &Round, reference: &Round, metric: Metric) -> Option<f64> {
    let (a, b) = (subject.value(metric)?, reference.value(metric)?);
    (a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()).then(|| (a / b).ln())
}

/// Decides every comparison of one family, in place: a difference when the family's procedure
/// rejects "within the margin" (its interval then shown at the level it was rejected at, which
/// lies beyond the margin), equivalence when the two one-sided tests do at the comparison's α,
/// undecided otherwise, nothing below `MIN_ROUNDS`. An undecided comparison shows its interval at
/// the family's Bonferroni level (α over the family's size): an interval that lay wholly beyond
/// the margin there would have been rejected by either procedure, so what the figure shows
/// agrees with the word beside it. Where the rounds are too few for an interval at that level,
/// it shows its own (1 − α) one, which may lie beyond the margin: `beyond_margin` tells, and the
/// sentence says the family asked for more.
pub fn decide(comparisons: &mut [Comparison], family: Family) {
    let p_values: Vec<f64> = (comparisons.iter())
        .map(|c| {
            if c.rounds >= MIN_ROUNDS {
                c.p_different / (c.alpha / ALPHA)
            } else {
                1.0
            }
        })
        .collect();
    let family_size = comparisons.len().max(1) as f64;
    let levels = match family {
        Family::Confirmatory => holm(&p_values, ALPHA),
        Family::Exploratory => benjamini_hochberg(&p_values, ALPHA),
    };
    for (comparison, level) in comparisons.iter_mut().zip(levels) {
        if comparison.rounds < MIN_ROUNDS {
            comparison.outcome = Outcome::Undecided;
            continue;
        }
        match level {
            Some(level) => {
                comparison.outcome = Outcome::Different;
                // The level in the comparison's own α units (a look's share of α).
                comparison.set_interval(level * comparison.alpha / ALPHA);
            }
            None if comparison.p_equivalent <= comparison.alpha => {
                comparison.outcome = Outcome::Equivalent;
                comparison.set_interval(2.0 * comparison.alpha);
            }
            None => {
                comparison.outcome = Outcome::Undecided;
                comparison.set_interval(comparison.alpha / family_size);
                if comparison.low.is_none() {
                    // Too few rounds for an interval at that level: the comparison's own.
                    comparison.set_interval(comparison.alpha);
                }
            }
        }
    }
}

/// The stages `--runs auto` looks at, in rounds: decided early when the engines differ a lot or
/// not at all, more rounds where the machine's noise needs them. The last is the budget. The
/// first look is at 12: an exact rank test on n rounds can say no less than p = 2/2^n, and the
/// first screen decides some twenty comparisons at once (Holm), so fewer rounds could not decide
/// even a fivefold difference there (bench/verdicts.md: a default run looking first at 8 decided
/// none of its first screen).
pub const LOOKS: [u32; 3] = [12, 16, 24];

/// The share of α a study may spend on the decision it ends with after `rounds` rounds, when it
/// was measured in stages at `looks` (empty: one look, at the end, with all of α).
///
/// Lan and DeMets' spending function of Pocock's type, α·ln(1 + (e − 1)·t) at information
/// fraction t = rounds ÷ budget: each look spends the increment since the previous one, and the
/// increments add up to α whatever look the study stopped at. Spending by increments (a
/// Bonferroni split over the looks) ignores how the looks correlate, so it is conservative.
pub fn spent_alpha(looks: &[u32], rounds: usize) -> f64 {
    let Some(&budget) = looks.last() else {
        return ALPHA;
    };
    let spend = |t: f64| ALPHA * (1.0 + (std::f64::consts::E - 1.0) * t.min(1.0)).ln();
    let fraction = |n: u32| f64::from(n) / f64::from(budget);
    let index = looks
        .iter()
        .rposition(|&look| look as usize <= rounds)
        .unwrap_or(0);
    let before = index
        .checked_sub(1)
        .map_or(0.0, |i| spend(fraction(looks[i])));
    spend(fraction(looks[index])) - before
}

/// Every comparison the study's verdicts rest on, on `metric`: each verified engine against the
/// study's baseline (its first verified engine), and each rung against the engine it extends.
pub fn study_comparisons(study: &Study, metric: Metric) -> Vec<Comparison> {
    let alpha = spent_alpha(&study.looks, study.rounds());
    let engines: Vec<&EngineSummary> = (study.measured().into_iter())
        .filter(|engine| engine.verified)
        .collect();
    let mut comparisons = Vec::new();
    let Some((baseline, rest)) = engines.split_first() else {
        return comparisons;
    };
    for engine in rest {
        comparisons.push(Comparison::paired(engine, baseline, metric, alpha));
    }
    let ran = |name: &str| engines.iter().any(|e| e.engine == name);
    for engine in &engines {
        let nearest = crate::model::ladder::nearest_ran(&study.workload, &engine.engine, &ran);
        let Some((parent, _)) = nearest else {
            continue;
        };
        if parent == baseline.engine {
            continue;
        }
        if let Some(parent) = engines.iter().find(|e| e.engine == parent) {
            comparisons.push(Comparison::paired(engine, parent, metric, alpha));
        }
    }
    comparisons
}

/// The comparisons of a study's table on `metric` (`study_comparisons`), decided as one
/// exploratory family: what the table marks and the sentence under it says.
pub fn table_comparisons(study: &Study, metric: Metric) -> Vec<Comparison> {
    let mut comparisons = study_comparisons(study, metric);
    decide(&mut comparisons, Family::Exploratory);
    comparisons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_looks_spend_alpha_once_in_all() {
        let total: f64 = LOOKS.iter().map(|&n| spent_alpha(&LOOKS, n as usize)).sum();
        assert!((total - ALPHA).abs() < 1e-12, "{total}");
        assert!((spent_alpha(&[], 5) - ALPHA).abs() < 1e-12);
        // The first look spends the most: a study decided early needs a large difference.
        assert!(spent_alpha(&LOOKS, 12) > spent_alpha(&LOOKS, 16));
        // Rounds between looks count as the look before them.
        assert_eq!(spent_alpha(&LOOKS, 13), spent_alpha(&LOOKS, 12));
    }
}
