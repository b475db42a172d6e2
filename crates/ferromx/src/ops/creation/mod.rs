//! Creation operators: zeros, ones, full, arange, linspace, eye and the `_like`
//! forms. Definitions, inference and frontends here; kernels in `cpu.rs`.

mod cpu;
#[cfg(test)]
mod tests;

use cpu::{arange_kernel, eye_kernel, fill_kernel, linspace_kernel};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::shape::Shape;
use crate::Context;

/// Zeros.
pub fn zeros(shape: impl Into<Shape>, dtype: DType, ctx: Context) -> Result<NDArray> {
    fill_new(&DEFS[0], shape.into(), 0.0, dtype, ctx)
}
/// Ones.
pub fn ones(shape: impl Into<Shape>, dtype: DType, ctx: Context) -> Result<NDArray> {
    fill_new(&DEFS[1], shape.into(), 1.0, dtype, ctx)
}
/// Filled with `value`.
pub fn full(shape: impl Into<Shape>, value: f64, dtype: DType, ctx: Context) -> Result<NDArray> {
    fill_new(&DEFS[2], shape.into(), value, dtype, ctx)
}
/// Zeros like `x`.
pub fn zeros_like(x: &NDArray) -> Result<NDArray> {
    fill_new(&DEFS[6], x.shape().clone(), 0.0, x.dtype(), x.ctx())
}
/// Ones like `x`.
pub fn ones_like(x: &NDArray) -> Result<NDArray> {
    fill_new(&DEFS[7], x.shape().clone(), 1.0, x.dtype(), x.ctx())
}
/// `value` like `x` (MXNet lacks `full_like`; NumPy has it).
pub fn full_like(x: &NDArray, value: f64) -> Result<NDArray> {
    fill_new(&DEFS[8], x.shape().clone(), value, x.dtype(), x.ctx())
}

/// `value` like `x`, recorded as a function of `x` with derivative zero (MXNet's
/// `zeros_like`/`ones_like` gradient) when `x` is recorded: a gradient that is
/// piecewise constant in `x` stays connected to it, so differentiating it again
/// gives zeros instead of an unreachable variable. The zero gradient is itself
/// recorded the same way, to any order.
pub fn const_like_rec(x: &NDArray, value: f64) -> Result<NDArray> {
    let def = if value == 0.0 {
        &DEFS[6]
    } else if value == 1.0 {
        &DEFS[7]
    } else {
        &DEFS[8]
    };
    let out = fill_new(def, x.shape().clone(), value, x.dtype(), x.ctx())?;
    if crate::autograd::needs_record(&[x]) {
        let back: crate::autograd::BackwardFn = Box::new(|g| Ok(vec![Some(const_like_rec(&g[0], 0.0)?)]));
        crate::autograd::record(def.name, &[x], &[&out], back);
    }
    Ok(out)
}

/// A new array of `def` (one of the fill operators) filled with `value`.
fn fill_new(def: &'static OpDef, shape: Shape, value: f64, dtype: DType, ctx: Context) -> Result<NDArray> {
    let out = NDArray::empty(shape, dtype, ctx)?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[], &[&out]).with_nums(&[value]))?;
    }
    Ok(out)
}

/// `arange`'s resolved `(start, step, count)`, checked.
fn arange_plan(start: f64, stop: Option<f64>, step: f64, repeat: usize) -> Result<(f64, f64, usize)> {
    let (start, stop) = match stop {
        Some(s) => (start, s),
        None => (0.0, start),
    };
    if !(start.is_finite() && stop.is_finite() && step.is_finite()) {
        return Err(Error::value(
            "arange",
            format!("start, stop and step must be finite, got {start}, {stop}, {step}"),
        ));
    }
    if step == 0.0 {
        return Err(Error::value("arange", "step must not be zero"));
    }
    if repeat == 0 {
        return Err(Error::value("arange", "repeat must be positive"));
    }
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    Ok((start, step, n.saturating_mul(repeat)))
}

/// `arange(start, stop, step)` with each value repeated `repeat` times (MXNet semantics).
pub fn arange(start: f64, stop: Option<f64>, step: f64, repeat: usize, dtype: DType, ctx: Context) -> Result<NDArray> {
    let (start, step, len) = arange_plan(start, stop, step, repeat)?;
    let out = NDArray::empty(Shape::new(&[len]), dtype, ctx)?;
    if len > 0 {
        push_call(OpCall::new(&DEFS[3], &[], &[&out]).with_nums(&[start, step]).with_ints(&[repeat as i64]))?;
    }
    Ok(out)
}

/// `num` evenly spaced values over `[start, stop]` (or `[start, stop)` without endpoint).
pub fn linspace(start: f64, stop: f64, num: usize, endpoint: bool, dtype: DType, ctx: Context) -> Result<NDArray> {
    let out = NDArray::empty(Shape::new(&[num]), dtype, ctx)?;
    if num > 0 {
        let div = if endpoint { (num as f64 - 1.0).max(1.0) } else { num as f64 };
        let step = (stop - start) / div;
        let call = OpCall::new(&DEFS[4], &[], &[&out]).with_nums(&[start, stop, step]);
        push_call(call.with_ints(&[endpoint as i64]))?;
    }
    Ok(out)
}

/// Identity-like matrix with ones on diagonal `k`.
pub fn eye(n: usize, m: Option<usize>, k: i64, dtype: DType, ctx: Context) -> Result<NDArray> {
    let m = m.unwrap_or(n);
    let out = NDArray::empty(Shape::new(&[n, m]), dtype, ctx)?;
    if n * m > 0 {
        push_call(OpCall::new(&DEFS[5], &[], &[&out]).with_ints(&[k]))?;
    }
    Ok(out)
}

fn infer_arange(def: &'static OpDef, a: &crate::opdef::Attrs, _ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let repeat = i.i64("repeat")?.max(0) as usize;
    let (_, _, len) = arange_plan(i.f64("start")?, i.opt_f64("stop")?, i.f64("step")?, repeat)?;
    Ok(vec![Meta { shape: Shape::new(&[len]), dtype: i.dtype("dtype", DType::F32)?, ctx: i.ctx("ctx")? }])
}

fn infer_linspace(def: &'static OpDef, a: &crate::opdef::Attrs, _ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let num = i.i64("num")?.max(0) as usize;
    Ok(vec![Meta { shape: Shape::new(&[num]), dtype: i.dtype("dtype", DType::F32)?, ctx: i.ctx("ctx")? }])
}

fn infer_eye(def: &'static OpDef, a: &crate::opdef::Attrs, _ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let n = i.i64("N")?.max(0) as usize;
    let m = i.opt_i64("M")?.filter(|&m| m > 0).map(|m| m as usize).unwrap_or(n);
    Ok(vec![Meta { shape: Shape::new(&[n, m]), dtype: i.dtype("dtype", DType::F32)?, ctx: i.ctx("ctx")? }])
}

use crate::opdef::{
    one, param, push_call, Aliases, Grad, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
    ScalarForm,
};

const CREATE: &[ParamDef] = &[
    param("shape", K::Shape, Some("()"), "Output shape."),
    param("ctx", K::Context, Some("None"), "Context of the result (default: the current context)."),
    param("dtype", K::DType, Some("'float32'"), "Element type of the result."),
];
const CONSTANT: Grad = Grad::None("creates a constant");

/// `shape`, `dtype`, `ctx` attributes to the output's metadata.
fn infer_create(def: &'static OpDef, a: &crate::opdef::Attrs, _ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    Ok(vec![Meta { shape: i.shape("shape")?, dtype: i.dtype("dtype", DType::F32)?, ctx: i.ctx("ctx")? }])
}

/// The `_like` forms: the input's metadata.
fn infer_like(_def: &'static OpDef, _a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

/// The creation operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "_zeros",
        cpu: KernelSlot::Call(fill_kernel),
        scalar: Some(ScalarForm::Fill),
        infer: Some(infer_create),
        params: CREATE,
        doc: "An array of zeros.",
        forward: |i| one(zeros(i.shape("shape")?, i.dtype("dtype", DType::F32)?, i.ctx("ctx")?)),
        grad: CONSTANT,
        ..OpDef::BASE
    },
    OpDef {
        name: "_ones",
        cpu: KernelSlot::Call(fill_kernel),
        scalar: Some(ScalarForm::Fill),
        infer: Some(infer_create),
        params: CREATE,
        doc: "An array of ones.",
        forward: |i| one(ones(i.shape("shape")?, i.dtype("dtype", DType::F32)?, i.ctx("ctx")?)),
        grad: CONSTANT,
        ..OpDef::BASE
    },
    OpDef {
        name: "_full",
        cpu: KernelSlot::Call(fill_kernel),
        scalar: Some(ScalarForm::Fill),
        infer: Some(infer_create),
        params: &[
            param("shape", K::Shape, Some("()"), "Output shape."),
            param("value", K::Float, Some("0.0"), "The fill value."),
            param("ctx", K::Context, Some("None"), "Context of the result."),
            param("dtype", K::DType, Some("'float32'"), "Element type of the result."),
        ],
        doc: "An array filled with `value`.",
        forward: |i| one(full(i.shape("shape")?, i.f64("value")?, i.dtype("dtype", DType::F32)?, i.ctx("ctx")?)),
        grad: CONSTANT,
        ..OpDef::BASE
    },
    OpDef {
        name: "_arange",
        cpu: KernelSlot::Call(arange_kernel),
        infer: Some(infer_arange),
        params: &[
            param("start", K::Float, Some("0.0"), "Start of the interval."),
            param("stop", K::Float, Some("None"), "End of the interval (exclusive); None: [0, start)."),
            param("step", K::Float, Some("1.0"), "Spacing between values."),
            param("repeat", K::Int, Some("1"), "Times each value is repeated."),
            param("ctx", K::Context, Some("None"), "Context of the result."),
            param("dtype", K::DType, Some("'float32'"), "Element type of the result."),
        ],
        doc: "Evenly spaced values within an interval, each repeated `repeat` times.",
        forward: |i| {
            one(arange(
                i.f64("start")?,
                i.opt_f64("stop")?,
                i.f64("step")?,
                i.i64("repeat")?.max(0) as usize,
                i.dtype("dtype", DType::F32)?,
                i.ctx("ctx")?,
            ))
        },
        grad: CONSTANT,
        ..OpDef::BASE
    },
    OpDef {
        name: "_linspace",
        cpu: KernelSlot::Call(linspace_kernel),
        infer: Some(infer_linspace),
        params: &[
            param("start", K::Float, Some("0.0"), "First value."),
            param("stop", K::Float, Some("1.0"), "Last value (included when `endpoint`)."),
            param("num", K::Int, Some("50"), "Number of values."),
            param("endpoint", K::Bool, Some("True"), "Whether `stop` is included."),
            param("ctx", K::Context, Some("None"), "Context of the result."),
            param("dtype", K::DType, Some("'float32'"), "Element type of the result."),
        ],
        doc: "`num` evenly spaced values over [start, stop].",
        forward: |i| {
            one(linspace(
                i.f64("start")?,
                i.f64("stop")?,
                i.i64("num")?.max(0) as usize,
                i.bool("endpoint")?,
                i.dtype("dtype", DType::F32)?,
                i.ctx("ctx")?,
            ))
        },
        grad: CONSTANT,
        ..OpDef::BASE
    },
    OpDef {
        name: "_eye",
        cpu: KernelSlot::Call(eye_kernel),
        infer: Some(infer_eye),
        params: &[
            param("N", K::Int, Some("0"), "Number of rows."),
            param("M", K::Int, Some("0"), "Number of columns (0: N)."),
            param("k", K::Int, Some("0"), "Diagonal offset (positive: above the main diagonal)."),
            param("ctx", K::Context, Some("None"), "Context of the result."),
            param("dtype", K::DType, Some("'float32'"), "Element type of the result."),
        ],
        doc: "A 2-d array with ones on diagonal `k` and zeros elsewhere.",
        forward: |i| {
            let m = i.opt_i64("M")?.filter(|&m| m > 0).map(|m| m as usize);
            one(eye(i.i64("N")?.max(0) as usize, m, i.i64("k")?, i.dtype("dtype", DType::F32)?, i.ctx("ctx")?))
        },
        grad: CONSTANT,
        ..OpDef::BASE
    },
    OpDef {
        name: "zeros_like",
        cpu: KernelSlot::Call(fill_kernel),
        scalar: Some(ScalarForm::Fill),
        infer: Some(infer_like),
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        doc: "Zeros with the shape, dtype and context of `data`.",
        forward: |i| one(const_like_rec(i.x(0)?, 0.0)),
        grad: Grad::Recorded,
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "ones_like",
        cpu: KernelSlot::Call(fill_kernel),
        scalar: Some(ScalarForm::Fill),
        infer: Some(infer_like),
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        doc: "Ones with the shape, dtype and context of `data`.",
        forward: |i| one(const_like_rec(i.x(0)?, 1.0)),
        grad: Grad::Recorded,
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "full_like",
        cpu: KernelSlot::Call(fill_kernel),
        scalar: Some(ScalarForm::Fill),
        infer: Some(infer_like),
        inputs: &["data"],
        params: &[param("fill_value", K::Float, Some("0.0"), "The fill value.")],
        doc: "`fill_value` with the shape, dtype and context of `data`.",
        forward: |i: &Invocation<'_>| one(const_like_rec(i.x(0)?, i.f64("fill_value")?)),
        grad: Grad::Recorded,
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
];
