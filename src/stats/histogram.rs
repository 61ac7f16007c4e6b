//! Latency histograms as text, so a results document keeps whole distributions and not only
//! the percentiles it printed: a later tool can recompute any percentile, or merge the runs of
//! several documents (`Histogram::add`) and read percentiles of the merged distribution.
//!
//! The encoding is HdrHistogram's own interchange format, V2 with deflate compression (what
//! HdrHistogram's Java, C, Go and Rust libraries all read), then standard base64 with padding,
//! so it sits in a JSON string. Values are nanoseconds.
//!
//! Documents come from other hosts, so decoding trusts no length a header declares: the
//! library sizes its buffer from the declared payload length before reading it (a 56-character
//! field once asked for 4 GiB). `decode` inflates into a bounded buffer itself and checks the
//! header against the bytes present before the library allocates anything.

use std::io::Read;

use anyhow::Context;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use flate2::read::ZlibDecoder;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The longest latency a histogram holds (100 s, beyond any timeout ringside uses); longer ones
/// are clamped. The histogram is sized once, up front.
const LATENCY_NS_MAX: u64 = 100_000_000_000;
/// Significant digits of ringside's latency histograms, and the most a document's may claim.
const SIGNIFICANT_DIGITS: u8 = 3;

/// HdrHistogram's V2 cookies: the plain encoding, and the deflated wrapper around it.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// A V2 header: cookie, payload length, normalizing offset, significant digits (4 bytes each),
/// lowest and highest trackable value, integer-to-double ratio (8 bytes each).
const V2_HEADER_BYTES: usize = 40;
/// Where the header keeps the payload length, the significant digits and the lowest and highest
/// trackable values.
const V2_PAYLOAD_LENGTH_AT: usize = 4;
const V2_DIGITS_AT: usize = 12;
const V2_LOWEST_AT: usize = 16;
const V2_HIGHEST_AT: usize = 24;
/// Counters of the largest histogram at `SIGNIFICANT_DIGITS` (1 to u64::MAX): 56,320, 450 KB.
/// At 5 digits, the format's limit, it would be 6.3 million (50 MB), hence the digits' bound.
const COUNTERS_MAX: usize = 56_320;
/// The largest inflated histogram: its header and every counter as a 9-byte varint (507 KB).
const INFLATED_BYTES_MAX: usize = V2_HEADER_BYTES + 9 * COUNTERS_MAX;

/// An empty latency histogram: 1 ns to 100 s at 3 significant digits.
pub fn new_latency() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, SIGNIFICANT_DIGITS)
        .expect("valid histogram bounds")
}

/// `histogram` as base64 of its V2 + deflate serialization.
pub fn encode(histogram: &Histogram<u64>) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .map_err(|error| anyhow::anyhow!("cannot serialize a latency histogram: {error:?}"))?;
    Ok(STANDARD.encode(bytes))
}

/// The histogram `encode` wrote, from text of any origin: memory stays within
/// `INFLATED_BYTES_MAX` and `COUNTERS_MAX` counters whatever the text declares.
pub fn decode(text: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|error| anyhow::anyhow!("a latency histogram is not base64: {error}"))?;
    let inflated = inflate(&bytes)?;
    check_header(&inflated)?;
    let histogram: Histogram<u64> = Deserializer::new()
        .deserialize(&mut inflated.as_slice())
        .map_err(|error| anyhow::anyhow!("a latency histogram does not deserialize: {error}"))?;
    // The library read as many bytes of counts as the header declares (at most those present).
    let declared = split_word(&inflated[V2_PAYLOAD_LENGTH_AT..]).map_or(0, |(word, _)| word);
    let counts = inflated[V2_HEADER_BYTES..]
        .get(..declared as usize)
        .unwrap_or_default();
    check_counts(counts, histogram.distinct_values())?;
    Ok(histogram)
}

/// The V2 encoding inside the deflate wrapper, inflated into at most `INFLATED_BYTES_MAX`.
fn inflate(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let (cookie, rest) = split_word(bytes).context("a latency histogram is empty")?;
    anyhow::ensure!(
        cookie == V2_DEFLATE_COOKIE,
        "a latency histogram is not HdrHistogram's V2 deflate encoding (cookie {cookie:#x})"
    );
    let (declared, compressed) = split_word(rest).context("a latency histogram is cut short")?;
    let declared = usize::try_from(declared).unwrap_or(usize::MAX);
    anyhow::ensure!(
        declared <= compressed.len(),
        "a latency histogram declares {declared} compressed bytes but holds {}",
        compressed.len()
    );
    let mut inflated = Vec::new();
    ZlibDecoder::new(&compressed[..declared])
        .take(INFLATED_BYTES_MAX as u64 + 1)
        .read_to_end(&mut inflated)
        .map_err(|error| anyhow::anyhow!("a latency histogram does not inflate: {error}"))?;
    anyhow::ensure!(
        inflated.len() <= INFLATED_BYTES_MAX,
        "a latency histogram inflates to more than {INFLATED_BYTES_MAX} bytes, more than any \
         histogram of {SIGNIFICANT_DIGITS} significant digits needs"
    );
    Ok(inflated)
}

/// Refuses a V2 header whose payload length exceeds the bytes present (the library would
/// allocate it before reading) or whose precision would need more than `COUNTERS_MAX` counters.
fn check_header(inflated: &[u8]) -> anyhow::Result<()> {
    anyhow::ensure!(
        inflated.len() >= V2_HEADER_BYTES,
        "a latency histogram inflates to {} bytes, shorter than its {V2_HEADER_BYTES}-byte header",
        inflated.len()
    );
    let word = |at: usize| split_word(&inflated[at..]).map_or(0, |(word, _)| word);
    anyhow::ensure!(
        word(0) == V2_COOKIE,
        "a latency histogram's inflated header is not HdrHistogram's V2 (cookie {:#x})",
        word(0)
    );
    let declared = usize::try_from(word(V2_PAYLOAD_LENGTH_AT)).unwrap_or(usize::MAX);
    let present = inflated.len() - V2_HEADER_BYTES;
    anyhow::ensure!(
        declared <= present,
        "a latency histogram declares {declared} bytes of counts but holds {present}"
    );
    let digits = word(V2_DIGITS_AT);
    anyhow::ensure!(
        (1..=u32::from(SIGNIFICANT_DIGITS)).contains(&digits),
        "a latency histogram keeps {digits} significant digits; ringside writes \
         {SIGNIFICANT_DIGITS} and reads 1 to {SIGNIFICANT_DIGITS}"
    );
    let long = |at: usize| u64::from(word(at)) << 32 | u64::from(word(at + 4));
    let (lowest, highest) = (long(V2_LOWEST_AT), long(V2_HIGHEST_AT));
    anyhow::ensure!(
        lowest >= 1 && highest <= LATENCY_NS_MAX,
        "a latency histogram tracks {lowest} to {highest} ns; ringside's track 1 ns to \
         {LATENCY_NS_MAX} ns (100 s) and reads none beyond"
    );
    Ok(())
}

/// Refuses counts that run past the histogram's `counters`: the library takes a run of zeros
/// past the end as read and keeps what came before it, so a histogram that says more than it
/// can hold would read as a plausible one. The payload is HdrHistogram's V2 counts, each a
/// ZigZag LEB128 varint (its ninth byte all value): a count, or minus the length of a run of
/// zero counts.
fn check_counts(payload: &[u8], counters: usize) -> anyhow::Result<()> {
    let mut index: u64 = 0;
    let mut rest = payload;
    while let Some((zigzag, used)) = varint(rest) {
        let number = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
        index = index.saturating_add(if number < 0 { number.unsigned_abs() } else { 1 });
        rest = &rest[used..];
    }
    anyhow::ensure!(
        index <= counters as u64,
        "a latency histogram's counts run to index {index}, past its {counters} counters"
    );
    Ok(())
}

/// The LEB128 varint at the start of `bytes` as HdrHistogram writes it, and its length.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (at, &byte) in bytes.iter().enumerate().take(9) {
        if at == 8 {
            return Some((value | u64::from(byte) << 56, 9));
        }
        value |= u64::from(byte & 0x7f) << (7 * at);
        if byte & 0x80 == 0 {
            return Some((value, at + 1));
        }
    }
    None
}

/// The big-endian u32 at the start of `bytes`, and the rest.
fn split_word(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let (word, rest) = bytes.split_first_chunk::<4>()?;
    Some((u32::from_be_bytes(*word), rest))
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

    /// `inner` (a V2 encoding) deflated and wrapped as `encode` wraps it, declaring
    /// `declared_extra` more compressed bytes than it holds.
    fn wrapped(inner: &[u8], declared_extra: u32) -> String {
        use std::io::Write;
        let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), Default::default());
        deflate.write_all(inner).unwrap();
        let compressed = deflate.finish().unwrap();
        let mut bytes = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        let declared = compressed.len() as u32 + declared_extra;
        bytes.extend(declared.to_be_bytes());
        bytes.extend(compressed);
        STANDARD.encode(bytes)
    }

    /// A V2 header declaring `payload_bytes` of counts, followed by `payload`.
    fn v2(payload_bytes: u32, digits: u32, payload: &[u8]) -> Vec<u8> {
        v2_tracking(payload_bytes, digits, LATENCY_NS_MAX, payload)
    }

    /// `v2` with `highest` as its highest trackable value.
    fn v2_tracking(payload_bytes: u32, digits: u32, highest: u64, payload: &[u8]) -> Vec<u8> {
        let mut bytes = V2_COOKIE.to_be_bytes().to_vec();
        bytes.extend(payload_bytes.to_be_bytes());
        bytes.extend(0u32.to_be_bytes());
        bytes.extend(digits.to_be_bytes());
        bytes.extend(1u64.to_be_bytes());
        bytes.extend(highest.to_be_bytes());
        bytes.extend(1.0f64.to_be_bytes());
        bytes.extend(payload);
        bytes
    }

    /// Counts as V2 writes them: ZigZag LEB128, a negative number a run of zeros.
    fn counts(numbers: &[i64]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for &number in numbers {
            let mut zigzag = ((number << 1) ^ (number >> 63)) as u64;
            while zigzag >= 0x80 {
                bytes.push(zigzag as u8 | 0x80);
                zigzag >>= 7;
            }
            bytes.push(zigzag as u8);
        }
        bytes
    }

    /// Three headers the library reads without complaint, each with a meaning no ringside
    /// histogram has: no significant digit, values tracked to i64::MAX ns (292 years), and
    /// counts that run past the counters (the library kept the first and took the rest as
    /// read). Each was merged silently before; each is refused now, by what is wrong.
    #[test]
    fn a_valid_header_with_a_meaning_no_ringside_histogram_has_is_refused_by_name() {
        let few = counts(&[5, -100, 7]);
        let no_digits = wrapped(&v2(few.len() as u32, 0, &few), 0);
        let error = decode(&no_digits).unwrap_err().to_string();
        assert!(error.contains("keeps 0 significant digits"), "{error}");
        let forever = wrapped(&v2_tracking(few.len() as u32, 3, i64::MAX as u64, &few), 0);
        let error = decode(&forever).unwrap_err().to_string();
        assert!(
            error.contains("tracks 1 to 9223372036854775807 ns"),
            "{error}"
        );
        let past = counts(&[1, -60_000]);
        let counters = new_latency().distinct_values();
        let beyond = wrapped(&v2(past.len() as u32, 3, &past), 0);
        let error = decode(&beyond).unwrap_err().to_string();
        let says = format!("counts run to index 60001, past its {counters} counters");
        assert!(error.contains(&says), "{error}");
        // What ringside writes still reads, its last run of zeros ending at the last counter.
        let mut full = new_latency();
        full.record(LATENCY_NS_MAX).unwrap();
        full.record(1).unwrap();
        assert_eq!(decode(&encode(&full).unwrap()).unwrap(), full);
    }

    #[test]
    fn the_bound_on_counters_is_the_largest_histogram_of_that_precision() {
        let largest = Histogram::<u64>::new_with_bounds(1, u64::MAX, SIGNIFICANT_DIGITS).unwrap();
        assert_eq!(largest.distinct_values(), COUNTERS_MAX);
        assert!(new_latency().distinct_values() <= COUNTERS_MAX);
    }

    /// The case: a 56-character field whose header declares 4 GiB of counts made the
    /// library allocate 4,294,967,280 zeroed bytes before it found the bytes missing.
    #[test]
    fn a_header_declaring_more_than_it_holds_is_refused_before_any_allocation() {
        let four_gib = wrapped(&v2(0xFFFF_FFF0, 3, &[]), 0);
        assert_eq!(four_gib.len(), 56);
        let error = decode(&four_gib).unwrap_err().to_string();
        assert!(
            error.contains("declares 4294967280 bytes of counts but holds 0"),
            "{error}"
        );
        let short = wrapped(&v2(0, 3, &[]), 1000);
        let error = decode(&short).unwrap_err().to_string();
        assert!(error.contains("compressed bytes but holds"), "{error}");
    }

    #[test]
    fn a_histogram_finer_than_ringside_writes_or_inflating_past_the_bound_is_refused() {
        let fine = wrapped(&v2(0, 5, &[]), 0);
        let error = decode(&fine).unwrap_err().to_string();
        assert!(error.contains("keeps 5 significant digits"), "{error}");
        // Deflate turns 64 MiB of zeros into 64 KiB; they must not all be inflated.
        let bomb = wrapped(&v2(0, 3, &vec![0; 64 << 20]), 0);
        let error = decode(&bomb).unwrap_err().to_string();
        assert!(error.contains("inflates to more than"), "{error}");
    }

    proptest::proptest! {
        /// Any bytes in place of a histogram, or a real one cut or with any byte changed, end
        /// in a histogram or an error: never a panic.
        #[test]
        fn damaged_histograms_are_refused_or_read(
            cut in 0usize..200,
            flip in 0usize..200,
            value in proptest::num::u8::ANY,
            noise in proptest::collection::vec(proptest::num::u8::ANY, 0..100),
        ) {
            let mut histogram = new_latency();
            for micros in [1u64, 10, 100, 1000, 10_000] {
                histogram.record(micros * 1000).unwrap();
            }
            let mut bytes = STANDARD.decode(encode(&histogram).unwrap()).unwrap();
            if let Some(byte) = bytes.get_mut(flip) {
                *byte = value;
            }
            bytes.truncate(cut);
            let _ = decode(&STANDARD.encode(&bytes));
            let _ = decode(&STANDARD.encode(&noise));
            let _ = decode(&wrapped(&v2(noise.len() as u32, 3, &noise), 0));
        }
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
