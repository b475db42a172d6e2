//! Shape operators: reshape, transpose, broadcast, join, split, slice,
//! tile, repeat, flip. Definitions here; the operators' functions in
//! `layout.rs` (their inference, kernels and gradients are still written
//! together there: these are [`KernelSlot::Inline`] definitions).
//!
//! [`KernelSlot::Inline`]: crate::opdef::KernelSlot::Inline

mod layout;

pub use layout::*;

use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{one, param, Aliases, Example, Invocation, Meta, OpDef, ParamDef, ParamKind as K};
use crate::ops;

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

/// The shape operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "reshape",
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
        ..OpDef::BASE
    },
    OpDef {
        name: "reshape_like",
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
        aliases: Aliases { nd: &["Flatten"], np: &[], npx: &["batch_flatten"], fluent: true },
        inputs: &["data"],
        doc: "Collapses all axes but the first: shape (d0, d1*d2*...).",
        infer: Some(infer_flatten),
        forward: |i| one(flatten(i.x(0)?)),
        example: Some(Example { shapes: &[&[2, 3, 2]], attrs: "", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "expand_dims",
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
        aliases: FLUENT,
        inputs: &["data"],
        params: &[param("axis", K::Ints, Some("None"), "Axes of size 1 to remove; None: all of them.")],
        doc: "Removes axes of size 1.",
        forward: |i| one(squeeze(i.x(0)?, i.ints("axis")?.as_deref())),
        ..OpDef::BASE
    },
    OpDef {
        name: "broadcast_to",
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
        aliases: Aliases { nd: &["SwapAxis"], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[param("dim1", K::Int, Some("0"), "First axis."), param("dim2", K::Int, Some("0"), "Second axis.")],
        doc: "Interchanges two axes.",
        forward: |i| one(swapaxes(i.x(0)?, i.i64("dim1")?, i.i64("dim2")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "dim1=0, dim2=1", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "concat",
        aliases: Aliases { nd: &["Concat"], np: &[], npx: &[], fluent: false },
        inputs: &["*data"],
        params: &[param("dim", K::Int, Some("1"), "The axis to join along.")],
        doc: "Joins arrays along an existing axis.",
        forward: |i| one(concat(&i.all(), i.i64("dim")?)),
        example: Some(Example { shapes: &[&[2, 3], &[2, 2]], attrs: "dim=1", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "stack",
        inputs: &["*data"],
        params: AXIS0,
        doc: "Joins arrays along a new axis.",
        forward: |i| one(stack(&i.all(), i.i64("axis")?)),
        example: Some(Example { shapes: &[&[2, 3], &[2, 3]], attrs: "axis=1", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "split",
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
        ..OpDef::BASE
    },
    OpDef {
        name: "slice_axis",
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
        ..OpDef::BASE
    },
];

fn forward_split(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let (n, d) = (i.name(), i.x(0)?);
    let k = i.i64("num_outputs")?;
    let ax = crate::shape::norm_axis(n, i.i64("axis")?, d.ndim())?;
    let len = d.dims()[ax] as i64;
    if k <= 0 || len % k != 0 {
        return Err(Error::value(
            n,
            format!("axis {ax} of size {len} cannot be split into {k} equal parts (shape {})", d.shape()),
        ));
    }
    let step = len / k;
    let sq = i.bool("squeeze_axis")?;
    (0..k)
        .map(|j| {
            let p = slice_axis(d, ax as i64, j * step, Some((j + 1) * step))?;
            if sq && step == 1 {
                squeeze(&p, Some(&[ax as i64]))
            } else {
                Ok(p)
            }
        })
        .collect()
}
