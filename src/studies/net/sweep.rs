//! The equal-load sweep (`--sweep`): at 50 connections on two CPUs a closed loop measures the
//! load generator (it does the same TCP work per message as the server), so the engines are
//! compared at the same offered rates instead. Per connection count (and payload):
//!
//! 1. a short closed-loop probe of each server finds what it sustains;
//! 2. the load's own open-loop ceiling is found against the fastest server: rates rising by a
//!    quarter from a fifth of its probe until the open loop falls behind its schedule (or its
//!    p99 bound) at two rates in a row, stopping at the slowest probe; the ceiling is the
//!    highest rate held (on two CPUs the open-loop client falls behind from about half the
//!    closed-loop rate, bench/equal-load.md);
//! 3. the points are fractions (`--sweep-points`) of the lower of two ceilings: the slowest
//!    probe of the engines that serve connections at once (the engine table says which; one
//!    that serves one connection at a time is probed but never offered many connections'
//!    load), and the load's own; each engine is screened at every point, once (and once more
//!    after a miss: one window cannot outvote a stall that was not the engine's), and goes on
//!    past the last point in steps of a fifth until it stops holding (`Row::held_offered_rate`),
//!    so the curves show each engine's knee;
//! 4. the highest listed point held by the baseline (epoll) and most of the engines
//!    (`EqualLoad::common_rate`, the rate `EqualLoad::verdict_rate` then gives its verdict at)
//!    is measured in rounds by the engines that held it (`--runs`: auto adds rounds in stages
//!    until its comparisons, server CPU per operation against epoll paired by round, are
//!    decided or cannot be), its screening run the first; an engine that did not hold it is
//!    named with its knee, not allowed to drag the comparison down to where every message
//!    wakes an idle server.

use std::time::Duration;

use super::{NetCell, SweepRole};
use crate::model::comparison::{decide, Family, LOOKS};
use crate::model::equal_load::{equal_loads, Scale, BASELINE, CEILING, POINT, PROBE};
use crate::output::progress::Progress;
use crate::row::params::{Param, Params};
use crate::row::Row;
use crate::stats::rank::Outcome as Decision;
use crate::studies::{run_stages, Cell, Outcome, Plan, Rounds, Stages};

/// The load's ceiling search starts at this share of the fastest probe (on two CPUs the load
/// held 23–60% of it, bench/equal-load.md) ...
const CEILING_START: f64 = 0.2;
/// ... offers each next rate this much more ...
const CEILING_STEP: f64 = 1.25;
/// ... and, when its first rate is missed, halves it at most this many times.
const CEILING_HALVINGS: u32 = 3;
/// The search ends at this many missed rates in a row (each already looked at twice), and the
/// ceiling is the highest rate held. Stopping at the first miss took one noisy window pair for
/// the ceiling: a search that missed 105.9k/s twice set it at 84.7k/s, and epoll and
/// uring-defer then held 92k and 110k/s on the knee steps of the same run. A real ceiling
/// misses the step above it too; a stall that was not the client's is gone one step later.
/// One more step costs two runs at most (≈ 0.85 s each with `run`'s 200 ms warm-up and 500 ms
/// window), a third look at the missed rate as much, and tells less.
const CEILING_MISSES: u32 = 2;
/// Past the last point each engine goes on in rates this much higher, ...
const KNEE_STEP: f64 = 1.2;
/// ... at most this many of them, and never above its own closed-loop probe.
const KNEE_STEPS: u32 = 6;

/// The sweep's shape, from `--sweep-points`, `--p99-bound` and `--probe-duration`.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Offered rates as fractions of the lower ceiling, ascending.
    pub points: Vec<f64>,
    pub p99_bound: Duration,
    /// Measured time of each engine's closed-loop probe.
    pub probe: Duration,
}

/// What measuring one cell's run and making a failed run's row are, for the sweep's phases.
pub struct Runner<'a, M, F> {
    pub workload: &'a str,
    pub progress: &'a Progress,
    pub measure: M,
    pub failed_row: F,
}

impl<M, F> Runner<'_, M, F>
where
    M: FnMut(&NetCell, u32) -> anyhow::Result<Row>,
    F: Fn(&NetCell, u32, &str) -> Row,
{
    /// One run of each of `cells`, numbered `run`.
    fn once(&mut self, cells: &[NetCell], run: u32) -> Outcome {
        let stages = Stages {
            first: run,
            last: run,
            looks: None,
        };
        let (workload, progress) = (self.workload, self.progress);
        run_stages(
            stages,
            workload,
            cells,
            progress,
            &mut self.measure,
            &self.failed_row,
            |_| false,
        )
    }

    /// One run of each of `cells`, and one more (numbered next) of those that did not hold
    /// their rate: one window has no majority to outvote a stall that was not the engine's
    /// (the host taking the vCPU for a few ms cost three engines in a row their p99 here).
    fn screen(&mut self, cells: &[NetCell]) -> Outcome {
        let mut outcome = self.once(cells, 1);
        let missed: Vec<NetCell> = (cells.iter())
            .filter(|cell| !held_once(&outcome.rows, &cell.server.name(), cell.rate))
            .map(NetCell::again)
            .collect();
        if !missed.is_empty() && !outcome.interrupted {
            let again = self.once(&missed, 2);
            absorb(&mut outcome, again);
        }
        outcome
    }
}

impl Sweep {
    /// The parameters every row of the sweep carries, and a second look's mark.
    pub fn tag(&self, row: &mut Row, role: SweepRole, second_look: bool) {
        let name = match role {
            SweepRole::Probe => PROBE,
            SweepRole::Ceiling => CEILING,
            SweepRole::Point => POINT,
        };
        row.params.put(Param::Sweep, name);
        let bound = self.p99_bound.as_nanos() as u64;
        row.params.put(Param::P99BoundNs, bound);
        if second_look {
            row.params.put(Param::SecondLook, true);
        }
    }

    /// Steps the progress bar may take, at most, per cell (the bar ends where the sweep did): a
    /// probe, a share of the ceiling search, the points screened (some twice), the knee, and
    /// the rounds at the verdict's rate.
    pub fn steps(&self, cells: usize, rounds: Rounds) -> u64 {
        let points = self.points.len() as u64 + u64::from(KNEE_STEPS);
        cells as u64 * (1 + 2 + 2 * points + u64::from(rounds.budget()))
    }

    /// The plan of the sweep over `cells`: at most `steps` runs, each about as long as a
    /// cell's.
    pub fn plan(&self, workload: &str, cells: &[NetCell], rounds: Rounds) -> Plan {
        let engines = cells.len();
        let each: Duration = cells.iter().filter_map(Cell::planned).sum::<Duration>()
            / u32::try_from(engines.max(1)).unwrap_or(u32::MAX);
        let what = format!(
            "an equal-load sweep of {engines} cells: a probe each, the load's own ceiling, \
             {} points and on to each engine's knee, then {} rounds at the verdict's rate",
            self.points.len(),
            match rounds {
                Rounds::Auto => format!("{} to {}", LOOKS[0], rounds.budget()),
                Rounds::Exactly(n) => n.to_string(),
            }
        );
        Plan::bounded(workload, what, self.steps(engines, rounds), each)
    }

    /// Runs the sweep over `cells` (every server at every connection count and payload).
    pub fn run<M, F>(
        &self,
        rounds: Rounds,
        cells: &[NetCell],
        runner: &mut Runner<'_, M, F>,
    ) -> Outcome
    where
        M: FnMut(&NetCell, u32) -> anyhow::Result<Row>,
        F: Fn(&NetCell, u32, &str) -> Row,
    {
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
            let part = self.run_group(rounds, &group, runner);
            let done = part.interrupted;
            absorb(&mut outcome, part);
            if done {
                return outcome;
            }
        }
        runner.progress.end_at_position();
        outcome
    }

    /// The sweep of one connection count (and payload): probes, the load's ceiling, the
    /// points screened to each engine's knee, the verdict's rate in rounds.
    fn run_group<M, F>(
        &self,
        rounds: Rounds,
        group: &[&NetCell],
        runner: &mut Runner<'_, M, F>,
    ) -> Outcome
    where
        M: FnMut(&NetCell, u32) -> anyhow::Result<Row>,
        F: Fn(&NetCell, u32, &str) -> Row,
    {
        let (workload, progress) = (runner.workload, runner.progress);
        let connections = group[0].connections;
        let probes: Vec<NetCell> = group
            .iter()
            .map(|c| NetCell {
                window: self.probe,
                ..c.sweeping(SweepRole::Probe, None)
            })
            .collect();
        let mut outcome = runner.once(&probes, 1);
        if outcome.interrupted {
            return outcome;
        }
        let scale = self.scale(workload, connections, &outcome.rows);
        let (Some((fastest, _)), Some((_, slowest))) = (&scale.fastest, &scale.slowest) else {
            progress.alert(format!(
                "ringside: no probe of an engine that serves connections at once verified at \
                 {connections} connections: no sweep there"
            ));
            return outcome;
        };
        for engine in &scale.one_at_a_time {
            progress.line(format!(
                "ringside: {engine} serves one connection at a time: probed, not offered \
                 {connections} connections' load"
            ));
        }
        let fastest_cell = (group.iter().copied())
            .find(|cell| cell.server.name() == *fastest)
            .expect("the fastest probe is a cell's");
        let ceiling = self.ceiling_search(fastest_cell, *slowest, &scale, runner);
        absorb(&mut outcome, ceiling);
        if outcome.interrupted {
            return outcome;
        }
        let scale = self.scale(workload, connections, &outcome.rows);
        let Some(lower) = scale.lower() else {
            progress.alert(format!(
                "ringside: at {connections} connections the load's own open loop held none of \
                 the rates it offered {fastest}: no points"
            ));
            return outcome;
        };
        progress.line(format!(
            "ringside: points at {} of {lower:.0}/s, the lower of the slowest probe \
             ({slowest:.0}/s) and the load's own ceiling",
            self.points
                .iter()
                .map(|p| format!("{p}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let screened = self.screen_points(group, lower, &scale, runner);
        absorb(&mut outcome, screened);
        if outcome.interrupted {
            return outcome;
        }
        let rounded = self.verdict_rounds(rounds, group, lower, &outcome.rows, runner);
        absorb(&mut outcome, rounded);
        outcome
    }

    /// The scale of the group's rows so far.
    fn scale(&self, workload: &str, connections: usize, rows: &[Row]) -> Scale {
        let role = |row: &&Row, name: &str| row.params.param_str(Param::Sweep) == Some(name);
        let probes: Vec<&Row> = rows.iter().filter(|row| role(row, PROBE)).collect();
        let ceiling: Vec<&Row> = rows.iter().filter(|row| role(row, CEILING)).collect();
        Scale::of(workload, connections as u64, &probes, &ceiling)
    }

    /// The load's own open-loop ceiling against `fastest`: rising rates from `CEILING_START`
    /// of its probe (halved while the first is missed), each screened, until `CEILING_MISSES`
    /// in a row are not held or the slowest probe is; the ceiling is the highest rate held
    /// (`Scale::client_ceiling`).
    fn ceiling_search<M, F>(
        &self,
        fastest: &NetCell,
        slowest: f64,
        scale: &Scale,
        runner: &mut Runner<'_, M, F>,
    ) -> Outcome
    where
        M: FnMut(&NetCell, u32) -> anyhow::Result<Row>,
        F: Fn(&NetCell, u32, &str) -> Row,
    {
        let (_, fastest_probe) = scale.fastest.clone().expect("a fastest probe");
        let mut outcome = Outcome {
            rows: Vec::new(),
            interrupted: false,
        };
        let (mut rate, mut held_any, mut halved) = (CEILING_START * fastest_probe, false, 0);
        let mut misses = 0;
        loop {
            let offered = rate.min(slowest).round().max(1.0);
            let cell = fastest.sweeping(SweepRole::Ceiling, Some(offered));
            let part = runner.screen(std::slice::from_ref(&cell));
            let held = part
                .rows
                .iter()
                .any(|row| row.held_offered_rate() == Some(true));
            let done = part.interrupted;
            absorb(&mut outcome, part);
            match (held, held_any) {
                _ if done => return outcome,
                (true, _) if offered >= slowest => return outcome,
                (true, _) => (rate, held_any, misses) = (rate * CEILING_STEP, true, 0),
                // Missed before any rate held: the ceiling is lower still.
                (false, false) if halved < CEILING_HALVINGS => {
                    (rate, halved) = (rate / 2.0, halved + 1)
                }
                // Missed after a held rate: one step on tells a stall from the ceiling.
                (false, true) if misses + 1 < CEILING_MISSES && offered < slowest => {
                    (rate, misses) = (rate * CEILING_STEP, misses + 1)
                }
                (false, _) => return outcome,
            }
        }
    }

    /// Every engine offered the points (not one that serves one connection at a time at many
    /// connections) screened at each point in turn, then past the last in `KNEE_STEP`s; an
    /// engine leaves at the first rate it did not hold, or above its own probe.
    fn screen_points<M, F>(
        &self,
        group: &[&NetCell],
        lower: f64,
        scale: &Scale,
        runner: &mut Runner<'_, M, F>,
    ) -> Outcome
    where
        M: FnMut(&NetCell, u32) -> anyhow::Result<Row>,
        F: Fn(&NetCell, u32, &str) -> Row,
    {
        let mut outcome = Outcome {
            rows: Vec::new(),
            interrupted: false,
        };
        let probe = |name: &str| {
            (scale.probes.iter())
                .find(|(engine, _)| engine == name)
                .map_or(f64::INFINITY, |(_, rate)| *rate)
        };
        let mut live: Vec<&NetCell> = (group.iter().copied())
            .filter(|cell| scale.offers(&cell.server.name()))
            .collect();
        let last = *self.points.last().expect("a point");
        let knee = (1..=KNEE_STEPS).map(|step| last * KNEE_STEP.powi(step as i32));
        for fraction in self.points.iter().copied().chain(knee) {
            let rate = (lower * fraction).round().max(1.0);
            let is_knee = fraction > last;
            live.retain(|cell| !is_knee || probe(&cell.server.name()) >= rate);
            if live.is_empty() {
                break;
            }
            let cells: Vec<NetCell> = (live.iter())
                .map(|cell| cell.sweeping(SweepRole::Point, Some(rate)))
                .collect();
            let measured = runner.screen(&cells);
            let done = measured.interrupted;
            live.retain(|cell| held_once(&measured.rows, &cell.server.name(), Some(rate)));
            absorb(&mut outcome, measured);
            if done {
                break;
            }
        }
        outcome
    }

    /// The verdict's rate (the highest of the listed points the baseline and most engines
    /// held in the screening, `EqualLoad::common_rate`) measured in rounds after its screening
    /// run, by the engines that held it there: `--runs N` to N rounds in all, auto in stages
    /// (`LOOKS`) until every comparison there is decided or cannot be within the budget. The
    /// others are named with their knees.
    fn verdict_rounds<M, F>(
        &self,
        rounds: Rounds,
        group: &[&NetCell],
        lower: f64,
        so_far: &[Row],
        runner: &mut Runner<'_, M, F>,
    ) -> Outcome
    where
        M: FnMut(&NetCell, u32) -> anyhow::Result<Row>,
        F: Fn(&NetCell, u32, &str) -> Row,
    {
        let nothing = Outcome {
            rows: Vec::new(),
            interrupted: false,
        };
        // `so_far` is this group's rows: one equal-load comparison.
        let Some(load) = equal_loads(so_far).into_iter().next() else {
            return nothing;
        };
        // The listed points only: past them each engine went on to its knee, where the next
        // stall would miss the rate. The model gives its verdict at the rate chosen here.
        let listed = (self.points.iter()).map(|fraction| (lower * fraction).round().max(1.0));
        let Some(rate) = load.common_rate(listed) else {
            return nothing;
        };
        let held = |name: &str| load.at(name, rate).is_some_and(|point| point.held);
        let cells: Vec<NetCell> = (group.iter())
            .filter(|cell| held(&cell.server.name()))
            .map(|cell| cell.sweeping(SweepRole::Point, Some(rate)))
            .collect();
        let knees: Vec<String> = (load.engines.iter())
            .filter(|(name, _)| !held(name))
            .map(|(name, _)| match load.highest_held(name) {
                Some(knee) => format!("{name} (its knee: {knee:.0}/s)"),
                None => format!("{name} (held none)"),
            })
            .collect();
        let done = (so_far.iter())
            .filter(|row| row.offered_rate == Some(rate))
            .map(|row| row.run)
            .max()
            .unwrap_or(0);
        // `--runs N`: the screening run and N − 1 rounds, numbered after a second look there
        // (which is no round). Auto's looks are run numbers: it keeps its budget's last.
        let last = match rounds {
            Rounds::Exactly(n) => n + done.saturating_sub(1),
            Rounds::Auto => rounds.budget(),
        };
        let stages = Stages {
            first: done + 1,
            last,
            looks: (rounds == Rounds::Auto).then(|| LOOKS.to_vec()),
        };
        if cells.len() < 2 || stages.first > stages.last {
            return nothing;
        }
        let baseline = load.baseline().unwrap_or(BASELINE);
        runner.progress.line(match knees.as_slice() {
            [] => format!(
                "ringside: the highest point every engine held, {rate:.0}/s, measured in rounds"
            ),
            out => format!(
                "ringside: the highest point {baseline} and most engines held, {rate:.0}/s, \
                 measured in rounds; not held by {}",
                out.join(", ")
            ),
        });
        let earlier: Vec<Row> = so_far.to_vec();
        let settled = |rows: &[Row]| {
            let all: Vec<Row> = earlier.iter().chain(rows).cloned().collect();
            let Some(load) = equal_loads(&all).into_iter().next() else {
                return true;
            };
            let mut family = load.comparisons();
            decide(&mut family, Family::Each);
            let budget = rounds.budget() as usize;
            (family.iter()).all(|c| c.outcome != Decision::Undecided || c.futile(budget))
        };
        let (workload, progress) = (runner.workload, runner.progress);
        run_stages(
            stages,
            workload,
            &cells,
            progress,
            &mut runner.measure,
            &runner.failed_row,
            settled,
        )
    }
}

/// Whether `engine` held `rate` in some run of `rows` (a run and its second chance: either).
fn held_once(rows: &[Row], engine: &str, rate: Option<f64>) -> bool {
    (rows.iter())
        .filter(|row| row.engine == engine && row.offered_rate == rate)
        .any(|row| row.held_offered_rate() == Some(true))
}

fn absorb(outcome: &mut Outcome, part: Outcome) {
    outcome.rows.extend(part.rows);
    outcome.interrupted |= part.interrupted;
}
