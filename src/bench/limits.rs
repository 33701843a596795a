//! The ranges of the counts and durations that `lineup bench` and `lineup replay` accept,
//! checked before anything runs. A count is also a size: `--runs 1000000000` would reserve
//! gigabytes for the schedule before the first run, and a week-long run is a typo. No I/O.
//!
//! Each check returns a one-line error that names the option (or the matrix key) and the
//! range.

/// Most measured runs per side (bench) or per layout (replay).
pub const MAX_RUNS: usize = 10_000;
/// Most warm-up runs per side or layout.
pub const MAX_WARMUP: usize = 1_000;
/// Longest time limit of one run, in seconds (one week).
pub const MAX_TIMEOUT_S: f64 = 7.0 * 24.0 * 3600.0;
/// Longest replay run, in milliseconds (one hour).
pub const MAX_DURATION_MS: u64 = 3_600_000;
/// Most replay threads (each has its own table in the generated C).
pub const MAX_THREADS: u32 = 1024;
/// Most iterations of private work between two replayed accesses.
pub const MAX_THINK: u32 = 1_000_000;

/// Measured runs for a t-test: at least 2, at most [`MAX_RUNS`].
pub fn check_runs(runs: usize, what: &str) -> Result<(), String> {
    if runs < 2 {
        return Err(format!(
            "{what} {runs}: a t-test needs at least 2 runs per side"
        ));
    }
    if runs > MAX_RUNS {
        return Err(format!(
            "{what} {runs}: at most {MAX_RUNS} runs per side (give 2 to {MAX_RUNS})"
        ));
    }
    Ok(())
}

/// Warm-up runs: 0 to [`MAX_WARMUP`].
pub fn check_warmup(warmup: usize, what: &str) -> Result<(), String> {
    if warmup > MAX_WARMUP {
        return Err(format!(
            "{what} {warmup}: at most {MAX_WARMUP} warm-up runs (give 0 to {MAX_WARMUP})"
        ));
    }
    Ok(())
}

/// A time limit in seconds: 0 (none) to [`MAX_TIMEOUT_S`].
pub fn check_timeout(seconds: f64, what: &str) -> Result<(), String> {
    if !(seconds.is_finite() && (0.0..=MAX_TIMEOUT_S).contains(&seconds)) {
        // 1e300 reads better than its 301 digits.
        let shown = if seconds.abs() < 1e15 {
            seconds.to_string()
        } else {
            format!("{seconds:e}")
        };
        return Err(format!(
            "{what} {shown}: give seconds from 0 (no limit) to {MAX_TIMEOUT_S} (a week)"
        ));
    }
    Ok(())
}

/// A count within `min..=max`, for the options that have no check of their own.
pub fn check_range<T: PartialOrd + std::fmt::Display>(
    value: T,
    min: T,
    max: T,
    what: &str,
    unit: &str,
) -> Result<(), String> {
    if value < min || value > max {
        return Err(format!("{what} {value}: give {min} to {max} {unit}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_one_line_messages() {
        assert!(check_runs(2, "--runs").is_ok());
        assert!(check_runs(MAX_RUNS, "--runs").is_ok());
        let e = check_runs(1, "--runs").unwrap_err();
        assert!(e.contains("at least 2"), "{e}");
        let e = check_runs(1_000_000_000, "--runs").unwrap_err();
        assert_eq!(
            e,
            "--runs 1000000000: at most 10000 runs per side (give 2 to 10000)"
        );
        assert!(check_warmup(0, "--warmup").is_ok());
        let e = check_warmup(usize::MAX, "warmup").unwrap_err();
        assert!(
            e.starts_with("warmup 18446744073709551615: at most 1000"),
            "{e}"
        );
        assert!(check_timeout(0.0, "--timeout").is_ok());
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e30] {
            let e = check_timeout(bad, "--timeout").unwrap_err();
            assert!(e.contains("a week"), "{e}");
        }
        assert!(check_range(0u64, 1, MAX_DURATION_MS, "--duration-ms", "ms").is_err());
        assert_eq!(
            check_range(5000u32, 1, MAX_THREADS, "--threads", "threads").unwrap_err(),
            "--threads 5000: give 1 to 1024 threads"
        );
        for e in [
            check_runs(0, "x").unwrap_err(),
            check_warmup(MAX_WARMUP + 1, "x").unwrap_err(),
        ] {
            assert!(!e.contains('\n'));
        }
    }
}
