//! UTC dates from the system clock, for what lineup writes down (a calibration's time, the day
//! a fleet profile was stored). Written by hand, not with a date crate: one conversion of days
//! since 1970 to a civil date, which no dependency of the default build offers.

/// Seconds since 1970-01-01 UTC (0 if the clock is before it).
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The civil date (proleptic Gregorian) of `days` since 1970-01-01: Howard Hinnant's
/// days_from_civil, inverted.
fn civil_date(days: u64) -> (i64, i64, i64) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `secs` since 1970-01-01 as `YYYY-MM-DD`.
fn date_of(secs: u64) -> String {
    let (y, m, d) = civil_date(secs / 86_400);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Today (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    date_of(now_secs())
}

/// Now (UTC) as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = now_secs();
    let rem = secs % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        date_of(secs),
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::date_of;

    #[test]
    fn days_since_1970_become_civil_dates() {
        assert_eq!(date_of(0), "1970-01-01");
        // A leap day of a year divisible by 400, and the day after it.
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(date_of(951_782_400 + 86_400), "2000-03-01");
        // The last second of a year.
        assert_eq!(date_of(1_798_761_599), "2026-12-31");
    }
}
