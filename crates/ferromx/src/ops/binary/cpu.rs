//! CPU kernels of the binary elementwise operators: broadcasting, scalar
//! and in-place forms.

use super::arith::Arith;
use super::BinOp;
use crate::dtype::{DType, Elem};
use crate::engine::OpFailure;
use crate::fusion::tile::{InRef, OutRef, TileElem};
use crate::opdef::{OpCall, ScalarForm};
use crate::ops::par::{chunked, map1, map2, PAR_MIN};
use crate::shape::Shape;
use crate::storage::Kernel;
use crate::with_dtype;
use smallvec::SmallVec;

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
            BinOp::Arctan2 => $f($($args,)* |a: $T, b: $T| <$T>::from_f64(a.to_f64().atan2(b.to_f64()))),
            BinOp::Copysign => $f($($args,)* |a: $T, b: $T| <$T>::from_f64(a.to_f64().copysign(b.to_f64()))),
            BinOp::Ldexp => $f($($args,)* |a: $T, b: $T| <$T>::from_f64(ldexp(a.to_f64(), b.to_f64()))),
            BinOp::Fmax => $f($($args,)* |a: $T, b: $T| a.fmax_(b)),
            BinOp::Fmin => $f($($args,)* |a: $T, b: $T| a.fmin_(b)),
            BinOp::Fmod => $f($($args,)* |a: $T, b: $T| a.fmod_(b)),
            BinOp::Gcd => $f($($args,)* |a: $T, b: $T| a.gcd_(b)),
            BinOp::Lcm => $f($($args,)* |a: $T, b: $T| a.lcm_(b)),
        }
    };
}

/// `a * 2 ** e`, with `2 ** e` applied in two halves so a tiny `a` with a huge `e`
/// (or the reverse) does not overflow or flush to zero on the way; `0 * 2 ** inf` is 0.
#[inline(always)]
fn ldexp(a: f64, e: f64) -> f64 {
    if a == 0.0 || !a.is_finite() {
        return a;
    }
    let h = (e * 0.5).trunc();
    a * h.exp2() * (e - h).exp2()
}

/// Broadcasting kernel: `out = f(a, b)` with `a`, `b` read through broadcast strides
/// (the result may have another element type: the bool comparisons of `predicate`).
pub(crate) fn apply_bcast<T: Copy + Send + Sync, O: Send>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    oshape: &Shape,
    out: &mut [O],
    f: impl Fn(T, T) -> O + Sync + Send,
) {
    let n = out.len();
    if a.len() == n && b.len() == n {
        return map2(a, b, out, f);
    }
    if b.len() == 1 && a.len() == n {
        let y = b[0];
        return map1(a, out, move |x| f(x, y));
    }
    if a.len() == 1 && b.len() == n {
        let x = a[0];
        return map1(b, out, move |y| f(x, y));
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

/// `op(a, b)` on one f64 element (derivative expressions, fusion, tests).
pub fn binary_scalar(op: BinOp, a: f64, b: f64) -> f64 {
    fn ap(a: f64, b: f64, f: impl Fn(f64, f64) -> f64) -> f64 {
        f(a, b)
    }
    dispatch_binop!(op, f64, ap, a, b)
}

fn internal(msg: &str) -> OpFailure {
    OpFailure::new(crate::engine::ErrorKind::Runtime, msg.to_string())
}

#[allow(clippy::bool_comparison)]
/// Kernel of the broadcasting operators: output 0 = op(input 0, input 1),
/// inputs read through broadcast strides of the output's shape.
pub(crate) fn run_broadcast(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let Some(ScalarForm::Binary(op)) = call.def.scalar else { return Err(internal("not a binary operator")) };
    let oshape = call.outputs[0].shape.clone();
    let sa = call.inputs[0].shape.broadcast_strides(&oshape);
    let sb = call.inputs[1].shape.broadcast_strides(&oshape);
    let dt = k.in_dtype(0);
    with_dtype!(dt, T, {
        let (x, y, o) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
        dispatch_binop!(op, T, apply_bcast, x, &sa, y, &sb, &oshape, o);
    });
    Ok(())
}

/// Kernel of the scalar operators: output 0 = op(input 0, s) (or op(s, input 0)).
#[allow(clippy::bool_comparison)] // the comparisons are generic over T, bool among them
pub(crate) fn run_scalar(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let Some(ScalarForm::Scalar(op, reverse)) = call.def.scalar else { return Err(internal("not a scalar operator")) };
    let s = call.nums.first().copied().ok_or_else(|| internal("scalar operator without its scalar"))?;
    let dt = k.in_dtype(0);
    with_dtype!(dt, T, scalar_apply::<T>(op, reverse, s, k.input::<T>(0), k.output::<T>(0)));
    Ok(())
}

/// `o = op(x, s)` (or `op(s, x)`): the scalar operators' per-element code,
/// shared by their kernel and fused kernels' tiles.
#[allow(clippy::bool_comparison)] // the comparisons are generic over T, bool among them
pub(crate) fn scalar_apply<T: Arith>(op: BinOp, reverse: bool, s: f64, x: &[T], o: &mut [T]) {
    let dt = T::DTYPE;
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
        BinOp::Pow if !reverse && s < 0.0 && !dt.is_float() => map1(x, o, move |v: T| T::from_f64(v.to_f64().powf(s))),
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
        BinOp::Arctan2 => run!(|p: T, q: T| T::from_f64(p.to_f64().atan2(q.to_f64()))),
        BinOp::Copysign => run!(|p: T, q: T| T::from_f64(p.to_f64().copysign(q.to_f64()))),
        BinOp::Ldexp => run!(|p: T, q: T| T::from_f64(ldexp(p.to_f64(), q.to_f64()))),
        BinOp::Fmax => run!(|p: T, q: T| p.fmax_(q)),
        BinOp::Fmin => run!(|p: T, q: T| p.fmin_(q)),
        BinOp::Fmod => run!(|p: T, q: T| p.fmod_(q)),
        BinOp::Gcd => run!(|p: T, q: T| p.gcd_(q)),
        BinOp::Lcm => run!(|p: T, q: T| p.lcm_(q)),
    }
}

/// `o = op(a, b)` on same-length slices: the broadcasting kernel's per-element code.
#[allow(clippy::bool_comparison)]
pub(crate) fn binary_apply<T: Arith>(op: BinOp, a: &[T], b: &[T], o: &mut [T]) {
    dispatch_binop!(op, T, map2, a, b, o)
}

/// [`scalar_apply`] on the front `m` elements of fused tiles.
pub(crate) fn scalar_tile(op: BinOp, reverse: bool, s: f64, x: &InRef, o: &mut OutRef, m: usize) {
    with_dtype!(x.dtype(), T, scalar_apply::<T>(op, reverse, s, T::of(x), &mut T::get_mut(o)[..m]));
}

/// [`binary_apply`] on the front `m` elements of fused tiles.
pub(crate) fn binary_tile(op: BinOp, a: &InRef, b: &InRef, o: &mut OutRef, m: usize) {
    with_dtype!(a.dtype(), T, binary_apply::<T>(op, T::of(a), T::of(b), &mut T::get_mut(o)[..m]));
}

/// `dst = op(dst, y)` in place, `y` read through broadcast strides `sb` of `oshape`.
pub(crate) fn run_inplace(op: BinOp, dt: DType, oshape: &Shape, sb: &[usize], k: &Kernel) {
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
                    chunked(o, PAR_MIN, move |_, c| {
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
}
