//! Selection and rearrangement operators: take, pick, one_hot, where,
//! gather_nd/scatter_nd, slice, slice_like, tile, repeat, flip, moveaxis,
//! diag; and NumPy-style indexing (`x[key]`, `x[key] = v`) in `indexing.rs`.
//! Definitions here; the operators' functions in `select.rs` and `gather.rs`
//! (still [`KernelSlot::Inline`] definitions).
//!
//! [`KernelSlot::Inline`]: crate::opdef::KernelSlot::Inline

mod gather;
pub mod indexing;
mod select;

pub use gather::*;
pub use indexing::Idx;
pub use select::*;

use crate::opdef::{one, param, Aliases, Example, Grad, OpDef, ParamKind as K};
use crate::ops;

const FLUENT: Aliases = Aliases { nd: &[], np: &[], npx: &[], fluent: true };
const INDICES: Grad = Grad::Recorded;

/// The selection and rearrangement operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "take",
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
        inputs: &["condition", "x", "y"],
        doc: "`x` where `condition` is non-zero, else `y` (row-wise for a 1-d condition).",
        forward: |i| one(ops::where_(i.x(0)?, i.x(1)?, i.x(2)?)),
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "tile",
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
        inputs: &["data"],
        params: &[param("axis", K::Ints, None, "Axes to reverse.")],
        doc: "Reverses the order of elements along `axis` (MXNet's name for flip).",
        forward: |i| one(ops::flip(i.x(0)?, &i.req_ints("axis")?)),
        ..OpDef::BASE
    },
    OpDef {
        name: "moveaxis",
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
        inputs: &["data", "indices"],
        doc: "Elements at the coordinates in `indices` (first axis: coordinate).",
        forward: |i| one(ops::gather_nd(i.x(0)?, i.x(1)?)),
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "scatter_nd",
        inputs: &["data", "indices"],
        params: &[param("shape", K::Shape, None, "Shape of the result.")],
        doc: "Zeros of `shape` with `data` written at the coordinates in `indices`.",
        forward: |i| one(ops::scatter_nd(i.x(0)?, i.x(1)?, i.shape("shape")?)),
        grad: INDICES,
        ..OpDef::BASE
    },
    OpDef {
        name: "slice",
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
        aliases: FLUENT,
        inputs: &["data", "shape_like"],
        params: &[param("axes", K::Ints, Some("()"), "Axes to slice; (): all.")],
        doc: "`data` sliced to the shape of `shape_like`.",
        forward: |i| one(ops::slice_like(i.x(0)?, i.x(1)?, &i.ints("axes")?.unwrap_or_default())),
        ..OpDef::BASE
    },
    OpDef {
        name: "diag",
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
];
