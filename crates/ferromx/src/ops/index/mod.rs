//! Selection and rearrangement operators: take, pick, one_hot, where,
//! gather_nd/scatter_nd, slice, slice_like, tile, repeat, flip, moveaxis,
//! diag; and NumPy-style indexing (`x[key]`, `x[key] = v`) in `indexing.rs`.
//! Definitions and inference here; the frontends (checks, push, gradients)
//! in `select.rs` and `gather.rs`; kernels over [`crate::opdef::OpCall`] in
//! `cpu.rs`. `indexing.rs` builds `x[key]` from these operators.

mod cpu;
mod gather;
pub mod indexing;
mod select;
#[cfg(test)]
mod tests;

pub(crate) use cpu::{affine_ints, gather_kernel, where_tile};
pub(crate) use gather::scatter_affine_rec;
pub use gather::*;
pub use indexing::Idx;
pub(crate) use select::take_grad;
pub use select::*;

use crate::engine::ErrorKind;
use crate::error::{Error, Result};
use crate::opdef::{
    one, param, Aliases, Attrs, Example, Grad, Invocation, KernelSlot, Meta, OpDef, ParamDef, ParamKind as K,
};
use crate::ops;
use crate::shape::{norm_axis, Shape};
use crate::DType;

/// Index of `_backward_slice` in [`DEFS`].
const SLICE_BWD: usize = 14;
/// Index of `_backward_take`.
const TAKE_BWD: usize = 15;
/// Index of `_backward_pick`.
const PICK_BWD: usize = 16;
/// Index of `_backward_gather_nd`.
const GATHER_ND_BWD: usize = 17;

/// The definition of `slice` (what [`ops::slice_steps`] pushes).
pub fn slice_def() -> &'static OpDef {
    &DEFS[11]
}

fn meta(x: &Meta, dims: Vec<usize>) -> Vec<Meta> {
    vec![Meta { shape: Shape::new(&dims), dtype: x.dtype, ctx: x.ctx }]
}

fn infer_take(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (x, idx) = (&ins[0].shape, &ins[1].shape);
    let ax = norm_axis(def.name, Invocation::params(def, a).i64("axis")?, x.ndim())?;
    let mut d = x.dims()[..ax].to_vec();
    d.extend_from_slice(idx.dims());
    d.extend_from_slice(&x.dims()[ax + 1..]);
    Ok(meta(&ins[0], d))
}

fn infer_pick(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let ax = norm_axis(def.name, i.i64("axis")?, ins[0].shape.ndim())?;
    let mut d = ins[0].shape.dims().to_vec();
    if i.bool("keepdims")? {
        d[ax] = 1;
    } else {
        d.remove(ax);
    }
    if ins[1].shape.size() != d.iter().product::<usize>() {
        return Err(Error::shape(
            def.name,
            &[&ins[0].shape, &ins[1].shape],
            "index must have the shape of data without axis",
        ));
    }
    Ok(meta(&ins[0], d))
}

fn infer_one_hot(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let mut d = ins[0].shape.dims().to_vec();
    d.push(i.i64("depth")?.max(0) as usize);
    Ok(vec![Meta { shape: Shape::new(&d), dtype: i.dtype("dtype", DType::F32)?, ctx: ins[0].ctx }])
}

fn infer_where(_def: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (c, x, y) = (&ins[0].shape, &ins[1].shape, &ins[2].shape);
    let rows = where_rows(c, x, y);
    let s = where_shape(rows.as_ref().unwrap_or(c), x, y)?;
    Ok(vec![Meta { shape: s, ..ins[1].clone() }])
}

fn infer_tile(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let reps = Invocation::params(def, a).req_ints("reps")?;
    Ok(meta(&ins[0], tile_plan(ins[0].shape.dims(), &reps)?.0))
}

fn infer_repeat(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    Ok(meta(&ins[0], repeat_plan(ins[0].shape.dims(), i.i64("repeats")?, i.opt_i64("axis")?)?.0))
}

fn infer_flip(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    ops::resolve_axes(def.name, ins[0].shape.ndim(), Some(&Invocation::params(def, a).req_ints("axis")?), false)?;
    Ok(vec![ins[0].clone()])
}

fn infer_moveaxis(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let p = moveaxis_perm(ins[0].shape.ndim(), &i.req_ints("source")?, &i.req_ints("destination")?)?;
    Ok(meta(&ins[0], p.iter().map(|&p| ins[0].shape.dims()[p]).collect()))
}

fn infer_gather_nd(def: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (x, idx) = (&ins[0].shape, &ins[1].shape);
    let m = idx.dims().first().copied().unwrap_or(0);
    if idx.ndim() == 0 || m > x.ndim() {
        return Err(Error::shape(def.name, &[x, idx], "indices must be (M, ...) with M at most the data's rank"));
    }
    let mut d = idx.dims()[1..].to_vec();
    d.extend_from_slice(&x.dims()[m..]);
    Ok(meta(&ins[0], d))
}

fn infer_scatter_nd(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![Meta { shape: Invocation::params(def, a).shape("shape")?, ..ins[0].clone() }])
}

fn infer_slice(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let step = i.ints("step")?.unwrap_or_default();
    let spec = slice_spec(&ins[0].shape, &i.req_ints("begin")?, &i.req_ints("end")?, &step)?;
    Ok(meta(&ins[0], spec.iter().map(|s| s.len).collect()))
}

fn infer_slice_like(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let axes = Invocation::params(def, a).ints("axes")?.unwrap_or_default();
    let spec = slice_like_spec(&ins[0].shape, &ins[1].shape, &axes)?;
    Ok(meta(&ins[0], spec.iter().map(|s| s.len).collect()))
}

fn infer_diag(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (x, k) = (&ins[0].shape, i.i64("k")?);
    let d = match x.ndim() {
        0 => return Err(Error::shape(def.name, &[x], "input must have at least one dimension")),
        1 => {
            let m = x.size() + k.unsigned_abs() as usize;
            vec![m, m]
        }
        nd => {
            let (a1, a2) = (norm_axis(def.name, i.i64("axis1")?, nd)?, norm_axis(def.name, i.i64("axis2")?, nd)?);
            if a1 == a2 {
                return Err(Error::value(def.name, format!("axis1 and axis2 cannot refer to the same axis {a1}")));
            }
            let (d1, d2) = (x.dims()[a1] as i64, x.dims()[a2] as i64);
            let len = if k >= 0 { d1.min(d2 - k) } else { (d1 + k).min(d2) }.max(0) as usize;
            let mut d: Vec<usize> = (0..nd).filter(|&d| d != a1 && d != a2).map(|d| x.dims()[d]).collect();
            d.push(len);
            d
        }
    };
    Ok(meta(&ins[0], d))
}

/// The gradient operators: the data's shape comes from the `shape` attribute.
fn infer_data_shape(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![Meta { shape: Invocation::params(def, a).shape("shape")?, ..ins[0].clone() }])
}

const DATA_SHAPE: ParamDef = param("shape", K::Shape, None, "Shape of the forward's data (the result).");
const FLUENT: Aliases = Aliases { nd: &[], np: &[], npx: &[], fluent: true };
const INDICES: Grad = Grad::Recorded;

/// The selection and rearrangement operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "take",
        cpu: KernelSlot::Call(cpu::take_kernel),
        infer: Some(infer_take),
        aliases: FLUENT,
        inputs: &["a", "indices"],
        params: &[
            param("axis", K::Int, Some("0"), "The axis to take along."),
            param("mode", K::Str, Some("'clip'"), "Out-of-range indices: 'clip', 'wrap' or 'raise'."),
        ],
        doc: "Elements of `a` at `indices` along `axis`.",
        forward: |i| one(ops::take(i.x(0)?, i.x(1)?, i.i64("axis")?, IndexMode::parse(&i.str("mode")?)?)),
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "pick",
        cpu: KernelSlot::Call(cpu::pick_kernel),
        infer: Some(infer_pick),
        aliases: Aliases { nd: &[], np: &[], npx: &["pick"], fluent: true },
        inputs: &["data", "index"],
        params: &[
            param("axis", K::Int, Some("-1"), "The axis to pick along."),
            param("keepdims", K::Bool, Some("False"), "Keep the picked axis with size 1."),
            param("mode", K::Str, Some("'clip'"), "Out-of-range indices: 'clip' or 'wrap'."),
        ],
        doc: "One element per position along `axis`, chosen by `index`.",
        forward: |i| {
            let mode = IndexMode::parse(&i.str("mode")?)?;
            one(ops::pick(i.x(0)?, i.x(1)?, i.i64("axis")?, i.bool("keepdims")?, mode))
        },
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "one_hot",
        cpu: KernelSlot::Call(cpu::one_hot_kernel),
        infer: Some(infer_one_hot),
        aliases: Aliases { nd: &[], np: &[], npx: &["one_hot"], fluent: true },
        inputs: &["indices"],
        params: &[
            param("depth", K::Int, None, "Number of classes."),
            param("on_value", K::Float, Some("1.0"), "Value at the index."),
            param("off_value", K::Float, Some("0.0"), "Value elsewhere."),
            param("dtype", K::DType, Some("'float32'"), "Element type of the result."),
        ],
        doc: "One-hot encoding of integer `indices` (a new last axis of size `depth`).",
        forward: |i| {
            let depth = i.i64("depth")?.max(0) as usize;
            let dt = i.dtype("dtype", crate::DType::F32)?;
            one(ops::one_hot(i.x(0)?, depth, i.f64("on_value")?, i.f64("off_value")?, dt))
        },
        grad: Grad::None("indices are integers"),
        ..OpDef::BASE
    },
    OpDef {
        name: "where",
        cpu: KernelSlot::Call(cpu::where_kernel),
        scalar: Some(crate::opdef::ScalarForm::Where),
        infer: Some(infer_where),
        inputs: &["condition", "x", "y"],
        doc: "`x` where `condition` is non-zero, else `y` (row-wise for a 1-d condition).",
        forward: |i| one(ops::where_(i.x(0)?, i.x(1)?, i.x(2)?)),
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "tile",
        cpu: KernelSlot::Call(cpu::gather_kernel),
        infer: Some(infer_tile),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[param("reps", K::Ints, None, "Repetitions per axis.")],
        doc: "Repeats the whole array `reps` times along each axis.",
        forward: |i| one(ops::tile(i.x(0)?, &i.req_ints("reps")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "reps=(2, 1)", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "repeat",
        cpu: KernelSlot::Call(cpu::gather_kernel),
        infer: Some(infer_repeat),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[
            param("repeats", K::Int, None, "Repetitions of each element."),
            param("axis", K::Int, Some("None"), "The axis; None: the flattened array."),
        ],
        doc: "Repeats each element `repeats` times.",
        forward: |i| one(ops::repeat(i.x(0)?, i.i64("repeats")?, i.opt_i64("axis")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "repeats=2, axis=1", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "flip",
        cpu: KernelSlot::Call(cpu::gather_kernel),
        infer: Some(infer_flip),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[param("axis", K::Ints, None, "Axes to reverse.")],
        doc: "Reverses the order of elements along `axis`.",
        forward: |i| one(ops::flip(i.x(0)?, &i.req_ints("axis")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "axis=1", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "reverse",
        cpu: KernelSlot::Call(cpu::gather_kernel),
        infer: Some(infer_flip),
        inputs: &["data"],
        params: &[param("axis", K::Ints, None, "Axes to reverse.")],
        doc: "Reverses the order of elements along `axis` (MXNet's name for flip).",
        forward: |i| {
            let r = ops::flip(i.x(0)?, &i.req_ints("axis")?);
            one(r.map_err(|e| if e.kind() == ErrorKind::Value { Error::value("reverse", e.to_string()) } else { e }))
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "moveaxis",
        cpu: KernelSlot::Call(crate::ops::shape::transpose_kernel),
        infer: Some(infer_moveaxis),
        inputs: &["data"],
        params: &[
            param("source", K::Ints, None, "Axes to move."),
            param("destination", K::Ints, None, "Their new positions."),
        ],
        doc: "Moves axes to new positions, keeping the order of the others.",
        forward: |i| one(ops::moveaxis(i.x(0)?, &i.req_ints("source")?, &i.req_ints("destination")?)),
        ..OpDef::BASE
    },
    OpDef {
        name: "gather_nd",
        cpu: KernelSlot::Call(cpu::gather_nd_kernel),
        infer: Some(infer_gather_nd),
        inputs: &["data", "indices"],
        doc: "Elements at the coordinates in `indices` (first axis: coordinate).",
        forward: |i| one(ops::gather_nd(i.x(0)?, i.x(1)?)),
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "scatter_nd",
        cpu: KernelSlot::Call(cpu::scatter_nd_kernel),
        infer: Some(infer_scatter_nd),
        inputs: &["data", "indices"],
        params: &[param("shape", K::Shape, None, "Shape of the result.")],
        doc: "Zeros of `shape` with `data` written at the coordinates in `indices`.",
        forward: |i| one(ops::scatter_nd(i.x(0)?, i.x(1)?, i.shape("shape")?)),
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "slice",
        cpu: KernelSlot::Call(cpu::gather_kernel),
        infer: Some(infer_slice),
        aliases: Aliases { nd: &["crop"], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[
            param("begin", K::Ints, None, "Start per leading axis (None entries: the default)."),
            param("end", K::Ints, None, "End per leading axis (exclusive)."),
            param("step", K::Ints, Some("()"), "Step per leading axis."),
        ],
        doc: "A strided slice over the leading axes (always a copy).",
        // `None` entries of begin/end/step arrive as ops::NONE_INDEX (i64::MIN).
        forward: |i| {
            let step = i.ints("step")?.unwrap_or_default();
            one(ops::slice(i.x(0)?, &i.req_ints("begin")?, &i.req_ints("end")?, &step))
        },
        example: Some(Example { shapes: &[&[3, 4]], attrs: "begin=(0, 1), end=(2, 4)", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "slice_like",
        cpu: KernelSlot::Call(cpu::gather_kernel),
        infer: Some(infer_slice_like),
        aliases: FLUENT,
        inputs: &["data", "shape_like"],
        params: &[param("axes", K::Ints, Some("()"), "Axes to slice; (): all.")],
        doc: "`data` sliced to the shape of `shape_like`.",
        forward: |i| one(ops::slice_like(i.x(0)?, i.x(1)?, &i.ints("axes")?.unwrap_or_default())),
        ..OpDef::BASE
    },
    OpDef {
        name: "diag",
        cpu: KernelSlot::Call(cpu::diag_kernel),
        infer: Some(infer_diag),
        inputs: &["data"],
        params: &[
            param("k", K::Int, Some("0"), "Diagonal offset."),
            param("axis1", K::Int, Some("0"), "First axis of the 2-d planes."),
            param("axis2", K::Int, Some("1"), "Second axis of the 2-d planes."),
        ],
        doc: "The k-th diagonal of a matrix, or a diagonal matrix from a vector.",
        forward: |i| one(ops::diag(i.x(0)?, i.i64("k")?, i.i64("axis1")?, i.i64("axis2")?)),
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_slice",
        cpu: KernelSlot::Call(cpu::scatter_kernel),
        infer: Some(infer_data_shape),
        inputs: &["out_grad"],
        params: &[
            param("begin", K::Ints, None, "Start per leading axis, as given to slice."),
            param("end", K::Ints, None, "End per leading axis (exclusive), as given to slice."),
            param("step", K::Ints, Some("()"), "Step per leading axis, as given to slice."),
            DATA_SHAPE,
        ],
        doc: "Gradient of `slice` (and of slice_axis, slice_like and basic indexing): zeros of \
              `shape` with `out_grad` written into the sliced region. Its own gradient is the slice.",
        forward: |i| {
            let step = i.ints("step")?.unwrap_or_default();
            one(ops::backward_slice(i.x(0)?, i.shape("shape")?, &i.req_ints("begin")?, &i.req_ints("end")?, &step))
        },
        grad: INDICES,
        example: Some(Example {
            shapes: &[&[2, 3]],
            attrs: "begin=(0, 1), end=(2, 4), shape=(3, 4)",
            range: (0.5, 1.5),
        }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_take",
        cpu: KernelSlot::Call(cpu::take_backward_kernel),
        infer: Some(infer_data_shape),
        inputs: &["out_grad", "indices"],
        params: &[
            param("axis", K::Int, Some("0"), "The axis take gathered along."),
            param("mode", K::Str, Some("'clip'"), "Out-of-range indices, as in take."),
            DATA_SHAPE,
        ],
        doc: "Gradient of `take`: zeros of `shape` with the rows of `out_grad` added at `indices`. \
              Its own gradient is take.",
        forward: |i| {
            let shape = i.shape("shape")?;
            let ax = norm_axis(i.name(), i.i64("axis")?, shape.ndim())?;
            one(ops::backward_take(i.x(0)?, i.x(1)?, shape, ax, IndexMode::parse(&i.str("mode")?)?))
        },
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_pick",
        cpu: KernelSlot::Call(cpu::pick_backward_kernel),
        infer: Some(infer_data_shape),
        inputs: &["out_grad", "index"],
        params: &[
            param("axis", K::Int, Some("-1"), "The axis pick chose along."),
            param("keepdims", K::Bool, Some("False"), "Whether pick kept the axis."),
            param("mode", K::Str, Some("'clip'"), "Out-of-range indices, as in pick."),
            DATA_SHAPE,
        ],
        doc: "Gradient of `pick`: zeros of `shape` with `out_grad` at the picked positions. \
              Its own gradient is pick.",
        forward: |i| {
            let shape = i.shape("shape")?;
            let ax = norm_axis(i.name(), i.i64("axis")?, shape.ndim())?;
            let mode = IndexMode::parse(&i.str("mode")?)?;
            one(ops::backward_pick(i.x(0)?, i.x(1)?, shape, ax, i.bool("keepdims")?, mode))
        },
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_gather_nd",
        cpu: KernelSlot::Call(cpu::scatter_nd_kernel),
        infer: Some(infer_scatter_nd),
        inputs: &["data", "indices"],
        params: &[param("shape", K::Shape, None, "Shape of the result.")],
        doc: "Gradient of `gather_nd`: zeros of `shape` with `data`'s blocks added at the \
              coordinates in `indices` (duplicates accumulate). Its own gradient is gather_nd.",
        forward: |i| one(ops::backward_gather_nd(i.x(0)?, i.x(1)?, i.shape("shape")?)),
        grad: INDICES,
        ..OpDef::BASE
    },
];
