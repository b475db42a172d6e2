//! Reductions over axes (sum, mean, prod, max, min, nansum, nanprod), argmax/argmin, norm.
//!
//! Every reduction is brought to an `(outer, reduced, inner)` layout. A set
//! of axes that is not one contiguous block is reduced one block at a time
//! (one [`OpCall`] per block). Definitions, inference and gradients here;
//! kernels in `cpu.rs`.

mod cpu;
#[cfg(test)]
mod tests;

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, BinOp, UnaryOp};
use crate::shape::{norm_axis, Shape};

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
        let ints = [opk.code(), outer as i64, r as i64, inner as i64];
        push_call(OpCall::new(op.def(), &[x], &[&out]).with_ints(&ints))?;
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
    // Integer reductions record too, as in MXNet (their gradients are computed in the
    // integer dtype: `sum` gives ones, `max` the argmax mask, `mean` the truncated 1/n).
    if needs_record(&[x]) && x.dtype() != DType::Bool {
        let (xc, os) = (x.clone(), crate::autograd::save_output(&out));
        let kshape = out_shape(x.shape(), &axes, true);
        record(
            name,
            &[x],
            &[&out],
            Box::new(move |g| {
                let g = reshape_keep(&g[0], &kshape)?;
                let gb = ops::broadcast_to(&g, xc.shape().clone())?;
                let r = match op {
                    ReduceOp::Sum | ReduceOp::NanSum => gb,
                    ReduceOp::Mean => ops::scalar(BinOp::Div, &gb, total.max(1) as f64)?,
                    ReduceOp::Prod | ReduceOp::NanProd => {
                        let y = ops::broadcast_to(&reshape_keep(&os.get(), &kshape)?, xc.shape().clone())?;
                        ops::mul(&gb, &ops::div(&y, &xc)?)?
                    }
                    ReduceOp::Max | ReduceOp::Min => {
                        let y = ops::broadcast_to(&reshape_keep(&os.get(), &kshape)?, xc.shape().clone())?;
                        ops::mul(&gb, &ops::binary(BinOp::Eq, &xc, &y)?)?
                    }
                };
                Ok(vec![Some(r)])
            }),
        );
    }
    Ok(out)
}

/// A recorded reshape (a view when nothing records): backward closures use it so that
/// the gradient stays differentiable under `create_graph`.
fn reshape_keep(x: &NDArray, s: &Shape) -> Result<NDArray> {
    ops::reshape_to(x, s.clone())
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
    let def = &DEFS[if is_min { 9 } else { 8 }];
    if out.size() > 0 {
        push_call(OpCall::new(def, &[&src], &[&out]).with_ints(&[outer as i64, r as i64, inner as i64]))?;
    }
    // an index: MXNet records a zero gradient, so a graph through it can still be differentiated
    if crate::autograd::needs_record(&[x]) {
        crate::ops::binary::record_zero_grad(def, &[x], &out, &[]);
    }
    Ok(out)
}

/// `ord`-norm (1 or 2) over `axes` (None: all), accumulated in float64.
pub fn norm(x: &NDArray, ord: u32, axes: Option<&[i64]>, keepdims: bool) -> Result<NDArray> {
    if ord != 1 && ord != 2 {
        return Err(Error::value("norm", format!("ord must be 1 or 2, got {ord}")));
    }
    let ax = resolve_axes("norm", x.ndim(), axes, false)?;
    if x.ndim() > 62 {
        return Err(Error::value("norm", format!("at most 62 axes are supported, got shape {}", x.shape())));
    }
    let out = NDArray::empty(out_shape(x.shape(), &ax, keepdims), norm_dtype(ord, x.dtype()), x.ctx())?;
    if out.size() > 0 {
        let src = if out.dtype() != x.dtype() { ops::astype(x, out.dtype())? } else { x.clone() };
        let mask = ax.iter().fold(0i64, |m, &a| m | 1 << a);
        push_call(OpCall::new(&DEFS[7], &[&src], &[&out]).with_ints(&[ord as i64, mask]))?;
    }
    if needs_record(&[x]) && x.dtype().is_float() {
        let (xc, os) = (x.clone(), crate::autograd::save_output(&out));
        let kshape = out_shape(x.shape(), &ax, true);
        record(
            "norm",
            &[x],
            &[&out],
            Box::new(move |g| {
                let gb = ops::broadcast_to(&reshape_keep(&g[0], &kshape)?, xc.shape().clone())?;
                let d = if ord == 1 {
                    ops::unary(UnaryOp::Sign, &xc)?
                } else {
                    let y = ops::broadcast_to(&reshape_keep(&os.get(), &kshape)?, xc.shape().clone())?;
                    ops::div(&xc, &y)?
                };
                Ok(vec![Some(ops::mul(&gb, &d)?)])
            }),
        );
    }
    Ok(out)
}

/// The result dtype of `norm`: floats keep theirs; an L1 norm of integers
/// stays integral (int64 for bool); an L2 norm of integers is float32.
fn norm_dtype(ord: u32, dt: DType) -> DType {
    match (ord, dt) {
        (_, dt) if dt.is_float() => dt,
        (1, DType::Bool) => DType::I64,
        (1, dt) => dt,
        _ => DType::F32,
    }
}

impl ReduceOp {
    /// The operator defining this reduction (`DEFS` lists them in `ReduceOp` order).
    fn def(self) -> &'static OpDef {
        &DEFS[self as usize]
    }
}

use crate::opdef::{
    one, param, push_call, Aliases, Example, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef,
    ParamKind as K,
};

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
                cpu: KernelSlot::Call(cpu::reduce_kernel),
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
                infer: Some(infer_norm),
                cpu: KernelSlot::Call(cpu::norm_kernel),
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
        infer: Some(infer_argmax),
        cpu: KernelSlot::Call(cpu::argmax_kernel),
        forward: forward_argmax,
        grad: Grad::None("indices are piecewise constant"),
        ..OpDef::BASE
    }
}

fn infer_norm(def: &'static OpDef, a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (i, x) = (Invocation::params(def, a), &ins[0]);
    let ax = resolve_axes(def.name, x.shape.ndim(), i.ints("axis")?.as_deref(), false)?;
    let ord = i.i64("ord")?;
    let dtype = norm_dtype(ord.clamp(0, 3) as u32, x.dtype);
    Ok(vec![Meta { shape: out_shape(&x.shape, &ax, i.bool("keepdims")?), dtype, ctx: x.ctx }])
}

fn infer_argmax(def: &'static OpDef, a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (i, x) = (Invocation::params(def, a), &ins[0]);
    let keep = i.bool("keepdims")?;
    let shape = match i.opt_i64("axis")? {
        None if keep => Shape::new(&vec![1; x.shape.ndim()]),
        None => Shape::scalar(),
        Some(ax) => out_shape(&x.shape, &[norm_axis(def.name, ax, x.shape.ndim())?], keep),
    };
    let dtype = if x.dtype == DType::Bool { DType::F32 } else { x.dtype };
    Ok(vec![Meta { shape, dtype, ctx: x.ctx }])
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
