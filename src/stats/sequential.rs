//! Looking at a comparison more than once: the level each look decides at, and whether more
//! rounds could still decide it.
//!
//! A study measured with `--runs auto` looks at its comparisons after several stages of rounds
//! and stops once they are decided. Each look that may stop on a "different" is a chance of a
//! false one, so the looks share the error α. Here they share it as Pocock did: every look
//! decides at the same level, the largest at which the chance that *any* look calls a false
//! "different" stays α. That chance depends on how the looks' statistics move together (the
//! 16-round statistic shares 12 rounds with the 12-round one); it is computed from their joint
//! distribution, taken as that of a sum of independent rounds (correlation √(nᵢ/nⱼ) between
//! looks at nᵢ and nⱼ rounds). The signed-rank statistic standardised nearly moves so (0.861,
//! 0.810 and 0.700 between looks at 12, 16 and 24 rounds, against 0.866, 0.816 and 0.707), but
//! its joint tail is looser, and the widened interval's more so (its scale is estimated afresh
//! at each look): a true ratio exactly at the margin is called different beyond it α/2 of the
//! time per side where rounds are independent, and under it with a between-block component,
//! Gaussian rounds or a heavy tail (2.2–2.5% per side, simulated: `operating`,
//! docs/verdicts.md). A constant level never judges a study that needed more rounds more
//! strictly than one that stopped early.
//!
//! Futility asks whether the last look could decide: with the interval the last look's
//! decision will use, computed on the rounds so far, how likely is the last look's interval to
//! land in a decided zone (predictive power: the estimate's uncertainty carried forward).

use std::sync::Mutex;

use super::rank::Outcome;
use super::special::{normal_cdf, normal_density, normal_quantile, t_central_quantile};

/// The error every decision is held to: 5%.
pub const ALPHA: f64 = 0.05;

/// Below this chance of a decision by the last look, a comparison is not worth more rounds.
pub const FUTILITY: f64 = 0.10;

/// The two-sided level each look decides at, for a study measured at `looks` (rounds, rising;
/// the last is the budget) that stopped after `rounds`: Pocock's constant level for an overall
/// α of `ALPHA`, the same whichever look the study stopped at. `ALPHA` itself when the study had
/// one look (`looks` empty).
pub fn look_alpha(looks: &[u32], rounds: usize) -> f64 {
    // Pocock's level is the same at every look: the rounds a study stopped after change nothing.
    let _ = rounds;
    look_level(looks, ALPHA)
}

/// As `look_alpha`, for an overall two-sided error `alpha`. A family of m comparisons held to
/// α together (Bonferroni) asks for `look_level(looks, α / m)`: not `look_alpha / m`, which
/// spends more than α/m per comparison (the looks overlap less at smaller levels, so the same
/// overall α needs a smaller share per look).
pub fn look_level(looks: &[u32], alpha: f64) -> f64 {
    assert!(alpha > 0.0 && alpha < 1.0, "an error rate of {alpha}");
    assert!(
        looks.windows(2).all(|pair| pair[0] < pair[1]) && looks.first() != Some(&0),
        "looks must rise from one round: {looks:?}"
    );
    if looks.len() < 2 {
        return alpha;
    }
    static CACHE: Mutex<Vec<(Vec<u32>, u64, f64)>> = Mutex::new(Vec::new());
    let key = alpha.to_bits();
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, _, level)) = (cache.iter()).find(|(l, a, _)| l.as_slice() == looks && *a == key)
    {
        return *level;
    }
    let boundary = pocock_boundary(looks, alpha / 2.0);
    let level = 2.0 * (1.0 - normal_cdf(boundary));
    cache.push((looks.to_vec(), key, level));
    level
}

/// The z every look at `looks` rejects beyond such that the chance any one does, under no
/// difference, is `one_sided` (bisection on the crossing chance, which falls as z rises).
fn pocock_boundary(looks: &[u32], one_sided: f64) -> f64 {
    // At one look's own z the crossing chance is above `one_sided`; at Bonferroni's (the
    // level shared out over the looks) it is at most that.
    let mut low = normal_quantile(1.0 - one_sided);
    let mut high = normal_quantile(1.0 - one_sided / looks.len() as f64);
    while high - low > 1e-9 {
        let middle = (low + high) / 2.0;
        if crossing_chance(looks, middle) > one_sided {
            low = middle;
        } else {
            high = middle;
        }
    }
    high
}

/// Points per look in the numerical integration, and how far below the mean (in standard
/// deviations) it starts.
const GRID: usize = 241;
const FLOOR: f64 = -9.0;

/// The chance that the standardised statistic reaches `z` at one of `looks` or more, under no
/// difference: the sum S(n) of n independent standard rounds, Z = S/√n, crossing at the first
/// look, or at a later one having stayed below at every earlier (Armitage, McPherson and Rowe's
/// recursion on the density of S below the boundary, Simpson's rule on a grid in z).
fn crossing_chance(looks: &[u32], z: f64) -> f64 {
    let first = f64::from(looks[0]);
    let step = (z - FLOOR) / (GRID - 1) as f64;
    // The density of S at the grid below the first look's boundary (S = z_i √n).
    let mut points: Vec<f64> = (0..GRID).map(|i| FLOOR + i as f64 * step).collect();
    let mut density: Vec<f64> = (points.iter())
        .map(|&zi| normal_density(zi) / first.sqrt())
        .collect();
    let mut scale = first.sqrt();
    let mut crossed = 1.0 - normal_cdf(z);
    for (index, pair) in looks.windows(2).enumerate() {
        let (before, after) = (f64::from(pair[0]), f64::from(pair[1]));
        let gap = (after - before).sqrt();
        let weights = simpson(step * scale);
        // Crossing here: from each point below the last boundary, the increment's chance to
        // carry S above this look's boundary.
        let boundary = z * after.sqrt();
        crossed += (points.iter().zip(&density).zip(&weights))
            .map(|((&zi, &d), &w)| w * d * (1.0 - normal_cdf((boundary - zi * scale) / gap)))
            .sum::<f64>();
        if index + 2 == looks.len() {
            break;
        }
        // The density below this look's boundary, for the next.
        let next_scale = after.sqrt();
        let next_points: Vec<f64> = (0..GRID).map(|i| FLOOR + i as f64 * step).collect();
        let next_density: Vec<f64> = (next_points.iter())
            .map(|&zj| {
                let s = zj * next_scale;
                (points.iter().zip(&density).zip(&weights))
                    .map(|((&zi, &d), &w)| w * d * normal_density((s - zi * scale) / gap) / gap)
                    .sum()
            })
            .collect();
        (points, density, scale) = (next_points, next_density, next_scale);
    }
    crossed
}

/// Simpson's weights for `GRID` points `spacing` apart.
fn simpson(spacing: f64) -> Vec<f64> {
    (0..GRID)
        .map(|i| {
            let factor = match i {
                0 => 1.0,
                _ if i == GRID - 1 => 1.0,
                _ if i % 2 == 1 => 4.0,
                _ => 2.0,
            };
            factor * spacing / 3.0
        })
        .collect()
}

/// The chance that the last look decides, seen from the rounds so far. `estimate` and
/// `interval` are the comparison's now, as log ratios, the interval at the level the last look
/// will decide at (`alpha_last`, two-sided); `margin` and `equivalence_margin` are relative
/// (0.03, 0.10): an interval beyond ±margin is "different", one inside ±equivalence margin is
/// "within" it (or inside ±margin, "no difference beyond" it). The last look's interval is
/// taken to narrow as √(rounds/budget) about an estimate that may still move by what the
/// rounds to come can move it, given what is known now.
pub fn decision_chance(
    estimate: f64,
    interval: (f64, f64),
    rounds: usize,
    budget: usize,
    margin: f64,
    equivalence_margin: f64,
    alpha_last: f64,
) -> f64 {
    let (low, high) = interval;
    assert!(
        low <= high && margin <= equivalence_margin,
        "{interval:?} {margin} {equivalence_margin}"
    );
    let half_now = (high - low) / 2.0;
    let decided_now =
        Outcome::of_interval(low.exp(), high.exp(), margin, equivalence_margin).decided();
    if rounds >= budget || half_now <= 0.0 {
        return f64::from(u8::from(decided_now));
    }
    let (n, b) = (rounds as f64, budget as f64);
    // Today's half-width is t quantile × σ/√n; the last look's is its own t quantile × σ/√B.
    let coverage = 1.0 - alpha_last;
    let quantile_now = t_central_quantile(coverage, rounds.saturating_sub(1).max(1) as u32);
    let quantile_last = t_central_quantile(coverage, budget.saturating_sub(1).max(1) as u32);
    let sigma_now = half_now / quantile_now;
    let half_last = quantile_last * sigma_now * (n / b).sqrt();
    // The last estimate is (n·now + (B − n)·rest)/B; with a flat prior on the true ratio the
    // rest's mean is uncertain by σ²/n as well: the spread of the last estimate about today's
    // is σ·√((B − n)/(nB)), σ/√n being today's half-width over its quantile.
    let spread = sigma_now * ((b - n) / b).sqrt();
    // Decided: |last| beyond margin + half (different) or within equivalence − half.
    let beyond = margin.ln_1p() + half_last;
    let inside = equivalence_margin.ln_1p() - half_last;
    if inside >= beyond {
        return 1.0;
    }
    let below = |x: f64| normal_cdf((x - estimate) / spread);
    let different = below(-beyond) + (1.0 - below(beyond));
    let within = match inside > 0.0 {
        true => below(inside) - below(-inside),
        false => 0.0,
    };
    (different + within).clamp(0.0, 1.0)
}

/// Whether more rounds are not worth it: the last look is less than `FUTILITY` likely to decide
/// (`decision_chance`), or this is the last look.
pub fn futile(
    estimate: f64,
    interval: (f64, f64),
    rounds: usize,
    budget: usize,
    margin: f64,
    equivalence_margin: f64,
    alpha_last: f64,
) -> bool {
    rounds >= budget
        || decision_chance(
            estimate,
            interval,
            rounds,
            budget,
            margin,
            equivalence_margin,
            alpha_last,
        ) < FUTILITY
}

/// The power `detectable` is stated at: a difference that large is found four times in five.
pub const POWER: f64 = 0.8;

/// The smallest relative difference a comparison with this interval's noise and rounds would
/// call different `POWER` of the time: the margin, plus the interval's half-width (an estimate
/// must clear both), plus how far short of the truth the estimate falls one time in five (the
/// one-sided quantile of its spread, the half-width over the interval's own quantile).
/// `interval` is of log ratios at level 1 − `alpha`; `margin` relative (0.03).
pub fn detectable(interval: (f64, f64), rounds: usize, alpha: f64, margin: f64) -> f64 {
    let half = (interval.1 - interval.0) / 2.0;
    let degrees = rounds.saturating_sub(1).max(1) as u32;
    let spread = half / t_central_quantile(1.0 - alpha, degrees);
    // One-sided: P(T ≤ t) = POWER where P(|T| ≤ t) = 2·POWER − 1.
    let shortfall = t_central_quantile(2.0 * POWER - 1.0, degrees) * spread;
    (margin.ln_1p() + half + shortfall).exp_m1()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pocock_constants_match_their_tables() {
        // Pocock (1977), equally spaced looks, two-sided 5%: c = 2.178 (two looks), 2.289
        // (three), 2.413 (five). The one-sided crossing at 2.5% agrees to the table's digits.
        for (looks, constant) in [
            (vec![10, 20], 2.178),
            (vec![10, 20, 30], 2.289),
            (vec![10, 20, 30, 40, 50], 2.413),
        ] {
            let level = look_alpha(&looks, 10);
            let z = normal_quantile(1.0 - level / 2.0);
            assert!((z - constant).abs() < 2e-3, "{looks:?}: {z}");
        }
        assert_eq!(look_alpha(&[], 12), ALPHA);
        assert_eq!(look_alpha(&[24], 24), ALPHA);
    }

    #[test]
    fn the_level_is_the_same_at_every_look_and_smaller_families_are_not_divided_naively() {
        let looks = [12, 16, 24];
        let levels: Vec<f64> = [12, 16, 24].map(|n| look_alpha(&looks, n)).to_vec();
        assert!(
            levels.windows(2).all(|pair| pair[1] >= pair[0]),
            "{levels:?}"
        );
        assert!(levels[0] > ALPHA / 3.0 && levels[0] < ALPHA, "{levels:?}");
        // Twenty comparisons at α/20: below a twentieth of the one-comparison level.
        let family = look_level(&looks, ALPHA / 20.0);
        assert!(family < levels[0] / 20.0, "{family} {}", levels[0]);
        let z = normal_quantile(1.0 - family / 2.0);
        assert!((crossing_chance(&looks, z) - ALPHA / 40.0).abs() < 1e-6);
    }

    #[test]
    fn a_clear_difference_or_a_clear_equivalence_is_not_futile() {
        let (margin, within) = (0.03, 0.10);
        // 1.30 [1.20–1.40]: decided now, and by the last look.
        let (e, i) = (1.3f64.ln(), (1.2f64.ln(), 1.4f64.ln()));
        assert!(decision_chance(e, i, 12, 24, margin, within, 0.02) > 0.99);
        // 1.00 [0.93–1.07]: the last look's interval (≈ ±5%) lies within 10%.
        let (e, i) = (0.0, (0.93f64.ln(), 1.07f64.ln()));
        assert!(!futile(e, i, 12, 24, margin, within, 0.02));
        // 1.06 [0.80–1.40]: no look at 24 rounds can narrow that into either zone.
        let (e, i) = (1.06f64.ln(), (0.8f64.ln(), 1.4f64.ln()));
        assert!(futile(e, i, 12, 24, margin, within, 0.02));
        // The last look is always the end.
        assert!(futile(0.0, (-0.01, 0.01), 24, 24, margin, within, 0.02));
    }

    #[test]
    fn the_detectable_difference_is_found_four_times_in_five() {
        // Rounds of spread σ: the t interval's expected half-width at 12 rounds, and a true
        // difference at the detectable one, called different (its t interval beyond the
        // margin) in about 80% of simulated studies.
        let (sigma, rounds, alpha, margin) = (0.05, 12usize, 0.05, 0.03);
        let quantile = t_central_quantile(1.0 - alpha, rounds as u32 - 1);
        let half = quantile * sigma / (rounds as f64).sqrt();
        let truth = detectable((-half, half), rounds, alpha, margin).ln_1p();
        assert!(truth > margin.ln_1p() + half, "{truth}");
        let mut rng = fastrand::Rng::with_seed(5);
        let trials = 4000;
        let found = (0..trials)
            .filter(|_| {
                let values: Vec<f64> = (0..rounds)
                    .map(|_| {
                        let (u, v) = (rng.f64().max(1e-300), rng.f64());
                        truth
                            + sigma
                                * (-2.0 * u.ln()).sqrt()
                                * (2.0 * std::f64::consts::PI * v).cos()
                    })
                    .collect();
                let mean = values.iter().sum::<f64>() / rounds as f64;
                let variance =
                    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (rounds - 1) as f64;
                mean - quantile * (variance / rounds as f64).sqrt() > margin.ln_1p()
            })
            .count();
        let share = found as f64 / f64::from(trials);
        assert!((share - POWER).abs() < 0.04, "{share}");
    }
}
