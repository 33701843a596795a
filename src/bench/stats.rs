//! Statistics for A/B runs, with no I/O: summaries (mean, sample standard deviation, std%),
//! relative change, and Welch's unequal-variance t-test with its confidence interval.
//!
//! The Student-t distribution is computed here, not taken from a crate: its CDF is the
//! regularized incomplete beta function `I_x(a, b)` (continued fraction, modified Lentz),
//! over `ln Γ` by the Lanczos approximation; quantiles are found by bisection on the CDF.
//! The unit tests compare every function against reference values computed with SciPy
//! (`tests/data/bench/stats_reference.py` generates `stats_reference.json`).

use serde::Serialize;

/// Mean, spread and size of one side's figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for a single figure.
    pub sd: f64,
    /// `sd / |mean| * 100`: the "std%" of the seeds' tables. 0 when there is no spread;
    /// NaN (printed `n/a`) when the mean is 0 but the figures spread.
    pub std_pct: f64,
}

/// Summarizes `xs`; `None` when it is empty.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 {
        (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let std_pct = if sd == 0.0 {
        0.0
    } else if mean != 0.0 {
        sd / mean.abs() * 100.0
    } else {
        f64::NAN
    };
    Some(Summary {
        n,
        mean,
        sd,
        std_pct,
    })
}

/// Relative change of B's mean against A's, in percent: `(b - a) / |a| * 100`. This is the
/// seeds' `compare%`: the change of the figure itself, whatever its direction.
///
/// A zero baseline has no relative change: 0 when B's mean is 0 too, NaN (undefined, printed
/// `n/a`) otherwise; [`significant`] never marks an undefined change.
pub fn change_pct(mean_a: f64, mean_b: f64) -> f64 {
    if mean_a == 0.0 {
        return if mean_b == 0.0 { 0.0 } else { f64::NAN };
    }
    // + 0.0 turns -0.0 into 0.0, which prints without a sign.
    (mean_b - mean_a) / mean_a.abs() * 100.0 + 0.0
}

/// Improvement of B over A in percent, positive when B is better: the `%gain` of seed 004's
/// percentile tables. For a lower-is-better figure `(a - b) / |a| * 100`, for a
/// higher-is-better one `(b - a) / |a| * 100`.
pub fn gain_pct(mean_a: f64, mean_b: f64, higher_is_better: bool) -> f64 {
    let c = change_pct(mean_a, mean_b);
    if higher_is_better { c } else { -c + 0.0 }
}

/// Whether a comparison is marked significant: a t-test exists, its p-value is a number below
/// `alpha`, and the relative change it qualifies is defined (finite). So figures of 0 on side A
/// (change undefined) and figures that are not numbers are never marked, whatever the test.
pub fn significant(welch: Option<&Welch>, change_pct: f64, alpha: f64) -> bool {
    change_pct.is_finite() && welch.is_some_and(|w| w.p.is_finite() && w.p < alpha)
}

/// Welch's t-test of B against A and the confidence interval of `mean_b - mean_a`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Welch {
    /// `(mean_b - mean_a) / se`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub dof: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// `mean_b - mean_a`.
    pub diff: f64,
    /// Standard error of the difference.
    pub se: f64,
    /// The confidence level of `ci_low..ci_high` (for example 0.95).
    pub confidence: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Welch's t-test; `None` unless both sides have at least two figures.
///
/// When both sides have no spread at all the test degenerates: equal means (constant,
/// identical samples, all zeros included) give t = 0 and p = 1; different means give t = ±∞
/// and p = 0 (an exact, repeatable difference) with a zero-width interval. Figures that are
/// not finite give NaN for t, p and the interval (never significant).
pub fn welch(a: &[f64], b: &[f64], confidence: f64) -> Option<Welch> {
    let (sa, sb) = (summarize(a)?, summarize(b)?);
    welch_from(&sa, &sb, confidence)
}

/// [`welch`] from two summaries.
pub fn welch_from(sa: &Summary, sb: &Summary, confidence: f64) -> Option<Welch> {
    if sa.n < 2 || sb.n < 2 {
        return None;
    }
    if ![sa.mean, sa.sd, sb.mean, sb.sd]
        .iter()
        .all(|x| x.is_finite())
    {
        let nan = f64::NAN;
        return Some(Welch {
            t: nan,
            dof: nan,
            p: nan,
            diff: sb.mean - sa.mean,
            se: nan,
            confidence,
            ci_low: nan,
            ci_high: nan,
        });
    }
    let (na, nb) = (sa.n as f64, sb.n as f64);
    let (va, vb) = (sa.sd * sa.sd / na, sb.sd * sb.sd / nb);
    let se = (va + vb).sqrt();
    let diff = sb.mean - sa.mean;
    if se == 0.0 {
        let (t, p) = if diff == 0.0 {
            (0.0, 1.0)
        } else {
            (diff.signum() * f64::INFINITY, 0.0)
        };
        return Some(Welch {
            t,
            dof: na + nb - 2.0,
            p,
            diff,
            se,
            confidence,
            ci_low: diff,
            ci_high: diff,
        });
    }
    let t = diff / se;
    let dof = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let p = t_two_sided_p(t, dof);
    let q = t_quantile(0.5 + confidence / 2.0, dof);
    Some(Welch {
        t,
        dof,
        p,
        diff,
        se,
        confidence,
        ci_low: diff - q * se,
        ci_high: diff + q * se,
    })
}

/// Half width of the confidence interval of one side's mean: `t(1 - α/2, n-1) * sd / √n`;
/// 0 for fewer than two figures.
pub fn mean_ci_half_width(s: &Summary, confidence: f64) -> f64 {
    if s.n < 2 {
        return 0.0;
    }
    t_quantile(0.5 + confidence / 2.0, (s.n - 1) as f64) * s.sd / (s.n as f64).sqrt()
}

/// Two-sided p-value of Student's t with `dof` degrees of freedom: `P(|T| >= |t|)`.
pub fn t_two_sided_p(t: f64, dof: f64) -> f64 {
    if t.is_nan() || dof.is_nan() || dof <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    inc_beta(dof / 2.0, 0.5, dof / (dof + t * t))
}

/// The CDF of Student's t with `dof` degrees of freedom (which need not be an integer).
pub fn t_cdf(t: f64, dof: f64) -> f64 {
    if t.is_nan() || dof.is_nan() || dof <= 0.0 {
        return f64::NAN;
    }
    if t == f64::INFINITY {
        return 1.0;
    }
    if t == f64::NEG_INFINITY {
        return 0.0;
    }
    let tail = 0.5 * inc_beta(dof / 2.0, 0.5, dof / (dof + t * t));
    if t > 0.0 { 1.0 - tail } else { tail }
}

/// The quantile function of Student's t: the `t` with `t_cdf(t, dof) == p`, for 0 < p < 1.
pub fn t_quantile(p: f64, dof: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || dof.is_nan() || dof <= 0.0 {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, dof);
    }
    // Upper tail probability, computed without cancellation: P(T > t) = I_x(dof/2, 1/2) / 2.
    let upper = 1.0 - p;
    let tail = |t: f64| 0.5 * inc_beta(dof / 2.0, 0.5, dof / (dof + t * t));
    let mut hi = 1.0;
    while tail(hi) > upper {
        hi *= 2.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if tail(mid) > upper {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `ln Γ(x)` for x > 0, by the Lanczos approximation (g = 7, 9 terms), with the reflection
/// formula below 0.5; relative error near 1e-15.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x) Γ(1 - x) = π / sin(πx)
        let s = (std::f64::consts::PI * x).sin().abs();
        return std::f64::consts::PI.ln() - s.ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function `I_x(a, b)` for a, b > 0 and 0 <= x <= 1.
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x.is_nan() || a <= 0.0 || b <= 0.0 || !(0.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 0.0 {
        return 0.0;
    }
    if x == 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry
    // I_x(a, b) = 1 - I_{1-x}(b, a) on the other side.
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function, by the modified Lentz method.
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-16;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Reference {
        ln_gamma: Vec<[f64; 2]>,
        inc_beta: Vec<[f64; 4]>,
        t_cdf: Vec<[f64; 3]>,
        t_quantile: Vec<[f64; 3]>,
        welch: Vec<WelchCase>,
    }

    #[derive(serde::Deserialize)]
    struct WelchCase {
        a: Vec<f64>,
        b: Vec<f64>,
        mean_a: f64,
        mean_b: f64,
        sd_a: f64,
        sd_b: f64,
        t: f64,
        dof: f64,
        p: f64,
        ci_low: f64,
        ci_high: f64,
    }

    fn reference() -> Reference {
        serde_json::from_str(include_str!("../../tests/data/bench/stats_reference.json"))
            .expect("stats_reference.json")
    }

    fn close(got: f64, want: f64, rel: f64) -> bool {
        if want == 0.0 {
            return got.abs() < rel;
        }
        ((got - want) / want).abs() < rel
    }

    #[test]
    fn ln_gamma_matches_scipy() {
        for [x, want] in reference().ln_gamma {
            let got = ln_gamma(x);
            assert!(
                close(got, want, 1e-12) || (got - want).abs() < 1e-13,
                "lnΓ({x}) = {got}, scipy {want}"
            );
        }
    }

    #[test]
    fn incomplete_beta_matches_scipy() {
        for [a, b, x, want] in reference().inc_beta {
            let got = inc_beta(a, b, x);
            assert!(
                (got - want).abs() < 1e-12 || close(got, want, 1e-10),
                "I_{x}({a}, {b}) = {got}, scipy {want}"
            );
        }
    }

    #[test]
    fn t_cdf_matches_scipy() {
        for [t, dof, want] in reference().t_cdf {
            let got = t_cdf(t, dof);
            assert!(
                (got - want).abs() < 1e-12 || close(got, want, 1e-10),
                "cdf({t}; {dof}) = {got}, scipy {want}"
            );
        }
    }

    #[test]
    fn t_quantile_matches_scipy() {
        for [p, dof, want] in reference().t_quantile {
            let got = t_quantile(p, dof);
            assert!(
                close(got, want, 1e-9),
                "ppf({p}; {dof}) = {got}, scipy {want}"
            );
        }
    }

    #[test]
    fn welch_matches_scipy_ttest_ind() {
        for case in reference().welch {
            let w = welch(&case.a, &case.b, 0.95).unwrap();
            let (sa, sb) = (summarize(&case.a).unwrap(), summarize(&case.b).unwrap());
            assert!(close(sa.mean, case.mean_a, 1e-12));
            assert!(close(sb.mean, case.mean_b, 1e-12));
            assert!(close(sa.sd, case.sd_a, 1e-10), "{} {}", sa.sd, case.sd_a);
            assert!(close(sb.sd, case.sd_b, 1e-10));
            assert!(close(w.t, case.t, 1e-10), "t {} vs {}", w.t, case.t);
            assert!(
                close(w.dof, case.dof, 1e-10),
                "dof {} vs {}",
                w.dof,
                case.dof
            );
            assert!(
                close(w.p, case.p, 1e-8) || (w.p - case.p).abs() < 1e-14,
                "p {} vs {}",
                w.p,
                case.p
            );
            assert!(
                close(w.ci_low, case.ci_low, 1e-8),
                "{} {}",
                w.ci_low,
                case.ci_low
            );
            assert!(close(w.ci_high, case.ci_high, 1e-8));
        }
    }

    #[test]
    fn textbook_values() {
        // t(0.975) for 1, 2, 10 and 30 degrees of freedom, from any printed table.
        assert!((t_quantile(0.975, 1.0) - 12.706_204_736).abs() < 1e-8);
        assert!((t_quantile(0.975, 2.0) - 4.302_652_730).abs() < 1e-8);
        assert!((t_quantile(0.975, 10.0) - 2.228_138_852).abs() < 1e-8);
        assert!((t_quantile(0.975, 30.0) - 2.042_272_456).abs() < 1e-8);
        // Cauchy (1 dof): CDF is 1/2 + atan(t)/π.
        for t in [-3.0, -0.5, 0.0, 0.7, 10.0] {
            let want = 0.5 + f64::atan(t) / std::f64::consts::PI;
            assert!((t_cdf(t, 1.0) - want).abs() < 1e-14);
        }
        assert_eq!(t_two_sided_p(0.0, 7.0), 1.0);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        assert!((ln_gamma(10.0) - 362_880f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn summary_std_pct_is_sample_sd_over_mean() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert!((s.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-15);
        assert!((s.std_pct - s.sd / 5.0 * 100.0).abs() < 1e-12);
        assert_eq!(summarize(&[]), None);
        let one = summarize(&[3.0]).unwrap();
        assert_eq!((one.sd, one.std_pct), (0.0, 0.0));
    }

    #[test]
    fn change_and_gain_follow_the_seeds() {
        // seed 004: 8.00 -> 9.00 is a -12.50 %gain for a latency, 9.60 -> 9.00 is +6.25.
        assert!((gain_pct(8.0, 9.0, false) + 12.5).abs() < 1e-12);
        assert!((gain_pct(9.6, 9.0, false) - 6.25).abs() < 1e-12);
        // seed 000's compare% is the relative change of the figure.
        assert!((change_pct(1.0, 0.9905) + 0.95).abs() < 1e-9);
        assert!((gain_pct(100.0, 110.0, true) - 10.0).abs() < 1e-12);
        assert_eq!(change_pct(0.0, 0.0), 0.0);
        assert_eq!(format!("{:.2}", gain_pct(8.0, 8.0, false)), "0.00");
        assert_eq!(format!("{:+.2}", change_pct(8.0, 8.0)), "+0.00");
        assert!(change_pct(0.0, 1.0).is_nan());
    }

    #[test]
    fn welch_degenerate_cases() {
        assert!(welch(&[1.0], &[1.0, 2.0], 0.95).is_none());
        let same = welch(&[3.0, 3.0, 3.0], &[3.0, 3.0], 0.95).unwrap();
        assert_eq!((same.t, same.p), (0.0, 1.0));
        let apart = welch(&[3.0, 3.0, 3.0], &[4.0, 4.0], 0.95).unwrap();
        assert_eq!((apart.t, apart.p), (f64::INFINITY, 0.0));
        assert_eq!((apart.ci_low, apart.ci_high), (1.0, 1.0));
        // One side without spread still gives a finite test.
        let one = welch(&[3.0, 3.0, 3.0], &[4.0, 5.0, 6.0], 0.95).unwrap();
        assert!(one.t.is_finite() && one.p > 0.0 && one.p < 1.0);
        assert!((one.dof - 2.0).abs() < 1e-12);
    }

    /// The edge cases of zeros and constant samples, as the functions above define them.
    #[test]
    fn zeros_and_constant_samples_are_defined() {
        // All zeros on both sides: no change, no spread, p = 1, not significant.
        let z = summarize(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!((z.mean, z.sd, z.std_pct), (0.0, 0.0, 0.0));
        let w = welch(&[0.0, 0.0, 0.0], &[0.0, 0.0, 0.0], 0.95).unwrap();
        assert_eq!((w.t, w.p, w.ci_low, w.ci_high), (0.0, 1.0, 0.0, 0.0));
        let c = change_pct(0.0, 0.0);
        assert_eq!(c, 0.0);
        assert!(!significant(Some(&w), c, 0.05));
        // A zero baseline against a constant non-zero B: the difference is exact (p = 0), but
        // the relative change is undefined, so the row is not marked.
        let w = welch(&[0.0, 0.0, 0.0], &[2.0, 2.0, 2.0], 0.95).unwrap();
        assert_eq!(w.p, 0.0);
        let c = change_pct(0.0, 2.0);
        assert!(c.is_nan());
        assert!(!significant(Some(&w), c, 0.05));
        // A zero baseline against a spread B: still undefined, still unmarked.
        let w = welch(&[0.0, 0.0], &[1.0, 3.0, 5.0], 0.95).unwrap();
        assert!(w.p > 0.0 && w.p < 1.0);
        assert!(!significant(Some(&w), change_pct(0.0, 3.0), 0.05));
        // Figures that spread around a zero mean have no std%.
        assert!(summarize(&[-1.0, 1.0]).unwrap().std_pct.is_nan());
        // Constant identical non-zero samples: 0 change, p = 1.
        let w = welch(&[5.0, 5.0], &[5.0, 5.0, 5.0], 0.95).unwrap();
        assert_eq!((w.t, w.p), (0.0, 1.0));
        assert!(!significant(Some(&w), change_pct(5.0, 5.0), 0.05));
        // Constant different non-zero samples: an exact difference, marked.
        let w = welch(&[4.0, 4.0], &[5.0, 5.0], 0.95).unwrap();
        assert!(significant(Some(&w), change_pct(4.0, 5.0), 0.05));
        // Figures that are not numbers: the test is NaN and never marked.
        let w = welch(&[1.0, f64::NAN], &[1.0, 2.0], 0.95).unwrap();
        assert!(w.p.is_nan() && w.ci_low.is_nan());
        assert!(!significant(Some(&w), 10.0, 0.05));
        let w = welch(&[1.0, f64::INFINITY], &[1.0, 2.0], 0.95).unwrap();
        assert!(w.p.is_nan());
        // No test at all (fewer than 2 runs): not marked.
        assert!(!significant(None, 10.0, 0.05));
    }

    #[test]
    fn mean_ci_half_width_uses_n_minus_1_dof() {
        let s = summarize(&[1.0, 2.0, 3.0]).unwrap();
        let want = 4.302_652_729_911_275 * 1.0 / 3f64.sqrt();
        assert!((mean_ci_half_width(&s, 0.95) - want).abs() < 1e-9);
        assert_eq!(mean_ci_half_width(&summarize(&[1.0]).unwrap(), 0.95), 0.0);
    }
}
