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
