//! The verdict code held to its promise on this machine's noise (issue 28): an A/A comparison
//! (one engine against itself) is called *different* at most 5% of the time, per comparison,
//! and a true 1.2× is found. The noise is replayed from traces recorded here
//! (`bench/verdicts-traces.sh`: 48 rounds of `--engine X,X` per workload, the rounds' figures
//! kept in `tests/fixtures/noise/`), and simulated from a model fitted to them that adds what a
//! trace may lack: a step in the machine's speed, moves within a round, lag-1 autocorrelation.
//! bench/verdicts.md measures the same on the real machine.

#![cfg(test)]

use serde::Deserialize;

use crate::model::comparison::{decide, spent_alpha, Comparison, Family, Metric, LOOKS};
use crate::model::study::{EngineSummary, Round};
use crate::stats::rank::Outcome;

/// One recorded A/A study: the same engine twice in each of its rounds.
#[derive(Deserialize)]
struct Trace {
    name: String,
    /// The metric the trace holds (`throughput` or `cpu_per_op`).
    metric: Metric,
    a: Vec<f64>,
    b: Vec<f64>,
}

fn traces() -> Vec<Trace> {
    [
        include_str!("../../tests/fixtures/noise/fs-write-blocking.json"),
        include_str!("../../tests/fixtures/noise/fs-write-ring.json"),
        include_str!("../../tests/fixtures/noise/fs-read-direct-1.json"),
        include_str!("../../tests/fixtures/noise/fs-cycle-link.json"),
        include_str!("../../tests/fixtures/noise/echo-epoll-50.json"),
        include_str!("../../tests/fixtures/noise/http-epoll-rate.json"),
    ]
    .iter()
    .map(|text| serde_json::from_str(text).expect("a noise trace"))
    .collect()
}

/// An engine whose rounds hold `values` of `metric`, numbered from 1.
fn engine(name: &str, metric: Metric, values: &[f64]) -> EngineSummary {
    EngineSummary::with_rounds(
        name,
        (values.iter().enumerate())
            .map(|(index, value)| Round::only(index as u32 + 1, metric, *value))
            .collect(),
    )
}

/// The decision on `b` over `a` as one comparison (a family of one) at `alpha`.
fn decided(metric: Metric, a: &[f64], b: &[f64], alpha: f64) -> Comparison {
    let (a, b) = (engine("a", metric, a), engine("b", metric, b));
    let mut comparison = [Comparison::paired(&b, &a, metric, alpha)];
    decide(&mut comparison, Family::Each);
    comparison[0].clone()
}

/// Every window of `n` consecutive rounds of `trace`, `b` scaled by `factor` (1 for A/A): how
/// many were called different, of how many.
fn replayed(trace: &Trace, n: usize, factor: f64) -> (usize, usize) {
    let (mut different, mut all) = (0, 0);
    for start in 0..=trace.a.len().saturating_sub(n) {
        let a = &trace.a[start..start + n];
        let b: Vec<f64> = trace.b[start..start + n]
            .iter()
            .map(|v| v * factor)
            .collect();
        let outcome = decided(trace.metric, a, &b, spent_alpha(&[], n)).outcome;
        different += usize::from(outcome == Outcome::Different);
        all += 1;
    }
    (different, all)
}

/// The spread of one cell within a round in `trace`: the log ratios' median absolute
/// deviation as a standard deviation, over √2 (a ratio carries two cells' moves).
fn cell_spread(trace: &Trace) -> f64 {
    let ratios: Vec<f64> = (trace.a.iter().zip(&trace.b))
        .map(|(a, b)| (b / a).ln())
        .collect();
    let centre = crate::stats::median(&ratios);
    let deviations: Vec<f64> = ratios.iter().map(|r| (r - centre).abs()).collect();
    1.4826 * crate::stats::median(&deviations) / std::f64::consts::SQRT_2
}

/// Noise fitted to the traces, harsher where they were mild: per round the machine's speed
/// (shared by both engines) follows AR(1) with a step of 40% at a random round; each cell has
/// its own move within the round, heavy-tailed (one in ten moves three times as far).
struct Noise {
    rng: fastrand::Rng,
    /// Within-round spread of one cell, as a log.
    cell: f64,
    /// Round-to-round spread of the machine, and its lag-1 correlation.
    machine: f64,
    correlation: f64,
}

impl Noise {
    fn normal(&mut self) -> f64 {
        // Box–Muller.
        let (u, v) = (self.rng.f64().max(1e-12), self.rng.f64());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    fn cell(&mut self) -> f64 {
        let scale = if self.rng.u8(..10) == 0 { 3.0 } else { 1.0 };
        self.cell * scale * self.normal()
    }

    /// `n` rounds of an engine at 1 and one at `factor`.
    fn study(&mut self, n: usize, factor: f64) -> (Vec<f64>, Vec<f64>) {
        let step_at = self.rng.usize(..n);
        let mut machine = 0.0;
        let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for round in 0..n {
            let fresh = self.machine * (1.0 - self.correlation * self.correlation).sqrt();
            machine = self.correlation * machine + fresh * self.normal();
            let step = if round >= step_at {
                0.4f64.ln_1p()
            } else {
                0.0
            };
            a.push((machine + step + self.cell()).exp());
            b.push((machine + step + self.cell()).exp() * factor);
        }
        (a, b)
    }
}

/// The share of `trials` simulated studies of `n` rounds called different, `b` at `factor`.
fn simulated(noise: &mut Noise, n: usize, factor: f64, trials: usize) -> f64 {
    let mut different = 0;
    for _ in 0..trials {
        let (a, b) = noise.study(n, factor);
        let outcome = decided(Metric::Throughput, &a, &b, spent_alpha(&[], n)).outcome;
        different += usize::from(outcome == Outcome::Different);
    }
    different as f64 / trials as f64
}

/// A study measured with `--runs auto`: looks after `LOOKS` rounds, each spending its share of
/// α, stopping at the first decided look. Its outcome and rounds.
fn sequential(noise: &mut Noise, factor: f64) -> (Outcome, usize) {
    let budget = *LOOKS.last().unwrap() as usize;
    let (a, b) = noise.study(budget, factor);
    for &look in &LOOKS {
        let n = look as usize;
        let comparison = decided(Metric::Throughput, &a[..n], &b[..n], spent_alpha(&LOOKS, n));
        if comparison.outcome != Outcome::Undecided || comparison.futile(budget) || n == budget {
            return (comparison.outcome, n);
        }
    }
    unreachable!("the last look decides")
}

/// Noise as spread as the median trace's, or as the harshest's.
fn noise(seed: u64, harshest: bool) -> Noise {
    let mut spreads: Vec<f64> = traces().iter().map(cell_spread).collect();
    spreads.sort_by(f64::total_cmp);
    let cell = match harshest {
        true => spreads[spreads.len() - 1],
        false => crate::stats::median(&spreads),
    };
    Noise {
        rng: fastrand::Rng::with_seed(seed),
        cell,
        machine: 0.25,
        correlation: 0.7,
    }
}

#[test]
fn replayed_traces_call_an_identical_pair_different_at_most_5_percent_of_the_time() {
    for n in [8, 12, 16, 24] {
        let (mut different, mut all) = (0, 0);
        for trace in traces() {
            let (found, windows) = replayed(&trace, n, 1.0);
            (different, all) = (different + found, all + windows);
        }
        let share = different as f64 / all as f64;
        eprintln!(
            "A/A replayed, {n} rounds: {different} of {all} different ({:.1}%)",
            share * 100.0
        );
        assert!(all > 100, "{n} rounds: only {all} windows");
        assert!(
            share <= 0.05,
            "{n} rounds: {different} of {all} A/A windows different"
        );
    }
}

/// Power is the machine's to give: a trace whose cells move by ±80% within a round (the page
/// cycle's fsyncs on this VM's virtio disk) hides a 1.2× in any number of rounds, one that
/// moves by ±5% shows it in eight. Reported for every trace; held for the traces whose cells
/// move by less than 15% (the network, reads at depth 1, ring writes).
#[test]
fn replayed_traces_find_a_true_1_2x_where_the_noise_allows() {
    for trace in traces() {
        let spread = cell_spread(&trace);
        let powers: Vec<f64> = [8, 12, 24]
            .iter()
            .map(|&n| {
                let (found, all) = replayed(&trace, n, 1.2);
                found as f64 / all as f64
            })
            .collect();
        eprintln!(
            "1.2x replayed in {} (cell spread {spread:.3}): found in {:.0}% / {:.0}% / {:.0}% of \
             8 / 12 / 24-round windows",
            trace.name,
            powers[0] * 100.0,
            powers[1] * 100.0,
            powers[2] * 100.0
        );
        if spread < 0.15 {
            assert!(powers[2] >= 0.9, "{}: {powers:?}", trace.name);
        }
    }
}

#[test]
fn simulated_drift_and_tails_keep_false_alarms_under_5_percent() {
    for harshest in [false, true] {
        let mut noise = noise(1, harshest);
        for n in [8, 12, 24] {
            let share = simulated(&mut noise, n, 1.0, 2000);
            let power = simulated(&mut noise, n, 1.2, 2000);
            eprintln!(
                "simulated (cell spread {:.3}): {n} rounds, A/A {:.1}% different, 1.2x found \
                 {:.0}%",
                noise.cell,
                share * 100.0,
                power * 100.0
            );
            assert!(share <= 0.05, "{n} rounds: {share}");
        }
    }
}

#[test]
fn rounds_in_stages_stop_early_on_clear_cases_and_keep_their_error() {
    let mut noise = noise(2, false);
    let trials = 1000;
    let (mut false_alarms, mut rounds_aa) = (0, 0);
    for _ in 0..trials {
        let (outcome, rounds) = sequential(&mut noise, 1.0);
        false_alarms += usize::from(outcome == Outcome::Different);
        rounds_aa += rounds;
    }
    let (mut found, mut rounds_big) = (0, 0);
    for _ in 0..trials {
        let (outcome, rounds) = sequential(&mut noise, 2.0);
        found += usize::from(outcome == Outcome::Different);
        rounds_big += rounds;
    }
    eprintln!(
        "--runs auto: A/A {false_alarms} of {trials} different, mean {:.1} rounds; 2x found in \
         {found}, mean {:.1} rounds",
        rounds_aa as f64 / trials as f64,
        rounds_big as f64 / trials as f64
    );
    assert!(false_alarms as f64 / trials as f64 <= 0.05);
    assert!(found as f64 / trials as f64 >= 0.95);
    // A twofold difference is decided at the first look.
    assert!(rounds_big as f64 / (trials as f64) < 13.0);
}
