//! Shape operators: reshape, transpose, broadcast, join, split, slice_axis,
//! clip. Definitions and inference here; the frontends (checks, push,
//! gradients) in `layout.rs`; kernels over [`crate::opdef::OpCall`] in `cpu.rs`.

mod cpu;
mod graph;
mod layout;
#[cfg(test)]
mod tests;

pub(crate) use cpu::{clip_tile, transpose_kernel};
pub(crate) use layout::transpose_as;
pub use layout::*;

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    one, param, push_call, Aliases, Attrs, Example, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef,
    ParamKind as K,
};
use crate::ops;
use crate::shape::{norm_axis, Shape};

/// The view operators' kernel: a contiguous copy (see `cpu.rs`).
const VIEW: KernelSlot = KernelSlot::Call(crate::ops::copy_kernel);

const FLUENT: Aliases = Aliases { nd: &[], np: &[], npx: &[], fluent: true };
const EX23: Option<Example> = Some(Example { shapes: &[&[2, 3]], attrs: "", range: (0.5, 1.5) });
const AXIS0: &[ParamDef] = &[param("axis", K::Int, Some("0"), "The axis.")];

fn meta(x: &Meta, dims: Vec<usize>) -> Vec<Meta> {
    vec![Meta { shape: crate::Shape::new(&dims), dtype: x.dtype, ctx: x.ctx }]
}

fn infer_reshape_op(def: &'static OpDef, a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let spec = i.ints("shape")?.unwrap_or_default();
    Ok(meta(&ins[0], infer_reshape(ins[0].shape.dims(), &spec, i.bool("reverse")?)?))
}

fn infer_flatten(_d: &'static OpDef, _a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(meta(&ins[0], flatten_dims(ins[0].shape.dims())))
}

fn infer_expand_dims(def: &'static OpDef, a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let axis = Invocation::params(def, a).i64("axis")?;
    Ok(meta(&ins[0], expand_dims_dims(ins[0].shape.dims(), axis)?))
}

fn infer_reshape_like(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let l = [i.opt_i64("lhs_begin")?, i.opt_i64("lhs_end")?];
    let r = [i.opt_i64("rhs_begin")?, i.opt_i64("rhs_end")?];
    Ok(meta(&ins[0], reshape_like_dims(&ins[0].shape, &ins[1].shape, l, r)?))
}

fn infer_squeeze(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let axes = Invocation::params(def, a).ints("axis")?;
    Ok(meta(&ins[0], squeeze_dims(ins[0].shape.dims(), axes.as_deref())?))
}

/// Checks that `x` broadcasts to exactly `d`.
fn broadcast_meta(name: &str, x: &Meta, d: Vec<usize>) -> Result<Vec<Meta>> {
    let t = Shape::new(&d);
    if Shape::broadcast(name, &x.shape, &t)? != t {
        return Err(Error::shape(name, &[&x.shape, &t], "cannot broadcast"));
    }
    Ok(meta(x, d))
}

fn infer_broadcast_to(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let t = Invocation::params(def, a).shape("shape")?;
    broadcast_meta(def.name, &ins[0], broadcast_mx_dims(ins[0].shape.dims(), t.dims()))
}

fn infer_broadcast_like(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (la, ra) = (i.ints("lhs_axes")?, i.ints("rhs_axes")?);
    Ok(meta(&ins[0], broadcast_like_dims(&ins[0].shape, &ins[1].shape, la.as_deref(), ra.as_deref())?))
}

fn infer_broadcast_axis(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (ax, sz) = (i.ints("axis")?.unwrap_or_default(), i.ints("size")?.unwrap_or_default());
    Ok(meta(&ins[0], broadcast_axis_dims(&ins[0].shape, &ax, &sz)?))
}

fn permuted(x: &Meta, perm: &[usize]) -> Vec<Meta> {
    meta(x, perm.iter().map(|&p| x.shape.dims()[p]).collect())
}

fn infer_transpose(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let axes = Invocation::params(def, a).ints("axes")?.filter(|a| !a.is_empty());
    Ok(permuted(&ins[0], &transpose_perm(ins[0].shape.ndim(), axes.as_deref())?))
}

fn infer_swapaxes(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (i, nd) = (Invocation::params(def, a), ins[0].shape.ndim());
    let (d1, d2) = (norm_axis(def.name, i.i64("dim1")?, nd)?, norm_axis(def.name, i.i64("dim2")?, nd)?);
    let mut p: Vec<usize> = (0..nd).collect();
    p.swap(d1, d2);
    Ok(permuted(&ins[0], &p))
}

/// Dims of `ins` joined along `axis` (the checks `concat` makes).
fn joined(name: &str, ins: &[Meta], axis: i64) -> Result<Vec<usize>> {
    let first = ins.first().ok_or_else(|| Error::value(name, "need at least one array"))?;
    let nd = first.shape.ndim();
    let ax = norm_axis(name, axis, nd)?;
    let mut d = first.shape.dims().to_vec();
    d[ax] = 0;
    for x in ins {
        let same = x.shape.ndim() == nd && (0..nd).all(|i| i == ax || x.shape.dims()[i] == first.shape.dims()[i]);
        if !same {
            return Err(Error::shape(name, &[&first.shape, &x.shape], format!("all dims except axis {ax} must match")));
        }
        if x.dtype != first.dtype {
            return Err(Error::dtype(name, format!("dtypes differ: {} and {}", first.dtype, x.dtype)));
        }
        d[ax] += x.shape.dims()[ax];
    }
    Ok(d)
}

fn infer_concat(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let d = joined(def.name, ins, Invocation::params(def, a).i64("dim")?)?;
    Ok(meta(&ins[0], d))
}

fn infer_stack(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let first = ins.first().ok_or_else(|| Error::value(def.name, "need at least one array"))?;
    let ax = norm_axis(def.name, Invocation::params(def, a).i64("axis")?, first.shape.ndim() + 1)?;
    if let Some(x) = ins.iter().find(|x| x.shape != first.shape) {
        return Err(Error::shape(def.name, &[&first.shape, &x.shape], "all input arrays must have the same shape"));
    }
    let ex: Vec<Meta> = ins
        .iter()
        .map(|x| meta(x, expand_dims_dims(x.shape.dims(), ax as i64).unwrap_or_default()).remove(0))
        .collect();
    Ok(meta(first, joined(def.name, &ex, ax as i64)?))
}

/// `split`'s axis, part length and whether the axis is dropped.
fn split_plan(i: &Invocation<'_>, x: &Shape) -> Result<(usize, usize, usize, bool)> {
    let n = i.name();
    let k = i.i64("num_outputs")?;
    let ax = norm_axis(n, i.i64("axis")?, x.ndim())?;
    let len = x.dims()[ax] as i64;
    if k <= 0 || len % k != 0 {
        return Err(Error::value(
            n,
            format!("axis {ax} of size {len} cannot be split into {k} equal parts (shape {x})"),
        ));
    }
    let step = (len / k) as usize;
    Ok((ax, k as usize, step, i.bool("squeeze_axis")? && step == 1))
}

fn split_dims(x: &Shape, ax: usize, step: usize, squeeze: bool) -> Vec<usize> {
    let mut d = x.dims().to_vec();
    if squeeze {
        d.remove(ax);
    } else {
        d[ax] = step;
    }
    d
}

fn infer_split(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (ax, k, step, sq) = split_plan(&Invocation::params(def, a), &ins[0].shape)?;
    Ok((0..k).map(|_| meta(&ins[0], split_dims(&ins[0].shape, ax, step, sq)).remove(0)).collect())
}

fn infer_slice_axis(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (ax, b, e) = slice_axis_range(ins[0].shape.dims(), i.i64("axis")?, i.i64("begin")?, i.opt_i64("end")?)?;
    let mut d = ins[0].shape.dims().to_vec();
    d[ax] = e - b;
    Ok(meta(&ins[0], d))
}

fn infer_same(_d: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

/// The shape operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "reshape",
        cpu: VIEW,
        aliases: Aliases { nd: &["Reshape"], np: &[], npx: &[], fluent: false },
        inputs: &["data"],
        params: &[
            param("shape", K::Ints, Some("()"), "Target shape with MXNet's codes 0, -1, -2, -3, -4."),
            param("reverse", K::Bool, Some("False"), "Apply the codes from the right."),
        ],
        doc: "A view of `data` with a new shape (MXNet's special codes apply).",
        infer: Some(infer_reshape_op),
        forward: |i| one(reshape(i.x(0)?, &i.ints("shape")?.unwrap_or_default(), i.bool("reverse")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "shape=(3, 2)", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm { json_name: Some("Reshape"), ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "reshape_like",
        cpu: VIEW,
        infer: Some(infer_reshape_like),
        aliases: FLUENT,
        inputs: &["lhs", "rhs"],
        params: &[
            param("lhs_begin", K::Int, Some("None"), "First axis of lhs to replace."),
            param("lhs_end", K::Int, Some("None"), "End of the axes of lhs to replace."),
            param("rhs_begin", K::Int, Some("None"), "First axis of rhs to take."),
            param("rhs_end", K::Int, Some("None"), "End of the axes of rhs to take."),
        ],
        doc: "`lhs` reshaped to (part of) the shape of `rhs`.",
        forward: |i| {
            let l = [i.opt_i64("lhs_begin")?, i.opt_i64("lhs_end")?];
            let r = [i.opt_i64("rhs_begin")?, i.opt_i64("rhs_end")?];
            one(reshape_like(i.x(0)?, i.x(1)?, l, r))
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "flatten",
        cpu: VIEW,
        aliases: Aliases { nd: &["Flatten"], np: &[], npx: &["batch_flatten"], fluent: true },
        inputs: &["data"],
        doc: "Collapses all axes but the first: shape (d0, d1*d2*...).",
        infer: Some(infer_flatten),
        forward: |i| one(flatten(i.x(0)?)),
        example: Some(Example { shapes: &[&[2, 3, 2]], attrs: "", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm { json_name: Some("Flatten"), ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "expand_dims",
        cpu: VIEW,
        aliases: FLUENT,
        inputs: &["data"],
        params: &[param("axis", K::Int, None, "Position of the new axis.")],
        doc: "Inserts an axis of size 1 at `axis`.",
        infer: Some(infer_expand_dims),
        forward: |i| one(expand_dims(i.x(0)?, i.i64("axis")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "axis=1", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "squeeze",
        cpu: VIEW,
        infer: Some(infer_squeeze),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[param("axis", K::Ints, Some("None"), "Axes of size 1 to remove; None: all of them.")],
        doc: "Removes axes of size 1.",
        forward: |i| one(squeeze(i.x(0)?, i.ints("axis")?.as_deref())),
        ..OpDef::BASE
    },
    OpDef {
        name: "broadcast_to",
        cpu: KernelSlot::Call(cpu::broadcast_kernel),
        infer: Some(infer_broadcast_to),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[param("shape", K::Ints, Some("()"), "Target shape (0 keeps the input's size).")],
        doc: "Broadcasts `data` to `shape`.",
        forward: |i| one(broadcast_to_mx(i.x(0)?, i.shape("shape")?)),
        example: Some(Example { shapes: &[&[1, 3]], attrs: "shape=(2, 3)", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "broadcast_like",
        cpu: KernelSlot::Call(cpu::broadcast_kernel),
        infer: Some(infer_broadcast_like),
        aliases: FLUENT,
        inputs: &["lhs", "rhs"],
        params: &[
            param("lhs_axes", K::Ints, Some("None"), "Axes of lhs to broadcast."),
            param("rhs_axes", K::Ints, Some("None"), "Axes of rhs giving the sizes."),
        ],
        doc: "Broadcasts `lhs` to the shape of `rhs` (or of some of its axes).",
        forward: |i| {
            let (la, ra) = (i.ints("lhs_axes")?, i.ints("rhs_axes")?);
            one(broadcast_like(i.x(0)?, i.x(1)?, la.as_deref(), ra.as_deref()))
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "broadcast_axis",
        cpu: KernelSlot::Call(cpu::broadcast_kernel),
        infer: Some(infer_broadcast_axis),
        aliases: Aliases { nd: &["broadcast_axes"], np: &[], npx: &[], fluent: false },
        inputs: &["data"],
        params: &[
            param("axis", K::Ints, Some("()"), "Axes (of size 1) to broadcast."),
            param("size", K::Ints, Some("()"), "Their new sizes."),
        ],
        doc: "Broadcasts axes of size 1 to the given sizes.",
        forward: |i| {
            let (a, s) = (i.ints("axis")?.unwrap_or_default(), i.ints("size")?.unwrap_or_default());
            one(ops::broadcast_axis(i.x(0)?, &a, &s))
        },
        example: Some(Example { shapes: &[&[2, 1]], attrs: "axis=1, size=3", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "transpose",
        cpu: KernelSlot::Call(cpu::transpose_kernel),
        infer: Some(infer_transpose),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[param("axes", K::Ints, Some("()"), "The permutation; (): reverse the axes.")],
        doc: "Permutes the axes.",
        forward: |i| one(transpose(i.x(0)?, i.ints("axes")?.filter(|a| !a.is_empty()).as_deref())),
        example: EX23,
        ..OpDef::BASE
    },
    OpDef {
        name: "swapaxes",
        cpu: KernelSlot::Call(cpu::transpose_kernel),
        infer: Some(infer_swapaxes),
        aliases: Aliases { nd: &["SwapAxis"], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[param("dim1", K::Int, Some("0"), "First axis."), param("dim2", K::Int, Some("0"), "Second axis.")],
        doc: "Interchanges two axes.",
        forward: |i| one(swapaxes(i.x(0)?, i.i64("dim1")?, i.i64("dim2")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "dim1=0, dim2=1", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm { json_name: Some("SwapAxis"), ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "concat",
        cpu: KernelSlot::Call(cpu::concat_kernel),
        infer: Some(infer_concat),
        aliases: Aliases { nd: &["Concat"], np: &[], npx: &[], fluent: false },
        inputs: &["*data"],
        params: &[param("dim", K::Int, Some("1"), "The axis to join along.")],
        doc: "Joins arrays along an existing axis.",
        forward: |i| one(concat(&i.all(), i.i64("dim")?)),
        example: Some(Example { shapes: &[&[2, 3], &[2, 2]], attrs: "dim=1", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm {
            input_shapes: Some(graph::concat_input_shapes),
            json_name: Some("Concat"),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "stack",
        cpu: KernelSlot::Call(cpu::concat_kernel),
        infer: Some(infer_stack),
        inputs: &["*data"],
        params: AXIS0,
        doc: "Joins arrays along a new axis.",
        forward: |i| one(stack(&i.all(), i.i64("axis")?)),
        example: Some(Example { shapes: &[&[2, 3], &[2, 3]], attrs: "axis=1", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "split",
        cpu: KernelSlot::Call(cpu::split_kernel),
        infer: Some(infer_split),
        aliases: Aliases { nd: &["SliceChannel"], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        outputs: &["*output"],
        params: &[
            param("num_outputs", K::Int, None, "Number of equal parts."),
            param("axis", K::Int, Some("1"), "The axis to split."),
            param("squeeze_axis", K::Bool, Some("False"), "Remove the split axis (its parts must have size 1)."),
        ],
        doc: "Splits into `num_outputs` equal parts along `axis`.",
        forward: forward_split,
        graph: crate::opdef::GraphForm {
            input_shapes: Some(graph::split_input_shapes),
            json_name: Some("SliceChannel"),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "slice_axis",
        cpu: KernelSlot::Call(crate::ops::index::gather_kernel),
        infer: Some(infer_slice_axis),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[
            param("axis", K::Int, None, "The axis."),
            param("begin", K::Int, None, "First index."),
            param("end", K::Int, None, "End index (exclusive); None: the axis' end."),
        ],
        doc: "The range [begin, end) of one axis (a view when the axis is the first).",
        forward: |i| one(slice_axis(i.x(0)?, i.i64("axis")?, i.i64("begin")?, i.opt_i64("end")?)),
        example: Some(Example { shapes: &[&[2, 4]], attrs: "axis=1, begin=1, end=3", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "clip",
        cpu: KernelSlot::Call(cpu::clip_kernel),
        scalar: Some(crate::opdef::ScalarForm::Clip),
        infer: Some(infer_same),
        aliases: FLUENT,
        inputs: &["data"],
        params: &[
            param("a_min", K::Float, Some("None"), "Lower bound (None: no lower bound)."),
            param("a_max", K::Float, Some("None"), "Upper bound (None: no upper bound)."),
        ],
        doc: "Limits values to [a_min, a_max].",
        forward: |i| {
            let lo = i.opt_f64("a_min")?.unwrap_or(f64::NEG_INFINITY);
            one(clip(i.x(0)?, lo, i.opt_f64("a_max")?.unwrap_or(f64::INFINITY)))
        },
        example: Some(Example { shapes: &[&[2, 3]], attrs: "a_min=0.7, a_max=1.3", range: (0.5, 1.5) }),
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    meta_def("shape_array", "The shape of `data` as a 1-d int64 array."),
    meta_def("size_array", "The element count of `data` as a 1-element int64 array."),
    OpDef {
        name: "_np_reshape",
        cpu: VIEW,
        inputs: &["data"],
        params: &[
            param("newshape", K::Ints, Some("()"), "Target shape: literal sizes (0 is a size), one -1 inferred."),
            param("order", K::Str, Some("'C'"), "Only 'C' (row-major), as MXNet's."),
        ],
        doc: "A view of `data` with NumPy's reshape rule (MXNet's `_np_reshape`: no special codes; \
              graphs record it where a target has a zero-size axis, which `Reshape` reads as 'copy').",
        infer: Some(infer_np_reshape),
        forward: |i| {
            let x = i.x(0)?;
            let dims = np_reshape_dims(x.size(), &i.ints("newshape")?.unwrap_or_default())?;
            one(reshape_to(x, Shape::new(&dims)))
        },
        example: Some(Example { shapes: &[&[2, 3]], attrs: "newshape=(3, -1)", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
];

/// NumPy's reshape target: literal sizes, at most one -1 (inferred from the rest).
fn np_reshape_dims(size: usize, spec: &[i64]) -> Result<Vec<usize>> {
    let err = |m: &str| Error::value("_np_reshape", format!("{m} (size {size}, newshape {spec:?})"));
    if spec.iter().filter(|&&d| d == -1).count() > 1 || spec.iter().any(|&d| d < -1) {
        return Err(err("at most one -1 and no other negative size"));
    }
    let known: usize = spec.iter().filter(|&&d| d >= 0).map(|&d| d as usize).product();
    let dims: Vec<usize> = spec
        .iter()
        .map(|&d| if d >= 0 { Ok(d as usize) } else { size.checked_div(known).ok_or_else(|| err("cannot infer -1")) })
        .collect::<Result<_>>()?;
    if dims.iter().product::<usize>() != size {
        return Err(err("sizes differ"));
    }
    Ok(dims)
}

fn infer_np_reshape(def: &'static OpDef, a: &crate::opdef::Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let spec = Invocation::params(def, a).ints("newshape")?.unwrap_or_default();
    Ok(meta(&ins[0], np_reshape_dims(ins[0].shape.size(), &spec)?))
}

/// `split`: equal parts along `axis`; views when the axis is the first and
/// nothing records, otherwise one call writing every part.
fn forward_split(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let d = i.x(0)?;
    let (ax, k, step, sq) = split_plan(i, d.shape())?;
    let dims = Shape::new(&split_dims(d.shape(), ax, step, sq));
    if ax == 0 && !needs_record(&[d]) {
        let part = step * d.dims()[1..].iter().product::<usize>();
        return Ok((0..k).map(|j| d.view_as(dims.clone(), j * part)).collect());
    }
    let outs: Vec<NDArray> = (0..k).map(|_| NDArray::empty(dims.clone(), d.dtype(), d.ctx())).collect::<Result<_>>()?;
    let refs: Vec<&NDArray> = outs.iter().collect();
    if d.size() > 0 {
        push_call(OpCall::new(i.def, &[d], &refs).with_ints(&[ax as i64]))?;
    }
    if needs_record(&[d]) {
        let part = split_dims(d.shape(), ax, step, false);
        record(
            i.def.name,
            &[d],
            &refs,
            Box::new(move |g| {
                let parts: Vec<NDArray> = g.iter().map(|x| reshape_to(x, Shape::new(&part))).collect::<Result<_>>()?;
                Ok(vec![Some(concat(&parts, ax as i64)?)])
            }),
        );
    }
    Ok(outs)
}

/// `shape_array`/`size_array`: int64 metadata of the input (`ints`: its dims), computed on
/// the engine like any operator; zero gradients, as MXNet's.
const fn meta_def(name: &'static str, doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: FLUENT,
        inputs: &["data"],
        doc,
        infer: Some(|def, _, ins| {
            let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
            let n = if def.name == "shape_array" { x.shape.ndim() } else { 1 };
            Ok(vec![crate::opdef::Meta { shape: Shape::new(&[n]), dtype: crate::DType::I64, ctx: x.ctx }])
        }),
        forward: |i| {
            let x = i.x(0)?;
            let n = if i.def.name == "shape_array" { x.shape().ndim() } else { 1 };
            let out = NDArray::empty(Shape::new(&[n]), crate::DType::I64, x.ctx())?;
            if n > 0 {
                let ints: Vec<i64> = x.dims().iter().map(|&d| d as i64).collect();
                push_call(OpCall::new(i.def, &[], &[&out]).with_ints(&ints))?;
            }
            if needs_record(&[x]) {
                crate::ops::binary::record_zero_grad(i.def, &[x], &out, &[]);
            }
            one(Ok(out))
        },
        grad: crate::opdef::Grad::Recorded,
        cpu: KernelSlot::Call(cpu::meta_kernel),
        ..OpDef::BASE
    }
}
