//! Equal load: the servers compared at the same offered rate (open loop), by what each spent on
//! it. Per workload and connection count (and payload), every engine's points by offered rate;
//! the sweep's scale, when a sweep ran (`--sweep`): each server's closed-loop probe, the slowest
//! of those that serve connections at once (an engine that serves one at a time never sets
//! the scale of a many-connection comparison: the engine table says which), and the load's
//! own open-loop ceiling, measured against the fastest server. The verdict rate is the one
//! measured in the most rounds (the sweep's: the highest point the baseline and most engines
//! held, `EqualLoad::common_rate`), and there each engine's server CPU per operation is
//! compared with the baseline's (epoll, the readiness API io_uring replaces), paired round by
//! round (`model::comparison`); an engine that did not hold that rate is named beside the
//! verdict with the highest rate it held, not compared.

use serde_json::Value;

use crate::engines::serving_of;
use crate::model::comparison::{Comparison, Judging};
use crate::model::study::table_rank;
use crate::model::summary::Metric;
use crate::model::summary::{EngineSummary, Headline};
use crate::row::params::{Param, Params};
use crate::row::{Row, HELD_RATE_SHARE};
use crate::stats::{median, Spread};

/// A sweep's row that probes a server's closed-loop rate (`params.sweep`).
pub const PROBE: &str = "probe";
/// A sweep's open-loop row against the fastest server that finds the load's own ceiling.
pub const CEILING: &str = "ceiling";
/// A sweep's open-loop row at one of its points.
pub const POINT: &str = "point";

/// A probe under this share of the probes' median is left out of the scale: an engine that
/// slow (`uring-sqpoll` under SCHED_FIFO here, its poller starved: 500/s against 150k+) would
/// set every point to its own rate. It is still offered the points, and named if it holds none.
pub const PROBE_SHARE_KEPT: f64 = 0.1;

/// The network baseline: the readiness API io_uring replaces.
pub const BASELINE: &str = "epoll";

/// One engine at one offered rate: the medians of its runs.
#[derive(Clone, Debug)]
pub struct Point {
    pub offered: f64,
    pub achieved: f64,
    pub cpu_us_per_op: Spread,
    pub cpu_utilisation: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Most of its runs held the rate (`Row::held_offered_rate`; half counts, as a point run
    /// once more after a miss is held when either run held it).
    pub held: bool,
    pub runs: usize,
}

impl Point {
    fn of(offered: f64, runs: &[&Row]) -> Point {
        let each = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<f64> {
            runs.iter().filter_map(|r| f(r)).collect()
        };
        let held = runs.iter().filter_map(|r| r.held_offered_rate());
        let (yes, all) = held.fold((0, 0), |(yes, all), h| (yes + usize::from(h), all + 1));
        Point {
            offered,
            achieved: median(&each(&|r| Some(r.ops_per_sec))),
            cpu_us_per_op: Spread::of(&each(&|r| r.server_cpu_us_per_op)),
            cpu_utilisation: median(&each(&|r| r.server_cpu_utilisation)),
            p50_us: median(&each(&|r| r.latency_ns_p50.map(|ns| ns as f64 / 1e3))),
            p99_us: median(&each(&|r| r.latency_ns_p99.map(|ns| ns as f64 / 1e3))),
            held: all > 0 && 2 * yes >= all,
            runs: runs.len(),
        }
    }
}

/// A server's closed-loop probe: its name and the rate it sustained.
type Probe = (String, f64);

/// Where a sweep put its points, from its probe and ceiling rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// Each verified closed-loop probe, in table order: the engine and its rate.
    pub probes: Vec<(String, f64)>,
    /// Engines that serve one connection at a time: at more than one connection they are not
    /// offered the points (their other connections would wait), only probed.
    pub one_at_a_time: Vec<String>,
    /// Probes under `PROBE_SHARE_KEPT` of the median: offered the points, never the scale.
    pub outliers: Vec<String>,
    /// The slowest probe of the engines that serve connections at once (the first ceiling).
    pub slowest: Option<(String, f64)>,
    /// The fastest probe: the server the load's own ceiling was measured against.
    pub fastest: Option<(String, f64)>,
    /// The highest rate the open loop held against the fastest server (the second ceiling),
    /// and the rate it first did not hold (None: it held every rate it was offered, up to the
    /// slowest probe).
    pub client_ceiling: Option<f64>,
    pub client_missed: Option<f64>,
}

impl Scale {
    /// The scale of a sweep at `connections` from its probe and ceiling rows.
    pub fn of(workload: &str, connections: u64, probes: &[&Row], ceiling: &[&Row]) -> Scale {
        let mut verified: Vec<Probe> = (probes.iter())
            .filter(|row| row.verified && row.ops_per_sec > 0.0)
            .map(|row| (row.engine.clone(), row.ops_per_sec))
            .collect();
        verified.sort_by_key(|(engine, _)| table_rank(workload, engine));
        let one_at_a_time: Vec<String> = (verified.iter())
            .filter(|(engine, _)| connections > 1 && !serves_at_once(workload, engine))
            .map(|(engine, _)| engine.clone())
            .collect();
        let concurrent: Vec<&Probe> = (verified.iter())
            .filter(|(engine, _)| !one_at_a_time.contains(engine))
            .collect();
        let middle = median(&concurrent.iter().map(|(_, rate)| *rate).collect::<Vec<_>>());
        let kept = |probe: &&&Probe| probe.1 >= PROBE_SHARE_KEPT * middle;
        let by_rate = |a: &&&Probe, b: &&&Probe| a.1.total_cmp(&b.1);
        let slowest = concurrent.iter().filter(kept).min_by(by_rate);
        let fastest = concurrent.iter().filter(kept).max_by(by_rate);
        let outliers = (concurrent.iter())
            .filter(|probe| !kept(probe))
            .map(|(engine, _)| engine.clone())
            .collect();
        let mut held: Vec<f64> = (ceiling.iter())
            .filter(|row| row.held_offered_rate() == Some(true))
            .filter_map(|row| row.offered_rate)
            .collect();
        held.sort_by(f64::total_cmp);
        let client_ceiling = held.last().copied();
        let client_missed = (ceiling.iter())
            .filter(|row| row.held_offered_rate() == Some(false))
            .filter_map(|row| row.offered_rate)
            .filter(|&rate| client_ceiling.is_none_or(|held| rate > held))
            .fold(None, |low: Option<f64>, rate| {
                Some(low.map_or(rate, |l| l.min(rate)))
            });
        Scale {
            one_at_a_time,
            outliers,
            slowest: slowest.map(|&probe| probe.clone()),
            fastest: fastest.map(|&probe| probe.clone()),
            client_ceiling,
            client_missed,
            probes: verified,
        }
    }

    /// The lower of the two ceilings, which the points are fractions of: the slowest
    /// concurrent probe, or the load's own ceiling where it fell behind below that. None
    /// without a probe, or when the load held none of the rates it was offered.
    pub fn lower(&self) -> Option<f64> {
        let (_, slowest) = self.slowest.as_ref()?;
        match (self.client_ceiling, self.client_missed) {
            (Some(ceiling), Some(_)) => Some(ceiling.min(*slowest)),
            (Some(_), None) => Some(*slowest),
            (None, _) => None,
        }
    }

    /// Whether `engine` is offered a sweep's points (not one that serves one connection at a
    /// time, at many connections).
    pub fn offers(&self, engine: &str) -> bool {
        !self.one_at_a_time.iter().any(|name| name == engine)
    }
}

/// Whether the engine called `engine` serves its connections at once (a contender, unknown to
/// the table, is taken to).
pub fn serves_at_once(workload: &str, engine: &str) -> bool {
    serving_of(workload, engine).is_none_or(|serving| serving.at_once())
}

/// The open-loop rows of one workload at one connection count (and payload).
#[derive(Clone, Debug)]
pub struct EqualLoad {
    pub workload: String,
    pub connections: u64,
    /// The echo payload (0: HTTP's own requests).
    pub payload_bytes: u64,
    /// The sweep's p99 bound in µs, when the rows carry one.
    pub p99_bound_us: Option<f64>,
    /// Engines in table order, each with its points by ascending offered rate.
    pub engines: Vec<(String, Vec<Point>)>,
    /// Where a sweep put its points (None for `--rate` alone).
    pub scale: Option<Scale>,
    /// The rows of the points, for the comparisons paired by round.
    rows: Vec<Row>,
    /// Its comparisons, decided once by the analysis (`analysis::Analysis`); empty until then.
    pub decided: Vec<Comparison>,
}

/// (Tests only.) At `rate`, the engine that spent the least server CPU
/// per operation against the baseline (or, where the baseline spent least, the next against
/// it), undecided until its family is decided.
#[cfg(test)]
#[derive(Clone, Debug)]
pub struct Finding {
    pub rate: f64,
    pub baseline: String,
    /// The engine compared with the baseline: the cheapest other engine.
    pub best: String,
    pub comparison: Comparison,
    /// Engines measured there that are not compared: they held no rate, or not this one.
    pub left_out: Vec<(String, LeftOut)>,
}

/// Why an engine of an equal-load comparison is not compared at its verdict rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LeftOut {
    /// It held none of the rates it was offered (an SQPOLL poller starved).
    HeldNone,
    /// It did not hold the verdict's rate (or was not measured in its rounds): the highest
    /// rate it held, its knee.
    Knee(f64),
}

/// The equal-load comparisons in `rows`, in the order they first appear.
pub fn equal_loads(rows: &[Row]) -> Vec<EqualLoad> {
    let mut found: Vec<EqualLoad> = Vec::new();
    let key = |row: &Row| {
        let param = |name: &str| row.params.get(name).and_then(Value::as_u64).unwrap_or(0);
        (
            row.workload.clone(),
            param("connections"),
            param("payload_bytes"),
        )
    };
    let role = |row: &Row| {
        row.params
            .param(Param::Sweep)
            .and_then(Value::as_str)
            .map(String::from)
    };
    let is_point = |row: &&Row| row.offered_rate.is_some() && role(row).as_deref() != Some(CEILING);
    for row in rows.iter().filter(is_point) {
        let (workload, connections, payload_bytes) = key(row);
        let known = |e: &EqualLoad| {
            (e.workload.as_str(), e.connections, e.payload_bytes)
                == (workload.as_str(), connections, payload_bytes)
        };
        if !found.iter().any(known) {
            found.push(EqualLoad {
                workload,
                connections,
                payload_bytes,
                p99_bound_us: (row.params.param(Param::P99BoundNs))
                    .and_then(Value::as_u64)
                    .map(|ns| ns as f64 / 1e3),
                engines: Vec::new(),
                scale: None,
                rows: Vec::new(),
                decided: Vec::new(),
            });
        }
    }
    for load in &mut found {
        let ours =
            |row: &&Row| key(row) == (load.workload.clone(), load.connections, load.payload_bytes);
        load.rows = rows.iter().filter(is_point).filter(ours).cloned().collect();
        let probes: Vec<&Row> = (rows.iter().filter(ours))
            .filter(|row| role(row).as_deref() == Some(PROBE))
            .collect();
        let ceiling: Vec<&Row> = (rows.iter().filter(ours))
            .filter(|row| role(row).as_deref() == Some(CEILING))
            .collect();
        if !probes.is_empty() {
            load.scale = Some(Scale::of(
                &load.workload,
                load.connections,
                &probes,
                &ceiling,
            ));
        }
        let mut names: Vec<String> = Vec::new();
        for row in &load.rows {
            if !names.contains(&row.engine) {
                names.push(row.engine.clone());
            }
        }
        names.sort_by_key(|name| table_rank(&load.workload, name));
        for engine in names {
            let mut rates: Vec<f64> = (load.rows.iter())
                .filter(|r| r.engine == engine)
                .filter_map(|r| r.offered_rate)
                .collect();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            let points = (rates.into_iter())
                .map(|offered| Point::of(offered, &load.runs(&engine, offered)))
                .collect();
            load.engines.push((engine, points));
        }
    }
    found
}

impl EqualLoad {
    /// "echo, 50 connections, 64 B".
    pub fn title(&self) -> String {
        let payload = match self.payload_bytes {
            0 => String::new(),
            bytes => format!(", {bytes} B"),
        };
        format!(
            "{}, {} connections{payload}",
            self.workload, self.connections
        )
    }

    /// The rows of `engine` at `offered`.
    fn runs(&self, engine: &str, offered: f64) -> Vec<&Row> {
        (self.rows.iter())
            .filter(|r| r.engine == engine && r.offered_rate == Some(offered))
            .collect()
    }

    /// The engine's point at `offered`.
    pub fn at(&self, engine: &str, offered: f64) -> Option<&Point> {
        let (_, points) = self.engines.iter().find(|(name, _)| name == engine)?;
        points.iter().find(|point| point.offered == offered)
    }

    /// The highest offered rate the engine held.
    pub fn highest_held(&self, engine: &str) -> Option<f64> {
        let (_, points) = self.engines.iter().find(|(name, _)| name == engine)?;
        (points.iter().filter(|p| p.held))
            .map(|p| p.offered)
            .fold(None, |best: Option<f64>, rate| {
                Some(best.map_or(rate, |b| b.max(rate)))
            })
    }

    /// The engines that held none of the rates they were offered. When they are fewer than
    /// half, they are left out of the verdict and named beside it: an engine that holds
    /// nothing (an SQPOLL poller sharing the server's CPU here) would otherwise leave every
    /// other engine without one. When most held nothing, the machine held them back, and no
    /// rate is common.
    pub fn held_none(&self) -> Vec<&str> {
        (self.engines.iter())
            .filter(|(name, _)| self.highest_held(name).is_none())
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The rows at `offered` that are rounds' runs: not a sweep's second look at a missed
    /// rate (`params.second_look`), which decides whether it was held and nothing more.
    fn round_rows(&self, offered: f64) -> Vec<&Row> {
        (self.rows.iter())
            .filter(|r| r.offered_rate == Some(offered))
            .filter(|r| r.params.param(Param::SecondLook).is_none())
            .collect()
    }

    /// The rounds measured at `offered`: runs in which more than one engine ran there (all of
    /// them where one engine alone was measured), second looks not counted (two engines'
    /// second looks at a knee rate are no round), nor a run of one engine alone (documents
    /// from before the second looks were marked).
    pub fn rounds_at(&self, offered: f64) -> usize {
        let at = self.round_rows(offered);
        let mut engines: Vec<&str> = at.iter().map(|r| r.engine.as_str()).collect();
        engines.sort_unstable();
        engines.dedup();
        let mut runs: Vec<u32> = at.iter().map(|r| r.run).collect();
        runs.sort_unstable();
        runs.dedup();
        let paired = |run: &&u32| at.iter().filter(|r| r.run == **run).count() >= 2;
        match engines.len() {
            0 | 1 => runs.len(),
            _ => runs.iter().filter(paired).count(),
        }
    }

    /// Whether `offered` was measured in more rounds than any other rate (the sweep's rounds).
    pub fn is_rounds_point(&self, offered: f64) -> bool {
        let rounds = self.rounds_at(offered);
        let others: Vec<usize> = (self.engines.iter())
            .flat_map(|(_, points)| points.iter().map(|p| p.offered))
            .filter(|&rate| rate != offered)
            .map(|rate| self.rounds_at(rate))
            .collect();
        rounds > 1 && !others.is_empty() && others.iter().all(|&n| n < rounds)
    }

    /// In how many of its runs at `offered` the engine held the rate, of how many.
    pub fn held_runs(&self, engine: &str, offered: f64) -> (usize, usize) {
        let runs = self.runs(engine, offered);
        let held = (runs.iter())
            .filter(|r| r.held_offered_rate() == Some(true))
            .count();
        (held, runs.len())
    }

    /// The engines that held some rate, in table order.
    fn holding(&self) -> Vec<&str> {
        let none = self.held_none();
        (self.engines.iter())
            .map(|(name, _)| name.as_str())
            .filter(|name| !none.contains(name))
            .collect()
    }

    /// The engine the others are compared with: epoll where it held a rate, else the first in
    /// table order that did.
    pub fn baseline(&self) -> Option<&str> {
        let holding = self.holding();
        (holding.iter().copied())
            .find(|name| *name == BASELINE)
            .or(holding.first().copied())
    }

    /// Whether the verdict may be given at `rate`: the baseline held it, and so did more than
    /// half of the engines that held any rate. One weak engine (`uring` held 42.4k/s where the
    /// others held 110k/s here) no longer drags the comparison down to a rate where every
    /// message wakes an idle server (there server CPU per message is twice what it is at
    /// load: a comparison of wake-ups); it is named beside the verdict with its knee instead.
    pub fn holds_verdict(&self, rate: f64) -> bool {
        let held = |name: &str| self.at(name, rate).is_some_and(|point| point.held);
        let holding = self.holding();
        let most = 2 * holding.iter().filter(|name| held(name)).count() > holding.len();
        most && self.baseline().is_some_and(held)
    }

    /// The highest of `rates` that the verdict may be given at (`holds_verdict`): the sweep
    /// measures it in rounds, offering its listed points only.
    pub fn common_rate(&self, rates: impl IntoIterator<Item = f64>) -> Option<f64> {
        (rates.into_iter())
            .filter(|&rate| self.holds_verdict(rate))
            .fold(None, |best: Option<f64>, rate| {
                Some(best.map_or(rate, |b| b.max(rate)))
            })
    }

    /// In how many of the rounds at `offered` (`rounds_at`) `engine` ran.
    fn rounds_of(&self, engine: &str, offered: f64) -> usize {
        let at = self.round_rows(offered);
        let paired = |run: u32| at.iter().filter(|r| r.run == run).count() >= 2;
        let mut runs: Vec<u32> = (at.iter())
            .filter(|r| r.engine == engine)
            .map(|r| r.run)
            .collect();
        runs.sort_unstable();
        runs.dedup();
        runs.into_iter().filter(|&run| paired(run)).count()
    }

    /// The rate the verdict is given at, and the engines left out there. Where one rate was
    /// measured in more rounds than the others (the sweep's rounds, at the highest listed
    /// point the baseline and most engines held when screened), that rate: there each engine
    /// that ran in most of its rounds is compared by the rounds in which it achieved the rate,
    /// whether or not its p99 or schedule held in all of them (the verdict says in how many
    /// they did); one screened there that did not hold it, and so was not measured in the
    /// rounds, is left out. Otherwise (every rate in as many rounds: a `--rate` study, or a
    /// sweep of one round), the highest rate the baseline and most engines held
    /// (`common_rate`), with those that did not hold it left out. Engines that held no rate at
    /// all are left out too (an SQPOLL poller starved by a real-time load), and each other
    /// engine left out is named with the highest rate it held. None when most engines held
    /// nothing.
    pub fn verdict_rate(&self) -> Option<(f64, Vec<(String, LeftOut)>)> {
        let none = self.held_none();
        if 2 * none.len() >= self.engines.len() {
            return None;
        }
        let holding = self.holding();
        let mut rates: Vec<f64> = (self.engines.iter())
            .flat_map(|(_, points)| points.iter().map(|p| p.offered))
            .collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        let measured = |rate: f64| {
            (holding.iter().copied())
                .filter(|name| self.at(name, rate).is_some())
                .count()
        };
        let rounds: Vec<usize> = rates.iter().map(|&rate| self.rounds_at(rate)).collect();
        let most = rounds.iter().copied().max().unwrap_or(0);
        let fewer = rounds.iter().filter(|&&n| n < most).count();
        let in_rounds = fewer > 0 && most > 1;
        let rate = match in_rounds {
            true => (rates.iter().zip(&rounds))
                .filter(|(&rate, &n)| n == most && measured(rate) >= 2)
                .map(|(&rate, _)| rate)
                .fold(None, |best: Option<f64>, r| {
                    Some(best.map_or(r, |b| b.max(r)))
                })?,
            false => self.common_rate(rates.iter().copied())?,
        };
        let compared = |name: &str| match in_rounds {
            true => 2 * self.rounds_of(name, rate) > most,
            false => self.at(name, rate).is_some_and(|point| point.held),
        };
        let mut left_out: Vec<(String, LeftOut)> = (none.iter())
            .map(|name| (name.to_string(), LeftOut::HeldNone))
            .collect();
        left_out.extend((holding.iter()).filter(|name| !compared(name)).map(|name| {
            let why = self
                .highest_held(name)
                .map_or(LeftOut::HeldNone, LeftOut::Knee);
            (name.to_string(), why)
        }));
        Some((rate, left_out))
    }

    /// `engine` at `rate` as a summary of the runs in which it achieved the rate (a run behind
    /// by more than `HELD_RATE_SHARE` served a lighter load), for a paired comparison.
    fn summary(&self, engine: &str, rate: f64) -> EngineSummary {
        let achieved: Vec<&Row> = (self.runs(engine, rate).into_iter())
            .filter(|r| r.ops_per_sec >= HELD_RATE_SHARE * rate)
            .collect();
        EngineSummary::of(engine, &achieved, Headline::OpsPerSec)
    }

    /// How the comparisons at `rate` are judged: at the looks its rounds were measured at, the
    /// noise between blocks pooled over every engine there against the baseline.
    fn judging_at(&self, rate: f64, baseline: &EngineSummary) -> Judging {
        let looks = (self.rows.iter())
            .filter(|r| r.offered_rate == Some(rate))
            .find_map(|r| r.looks.clone())
            .unwrap_or_default();
        let others: Vec<EngineSummary> = (self.engines.iter())
            .filter(|(name, _)| *name != baseline.engine)
            .map(|(name, _)| self.summary(name, rate))
            .collect();
        Judging::pooled(looks, others.iter().map(|engine| (engine, baseline)))
    }

    /// The engines compared at the verdict rate, the baseline first: epoll where it ran there,
    /// else the first in table order.
    fn compared_at(&self, rate: f64, left_out: &[(String, LeftOut)]) -> Vec<&str> {
        let mut compared: Vec<&str> = (self.engines.iter())
            .map(|(name, _)| name.as_str())
            .filter(|name| !left_out.iter().any(|(out, _)| out == name))
            .filter(|name| self.at(name, rate).is_some())
            .collect();
        if let Some(at) = compared.iter().position(|name| *name == BASELINE) {
            let baseline = compared.remove(at);
            compared.insert(0, baseline);
        }
        compared
    }

    /// The decided comparison of `subject` over `reference`, if the analysis made it.
    pub fn decided_as(&self, subject: &str, reference: &str) -> Option<&Comparison> {
        (self.decided.iter()).find(|c| c.subject == subject && c.reference == reference)
    }

    /// Server CPU per operation at the verdict rate, each engine there against the baseline,
    /// paired by round; undecided (a family decides them).
    pub fn comparisons(&self) -> Vec<Comparison> {
        let Some((rate, left_out)) = self.verdict_rate() else {
            return Vec::new();
        };
        let compared = self.compared_at(rate, &left_out);
        let Some((baseline, rest)) = compared.split_first() else {
            return Vec::new();
        };
        let reference = self.summary(baseline, rate);
        let judging = self.judging_at(rate, &reference);
        // Every engine the plan compares is asked, the ones left out there too (with no rounds:
        // undecided, and said so), so the question does not depend on who held the rate.
        let left: Vec<&str> = left_out.iter().map(|(name, _)| name.as_str()).collect();
        (rest.iter().chain(&left))
            .map(|engine| {
                let subject = self.summary(engine, rate);
                Comparison::paired(&subject, &reference, Metric::CpuPerOp, &judging)
            })
            .collect()
    }

    /// (Tests only: the analysis asks every engine, not the cheapest.) The engine that spent the
    /// least server CPU per operation at
    /// the verdict rate against the baseline (the next cheapest, where the baseline spent
    /// least); None without a rate or a second engine there.
    #[cfg(test)]
    pub fn finding(&self) -> Option<Finding> {
        let (rate, left_out) = self.verdict_rate()?;
        let compared = self.compared_at(rate, &left_out);
        let (baseline, rest) = compared.split_first()?;
        let cpu = |name: &&str| {
            self.at(name, rate)
                .map_or(f64::NAN, |p| p.cpu_us_per_op.median)
        };
        let best = (rest.iter()).min_by(|a, b| cpu(a).total_cmp(&cpu(b)))?;
        let (subject, reference) = (self.summary(best, rate), self.summary(baseline, rate));
        let judging = self.judging_at(rate, &reference);
        Some(Finding {
            rate,
            baseline: baseline.to_string(),
            best: best.to_string(),
            comparison: Comparison::paired(&subject, &reference, Metric::CpuPerOp, &judging),
            left_out,
        })
    }
}

/// The equal-load comparison that answers a closed-loop study of `workload` at `connections`
/// (and payload), if one ran.
pub fn matching<'a>(
    loads: &'a [EqualLoad],
    workload: &str,
    connections: Option<u64>,
    payload_bytes: Option<u64>,
) -> Option<&'a EqualLoad> {
    loads.iter().find(|load| {
        load.workload == workload
            && Some(load.connections) == connections
            && payload_bytes.is_none_or(|bytes| load.payload_bytes == bytes)
    })
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use serde_json::Map;

    /// A verified open-loop echo row at 50 connections in round `run`.
    pub fn point_row(engine: &str, offered: f64, cpu_us: f64, p99_us: u64) -> Row {
        let mut params = Map::new();
        params.put(Param::Connections, Value::from(50));
        params.put(Param::P99BoundNs, 1_000_000);
        Row {
            workload: "echo".into(),
            engine: engine.into(),
            params,
            run: 1,
            seconds: 1.0,
            ops: offered as u64,
            ops_per_sec: offered,
            verified: true,
            offered_rate: Some(offered),
            client_late_share: Some(0.0),
            server_cpu_s: Some(cpu_us * offered / 1e6),
            server_cpu_us_per_op: Some(cpu_us),
            latency_ns_p50: Some(50_000),
            latency_ns_p99: Some(p99_us * 1000),
            ..Row::default()
        }
    }

    /// A sweep's closed-loop probe of `engine` at `rate`.
    pub fn probe_row(engine: &str, rate: f64) -> Row {
        let mut row = point_row(engine, rate, 5.0, 500);
        row.params.remove(Param::P99BoundNs.key());
        row.params.put(Param::Sweep, PROBE);
        (row.offered_rate, row.client_late_share) = (None, None);
        row
    }

    /// The load's ceiling search against `engine`: held at `rate` or not.
    pub fn ceiling_row(engine: &str, rate: f64, held: bool) -> Row {
        let mut row = point_row(engine, rate, 5.0, 300);
        row.params.put(Param::Sweep, CEILING);
        if !held {
            row.client_late_share = Some(0.05);
        }
        row
    }

    /// Goal: the sweep's scale is set by the engines that serve connections at once; one that
    /// serves one at a time (blocking, a fact of the engine table) is probed but never sets it,
    /// however its probe compares, and neither does a probe far below the others (an SQPOLL
    /// poller starved under SCHED_FIFO). The lower ceiling is the load's own where it fell
    /// behind first.
    #[test]
    fn the_scale_ignores_an_engine_that_serves_one_connection_at_a_time() {
        let probes = [
            // Blocking within a tenth of the median: a probe threshold would keep it.
            probe_row("blocking", 20_000.0),
            probe_row("epoll", 150_000.0),
            probe_row("uring", 120_000.0),
            probe_row("uring-defer", 160_000.0),
            probe_row("uring-sqpoll", 500.0),
        ];
        let ceiling = [
            ceiling_row("uring-defer", 16_000.0, true),
            ceiling_row("uring-defer", 40_000.0, true),
            ceiling_row("uring-defer", 50_000.0, false),
        ];
        fn refs(rows: &[Row]) -> Vec<&Row> {
            rows.iter().collect()
        }
        let scale = Scale::of("echo", 50, &refs(&probes), &refs(&ceiling));
        assert_eq!(scale.one_at_a_time, ["blocking"]);
        assert_eq!(scale.outliers, ["uring-sqpoll"]);
        assert_eq!(scale.slowest, Some(("uring".to_string(), 120_000.0)));
        assert_eq!(scale.fastest, Some(("uring-defer".to_string(), 160_000.0)));
        assert_eq!(scale.client_ceiling, Some(40_000.0));
        assert_eq!(scale.lower(), Some(40_000.0));
        assert!(!scale.offers("blocking") && scale.offers("uring-sqpoll"));
        // At one connection blocking serves every connection there is: it counts.
        let one = Scale::of("echo", 1, &refs(&probes), &refs(&ceiling));
        assert!(one.one_at_a_time.is_empty());
        assert_eq!(one.slowest, Some(("blocking".to_string(), 20_000.0)));
        // A load that held every rate up to the slowest probe leaves that as the lower ceiling.
        let held = [ceiling_row("uring-defer", 120_000.0, true)];
        let roomy = Scale::of("echo", 50, &refs(&probes), &refs(&held));
        assert_eq!(roomy.lower(), Some(120_000.0));
    }

    /// `rounds` rounds at `rate` for each engine at its server CPU per message; the machine
    /// moves every engine of a round together (±20%).
    pub fn rounds_at(engines: &[(&str, f64)], rate: f64, rounds: u32) -> Vec<Row> {
        let mut rows = Vec::new();
        for run in 1..=rounds {
            let machine = 1.0 + 0.2 * (f64::from(run) * 1.7).sin();
            for (index, (engine, cpu)) in engines.iter().enumerate() {
                let own = 1.0 + 0.01 * (f64::from(run) * 2.3 + index as f64).cos();
                let mut row = point_row(engine, rate, cpu * machine * own, 200);
                row.run = run;
                rows.push(row);
            }
        }
        rows
    }

    /// Goal: the verdict is given where the rounds were measured, paired round by round
    /// against epoll (the network baseline, whatever the table puts first), with an engine
    /// that held nothing named, not compared.
    #[test]
    fn the_verdict_compares_with_epoll_at_the_rate_measured_in_rounds() {
        let mut rows = rounds_at(
            &[
                ("blocking", 40.0),
                ("epoll", 6.0),
                ("uring", 7.0),
                ("uring-defer", 5.4),
            ],
            30_000.0,
            1,
        );
        rows.retain(|row| row.engine != "blocking");
        rows.extend(rounds_at(
            &[("epoll", 5.0), ("uring", 6.0), ("uring-defer", 4.5)],
            45_000.0,
            10,
        ));
        let mut starved = point_row("uring-sqpoll", 30_000.0, 40.0, 2900);
        starved.client_late_share = Some(0.2);
        rows.push(starved);
        // A higher point, one run, that epoll did not hold: not the verdict's.
        rows.extend(rounds_at(&[("uring-defer", 4.0)], 60_000.0, 1));
        let loads = equal_loads(&rows);
        let load = &loads[0];
        let (rate, left_out) = load.verdict_rate().unwrap();
        assert_eq!(rate, 45_000.0);
        assert_eq!(left_out, [("uring-sqpoll".to_string(), LeftOut::HeldNone)]);
        let finding = load.finding().unwrap();
        assert_eq!(
            (finding.baseline.as_str(), finding.best.as_str()),
            ("epoll", "uring-defer")
        );
        assert_eq!(finding.comparison.rounds, 10);
        assert!(
            (finding.comparison.ratio - 0.9).abs() < 0.01,
            "{:?}",
            finding.comparison
        );
        assert_eq!(finding.comparison.metric, Metric::CpuPerOp);
        let comparisons = load.comparisons();
        let subjects: Vec<&str> = comparisons.iter().map(|c| c.subject.as_str()).collect();
        // Every engine is asked, the one left out too (with no rounds: undecided).
        assert_eq!(subjects, ["uring", "uring-defer", "uring-sqpoll"]);
        assert!(comparisons.iter().all(|c| c.reference == "epoll"));
        assert_eq!(comparisons[2].rounds, 0);
    }

    /// A rounds point an engine held in fewer than half its rounds (its p99 over the bound):
    /// the verdict stays there, compares it by the rounds it achieved the rate in, and the
    /// rounds it held are counted for the sentence; a point re-run for one engine is no round.
    #[test]
    fn the_verdict_stays_at_the_rounds_point_an_engine_missed_in_some_rounds() {
        let mut rows = rounds_at(
            &[("epoll", 6.0), ("uring", 7.0), ("uring-defer", 5.4)],
            20_000.0,
            1,
        );
        let mut again = point_row("uring", 20_000.0, 7.0, 200);
        again.run = 2;
        rows.push(again);
        rows.extend(rounds_at(
            &[("epoll", 5.0), ("uring", 6.0), ("uring-defer", 4.5)],
            40_000.0,
            8,
        ));
        for row in rows
            .iter_mut()
            .filter(|r| r.engine == "uring" && r.run <= 5 && r.offered_rate == Some(40_000.0))
        {
            row.latency_ns_p99 = Some(3_000_000);
        }
        let load = &equal_loads(&rows)[0];
        assert_eq!(load.rounds_at(20_000.0), 1);
        let (rate, left_out) = load.verdict_rate().unwrap();
        assert_eq!(rate, 40_000.0);
        assert!(left_out.is_empty(), "{left_out:?}");
        assert_eq!(load.held_runs("uring", 40_000.0), (3, 8));
        let uring = (load.comparisons().into_iter())
            .find(|c| c.subject == "uring")
            .unwrap();
        assert_eq!(uring.rounds, 8);
    }

    /// A sweep's screening at `points`, one run each (a miss run once more, marked as a second
    /// look), for `engines` each with the highest point it held (0: none).
    pub fn screened(engines: &[(&str, f64)], points: &[f64]) -> Vec<Row> {
        let mut rows = Vec::new();
        for &rate in points {
            for &(engine, knee) in engines {
                let mut row = point_row(engine, rate, 8.0, 200);
                if rate > knee {
                    row.latency_ns_p99 = Some(3_000_000);
                    let mut again = row.clone();
                    again.run = 2;
                    again.params.put(Param::SecondLook, true);
                    rows.push(again);
                }
                rows.push(row);
            }
        }
        rows
    }

    /// Goal: one weak engine does not drag the verdict down to its knee (uring held 42.4k/s
    /// where the others held 110k/s here, and the verdict then compared wake-ups): the rate is
    /// the highest listed point epoll and most engines held; the sweep measures it in rounds
    /// by those that held it, and the verdict names the rest with their knees.
    #[test]
    fn the_verdict_rate_is_held_by_epoll_and_most_engines_not_every_one() {
        let points = [25_000.0, 50_000.0, 75_000.0];
        let engines = [
            ("epoll", 75_000.0),
            ("uring", 25_000.0),
            ("uring-multishot", 75_000.0),
            ("uring-defer", 75_000.0),
            ("uring-bundle", 75_000.0),
        ];
        let mut rows = screened(&engines, &points);
        let load = &equal_loads(&rows)[0];
        assert_eq!(load.common_rate(points), Some(75_000.0));
        // Before its rounds: the verdict at the common rate, uring named with its knee.
        let (rate, left_out) = load.verdict_rate().unwrap();
        assert_eq!(rate, 75_000.0);
        assert_eq!(left_out, [("uring".to_string(), LeftOut::Knee(25_000.0))]);
        // The rounds (runs 2–6) by the four that held it.
        let held: Vec<(&str, f64)> = (engines.iter())
            .filter(|(name, _)| *name != "uring")
            .map(|&(name, _)| (name, if name == "uring-defer" { 5.4 } else { 6.0 }))
            .collect();
        let mut rounds = rounds_at(&held, 75_000.0, 6);
        rounds.retain(|row| row.run > 1);
        rows.extend(rounds);
        let load = &equal_loads(&rows)[0];
        assert_eq!(load.rounds_at(75_000.0), 6);
        let (rate, left_out) = load.verdict_rate().unwrap();
        assert_eq!(rate, 75_000.0);
        assert_eq!(left_out, [("uring".to_string(), LeftOut::Knee(25_000.0))]);
        let finding = load.finding().unwrap();
        assert_eq!(
            (finding.baseline.as_str(), finding.best.as_str()),
            ("epoll", "uring-defer")
        );
        assert_eq!(finding.comparison.rounds, 6);
        let subjects: Vec<String> = (load.comparisons().into_iter())
            .map(|c| c.subject)
            .collect();
        assert_eq!(
            subjects,
            ["uring-multishot", "uring-defer", "uring-bundle", "uring"]
        );
    }

    /// The rule's two conditions: the baseline held the rate, and more than half of the
    /// engines that held any rate did (a rate two of five held is no common rate).
    #[test]
    fn the_verdict_rate_needs_epoll_and_a_majority() {
        let points = [25_000.0, 50_000.0, 75_000.0];
        // Epoll missed 75k: the others' 75k is no verdict against it.
        let rows = screened(
            &[
                ("epoll", 50_000.0),
                ("uring", 75_000.0),
                ("uring-defer", 75_000.0),
            ],
            &points,
        );
        let load = &equal_loads(&rows)[0];
        assert_eq!(load.common_rate(points), Some(50_000.0));
        assert!(!load.holds_verdict(75_000.0));
        // Two of five held 75k, three held 50k (the three second looks at 75k are no round).
        let rows = screened(
            &[
                ("epoll", 75_000.0),
                ("uring", 25_000.0),
                ("uring-multishot", 50_000.0),
                ("uring-defer", 75_000.0),
                ("uring-bundle", 50_000.0),
            ],
            &points,
        );
        let load = &equal_loads(&rows)[0];
        assert_eq!(load.common_rate(points), Some(50_000.0));
        let (rate, left_out) = load.verdict_rate().unwrap();
        assert_eq!(rate, 50_000.0);
        assert_eq!(left_out, [("uring".to_string(), LeftOut::Knee(25_000.0))]);
        // Two engines: both must hold it.
        let rows = screened(&[("epoll", 75_000.0), ("uring", 25_000.0)], &points);
        assert_eq!(equal_loads(&rows)[0].common_rate(points), Some(25_000.0));
    }
}
