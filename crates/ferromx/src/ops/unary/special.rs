//! Special functions the unary operators need beyond `libm`: the inverse error
//! function and the digamma/trigamma functions (the derivatives of `gammaln`).
//!
//! All work in f64; the kernels round once to the array's dtype.

use std::f64::consts::PI;

/// `erf⁻¹(y)`: Giles' single-precision approximation ("Approximating the erfinv
/// function", GPU Computing Gems, 2011) as the start, then two Newton steps on
/// `erf(z) - y`, which bring it to double precision. `±1` give `±∞`, `|y| > 1`
/// and NaN give NaN (as MXNet and SciPy).
pub(crate) fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let z0 = if w < 5.0 {
        let w = w - 2.5;
        let c = [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ];
        c.iter().fold(0.0, |p, &k| p * w + k)
    } else {
        let w = w.sqrt() - 3.0;
        let c = [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ];
        c.iter().fold(0.0, |p, &k| p * w + k)
    } * y;
    let mut z = z0;
    for _ in 0..2 {
        let slope = std::f64::consts::FRAC_2_SQRT_PI * (-z * z).exp();
        if slope == 0.0 {
            break;
        }
        z -= (libm::erf(z) - y) / slope;
    }
    z
}

/// ψ(x) = d/dx ln Γ(x). Reflection for x < 0.5 (`ψ(1-x) - π/tan(πx)`), the
/// recurrence `ψ(x) = ψ(x+1) - 1/x` up to x ≥ 10, then the asymptotic series.
/// Poles (0, -1, -2, ...) give NaN, except +0 which gives -∞ (as SciPy).
pub(crate) fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == 0.0 {
        return if x.is_sign_negative() { f64::INFINITY } else { f64::NEG_INFINITY };
    }
    if x < 0.5 {
        if x == x.floor() {
            return f64::NAN;
        }
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let r = 1.0 / (x * x);
    // Bernoulli terms B2k / (2k x^2k), k = 1..6
    let series = r
        * (1.0 / 12.0
            - r * (1.0 / 120.0 - r * (1.0 / 252.0 - r * (1.0 / 240.0 - r * (1.0 / 132.0 - r * 691.0 / 32760.0)))));
    acc + x.ln() - 0.5 / x - series
}

/// ψ₁(x) = dψ/dx. Reflection for x < 0.5 (`π²/sin²(πx) - ψ₁(1-x)`), the
/// recurrence `ψ₁(x) = ψ₁(x+1) + 1/x²` up to x ≥ 10, then the asymptotic series.
/// Poles give +∞ at 0 and NaN at the negative integers.
pub(crate) fn trigamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    if x < 0.5 {
        if x == x.floor() {
            return f64::NAN;
        }
        let s = (PI * x).sin();
        return PI * PI / (s * s) - trigamma(1.0 - x);
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let r = 1.0 / (x * x);
    // 1/x + 1/(2x²) + Σ B2k / x^(2k+1), k = 1..5
    let series = (1.0 + r * (1.0 / 6.0 - r * (1.0 / 30.0 - r * (1.0 / 42.0 - r * (1.0 / 30.0 - r * 5.0 / 66.0))))) / x;
    acc + series + 0.5 * r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digamma_matches_known_values() {
        // ψ(1) = -γ, ψ(0.5) = -γ - 2 ln 2, ψ(n+1) = ψ(n) + 1/n
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 1e-14);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 1e-14);
        assert!((digamma(4.0) - (-euler + 1.0 + 0.5 + 1.0 / 3.0)).abs() < 1e-14);
        // reflection: ψ(1-x) - ψ(x) = π cot(πx)
        let x = -1.3;
        assert!((digamma(1.0 - x) - digamma(x) - PI / (PI * x).tan()).abs() < 1e-12);
        assert!(digamma(-2.0).is_nan());
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
        assert!((digamma(1e6) - (1e6f64.ln() - 0.5e-6)).abs() < 1e-12);
    }

    #[test]
    fn trigamma_matches_known_values() {
        // ψ₁(1) = π²/6, ψ₁(0.5) = π²/2
        assert!((trigamma(1.0) - PI * PI / 6.0).abs() < 1e-13);
        assert!((trigamma(0.5) - PI * PI / 2.0).abs() < 1e-13);
        let x = 2.7;
        let h = 1e-5;
        let num = (digamma(x + h) - digamma(x - h)) / (2.0 * h);
        assert!((trigamma(x) - num).abs() < 1e-8);
        assert!((trigamma(-0.4) - (PI * PI / (PI * 0.4).sin().powi(2) - trigamma(1.4))).abs() < 1e-12);
        assert!(trigamma(-3.0).is_nan());
    }

    #[test]
    fn erfinv_inverts_erf() {
        for &y in &[-0.999_999, -0.9, -0.5, -1e-9, 0.0, 0.1, 0.5, 0.75, 0.99, 0.999_999_9] {
            let z = erfinv(y);
            assert!((libm::erf(z) - y).abs() <= 2e-16 * (1.0 + y.abs() * 2.0), "erf(erfinv({y})) = {}", libm::erf(z));
        }
        assert!((erfinv(0.5) - 0.476_936_276_204_469_9).abs() < 1e-15);
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert_eq!(erfinv(-1.0), f64::NEG_INFINITY);
        assert!(erfinv(1.5).is_nan() && erfinv(f64::NAN).is_nan());
    }
}
