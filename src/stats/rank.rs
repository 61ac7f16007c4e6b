//! Rank statistics for comparing two engines: how much one differs from the other, with an
//! interval that holds whatever the shape of this machine's noise, and tests against a margin.
//!
//! Two shapes of data share one machinery:
//! - **paired** (`Ranked::paired`): one log ratio per round, both engines measured in the same
//!   round. The estimate is Hodges–Lehmann's (the median of the Walsh averages, the pairwise
//!   means of the log ratios); the interval and tests are the exact Wilcoxon signed-rank ones.
//! - **two samples** (`Ranked::two_samples`): two independent sets of log values (two results
//!   documents). The estimate is the median of every difference between them; the interval and
//!   tests are the exact Mann–Whitney ones.
//!
//! Either way the data becomes a sorted list of "pair statistics" (Walsh averages, or
//! differences) and the null distribution of how many of them lie above a shift. Then the
//! interval at level 1 − α is a pair of order statistics, and the one-sided p-value of "the
//! shift is above d" is the chance of at least as many pair statistics above d under the null.
//! No normal approximation below a few thousand pair statistics; no assumption of equal
//! spread or normal noise.

use super::special::normal_cdf;

/// The decision about one comparison, read off its one interval: where the interval lies
/// against the metric's margin (3% for throughput and CPU) and its equivalence margin (10%).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The whole interval lies beyond the margin on one side: a difference this machine's noise
    /// does not explain. Only this outcome is called faster, slower, helped or hurt.
    Different,
    /// The whole interval lies inside the margin: no difference beyond it ("no difference
    /// beyond 3%").
    Equivalent,
    /// The whole interval lies inside the equivalence margin but not inside the margin: "within
    /// 10%, not shown within 3%". Not "the same": a 5% difference may hide here.
    Within,
    /// Neither: more rounds might decide it.
    Undecided,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Different => "different",
            Outcome::Equivalent => "equivalent",
            Outcome::Within => "within",
            Outcome::Undecided => "undecided",
        }
    }

    /// The outcome an interval [low, high] of a ratio reads as, against a margin and an
    /// equivalence margin (relative: 0.03, 0.10).
    pub fn of_interval(low: f64, high: f64, margin: f64, equivalence: f64) -> Outcome {
        let (beyond, inside) = (1.0 + margin, 1.0 + equivalence);
        if low > beyond || high < 1.0 / beyond {
            Outcome::Different
        } else if low >= 1.0 / beyond && high <= beyond {
            Outcome::Equivalent
        } else if low >= 1.0 / inside && high <= inside {
            Outcome::Within
        } else {
            Outcome::Undecided
        }
    }

    /// Whether the outcome says something holds (a difference, or a bound on one).
    pub fn decided(self) -> bool {
        self != Outcome::Undecided
    }
}

/// Fewest rounds any comparison is decided on: below six, one round can swing a signed-rank
/// interval across the whole range (and at five no 95% interval exists at all).
pub const MIN_ROUNDS: usize = 6;

/// Beyond these sizes the null distribution is approximated by a normal one (the exact one would
/// cost more than the comparison is worth; the approximation is then within a fraction of a
/// percent): rounds of paired data, and pairs of two samples.
const EXACT_ROUNDS: usize = 200;
const EXACT_PAIRS: usize = 2_500;

/// The pair statistics of a comparison, sorted, and the null distribution of how many lie above
/// the true shift.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    /// The samples behind it: rounds for paired data, the smaller sample for two samples.
    samples: usize,
    sorted: Vec<f64>,
    /// `cdf[c]` = P(count ≤ c) under the null, c = 0 ..= sorted.len(); empty when approximated.
    cdf: Vec<f64>,
    /// Mean and standard deviation of the count, for the normal approximation.
    mean: f64,
    sd: f64,
}

impl Ranked {
    /// Paired data: one difference per round (e.g. a log ratio). Non-finite values are left out.
    pub fn paired(differences: &[f64]) -> Ranked {
        let values: Vec<f64> = differences
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let n = values.len();
        let mut sorted = Vec::with_capacity(n * (n + 1) / 2);
        for (i, a) in values.iter().enumerate() {
            for b in &values[i..] {
                sorted.push((a + b) / 2.0);
            }
        }
        sorted.sort_by(f64::total_cmp);
        let m = sorted.len() as f64;
        let variance = (n * (n + 1) * (2 * n + 1)) as f64 / 24.0;
        let cdf = if n <= EXACT_ROUNDS {
            cumulative(&signed_rank_counts(n))
        } else {
            Vec::new()
        };
        Ranked {
            samples: n,
            sorted,
            cdf,
            mean: m / 2.0,
            sd: variance.sqrt(),
        }
    }

    /// Two independent samples: the statistic is `after − before` for every pair.
    pub fn two_samples(before: &[f64], after: &[f64]) -> Ranked {
        let finite = |values: &[f64]| -> Vec<f64> {
            values.iter().copied().filter(|v| v.is_finite()).collect()
        };
        let (before, after) = (finite(before), finite(after));
        let mut sorted = Vec::with_capacity(before.len() * after.len());
        for a in &after {
            for b in &before {
                sorted.push(a - b);
            }
        }
        sorted.sort_by(f64::total_cmp);
        let (m, n) = (before.len(), after.len());
        let count = sorted.len() as f64;
        let variance = (m * n * (m + n + 1)) as f64 / 12.0;
        let cdf = if sorted.len() <= EXACT_PAIRS {
            cumulative(&rank_sum_counts(m, n))
        } else {
            Vec::new()
        };
        Ranked {
            samples: m.min(n),
            sorted,
            cdf,
            mean: count / 2.0,
            sd: variance.sqrt(),
        }
    }

    /// Rounds (paired) or the smaller sample's size (two samples).
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The Hodges–Lehmann estimate: the median of the pair statistics (NaN for no data).
    pub fn estimate(&self) -> f64 {
        let m = self.sorted.len();
        match m {
            0 => f64::NAN,
            _ if m % 2 == 1 => self.sorted[m / 2],
            _ => (self.sorted[m / 2 - 1] + self.sorted[m / 2]) / 2.0,
        }
    }

    /// The interval of confidence 1 − `alpha` (two-sided), or None when the data are too few for
    /// any interval at that level.
    pub fn interval(&self, alpha: f64) -> Option<(f64, f64)> {
        let m = self.sorted.len();
        // The largest k with P(count ≤ k − 1) ≤ α/2: the interval is the k-th smallest and the
        // k-th largest pair statistic.
        let mut k = 0;
        while k < m && self.below_or_at(k) <= alpha / 2.0 {
            k += 1;
        }
        if k == 0 {
            return None;
        }
        Some((self.sorted[k - 1], self.sorted[m - k]))
    }

    /// One-sided p-value of "the shift is above `d`": the chance, were it exactly `d`, of at
    /// least as many pair statistics above `d` as observed.
    pub fn p_above(&self, d: f64) -> f64 {
        let above = self.sorted.len() - self.sorted.partition_point(|&v| v <= d);
        self.at_least(above)
    }

    /// One-sided p-value of "the shift is below `d`".
    pub fn p_below(&self, d: f64) -> f64 {
        let below = self.sorted.partition_point(|&v| v < d);
        self.at_least(below)
    }

    /// P(count ≥ c) under the null; by symmetry P(count ≤ M − c).
    fn at_least(&self, c: usize) -> f64 {
        if self.sorted.is_empty() {
            return 1.0;
        }
        if c == 0 {
            return 1.0;
        }
        self.below_or_at(self.sorted.len() - c)
    }

    /// P(count ≤ c) under the null.
    fn below_or_at(&self, c: usize) -> f64 {
        if !self.cdf.is_empty() {
            return self.cdf[c.min(self.cdf.len() - 1)];
        }
        // Normal approximation with continuity correction.
        normal_cdf((c as f64 + 0.5 - self.mean) / self.sd)
    }
}

/// What the signed-rank statistic's null distribution counts: for n values, the number of sign
/// assignments giving each sum of positive ranks, 0 ..= n(n+1)/2, divided by 2^n.
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let top = n * (n + 1) / 2;
    let mut counts = vec![0.0; top + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for total in (rank..=top).rev() {
            counts[total] += counts[total - rank];
        }
        // Halving at every step keeps the numbers in range for any n.
        for count in counts.iter_mut() {
            *count /= 2.0;
        }
    }
    counts
}

/// The Mann–Whitney statistic's null distribution for samples of `m` and `n`: the chance of each
/// count 0 ..= m·n of pairs in which the second sample's value is the larger.
fn rank_sum_counts(m: usize, n: usize) -> Vec<f64> {
    // f(i, j, u): orderings of i first-sample and j second-sample values with count u. The
    // largest value is either from the second sample (it exceeds all i others: f(i, j−1, u−i))
    // or from the first (it adds nothing: f(i−1, j, u)). Rows over j, rolled over i.
    let top = m * n;
    let mut previous: Vec<Vec<f64>> = (0..=n)
        .map(|_| {
            let mut ways = vec![0.0; top + 1];
            ways[0] = 1.0;
            ways
        })
        .collect();
    for i in 1..=m {
        let mut current: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        for j in 0..=n {
            let mut ways = previous[j].clone();
            if j > 0 {
                for u in i..=top {
                    ways[u] += current[j - 1][u - i];
                }
            }
            current.push(ways);
        }
        previous = current;
    }
    let ways = &previous[n];
    let total: f64 = ways.iter().sum();
    ways.iter().map(|w| w / total).collect()
}

fn cumulative(probabilities: &[f64]) -> Vec<f64> {
    let mut sum = 0.0;
    probabilities
        .iter()
        .map(|p| {
            sum += p;
            sum.min(1.0)
        })
        .collect()
}

/// Holm's step-down procedure over a family's p-values at family-wise level `alpha`: for each,
/// the level it was rejected at, or None.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<Option<f64>> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut levels = vec![None; m];
    for (rank, &index) in order.iter().enumerate() {
        let level = alpha / (m - rank) as f64;
        if p_values[index] > level {
            break;
        }
        levels[index] = Some(level);
    }
    levels
}

/// Benjamini–Hochberg's procedure at false discovery rate `q`: for each p-value, the level it
/// was rejected at, or None.
pub fn benjamini_hochberg(p_values: &[f64], q: f64) -> Vec<Option<f64>> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let passed = (0..m)
        .rev()
        .find(|&rank| p_values[order[rank]] <= q * (rank + 1) as f64 / m as f64);
    let mut levels = vec![None; m];
    if let Some(last) = passed {
        let level = q * (last + 1) as f64 / m as f64;
        for &index in &order[..=last] {
            levels[index] = Some(level);
        }
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_signed_rank_distribution_matches_its_tables() {
        // n = 4: 16 sign assignments over sums 0..=10.
        let counts: Vec<f64> = signed_rank_counts(4).iter().map(|p| p * 16.0).collect();
        assert_eq!(counts, [1., 1., 1., 2., 2., 2., 2., 2., 1., 1., 1.]);
        // n = 10: P(T ≤ 8) = 0.0244 (the 5% two-sided critical value is 8).
        let cdf = cumulative(&signed_rank_counts(10));
        assert!((cdf[8] - 0.0244).abs() < 5e-4, "{}", cdf[8]);
        assert!(cdf[9] > 0.025);
    }

    #[test]
    fn the_rank_sum_distribution_matches_its_tables() {
        // m = n = 2: orderings xxyy, xyxy, xyyx, yxxy, yxyx, yyxx give counts 4,3,2,2,1,0.
        let counts: Vec<f64> = rank_sum_counts(2, 2).iter().map(|p| p * 6.0).collect();
        for (got, want) in counts.iter().zip([1., 1., 2., 1., 1.]) {
            assert!(close(*got, want), "{counts:?}");
        }
        // m = n = 8: the 5% two-sided critical value of U is 13.
        let cdf = cumulative(&rank_sum_counts(8, 8));
        assert!(
            cdf[13] <= 0.025 && cdf[14] > 0.025,
            "{} {}",
            cdf[13],
            cdf[14]
        );
        assert!(close(cdf[64], 1.0));
    }

    #[test]
    fn six_rounds_on_one_side_give_an_interval_and_five_give_none() {
        let six = Ranked::paired(&[0.1, 0.12, 0.08, 0.11, 0.09, 0.1]);
        let (low, high) = six.interval(0.05).expect("an interval");
        assert!(close(low, 0.08) && close(high, 0.12), "{low} {high}");
        assert!(close(six.estimate(), 0.1));
        assert!(Ranked::paired(&[0.1; 5]).interval(0.05).is_none());
        // Every round above 0.05: p = 1/64 one-sided.
        assert!(close(six.p_above(0.05), 1.0 / 64.0));
        assert!(close(six.p_below(0.05), 1.0));
    }

    #[test]
    fn the_interval_and_the_tests_agree() {
        let values = [
            0.03, -0.01, 0.05, 0.02, 0.04, 0.06, 0.01, 0.035, 0.045, 0.025,
        ];
        let ranked = Ranked::paired(&values);
        let (low, high) = ranked.interval(0.05).unwrap();
        // Just below the interval's low end the shift is significantly above; just above, not.
        assert!(ranked.p_above(low - 1e-9) <= 0.025);
        assert!(ranked.p_above(low + 1e-9) > 0.025);
        assert!(ranked.p_below(high + 1e-9) <= 0.025);
        assert!(ranked.p_below(high - 1e-9) > 0.025);
    }

    #[test]
    fn two_samples_estimate_the_shift_between_them() {
        let before = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0];
        let after: Vec<f64> = before.iter().map(|v| v + 0.5).collect();
        let ranked = Ranked::two_samples(&before, &after);
        assert!(close(ranked.estimate(), 0.5));
        let (low, high) = ranked.interval(0.05).unwrap();
        assert!(low > 0.3 && high < 0.7, "{low} {high}");
        assert!(ranked.p_above(0.2) < 0.01);
    }

    #[test]
    fn many_rounds_use_the_normal_approximation_consistently() {
        let values: Vec<f64> = (0..252).map(|i| f64::from(i * 37 % 101) - 50.0).collect();
        let ranked = Ranked::paired(&values);
        assert!(ranked.cdf.is_empty());
        let (low, high) = ranked.interval(0.05).unwrap();
        assert!(low < 0.0 && high > 0.0, "{low} {high}");
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-4);
    }

    #[test]
    fn holm_and_benjamini_hochberg_reject_as_their_tables_say() {
        let p = [0.01, 0.04, 0.03, 0.005];
        // Holm at 0.05: 0.005 ≤ 0.0125, 0.01 ≤ 0.0167, 0.03 > 0.025: stop.
        let holm = holm(&p, 0.05);
        assert_eq!(holm.iter().filter(|l| l.is_some()).count(), 2);
        assert!(holm[0].is_some() && holm[3].is_some() && holm[2].is_none());
        // BH at 0.05: 0.04 ≤ 0.05 (rank 4): all four.
        assert!(benjamini_hochberg(&p, 0.05).iter().all(Option::is_some));
        assert!(benjamini_hochberg(&[0.2, 0.5], 0.05)
            .iter()
            .all(Option::is_none));
    }
}
