//! How the report prints numbers: the precision a reader can use and no more, so a table of
//! engines lines up and a verdict sentence reads as a sentence ("0.0088 syscalls per write vs
//! 1.0", not "0.008789062 vs 1").

use crate::model::summary::Headline;
use crate::stats::Spread;
use crate::units::format_count;

/// A throughput in the headline's unit: whole MB/s, compact ops/s.
pub fn throughput(headline: Headline, value: f64) -> String {
    match headline {
        Headline::BytesPerSec if value < 10.0 => format!("{value:.1}"),
        Headline::BytesPerSec => format!("{value:.0}"),
        Headline::OpsPerSec => format_count(value),
    }
}

/// The smallest and largest run, as `min–max`.
pub fn range(headline: Headline, spread: &Spread) -> String {
    format!(
        "{}–{}",
        throughput(headline, spread.min),
        throughput(headline, spread.max)
    )
}

/// A per-operation quantity (syscalls, microseconds): two significant digits below 1.
pub fn per_op(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 1.0 || magnitude == 0.0 {
        format!("{value:.1}")
    } else if magnitude >= 0.1 {
        format!("{value:.2}")
    } else if magnitude >= 0.01 {
        format!("{value:.3}")
    } else {
        format!("{value:.4}")
    }
}

/// A ratio of two medians, as the verdicts and the ladder print it; "—" for one that is not a
/// number (a document's extreme figures can divide by almost zero).
pub fn ratio(value: f64) -> String {
    match value.is_finite() {
        true => format!("{value:.2}×"),
        false => "—".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_op_keeps_two_significant_digits_below_one() {
        assert_eq!(per_op(1.0), "1.0");
        assert_eq!(per_op(0.0088), "0.0088");
        assert_eq!(per_op(0.25), "0.25");
        assert_eq!(per_op(12.34), "12.3");
        assert_eq!(per_op(0.0), "0.0");
    }

    #[test]
    fn throughput_follows_the_headline_unit() {
        assert_eq!(throughput(Headline::BytesPerSec, 1179.4), "1179");
        assert_eq!(throughput(Headline::BytesPerSec, 2.54), "2.5");
        assert_eq!(throughput(Headline::OpsPerSec, 106_000.0), "106.0k");
        assert_eq!(ratio(1.2149), "1.21×");
    }
}
