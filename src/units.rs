//! Human units on the command line and in tables: sizes like fio (`4k`, `1MiB`, `256m`, `1G`;
//! every suffix is a power of 1024, as in fio's default), durations like wrk (`10s`, `500ms`),
//! and the short rate formatting the tables print.

use std::time::Duration;

/// Parses a byte size: a whole number with an optional suffix k/m/g/t, with or without a
/// trailing `b`/`ib` (`4k`, `4KiB`, `4kb` and `4096` are the same size).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    if digits_end == 0 {
        return Err(format!(
            "'{text}' is not a size: write a number with an optional unit, like 4k or 1G"
        ));
    }
    let number: u64 = lower[..digits_end]
        .parse()
        .map_err(|_| format!("'{text}' is too large a size"))?;
    let shift = match lower[digits_end..].trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        unit => {
            return Err(format!(
                "'{text}' has an unknown unit '{unit}': use k, m, g or t (powers of 1024)"
            ))
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{text}' is too large a size"))
}

/// The longest duration any flag takes: a year. Every later use of a duration (a deadline
/// `Instant::now() + d`, a timeout divided into ticks, nanoseconds in a u64) is sound below it;
/// `--duration 1e19` overflowed `Instant + Duration` and `1e20` `Duration::from_secs_f64`.
pub const DURATION_MAX: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses a duration like `10s`, `1m30s`, `500ms`; a bare number means seconds, as in wrk.
/// At most `DURATION_MAX`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let too_long =
        || format!("'{text}' is longer than the longest duration ringside takes (365 days)");
    let duration = match trimmed.parse::<f64>() {
        Ok(seconds) if seconds > DURATION_MAX.as_secs_f64() => return Err(too_long()),
        Ok(seconds) if seconds >= 0.0 => Duration::from_secs_f64(seconds),
        // Negative, NaN and infinite numbers get humantime's reason.
        _ => humantime::parse_duration(trimmed).map_err(|error| {
            format!("'{text}' is not a duration ({error}): write e.g. 10s or 500ms")
        })?,
    };
    match duration > DURATION_MAX {
        true => Err(too_long()),
        false => Ok(duration),
    }
}

/// Formats a byte count with a binary unit, the way the size flags accept it (`4k`, `1G`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "k")];
    for (shift, unit) in UNITS {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Formats a rate in bytes per second as decimal megabytes per second, fio's `MB/s`.
pub fn format_mb_per_sec(bytes_per_sec: f64) -> String {
    format!("{:.0}", bytes_per_sec / 1e6)
}

/// Formats a count compactly: 1234567 becomes `1.23M`.
pub fn format_count(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e9 {
        format!("{:.2}G", value / 1e9)
    } else if magnitude >= 1e6 {
        format!("{:.2}M", value / 1e6)
    } else if magnitude >= 1e4 {
        format!("{:.1}k", value / 1e3)
    } else if magnitude >= 100.0 || value == value.trunc() {
        format!("{value:.0}")
    } else if magnitude >= 0.1 {
        format!("{value:.2}")
    } else {
        format!("{value:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_fio_spellings() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1gb"), Ok(1 << 30));
    }

    #[test]
    fn sizes_reject_nonsense_with_a_reason() {
        assert!(parse_size("").unwrap_err().contains("not a size"));
        assert!(parse_size("k").unwrap_err().contains("not a size"));
        assert!(parse_size("4x").unwrap_err().contains("unknown unit"));
        assert!(parse_size("-4k").is_err());
        assert!(parse_size("99999999999999t")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn durations_accept_wrk_spellings() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn durations_beyond_a_year_are_refused_with_the_bound() {
        assert_eq!(parse_duration("365d"), Ok(DURATION_MAX));
        assert_eq!(parse_duration("31536000"), Ok(DURATION_MAX));
        for text in ["1e20", "1e19", "31536001", "366d", "1000000y", "inf"] {
            let error = parse_duration(text).unwrap_err();
            assert!(error.contains(&format!("'{text}'")), "{error}");
        }
        assert!(parse_duration("1e20").unwrap_err().contains("365 days"));
        assert!(parse_duration("-1").is_err() && parse_duration("NaN").is_err());
    }

    proptest::proptest! {
        /// No text panics the parsers, and every duration they accept leaves room for a
        /// deadline from now and for nanoseconds in a u64.
        #[test]
        fn any_text_parses_or_is_refused(text in "\\PC{0,24}", number in proptest::num::f64::ANY) {
            for text in [text, number.to_string(), format!("{number}s"), format!("{number}ms")] {
                if let Ok(duration) = parse_duration(&text) {
                    proptest::prop_assert!(duration <= DURATION_MAX);
                    proptest::prop_assert!(std::time::Instant::now().checked_add(duration).is_some());
                    proptest::prop_assert!(u64::try_from(duration.as_nanos()).is_ok());
                }
                let _ = parse_size(&text);
            }
        }
    }

    #[test]
    fn formatting_round_trips_sizes() {
        for text in ["4k", "1M", "256M", "1G", "4097"] {
            let bytes = parse_size(text).unwrap();
            assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
        }
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_count(1_234_567.0), "1.23M");
        assert_eq!(format_count(386.0), "386");
    }
}
