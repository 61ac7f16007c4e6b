//! An engine's runs in one study, summarised (medians and spreads of each metric) and kept round
//! by round for the paired comparisons; the metrics a comparison divides and the headline a
//! study is ranked by. Below the studies and the comparisons, which both read it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::figures::Figures;
use crate::model::regime::Regime;
use crate::row::params::{Param, Params};
use crate::row::Row;
use crate::row::SyscallSource;
use crate::stats::Spread;

/// The engine whose rows are the floor, not a contestant.
pub const FLOOR: &str = "uring-nop";

/// What a comparison measures. Per-operation metrics are ratios of totals within each run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The study's headline: MB/s for file writes, operations per second everywhere else.
    Throughput,
    /// CPU µs per operation (the server's, for network rows).
    CpuPerOp,
    /// Syscalls per operation, where they were counted.
    SyscallsPerOp,
    /// The 99th latency percentile.
    P99,
}

impl Metric {
    pub const ALL: [Metric; 4] = [
        Metric::Throughput,
        Metric::CpuPerOp,
        Metric::SyscallsPerOp,
        Metric::P99,
    ];

    /// The smallest relative difference worth a verdict: throughput and CPU 3%, syscalls 1%
    /// (counted exactly, so smaller differences are real, but say nothing), p99 15% (a tail
    /// moves with a few slow operations).
    pub fn margin(self) -> f64 {
        match self {
            Metric::Throughput | Metric::CpuPerOp => 0.03,
            Metric::SyscallsPerOp => 0.01,
            Metric::P99 => 0.15,
        }
    }

    /// The widest relative difference an *equivalent* may hide: throughput and CPU 10%, the
    /// others as `margin`. Equivalence needs the whole interval inside it, and at 12–24 rounds a
    /// file or echo ratio's 90% interval here spans ±5–10% (bench/verdicts.md), so "within 3%"
    /// could never be shown: two back-to-back default runs left 74% of the first screen
    /// undecided with it, 35% with 10%. A difference is still called beyond `margin`; a
    /// comparison that is both (1.05× [1.03–1.08]) is called different.
    pub fn equivalence_margin(self) -> f64 {
        match self {
            Metric::Throughput | Metric::CpuPerOp => 0.10,
            Metric::SyscallsPerOp | Metric::P99 => self.margin(),
        }
    }

    /// Whether more is better (throughput) or less (the costs).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Throughput)
    }

    pub fn index(self) -> usize {
        match self {
            Metric::Throughput => 0,
            Metric::CpuPerOp => 1,
            Metric::SyscallsPerOp => 2,
            Metric::P99 => 3,
        }
    }

    /// The word for a decided difference in this metric's good or bad direction.
    pub fn word(self, better: bool) -> &'static str {
        match (self.higher_is_better(), better) {
            (true, true) => "faster",
            (true, false) => "slower",
            (false, true) => "cheaper",
            (false, false) => "costlier",
        }
    }
}

/// What a study is ranked by: bytes for the file-write study, operations everywhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Headline {
    BytesPerSec,
    OpsPerSec,
}

impl Headline {
    pub fn for_workload(workload: &str) -> Headline {
        if workload == "fs-write" {
            Headline::BytesPerSec
        } else {
            Headline::OpsPerSec
        }
    }

    pub fn value(self, row: &Row) -> f64 {
        match self {
            Headline::BytesPerSec => row.bytes_per_sec,
            Headline::OpsPerSec => row.ops_per_sec,
        }
    }

    /// The factor from the row's per-second value to the unit the report prints.
    pub fn scale(self) -> f64 {
        match self {
            Headline::BytesPerSec => 1e-6,
            Headline::OpsPerSec => 1.0,
        }
    }
}

/// Reads one latency percentile (nanoseconds) from a row.
pub type LatencyField = fn(&Row) -> Option<u64>;

/// Percentiles the latency columns and chart show, with the row field each comes from.
pub const PERCENTILES: [(&str, LatencyField); 5] = [
    ("p50", |row| row.latency_ns_p50),
    ("p90", |row| row.latency_ns_p90),
    ("p99", |row| row.latency_ns_p99),
    ("p99.9", |row| row.latency_ns_p999),
    ("max", |row| row.latency_ns_max),
];

/// One engine's runs in one study.
#[derive(Clone, Debug)]
pub struct EngineSummary {
    pub engine: String,
    pub runs: usize,
    pub control: bool,
    /// The headline metric in the headline's unit (MB/s or ops/s).
    pub throughput: Spread,
    /// None when nobody counted the syscalls (a control tool's own run).
    pub syscalls_per_op: Option<Spread>,
    pub cpu_us_per_op: Spread,
    /// Median across runs of each of `PERCENTILES`, in microseconds, when rows carry latency;
    /// NaN for a percentile the rows do not have.
    pub latency_us: Option<Vec<f64>>,
    pub p99_us: Option<Spread>,
    /// Whether the runs its figures and comparisons rest on verified their data (and had no
    /// errors): every run, or every run but the few left out (`left_out`).
    pub verified: bool,
    pub syscalls_self_counted: bool,
    /// Peak resident memory of the server, in MiB, when it was measured from outside.
    pub rss_peak_mib: Option<Spread>,
    /// A contender's event API as its processes held it (`io_uring`, `epoll`, `none`).
    pub server_api: Option<String>,
    /// Why some run measured nothing (an engine or contender that failed), the first.
    pub failure: Option<String>,
    /// The first run that did not verify, and why (its row's `unverified_reason`).
    pub unverified: Option<(u32, String)>,
    /// The runs that did not verify and were left out of the figures, the rest verified: at
    /// most a quarter of the runs (`LEFT_OUT_AT_MOST`). One round lost to a stall (an HTTP
    /// window in which the load completed nothing) then costs that round, not the engine's
    /// place in every comparison of its study; more than that is the engine's, and it is not
    /// compared.
    pub left_out: Vec<u32>,
    /// What the kernel counted, for the causes the verdicts name.
    pub figures: Figures,
    /// Each measured run's figures, by round, for the comparisons paired round by round.
    pub rounds: Vec<Round>,
}

/// One engine's figures in one round (`Row::run`): what a paired comparison divides.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    pub run: u32,
    /// The block of consecutive rounds it was measured in (`Row::block`).
    pub block: u32,
    /// By `Metric::index`; None where the run did not measure it.
    values: [Option<f64>; 4],
    /// Which side set the pace of this run's closed loop (None for a file row or an open loop).
    pub regime: Option<Regime>,
}

#[cfg(test)]
impl EngineSummary {
    /// A verified engine known only by its rounds (the verdict code's own tests).
    pub fn with_rounds(engine: &str, rounds: Vec<Round>) -> EngineSummary {
        let none = Spread::of(&[]);
        EngineSummary {
            engine: engine.to_string(),
            runs: rounds.len(),
            control: false,
            throughput: none,
            syscalls_per_op: None,
            cpu_us_per_op: none,
            latency_us: None,
            p99_us: None,
            verified: true,
            syscalls_self_counted: false,
            rss_peak_mib: None,
            server_api: None,
            failure: None,
            unverified: None,
            left_out: Vec::new(),
            figures: Figures::default(),
            rounds,
        }
    }
}

impl Round {
    /// A round that measured only `metric` (the verdict code's own tests).
    #[cfg(test)]
    pub fn only(run: u32, metric: Metric, value: f64) -> Round {
        let mut values = [None; 4];
        values[metric.index()] = Some(value);
        Round {
            run,
            block: crate::row::block_of(run),
            values,
            regime: None,
        }
    }

    fn of(row: &Row, headline: Headline) -> Round {
        let per_op = |amount: f64| (row.ops > 0).then(|| amount / row.ops as f64);
        let mut values = [None; 4];
        values[Metric::Throughput.index()] = Some(headline.value(row) * headline.scale());
        values[Metric::CpuPerOp.index()] = per_op(row.cpu_s() * 1e6);
        values[Metric::SyscallsPerOp.index()] = row
            .syscalls_source
            .counted()
            .then(|| per_op(row.syscalls as f64))
            .flatten();
        values[Metric::P99.index()] = row.latency_ns_p99.map(|ns| ns as f64 / 1e3);
        Round {
            run: row.run,
            block: row.block(),
            values,
            regime: Regime::of_run(row),
        }
    }

    pub fn value(&self, metric: Metric) -> Option<f64> {
        self.values[metric.index()]
    }
}

/// The most of an engine's runs that may fail to verify and be left out, the rest compared.
pub const LEFT_OUT_AT_MOST: f64 = 0.25;

impl EngineSummary {
    /// `engine`'s summary over `rows` (its runs in one study or at one offered rate): over its
    /// verified runs when the others are few enough to leave out, else over all of them (and
    /// then not verified).
    pub fn of(engine: &str, all: &[&Row], headline: Headline) -> EngineSummary {
        let good = |row: &&&Row| row.verified && row.errors == 0 && row.failure.is_none();
        let verified: Vec<&Row> = all.iter().filter(good).copied().collect();
        let unverified = all.len() - verified.len();
        let leave_out = unverified > 0
            && !verified.is_empty()
            && unverified as f64 <= LEFT_OUT_AT_MOST * all.len() as f64;
        let rows: &[&Row] = if leave_out { &verified } else { all };
        let pick = |field: &dyn Fn(&Row) -> f64| {
            Spread::of(&rows.iter().map(|r| field(r)).collect::<Vec<_>>())
        };
        let per_op = |amount: f64, row: &Row| {
            if row.ops > 0 {
                amount / row.ops as f64
            } else {
                0.0
            }
        };
        let counted = rows.iter().all(|row| row.syscalls_source.counted());
        let has_latency = rows.iter().all(|row| row.latency_ns_p99.is_some());
        // A percentile a row lacks (wrk prints no p99.9) is NaN: not drawn, not a zero.
        let latency_us = has_latency.then(|| {
            PERCENTILES
                .iter()
                .map(|(_, field)| {
                    pick(&|row| field(row).map_or(f64::NAN, |ns| ns as f64 / 1e3)).median
                })
                .collect()
        });
        EngineSummary {
            engine: engine.to_string(),
            runs: rows.len(),
            // The NOP floor is a reference beside the engines, as a control is: never a winner
            // or a rung.
            control: engine == FLOOR || rows.iter().any(|row| is_control(row)),
            throughput: pick(&|row| headline.value(row)).scaled(headline.scale()),
            syscalls_per_op: counted.then(|| pick(&|row| per_op(row.syscalls as f64, row))),
            cpu_us_per_op: pick(&|row| per_op(row.cpu_s() * 1e6, row)),
            latency_us,
            p99_us: has_latency.then(|| pick(&|row| row.latency_ns_p99.unwrap_or(0) as f64 / 1e3)),
            verified: rows.iter().all(|row| row.verified && row.errors == 0),
            syscalls_self_counted: rows
                .iter()
                .any(|row| row.syscalls_source == SyscallSource::SelfCounted),
            rss_peak_mib: (rows.iter().all(|row| row.rss_peak_bytes.is_some()))
                .then(|| pick(&|row| row.rss_peak_bytes.unwrap_or(0) as f64 / (1024.0 * 1024.0))),
            server_api: rows.iter().find_map(|row| row.server_api.clone()),
            failure: rows.iter().find_map(|row| row.failure.clone()),
            unverified: (all.iter().filter(|row| !good(row)))
                .map(|row| {
                    let reason = (row.unverified_reason.clone())
                        .or_else(|| row.failure.clone())
                        .unwrap_or_else(|| format!("{} errors", row.errors));
                    (row.run, reason)
                })
                .next(),
            left_out: match leave_out {
                true => (all.iter().filter(|row| !good(row)))
                    .map(|row| row.run)
                    .collect(),
                false => Vec::new(),
            },
            figures: Figures::of(rows),
            rounds: (rows.iter())
                .filter(|row| row.failure.is_none())
                .map(|row| Round::of(row, headline))
                .collect(),
        }
    }
}

pub fn is_control(row: &Row) -> bool {
    row.params.param(Param::Control) == Some(&Value::Bool(true))
}
