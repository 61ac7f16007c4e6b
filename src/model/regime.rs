//! Which side set the pace of a closed-loop network cell. A closed loop ranks the servers only
//! where the server was the bottleneck: its cores busy, the load's threads not. On two CPUs
//! the load generator does the same TCP work per message as the server and saturates first
//! (the cell is *client-bound*: its throughputs rank the load generator, and only equal load
//! compares the servers); on a machine with cores to spare the load's threads idle while the
//! server's core is full (*server-bound*: the closed loop measures the servers). At one
//! connection neither side is busy: the round trip's wake-ups set the pace (*neither*).
//!
//! Each side is busy at `BUSY` of its CPUs or more, free at `FREE` or less, and near the line
//! between: a cell is server-bound only with its server busy and its load free, client-bound
//! with its load busy, and neither otherwise, so a cell that moves a few points near a line
//! never turns from server-bound to client-bound or back. The figures are medians over the
//! cell's rounds (`Figures`), so one run does not move it either.

use crate::model::figures::Figures;
use crate::row::Row;

/// A side is busy at this share of its CPUs or more (the load generator's saturation mark).
pub const BUSY: f64 = 0.9;
/// A side is free at this share or less; between `FREE` and `BUSY` it is near the line.
pub const FREE: f64 = 0.8;

/// The side that set a closed-loop cell's pace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// The server's cores were busy and the load's threads free: the closed loop ranks the
    /// servers.
    ServerBound,
    /// The load's threads were busy: the closed loop ranks the load generator.
    ClientBound,
    /// Neither side was busy (the round trip set the pace), or a side was near the line.
    Neither,
}

impl Regime {
    /// The regime of a closed-loop cell from its medians; None where the rows do not measure
    /// both sides (file rows, a load without a measured server, open loops).
    pub fn of(figures: &Figures) -> Option<Regime> {
        let (server, client) = (figures.server_busy_share?, figures.client_busy_share?);
        let saturated = figures.client_saturated_share;
        let client_busy = client >= BUSY || saturated > 0.5;
        let client_free = client <= FREE && saturated == 0.0;
        Some(if client_busy {
            Regime::ClientBound
        } else if server >= BUSY && client_free {
            Regime::ServerBound
        } else {
            Regime::Neither
        })
    }

    /// "server-bound", "client-bound", "neither".
    pub fn name(self) -> &'static str {
        match self {
            Regime::ServerBound => "server-bound",
            Regime::ClientBound => "client-bound",
            Regime::Neither => "neither",
        }
    }

    /// Whether the closed loop's throughputs rank the servers in this regime.
    pub fn ranks_servers(self) -> bool {
        !matches!(self, Regime::ClientBound)
    }
}

/// Whether a cell's load set its pace: client-bound, or, where the rows cannot say (no measured
/// CPU of one side), any run's load saturated.
pub fn client_bound(figures: &Figures) -> bool {
    match Regime::of(figures) {
        Some(regime) => regime == Regime::ClientBound,
        None => figures.client_saturated,
    }
}

impl Regime {
    /// One run's regime, from its own row: its load saturated (a thread busy for most of the
    /// window) or busy, its server's cores busy and its load free, or neither. None where the row
    /// does not measure both sides (a file row, an open loop, a server nobody measured).
    pub fn of_run(row: &Row) -> Option<Regime> {
        if row.offered_rate.is_some() {
            return None;
        }
        let param = |key: &str| row.params.get(key).and_then(serde_json::Value::as_u64);
        let loops = param("server_threads").unwrap_or(1).max(1) as f64;
        let server = row.server_cpu_utilisation? / loops;
        let threads = param("client_threads")?.min(param("connections")?).max(1) as f64;
        let client_cpu = row.client_cpu_user_s? + row.client_cpu_sys_s?;
        let client = (row.seconds > 0.0).then(|| client_cpu / row.seconds / threads)?;
        let saturated = row.client_saturated == Some(true);
        Some(if saturated || client >= BUSY {
            Regime::ClientBound
        } else if server >= BUSY && client <= FREE {
            Regime::ServerBound
        } else {
            Regime::Neither
        })
    }
}

/// What set the pace of a closed-loop cell, from its runs: each run classified on its own
/// (`Regime::of_run`), the cell from them. One regime per cell, said once, wherever the cell is
/// named.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CellRegime {
    pub class: CellClass,
    /// The runs classified, and how many of them were client-bound and server-bound.
    pub runs: usize,
    pub client_bound_runs: usize,
    pub server_bound_runs: usize,
}

/// A cell's regime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellClass {
    /// Most runs of every engine had the server busy and the load free.
    ServerBound,
    /// No run's load was saturated, and not most of every engine's runs were server-bound: the
    /// round trips set the pace.
    Neither,
    /// Most runs of every engine had the load saturated.
    ClientBound,
    /// Some runs had the load saturated, but not most of every engine's: the engines or the
    /// rounds disagree.
    Mixed,
}

impl CellRegime {
    /// The regime of a cell whose engines ran `engines` (each engine's runs' regimes); None when
    /// no run measured both sides.
    pub fn of(engines: &[Vec<Regime>]) -> Option<CellRegime> {
        let engines: Vec<&Vec<Regime>> = engines.iter().filter(|runs| !runs.is_empty()).collect();
        if engines.is_empty() {
            return None;
        }
        let count = |runs: &[Regime], regime: Regime| runs.iter().filter(|r| **r == regime).count();
        let most =
            |regime: Regime| (engines.iter()).all(|runs| 2 * count(runs, regime) > runs.len());
        let total = |regime: Regime| engines.iter().map(|runs| count(runs, regime)).sum();
        let client_bound_runs: usize = total(Regime::ClientBound);
        let class = match client_bound_runs {
            0 if most(Regime::ServerBound) => CellClass::ServerBound,
            0 => CellClass::Neither,
            _ if most(Regime::ClientBound) => CellClass::ClientBound,
            _ => CellClass::Mixed,
        };
        Some(CellRegime {
            class,
            runs: engines.iter().map(|runs| runs.len()).sum(),
            client_bound_runs,
            server_bound_runs: total(Regime::ServerBound),
        })
    }

    /// Whether the cell's closed-loop throughputs rank the servers: never where the load was
    /// saturated in most runs or where the runs disagree.
    pub fn ranks_servers(&self) -> bool {
        matches!(self.class, CellClass::ServerBound | CellClass::Neither)
    }

    /// The regime in words, with its counts: "server-bound (the server's cores ≥ 90% busy and
    /// the load's threads ≤ 80% in 40 of 48 runs)", "the load generator was saturated in 48 of
    /// 48 runs (client-bound)".
    pub fn text(&self) -> String {
        let (busy, free) = (BUSY * 100.0, FREE * 100.0);
        match self.class {
            CellClass::ServerBound => format!(
                "server-bound (the server's cores ≥ {busy:.0}% busy, the load's threads ≤                  {free:.0}%, in {} of {} runs)",
                self.server_bound_runs, self.runs
            ),
            CellClass::Neither => format!(
                "neither side saturated in any of {} runs (the round trips set the pace)",
                self.runs
            ),
            // One wording for both: either way throughput ranks the load generator here, and
            // the counts say how often (the class is in the section and the JSON).
            CellClass::ClientBound | CellClass::Mixed => format!(
                "the load generator was saturated in {} of {} runs, so throughput here ranks \
                 the load generator, not the servers",
                self.client_bound_runs, self.runs,
            ),
        }
    }

    /// "server-bound", "neither", "client-bound", "mixed".
    pub fn name(&self) -> &'static str {
        match self.class {
            CellClass::ServerBound => "server-bound",
            CellClass::Neither => "neither",
            CellClass::ClientBound => "client-bound",
            CellClass::Mixed => "mixed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(server: f64, client: f64, saturated: f64) -> Option<Regime> {
        Regime::of(&Figures {
            server_busy_share: Some(server),
            client_busy_share: Some(client),
            client_saturated_share: saturated,
            ..Figures::default()
        })
    }

    /// Goal: each regime from CPU figures, with a margin: a cell near a line is neither, so it
    /// never turns from server-bound to client-bound with a few points' move.
    #[test]
    fn each_regime_is_classified_from_cpu_figures_with_a_margin() {
        // 16 cores: one server core full, 15 load threads at a third each.
        assert_eq!(cell(0.99, 0.33, 0.0), Some(Regime::ServerBound));
        // 2 CPUs at 50 connections: the load's one thread saturated.
        assert_eq!(cell(0.75, 0.98, 1.0), Some(Regime::ClientBound));
        // Both full: the load set the pace too, so its throughputs rank it.
        assert_eq!(cell(0.97, 0.95, 1.0), Some(Regime::ClientBound));
        // One connection: neither side busy.
        assert_eq!(cell(0.35, 0.30, 0.0), Some(Regime::Neither));
        // Near the lines: the server at 87% or the load at 85% is neither, not a flip.
        assert_eq!(cell(0.87, 0.40, 0.0), Some(Regime::Neither));
        assert_eq!(cell(0.99, 0.85, 0.0), Some(Regime::Neither));
        // A cell moving ±4 points around the server's line never becomes client-bound, and
        // one moving around the load's line never becomes server-bound.
        for step in 0..=8 {
            let moved = 0.86 + 0.01 * f64::from(step);
            assert_ne!(cell(moved, 0.40, 0.0), Some(Regime::ClientBound), "{moved}");
            assert_ne!(cell(0.99, moved, 0.0), Some(Regime::ServerBound), "{moved}");
        }
        // A saturated run in a minority of rounds keeps the load off "free".
        assert_eq!(cell(0.99, 0.60, 0.25), Some(Regime::Neither));
        assert_eq!(Regime::of(&Figures::default()), None);
    }
}
