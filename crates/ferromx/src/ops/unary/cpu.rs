//! CPU kernels of the unary elementwise operators.

use super::UnaryOp;
use crate::dtype::DType;
use crate::engine::OpFailure;
use crate::fusion::tile::{InRef, OutRef, TileElem};
use crate::opdef::OpCall;
use crate::ops::binary::arith::Arith;
use crate::ops::par::map1;
use crate::storage::Kernel;
use crate::{with_dtype, with_float_dtype};
use num_traits::Float;

/// The kernel slot of every unary operator: applies the definition's
/// function to input 0, writing output 0 (same dtype).
pub(crate) fn run(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    // A unary definition names its function; an operator naming one by a
    // parameter (`Activation`) carries its code in `ints[0]`.
    let op = call
        .def
        .unary_op()
        .or_else(|| call.ints.first().and_then(|&c| super::DEFS.get(c as usize)).and_then(|d| d.unary_op()))
        .ok_or_else(|| OpFailure::new(crate::engine::ErrorKind::Runtime, "not a unary operator"))?;
    let dt = k.in_dtype(0);
    if dt == DType::F32 && has_fast_f32(op) {
        fast_f32(op, k.input::<f32>(0), k.output::<f32>(0));
        return Ok(());
    }
    with_float_dtype!(
        dt,
        T,
        float_kernel::<T>(op, k.input::<T>(0), k.output::<T>(0)),
        with_dtype!(dt, T, int_kernel::<T>(op, k.input::<T>(0), k.output::<T>(0)))
    );
    Ok(())
}

/// The same function on the front `m` elements of a fused kernel's tiles
/// (bitwise what [`run`] computes: the same per-element code).
pub(crate) fn run_tile(op: UnaryOp, x: &InRef, o: &mut OutRef, m: usize) {
    let dt = x.dtype();
    if dt == DType::F32 && has_fast_f32(op) {
        fast_f32(op, f32::of(x), &mut f32::get_mut(o)[..m]);
        return;
    }
    with_float_dtype!(
        dt,
        T,
        float_kernel::<T>(op, T::of(x), &mut T::get_mut(o)[..m]),
        with_dtype!(dt, T, int_kernel::<T>(op, T::of(x), &mut T::get_mut(o)[..m]))
    );
}

/// `op(x)` on one f64 element (derivative expressions, fusion, tests).
pub fn unary_scalar(op: UnaryOp, x: f64) -> f64 {
    let mut o = [0.0f64];
    float_kernel::<f64>(op, &[x], &mut o);
    o[0]
}

pub(crate) fn float_kernel<T: Float + Arith>(op: UnaryOp, x: &[T], o: &mut [T]) {
    use UnaryOp::*;
    let zero = T::zero();
    let one = T::one();
    match op {
        Negative => map1(x, o, move |v| -v),
        Abs => map1(x, o, move |v| v.abs()),
        // One select, not an if-chain: on data of mixed signs (ReLU's gradient, `abs`'s)
        // the branches mispredict about half the time and ran 20x slower. `v * 0 + 0` is
        // +0 for either zero and NaN for NaN.
        Sign | SignSte => map1(x, o, move |v| if v.abs() > zero { one.copysign(v) } else { v * zero + zero }),
        Square => map1(x, o, move |v| v * v),
        Relu => map1(x, o, move |v| if v > zero || Float::is_nan(v) { v } else { zero }),
        Sqrt => map1(x, o, move |v| v.sqrt()),
        Rsqrt => map1(x, o, move |v| one / v.sqrt()),
        Cbrt => map1(x, o, move |v| v.cbrt()),
        Rcbrt => map1(x, o, move |v| one / v.cbrt()),
        Exp => map1(x, o, move |v| v.exp()),
        Expm1 => map1(x, o, move |v| v.exp_m1()),
        Log => map1(x, o, move |v| v.ln()),
        Log2 => map1(x, o, move |v| v.log2()),
        Log10 => map1(x, o, move |v| v.log10()),
        Log1p => map1(x, o, move |v| v.ln_1p()),
        Sin => map1(x, o, move |v| v.sin()),
        Cos => map1(x, o, move |v| v.cos()),
        Tan => map1(x, o, move |v| v.tan()),
        Arcsin => map1(x, o, move |v| v.asin()),
        Arccos => map1(x, o, move |v| v.acos()),
        Arctan => map1(x, o, move |v| v.atan()),
        Sinh => map1(x, o, move |v| v.sinh()),
        Cosh => map1(x, o, move |v| v.cosh()),
        Tanh => map1(x, o, move |v| v.tanh()),
        Arcsinh => map1(x, o, move |v| v.asinh()),
        Arccosh => map1(x, o, move |v| v.acosh()),
        Arctanh => map1(x, o, move |v| v.atanh()),
        Floor => map1(x, o, move |v| v.floor()),
        Ceil => map1(x, o, move |v| v.ceil()),
        // MXNet: round sends halves away from zero; rint sends them down (n.5 -> n).
        Round | RoundSte => map1(x, o, move |v| v.round()),
        Rint => map1(x, o, move |v| {
            let f = v.floor();
            if v - f == T::from_f64(0.5) {
                f
            } else {
                v.round()
            }
        }),
        Fix | Trunc => map1(x, o, move |v| v.trunc()),
        Reciprocal => map1(x, o, move |v| one / v),
        Sigmoid => map1(x, o, move |v| one / (one + (-v).exp())),
        Softsign => map1(x, o, move |v| v / (one + v.abs())),
        Softrelu => map1(x, o, move |v| {
            // log(1 + exp(v)) without overflow
            if v > T::from_f64(20.0) {
                v
            } else {
                v.exp().ln_1p()
            }
        }),
        Erf => map1(x, o, move |v| T::from_f64(libm::erf(v.to_f64()))),
        Gamma => map1(x, o, move |v| T::from_f64(libm::tgamma(v.to_f64()))),
        Gammaln => map1(x, o, move |v| T::from_f64(libm::lgamma(v.to_f64()))),
        Erfinv => map1(x, o, move |v| T::from_f64(super::special::erfinv(v.to_f64()))),
        Digamma => map1(x, o, move |v| T::from_f64(super::special::digamma(v.to_f64()))),
        Trigamma => map1(x, o, move |v| T::from_f64(super::special::trigamma(v.to_f64()))),
        LogicalNot => map1(x, o, move |v| if v == zero { one } else { zero }),
        Degrees => map1(x, o, move |v| v.to_degrees()),
        Radians => map1(x, o, move |v| v.to_radians()),
    }
}

/// `e^x` for f32 over its whole range, in a form the compiler vectorises
/// with no scalar fix-up pass (that pass used to cost as much as the math).
///
/// Range reduction by `n = round(x·log2 e)` (magic-number rounding, no libm
/// call), a degree-6 minimax polynomial on `[-ln2/2, ln2/2]`, then the scale
/// `2^n` applied as two factors `2^(n/2)·2^(n-n/2)`, so that results in the
/// subnormal range (`x` in `[-104, -87]`) round once, like libm's, and
/// results past `f32::MAX` become infinity. The input is clamped to
/// `[-104, 89]`, beyond which the result is 0 or infinity anyway; NaN passes
/// through the compare-and-select clamp and stays NaN. Measured against f64
/// `exp` on every 7th f32 bit pattern: at most 1 ulp off, specials exact.
#[inline(always)]
pub(crate) fn exp_core(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
                                     // Compare-and-select rather than `clamp`: keeps NaN and vectorises well.
    #[allow(clippy::manual_clamp)]
    let xc = if x < -104.0 {
        -104.0
    } else if x > 89.0 {
        89.0
    } else {
        x
    };
    let t = xc * LOG2E + MAGIC;
    let n = t - MAGIC;
    let r = xc - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    // `t`'s low mantissa bits hold n (magic-number rounding): no float->int convert.
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let n1 = ni >> 1;
    let n2 = ni - n1;
    let s1 = f32::from_bits(((n1 + 127) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127) as u32) << 23);
    e * s1 * s2
}

/// Whether [`fast_f32`] has a kernel for `op`.
fn has_fast_f32(op: UnaryOp) -> bool {
    matches!(op, UnaryOp::Exp | UnaryOp::Sigmoid | UnaryOp::Relu)
}

/// f32 kernels with a faster implementation than the generic one.
fn fast_f32(op: UnaryOp, x: &[f32], o: &mut [f32]) {
    match op {
        UnaryOp::Exp => super::exp::exp_slice(x, o),
        // The exp covers the whole f32 range, so sigmoid is exact to f32
        // rounding at both tails and the whole loop vectorises.
        UnaryOp::Sigmoid => super::exp::sigmoid_slice(x, o),
        _ => map1(x, o, |v| if v > 0.0 || v.is_nan() { v } else { 0.0 }),
    }
}

fn int_kernel<T: Arith>(op: UnaryOp, x: &[T], o: &mut [T]) {
    use UnaryOp::*;
    let zero = T::default();
    let one = T::from_i64(1);
    match op {
        Negative => map1(x, o, move |v| v.neg()),
        Abs => map1(x, o, move |v| v.abs_()),
        Sign | SignSte => map1(x, o, move |v| {
            if v > zero {
                one
            } else if v < zero {
                T::from_i64(-1)
            } else {
                zero
            }
        }),
        Square => map1(x, o, move |v| v.mul(v)),
        Relu => map1(x, o, move |v| if v > zero { v } else { zero }),
        LogicalNot => map1(x, o, move |v| if v == zero { one } else { zero }),
        _ => map1(x, o, move |v| v),
    }
}
