//! Binary elementwise operators with NumPy broadcasting, their scalar forms,
//! in-place forms and gradients.

use super::arith::Arith;
use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::par::{chunked, map1, map2, PAR_MIN};
use crate::ops::{self, check_ctx, sum_to};
use crate::shape::Shape;
use crate::storage::push_kernel;
use crate::with_dtype;
use smallvec::SmallVec;

/// A binary elementwise operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
    /// a % b (Python semantics)
    Mod,
    /// a ** b
    Pow,
    /// elementwise max
    Max,
    /// elementwise min
    Min,
    /// sqrt(a² + b²)
    Hypot,
    /// a == b (1 or 0)
    Eq,
    /// a != b
    Ne,
    /// a > b
    Gt,
    /// a >= b
    Ge,
    /// a < b
    Lt,
    /// a <= b
    Le,
    /// logical and
    And,
    /// logical or
    Or,
    /// logical xor
    Xor,
}

impl BinOp {
    /// MXNet operator name.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "broadcast_add",
            BinOp::Sub => "broadcast_sub",
            BinOp::Mul => "broadcast_mul",
            BinOp::Div => "broadcast_div",
            BinOp::Mod => "broadcast_mod",
            BinOp::Pow => "broadcast_power",
            BinOp::Max => "broadcast_maximum",
            BinOp::Min => "broadcast_minimum",
            BinOp::Hypot => "broadcast_hypot",
            BinOp::Eq => "broadcast_equal",
            BinOp::Ne => "broadcast_not_equal",
            BinOp::Gt => "broadcast_greater",
            BinOp::Ge => "broadcast_greater_equal",
            BinOp::Lt => "broadcast_lesser",
            BinOp::Le => "broadcast_lesser_equal",
            BinOp::And => "broadcast_logical_and",
            BinOp::Or => "broadcast_logical_or",
            BinOp::Xor => "broadcast_logical_xor",
        }
    }
    /// Name of the scalar form.
    pub fn scalar_name(self) -> &'static str {
        match self {
            BinOp::Add => "_plus_scalar",
            BinOp::Sub => "_minus_scalar",
            BinOp::Mul => "_mul_scalar",
            BinOp::Div => "_div_scalar",
            BinOp::Mod => "_mod_scalar",
            BinOp::Pow => "_power_scalar",
            BinOp::Max => "_maximum_scalar",
            BinOp::Min => "_minimum_scalar",
            BinOp::Hypot => "_hypot_scalar",
            BinOp::Eq => "_equal_scalar",
            BinOp::Ne => "_not_equal_scalar",
            BinOp::Gt => "_greater_scalar",
            BinOp::Ge => "_greater_equal_scalar",
            BinOp::Lt => "_lesser_scalar",
            BinOp::Le => "_lesser_equal_scalar",
            BinOp::And => "_logical_and_scalar",
            BinOp::Or => "_logical_or_scalar",
            BinOp::Xor => "_logical_xor_scalar",
        }
    }
    fn differentiable(self) -> bool {
        matches!(
            self,
            BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::Div
                | BinOp::Mod
                | BinOp::Pow
                | BinOp::Max
                | BinOp::Min
                | BinOp::Hypot
        )
    }
}

#[inline(always)]
fn b2t<T: Elem>(c: bool) -> T {
    T::from_i64(c as i64)
}

#[inline(always)]
fn truthy<T: Elem>(x: T) -> bool {
    x.to_f64() != 0.0
}

macro_rules! dispatch_binop {
    ($op:expr, $T:ty, $f:ident, $($args:expr),*) => {
        match $op {
            BinOp::Add => $f($($args,)* |a: $T, b: $T| a.add(b)),
            BinOp::Sub => $f($($args,)* |a: $T, b: $T| a.sub(b)),
            BinOp::Mul => $f($($args,)* |a: $T, b: $T| a.mul(b)),
            BinOp::Div => $f($($args,)* |a: $T, b: $T| a.div(b)),
            BinOp::Mod => $f($($args,)* |a: $T, b: $T| a.rem(b)),
            BinOp::Pow => $f($($args,)* |a: $T, b: $T| a.pow_(b)),
            BinOp::Max => $f($($args,)* |a: $T, b: $T| a.max_(b)),
            BinOp::Min => $f($($args,)* |a: $T, b: $T| a.min_(b)),
            BinOp::Hypot => $f($($args,)* |a: $T, b: $T| <$T>::from_f64(a.to_f64().hypot(b.to_f64()))),
            BinOp::Eq => $f($($args,)* |a: $T, b: $T| b2t::<$T>(a == b)),
            BinOp::Ne => $f($($args,)* |a: $T, b: $T| b2t::<$T>(a != b)),
            BinOp::Gt => $f($($args,)* |a: $T, b: $T| b2t::<$T>(a > b)),
            BinOp::Ge => $f($($args,)* |a: $T, b: $T| b2t::<$T>(a >= b)),
            BinOp::Lt => $f($($args,)* |a: $T, b: $T| b2t::<$T>(a < b)),
            BinOp::Le => $f($($args,)* |a: $T, b: $T| b2t::<$T>(a <= b)),
            BinOp::And => $f($($args,)* |a: $T, b: $T| b2t::<$T>(truthy(a) && truthy(b))),
            BinOp::Or => $f($($args,)* |a: $T, b: $T| b2t::<$T>(truthy(a) || truthy(b))),
            BinOp::Xor => $f($($args,)* |a: $T, b: $T| b2t::<$T>(truthy(a) != truthy(b))),
        }
    };
}

/// Broadcasting kernel: `out = f(a, b)` with `a`, `b` read through broadcast strides.
fn apply_bcast<T: Copy + Send + Sync>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    oshape: &Shape,
    out: &mut [T],
    f: impl Fn(T, T) -> T + Sync + Send,
) {
    let n = out.len();
    if a.len() == n && b.len() == n {
        return map2(a, b, out, f);
    }
    if b.len() == 1 && a.len() == n {
        let y = b[0];
        return map1(a, out, |x| f(x, y));
    }
    if a.len() == 1 && b.len() == n {
        let x = a[0];
        return map1(b, out, |y| f(x, y));
    }
    let dims = oshape.dims();
    let nd = dims.len();
    let inner = dims[nd - 1];
    let (ia, ib) = (sa[nd - 1], sb[nd - 1]);
    chunked(out, PAR_MIN, |start, o| {
        // Walk rows of the innermost dimension.
        let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, nd);
        let mut rem = start;
        for d in (0..nd).rev() {
            idx[d] = rem % dims[d];
            rem /= dims[d];
        }
        let mut pos = 0;
        while pos < o.len() {
            let (mut pa, mut pb) = (0usize, 0usize);
            for d in 0..nd {
                pa += idx[d] * sa[d];
                pb += idx[d] * sb[d];
            }
            let run = (inner - idx[nd - 1]).min(o.len() - pos);
            let orow = &mut o[pos..pos + run];
            if ia == 1 && ib == 0 {
                let y = b[pb];
                for (k, ov) in orow.iter_mut().enumerate() {
                    *ov = f(a[pa + k], y);
                }
            } else if ia == 0 && ib == 1 {
                let x = a[pa];
                for (k, ov) in orow.iter_mut().enumerate() {
                    *ov = f(x, b[pb + k]);
                }
            } else {
                for (k, ov) in orow.iter_mut().enumerate() {
                    *ov = f(a[pa + k * ia], b[pb + k * ib]);
                }
            }
            pos += run;
            idx[nd - 1] += run;
            let mut d = nd - 1;
            while d > 0 && idx[d] == dims[d] {
                idx[d] = 0;
                d -= 1;
                idx[d] += 1;
            }
        }
    });
}

fn unify(op: &str, a: &NDArray, b: &NDArray) -> Result<(NDArray, NDArray, DType)> {
    check_ctx(op, a, b)?;
    let dt = DType::promote(a.dtype(), b.dtype());
    let a = if a.dtype() != dt { ops::astype(a, dt)? } else { a.clone() };
    let b = if b.dtype() != dt { ops::astype(b, dt)? } else { b.clone() };
    Ok((a, b, dt))
}

/// `op(a, b)` with broadcasting and type promotion.
#[allow(clippy::bool_comparison)]
pub fn binary(op: BinOp, a: &NDArray, b: &NDArray) -> Result<NDArray> {
    let name = op.name();
    let oshape = Shape::broadcast(name, a.shape(), b.shape())?;
    let (a2, b2, dt) = unify(name, a, b)?;
    let out = NDArray::empty(oshape.clone(), dt, a.ctx())?;
    if oshape.size() > 0 {
        let sa = a2.shape().broadcast_strides(&oshape);
        let sb = b2.shape().broadcast_strides(&oshape);
        push_kernel(name, vec![a2.view(), b2.view()], vec![out.view()], move |k| {
            with_dtype!(dt, T, {
                let (x, y, o) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
                dispatch_binop!(op, T, apply_bcast, x, &sa, y, &sb, &oshape, o);
            });
            Ok(())
        });
    }
    if op.differentiable() && needs_record(&[a, b]) {
        let (a, b, o) = (a.clone(), b.clone(), out.clone());
        let (sa, sb) = (a.shape().clone(), b.shape().clone());
        record(
            name,
            &[&a.clone(), &b.clone()],
            &[&out],
            Box::new(move |g| {
                let g = &g[0];
                let (ga, gb) = binary_grad(op, &a, &b, &o, g)?;
                Ok(vec![Some(sum_to(&ga, &sa)?), Some(sum_to(&gb, &sb)?)])
            }),
        );
    }
    Ok(out)
}

fn binary_grad(op: BinOp, a: &NDArray, b: &NDArray, o: &NDArray, g: &NDArray) -> Result<(NDArray, NDArray)> {
    use ops::{div, mul, neg, sub};
    Ok(match op {
        BinOp::Add => (g.clone(), g.clone()),
        BinOp::Sub => (g.clone(), neg(g)?),
        BinOp::Mul => (mul(g, b)?, mul(g, a)?),
        BinOp::Div => (div(g, b)?, neg(&div(&mul(g, o)?, b)?)?),
        BinOp::Mod => (g.clone(), neg(&mul(g, &ops::unary(ops::UnaryOp::Floor, &div(a, b)?)?)?)?),
        BinOp::Pow => {
            let ga = mul(g, &mul(b, &binary(BinOp::Pow, a, &ops::scalar(BinOp::Sub, b, 1.0)?)?)?)?;
            let gb = mul(g, &mul(o, &ops::unary(ops::UnaryOp::Log, a)?)?)?;
            (ga, gb)
        }
        BinOp::Max | BinOp::Min => {
            let cmp = if op == BinOp::Max { BinOp::Ge } else { BinOp::Le };
            let m = binary(cmp, a, b)?;
            (mul(g, &m)?, mul(g, &ops::scalar_r(BinOp::Sub, &m, 1.0)?)?)
        }
        BinOp::Hypot => (mul(g, &div(a, o)?)?, mul(g, &div(b, o)?)?),
        _ => (sub(g, g)?, sub(g, g)?),
    })
}

/// [`scalar_op`] as a user's `x + 1` means it: arithmetic on a bool array
/// computes in int64, as in MXNet (internal callers keep the array's dtype).
pub fn user_scalar_op(op: BinOp, a: &NDArray, s: f64, reverse: bool) -> Result<NDArray> {
    if a.dtype() == DType::Bool
        && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::Pow)
    {
        return scalar_op(op, &ops::astype(a, DType::I64)?, s, reverse);
    }
    scalar_op(op, a, s, reverse)
}

/// `op(a, s)` (or `op(s, a)` when `reverse`) for a Python scalar `s`.
///
/// As in MXNet's `nd`, the result keeps `a`'s dtype (the scalar is cast).
#[allow(clippy::bool_comparison)]
pub fn scalar_op(op: BinOp, a: &NDArray, s: f64, reverse: bool) -> Result<NDArray> {
    let name = op.scalar_name();
    let dt = a.dtype();
    let out = NDArray::empty(a.shape().clone(), dt, a.ctx())?;
    if a.size() > 0 {
        push_kernel(name, vec![a.view()], vec![out.view()], move |k| {
            with_dtype!(dt, T, {
                let (x, o) = (k.input::<T>(0), k.output::<T>(0));
                let sv = T::from_f64(s);
                macro_rules! run {
                    ($f:expr) => {{
                        let f = $f;
                        if reverse {
                            map1(x, o, move |v| f(sv, v))
                        } else {
                            map1(x, o, move |v| f(v, sv))
                        }
                    }};
                }
                match op {
                    BinOp::Add => run!(|p: T, q: T| p.add(q)),
                    BinOp::Sub => run!(|p: T, q: T| p.sub(q)),
                    BinOp::Mul => run!(|p: T, q: T| p.mul(q)),
                    // Integers, `s / x`: the float quotient, C-cast (MXNet), so 2 / 0 is
                    // the int minimum. (`x / s` casts `s` first, as MXNet does.)
                    BinOp::Div if reverse && !dt.is_float() => map1(x, o, move |v: T| T::from_f64(s / v.to_f64())),
                    BinOp::Div => run!(|p: T, q: T| p.div(q)),
                    BinOp::Mod => run!(|p: T, q: T| p.rem(q)),
                    // A negative exponent must not wrap into a huge one (uint8 ** -2).
                    BinOp::Pow if !reverse && s < 0.0 && !dt.is_float() => {
                        map1(x, o, move |v: T| T::from_f64(v.to_f64().powf(s)))
                    }
                    BinOp::Pow => run!(|p: T, q: T| p.pow_(q)),
                    BinOp::Max => run!(|p: T, q: T| p.max_(q)),
                    BinOp::Min => run!(|p: T, q: T| p.min_(q)),
                    BinOp::Hypot => run!(|p: T, q: T| T::from_f64(p.to_f64().hypot(q.to_f64()))),
                    BinOp::Eq => run!(|p: T, q: T| b2t::<T>(p == q)),
                    BinOp::Ne => run!(|p: T, q: T| b2t::<T>(p != q)),
                    BinOp::Gt => run!(|p: T, q: T| b2t::<T>(p > q)),
                    BinOp::Ge => run!(|p: T, q: T| b2t::<T>(p >= q)),
                    BinOp::Lt => run!(|p: T, q: T| b2t::<T>(p < q)),
                    BinOp::Le => run!(|p: T, q: T| b2t::<T>(p <= q)),
                    BinOp::And => run!(|p: T, q: T| b2t::<T>(truthy(p) && truthy(q))),
                    BinOp::Or => run!(|p: T, q: T| b2t::<T>(truthy(p) || truthy(q))),
                    BinOp::Xor => run!(|p: T, q: T| b2t::<T>(truthy(p) != truthy(q))),
                }
            });
            Ok(())
        });
    }
    if op.differentiable() && needs_record(&[a]) {
        let (x, o) = (a.clone(), out.clone());
        record(
            name,
            &[a],
            &[&out],
            Box::new(move |g| {
                let g = &g[0];
                use ops::{div, mul, scalar, scalar_r};
                let gx = match (op, reverse) {
                    (BinOp::Add, _) | (BinOp::Sub, false) | (BinOp::Mod, false) => g.clone(),
                    (BinOp::Sub, true) => ops::neg(g)?,
                    (BinOp::Mul, _) => scalar(BinOp::Mul, g, s)?,
                    (BinOp::Div, false) => scalar(BinOp::Div, g, s)?,
                    (BinOp::Div, true) => ops::neg(&div(&mul(g, &o)?, &x)?)?,
                    (BinOp::Pow, false) => mul(g, &scalar(BinOp::Mul, &scalar(BinOp::Pow, &x, s - 1.0)?, s)?)?,
                    (BinOp::Pow, true) => mul(g, &scalar(BinOp::Mul, &o, s.ln())?)?,
                    (BinOp::Max, _) => mul(g, &scalar(BinOp::Ge, &x, s)?)?,
                    (BinOp::Min, _) => mul(g, &scalar(BinOp::Le, &x, s)?)?,
                    (BinOp::Hypot, _) => mul(g, &div(&x, &o)?)?,
                    (BinOp::Mod, true) => {
                        let q = ops::unary(ops::UnaryOp::Floor, &scalar_r(BinOp::Div, &x, s)?)?;
                        ops::neg(&mul(g, &q)?)?
                    }
                    _ => ops::zeros_like(g)?,
                };
                Ok(vec![Some(gx)])
            }),
        );
    }
    Ok(out)
}

/// In place: `dst = op(dst, b)` (b broadcast to dst's shape). Writes dst's chunk.
pub fn binary_inplace(op: BinOp, dst: &NDArray, b: &NDArray) -> Result<()> {
    let name = op.name();
    if !matches!(
        op,
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::Pow | BinOp::Max | BinOp::Min
    ) {
        return Err(Error::value(name, "this operator has no in-place form"));
    }
    check_ctx(name, dst, b)?;
    let oshape = Shape::broadcast(name, dst.shape(), b.shape())?;
    if &oshape != dst.shape() {
        return Err(Error::shape(name, &[dst.shape(), b.shape()], "in-place result would need a different shape"));
    }
    let b = if b.dtype() != dst.dtype() { ops::astype(b, dst.dtype())? } else { b.clone() };
    let b = if b.shares_storage(dst) { ops::copy(&b)? } else { b };
    if oshape.size() == 0 {
        return Ok(());
    }
    let sb = b.shape().broadcast_strides(&oshape);
    let dt = dst.dtype();
    push_kernel(name, vec![b.view()], vec![dst.view()], move |k| {
        with_dtype!(dt, T, {
            let (y, o) = (k.input::<T>(0), k.output::<T>(0));
            macro_rules! run {
                ($f:expr) => {{
                    let f = $f;
                    if y.len() == o.len() {
                        chunked(o, PAR_MIN, |s, c| {
                            let n = c.len();
                            for (ov, &yv) in c.iter_mut().zip(&y[s..s + n]) {
                                *ov = f(*ov, yv);
                            }
                        })
                    } else if y.len() == 1 {
                        let yv = y[0];
                        chunked(o, PAR_MIN, |_, c| {
                            for ov in c.iter_mut() {
                                *ov = f(*ov, yv);
                            }
                        })
                    } else {
                        crate::shape::for_each_strided(&oshape, &sb, 0, o.len(), |oi, si| {
                            o[oi] = f(o[oi], y[si]);
                        });
                    }
                }};
            }
            match op {
                BinOp::Add => run!(|p: T, q: T| p.add(q)),
                BinOp::Sub => run!(|p: T, q: T| p.sub(q)),
                BinOp::Mul => run!(|p: T, q: T| p.mul(q)),
                BinOp::Div => run!(|p: T, q: T| p.div(q)),
                BinOp::Mod => run!(|p: T, q: T| p.rem(q)),
                BinOp::Pow => run!(|p: T, q: T| p.pow_(q)),
                BinOp::Max => run!(|p: T, q: T| p.max_(q)),
                BinOp::Min => run!(|p: T, q: T| p.min_(q)),
                _ => unreachable!("checked before push"),
            }
        });
        Ok(())
    });
    Ok(())
}

/// In place with a scalar: `dst = op(dst, s)`.
pub fn scalar_inplace(op: BinOp, dst: &NDArray, s: f64) -> Result<()> {
    let b = NDArray::scalar(s, dst.ctx());
    binary_inplace(op, dst, &b)
}
