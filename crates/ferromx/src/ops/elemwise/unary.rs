//! Unary elementwise operators and their gradients.

use super::arith::Arith;
use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::par::map1;
use crate::ops::{self, BinOp};
use crate::storage::push_kernel;
use crate::{with_dtype, with_float_dtype};
use num_traits::Float;

/// A unary elementwise operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Negative,
    Abs,
    Sign,
    Square,
    Relu,
    Sqrt,
    Rsqrt,
    Cbrt,
    Exp,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sin,
    Cos,
    Tan,
    Arcsin,
    Arccos,
    Arctan,
    Sinh,
    Cosh,
    Tanh,
    Arcsinh,
    Arccosh,
    Arctanh,
    Floor,
    Ceil,
    Round,
    Rint,
    Fix,
    Trunc,
    Reciprocal,
    Sigmoid,
    Softsign,
    Softrelu,
    Erf,
    Gamma,
    Gammaln,
    LogicalNot,
    Degrees,
    Radians,
}

impl UnaryOp {
    /// MXNet operator name.
    pub fn name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Negative => "negative",
            Abs => "abs",
            Sign => "sign",
            Square => "square",
            Relu => "relu",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Cbrt => "cbrt",
            Exp => "exp",
            Expm1 => "expm1",
            Log => "log",
            Log2 => "log2",
            Log10 => "log10",
            Log1p => "log1p",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Arcsin => "arcsin",
            Arccos => "arccos",
            Arctan => "arctan",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Arcsinh => "arcsinh",
            Arccosh => "arccosh",
            Arctanh => "arctanh",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Rint => "rint",
            Fix => "fix",
            Trunc => "trunc",
            Reciprocal => "reciprocal",
            Sigmoid => "sigmoid",
            Softsign => "softsign",
            Softrelu => "softrelu",
            Erf => "erf",
            Gamma => "gamma",
            Gammaln => "gammaln",
            LogicalNot => "logical_not",
            Degrees => "degrees",
            Radians => "radians",
        }
    }

    /// Every unary operator.
    pub const ALL: [UnaryOp; 42] = {
        use UnaryOp::*;
        [
            Negative, Abs, Sign, Square, Relu, Sqrt, Rsqrt, Cbrt, Exp, Expm1, Log, Log2, Log10, Log1p, Sin, Cos, Tan,
            Arcsin, Arccos, Arctan, Sinh, Cosh, Tanh, Arcsinh, Arccosh, Arctanh, Floor, Ceil, Round, Rint, Fix, Trunc,
            Reciprocal, Sigmoid, Softsign, Softrelu, Erf, Gamma, Gammaln, LogicalNot, Degrees, Radians,
        ]
    };

    /// Ops that keep an integer dtype (everything else computes in float).
    fn int_ok(self) -> bool {
        use UnaryOp::*;
        matches!(self, Negative | Abs | Sign | Square | Relu | LogicalNot | Floor | Ceil | Round | Rint | Fix | Trunc)
    }
}

fn float_kernel<T: Float + Arith>(op: UnaryOp, x: &[T], o: &mut [T]) {
    use UnaryOp::*;
    let zero = T::zero();
    let one = T::one();
    match op {
        Negative => map1(x, o, |v| -v),
        Abs => map1(x, o, |v| v.abs()),
        Sign => map1(x, o, |v| {
            if v > zero {
                one
            } else if v < zero {
                -one
            } else if v == zero {
                zero
            } else {
                v
            }
        }),
        Square => map1(x, o, |v| v * v),
        Relu => map1(x, o, |v| if v > zero || Float::is_nan(v) { v } else { zero }),
        Sqrt => map1(x, o, |v| v.sqrt()),
        Rsqrt => map1(x, o, |v| one / v.sqrt()),
        Cbrt => map1(x, o, |v| v.cbrt()),
        Exp => map1(x, o, |v| v.exp()),
        Expm1 => map1(x, o, |v| v.exp_m1()),
        Log => map1(x, o, |v| v.ln()),
        Log2 => map1(x, o, |v| v.log2()),
        Log10 => map1(x, o, |v| v.log10()),
        Log1p => map1(x, o, |v| v.ln_1p()),
        Sin => map1(x, o, |v| v.sin()),
        Cos => map1(x, o, |v| v.cos()),
        Tan => map1(x, o, |v| v.tan()),
        Arcsin => map1(x, o, |v| v.asin()),
        Arccos => map1(x, o, |v| v.acos()),
        Arctan => map1(x, o, |v| v.atan()),
        Sinh => map1(x, o, |v| v.sinh()),
        Cosh => map1(x, o, |v| v.cosh()),
        Tanh => map1(x, o, |v| v.tanh()),
        Arcsinh => map1(x, o, |v| v.asinh()),
        Arccosh => map1(x, o, |v| v.acosh()),
        Arctanh => map1(x, o, |v| v.atanh()),
        Floor => map1(x, o, |v| v.floor()),
        Ceil => map1(x, o, |v| v.ceil()),
        // MXNet: round sends halves away from zero; rint sends them down (n.5 -> n).
        Round => map1(x, o, |v| v.round()),
        Rint => map1(x, o, |v| {
            let f = v.floor();
            if v - f == T::from_f64(0.5) {
                f
            } else {
                v.round()
            }
        }),
        Fix | Trunc => map1(x, o, |v| v.trunc()),
        Reciprocal => map1(x, o, |v| one / v),
        Sigmoid => map1(x, o, |v| one / (one + (-v).exp())),
        Softsign => map1(x, o, |v| v / (one + v.abs())),
        Softrelu => map1(x, o, |v| {
            // log(1 + exp(v)) without overflow
            if v > T::from_f64(20.0) {
                v
            } else {
                v.exp().ln_1p()
            }
        }),
        Erf => map1(x, o, |v| T::from_f64(libm::erf(v.to_f64()))),
        Gamma => map1(x, o, |v| T::from_f64(libm::tgamma(v.to_f64()))),
        Gammaln => map1(x, o, |v| T::from_f64(libm::lgamma(v.to_f64()))),
        LogicalNot => map1(x, o, |v| if v == zero { one } else { zero }),
        Degrees => map1(x, o, |v| v.to_degrees()),
        Radians => map1(x, o, |v| v.to_radians()),
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
fn exp_core(x: f32) -> f32 {
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
        UnaryOp::Exp => map1(x, o, exp_core),
        // exp_core covers the whole f32 range, so sigmoid is exact to f32
        // rounding at both tails and the whole loop vectorises.
        UnaryOp::Sigmoid => map1(x, o, |v| 1.0 / (1.0 + exp_core(-v))),
        _ => map1(x, o, |v| if v > 0.0 || v.is_nan() { v } else { 0.0 }),
    }
}

fn int_kernel<T: Arith>(op: UnaryOp, x: &[T], o: &mut [T]) {
    use UnaryOp::*;
    let zero = T::default();
    let one = T::from_i64(1);
    match op {
        Negative => map1(x, o, |v| v.neg()),
        Abs => map1(x, o, |v| v.abs_()),
        Sign => map1(x, o, |v| {
            if v > zero {
                one
            } else if v < zero {
                T::from_i64(-1)
            } else {
                zero
            }
        }),
        Square => map1(x, o, |v| v.mul(v)),
        Relu => map1(x, o, |v| if v > zero { v } else { zero }),
        LogicalNot => map1(x, o, |v| if v == zero { one } else { zero }),
        _ => map1(x, o, |v| v),
    }
}

/// Applies a unary operator. Integer inputs of float-only operators are cast to float32 first.
pub fn unary(op: UnaryOp, x: &NDArray) -> Result<NDArray> {
    let x = if !op.int_ok() && !x.dtype().is_float() { ops::astype(x, DType::F32)? } else { x.clone() };
    let dt = x.dtype();
    if dt == DType::Bool && !matches!(op, UnaryOp::LogicalNot | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Square) {
        return Err(Error::dtype(op.name(), "operator is not defined for bool arrays"));
    }
    let out = NDArray::empty(x.shape().clone(), dt, x.ctx())?;
    if x.size() > 0 {
        push_kernel(op.name(), vec![x.view()], vec![out.view()], move |k| {
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
        });
    }
    if needs_record(&[&x]) {
        let (xc, oc) = (x.clone(), out.clone());
        record(op.name(), &[&x], &[&out], Box::new(move |g| Ok(vec![unary_grad(op, &xc, &oc, &g[0])?])));
    }
    Ok(out)
}

fn unary_grad(op: UnaryOp, x: &NDArray, y: &NDArray, g: &NDArray) -> Result<Option<NDArray>> {
    use ops::{div, mul, scalar, scalar_r, sub};
    use UnaryOp::*;
    let u = |o: UnaryOp, a: &NDArray| unary(o, a);
    let d = match op {
        Negative => return Ok(Some(ops::neg(g)?)),
        Abs => u(Sign, x)?,
        Sign | Floor | Ceil | Round | Rint | Fix | Trunc | LogicalNot => return Ok(Some(ops::zeros_like(g)?)),
        Square => scalar(BinOp::Mul, x, 2.0)?,
        Relu => scalar(BinOp::Gt, x, 0.0)?,
        Sqrt => scalar_r(BinOp::Div, &scalar(BinOp::Mul, y, 2.0)?, 1.0)?,
        Rsqrt => scalar(BinOp::Mul, &mul(y, &mul(y, y)?)?, -0.5)?,
        Cbrt => scalar_r(BinOp::Div, &scalar(BinOp::Mul, &mul(y, y)?, 3.0)?, 1.0)?,
        Exp => y.clone(),
        Expm1 => scalar(BinOp::Add, y, 1.0)?,
        Log => u(Reciprocal, x)?,
        Log2 => scalar_r(BinOp::Div, &scalar(BinOp::Mul, x, std::f64::consts::LN_2)?, 1.0)?,
        Log10 => scalar_r(BinOp::Div, &scalar(BinOp::Mul, x, std::f64::consts::LN_10)?, 1.0)?,
        Log1p => scalar_r(BinOp::Div, &scalar(BinOp::Add, x, 1.0)?, 1.0)?,
        Sin => u(Cos, x)?,
        Cos => ops::neg(&u(Sin, x)?)?,
        Tan => scalar(BinOp::Add, &mul(y, y)?, 1.0)?,
        Arcsin => u(Rsqrt, &scalar_r(BinOp::Sub, &mul(x, x)?, 1.0)?)?,
        Arccos => ops::neg(&u(Rsqrt, &scalar_r(BinOp::Sub, &mul(x, x)?, 1.0)?)?)?,
        Arctan => scalar_r(BinOp::Div, &scalar(BinOp::Add, &mul(x, x)?, 1.0)?, 1.0)?,
        Sinh => u(Cosh, x)?,
        Cosh => u(Sinh, x)?,
        Tanh => scalar_r(BinOp::Sub, &mul(y, y)?, 1.0)?,
        Arcsinh => u(Rsqrt, &scalar(BinOp::Add, &mul(x, x)?, 1.0)?)?,
        Arccosh => u(Rsqrt, &scalar(BinOp::Sub, &mul(x, x)?, 1.0)?)?,
        Arctanh => scalar_r(BinOp::Div, &scalar_r(BinOp::Sub, &mul(x, x)?, 1.0)?, 1.0)?,
        Reciprocal => ops::neg(&mul(y, y)?)?,
        Sigmoid => mul(y, &scalar_r(BinOp::Sub, y, 1.0)?)?,
        Softsign => {
            let t = scalar(BinOp::Add, &u(Abs, x)?, 1.0)?;
            scalar_r(BinOp::Div, &mul(&t, &t)?, 1.0)?
        }
        Softrelu => u(Sigmoid, x)?,
        Erf => scalar(BinOp::Mul, &u(Exp, &ops::neg(&mul(x, x)?)?)?, 2.0 / std::f64::consts::PI.sqrt())?,
        Gamma | Gammaln => {
            return Err(Error::value(op.name(), "gradient is not implemented for this operator"));
        }
        Degrees => return Ok(Some(scalar(BinOp::Mul, g, 180.0 / std::f64::consts::PI)?)),
        Radians => return Ok(Some(scalar(BinOp::Mul, g, std::f64::consts::PI / 180.0)?)),
    };
    let _ = sub;
    let _ = div;
    Ok(Some(mul(g, &d)?))
}
