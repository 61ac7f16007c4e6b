//! One engine against another in the same study, paired round by round: each round ran both,
//! close in time, so the ratio of the two in that round carries the machine's drift on both
//! sides and divides it out. The estimate is the Hodges–Lehmann median of the rounds' log
//! ratios, the interval the exact signed-rank one (`stats::rank`), and the decision is read off
//! that one interval: beyond the margin (*different*: faster, slower, cheaper, costlier), inside
//! it (*equivalent*: no difference beyond 3%), inside the equivalence margin only (*within*:
//! within 10%, not shown within 3%), or none of these (*undecided*, with the smallest difference
//! the run could have decided). The interval printed is always the one the decision used.
//!
//! Decisions are made per family. A screen's comparisons hold together: each interval is at
//! 1 − α/m for m comparisons (Bonferroni), so the chance that any of them misleads stays under
//! α, and the screen states that one level. A section's comparisons are each at 1 − α. A study
//! measured with `--runs auto` looked at its comparisons after several stages of rounds; each
//! look decides at a level that keeps the error over all looks at α (`look_alpha`).

use serde::{Deserialize, Serialize};

use crate::model::study::{EngineSummary, Round, Study};
use crate::stats::rank::{Outcome, Ranked, MIN_ROUNDS};

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
    /// A screen's comparisons, held together: each interval at 1 − α/m (Bonferroni over the m
    /// comparisons), both differences and bounds corrected alike.
    Simultaneous,
    /// Each comparison at its own 1 − α: a section's tables.
    Each,
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
    /// How many comparisons were decided together with this one (1: on its own): the interval is
    /// at 1 − α/`family_size` of the look's α.
    #[serde(default = "one")]
    pub family_size: usize,
    /// The smallest relative difference this run's rounds and noise could have decided (0.08:
    /// 8%): the margin plus its interval's half-width. None without an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
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
            family_size: 1,
            detectable: None,
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

    /// The interval's confidence as a sentence says it: "95%", "99.8%".
    pub fn confidence_text(&self) -> String {
        level_text(self.confidence)
    }

    /// Whether the subject did better than the reference (a decided difference only).
    pub fn better(&self) -> bool {
        (self.ratio > 1.0) == self.metric.higher_is_better()
    }

    pub fn is_different(&self) -> bool {
        self.outcome == Outcome::Different
    }

    /// "faster", "cheaper", …, "no difference beyond 3%", "within 10%" or "undecided": the
    /// words of its outcome, the margin in them.
    pub fn word(&self) -> String {
        let percent = |share: f64| format!("{:.0}%", share * 100.0);
        match self.outcome {
            Outcome::Different => self.metric.word(self.better()).to_string(),
            Outcome::Equivalent => {
                format!("no difference beyond {}", percent(self.metric.margin()))
            }
            Outcome::Within => format!(
                "within {}, not shown within {}",
                percent(self.metric.equivalence_margin()),
                percent(self.metric.margin())
            ),
            Outcome::Undecided => "undecided".to_string(),
        }
    }

    /// The comparison as a verdict reads it: "1.38× faster [1.05–1.75], 12 rounds", "1.01×, no
    /// difference beyond 3% [0.99–1.02], 12 rounds", "0.95×, undecided [0.70–1.33], 12 rounds:
    /// this run could decide differences beyond 36%".
    pub fn verdict_text(&self) -> String {
        let ratio = match self.ratio.is_finite() {
            true => format!("{:.2}×", self.ratio),
            false => "—".to_string(),
        };
        let said = match self.outcome {
            Outcome::Different => format!("{ratio} {} {}", self.word(), self.interval_text()),
            _ => format!("{ratio}, {} {}", self.word(), self.interval_text()),
        };
        match self
            .detectable
            .filter(|_| self.outcome == Outcome::Undecided)
        {
            Some(share) => format!(
                "{said}: this run could decide differences beyond {:.0}%",
                share * 100.0
            ),
            None => said,
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
    /// nor fit inside the equivalence margin. Undecided comparisons without an interval yet are
    /// not futile.
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
        let can_be_bounded = estimate.abs() + half < within;
        !can_differ && !can_be_bounded
    }

    /// Decides the comparison at two-sided level 1 − `alpha`: its interval at that level, and the
    /// outcome read off it.
    fn decide_at(&mut self, alpha: f64) {
        self.set_interval(alpha);
        self.detectable = None;
        self.outcome = match (self.low, self.high) {
            (Some(low), Some(high)) if self.rounds >= MIN_ROUNDS => Outcome::of_interval(
                low,
                high,
                self.metric.margin(),
                self.metric.equivalence_margin(),
            ),
            _ => Outcome::Undecided,
        };
        if let (Some(low), Some(high)) = (self.low, self.high) {
            let half = (high.ln() - low.ln()) / 2.0;
            self.detectable = Some((self.metric.margin().ln_1p() + half).exp_m1());
        }
    }

    /// The comparison's 95% interval on its own, whatever level its family decided it at: what a
    /// second run's estimate is held against.
    pub fn interval_95(&self) -> (Option<f64>, Option<f64>) {
        let interval = (self.ranked.as_ref()).and_then(|ranked| ranked.interval(ALPHA));
        match interval {
            Some((low, high)) => (Some(low.exp()), Some(high.exp())),
            None if (self.confidence - (1.0 - ALPHA)).abs() < 1e-9 => (self.low, self.high),
            None => (None, None),
        }
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

/// Decides every comparison of one family, in place, each at the level its family asks for:
/// `Simultaneous`, 1 − α/m for m comparisons; `Each`, 1 − α (α being the look's share, per
/// comparison). The outcome is read off that interval, so the words and the printed interval
/// never disagree.
pub fn decide(comparisons: &mut [Comparison], family: Family) {
    let size = match family {
        Family::Simultaneous => comparisons.len().max(1),
        Family::Each => 1,
    };
    for comparison in comparisons.iter_mut() {
        comparison.family_size = size;
        comparison.decide_at(comparison.alpha / size as f64);
    }
}

/// "95%", "97.5%", "99.9%": a level as sentences say it, with the digits that tell it from 100%.
pub fn level_text(level: f64) -> String {
    let percent = level * 100.0;
    if (percent - percent.round()).abs() < 1e-9 {
        return format!("{percent:.0}%");
    }
    let digits = (-(100.0 - percent).log10()).ceil().clamp(1.0, 4.0) as usize;
    format!("{percent:.digits$}%")
}

fn one() -> usize {
    1
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

/// The comparisons of a study's table on `metric`: as the analysis decided them, or, for a study
/// not analysed yet (a study deciding whether to stop), `study_comparisons` each on its own.
pub fn table_comparisons(study: &Study, metric: Metric) -> Vec<Comparison> {
    if !study.decided.is_empty() {
        // Analysed: what the analysis decided, never a second decision.
        return (study.decided.iter())
            .filter(|c| c.metric == metric)
            .cloned()
            .collect();
    }
    let mut comparisons = study_comparisons(study, metric);
    decide(&mut comparisons, Family::Each);
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
