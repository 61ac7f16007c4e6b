//! Latency histograms as text, so a results document keeps whole distributions and not only
//! the percentiles it printed: a later tool can recompute any percentile, or merge the runs of
//! several documents (`Histogram::add`) and read percentiles of the merged distribution.
//!
//! The encoding is HdrHistogram's own interchange format, V2 with deflate compression (what
//! HdrHistogram's Java, C, Go and Rust libraries all read), then standard base64 with padding,
//! so it sits in a JSON string. Values are nanoseconds.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The longest latency a histogram holds (100 s, beyond any timeout ringside uses); longer ones
/// are clamped. The histogram is sized once, up front.
const LATENCY_NS_MAX: u64 = 100_000_000_000;

/// An empty latency histogram: 1 ns to 100 s at 3 significant digits.
pub fn new_latency() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, 3).expect("valid histogram bounds")
}

/// `histogram` as base64 of its V2 + deflate serialization.
pub fn encode(histogram: &Histogram<u64>) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .map_err(|error| anyhow::anyhow!("cannot serialize a latency histogram: {error:?}"))?;
    Ok(STANDARD.encode(bytes))
}

/// The histogram `encode` wrote.
pub fn decode(text: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|error| anyhow::anyhow!("a latency histogram is not base64: {error}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|error| anyhow::anyhow!("a latency histogram does not deserialize: {error:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_survives_the_text_form() {
        let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for value in 1..=10_000u64 {
            histogram.record(value * 1_000).unwrap();
        }
        let back = decode(&encode(&histogram).unwrap()).unwrap();
        assert_eq!(back.len(), histogram.len());
        assert_eq!(
            back.value_at_quantile(0.99),
            histogram.value_at_quantile(0.99)
        );
        assert_eq!(back, histogram);
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(decode("not base64!")
            .unwrap_err()
            .to_string()
            .contains("base64"));
        assert!(decode("AAAA").is_err());
    }
}
