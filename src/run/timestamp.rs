//! The name of a results directory: the UTC time the run started, sortable and safe in a path
//! (`2026-11-22T13-05-00Z`), computed from the system clock without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as a directory name.
pub fn now_utc() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    format_utc(seconds)
}

/// `seconds` since the Unix epoch as `YYYY-MM-DDTHH-MM-SSZ`.
pub fn format_utc(seconds: u64) -> String {
    let (days, second_of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}-{:02}-{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_format_as_utc() {
        assert_eq!(format_utc(0), "1970-01-01T00-00-00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00-00-00Z");
        assert_eq!(format_utc(1_795_352_713), "2026-11-22T13-05-13Z");
    }
}
