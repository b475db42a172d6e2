//! `e^x` over float32 slices: one vector routine for every element.
//!
//! Why a routine of its own: `exp` is the transcendental of the elementwise
//! code users write most (`exp(..)` chains, `sigmoid`), and the scalar form
//! [`exp_core`] that LLVM vectorises costs about 35 vector instructions per 16
//! elements: Rust never contracts `a * b + c`, so each polynomial step is two,
//! and scaling by `2^n` without AVX-512 takes integer shifts and two multiplies
//! (so subnormal results round once). On AVX-512 this routine takes 14:
//! `vrndscaleps` for `n`, two FMAs for the reduced argument, six for the
//! polynomial and `vscalefps` for `p · 2^n`, which rounds once (subnormal
//! results included) and overflows to infinity. On the 16M-element eager `exp`
//! the vector unit, not memory, was the limit (7 ms against 3.5 ms for a
//! `x * 2` pass in the same run).
//!
//! Every element of a slice takes the same path (the tail through a masked
//! load), so the eager kernel and a fused tile of any length give bitwise the
//! same values. Without AVX-512, [`exp_core`] per element, as before.

use super::cpu::exp_core;
use crate::ops::par::{chunked, map1, PAR_MIN};

/// `o[i] = e^x[i]`, split across cores when large.
pub(crate) fn exp_slice(x: &[f32], o: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if split(x, o, v4::run) {
        return;
    }
    map1(x, o, exp_core);
}

/// `o[i] = 1 / (1 + e^-x[i])` with the same `exp` as [`exp_slice`].
pub(crate) fn sigmoid_slice(x: &[f32], o: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if split(x, o, v4::run_neg) {
        return;
    }
    map1(x, o, |v| 1.0 / (1.0 + exp_core(-v)));
}

/// Runs the AVX-512 routine `f` over `x` into `o`, split across cores when large;
/// `false` (nothing written) when the CPU lacks AVX-512.
#[cfg(target_arch = "x86_64")]
fn split(x: &[f32], o: &mut [f32], f: fn(pulp::x86::V4, &[f32], &mut [f32])) -> bool {
    let Some(v4) = pulp::x86::V4::try_new() else { return false };
    chunked(o, PAR_MIN, |s, oc| {
        let n = oc.len();
        f(v4, &x[s..s + n], oc);
    });
    true
}

#[cfg(target_arch = "x86_64")]
pub(crate) use v4::{exp16, sigmoid16};

#[cfg(target_arch = "x86_64")]
mod v4 {
    use pulp::x86::V4;
    use pulp::{cast, Simd, WithSimd};
    use std::arch::x86_64::__m512;
    use std::marker::PhantomData;

    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    /// Round to nearest (even), exceptions suppressed.
    const NEAREST: i32 = 0x08;

    /// `e^x` on 16 lanes (see the module docs). The clamp keeps NaN (`max`/`min`
    /// return their second operand when either is NaN) and bounds `n`, so `x - n·ln 2`
    /// is finite; past the bounds the result is 0 or infinity anyway.
    #[inline(always)]
    pub(crate) fn exp16(v: V4, x: __m512) -> __m512 {
        let f = v.avx512f;
        let s = |c: f32| f._mm512_set1_ps(c);
        let x = f._mm512_max_ps(s(-104.0), x);
        let x = f._mm512_min_ps(s(89.0), x);
        let n = f._mm512_roundscale_ps::<NEAREST>(f._mm512_mul_ps(x, s(LOG2E)));
        let r = f._mm512_fnmadd_ps(n, s(LN2_HI), x);
        let r = f._mm512_fnmadd_ps(n, s(LN2_LO), r);
        let mut p = s(1.987_569_1e-4);
        p = f._mm512_fmadd_ps(p, r, s(1.398_199_9e-3));
        p = f._mm512_fmadd_ps(p, r, s(8.333_452e-3));
        p = f._mm512_fmadd_ps(p, r, s(4.166_579_6e-2));
        p = f._mm512_fmadd_ps(p, r, s(1.666_666_5e-1));
        p = f._mm512_fmadd_ps(p, r, s(0.5));
        let e = f._mm512_fmadd_ps(p, f._mm512_mul_ps(r, r), r);
        let e = f._mm512_add_ps(e, s(1.0));
        f._mm512_scalef_ps(e, n)
    }

    /// `1 / (1 + exp16(0 - a))` on 16 lanes: the f32 sigmoid, eager and fused.
    #[inline(always)]
    pub(crate) fn sigmoid16(v: V4, a: __m512) -> __m512 {
        let f = v.avx512f;
        let one = f._mm512_set1_ps(1.0);
        let e = exp16(v, f._mm512_sub_ps(f._mm512_setzero_ps(), a));
        f._mm512_div_ps(one, f._mm512_add_ps(one, e))
    }

    /// `exp16` over `x`, into `o` (same length).
    #[inline(always)]
    pub(super) fn run(v: V4, x: &[f32], o: &mut [f32]) {
        Simd::vectorize(v, Map { v, x, o, f: PhantomData::<Exp> });
    }

    /// `1 / (1 + exp16(-x))` over `x`, into `o`.
    #[inline(always)]
    pub(super) fn run_neg(v: V4, x: &[f32], o: &mut [f32]) {
        Simd::vectorize(v, Map { v, x, o, f: PhantomData::<Sigmoid> });
    }

    /// A function on 16 lanes. A trait method marked `inline(always)`, not a
    /// closure or a function item: those are called through `Fn::call` shims that
    /// were not inlined, and the intrinsics inside them became calls.
    trait Lanes {
        fn apply(v: V4, a: __m512) -> __m512;
    }

    struct Exp;
    impl Lanes for Exp {
        #[inline(always)]
        fn apply(v: V4, a: __m512) -> __m512 {
            exp16(v, a)
        }
    }

    /// `1 / (1 + e^-a)`.
    struct Sigmoid;
    impl Lanes for Sigmoid {
        #[inline(always)]
        fn apply(v: V4, a: __m512) -> __m512 {
            sigmoid16(v, a)
        }
    }

    /// A lane-wise map over a slice: whole vectors, then a masked tail. Run
    /// through `Simd::vectorize`, so `with_simd` and everything it inlines is
    /// compiled with AVX-512 enabled (a closure would not be, and each
    /// intrinsic would become a call).
    struct Map<'a, F> {
        v: V4,
        x: &'a [f32],
        o: &'a mut [f32],
        f: PhantomData<F>,
    }

    impl<F: Lanes> WithSimd for Map<'_, F> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) {
            let Map { v, x, o, .. } = self;
            let (xs, xt) = x.as_chunks::<16>();
            let (os, ot) = o.as_chunks_mut::<16>();
            for (xi, oi) in xs.iter().zip(os) {
                *oi = cast(F::apply(v, cast(*xi)));
            }
            if !xt.is_empty() {
                let a: __m512 = cast(v.partial_load_f32s(xt));
                v.partial_store_f32s(ot, cast(F::apply(v, a)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units in the last place between `a` and the correctly rounded `e^x`.
    fn ulps(a: f32, x: f32) -> f64 {
        let want = (x as f64).exp();
        let w = want as f32;
        if a == w || (a.is_nan() && w.is_nan()) {
            return 0.0;
        }
        let ulp = if w == 0.0 || w.is_infinite() {
            f32::from_bits(1) as f64
        } else {
            let b = w.abs().to_bits();
            (f32::from_bits(b + 1) as f64) - (f32::from_bits(b) as f64)
        };
        ((a as f64) - want).abs() / ulp
    }

    #[test]
    fn exp_slice_is_within_one_ulp_over_the_whole_range() {
        // Every 251st bit pattern of both signs, plus the specials and bounds.
        let mut xs: Vec<f32> = (0..u32::MAX / 251).map(|i| f32::from_bits(i * 251)).filter(|x| !x.is_nan()).collect();
        xs.extend([0.0, -0.0, 1.0, -1.0, 88.72, 88.73, -87.3, -103.9, -104.5, 89.5, f32::MAX, f32::MIN]);
        xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, -f32::MIN_POSITIVE]);
        let mut o = vec![0.0f32; xs.len()];
        exp_slice(&xs, &mut o);
        let worst = xs.iter().zip(&o).map(|(&x, &y)| ulps(y, x)).fold(0.0, f64::max);
        assert!(worst <= 1.0, "exp is {worst} ulp off");
        assert_eq!(o[xs.len() - 4], f32::INFINITY);
        assert_eq!(o[xs.len() - 3], 0.0);
        let mut nan = [0.0f32; 3];
        exp_slice(&[f32::NAN, 1.0, -f32::NAN], &mut nan);
        assert!(nan[0].is_nan() && nan[2].is_nan());
        assert_eq!(nan[1], std::f32::consts::E);
    }

    #[test]
    fn a_slice_and_its_pieces_agree_bitwise() {
        // A fused tile sees a piece of the array; the eager kernel the whole.
        let xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.173).collect();
        let mut whole = vec![0.0f32; xs.len()];
        exp_slice(&xs, &mut whole);
        let mut s = vec![0.0f32; xs.len()];
        sigmoid_slice(&xs, &mut s);
        for cut in [1, 7, 16, 250, 999] {
            let mut a = vec![0.0f32; xs.len()];
            let (lo, hi) = a.split_at_mut(cut);
            exp_slice(&xs[..cut], lo);
            exp_slice(&xs[cut..], hi);
            assert!(a.iter().zip(&whole).all(|(p, q)| p.to_bits() == q.to_bits()), "cut at {cut}");
            let mut b = vec![0.0f32; xs.len()];
            let (lo, hi) = b.split_at_mut(cut);
            sigmoid_slice(&xs[..cut], lo);
            sigmoid_slice(&xs[cut..], hi);
            assert!(b.iter().zip(&s).all(|(p, q)| p.to_bits() == q.to_bits()), "sigmoid cut at {cut}");
        }
        for (&x, &y) in xs.iter().zip(&s) {
            let want = 1.0 / (1.0 + (-(x as f64)).exp());
            assert!(((y as f64) - want).abs() <= 2e-7 * want.max(1e-30) + 1e-45, "sigmoid({x}) = {y}");
        }
    }
}
