//! Neural-network operators: definitions and inference here; frontends
//! (checks, push, gradients) in `fc.rs`, `activation.rs` (Activation,
//! LeakyReLU), `softmax.rs`, `dropout.rs`, `norm.rs` (LayerNorm) and
//! `embedding.rs`; kernels over [`crate::opdef::OpCall`] in `cpu.rs`.

mod activation;
mod cpu;
mod dropout;
mod embedding;
mod fc;
mod norm;
mod softmax;
#[cfg(test)]
mod tests;

pub use activation::*;
pub use dropout::*;
pub use embedding::*;
pub use fc::*;
pub use norm::*;
pub use softmax::*;

use crate::error::{Error, Result};
use crate::opdef::{
    inputs_unless_no_bias, one, param, per_channel, Aliases, Attrs, Example, GraphForm, Invocation, KernelSlot, Meta,
    OpDef, ParamKind as K,
};
use crate::shape::{norm_axis, Shape};
use crate::DType;

fn same(x: &Meta, shape: Shape, dtype: DType) -> Vec<Meta> {
    vec![Meta { shape, dtype, ctx: x.ctx }]
}

/// Non-float inputs compute in float32.
fn float_of(dt: DType) -> DType {
    if dt.is_float() {
        dt
    } else {
        DType::F32
    }
}

fn infer_fc(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (x, w) = (&ins[0].shape, &ins[1].shape);
    let nh = i.opt_i64("num_hidden")?.map(|v| v as usize).unwrap_or(w.dims().first().copied().unwrap_or(0));
    if x.ndim() == 0 {
        return Err(Error::shape(def.name, &[x], "data must have at least one dimension"));
    }
    let (flat, d) = (i.bool("flatten")?, x.dims());
    let inp = if flat { d[1..].iter().product::<usize>() } else { d[d.len() - 1] };
    if w.dims() != [nh, inp] {
        return Err(Error::shape(def.name, &[x, w], format!("weight must be ({nh}, {inp})")));
    }
    let mut od = if flat { vec![d[0]] } else { d[..d.len() - 1].to_vec() };
    od.push(nh);
    Ok(same(&ins[0], Shape::new(&od), ins[0].dtype))
}

fn infer_activation(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let op = activation_op(&Invocation::params(def, a).str("act_type")?)?;
    let dt = crate::ops::unary::unary_dtype(op, def.name, ins[0].dtype)?;
    Ok(same(&ins[0], ins[0].shape.clone(), dt))
}

fn infer_leaky(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    leaky_act(&Invocation::params(def, a).str("act_type")?)?;
    Ok(same(&ins[0], ins[0].shape.clone(), float_of(ins[0].dtype)))
}

fn infer_softmax(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    if ins[0].shape.ndim() == 0 {
        return Err(Error::shape(def.name, &[&ins[0].shape], "input must have at least one dimension"));
    }
    norm_axis(def.name, Invocation::params(def, a).i64("axis")?, ins[0].shape.ndim())?;
    Ok(same(&ins[0], ins[0].shape.clone(), float_of(ins[0].dtype)))
}

fn infer_ce(def: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (p, l) = (&ins[0].shape, &ins[1].shape);
    if p.ndim() != 2 || l.size() != p.dims()[0] {
        return Err(Error::shape(def.name, &[p, l], "pred must be (batch, classes) and label (batch,)"));
    }
    let n = if def.name == "softmax_cross_entropy" { 1 } else { p.dims()[0] };
    Ok(same(&ins[0], Shape::new(&[n]), float_of(ins[0].dtype)))
}

fn infer_same(_d: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    Ok(vec![ins[0].clone()])
}

fn infer_layer_norm(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    layer_norm_axis(&ins[0].shape, &ins[1].shape, &ins[2].shape, Invocation::params(def, a).i64("axis")?)?;
    Ok(vec![ins[0].clone()])
}

fn infer_embedding(_d: &'static OpDef, _a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let d = embedding_dims(&ins[0].shape, &ins[1].shape)?;
    Ok(same(&ins[0], Shape::new(&d), ins[1].dtype))
}

/// FullyConnected's weight `(num_hidden, in_units)` and bias `(num_hidden,)`.
pub(crate) fn fc_param_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let (Some(x), Some(units)) = (data, i.opt_i64("num_hidden")?) else { return Ok(Vec::new()) };
    let d = x.dims();
    if d.is_empty() {
        return Ok(Vec::new());
    }
    let in_units = if i.bool("flatten")? { d[1..].iter().product() } else { d[d.len() - 1] };
    let units = units.max(0) as usize;
    Ok(vec![("weight", Shape::new(&[units, in_units])), ("bias", Shape::new(&[units]))])
}

/// FullyConnected's data shape from its output's: the batch (or leading axes) of the
/// output, the rest of the data's own.
fn fc_input_shapes(i: &Invocation<'_>, ins: &[Option<Shape>], outs: &[Option<Shape>]) -> Result<Vec<Option<Shape>>> {
    let mut res = vec![None; ins.len()];
    let (Some(out), Some(slot)) = (outs.first().cloned().flatten(), res.first_mut()) else { return Ok(res) };
    let (o, data) = (out.dims(), ins.first().cloned().flatten());
    if o.is_empty() {
        return Ok(res);
    }
    *slot = if i.bool("flatten")? {
        data.filter(|d| d.ndim() >= 1).map(|d| {
            let mut s = vec![o[0]];
            s.extend(&d.dims()[1..]);
            Shape::new(&s)
        })
    } else {
        let last = data.filter(|d| d.ndim() == o.len()).map_or(0, |d| d.dims()[d.ndim() - 1]);
        let mut s = o[..o.len() - 1].to_vec();
        s.push(last);
        Some(Shape::new(&s))
    };
    Ok(res)
}

/// LeakyReLU has a `gamma` input only as a PReLU.
fn leaky_inputs(i: &Invocation<'_>) -> Result<Vec<&'static str>> {
    Ok(if i.str("act_type")? == "prelu" { vec!["data", "gamma"] } else { vec!["data"] })
}

/// PReLU's slope, one per channel (axis 1).
fn prelu_param_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    match data {
        Some(x) if x.ndim() >= 2 && i.str("act_type")? == "prelu" => Ok(per_channel(&["gamma"], x, 1)),
        _ => Ok(Vec::new()),
    }
}

/// LayerNorm's `gamma` and `beta`, one per element of the normalised axis.
fn layer_norm_param_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    match data {
        Some(x) => Ok(per_channel(&["gamma", "beta"], x, i.i64("axis")?)),
        None => Ok(Vec::new()),
    }
}

/// Embedding's table `(input_dim, output_dim)`, from the attributes alone.
fn embedding_param_shapes(i: &Invocation<'_>, _: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    match (i.opt_i64("input_dim")?, i.opt_i64("output_dim")?) {
        (Some(n), Some(d)) => Ok(vec![("weight", Shape::new(&[n.max(0) as usize, d.max(0) as usize]))]),
        _ => Ok(Vec::new()),
    }
}

fn infer_softmin(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let mut m = infer_softmax(def, a, ins)?;
    m[0].dtype = Invocation::params(def, a).dtype("dtype", m[0].dtype)?;
    Ok(m)
}

const AXIS_T: &[crate::opdef::ParamDef] = &[
    param("axis", K::Int, Some("-1"), "The axis to normalise over."),
    param("temperature", K::Float, Some("None"), "Divides the input first (None: 1)."),
];

/// The neural-network operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "FullyConnected",
        cpu: KernelSlot::Call(cpu::fc_kernel),
        infer: Some(infer_fc),
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
        graph: GraphForm {
            inputs: Some(inputs_unless_no_bias),
            param_shapes: Some(fc_param_shapes),
            input_shapes: Some(fc_input_shapes),
            ..GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "Activation",
        cpu: KernelSlot::Call(crate::ops::unary::unary_kernel),
        infer: Some(infer_activation),
        inputs: &["data"],
        params: &[param("act_type", K::Str, Some("'relu'"), "'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'.")],
        doc: "An activation function by name.",
        forward: |i| one(activation(i.x(0)?, &i.str("act_type")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "act_type='tanh'", range: (0.1, 0.9) }),
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "LeakyReLU",
        cpu: KernelSlot::Call(cpu::leaky_kernel),
        infer: Some(infer_leaky),
        inputs: &["data", "gamma"],
        params: &[
            param("act_type", K::Str, Some("'leaky'"), "'leaky', 'elu', 'selu', 'gelu' or 'prelu'."),
            param("slope", K::Float, Some("0.25"), "Negative slope (leaky, elu)."),
        ],
        doc: "Leaky ReLU family (prelu learns `gamma`).",
        forward: |i| one(leaky_relu(i.x(0)?, &i.str("act_type")?, i.f64("slope")?, i.opt(1))),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "act_type='elu'", range: (-1.0, 1.0) }),
        graph: GraphForm {
            inputs: Some(leaky_inputs),
            param_shapes: Some(prelu_param_shapes),
            same_shape: true,
            input_init: &[("gamma", "[\"Constant\", {\"value\": 0.25}]")],
            ..GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "softmax",
        cpu: KernelSlot::Call(cpu::softmax_kernel),
        infer: Some(infer_softmax),
        aliases: Aliases { nd: &[], np: &[], npx: &["softmax"], fluent: true },
        inputs: &["data"],
        params: AXIS_T,
        doc: "Softmax over `axis`.",
        forward: |i| one(softmax(i.x(0)?, i.i64("axis")?, i.opt_f64("temperature")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (-1.0, 1.0) }),
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "log_softmax",
        cpu: KernelSlot::Call(cpu::softmax_kernel),
        infer: Some(infer_softmax),
        aliases: Aliases { nd: &[], np: &[], npx: &["log_softmax"], fluent: true },
        inputs: &["data"],
        params: AXIS_T,
        doc: "Log of the softmax over `axis`.",
        forward: |i| one(log_softmax(i.x(0)?, i.i64("axis")?, i.opt_f64("temperature")?)),
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (-1.0, 1.0) }),
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "softmax_ce_loss",
        cpu: KernelSlot::Call(cpu::softmax_ce_kernel),
        infer: Some(infer_ce),
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
        cpu: KernelSlot::Call(cpu::softmax_ce_kernel),
        infer: Some(infer_ce),
        inputs: &["data", "label"],
        doc: "Sum over the batch of the cross-entropy of softmax(data) at `label` (shape (1,)).",
        forward: |i| one(softmax_cross_entropy(i.x(0)?, i.x(1)?)),
        ..OpDef::BASE
    },
    OpDef {
        name: "Dropout",
        cpu: KernelSlot::Call(cpu::dropout_kernel),
        infer: Some(infer_same),
        inputs: &["data"],
        params: &[
            param("p", K::Float, Some("0.5"), "Fraction of the input that is dropped."),
            param("mode", K::Str, Some("'training'"), "'training' (only under train mode) or 'always'."),
        ],
        doc: "Zeroes a random fraction `p` of elements and scales the rest by 1/(1-p).",
        forward: |i| one(dropout(i.x(0)?, i.f64("p")?, i.str("mode")? == "always")),
        // MXNet's node also has the mask as a hidden output
        graph: GraphForm {
            total: crate::opdef::OutputCount::Fixed(2),
            named_outputs: true,
            same_shape: true,
            ..GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "LayerNorm",
        cpu: KernelSlot::Call(cpu::layer_norm_kernel),
        infer: Some(infer_layer_norm),
        inputs: &["data", "gamma", "beta"],
        params: &[
            param("axis", K::Int, Some("-1"), "The axis to normalise over."),
            param("eps", K::Float, Some("1e-05"), "Added to the variance."),
        ],
        doc: "Layer normalisation over `axis`, then `gamma * x + beta`.",
        forward: |i| one(layer_norm(i.x(0)?, i.x(1)?, i.x(2)?, i.i64("axis")?, i.f64("eps")?)),
        example: Some(Example { shapes: &[&[2, 4], &[4], &[4]], attrs: "", range: (0.5, 1.5) }),
        // MXNet's node has the mean and std as hidden outputs
        graph: GraphForm {
            same_shape: true,
            total: crate::opdef::OutputCount::Fixed(3),
            named_outputs: true,
            param_shapes: Some(layer_norm_param_shapes),
            ..GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "Embedding",
        cpu: KernelSlot::Call(cpu::embedding_kernel),
        infer: Some(infer_embedding),
        inputs: &["data", "weight"],
        params: &[
            param("input_dim", K::Int, Some("None"), "Vocabulary size (checked against weight)."),
            param("output_dim", K::Int, Some("None"), "Embedding size (checked against weight)."),
        ],
        doc: "Rows of `weight` at the integer indices in `data`.",
        forward: |i| one(embedding(i.x(0)?, i.x(1)?)),
        graph: GraphForm { param_shapes: Some(embedding_param_shapes), ..GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "softmin",
        cpu: KernelSlot::Composite,
        infer: Some(infer_softmin),
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[
            AXIS_T[0],
            AXIS_T[1],
            param("dtype", K::DType, Some("None"), "Output dtype (None: the input's)."),
            param(
                "use_length",
                K::Bool,
                Some("False"),
                "Accepted; lengths are not supported (as MXNet's CPU softmin).",
            ),
        ],
        doc: "Softmax of `-data` over `axis` (MXNet's softmin).",
        forward: |i| {
            let x = i.x(0)?;
            infer_softmin(i.def, i.attrs, &[Meta::of(x)])?;
            let y = softmax(&crate::ops::neg(x)?, i.i64("axis")?, i.opt_f64("temperature")?)?;
            let dt = i.dtype("dtype", y.dtype())?;
            one(if dt != y.dtype() { crate::ops::astype(&y, dt) } else { Ok(y) })
        },
        example: Some(Example { shapes: &[&[2, 3]], attrs: "", range: (-1.0, 1.0) }),
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
];
