//! Reductions over axes (sum, mean, prod, max, min, nansum, nanprod), argmax/argmin, norm.
//!
//! Every reduction is brought to an `(outer, reduced, inner)` layout. A set
//! of axes that is not one contiguous block is reduced one block at a time.

use super::binary::arith::Arith;
use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, BinOp, UnaryOp};
use crate::shape::{norm_axis, Shape};
use crate::storage::push_kernel;
use crate::with_dtype;
use rayon::prelude::*;

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum ReduceOp {
    Sum,
    Mean,
    Prod,
    Max,
    Min,
    NanSum,
    NanProd,
}

impl ReduceOp {
    /// MXNet name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::NanSum => "nansum",
            ReduceOp::NanProd => "nanprod",
        }
    }
}

/// Resolves `axis` (None: all), `exclude` into a sorted, deduplicated axis list.
pub fn resolve_axes(op: &str, ndim: usize, axes: Option<&[i64]>, exclude: bool) -> Result<Vec<usize>> {
    let mut v: Vec<usize> = match axes {
        None => (0..ndim).collect(),
        Some(a) => {
            let mut r = Vec::with_capacity(a.len());
            for &x in a {
                let ax = norm_axis(op, x, ndim)?;
                if r.contains(&ax) {
                    return Err(Error::value(op, format!("duplicate axis {x}")));
                }
                r.push(ax);
            }
            r
        }
    };
    v.sort_unstable();
    if exclude {
        v = (0..ndim).filter(|a| !v.contains(a)).collect();
    }
    Ok(v)
}

fn out_shape(shape: &Shape, axes: &[usize], keepdims: bool) -> Shape {
    let mut d = Vec::new();
    for (i, &n) in shape.dims().iter().enumerate() {
        if axes.contains(&i) {
            if keepdims {
                d.push(1);
            }
        } else {
            d.push(n);
        }
    }
    Shape::new(&d)
}

/// Reduces one contiguous slice.
fn reduce_slice<T: Arith>(op: ReduceOp, x: &[T]) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => T::sum_slice(x),
        ReduceOp::NanSum => x.iter().map(|v| v.to_f64()).filter(|v| !v.is_nan()).sum(),
        ReduceOp::Prod => x.iter().map(|v| v.to_f64()).product(),
        ReduceOp::NanProd => x.iter().map(|v| v.to_f64()).filter(|v| !v.is_nan()).product(),
        ReduceOp::Max => x.iter().fold(f64::NEG_INFINITY, |a, v| {
            let v = v.to_f64();
            if !a.is_nan() && (v > a || v.is_nan()) {
                v
            } else {
                a
            }
        }),
        ReduceOp::Min => x.iter().fold(f64::INFINITY, |a, v| {
            let v = v.to_f64();
            if !a.is_nan() && (v < a || v.is_nan()) {
                v
            } else {
                a
            }
        }),
    }
}

fn combine(op: ReduceOp, a: f64, v: f64) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => a + v,
        ReduceOp::NanSum => {
            if v.is_nan() {
                a
            } else {
                a + v
            }
        }
        ReduceOp::Prod => a * v,
        ReduceOp::NanProd => {
            if v.is_nan() {
                a
            } else {
                a * v
            }
        }
        ReduceOp::Max => {
            if !a.is_nan() && (v > a || v.is_nan()) {
                v
            } else {
                a
            }
        }
        ReduceOp::Min => {
            if !a.is_nan() && (v < a || v.is_nan()) {
                v
            } else {
                a
            }
        }
    }
}

fn identity(op: ReduceOp) -> f64 {
    match op {
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::NanSum => 0.0,
        ReduceOp::Prod | ReduceOp::NanProd => 1.0,
        ReduceOp::Max => f64::NEG_INFINITY,
        ReduceOp::Min => f64::INFINITY,
    }
}

fn reduce_kernel<T: Arith>(op: ReduceOp, x: &[T], out: &mut [T], outer: usize, r: usize, inner: usize) {
    let scale = if op == ReduceOp::Mean { 1.0 / r as f64 } else { 1.0 };
    let fin = |v: f64| T::from_f64(v * scale);
    if inner == 1 {
        if outer == 1 && r >= 1 << 18 {
            // One reduction split into chunks that this worker and rayon helpers
            // share (`fanout`: no waiting for a parked pool thread); partial
            // results combine in chunk order, so the result is deterministic.
            let threads = rayon::current_num_threads().max(1);
            let chunk = r.div_ceil(threads * 2).max(1);
            let parts: Vec<parking_lot::Mutex<f64>> =
                (0..r.div_ceil(chunk)).map(|_| parking_lot::Mutex::new(identity(op))).collect();
            crate::storage::fanout(parts.len(), threads - 1, &|i| {
                let c = &x[i * chunk..((i + 1) * chunk).min(r)];
                *parts[i].lock() = reduce_slice(op, c);
            });
            let v = parts.into_iter().fold(identity(op), |a, p| combine(op, a, p.into_inner()));
            out[0] = fin(v);
        } else if outer * r >= 1 << 17 {
            out.par_iter_mut().enumerate().for_each(|(o, ov)| *ov = fin(reduce_slice(op, &x[o * r..(o + 1) * r])));
        } else {
            for (o, ov) in out.iter_mut().enumerate() {
                *ov = fin(reduce_slice(op, &x[o * r..(o + 1) * r]));
            }
        }
        return;
    }
    let row = |o: usize, orow: &mut [T]| {
        let mut acc = vec![identity(op); inner];
        for k in 0..r {
            let base = (o * r + k) * inner;
            for (a, v) in acc.iter_mut().zip(&x[base..base + inner]) {
                *a = combine(op, *a, v.to_f64());
            }
        }
        for (ov, a) in orow.iter_mut().zip(acc) {
            *ov = fin(a);
        }
    };
    if outer > 1 && outer * r * inner >= 1 << 17 {
        out.par_chunks_mut(inner).enumerate().for_each(|(o, c)| row(o, c));
    } else {
        for (o, c) in out.chunks_mut(inner).enumerate() {
            row(o, c);
        }
    }
}

/// Integer reductions accumulate in i64 (sum and prod wrap, like the
/// elementwise ops), so 64-bit values stay exact.
fn reduce_kernel_int<T: Elem>(op: ReduceOp, x: &[T], out: &mut [T], outer: usize, r: usize, inner: usize) {
    for o in 0..outer {
        for j in 0..inner {
            let it = (0..r).map(|k| x[(o * r + k) * inner + j].to_i64());
            let v: i64 = match op {
                ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Mean => it.fold(0i64, |a, v| a.wrapping_add(v)),
                ReduceOp::Prod | ReduceOp::NanProd => it.fold(1i64, |a, v| a.wrapping_mul(v)),
                ReduceOp::Max => it.max().unwrap_or(i64::MIN),
                ReduceOp::Min => it.min().unwrap_or(i64::MAX),
            };
            out[o * inner + j] =
                if op == ReduceOp::Mean && r > 0 { T::from_f64(v as f64 / r as f64) } else { T::from_i64(v) };
        }
    }
}

/// Reduces over one contiguous block of axes `[a, b)`, keeping dims.
fn reduce_block(op: ReduceOp, x: &NDArray, a: usize, b: usize, count_scale: bool) -> Result<NDArray> {
    let dims = x.dims();
    let outer: usize = dims[..a].iter().product();
    let r: usize = dims[a..b].iter().product();
    let inner: usize = dims[b..].iter().product();
    let mut od: Vec<usize> = dims.to_vec();
    for d in od.iter_mut().take(b).skip(a) {
        *d = 1;
    }
    let dt = x.dtype();
    let out = NDArray::empty(Shape::new(&od), dt, x.ctx())?;
    let opk = if count_scale {
        op
    } else if op == ReduceOp::Mean {
        ReduceOp::Sum
    } else {
        op
    };
    if out.size() > 0 {
        push_kernel(op.name(), vec![x.view()], vec![out.view()], move |k| {
            if dt.is_int() {
                with_dtype!(dt, T, reduce_kernel_int::<T>(opk, k.input::<T>(0), k.output::<T>(0), outer, r, inner));
            } else {
                with_dtype!(dt, T, reduce_kernel::<T>(opk, k.input::<T>(0), k.output::<T>(0), outer, r, inner));
            }
            Ok(())
        });
    }
    Ok(out)
}

/// Reduces `x` over `axes` (None: all axes).
pub fn reduce(op: ReduceOp, x: &NDArray, axes: Option<&[i64]>, keepdims: bool, exclude: bool) -> Result<NDArray> {
    let name = op.name();
    let axes = resolve_axes(name, x.ndim(), axes, exclude)?;
    if matches!(op, ReduceOp::Max | ReduceOp::Min) {
        for &a in &axes {
            if x.dims()[a] == 0 {
                return Err(Error::value(
                    name,
                    format!(
                        "zero-size array to reduction operation {name} which has no identity (shape {})",
                        x.shape()
                    ),
                ));
            }
        }
    }
    // Bool: sums and products count in int64 (NumPy), the mean is float32,
    // max/min stay bool (computed in int64 and cast back).
    let src = match (x.dtype(), op) {
        (DType::Bool, ReduceOp::Mean) => ops::astype(x, DType::F32)?,
        (DType::Bool, _) => ops::astype(x, DType::I64)?,
        _ => x.clone(),
    };
    if x.dtype() == DType::Bool && matches!(op, ReduceOp::Max | ReduceOp::Min) {
        let ax: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
        let r = reduce(op, &src, Some(&ax), keepdims, false)?;
        return ops::astype(&r, DType::Bool);
    }
    // Split axes into contiguous blocks; reduce the last block first.
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    for &a in &axes {
        match blocks.last_mut() {
            Some((_, e)) if *e == a => *e = a + 1,
            _ => blocks.push((a, a + 1)),
        }
    }
    let mut cur = src;
    let single = blocks.len() == 1;
    if blocks.is_empty() {
        cur = ops::copy(&cur)?;
    }
    let total: usize = axes.iter().map(|&a| x.dims()[a]).product();
    for &(a, b) in blocks.iter().rev() {
        cur = reduce_block(op, &cur, a, b, single)?.detach();
    }
    if op == ReduceOp::Mean && !single && !blocks.is_empty() {
        cur = ops::scalar(BinOp::Div, &cur, total as f64)?;
    }
    let oshape = out_shape(x.shape(), &axes, keepdims);
    let out = cur.view_as(oshape, 0);
    if needs_record(&[x]) && x.dtype().is_float() {
        let (xc, oc) = (x.clone(), out.clone());
        let kshape = out_shape(x.shape(), &axes, true);
        record(
            name,
            &[x],
            &[&out],
            Box::new(move |g| {
                let g = reshape_keep(&g[0], &kshape);
                let gb = ops::broadcast_to(&g, xc.shape().clone())?;
                let r = match op {
                    ReduceOp::Sum | ReduceOp::NanSum => gb,
                    ReduceOp::Mean => ops::scalar(BinOp::Div, &gb, total.max(1) as f64)?,
                    ReduceOp::Prod | ReduceOp::NanProd => {
                        let y = ops::broadcast_to(&reshape_keep(&oc, &kshape), xc.shape().clone())?;
                        ops::mul(&gb, &ops::div(&y, &xc)?)?
                    }
                    ReduceOp::Max | ReduceOp::Min => {
                        let y = ops::broadcast_to(&reshape_keep(&oc, &kshape), xc.shape().clone())?;
                        ops::mul(&gb, &ops::binary(BinOp::Eq, &xc, &y)?)?
                    }
                };
                Ok(vec![Some(r)])
            }),
        );
    }
    Ok(out)
}

fn reshape_keep(x: &NDArray, s: &Shape) -> NDArray {
    x.view_as(s.clone(), 0)
}

/// Index of the max (or min) along `axis` (None: flattened), as float32 like MXNet's `nd.argmax`.
pub fn argmax(x: &NDArray, axis: Option<i64>, keepdims: bool, is_min: bool, out_dtype: DType) -> Result<NDArray> {
    let name = if is_min { "argmin" } else { "argmax" };
    let (src, ax) = match axis {
        None => (x.view_as(Shape::new(&[x.size()]), 0), 0usize),
        Some(a) => (x.clone(), norm_axis(name, a, x.ndim())?),
    };
    if src.ndim() == 0 || src.dims()[ax] == 0 {
        return Err(Error::value(name, format!("attempt to get {name} of an empty sequence (shape {})", x.shape())));
    }
    let dims = src.dims().to_vec();
    let outer: usize = dims[..ax].iter().product();
    let r = dims[ax];
    let inner: usize = dims[ax + 1..].iter().product();
    let oshape = match axis {
        None => {
            if keepdims {
                Shape::new(&vec![1; x.ndim()])
            } else {
                Shape::scalar()
            }
        }
        Some(_) => out_shape(src.shape(), &[ax], keepdims),
    };
    let out = NDArray::empty(oshape, out_dtype, x.ctx())?;
    let dt = src.dtype();
    push_kernel(name, vec![src.view()], vec![out.view()], move |k| {
        with_dtype!(dt, T, {
            let xs = k.input::<T>(0);
            with_dtype!(out_dtype, O, {
                let o = k.output::<O>(0);
                for a in 0..outer {
                    for j in 0..inner {
                        let mut best = 0usize;
                        let mut bv = xs[a * r * inner + j].to_f64();
                        for i in 1..r {
                            let v = xs[(a * r + i) * inner + j].to_f64();
                            let better = if is_min { v < bv } else { v > bv };
                            if !bv.is_nan() && (better || v.is_nan()) {
                                best = i;
                                bv = v;
                            }
                        }
                        o[a * inner + j] = O::from_f64(best as f64);
                    }
                }
            })
        });
        Ok(())
    });
    Ok(out)
}

/// `ord`-norm (1 or 2) over `axes` (None: all, flattened).
pub fn norm(x: &NDArray, ord: u32, axes: Option<&[i64]>, keepdims: bool) -> Result<NDArray> {
    resolve_axes("norm", x.ndim(), axes, false)?;
    if matches!(x.dtype(), DType::F32 | DType::F16 | DType::BF16) {
        // Accumulate in f64 so squares of large values do not overflow.
        let r = norm(&ops::astype(x, DType::F64)?, ord, axes, keepdims)?;
        return ops::astype(&r, x.dtype());
    }
    match ord {
        1 => reduce(ReduceOp::Sum, &ops::unary(UnaryOp::Abs, x)?, axes, keepdims, false),
        2 => {
            let s = reduce(ReduceOp::Sum, &ops::unary(UnaryOp::Square, x)?, axes, keepdims, false)?;
            ops::unary(UnaryOp::Sqrt, &s)
        }
        _ => Err(Error::value("norm", format!("ord must be 1 or 2, got {ord}"))),
    }
}

use crate::opdef::{one, param, Aliases, Example, Grad, Invocation, Meta, OpDef, ParamDef, ParamKind as K};

const REDUCE: &[ParamDef] = &[
    param("axis", K::Ints, Some("()"), "Axes to reduce over (negative counts from the end); () or None: all."),
    param("keepdims", K::Bool, Some("False"), "Keep reduced axes with size 1."),
    param("exclude", K::Bool, Some("False"), "Reduce over the axes *not* listed."),
];
const EX: Example = Example { shapes: &[&[2, 3, 2]], attrs: "axis=1", range: (0.5, 1.5) };

fn infer_reduce(def: &'static OpDef, a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (i, x) = (Invocation::params(def, a), &ins[0]);
    let axes = i.ints("axis")?.filter(|a| !a.is_empty());
    let exclude = axes.is_some() && i.bool("exclude")?;
    let ax = resolve_axes(def.name, x.shape.ndim(), axes.as_deref(), exclude)?;
    let dtype = match (x.dtype, def.name) {
        (DType::Bool, "mean") => DType::F32,
        (DType::Bool, "max" | "min") => DType::Bool,
        (DType::Bool, _) => DType::I64,
        (dt, _) => dt,
    };
    Ok(vec![Meta { shape: out_shape(&x.shape, &ax, i.bool("keepdims")?), dtype, ctx: x.ctx }])
}

fn forward_reduce(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let op = match i.def.name {
        "sum" => ReduceOp::Sum,
        "mean" => ReduceOp::Mean,
        "prod" => ReduceOp::Prod,
        "max" => ReduceOp::Max,
        "min" => ReduceOp::Min,
        "nansum" => ReduceOp::NanSum,
        _ => ReduceOp::NanProd,
    };
    // MXNet: no axes (even with exclude) means every axis.
    let axes = i.ints("axis")?.filter(|a| !a.is_empty());
    let exclude = axes.is_some() && i.bool("exclude")?;
    one(reduce(op, i.x(0)?, axes.as_deref(), i.bool("keepdims")?, exclude))
}

macro_rules! reductions {
    ($( $name:literal [$($nd:literal),*] [$($np:literal),*] $doc:literal; )*) => {
        /// The reductions.
        pub static DEFS: &[OpDef] = &[
            $( OpDef {
                name: $name,
                aliases: Aliases { nd: &[$($nd),*], np: &[$($np),*], npx: &[], fluent: true },
                inputs: &["data"],
                params: REDUCE,
                doc: $doc,
                infer: Some(infer_reduce),
                forward: forward_reduce,
                example: Some(EX),
                ..OpDef::BASE
            }, )*
            OpDef {
                name: "norm",
                aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
                inputs: &["data"],
                params: &[
                    param("ord", K::Int, Some("2"), "Order of the norm: 1 or 2."),
                    param("axis", K::Ints, Some("None"), "Axes to reduce over; None: all."),
                    param("keepdims", K::Bool, Some("False"), "Keep reduced axes with size 1."),
                ],
                doc: "The L1 or L2 norm over `axis` (accumulated in float64).",
                forward: |i| {
                    let axes = i.ints("axis")?;
                    one(norm(i.x(0)?, i.i64("ord")? as u32, axes.as_deref(), i.bool("keepdims")?))
                },
                example: Some(Example { shapes: &[&[3, 4]], attrs: "axis=1", range: (0.5, 1.5) }),
                ..OpDef::BASE
            },
            argmax_def("argmax", "Indices of the maximum along `axis` (in the input's dtype, float32 for bool)."),
            argmax_def("argmin", "Indices of the minimum along `axis` (in the input's dtype, float32 for bool)."),
        ];
    };
}

const ARGMAX: &[ParamDef] = &[
    param("axis", K::Int, Some("None"), "The axis; None: over the flattened array."),
    param("keepdims", K::Bool, Some("False"), "Keep the reduced axis with size 1."),
];

const fn argmax_def(name: &'static str, doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: ARGMAX,
        doc,
        forward: forward_argmax,
        grad: Grad::None("indices are piecewise constant"),
        ..OpDef::BASE
    }
}

fn forward_argmax(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    // MXNet returns the indices in the input's dtype (float32 for bool).
    let x = i.x(0)?;
    let odt = if x.dtype() == DType::Bool { DType::F32 } else { x.dtype() };
    one(argmax(x, i.opt_i64("axis")?, i.bool("keepdims")?, i.def.name == "argmin", odt))
}

reductions! {
    "sum" ["sum_axis"] [] "Sum over `axis`.";
    "mean" [] [] "Mean over `axis`.";
    "prod" [] [] "Product over `axis`.";
    "max" ["max_axis"] [] "Maximum over `axis`.";
    "min" ["min_axis"] [] "Minimum over `axis`.";
    "nansum" [] [] "Sum over `axis`, treating NaN as 0.";
    "nanprod" [] [] "Product over `axis`, treating NaN as 1.";
}
