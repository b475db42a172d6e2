//! Neural-network operators.

mod activation;
mod fc;
mod softmax;

pub use activation::*;
pub use fc::*;
pub use softmax::*;

use crate::opdef::{one, param, Aliases, Example, Invocation, OpDef, ParamKind as K};
use crate::ops::{self, ReduceOp};
use crate::Shape;

const AXIS_T: &[crate::opdef::ParamDef] = &[
    param("axis", K::Int, Some("-1"), "The axis to normalise over."),
    param("temperature", K::Float, Some("None"), "Divides the input first (None: 1)."),
];

/// The neural-network operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "FullyConnected",
        inputs: &["data", "weight", "bias"],
        params: &[
            param("num_hidden", K::Int, Some("None"), "Number of outputs (default: weight's first axis)."),
            param("no_bias", K::Bool, Some("False"), "Leave out the bias."),
            param("flatten", K::Bool, Some("True"), "Collapse the input to 2-d first."),
        ],
        doc: "`data @ weight.T + bias` (one fused gemm plus bias pass).",
        forward: |i: &Invocation<'_>| {
            let no_bias = i.bool("no_bias")?;
            let bias = if no_bias { None } else { i.opt(2) };
            let w = i.x(1)?;
            let nh = i.opt_i64("num_hidden")?.map(|v| v as usize).unwrap_or(w.dims().first().copied().unwrap_or(0));
            one(fully_connected(i.x(0)?, w, bias, nh, i.bool("flatten")?))
        },
        example: Some(Example { shapes: &[&[2, 3], &[4, 3], &[4]], attrs: "num_hidden=4", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "Activation",
        inputs: &["data"],
        params: &[param("act_type", K::Str, Some("'relu'"), "'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'.")],
        doc: "An activation function by name.",
        forward: |i| one(activation(i.x(0)?, &i.str("act_type")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "act_type='tanh'", range: (0.1, 0.9) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "LeakyReLU",
        inputs: &["data", "gamma"],
        params: &[
            param("act_type", K::Str, Some("'leaky'"), "'leaky', 'elu', 'selu', 'gelu' or 'prelu'."),
            param("slope", K::Float, Some("0.25"), "Negative slope (leaky, elu)."),
        ],
        doc: "Leaky ReLU family (prelu learns `gamma`).",
        forward: |i| one(leaky_relu(i.x(0)?, &i.str("act_type")?, i.f64("slope")?, i.opt(1))),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "act_type='elu'", range: (-1.0, 1.0) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "softmax",
        aliases: Aliases { nd: &[], np: &[], npx: &["softmax"], fluent: true },
        inputs: &["data"],
        params: AXIS_T,
        doc: "Softmax over `axis`.",
        forward: |i| one(softmax(i.x(0)?, i.i64("axis")?, i.opt_f64("temperature")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (-1.0, 1.0) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "log_softmax",
        aliases: Aliases { nd: &[], np: &[], npx: &["log_softmax"], fluent: true },
        inputs: &["data"],
        params: AXIS_T,
        doc: "Log of the softmax over `axis`.",
        forward: |i| one(log_softmax(i.x(0)?, i.i64("axis")?, i.opt_f64("temperature")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (-1.0, 1.0) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "softmax_ce_loss",
        inputs: &["pred", "label"],
        params: &[param("axis", K::Int, Some("-1"), "The class axis: the last axis of a 2-d pred.")],
        doc: "Per-sample cross-entropy of softmax(pred) at integer labels (fused).",
        forward: |i| {
            let (p, ax) = (i.x(0)?, i.i64("axis")?);
            if ax != -1 && ax != p.ndim() as i64 - 1 {
                return Err(crate::Error::value(
                    i.name(),
                    format!("axis must be the last axis, got {ax} (shape {})", p.shape()),
                ));
            }
            one(softmax_ce_loss(p, i.x(1)?))
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "softmax_cross_entropy",
        inputs: &["data", "label"],
        doc: "Sum over the batch of the cross-entropy of softmax(data) at `label` (shape (1,)).",
        forward: |i| {
            let l = softmax_ce_loss(i.x(0)?, i.x(1)?)?;
            one(ops::reduce(ReduceOp::Sum, &l, None, false, false).and_then(|s| ops::reshape_to(&s, Shape::new(&[1]))))
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "Dropout",
        inputs: &["data"],
        params: &[
            param("p", K::Float, Some("0.5"), "Fraction of the input that is dropped."),
            param("mode", K::Str, Some("'training'"), "'training' (only under train mode) or 'always'."),
        ],
        doc: "Zeroes a random fraction `p` of elements and scales the rest by 1/(1-p).",
        forward: |i| one(dropout(i.x(0)?, i.f64("p")?, i.str("mode")? == "always")),
        ..OpDef::BASE
    },
    OpDef {
        name: "LayerNorm",
        inputs: &["data", "gamma", "beta"],
        params: &[
            param("axis", K::Int, Some("-1"), "The axis to normalise over."),
            param("eps", K::Float, Some("1e-05"), "Added to the variance."),
        ],
        doc: "Layer normalisation over `axis`, then `gamma * x + beta`.",
        forward: |i| one(layer_norm(i.x(0)?, i.x(1)?, i.x(2)?, i.i64("axis")?, i.f64("eps")?)),
        example: Some(Example { shapes: &[&[2, 4], &[4], &[4]], attrs: "", range: (0.5, 1.5) }),
        ..OpDef::BASE
    },
    OpDef {
        name: "Embedding",
        inputs: &["data", "weight"],
        params: &[
            param("input_dim", K::Int, Some("None"), "Vocabulary size (checked against weight)."),
            param("output_dim", K::Int, Some("None"), "Embedding size (checked against weight)."),
        ],
        doc: "Rows of `weight` at the integer indices in `data`.",
        forward: |i| one(embedding(i.x(0)?, i.x(1)?)),
        ..OpDef::BASE
    },
];
