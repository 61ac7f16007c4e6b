//! Reading a comparison off its interval: four zones, against two margins.

/// Where an interval of a log ratio lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// Wholly beyond ±margin, on one side: a difference.
    Different,
    /// Wholly inside ±margin: no difference as large as the margin.
    Equivalent,
    /// Wholly inside ±equivalence margin, not inside ±margin: within the wider margin, a
    /// difference of the margin's size not ruled out.
    Within,
    /// None of these: more rounds might decide it.
    Undecided,
}

/// The zone of `interval` (log ratios), `margin` and `equivalence_margin` also as log ratios
/// (ln 1.03, ln 1.10). An interval both beyond the margin and inside the equivalence margin
/// (1.05× [1.035–1.065]) is a difference.
pub fn zone(interval: (f64, f64), margin: f64, equivalence_margin: f64) -> Zone {
    let (low, high) = interval;
    debug_assert!(low <= high && margin <= equivalence_margin);
    if low > margin || high < -margin {
        Zone::Different
    } else if low > -margin && high < margin {
        Zone::Equivalent
    } else if low > -equivalence_margin && high < equivalence_margin {
        Zone::Within
    } else {
        Zone::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_zones_read_as_their_words_say() {
        let (margin, within) = (0.03f64.ln_1p(), 0.10f64.ln_1p());
        let at = |low: f64, high: f64| zone((low.ln(), high.ln()), margin, within);
        assert_eq!(at(1.05, 1.75), Zone::Different);
        assert_eq!(at(0.5, 0.96), Zone::Different);
        assert_eq!(at(1.035, 1.065), Zone::Different);
        assert_eq!(at(0.98, 1.02), Zone::Equivalent);
        assert_eq!(at(0.95, 1.06), Zone::Within);
        assert_eq!(at(0.95, 1.2), Zone::Undecided);
    }
}
