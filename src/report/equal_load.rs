//! The network answer at equal offered load (`echo --sweep`, `http --sweep`, or `--rate`): the
//! open-loop rows of one workload and connection count, per engine and offered rate; the
//! highest rate every engine held, and how much server CPU per operation and what p99 each
//! spent there. A closed loop whose client was saturated measured the client; these rows
//! compare the servers.

use serde_json::Value;

use crate::model::study::op_noun;
use crate::row::{Row, P99_BOUND_PARAM};
use crate::stats::{median, Spread};

/// One engine at one offered rate: the medians of its runs.
#[derive(Clone, Debug)]
pub struct Point {
    pub offered: f64,
    pub achieved: f64,
    pub cpu_us_per_op: Spread,
    pub cpu_utilisation: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Most of its runs held the rate (`Row::held_offered_rate`).
    pub held: bool,
    pub runs: usize,
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
    /// Engines in the order they ran, each with its points by ascending offered rate.
    pub engines: Vec<(String, Vec<Point>)>,
}

/// The equal-load comparisons in `rows`, in the order they first appear.
pub fn equal_loads(rows: &[Row]) -> Vec<EqualLoad> {
    let mut found: Vec<EqualLoad> = Vec::new();
    let open: Vec<&Row> = rows.iter().filter(|r| r.offered_rate.is_some()).collect();
    for row in &open {
        let (connections, payload_bytes) = (param(row, "connections"), param(row, "payload_bytes"));
        let known = |e: &EqualLoad| {
            (e.workload.as_str(), e.connections, e.payload_bytes)
                == (row.workload.as_str(), connections, payload_bytes)
        };
        if !found.iter().any(known) {
            found.push(EqualLoad {
                workload: row.workload.clone(),
                connections,
                payload_bytes,
                p99_bound_us: (row.params.get(P99_BOUND_PARAM))
                    .and_then(Value::as_u64)
                    .map(|ns| ns as f64 / 1e3),
                engines: Vec::new(),
            });
        }
    }
    for load in &mut found {
        let members: Vec<&Row> = (open.iter().copied())
            .filter(|r| r.workload == load.workload && param(r, "connections") == load.connections)
            .filter(|r| param(r, "payload_bytes") == load.payload_bytes)
            .collect();
        for row in &members {
            if !load.engines.iter().any(|(name, _)| *name == row.engine) {
                load.engines.push((row.engine.clone(), Vec::new()));
            }
        }
        for (engine, points) in &mut load.engines {
            let mut rates: Vec<f64> = (members.iter())
                .filter(|r| r.engine == *engine)
                .filter_map(|r| r.offered_rate)
                .collect();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            for offered in rates {
                let runs: Vec<&Row> = (members.iter().copied())
                    .filter(|r| r.engine == *engine && r.offered_rate == Some(offered))
                    .collect();
                points.push(Point::of(offered, &runs));
            }
        }
    }
    found
}

fn param(row: &Row, key: &str) -> u64 {
    row.params.get(key).and_then(Value::as_u64).unwrap_or(0)
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

    /// The engine's point at `offered`.
    fn at(&self, engine: &str, offered: f64) -> Option<&Point> {
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
    /// half, they are left out of the common rate and named beside it: an engine that holds
    /// nothing (an SQPOLL poller sharing the server's CPU here) would otherwise leave every
    /// other engine without one. When most held nothing, the machine held them back, and no
    /// rate is common.
    pub fn held_none(&self) -> Vec<&str> {
        (self.engines.iter())
            .filter(|(name, _)| self.highest_held(name).is_none())
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The highest offered rate every engine that held any was measured at and held.
    pub fn common_rate(&self) -> Option<f64> {
        let none = self.held_none();
        if 2 * none.len() >= self.engines.len() {
            return None;
        }
        let holding: Vec<&(String, Vec<Point>)> = (self.engines.iter())
            .filter(|(name, _)| !none.contains(&name.as_str()))
            .collect();
        let (_, first) = holding.first()?;
        (first.iter().map(|p| p.offered))
            .filter(|&rate| {
                (holding.iter()).all(|(name, _)| self.at(name, rate).is_some_and(|p| p.held))
            })
            .fold(None, |best: Option<f64>, rate| {
                Some(best.map_or(rate, |b| b.max(rate)))
            })
    }

    /// "at 50000 requests/s (the highest rate every engine held), uring-defer used 0.80× epoll's
    /// server CPU per request (5.1 vs 6.4 µs), p99 120 vs 130 µs"; then each engine's highest
    /// rate under the bound.
    pub fn verdict(&self) -> String {
        let noun = op_noun(&self.workload);
        let Some(rate) = self.common_rate() else {
            return format!(
                "no offered rate was held by every engine (each one's highest: {}).",
                self.highest_rates()
            );
        };
        let none = self.held_none();
        let mut at: Vec<(&str, &Point)> = (self.engines.iter())
            .filter(|(name, _)| !none.contains(&name.as_str()))
            .filter_map(|(name, _)| Some((name.as_str(), self.at(name, rate)?)))
            .collect();
        let baseline = at[0];
        at.sort_by(|a, b| {
            a.1.cpu_us_per_op
                .median
                .total_cmp(&b.1.cpu_us_per_op.median)
        });
        let best = at[0];
        let but = match none.as_slice() {
            [] => String::new(),
            [one] => format!(" but {one}, which held none"),
            [many @ .., last] => format!(" but {} and {last}, which held none", many.join(", ")),
        };
        let mut text =
            format!("at {rate:.0} {noun}s/s (the highest rate every engine held{but}), ");
        let reference = match (best.0 == baseline.0, at.get(1)) {
            (true, Some(second)) => *second,
            (true, None) => {
                text.push_str(&format!(
                    "{} alone ran: {:.2} µs of server CPU per {noun}, p99 {:.0} µs. ",
                    best.0, best.1.cpu_us_per_op.median, best.1.p99_us
                ));
                return text + &self.highest_sentence();
            }
            (false, _) => baseline,
        };
        let (one, other) = (best.1, reference.1);
        // One run each has no spread: the sweep's default here, where two runs cost 22 s a
        // study and a stall then drops an engine's point.
        let noise = match (
            one.runs.min(other.runs),
            one.cpu_us_per_op.max >= other.cpu_us_per_op.min,
        ) {
            (0 | 1, _) => ", one run each: no spread to judge noise by",
            (_, true) => ", runs overlap: within noise",
            (_, false) => "",
        };
        text.push_str(&format!(
            "{} used {:.2}× {}'s server CPU per {noun} ({:.2} vs {:.2} µs{}), p99 {:.0} vs {:.0} \
             µs, p50 {:.0} vs {:.0} µs. ",
            best.0,
            one.cpu_us_per_op.median / other.cpu_us_per_op.median,
            reference.0,
            one.cpu_us_per_op.median,
            other.cpu_us_per_op.median,
            noise,
            one.p99_us,
            other.p99_us,
            one.p50_us,
            other.p50_us,
        ));
        text + &self.highest_sentence()
    }

    fn highest_sentence(&self) -> String {
        let bound = self
            .p99_bound_us
            .map_or(String::new(), |us| format!(" with p99 ≤ {us:.0} µs"));
        format!(
            "Highest rate held{bound}, client on schedule: {}.",
            self.highest_rates()
        )
    }

    /// "epoll 50000/s, uring 40000/s, uring-defer none".
    fn highest_rates(&self) -> String {
        (self.engines.iter())
            .map(|(name, _)| match self.highest_held(name) {
                Some(rate) => format!("{name} {rate:.0}/s"),
                None => format!("{name} none"),
            })
            .collect::<Vec<_>>()
            .join(", ")
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

    /// A verified open-loop echo row at 50 connections.
    pub fn point_row(engine: &str, offered: f64, cpu_us: f64, p99_us: u64) -> Row {
        let mut params = Map::new();
        params.insert("connections".into(), Value::from(50));
        params.insert(P99_BOUND_PARAM.into(), Value::from(1_000_000));
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
            server_cpu_us_per_op: Some(cpu_us),
            latency_ns_p50: Some(50_000),
            latency_ns_p99: Some(p99_us * 1000),
            ..Row::default()
        }
    }

    #[test]
    fn the_verdict_is_at_the_highest_rate_every_engine_held() {
        let rows = vec![
            point_row("epoll", 10_000.0, 10.0, 100),
            point_row("uring-defer", 10_000.0, 8.0, 90),
            point_row("epoll", 20_000.0, 6.0, 200),
            point_row("uring-defer", 20_000.0, 4.8, 150),
            // Over the 1 ms bound: uring-defer did not hold 40k.
            point_row("epoll", 40_000.0, 5.0, 400),
            point_row("uring-defer", 40_000.0, 4.0, 3000),
        ];
        let loads = equal_loads(&rows);
        assert_eq!(loads.len(), 1);
        let load = &loads[0];
        assert_eq!(load.common_rate(), Some(20_000.0));
        let verdict = load.verdict();
        assert!(
            verdict.starts_with(
                "at 20000 messages/s (the highest rate every engine held), \
                 uring-defer used 0.80× epoll's server CPU per message (4.80 vs 6.00 µs, \
                 one run each: no spread to judge noise by), p99 150 vs 200 µs"
            ),
            "{verdict}"
        );
        assert!(
            verdict.contains("epoll 40000/s, uring-defer 20000/s"),
            "{verdict}"
        );
    }

    /// An engine that held none of its rates (an SQPOLL poller taking turns with the server on
    /// its CPU) is named beside the verdict instead of leaving the others without one.
    #[test]
    fn an_engine_that_held_nothing_does_not_take_the_verdict_from_the_others() {
        let rows = vec![
            point_row("epoll", 10_000.0, 10.0, 100),
            point_row("uring-sqpoll", 10_000.0, 40.0, 2900),
            point_row("uring-defer", 10_000.0, 8.0, 90),
            point_row("epoll", 20_000.0, 6.0, 200),
            point_row("uring-defer", 20_000.0, 4.8, 150),
        ];
        let load = &equal_loads(&rows)[0];
        assert_eq!(load.held_none(), ["uring-sqpoll"]);
        assert_eq!(load.common_rate(), Some(20_000.0));
        let verdict = load.verdict();
        assert!(
            verdict.starts_with(
                "at 20000 messages/s (the highest rate every engine held but uring-sqpoll, \
                 which held none), uring-defer used 0.80× epoll's server CPU per message"
            ),
            "{verdict}"
        );
        assert!(verdict.contains("uring-sqpoll none"), "{verdict}");
        // When most engines held nothing, the machine held them back: no rate is common.
        let mut rows = rows;
        rows.push(point_row("uring", 10_000.0, 12.0, 2500));
        rows.push(point_row("uring-multishot", 10_000.0, 12.0, 2500));
        let load = &equal_loads(&rows)[0];
        assert_eq!(load.common_rate(), None);
        assert!(load
            .verdict()
            .starts_with("no offered rate was held by every engine"));
    }

    /// A point run twice (a single run not held is run once more) is held when one of the two
    /// held it, as the sweep decided.
    #[test]
    fn a_point_held_in_one_of_two_runs_is_held() {
        let mut missed = point_row("uring", 10_000.0, 10.0, 3000);
        missed.client_late_share = Some(0.02);
        let mut again = point_row("uring", 10_000.0, 10.0, 300);
        again.run = 2;
        let load = &equal_loads(&[missed, again])[0];
        assert_eq!(load.highest_held("uring"), Some(10_000.0));
        assert_eq!(load.engines[0].1[0].runs, 2);
    }
}
