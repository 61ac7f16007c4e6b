//! How often the procedure is wrong, simulated: a study's comparisons decided as the report
//! decides them (the interval with the between-block component, read in four zones at the
//! looks' level, the study stopping at the first look where every comparison is decided or
//! futile), on noise shaped like this machine's.
//!
//! The noise of a round's log ratio: a block's shift (variance λσ², drawn afresh every four
//! rounds), the round's own move (σ: 0.07, the median spread of a comparison's rounds in two
//! quiet default runs here, and 0.15, about the 90th percentile), first-order autoregression φ
//! between rounds, and one round in ten moving three times as far. The figures printed here are
//! docs/verdicts.md's "How often it is wrong".

#![cfg(test)]

use super::blocks::{BlockPrior, Blocked};
use super::rank::{Outcome, Ranked};
use super::sequential::{futile, look_alpha, look_level, ALPHA};

const LOOKS: [u32; 3] = [12, 16, 24];
const RATIOS: [f64; 5] = [1.00, 1.03, 1.05, 1.10, 1.20];

/// The margins of throughput and CPU per operation, relative.
const MARGIN: f64 = 0.03;
const EQUIVALENCE_MARGIN: f64 = 0.10;

#[derive(Clone, Copy, Debug)]
struct Noise {
    sigma: f64,
    share: f64,
    phi: f64,
    /// One round in ten moves three times as far (false: every round Gaussian).
    tail: bool,
}

struct Simulation {
    rng: fastrand::Rng,
}

impl Simulation {
    fn new(seed: u64) -> Simulation {
        Simulation {
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    fn normal(&mut self) -> f64 {
        // Box–Muller.
        let (u, v) = (self.rng.f64().max(1e-300), self.rng.f64());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// `rounds` log ratios around ln `ratio`, in blocks of four.
    fn series(&mut self, rounds: usize, ratio: f64, noise: Noise) -> Vec<(u32, f64)> {
        // One round in ten moves three times as far; the scale keeps the round's variance σ².
        let scale = match noise.tail {
            true => noise.sigma / (0.9f64 + 0.1 * 9.0).sqrt(),
            false => noise.sigma,
        };
        let innovation = (1.0 - noise.phi * noise.phi).sqrt();
        let mut own = self.normal();
        let mut shift = 0.0;
        (0..rounds)
            .map(|round| {
                if round % 4 == 0 {
                    shift = noise.sigma * noise.share.sqrt() * self.normal();
                }
                if round > 0 {
                    own = noise.phi * own + innovation * self.normal();
                }
                // Drawn either way, so the tail changes no other draw.
                let far = match self.rng.u8(..10) == 0 && noise.tail {
                    true => 3.0,
                    false => 1.0,
                };
                (round as u32 / 4 + 1, ratio.ln() + shift + scale * far * own)
            })
            .collect()
    }

    /// The rest of a document's comparisons on the same metric, which its prior is pooled
    /// from as well (a default run's document holds some 70 per metric).
    fn others(&mut self, rounds: usize, noise: Noise) -> Vec<Vec<(u32, f64)>> {
        (0..OTHERS)
            .map(|_| self.series(rounds, 1.0, noise))
            .collect()
    }
}

const OTHERS: usize = 30;

/// What one simulated study said about each of its comparisons: the true ratio's index, the
/// zone (with its side) and the rounds it stopped at.
struct Verdict {
    ratio: usize,
    outcome: Outcome,
    above: bool,
    rounds: usize,
}

/// A study of two comparisons at each true ratio, looked at after `LOOKS`; `family` comparisons
/// held to α together (1: each its own). Its verdicts where it stopped, and how many comparisons
/// it left undecided that the last look would have decided (the cost of futility).
fn study(simulation: &mut Simulation, noise: Noise, family: usize) -> (Vec<Verdict>, usize) {
    let budget = *LOOKS.last().unwrap() as usize;
    let all: Vec<(usize, Vec<(u32, f64)>)> = (0..RATIOS.len() * 2)
        .map(|i| (i / 2, simulation.series(budget, RATIOS[i / 2], noise)))
        .collect();
    let others = simulation.others(budget, noise);
    for &look in &LOOKS {
        let (verdicts, settled) = look_at(&all, &others, look as usize, family);
        if settled {
            let lost = match look as usize == budget {
                true => 0,
                false => (verdicts
                    .iter()
                    .zip(look_at(&all, &others, budget, family).0))
                .filter(|(now, last)| !now.outcome.decided() && last.outcome.decided())
                .count(),
            };
            return (verdicts, lost);
        }
    }
    unreachable!("the last look settles every comparison")
}

/// The verdicts on the first `rounds` rounds, and whether every one is decided or futile; the
/// prior pooled with the document's `others`.
fn look_at(
    all: &[(usize, Vec<(u32, f64)>)],
    others: &[Vec<(u32, f64)>],
    rounds: usize,
    family: usize,
) -> (Vec<Verdict>, bool) {
    let budget = *LOOKS.last().unwrap() as usize;
    let level = look_level(&LOOKS, ALPHA / family as f64);
    let pool = (all.iter().map(|(_, series)| series)).chain(others);
    let prior = BlockPrior::pooled(pool.map(|series| &series[..rounds]));
    let mut settled = true;
    let verdicts = (all.iter())
        .map(|(ratio, series)| {
            let blocked = Blocked::paired(&series[..rounds], &prior);
            let interval = blocked.interval(level).expect("an interval at 12 rounds");
            let (low, high) = (interval.0.exp(), interval.1.exp());
            let found = Outcome::of_interval(low, high, MARGIN, EQUIVALENCE_MARGIN);
            let estimate = blocked.estimate();
            settled &= found.decided()
                || futile(
                    estimate,
                    interval,
                    rounds,
                    budget,
                    MARGIN,
                    EQUIVALENCE_MARGIN,
                    level,
                );
            Verdict {
                ratio: *ratio,
                outcome: found,
                above: interval.0 > 0.0,
                rounds,
            }
        })
        .collect();
    (verdicts, settled)
}

/// Shares of each outcome per true ratio, over `studies` simulated studies.
struct Characteristics {
    /// [ratio][different above, different below, equivalent, within, undecided]
    shares: [[f64; 5]; 5],
    rounds: f64,
    /// The share of comparisons left undecided that the last look would have decided.
    lost: f64,
}

fn characteristics(noise: Noise, family: usize, studies: usize, seed: u64) -> Characteristics {
    let mut simulation = Simulation::new(seed);
    let mut counts = [[0usize; 5]; 5];
    let (mut rounds, mut all, mut lost) = (0, 0, 0);
    for _ in 0..studies {
        let (verdicts, undecided_early) = study(&mut simulation, noise, family);
        lost += undecided_early;
        for verdict in verdicts {
            let column = match (verdict.outcome, verdict.above) {
                (Outcome::Different, true) => 0,
                (Outcome::Different, false) => 1,
                (Outcome::Equivalent, _) => 2,
                (Outcome::Within, _) => 3,
                (Outcome::Undecided, _) => 4,
            };
            counts[verdict.ratio][column] += 1;
            rounds += verdict.rounds;
            all += 1;
        }
    }
    let per_ratio = (all / RATIOS.len()) as f64;
    Characteristics {
        shares: counts.map(|row| row.map(|count| count as f64 / per_ratio)),
        rounds: rounds as f64 / all as f64,
        lost: lost as f64 / all as f64,
    }
}

/// The share of 95% intervals at `rounds` rounds that contain the true ratio: the blocked
/// interval's (a document's comparisons pooled) and the signed-rank one's.
fn coverage(noise: Noise, rounds: usize, studies: usize, seed: u64) -> (f64, f64) {
    let mut simulation = Simulation::new(seed);
    let (mut blocked, mut ranked, mut all) = (0, 0, 0);
    for _ in 0..studies {
        let series = simulation.others(rounds, noise);
        let prior = BlockPrior::pooled(series.iter().map(Vec::as_slice));
        for one in &series {
            let contains = |(low, high): (f64, f64)| usize::from(low <= 0.0 && high >= 0.0);
            blocked += contains(Blocked::paired(one, &prior).interval(ALPHA).unwrap());
            let values: Vec<f64> = one.iter().map(|&(_, v)| v).collect();
            ranked += contains(Ranked::paired(&values).interval(ALPHA).unwrap());
            all += 1;
        }
    }
    (blocked as f64 / all as f64, ranked as f64 / all as f64)
}

const QUIET: Noise = Noise {
    sigma: 0.07,
    share: 0.0,
    phi: 0.0,
    tail: true,
};

#[test]
fn the_level_never_tightens_and_holds_its_error_with_the_rank_statistic() {
    let levels = LOOKS.map(|look| look_alpha(&LOOKS, look as usize));
    assert!(
        levels.windows(2).all(|pair| pair[1] >= pair[0]),
        "{levels:?}"
    );
    // Under no difference, the chance that any look's exact signed-rank test calls the shift
    // above 0 (one side) at the looks' level, for one comparison and for one of twenty.
    let mut simulation = Simulation::new(3);
    let trials = 6000;
    for family in [1, 20] {
        let level = look_level(&LOOKS, ALPHA / f64::from(family));
        let mut crossed = 0;
        for _ in 0..trials {
            let series = simulation.series(24, 1.0, QUIET);
            let values: Vec<f64> = series.iter().map(|&(_, v)| v).collect();
            crossed +=
                usize::from(LOOKS.iter().any(|&look| {
                    Ranked::paired(&values[..look as usize]).p_above(0.0) <= level / 2.0
                }));
        }
        let share = crossed as f64 / trials as f64;
        eprintln!(
            "looks {LOOKS:?}, family of {family}: level {level:.5} at every look; one side \
             crossed at any look in {:.2}% (α/2 = {:.2}%)",
            share * 100.0,
            ALPHA / f64::from(family) / 2.0 * 100.0
        );
        // The exact test's discreteness makes it conservative; the bound is α/2 and two
        // standard errors of the simulation.
        let bound = ALPHA / f64::from(family) / 2.0;
        assert!(
            share <= bound + 2.0 * (bound / trials as f64).sqrt(),
            "{share}"
        );
    }
}

/// As measured in two quiet default runs, harsher: their documents' between-block share was
/// 0.02–0.08 of a round's variance and their lag-1 autocorrelation 0–0.24.
const MEASURED: Noise = Noise {
    sigma: 0.07,
    share: 0.25,
    phi: 0.2,
    tail: true,
};

/// The share of comparisons at exactly the margin (1.03) whose interval, at the looks' level,
/// lies wholly above it at one look or more, and below −margin: a false "different" on either
/// side, whichever look the study stopped at. Documents of `OTHERS` comparisons, all at 1.03.
fn beyond_the_margin(noise: Noise, family: usize, documents: usize, seed: u64) -> (f64, f64) {
    let mut simulation = Simulation::new(seed);
    let margin = MARGIN.ln_1p();
    let (mut above, mut below, mut all) = (0, 0, 0);
    for _ in 0..documents {
        let series: Vec<Vec<(u32, f64)>> = (0..OTHERS)
            .map(|_| simulation.series(24, margin.exp(), noise))
            .collect();
        let mut crossed = vec![(false, false); series.len()];
        for &look in &LOOKS {
            let rounds = look as usize;
            let level = look_level(&LOOKS, ALPHA / family as f64);
            let prior = BlockPrior::pooled(series.iter().map(|one| &one[..rounds]));
            for (one, crossed) in series.iter().zip(crossed.iter_mut()) {
                let (low, high) = (Blocked::paired(&one[..rounds], &prior).interval(level))
                    .expect("an interval at 12 rounds");
                crossed.0 |= low > margin;
                crossed.1 |= high < -margin;
            }
        }
        above += crossed.iter().filter(|c| c.0).count();
        below += crossed.iter().filter(|c| c.1).count();
        all += series.len();
    }
    (above as f64 / all as f64, below as f64 / all as f64)
}

#[test]
fn a_difference_at_the_margin_is_called_at_most_alpha_over_two_per_side() {
    for (index, (name, noise, bound)) in [
        ("quiet", QUIET, Some(ALPHA / 2.0)),
        ("between-block and lag-1", MEASURED, Some(ALPHA / 2.0)),
        (
            "between-block λ = 0.5",
            Noise {
                share: 0.5,
                ..QUIET
            },
            Some(ALPHA / 2.0),
        ),
        (
            "noisy, between-block and lag-1",
            Noise {
                sigma: 0.15,
                ..MEASURED
            },
            Some(ALPHA / 2.0),
        ),
        // Dependence this strong is not held (4%); the default runs showed a lag-1 of 0–0.24.
        ("lag-1 φ = 0.5", Noise { phi: 0.5, ..QUIET }, None),
        (
            "between-block and lag-1, Gaussian rounds",
            Noise {
                tail: false,
                ..MEASURED
            },
            Some(ALPHA / 2.0),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        // The simultaneous level's rate is a twentieth as large: simulated where it matters.
        let families = match index {
            0 | 1 => vec![(1, 80), (20, 60)],
            _ => vec![(1, 80)],
        };
        for (family, documents) in families {
            let (above, below) = beyond_the_margin(noise, family, documents, 20 + index as u64);
            eprintln!(
                "true 1.03, {name} (σ {}, λ {}, φ {}), level of {family}: different above \
                 1.03 at some look {:.2}%, below 1/1.03 {:.2}% ({} comparisons)",
                noise.sigma,
                noise.share,
                noise.phi,
                above * 100.0,
                below * 100.0,
                documents * OTHERS
            );
            if let Some(bound) = bound {
                // The bound for one comparison, a twentieth of it for one of twenty, and two
                // standard errors of a simulation this size.
                let bound = bound / family as f64;
                let bound =
                    bound + 2.0 * (bound * (1.0 - bound) / (documents * OTHERS) as f64).sqrt();
                assert!(above <= bound && below <= bound, "{name}: {above} {below}");
            }
        }
    }
}

#[test]
fn the_procedure_finds_what_it_should() {
    let scenarios = [
        ("quiet", QUIET, [120, 50]),
        ("between-block and lag-1", MEASURED, [120, 50]),
        (
            "between-block λ = 0.5",
            Noise {
                share: 0.5,
                ..QUIET
            },
            [80, 0],
        ),
        ("lag-1 φ = 0.5", Noise { phi: 0.5, ..QUIET }, [80, 0]),
        (
            "noisy",
            Noise {
                sigma: 0.15,
                ..QUIET
            },
            [60, 0],
        ),
        (
            "noisy, between-block and lag-1",
            Noise {
                sigma: 0.15,
                ..MEASURED
            },
            [60, 0],
        ),
    ];
    eprintln!(
        "true ratio: different above / below, no difference beyond 3%, within 10%, undecided"
    );
    for (index, (name, noise, studies)) in scenarios.into_iter().enumerate() {
        for (family, studies) in [1, 20].into_iter().zip(studies) {
            if studies == 0 {
                continue;
            }
            let found = characteristics(noise, family, studies, 10 + index as u64);
            eprintln!(
                "{name} (σ {}, λ {}, φ {}), {}, {studies} studies, mean {:.1} rounds, {:.1}% \
                 left undecided that 24 rounds would have decided:",
                noise.sigma,
                noise.share,
                noise.phi,
                match family {
                    1 => "each comparison at its own level".to_string(),
                    m => format!("simultaneous over {m}"),
                },
                found.rounds,
                found.lost * 100.0
            );
            for (ratio, shares) in RATIOS.iter().zip(found.shares) {
                let [above, below, equivalent, within, undecided] = shares.map(|s| s * 100.0);
                eprintln!(
                    "  {ratio:.2}: {above:5.1}% / {below:4.1}%  {equivalent:5.1}%  {within:5.1}%  \
                     {undecided:5.1}%"
                );
            }
            let [_, _, moderate, _, large] = found.shares;
            // Neither a 5% nor a 20% difference is called no difference beyond 3%, nor is a
            // 20% one within 10%.
            assert!(moderate[2] <= ALPHA / 2.0, "{name}: {moderate:?}");
            assert!(large[2] + large[3] <= ALPHA / 2.0, "{name}: {large:?}");
            if noise.sigma < 0.1 {
                assert!(large[0] >= 0.8, "{name}, family {family}: power {large:?}");
            }
        }
    }
}

#[test]
fn intervals_cover_with_a_between_block_component() {
    for (name, noise, must) in [
        ("no block component", QUIET, false),
        (
            "λ = 0.25",
            Noise {
                share: 0.25,
                ..QUIET
            },
            true,
        ),
        (
            "λ = 0.5",
            Noise {
                share: 0.5,
                ..QUIET
            },
            true,
        ),
        (
            "λ = 1",
            Noise {
                share: 1.0,
                ..QUIET
            },
            true,
        ),
        ("lag-1 φ = 0.5", Noise { phi: 0.5, ..QUIET }, false),
        ("λ = 0.25 and φ = 0.2", MEASURED, true),
    ] {
        for rounds in [12, 24] {
            let (blocked, ranked) = coverage(noise, rounds, 50, rounds as u64);
            eprintln!(
                "95% intervals, {name}, {rounds} rounds: cover {:.1}% (signed-rank alone {:.1}%)",
                blocked * 100.0,
                ranked * 100.0
            );
            if must {
                assert!(blocked >= 0.93, "{name}, {rounds} rounds: {blocked}");
            }
        }
    }
}
