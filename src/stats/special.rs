//! The few distribution functions the intervals and the sequential looks need, written once:
//! the normal distribution and its quantile, Student's t and its quantile, and the density of
//! Fisher's F. Accurate to about 1e-10 where the callers use them (levels down to 1e-6).

use std::f64::consts::{PI, SQRT_2};

/// The standard normal distribution function (by the complementary error function, relative
/// error below 1e-12 in the tails the sequential looks use).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / SQRT_2)
}

/// The standard normal density.
pub fn normal_density(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// The standard normal quantile: the z with `normal_cdf(z) = p` (Acklam's rational
/// approximation, refined by one Halley step to the precision of `normal_cdf`).
pub fn normal_quantile(p: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "a quantile of {p}");
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    let error = normal_cdf(x) - p;
    let u = error / normal_density(x);
    x - u / (1.0 + x * u / 2.0)
}

/// The complementary error function: Q(1/2, x²) for x ≥ 0, the regularised upper incomplete
/// gamma function (accurate in the far tail, where 1 − erf(x) would cancel).
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    upper_gamma_half(x * x)
}

/// Q(1/2, y): the regularised upper incomplete gamma function at a = 1/2, by its series below
/// a + 1 and its continued fraction above (Numerical Recipes' gser and gcf).
fn upper_gamma_half(y: f64) -> f64 {
    let a = 0.5;
    if y <= 0.0 {
        return 1.0;
    }
    let log_prefix = -y + a * y.ln() - ln_gamma(a);
    if y < a + 1.0 {
        let (mut term, mut sum, mut n) = (1.0 / a, 1.0 / a, a);
        for _ in 0..500 {
            n += 1.0;
            term *= y / n;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        1.0 - sum * log_prefix.exp()
    } else {
        let tiny = 1e-300;
        let mut b = y + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..500 {
            let an = -f64::from(i) * (f64::from(i) - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < tiny { tiny } else { d };
            c = b + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        log_prefix.exp() * h
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms: relative error below 1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
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
    assert!(x > 0.0, "ln Γ of {x}");
    if x < 0.5 {
        // Reflection keeps the series in its accurate range.
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        sum += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// P(|T| ≤ t) for Student's t with a whole number `nu` of degrees of freedom, t ≥ 0: the closed
/// form of Abramowitz and Stegun 26.7.3–4 (a sum of `nu`/2 terms, no special function), for
/// the intervals that evaluate it many times.
pub fn t_central(t: f64, nu: u32) -> f64 {
    assert!(
        nu > 0 && t >= 0.0,
        "t central with {nu} degrees of freedom at {t}"
    );
    // θ = atan(t/√ν): sin θ and cos² θ without trigonometry.
    let nu_f = f64::from(nu);
    let cos2 = nu_f / (nu_f + t * t);
    let sin = t / (nu_f + t * t).sqrt();
    if nu % 2 == 1 {
        // (2/π)[θ + sin θ (cos θ + (2/3) cos³ θ + … + (2·4⋯(ν−3))/(1·3⋯(ν−2)) cos^(ν−2) θ)].
        let theta = (t / nu_f.sqrt()).atan();
        let (mut term, mut sum) = (cos2.sqrt(), 0.0);
        let mut k = 1;
        while k + 2 <= nu {
            sum += term;
            term *= cos2 * f64::from(k + 1) / f64::from(k + 2);
            k += 2;
        }
        (2.0 / PI * (theta + sin * sum)).min(1.0)
    } else {
        // sin θ [1 + (1/2) cos² θ + (1·3)/(2·4) cos⁴ θ + … + (1·3⋯(ν−3))/(2·4⋯(ν−2)) cos^(ν−2) θ].
        let (mut term, mut sum) = (1.0, 0.0);
        let mut k = 0;
        while k + 2 <= nu {
            sum += term;
            term *= cos2 * f64::from(k + 1) / f64::from(k + 2);
            k += 2;
        }
        (sin * sum).min(1.0)
    }
}

/// The density of Student's t with `nu` degrees of freedom.
pub fn t_density(t: f64, nu: f64) -> f64 {
    let log_norm = ln_gamma((nu + 1.0) / 2.0) - ln_gamma(nu / 2.0) - 0.5 * (nu * PI).ln();
    (log_norm - (nu + 1.0) / 2.0 * (t * t / nu).ln_1p()).exp()
}

/// The t ≥ 0 with P(|T| ≤ t) = `coverage` for a whole number `nu` of degrees of freedom
/// (Newton's method on `t_central` from the normal quantile, bisection where it overshoots).
pub fn t_central_quantile(coverage: f64, nu: u32) -> f64 {
    assert!(
        coverage > 0.0 && coverage < 1.0,
        "a central quantile of {coverage}"
    );
    let density_scale = {
        let nu = f64::from(nu);
        (ln_gamma((nu + 1.0) / 2.0) - ln_gamma(nu / 2.0) - 0.5 * (nu * PI).ln()).exp()
    };
    let central_density = |t: f64| {
        2.0 * density_scale * (1.0 + t * t / f64::from(nu)).powf(-(f64::from(nu) + 1.0) / 2.0)
    };
    let (mut low, mut high) = (0.0, 1.0);
    while t_central(high, nu) < coverage {
        (low, high) = (high, high * 2.0);
    }
    let mut t = normal_quantile((1.0 + coverage) / 2.0).clamp(low, high);
    for _ in 0..100 {
        let gap = t_central(t, nu) - coverage;
        if gap.abs() <= 1e-14 {
            break;
        }
        if gap < 0.0 {
            low = t;
        } else {
            high = t;
        }
        let step = t - gap / central_density(t);
        t = if step > low && step < high {
            step
        } else {
            (low + high) / 2.0
        };
        if high - low < 1e-13 * high {
            break;
        }
    }
    t
}

/// The log density of Fisher's F with `d1` and `d2` degrees of freedom at `f` > 0.
pub fn f_log_density(f: f64, d1: f64, d2: f64) -> f64 {
    assert!(
        f > 0.0 && d1 > 0.0 && d2 > 0.0,
        "F density at {f} ({d1}, {d2})"
    );
    let log_beta = ln_gamma(d1 / 2.0) + ln_gamma(d2 / 2.0) - ln_gamma((d1 + d2) / 2.0);
    0.5 * d1 * (d1 / d2).ln() + (0.5 * d1 - 1.0) * f.ln()
        - 0.5 * (d1 + d2) * (1.0 + d1 * f / d2).ln()
        - log_beta
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * b.abs().max(1e-300)
    }

    #[test]
    fn the_normal_distribution_matches_its_tables() {
        assert!(close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-12));
        assert!(close(normal_cdf(-3.090_232_306_167_813), 0.001, 1e-10));
        assert!(close(normal_cdf(-6.0), 9.865_876_450_376_946e-10, 1e-8));
        for p in [1e-7, 0.001, 0.0125, 0.3, 0.5, 0.9, 0.975, 0.999_99] {
            assert!(close(normal_cdf(normal_quantile(p)), p, 1e-10), "{p}");
        }
        assert!(close(normal_quantile(0.975), 1.959_963_984_540_054, 1e-12));
    }

    #[test]
    fn gamma_matches_its_tables() {
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-14));
        assert!(close(ln_gamma(0.5), PI.sqrt().ln(), 1e-14));
        assert!(close(ln_gamma(0.1), 9.513_507_698_668_732f64.ln(), 1e-13));
    }

    #[test]
    fn t_matches_its_tables() {
        // Two-sided 95% points, and Cauchy's P(|T| ≤ 1) = 1/2 at one degree of freedom.
        for (nu, t) in [
            (2, 4.302_652_729_749_464),
            (11, 2.200_985_160_082_949),
            (23, 2.068_657_610_419_041),
        ] {
            assert!(close(t_central(t, nu), 0.95, 1e-12), "{nu}");
            assert!(close(t_central_quantile(0.95, nu), t, 1e-10), "{nu}");
        }
        assert!(close(t_central(1.0, 1), 0.5, 1e-12));
        for nu in [1, 2, 3, 7, 11, 23, 47] {
            for coverage in [0.5, 0.95, 0.999, 1.0 - 1e-9] {
                let t = t_central_quantile(coverage, nu);
                assert!(
                    (t_central(t, nu) - coverage).abs() < 1e-12,
                    "{nu} {coverage}"
                );
            }
        }
        assert!(close(t_density(0.0, 1.0), 1.0 / PI, 1e-12));
    }

    #[test]
    fn the_f_density_integrates_to_its_tail() {
        // F(2, 9): P(F > 4.2565) = 0.05, by the density integrated from 0.
        let (d1, d2, upper) = (2.0, 9.0, 4.256_494_729_093_748);
        let steps = 200_000;
        let h = upper / f64::from(steps);
        let mut integral = 0.0;
        for i in 0..steps {
            let f = (f64::from(i) + 0.5) * h;
            integral += f_log_density(f, d1, d2).exp() * h;
        }
        assert!(close(integral, 0.95, 1e-6), "{integral}");
    }
}
