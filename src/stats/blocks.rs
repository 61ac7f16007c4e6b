//! An interval that includes the noise between blocks of rounds, and between consecutive
//! rounds.
//!
//! A study's rounds are measured in blocks of consecutive rounds, with what persists across
//! rounds refreshed between blocks. A paired comparison's log ratio in round j of block i is
//! then modelled as μ + b_i + e_ij: a block's shift b_i (variance σ_b²) on top of each round's
//! own noise e_ij (variance σ_w²). The signed-rank interval (`Ranked::paired`) treats every
//! round as independent, so it leaves σ_b out and is too narrow by the design effect
//! D = Var(mean | blocks) ÷ Var(mean | independent rounds) (Kalibera and Jones' variance
//! components). Here the interval is the signed-rank one widened by √D about the
//! Hodges–Lehmann estimate, so where σ_b is nil it is the exact signed-rank interval.
//!
//! The variance components are those of the rounds' ranks, not of their values. The
//! Hodges–Lehmann estimate moves as the mean of its influence function, which is the round's
//! rank (F(x) − ½ over ∫f²), so its design effect is the one of the ranks; the values' design
//! effect is a ratio of variances that one far round inflates within its block while the
//! estimate barely moves. Simulated with one round in ten three times as far, the values' design
//! effect let a false "different" at the margin through 2.5–2.8% of the time per side where the
//! promise is 2.5%; the ranks' 2.2–2.6%, and with each comparison's prior pooled from the others
//! (`BlockPrior::judging`) 2.2–2.5% (docs/verdicts.md).
//!
//! D rests on the share λ = σ_b²/σ_w², and one comparison's three to six blocks say little
//! about it (its F ratio of between- to within-block mean squares has 2 to 5 degrees of
//! freedom). Estimated from the comparison alone (`Blocked::alone`), D is above 1 half the time
//! on a quiet machine (95% intervals 14% wider for nothing at 12 rounds) and still too small
//! where σ_b is real (88–90% coverage at 95%, simulated). So λ is borrowed across comparisons,
//! empirical-Bayes: `BlockPrior` estimates how λ is spread over a document's comparisons of one
//! metric (a nonparametric maximum-likelihood mixture on a grid); each comparison is judged by
//! the mixture of the others, its own weight spread over the shares the document showed, which
//! its own F ratio updates to its posterior; and the interval is the one that covers at its
//! level averaged over the posterior (each λ giving Student's t with the rounds' degrees of
//! freedom, scaled by √D(λ)). A quiet document puts its weight on λ = 0 and its intervals stay
//! within a few per cent of the exact ones; a comparison whose own blocks disagree far beyond
//! its rounds' noise widens however quiet the rest are.
//!
//! Consecutive rounds may depend on one another beyond their blocks (a burst of slow rounds
//! across a block's edge). Each comparison is checked (`Dependence`: its lag-1 autocorrelation
//! against shuffles within blocks), and so is the document as a whole, which can see what one
//! comparison's 12 rounds cannot; either widens the interval as first-order autoregression at
//! the autocorrelation found would (less, for the document's, what the blocks already took in).
//!
//! The p-values are those of the same widened interval: `p_above(d)` is the smallest α/2 at
//! which the interval of level 1 − α lies wholly above d.

use std::sync::{Arc, OnceLock};

use super::rank::Ranked;
use super::special::{f_log_density, normal_quantile, t_central, t_central_quantile, t_density};

/// The shares λ = σ_b²/σ_w² the mixture is put on: none, then from 1% to 10,000 times the
/// rounds' own variance, 40% apart. The top is far: blocks each on a file laid out afresh can
/// hold rounds that barely move within them and far apart between them, and a grid that
/// stopped at 100 would cap such a comparison's design effect well below what its blocks show.
const SHARES: usize = 43;

fn shares() -> &'static [f64; SHARES] {
    static SHARES_GRID: OnceLock<[f64; SHARES]> = OnceLock::new();
    SHARES_GRID.get_or_init(|| {
        let mut grid = [0.0; SHARES];
        for (i, share) in grid.iter_mut().enumerate().skip(1) {
            *share = 0.01 * 1.4f64.powi(i as i32 - 1);
        }
        grid
    })
}

/// A comparison's rounds, as their ranks among themselves, split into the variance between its
/// blocks and within them (one-way analysis of variance, blocks of any size).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Anova {
    rounds: usize,
    blocks: usize,
    /// Sums of squares between the blocks' means and within the blocks.
    between: f64,
    within: f64,
    /// The block size that weighs σ_b² in the between-block mean square, (N − Σnᵢ²/N)/(k − 1),
    /// and the one that weighs it in the variance of the mean, Σnᵢ²/N (both the block size when
    /// blocks are equal).
    effective_size: f64,
    mean_size: f64,
}

impl Anova {
    /// None where the rounds cannot separate the two: fewer than two blocks, or no block with
    /// two rounds.
    fn of(rounds: &[(u32, f64)]) -> Option<Anova> {
        let rounds = mid_ranks(rounds);
        let mut blocks: Vec<(u32, f64, usize)> = Vec::new();
        for &(block, value) in &rounds {
            match blocks.iter_mut().find(|(id, _, _)| *id == block) {
                Some((_, sum, count)) => {
                    *sum += value;
                    *count += 1;
                }
                None => blocks.push((block, value, 1)),
            }
        }
        let n: usize = blocks.iter().map(|(_, _, count)| count).sum();
        let k = blocks.len();
        if k < 2 || n <= k {
            return None;
        }
        let grand = blocks.iter().map(|(_, sum, _)| sum).sum::<f64>() / n as f64;
        let mean_of = |block: u32| {
            let (_, sum, count) = blocks
                .iter()
                .find(|(id, _, _)| *id == block)
                .expect("a block");
            sum / *count as f64
        };
        let within = (rounds.iter())
            .map(|&(block, value)| (value - mean_of(block)).powi(2))
            .sum();
        let between = (blocks.iter())
            .map(|&(_, sum, count)| count as f64 * (sum / count as f64 - grand).powi(2))
            .sum();
        let squares: f64 = blocks.iter().map(|(_, _, c)| (*c * *c) as f64).sum();
        Some(Anova {
            rounds: n,
            blocks: k,
            between,
            within,
            effective_size: (n as f64 - squares / n as f64) / (k - 1) as f64,
            mean_size: squares / n as f64,
        })
    }

    fn between_df(&self) -> f64 {
        (self.blocks - 1) as f64
    }

    fn within_df(&self) -> f64 {
        (self.rounds - self.blocks) as f64
    }

    /// Whether the blocks carry evidence about λ: both mean squares non-zero.
    fn informative(&self) -> bool {
        self.within > 0.0 && self.between > 0.0
    }

    /// The ratio of the between- to the within-block mean square.
    fn ratio(&self) -> f64 {
        (self.between / self.between_df()) / (self.within / self.within_df())
    }

    /// The log likelihood of the share λ: F ÷ (1 + n₀λ) follows Fisher's F. Informative
    /// analyses only.
    fn log_likelihood(&self, share: f64) -> f64 {
        let scale = 1.0 + self.effective_size * share;
        f_log_density(self.ratio() / scale, self.between_df(), self.within_df()) - scale.ln()
    }

    /// The design effect were the share λ: the variance of the rounds' mean, σ_w²(1 + λΣnᵢ²/N)/N
    /// with σ_w² estimated from both sums of squares given λ, over the variance independent
    /// rounds would give it, s²/N. 1 at λ = 0.
    fn design_effect(&self, share: f64) -> f64 {
        let scale = 1.0 + self.effective_size * share;
        let rounds_variance = (self.within + self.between / scale) / (self.rounds - 1) as f64;
        let total = (self.within + self.between) / (self.rounds - 1) as f64;
        rounds_variance * (1.0 + share * self.mean_size) / total
    }
}

/// How the between-block share λ is spread over a set of comparisons (a document's, on one
/// metric): the prior each comparison's own blocks update. Estimated by nonparametric maximum
/// likelihood (EM over the grid of shares), so it can say "most comparisons have none, a few
/// have much" as well as "all have some".
#[derive(Clone, Debug, PartialEq)]
pub struct BlockPrior {
    weights: [f64; SHARES],
    /// How many comparisons informed it.
    series: usize,
    /// The lag-1 autocorrelation between rounds the comparisons show together (0 where they
    /// show none beyond chance).
    lag: f64,
    /// Each of those comparisons' analysis and its likelihood over the grid (top 1), so that
    /// one of them is judged by a prior pooled from the others.
    pooled: Arc<[(Anova, [f64; SHARES])]>,
    /// The largest grid index any of those comparisons is likeliest at: how far the judged
    /// comparison's spread weight reaches, with its own likeliest share.
    reach: usize,
}

impl BlockPrior {
    /// The prior pooled from the comparisons' rounds, each a series of (block, log ratio) in
    /// time order. Comparisons whose blocks say nothing (one block, or no spread) are left out;
    /// with none left, the prior is that there is no block component.
    pub fn pooled<'a>(series: impl IntoIterator<Item = &'a [(u32, f64)]>) -> BlockPrior {
        let series: Vec<&[(u32, f64)]> = series.into_iter().collect();
        let lag = pooled_lag(&series);
        let pooled: Arc<[(Anova, [f64; SHARES])]> = (series.into_iter())
            .filter_map(Anova::of)
            .filter(Anova::informative)
            .map(|anova| {
                let logs = shares().map(|share| anova.log_likelihood(share));
                let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (anova, logs.map(|log| (log - top).exp()))
            })
            .collect();
        if pooled.is_empty() {
            return BlockPrior {
                lag,
                ..BlockPrior::none()
            };
        }
        let weights = mixture_weights(pooled.iter(), [1.0 / SHARES as f64; SHARES]);
        let reach = (pooled.iter())
            .map(|(_, likelihood)| likeliest(likelihood))
            .max()
            .unwrap_or(0);
        BlockPrior {
            weights,
            series: pooled.len(),
            lag,
            pooled,
            reach,
        }
    }

    /// The prior the comparison with `anova` is judged by: pooled from the other comparisons,
    /// so its own blocks count once (in its likelihood) rather than twice, with one
    /// comparison's weight spread evenly over the grid's shares up to the largest any of them
    /// is likeliest at (the judged one's weight, whose share is unknown until its own blocks
    /// are seen), so one whose blocks alone disagree can still reach a share none of the
    /// others showed.
    fn judging(&self, anova: &Anova) -> [f64; SHARES] {
        if self.series == 0 {
            return self.weights;
        }
        let own = self.pooled.iter().position(|(pooled, _)| pooled == anova);
        let (weights, others) = match own {
            Some(own) if self.pooled.len() > 1 => {
                let others = (self.pooled.iter().enumerate())
                    .filter(|(index, _)| *index != own)
                    .map(|(_, pooled)| pooled);
                (mixture_weights(others, self.weights), self.pooled.len() - 1)
            }
            // Pooled from itself alone (`Blocked::alone`): the plug-in estimate.
            Some(_) => return self.weights,
            None => (self.weights, self.pooled.len()),
        };
        // The spread reaches no further than the largest share some comparison of the
        // document (this one included) is likeliest at: spread to the grid's top, a comparison
        // of two blocks, which barely bound the share from above, kept weight at shares
        // nothing in the document showed, enough to widen a strict level's interval.
        let own = match anova.informative() {
            true => likeliest(&shares().map(|share| anova.log_likelihood(share))),
            false => 0,
        };
        let reach = self.reach.max(own);
        let spread = 1.0 / (others + 1) as f64;
        let mut weights = weights.map(|weight| (1.0 - spread) * weight);
        for weight in &mut weights[..=reach] {
            *weight += spread / (reach + 1) as f64;
        }
        weights
    }

    /// No block component anywhere: every interval the exact signed-rank one.
    pub fn none() -> BlockPrior {
        let mut weights = [0.0; SHARES];
        weights[0] = 1.0;
        BlockPrior {
            weights,
            series: 0,
            lag: 0.0,
            pooled: Arc::new([]),
            reach: 0,
        }
    }

    /// How many comparisons it was pooled from.
    pub fn series(&self) -> usize {
        self.series
    }

    /// The lag-1 autocorrelation between consecutive rounds that the comparisons show together
    /// beyond chance (0 where they show none): every comparison's interval is widened for it.
    pub fn lag(&self) -> f64 {
        self.lag
    }

    /// The between-block variance as a share of a round's (λ = σ_b²/σ_w², of the rounds'
    /// ranks), averaged over the comparisons: what a reader is told this machine's blocks added.
    pub fn mean_share(&self) -> f64 {
        (self.weights.iter().zip(shares()))
            .map(|(w, s)| w * s)
            .sum()
    }
}

impl Default for BlockPrior {
    fn default() -> BlockPrior {
        BlockPrior::none()
    }
}

/// The grid index a likelihood over the grid is largest at (the first, on a tie).
fn likeliest(likelihood: &[f64; SHARES]) -> usize {
    let top = likelihood.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    likelihood.iter().position(|&l| l == top).unwrap_or(0)
}

/// The mixture's weights over the grid that maximise the likelihood of `pooled` (EM from
/// `start`: each comparison's posterior over the grid, averaged). The likelihood rises at every
/// step; stop once no weight moves by 1e-4.
fn mixture_weights<'a>(
    pooled: impl Iterator<Item = &'a (Anova, [f64; SHARES])> + Clone,
    start: [f64; SHARES],
) -> [f64; SHARES] {
    let mut weights = start;
    let count = pooled.clone().count() as f64;
    for _ in 0..150 {
        let mut next = [0.0; SHARES];
        for (_, likelihood) in pooled.clone() {
            let total: f64 = (weights.iter().zip(likelihood)).map(|(w, l)| w * l).sum();
            for (n, (w, l)) in next.iter_mut().zip(weights.iter().zip(likelihood)) {
                *n += w * l / total;
            }
        }
        let next = next.map(|n| n / count);
        let moved = (next.iter().zip(&weights)).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        weights = next;
        if moved < 1e-4 {
            break;
        }
    }
    weights
}

/// One design effect of a comparison's posterior mixture, with its weight.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Component {
    weight: f64,
    design_effect: f64,
}

/// Levels at which the widening is computed once; between them it is interpolated in log α.
const LEVELS: usize = 24;
const LOWEST_LEVEL: f64 = 1e-10;
const HIGHEST_LEVEL: f64 = 0.999;

/// A paired comparison whose interval includes the between-block component: the signed-rank
/// interval about the Hodges–Lehmann estimate, widened by the posterior design effect.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocked {
    ranked: Ranked,
    blocks: usize,
    dependence: Dependence,
    /// The posterior mixture of design effects; empty when every weight is on D = 1.
    mixture: Vec<Component>,
    /// The widening at each of `LEVELS` levels α, log-spaced from `LOWEST_LEVEL` to
    /// `HIGHEST_LEVEL`, each computed when first asked for (none when the mixture is empty).
    widening: Vec<OnceLock<f64>>,
    degrees: u32,
}

impl Blocked {
    /// `rounds`: the comparison's (block, log ratio) in time order; `prior`: how λ is spread
    /// over the comparisons it is judged among (`BlockPrior::pooled`).
    pub fn paired(rounds: &[(u32, f64)], prior: &BlockPrior) -> Blocked {
        let values: Vec<f64> = rounds.iter().map(|&(_, value)| value).collect();
        let ranked = Ranked::paired(&values);
        let anova = Anova::of(rounds);
        let blocks = {
            let mut ids: Vec<u32> = (rounds.iter())
                .filter(|(_, v)| v.is_finite())
                .map(|&(block, _)| block)
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        let dependence = Dependence::of(rounds);
        let own = match dependence.found() {
            true => dependence.design_effect(ranked.samples()),
            false => 1.0,
        };
        // The document's dependence, less the part the blocks already see: autoregression
        // within a block moves the block's mean, which the blocks' share takes in; what it
        // adds across blocks and to the rounds' spread they cannot.
        let unseen = match blocks {
            0 => 0.0,
            _ => {
                let size = ranked.samples() as f64 / blocks as f64;
                (autoregression_effect(prior.lag, ranked.samples())
                    - blocks_see(prior.lag, size.round().max(1.0) as usize))
                .max(0.0)
            }
        };
        let mut mixture = match anova {
            Some(anova) if anova.within > 0.0 || anova.between > 0.0 => posterior(&anova, prior),
            _ => Vec::new(),
        };
        if own > 1.0 || unseen > 0.0 {
            if mixture.is_empty() {
                mixture.push(Component {
                    weight: 1.0,
                    design_effect: 1.0,
                });
            }
            for component in &mut mixture {
                component.design_effect = (component.design_effect + unseen).max(own);
            }
        }
        let mixture = merged(mixture);
        let degrees = ranked.samples().saturating_sub(1) as u32;
        let widening = match mixture.is_empty() || degrees == 0 {
            true => Vec::new(),
            false => (0..LEVELS).map(|_| OnceLock::new()).collect(),
        };
        Blocked {
            ranked,
            blocks,
            dependence,
            mixture,
            widening,
            degrees,
        }
    }

    /// Two independent samples of log values (two documents' rounds): no blocks to widen for,
    /// the exact Mann–Whitney interval and tests about the median difference `after − before`.
    pub fn two_samples(before: &[f64], after: &[f64]) -> Blocked {
        let ranked = Ranked::two_samples(before, after);
        Blocked {
            degrees: ranked.samples().saturating_sub(1) as u32,
            ranked,
            blocks: 0,
            dependence: Dependence::none(),
            mixture: Vec::new(),
            widening: Vec::new(),
        }
    }

    /// The comparison judged alone, its prior pooled from its own blocks (a plug-in estimate of
    /// λ: prefer `paired` with a document's prior, which can tell noise from a block component).
    pub fn alone(rounds: &[(u32, f64)]) -> Blocked {
        Blocked::paired(rounds, &BlockPrior::pooled([rounds]))
    }

    pub fn samples(&self) -> usize {
        self.ranked.samples()
    }

    /// How many blocks the rounds came in.
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// What the check of consecutive rounds found.
    pub fn dependence(&self) -> Dependence {
        self.dependence
    }

    /// The Hodges–Lehmann estimate (as `Ranked::estimate`).
    pub fn estimate(&self) -> f64 {
        self.ranked.estimate()
    }

    /// The posterior mean design effect: how much the variance of the estimate exceeds what
    /// independent rounds would give (1 where the block component is nil).
    pub fn design_effect(&self) -> f64 {
        match self.mixture.is_empty() {
            true => 1.0,
            false => (self.mixture.iter())
                .map(|c| c.weight * c.design_effect)
                .sum::<f64>()
                .max(1.0),
        }
    }

    /// The factor the signed-rank interval of level 1 − `alpha` is widened by (≥ 1).
    pub fn widening(&self, alpha: f64) -> f64 {
        if self.widening.is_empty() {
            return 1.0;
        }
        let position = (alpha.clamp(LOWEST_LEVEL, HIGHEST_LEVEL).ln() - LOWEST_LEVEL.ln())
            / (HIGHEST_LEVEL.ln() - LOWEST_LEVEL.ln())
            * (LEVELS - 1) as f64;
        let below = (position.floor() as usize).min(LEVELS - 2);
        let fraction = position - below as f64;
        let at = |i: usize| {
            *self.widening[i].get_or_init(|| widening_at(&self.mixture, self.degrees, level_at(i)))
        };
        at(below) * (1.0 - fraction) + at(below + 1) * fraction
    }

    /// The interval of confidence 1 − `alpha` (two-sided), or None where the rounds are too
    /// few for the signed-rank interval at that level.
    pub fn interval(&self, alpha: f64) -> Option<(f64, f64)> {
        let (low, high) = self.ranked.interval(alpha)?;
        let (estimate, factor) = (self.estimate(), self.widening(alpha));
        Some((
            estimate - factor * (estimate - low),
            estimate + factor * (high - estimate),
        ))
    }

    /// One-sided p-value of "the shift is above `d`": the smallest α/2 at which the interval
    /// of level 1 − α lies wholly above `d`.
    pub fn p_above(&self, d: f64) -> f64 {
        self.p_beyond(d, 1.0)
    }

    /// One-sided p-value of "the shift is below `d`".
    pub fn p_below(&self, d: f64) -> f64 {
        self.p_beyond(d, -1.0)
    }

    /// `side` 1: above `d`; −1: below. The interval at level 1 − α lies beyond `d` exactly
    /// when the signed-rank interval lies beyond d′ = estimate − (estimate − d)/w(α), d pulled
    /// toward the estimate by the widening: so the p-value is the smallest x with
    /// g(x) = p_ranked(d′(2x)) ≤ x. g falls as x rises (w falls with α), so bisection finds it.
    fn p_beyond(&self, d: f64, side: f64) -> f64 {
        let ranked_p = |shift: f64| match side > 0.0 {
            true => self.ranked.p_above(shift),
            false => self.ranked.p_below(shift),
        };
        let estimate = self.estimate();
        let distance = side * (estimate - d);
        if self.widening.is_empty() || distance.is_nan() || distance <= 0.0 {
            return ranked_p(d);
        }
        let pulled = |x: f64| estimate - side * distance / self.widening(2.0 * x);
        let g = |x: f64| ranked_p(pulled(x));
        let (mut low, mut high) = (LOWEST_LEVEL / 2.0, 0.5);
        if g(high) > high {
            return g(high);
        }
        if g(low) <= low {
            return g(low);
        }
        // Invariant: g(low) > low, g(high) ≤ high; halve the log gap to 1e-12 relative.
        while high / low > 1.0 + 1e-12 {
            let middle = (low * high).sqrt();
            if g(middle) <= middle {
                high = middle;
            } else {
                low = middle;
            }
        }
        high
    }
}

/// Rounds are taken as exchangeable within their block; a lag-1 autocorrelation beyond what
/// shuffling within blocks gives at this level is called dependence.
pub const DEPENDENCE_LEVEL: f64 = 0.05;

/// Shuffles of the rounds within their blocks that the lag-1 test compares with.
const SHUFFLES: usize = 499;

/// The check that consecutive rounds are independent beyond their blocks: the series' lag-1
/// autocorrelation against its distribution with the rounds shuffled within each block (which
/// keeps the blocks' shifts, so a block component alone is not called dependence).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dependence {
    /// The lag-1 autocorrelation of the rounds in time order.
    pub lag1: f64,
    /// The one-sided p-value of a lag-1 autocorrelation this high under shuffling.
    pub p_value: f64,
}

impl Dependence {
    fn of(rounds: &[(u32, f64)]) -> Dependence {
        let finite: Vec<(u32, f64)> = (rounds.iter().copied())
            .filter(|(_, v)| v.is_finite())
            .collect();
        let mut values: Vec<f64> = finite.iter().map(|&(_, v)| v).collect();
        let observed = lag1(&values);
        if values.len() < 4 || !observed.is_finite() {
            return Dependence::none();
        }
        // The positions of each block's rounds.
        let mut blocks: Vec<(u32, Vec<usize>)> = Vec::new();
        for (position, &(block, _)) in finite.iter().enumerate() {
            match blocks.iter_mut().find(|(id, _)| *id == block) {
                Some((_, positions)) => positions.push(position),
                None => blocks.push((block, vec![position])),
            }
        }
        // A fixed seed: the same rounds always get the same p-value.
        let mut rng = fastrand::Rng::with_seed(0x5eed_1a91);
        let mut as_high = 0;
        for _ in 0..SHUFFLES {
            for (_, positions) in &blocks {
                for i in (1..positions.len()).rev() {
                    let j = rng.usize(..=i);
                    values.swap(positions[i], positions[j]);
                }
            }
            as_high += usize::from(lag1(&values) >= observed - 1e-12);
        }
        Dependence {
            lag1: observed,
            p_value: (1 + as_high) as f64 / (1 + SHUFFLES) as f64,
        }
    }

    /// Nothing found: too few rounds to tell, or none looked at.
    fn none() -> Dependence {
        Dependence {
            lag1: 0.0,
            p_value: 1.0,
        }
    }

    /// Whether the rounds were found to depend on one another.
    pub fn found(&self) -> bool {
        self.p_value <= DEPENDENCE_LEVEL
    }

    /// The design effect of first-order autoregression at the lag-1 autocorrelation found,
    /// bias-corrected (φ = r + (1 + 3r)/n, Marriott and Pope), over `rounds` rounds.
    fn design_effect(&self, rounds: usize) -> f64 {
        let n = rounds as f64;
        autoregression_effect(self.lag1 + (1.0 + 3.0 * self.lag1) / n, rounds)
    }
}

/// The design effect of first-order autoregression φ (at most 0.9) over `rounds` rounds: the
/// variance of their mean, σ²·V/n with V = 1 + 2Σ(1 − h/n)φʰ, over what independent rounds'
/// sample variance suggests, which dependence shrinks to σ²(n − V)/(n − 1). 1 at φ ≤ 0.
fn autoregression_effect(phi: f64, rounds: usize) -> f64 {
    let phi = phi.clamp(0.0, 0.9);
    if rounds < 3 || phi == 0.0 {
        return 1.0;
    }
    let n = rounds as f64;
    let mut inflation = 1.0;
    let mut power = 1.0;
    for h in 1..rounds {
        power *= phi;
        inflation += 2.0 * (1.0 - h as f64 / n) * power;
    }
    (inflation * (n - 1.0) / (n - inflation)).max(1.0)
}

/// The design effect the blocks' share takes in from first-order autoregression φ within
/// blocks of `size` rounds: the share λ its mean squares suggest (the block mean's variance
/// v = Σφ^|i−j|/m² against the within-block (1 − v)m/(m − 1), each in the rounds' variance),
/// as the design effect (1 + mλ)/(1 + λ) of that share.
fn blocks_see(phi: f64, size: usize) -> f64 {
    let phi = phi.clamp(0.0, 0.9);
    if size < 2 || phi == 0.0 {
        return 1.0;
    }
    let m = size as f64;
    let sum: f64 = (0..size)
        .flat_map(|i| (0..size).map(move |j| phi.powi(i.abs_diff(j) as i32)))
        .sum();
    let mean_variance = sum / (m * m);
    let ratio = m * mean_variance / ((1.0 - mean_variance) * m / (m - 1.0));
    let share = ((ratio - 1.0) / m).max(0.0);
    (1.0 + m * share) / (1.0 + share)
}

/// The lag-1 autocorrelation a set of comparisons shows together. One comparison's rounds say
/// little (a test at 5% finds φ = 0.2 in few), a document's say more: each comparison's
/// lag-1 autocorrelation of its rounds' deviations from their block means (which block shifts
/// do not move), averaged, is set against its expectation under first-order autoregression φ
/// given the comparisons' block sizes. Where the average exceeds its expectation at φ = 0 by
/// more than chance (one-sided, at `DEPENDENCE_LEVEL`), φ is the one that expects it.
fn pooled_lag(series: &[&[(u32, f64)]]) -> f64 {
    let found: Vec<(f64, Vec<usize>)> = series.iter().filter_map(|s| within_lag1(s)).collect();
    if found.len() < 2 {
        return 0.0;
    }
    let count = found.len() as f64;
    let mean_at = |phi: f64| {
        (found.iter())
            .map(|(_, sizes)| expected_within_lag1(sizes, phi))
            .sum::<f64>()
            / count
    };
    let excess: Vec<f64> = (found.iter())
        .map(|(r, sizes)| r - expected_within_lag1(sizes, 0.0))
        .collect();
    let mean = excess.iter().sum::<f64>() / count;
    let spread = (excess.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (count - 1.0)).sqrt();
    if spread <= 0.0 || mean / (spread / count.sqrt()) < normal_quantile(1.0 - DEPENDENCE_LEVEL) {
        return 0.0;
    }
    let observed = mean + mean_at(0.0);
    let (mut low, mut high) = (0.0, 0.9);
    if mean_at(high) <= observed {
        return high;
    }
    while high - low > 1e-4 {
        let middle = (low + high) / 2.0;
        if mean_at(middle) < observed {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low + high) / 2.0
}

/// The lag-1 autocorrelation of a series' deviations from its block means over consecutive
/// rounds of the same block, and its blocks' sizes in time order; None without such a pair.
fn within_lag1(rounds: &[(u32, f64)]) -> Option<(f64, Vec<usize>)> {
    let finite: Vec<(u32, f64)> = (rounds.iter().copied())
        .filter(|(_, v)| v.is_finite())
        .collect();
    let mut sizes = Vec::new();
    let (mut products, mut squares) = (0.0, 0.0);
    for block in finite.chunk_by(|a, b| a.0 == b.0) {
        let mean = block.iter().map(|&(_, v)| v).sum::<f64>() / block.len() as f64;
        let deviations: Vec<f64> = block.iter().map(|&(_, v)| v - mean).collect();
        products += (deviations.windows(2))
            .map(|pair| pair[0] * pair[1])
            .sum::<f64>();
        squares += deviations.iter().map(|d| d * d).sum::<f64>();
        sizes.push(block.len());
    }
    (squares > 0.0 && sizes.iter().any(|&size| size > 1)).then(|| (products / squares, sizes))
}

/// `within_lag1`'s expectation under first-order autoregression φ, as the ratio of its two
/// sums' expectations: for a block of m rounds with covariance φ^|i−j|, the deviations from
/// the block mean have covariance R = CΣC (C centres), the products' sum expects the
/// superdiagonal's sum and the squares' the trace.
fn expected_within_lag1(sizes: &[usize], phi: f64) -> f64 {
    let (mut products, mut squares) = (0.0, 0.0);
    for &m in sizes {
        let covariance = |i: usize, j: usize| phi.powi(i.abs_diff(j) as i32);
        let row: Vec<f64> = (0..m)
            .map(|i| (0..m).map(|j| covariance(i, j)).sum::<f64>() / m as f64)
            .collect();
        let grand = row.iter().sum::<f64>() / m as f64;
        let centred = |i: usize, j: usize| covariance(i, j) - row[i] - row[j] + grand;
        products += (1..m).map(|i| centred(i - 1, i)).sum::<f64>();
        squares += (0..m).map(|i| centred(i, i)).sum::<f64>();
    }
    match squares > 0.0 {
        true => products / squares,
        false => 0.0,
    }
}

/// The lag-1 autocorrelation of `values` (0 for no spread).
fn lag1(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let spread: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    if spread <= 0.0 {
        return 0.0;
    }
    let products: f64 = (values.windows(2))
        .map(|pair| (pair[0] - mean) * (pair[1] - mean))
        .sum();
    products / spread
}

/// The mixture with design effects within 0.5% of one another as one component, at the
/// largest of them: the widening costs a pass over the components at every step.
fn merged(mut mixture: Vec<Component>) -> Vec<Component> {
    mixture.sort_by(|a, b| a.design_effect.total_cmp(&b.design_effect));
    let mut merged: Vec<Component> = Vec::with_capacity(mixture.len());
    let mut start = f64::NAN;
    for component in mixture {
        match merged.last_mut() {
            Some(last) if component.design_effect <= start * 1.005 => {
                last.weight += component.weight;
                last.design_effect = component.design_effect;
            }
            _ => {
                start = component.design_effect;
                merged.push(component);
            }
        }
    }
    merged
}

fn level_at(index: usize) -> f64 {
    let fraction = index as f64 / (LEVELS - 1) as f64;
    (LOWEST_LEVEL.ln() + fraction * (HIGHEST_LEVEL.ln() - LOWEST_LEVEL.ln())).exp()
}

/// The finite rounds, each value replaced by its rank among them (ties by their mean rank).
fn mid_ranks(rounds: &[(u32, f64)]) -> Vec<(u32, f64)> {
    let mut ranked: Vec<(u32, f64)> = rounds
        .iter()
        .copied()
        .filter(|(_, v)| v.is_finite())
        .collect();
    let mut order: Vec<usize> = (0..ranked.len()).collect();
    order.sort_by(|&a, &b| ranked[a].1.total_cmp(&ranked[b].1));
    let values: Vec<f64> = order.iter().map(|&i| ranked[i].1).collect();
    let mut start = 0;
    while start < order.len() {
        let end = start
            + values[start..]
                .iter()
                .take_while(|v| **v == values[start])
                .count();
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranked[i].1 = rank;
        }
        start = end;
    }
    ranked
}

/// The comparison's posterior over the shares: the prior times its own blocks' likelihood, as
/// design effects. Empty when all weight lies on D = 1.
fn posterior(anova: &Anova, prior: &BlockPrior) -> Vec<Component> {
    if anova.within <= 0.0 {
        // Rounds identical within each block but blocks apart: the blocks are the only
        // replication; the design effect is the block means' variance over the rounds'.
        let effect = (anova.between / anova.between_df())
            / ((anova.within + anova.between) / (anova.rounds - 1) as f64);
        return vec![Component {
            weight: 1.0,
            design_effect: effect.max(1.0),
        }];
    }
    let mut weights = prior.judging(anova);
    if anova.informative() {
        let logs = shares().map(|share| anova.log_likelihood(share));
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for (weight, log) in weights.iter_mut().zip(logs) {
            *weight *= (log - top).exp();
        }
    }
    let top = weights.iter().copied().fold(0.0, f64::max);
    let kept = || (weights.iter().zip(shares())).filter(|(weight, _)| **weight > 1e-12 * top);
    let total: f64 = kept().map(|(weight, _)| weight).sum();
    let mixture: Vec<Component> = kept()
        .map(|(weight, &share)| Component {
            weight: weight / total,
            design_effect: anova.design_effect(share),
        })
        .collect();
    match mixture.iter().all(|c| c.design_effect <= 1.0) {
        true => Vec::new(),
        false => mixture,
    }
}

/// The widening w ≥ 1 at which the signed-rank interval covers 1 − `alpha` averaged over the
/// mixture: Σ weight · P(|T| ≤ q·w/√D) = 1 − α, T Student's t with `degrees` (the rounds
/// less one) and q its own 1 − α/2 quantile, which independent rounds (D = 1) cover exactly.
fn widening_at(mixture: &[Component], degrees: u32, alpha: f64) -> f64 {
    let target = 1.0 - alpha;
    let q = t_central_quantile(target, degrees);
    let nu = f64::from(degrees);
    let density_scale = t_density(0.0, nu);
    // The coverage at widening w, and its slope in w.
    let coverage = |w: f64| -> (f64, f64) {
        mixture.iter().fold((0.0, 0.0), |(sum, slope), c| {
            let scale = q / c.design_effect.sqrt();
            let t = scale * w;
            // The density, (1 + t²/ν)^−(ν+1)/2, as a whole power of √(ν/(ν + t²)).
            let density = density_scale * (nu / (nu + t * t)).sqrt().powi(degrees as i32 + 1);
            (
                sum + c.weight * t_central(t, degrees),
                slope + c.weight * 2.0 * density * scale,
            )
        })
    };
    if coverage(1.0).0 >= target {
        return 1.0;
    }
    // The weights sum to 1 (to rounding), so a wide enough interval covers any level short of
    // certainty; the largest design effect bounds how wide.
    let (mut low, mut high) = (1.0, 2.0);
    while coverage(high).0 < target && high < 1e6 {
        (low, high) = (high, high * 2.0);
    }
    // Newton's method, kept inside the bracket (bisection where a step leaves it), to the
    // root or, failing that, the bracket's covering end.
    let mut w = (low + high) / 2.0;
    for _ in 0..200 {
        let (covered, slope) = coverage(w);
        if (covered - target).abs() <= 1e-14 {
            return w;
        }
        if covered < target {
            low = w;
        } else {
            high = w;
        }
        if high - low <= 1e-10 * high {
            break;
        }
        let step = w - (covered - target) / slope;
        w = match step > low && step < high {
            true => step,
            false => (low + high) / 2.0,
        };
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` in blocks of four consecutive rounds.
    fn in_blocks(values: &[f64]) -> Vec<(u32, f64)> {
        (values.iter().enumerate())
            .map(|(i, &v)| (i as u32 / 4 + 1, v))
            .collect()
    }

    #[test]
    fn the_analysis_of_variance_matches_a_hand_computation() {
        // Blocks (1, 3) and (5, 70) rank (1, 2) and (3, 4): means 1.5 and 3.5, grand mean 2.5.
        let anova = Anova::of(&[(1, 1.0), (1, 3.0), (2, 5.0), (2, 70.0)]).unwrap();
        assert_eq!((anova.rounds, anova.blocks), (4, 2));
        assert!((anova.between - 4.0).abs() < 1e-12 && (anova.within - 1.0).abs() < 1e-12);
        assert!((anova.effective_size - 2.0).abs() < 1e-12);
        // F = (4/1)/(1/2) = 8.
        assert!((anova.ratio() - 8.0).abs() < 1e-12);
        assert!((anova.design_effect(0.0) - 1.0).abs() < 1e-12);
        assert!(Anova::of(&[(1, 1.0), (2, 2.0)]).is_none());
    }

    #[test]
    fn ties_share_their_mean_rank_and_non_finite_rounds_drop_out() {
        let ranked = mid_ranks(&[(1, 0.2), (1, f64::NAN), (2, 0.1), (2, 0.2), (3, -1.0)]);
        assert_eq!(ranked, [(1, 3.5), (2, 2.0), (2, 3.5), (3, 1.0)]);
    }

    #[test]
    fn how_far_a_round_lies_moves_the_interval_no_wider_than_its_rank_does() {
        // The Hodges–Lehmann estimate barely moves for one far round, so neither does the
        // design effect: moving the largest round from just above the next to ten times as far
        // leaves every share's design effect as it was.
        let mut values = [
            0.03, -0.01, 0.05, 0.02, 0.04, 0.06, 0.01, 0.035, 0.045, 0.025, 0.0, 0.05,
        ];
        let near = Anova::of(&in_blocks(&values)).unwrap();
        values[5] = 0.6;
        let far = Anova::of(&in_blocks(&values)).unwrap();
        assert_eq!(near, far);
        assert_eq!(
            Blocked::alone(&in_blocks(&values)).design_effect(),
            Blocked::alone(&in_blocks(&values.map(|v| v.min(0.061)))).design_effect()
        );
    }

    #[test]
    fn without_a_block_component_the_interval_is_the_signed_rank_one() {
        let values = [
            0.03, -0.01, 0.05, 0.02, 0.04, 0.06, 0.01, 0.035, 0.045, 0.025, 0.0, 0.05,
        ];
        let blocked = Blocked::paired(&in_blocks(&values), &BlockPrior::none());
        let ranked = Ranked::paired(&values);
        assert_eq!(blocked.interval(0.05), ranked.interval(0.05));
        assert_eq!(blocked.p_above(0.01), ranked.p_above(0.01));
        assert_eq!(blocked.widening(0.05), 1.0);
    }

    #[test]
    fn blocks_far_apart_widen_the_interval_and_the_tests_agree_with_it() {
        // Three blocks whose levels differ far beyond the rounds' spread within them.
        let values = [
            0.10, 0.11, 0.09, 0.10, 0.20, 0.21, 0.19, 0.20, 0.05, 0.06, 0.04, 0.05,
        ];
        let rounds = in_blocks(&values);
        let blocked = Blocked::alone(&rounds);
        let (ranked_low, ranked_high) = Ranked::paired(&values).interval(0.05).unwrap();
        let (low, high) = blocked.interval(0.05).unwrap();
        assert!(blocked.design_effect() > 2.0, "{}", blocked.design_effect());
        assert!(low < ranked_low && high > ranked_high, "{low} {high}");
        for alpha in [0.1, 0.05, 0.01, 0.0025] {
            let Some((low, high)) = blocked.interval(alpha) else {
                continue;
            };
            assert!(blocked.p_above(low - 1e-9) <= alpha / 2.0, "{alpha}");
            assert!(blocked.p_above(low + 1e-9) > alpha / 2.0, "{alpha}");
            assert!(blocked.p_below(high + 1e-9) <= alpha / 2.0, "{alpha}");
            assert!(blocked.p_below(high - 1e-9) > alpha / 2.0, "{alpha}");
        }
    }

    #[test]
    fn blocks_that_barely_move_within_keep_their_whole_design_effect() {
        // Each block's rounds within 0.6% of one another, the blocks 8% apart: nearly all the
        // variance lies between blocks, and the mean of 12 rounds varies as that of 3 block
        // means, D = (N − 1)/(k − 1) = 5.5 times what independent rounds would say.
        let values: Vec<f64> = (0..12)
            .map(|i| [0.02, 0.095, 0.166][i / 4] + 0.002 * (i % 4) as f64)
            .collect();
        let effect = Blocked::alone(&in_blocks(&values)).design_effect();
        assert!(effect > 4.5 && effect < 6.0, "{effect}");
    }

    #[test]
    fn wider_levels_give_nested_intervals() {
        let values = [
            0.10, 0.13, 0.08, 0.10, 0.16, 0.21, 0.17, 0.18, 0.07, 0.06, 0.09, 0.05, 0.12, 0.1,
            0.14, 0.11,
        ];
        let blocked = Blocked::alone(&in_blocks(&values));
        let mut previous = (f64::NEG_INFINITY, f64::INFINITY);
        for alpha in [1e-4, 1e-3, 0.0025, 0.01, 0.05, 0.1, 0.2, 0.5] {
            let (low, high) = blocked.interval(alpha).unwrap();
            assert!(
                low >= previous.0 && high <= previous.1,
                "{alpha}: {low} {high}"
            );
            previous = (low, high);
        }
    }

    #[test]
    fn a_pool_of_quiet_comparisons_keeps_the_exact_interval() {
        // Documents of forty comparisons with no block component: each prior puts its weight
        // near none, and the typical interval stays within a few per cent of the exact one (one
        // document's comparisons average 1.04–1.10 wider, as one whose blocks disagree by
        // chance widens).
        let mut rng = fastrand::Rng::with_seed(7);
        let mut widenings: Vec<f64> = Vec::new();
        for _ in 0..20 {
            let series: Vec<Vec<(u32, f64)>> = (0..40)
                .map(|_| in_blocks(&(0..12).map(|_| rng.f64() - 0.5).collect::<Vec<_>>()))
                .collect();
            let prior = BlockPrior::pooled(series.iter().map(Vec::as_slice));
            assert!(prior.mean_share() < 0.1, "{}", prior.mean_share());
            widenings.extend((series.iter()).map(|s| Blocked::paired(s, &prior).widening(0.05)));
        }
        widenings.sort_by(f64::total_cmp);
        let median = widenings[widenings.len() / 2];
        assert!(median < 1.05, "{median}");
    }
}
