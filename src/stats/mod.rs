//! The few statistics every table, report and comparison uses, written once: the median of a
//! metric across runs, its spread (the smallest and largest run, the report's noise), rates, and
//! a parameter set as the `key=value` text that names a study. Latency histograms and their
//! text form are in `histogram`; comparisons in `rank` (the exact rank interval and the outcome
//! an interval reads as), `blocks` (the interval with the between-block component) and
//! `sequential` (the looks' level, futility, the smallest difference a run can decide); the
//! distribution functions they share in `special`.

pub mod blocks;
pub mod histogram;
mod operating;
pub mod rank;
pub mod sequential;
pub mod special;

use serde_json::Value;

/// The median of `values` (the mean of the middle two for an even count; 0 for none).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    }
}

/// The largest of `values` (NaN for none).
pub fn best(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

/// The median of a metric across runs, with the smallest and largest run: the report's noise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        Spread {
            median: median(values),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    pub fn scaled(&self, factor: f64) -> Spread {
        Spread {
            median: self.median * factor,
            min: self.min * factor,
            max: self.max * factor,
        }
    }
}

/// `amount` per second over `seconds` (0 for an empty window).
pub fn per_second(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        amount / seconds
    } else {
        0.0
    }
}

/// Parameters as `key=value` pairs in their stable order, strings unquoted: how tables, CSV and
/// reports name a parameter set.
pub fn params_text<'a>(params: impl IntoIterator<Item = (&'a String, &'a Value)>) -> String {
    let pairs: Vec<String> = params
        .into_iter()
        .map(|(key, value)| match value {
            Value::String(text) => format!("{key}={text}"),
            other => format!("{key}={other}"),
        })
        .collect();
    pairs.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::params::{Param, Params};
    use serde_json::Map;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn params_read_as_key_value_pairs() {
        let mut params = Map::new();
        params.put(Param::BlockSize, "4K");
        params.put(Param::Depth, 128);
        assert_eq!(params_text(&params), "block_size=4K depth=128");
    }
}
