//! The equal-load sweep (`--sweep`): at 50 connections on two CPUs a closed loop measures the
//! load generator (it does the same TCP work per message as the server), so the engines are
//! compared at the same offered rates instead. Per connection count (and payload): a short
//! closed-loop probe of each engine finds what it sustains; the lowest of those is the scale,
//! and every engine is then measured open loop at the same multiples of it, runs alternating
//! engines as everywhere else. An engine leaves the sweep at the first point it did not hold
//! (`Row::held_offered_rate`: behind its schedule, short of the rate, or p99 over the bound).

use std::time::Duration;

use serde_json::Value;

use super::{NetCell, SweepRole};
use crate::output::progress::Progress;
use crate::row::{Row, P99_BOUND_PARAM, SWEEP_PARAM};
use crate::studies::{run_rounds, Outcome, Rounds};

/// The sweep's shape, from `--sweep-points`, `--p99-bound` and `--probe-duration`.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Offered rates as multiples of the lowest engine's closed-loop rate, ascending.
    pub points: Vec<f64>,
    pub p99_bound: Duration,
    /// Measured time of each engine's closed-loop probe.
    pub probe: Duration,
}

impl Sweep {
    /// Rounds at each point of the sweep: `--runs N` as given; `auto` three, as before rounds
    /// were decided in stages (the sweep's own rounds and verdict are the equal-load issue's).
    pub fn point_rounds(rounds: Rounds) -> u32 {
        match rounds {
            Rounds::Auto => 3,
            Rounds::Exactly(rounds) => rounds,
        }
    }

    /// The parameters every row of the sweep carries.
    pub fn tag(&self, row: &mut Row, role: SweepRole) {
        let name = match role {
            SweepRole::Probe => "probe",
            SweepRole::Point => "point",
        };
        row.params.insert(SWEEP_PARAM.into(), Value::from(name));
        let bound = self.p99_bound.as_nanos() as u64;
        row.params
            .insert(P99_BOUND_PARAM.into(), Value::from(bound));
    }

    /// Steps the progress bar may take: a probe per cell, every point of every cell's runs.
    pub fn steps(&self, cells: usize, rounds: Rounds) -> u64 {
        let runs = Sweep::point_rounds(rounds);
        cells as u64 * (1 + self.points.len() as u64 * u64::from(runs))
    }

    /// Runs the sweep over `cells` (closed-loop cells, every server at every connection count
    /// and payload), `measure` running one cell's run.
    pub fn run(
        &self,
        rounds: Rounds,
        workload: &str,
        cells: &[NetCell],
        progress: &Progress,
        mut measure: impl FnMut(&NetCell, u32) -> anyhow::Result<Row>,
        failed_row: impl Fn(&NetCell, u32, &str) -> Row,
    ) -> Outcome {
        let runs = Sweep::point_rounds(rounds);
        let mut outcome = Outcome {
            rows: Vec::new(),
            interrupted: false,
        };
        let mut groups: Vec<Vec<&NetCell>> = Vec::new();
        for cell in cells {
            let key = (cell.connections, cell.payload_bytes);
            match (groups.iter_mut()).find(|g| (g[0].connections, g[0].payload_bytes) == key) {
                Some(group) => group.push(cell),
                None => groups.push(vec![cell]),
            }
        }
        for group in groups {
            let probes: Vec<NetCell> = group.iter().map(|c| c.sweeping(None)).collect();
            let one = Rounds::Exactly(1);
            let probed = run_rounds(one, workload, &probes, progress, &mut measure, &failed_row);
            let done = probed.interrupted;
            let carried = carried(&probed.rows);
            let scale = (probed.rows.iter())
                .filter(|row| carried.contains(&row.engine))
                .map(|row| row.ops_per_sec)
                .fold(f64::INFINITY, f64::min);
            for row in probed
                .rows
                .iter()
                .filter(|row| !carried.contains(&row.engine))
            {
                progress.alert(format!(
                    "ringside: {} left out of the sweep at {} connections: its probe ({:.0}/s) \
                     was under a tenth of the probes' median (an engine that slow would set \
                     every point to its own rate)",
                    row.engine, group[0].connections, row.ops_per_sec
                ));
            }
            absorb(&mut outcome, probed);
            if done {
                return outcome;
            }
            if !scale.is_finite() {
                progress.alert(format!(
                    "ringside: no engine's probe at {} connections verified: no sweep there",
                    group[0].connections
                ));
                continue;
            }
            let mut live: Vec<&NetCell> = (group.iter().copied())
                .filter(|cell| carried.contains(&cell.server.name()))
                .collect();
            for &point in &self.points {
                let rate = (scale * point).round().max(1.0);
                let cells: Vec<NetCell> = live.iter().map(|c| c.sweeping(Some(rate))).collect();
                let fixed = Rounds::Exactly(runs);
                let mut measured =
                    run_rounds(fixed, workload, &cells, progress, &mut measure, &failed_row);
                // One window has no majority to outvote a stall that was not the engine's
                // (the host taking the vCPU for a few ms cost three engines in a row their
                // p99 here): a single run not held is run once more, after the others.
                let missed: Vec<NetCell> = (cells.iter())
                    .filter(|cell| !held_by_most(&measured.rows, &cell.server.name()))
                    .map(|cell| cell.sweeping(Some(rate)))
                    .collect();
                if runs == 1 && !missed.is_empty() && !measured.interrupted {
                    let again = run_rounds(
                        Rounds::Exactly(1),
                        workload,
                        &missed,
                        progress,
                        |cell, run| measure(cell, run + runs),
                        |cell, run, reason| failed_row(cell, run + runs, reason),
                    );
                    absorb(&mut measured, again);
                }
                let done = measured.interrupted;
                live.retain(|cell| held_by_most(&measured.rows, &cell.server.name()));
                absorb(&mut outcome, measured);
                if done {
                    return outcome;
                }
                if live.is_empty() {
                    break;
                }
            }
        }
        outcome
    }
}

/// A probe under this share of the probes' median leaves its server out of the sweep.
const PROBE_SHARE_KEPT: f64 = 0.1;

/// The servers whose verified probe reached at least `PROBE_SHARE_KEPT` of the probes' median.
fn carried(probes: &[Row]) -> Vec<String> {
    let verified: Vec<&Row> = (probes.iter())
        .filter(|row| row.verified && row.ops_per_sec > 0.0)
        .collect();
    let median = crate::stats::median(&verified.iter().map(|r| r.ops_per_sec).collect::<Vec<_>>());
    (verified.iter())
        .filter(|row| row.ops_per_sec >= PROBE_SHARE_KEPT * median)
        .map(|row| row.engine.clone())
        .collect()
}

/// Whether most of `engine`'s runs in `rows` held their offered rate.
fn held_by_most(rows: &[Row], engine: &str) -> bool {
    let runs: Vec<bool> = (rows.iter())
        .filter(|row| row.engine == engine)
        .filter_map(Row::held_offered_rate)
        .collect();
    !runs.is_empty() && 2 * runs.iter().filter(|&&held| held).count() >= runs.len()
}

fn absorb(outcome: &mut Outcome, part: Outcome) {
    outcome.rows.extend(part.rows);
    outcome.interrupted |= part.interrupted;
}
