//! One engine against another in the same study, paired round by round: each round ran both,
//! close in time, so the ratio of the two in that round carries the machine's drift on both
//! sides and divides it out. The estimate is the Hodges–Lehmann median of the rounds' log
//! ratios, the interval the exact signed-rank one widened for the noise between blocks of rounds
//! and between consecutive rounds (`stats::blocks`), and the decision is read off that one
//! interval: beyond the margin (*different*: faster, slower, cheaper, costlier), inside
//! it (*equivalent*: no difference beyond 3%), inside the equivalence margin only (*within*:
//! within 10%, not shown within 3%), or none of these (*undecided*, with the smallest difference
//! the run could have decided). The interval printed is always the one the decision used.
//!
//! Decisions are made per family. A screen's comparisons hold together: each interval is at
//! 1 − α/m for m comparisons (Bonferroni), so the chance that any of them misleads stays under
//! α, and the screen states that one level. A section's comparisons are each at 1 − α. A study
//! measured with `--runs auto` looked at its comparisons after several stages of rounds; every
//! look decides at the same level, the one that keeps the error over all looks at α (Pocock's,
//! `stats::sequential::look_level`), so the printed interval is at the level the decision used
//! whichever look the study stopped at. How a study's comparisons are judged (its looks, and
//! the between-block noise its document showed) travels with the study as its `Judging`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::summary::{EngineSummary, Metric, Round};
use crate::stats::blocks::{BlockPrior, Blocked};
use crate::stats::rank::{Outcome, MIN_ROUNDS};
use crate::stats::sequential;

pub use crate::stats::sequential::ALPHA;

/// How a family of comparisons is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// A screen's comparisons, held together: each interval at 1 − α/m (Bonferroni over the m
    /// comparisons), both differences and bounds corrected alike.
    Simultaneous,
    /// Each comparison at its own 1 − α: a section's tables.
    Each,
}

/// How a study's comparisons are judged: the looks its rounds were measured at, which set the
/// level every look decides at, and how the between-block share of the noise spread over the
/// comparisons of its document, which each comparison's own blocks update (`stats::blocks`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Judging {
    /// The rounds after which the study looked (`--runs auto`), the last its budget; empty for
    /// one look at the end.
    pub looks: Vec<u32>,
    /// By `Metric::index`.
    noise: Arc<[BlockPrior; 4]>,
}

impl Judging {
    /// Judging at `looks`, the noise between blocks pooled over `pairs` (each a subject and its
    /// reference, paired by round: a document's comparisons of each engine with its baseline).
    pub fn pooled<'a>(
        looks: Vec<u32>,
        pairs: impl IntoIterator<Item = (&'a EngineSummary, &'a EngineSummary)>,
    ) -> Judging {
        let pairs: Vec<(&EngineSummary, &EngineSummary)> = pairs.into_iter().collect();
        let noise = Metric::ALL.map(|metric| {
            let series: Vec<Vec<(u32, f64)>> = (pairs.iter())
                .map(|(subject, reference)| paired_series(subject, reference, metric))
                .collect();
            BlockPrior::pooled(series.iter().map(Vec::as_slice))
        });
        Judging {
            looks,
            noise: Arc::new(noise),
        }
    }

    /// The same noise, at other looks (another study of the same document).
    pub fn at(&self, looks: Vec<u32>) -> Judging {
        Judging {
            looks,
            noise: Arc::clone(&self.noise),
        }
    }

    /// The two-sided error each of a family of `size` comparisons is decided at, at every look:
    /// its intervals are at 1 − this.
    pub fn level(&self, size: usize) -> f64 {
        sequential::look_level(&self.looks, ALPHA / size.max(1) as f64)
    }

    /// What the document's blocks showed on `metric`: the between-block share of a round's
    /// variance (`BlockPrior::mean_share`) and the lag-1 autocorrelation between rounds
    /// (`BlockPrior::lag`) every comparison's interval is widened for.
    pub fn noise(&self, metric: Metric) -> &BlockPrior {
        &self.noise[metric.index()]
    }
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
    /// The smallest relative difference this run's rounds and noise would decide four times in
    /// five (0.08: 8%; `stats::sequential::detectable`). None without an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
    /// How many times the variance of the estimate exceeds what independent rounds would give:
    /// 1 where the blocks and consecutive rounds showed nothing beyond the rounds' own noise;
    /// the interval is about its square root wider than the signed-rank one.
    #[serde(default = "one_f64")]
    pub design_effect: f64,
    /// Whether consecutive rounds were found to depend on one another beyond their blocks
    /// (their lag-1 autocorrelation against shuffles within blocks, at 5%): the interval is
    /// widened for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dependent: bool,
    /// The looks its study was measured at: the level each family decides at.
    #[serde(skip)]
    looks: Vec<u32>,
    #[serde(skip)]
    statistic: Option<Blocked>,
}

impl Comparison {
    /// `subject` over `reference` on `metric`, paired by round and judged as `judging` says;
    /// undecided until `decide`.
    pub fn paired(
        subject: &EngineSummary,
        reference: &EngineSummary,
        metric: Metric,
        judging: &Judging,
    ) -> Comparison {
        let series = paired_series(subject, reference, metric);
        let statistic = Blocked::paired(&series, judging.noise(metric));
        Comparison::of(
            &subject.engine,
            &reference.engine,
            metric,
            statistic,
            &judging.looks,
        )
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
        let statistic = Blocked::two_samples(before, after);
        Comparison::of(subject, reference, metric, statistic, &[])
    }

    fn of(
        subject: &str,
        reference: &str,
        metric: Metric,
        statistic: Blocked,
        looks: &[u32],
    ) -> Self {
        let margin = metric.margin().ln_1p();
        let p_different =
            (2.0 * statistic.p_above(margin).min(statistic.p_below(-margin))).min(1.0);
        let within = metric.equivalence_margin().ln_1p();
        let p_equivalent = statistic.p_below(within).max(statistic.p_above(-within));
        let alpha = sequential::look_level(looks, ALPHA);
        let mut comparison = Comparison {
            subject: subject.to_string(),
            reference: reference.to_string(),
            metric,
            rounds: statistic.samples(),
            ratio: statistic.estimate().exp(),
            low: None,
            high: None,
            confidence: 1.0 - alpha,
            outcome: Outcome::Undecided,
            p_different,
            p_equivalent,
            family_size: 1,
            detectable: None,
            design_effect: statistic.design_effect(),
            dependent: statistic.dependence().found(),
            looks: looks.to_vec(),
            statistic: Some(statistic),
        };
        comparison.set_interval(alpha);
        comparison
    }

    fn set_interval(&mut self, alpha: f64) {
        let interval = (self.statistic.as_ref()).and_then(|statistic| statistic.interval(alpha));
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

    /// Whether rounds up to `budget` are unlikely to decide it: seen from its interval now, at
    /// the level its family decides at (the same at the last look), the last look's interval
    /// has less than a one-in-ten chance of landing in a decided zone
    /// (`stats::sequential::futile`). Undecided comparisons without an interval yet are not
    /// futile; at the budget every comparison is.
    pub fn futile(&self, budget: usize) -> bool {
        let (Some(low), Some(high)) = (self.low, self.high) else {
            return false;
        };
        sequential::futile(
            self.ratio.ln(),
            (low.ln(), high.ln()),
            self.rounds,
            budget,
            self.metric.margin(),
            self.metric.equivalence_margin(),
            1.0 - self.confidence,
        )
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
            let interval = (low.ln(), high.ln());
            let margin = self.metric.margin();
            self.detectable = Some(sequential::detectable(interval, self.rounds, alpha, margin));
        }
    }

    /// The comparison's 95% interval on its own, whatever level its family decided it at: what a
    /// second run's estimate is held against.
    pub fn interval_95(&self) -> (Option<f64>, Option<f64>) {
        let interval = (self.statistic.as_ref()).and_then(|statistic| statistic.interval(ALPHA));
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
            statistic: None,
            ..self.clone()
        }
    }
}

/// The rounds in which both `subject` and `reference` measured `metric`: each round's block and
/// the log of the one's value over the other's, in time order.
pub fn paired_series(
    subject: &EngineSummary,
    reference: &EngineSummary,
    metric: Metric,
) -> Vec<(u32, f64)> {
    let mut series: Vec<(u32, u32, f64)> = (subject.rounds.iter())
        .filter_map(|round| {
            let other = reference.rounds.iter().find(|r| r.run == round.run)?;
            Some((round.run, round.block, log_ratio(round, other, metric)?))
        })
        .collect();
    series.sort_by_key(|&(run, _, _)| run);
    (series.into_iter())
        .map(|(_, block, ratio)| (block, ratio))
        .collect()
}

/// The log of `subject`'s value over `reference`'s in one round, when both have it.
fn log_ratio(subject: &Round, reference: &Round, metric: Metric) -> Option<f64> {
    let (a, b) = (subject.value(metric)?, reference.value(metric)?);
    (a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()).then(|| (a / b).ln())
}

/// Decides every comparison of one family, in place, each at the level its family asks for:
/// `Simultaneous`, 1 − α/m for m comparisons; `Each`, 1 − α; either at every look of its study
/// the level that keeps that error over all its looks (`stats::sequential::look_level`). The
/// outcome is read off that interval, so the words and the printed interval never disagree.
pub fn decide(comparisons: &mut [Comparison], family: Family) {
    let size = match family {
        Family::Simultaneous => comparisons.len().max(1),
        Family::Each => 1,
    };
    for comparison in comparisons.iter_mut() {
        comparison.family_size = size;
        let level = sequential::look_level(&comparison.looks, ALPHA / size as f64);
        comparison.decide_at(level);
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

fn one_f64() -> f64 {
    1.0
}

/// The stages `--runs auto` looks at, in rounds: decided early when the engines differ a lot or
/// not at all, more rounds where the machine's noise needs them. The last is the budget. The
/// first look is at 12: an exact rank test on n rounds can say no less than p = 2/2^n, and the
/// first screen decides some twenty comparisons at once (Holm), so fewer rounds could not decide
/// even a fivefold difference there (bench/verdicts.md: a default run looking first at 8 decided
/// none of its first screen).
pub const LOOKS: [u32; 3] = [12, 16, 24];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::stats::sequential::look_level;

    /// An engine whose rounds 1, 2, … hold `values` of `metric` (blocks of four rounds).
    pub(crate) fn engine(name: &str, metric: Metric, values: &[f64]) -> EngineSummary {
        EngineSummary::with_rounds(
            name,
            (values.iter().enumerate())
                .map(|(index, value)| Round::only(index as u32 + 1, metric, *value))
                .collect(),
        )
    }

    /// `rounds` rounds of a pair at `ratio`, each round's ratio moved by a fixed pattern of ±2%.
    fn pair(ratio: f64, rounds: usize) -> (EngineSummary, EngineSummary) {
        let base: Vec<f64> = (0..rounds).map(|i| 100.0 + i as f64).collect();
        let moved: Vec<f64> = (base.iter().enumerate())
            .map(|(i, b)| b * ratio * (1.0 + 0.02 * ((i * 7 % 5) as f64 - 2.0) / 2.0))
            .collect();
        (
            engine("b", Metric::Throughput, &moved),
            engine("a", Metric::Throughput, &base),
        )
    }

    #[test]
    fn every_look_decides_at_the_level_its_looks_allow_and_a_family_at_its_share() {
        let (b, a) = pair(1.3, 12);
        for (looks, one) in [(vec![], ALPHA), (LOOKS.to_vec(), look_level(&LOOKS, ALPHA))] {
            let judging = Judging::default().at(looks.clone());
            let mut each = [Comparison::paired(&b, &a, Metric::Throughput, &judging)];
            decide(&mut each, Family::Each);
            assert!(
                (each[0].confidence - (1.0 - one)).abs() < 1e-12,
                "{looks:?}"
            );
            let mut six = vec![each[0].clone(); 6];
            decide(&mut six, Family::Simultaneous);
            let share = look_level(&looks, ALPHA / 6.0);
            assert!((six[0].confidence - (1.0 - share)).abs() < 1e-12);
            assert_eq!(six[0].family_size, 6);
            // The same at every look: a study that needed 16 rounds is judged as one at 12.
            assert!(share <= one / 6.0 + 1e-15, "{share} {one}");
        }
        // Pocock's level for 12, 16 and 24 rounds: 2.45%, against 5% for one look.
        let level = look_level(&LOOKS, ALPHA);
        assert!(level > 0.024 && level < 0.025, "{level}");
    }

    #[test]
    fn blocks_that_disagree_widen_the_printed_interval_and_the_words_follow_it() {
        // Twelve rounds in three blocks: within each the ratio barely moves, between them it
        // moves by ±8%. Rounds taken one by one would call 1.10× different.
        let ratios = [1.02, 1.10, 1.18];
        let base: Vec<f64> = (0..12).map(|_| 100.0).collect();
        let moved: Vec<f64> = (0..12)
            .map(|i| 100.0 * ratios[i / 4] * (1.0 + 0.002 * (i % 4) as f64))
            .collect();
        let (b, a) = (
            engine("b", Metric::Throughput, &moved),
            engine("a", Metric::Throughput, &base),
        );
        let alone = Judging::default();
        let pooled = Judging::pooled(Vec::new(), [(&b, &a)]);
        let decided = |judging: &Judging| {
            let mut one = [Comparison::paired(&b, &a, Metric::Throughput, judging)];
            decide(&mut one, Family::Each);
            one[0].clone()
        };
        let (narrow, wide) = (decided(&alone), decided(&pooled));
        assert_eq!(
            narrow.outcome,
            Outcome::Different,
            "{}",
            narrow.verdict_text()
        );
        assert!(wide.design_effect > 2.0, "{}", wide.design_effect);
        assert!(
            wide.low.unwrap() < narrow.low.unwrap() && wide.high.unwrap() > narrow.high.unwrap()
        );
        let (low, high) = (wide.low.unwrap(), wide.high.unwrap());
        assert_eq!(
            wide.outcome,
            Outcome::of_interval(low, high, 0.03, 0.10),
            "{}",
            wide.verdict_text()
        );
        assert_eq!(wide.interval_95(), (wide.low, wide.high));
    }

    #[test]
    fn futility_and_the_detectable_difference_read_the_interval_the_decision_used() {
        // Rounds moving by ±30%: at 12 of 24 rounds, no look can narrow it into a zone.
        let base: Vec<f64> = (0..12).map(|i| 100.0 + i as f64).collect();
        let noisy: Vec<f64> = (base.iter().enumerate())
            .map(|(i, b)| b * (1.0 + 0.3 * ((i * 5 % 7) as f64 - 3.0) / 3.0))
            .collect();
        let judging = Judging::default().at(LOOKS.to_vec());
        let (b, a) = (
            engine("b", Metric::Throughput, &noisy),
            engine("a", Metric::Throughput, &base),
        );
        let mut wide = [Comparison::paired(&b, &a, Metric::Throughput, &judging)];
        decide(&mut wide, Family::Each);
        assert_eq!(wide[0].outcome, Outcome::Undecided);
        assert!(wide[0].futile(24), "{}", wide[0].verdict_text());
        let detectable = wide[0].detectable.unwrap();
        let (low, high) = (wide[0].low.unwrap().ln(), wide[0].high.unwrap().ln());
        assert!(detectable > (0.03f64.ln_1p() + (high - low) / 2.0).exp_m1());
        assert!(wide[0]
            .verdict_text()
            .contains("this run could decide differences beyond"));
        // 1.06× moving by ±1%: undecided at 12 rounds for now, but the last look can clear 3%.
        let (b, a) = pair(1.045, 12);
        let mut close = [Comparison::paired(&b, &a, Metric::Throughput, &judging)];
        decide(&mut close, Family::Simultaneous);
        if close[0].outcome == Outcome::Undecided {
            assert!(!close[0].futile(24), "{}", close[0].verdict_text());
        }
        // At the budget, every comparison is.
        assert!(close[0].futile(12));
    }
}
