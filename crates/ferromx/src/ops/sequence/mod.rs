//! Sequence and attention operators: `SequenceMask`, `SequenceLast`,
//! `SequenceReverse`, `masked_softmax`/`masked_log_softmax`, and the
//! transformer helpers of `contrib` (`div_sqrt_dim`, `arange_like` and the
//! four interleaved attention products).
//!
//! Every operator runs an [`OpCall`](crate::opdef::OpCall) kernel from `cpu.rs`; gradients are
//! operators too (the sequence operators' gradients are the same operators
//! applied to the output gradient, the attention products have internal
//! `_backward_*` operators).

mod cpu;
mod rnn;
pub(crate) use rnn::{param_shapes as rnn_param_shapes, PARAMS as RNN_PARAMS};
mod rnn_cpu;
#[cfg(test)]
mod tests;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, Aliases, Attrs, Example, Grad, GradArgs, Invocation, KernelFn, KernelSlot, Meta, OpDef, ParamDef,
    ParamKind as K,
};
use crate::ops::{self, BinOp, ReduceOp};
use crate::shape::{norm_axis, Shape};

const MASK: usize = 0;
const LAST: usize = 1;
const LAST_BWD: usize = 2;
const REVERSE: usize = 3;
const DIV_SQRT: usize = 6;
/// Index of the first interleaved forward; its backward is 4 further on.
const ATTN: usize = 8;
/// The fused RNN kernel and its backward.
const RNN_FUSED: usize = 17;
const RNN_BWD: usize = 18;

const USE_LEN: ParamDef =
    param("use_sequence_length", K::Bool, Some("False"), "Read per-sequence lengths from `sequence_length`.");
const AXIS: ParamDef = param("axis", K::Int, Some("0"), "The time axis (0 or 1).");
const SEQ_INPUTS: &[&str] = &["data", "sequence_length"];
const MASK_PARAMS: &[ParamDef] = &[USE_LEN, param("value", K::Float, Some("0.0"), "The value masked steps get."), AXIS];
const SEQ_PARAMS: &[ParamDef] = &[USE_LEN, AXIS];
const MSM_PARAMS: &[ParamDef] = &[
    param("axis", K::Int, Some("-1"), "The axis to normalise over."),
    param("temperature", K::Float, Some("1.0"), "Divides the input first."),
    param("normalize", K::Bool, Some("True"), "Subtract the maximum (of the kept elements) first."),
];
const HEADS: &[ParamDef] = &[param("heads", K::Int, None, "Number of attention heads.")];
const ARANGE_PARAMS: &[ParamDef] = &[
    param("start", K::Float, Some("0.0"), "First value."),
    param("step", K::Float, Some("1.0"), "Increment."),
    param("repeat", K::Int, Some("1"), "How many times each value repeats."),
    param("ctx", K::Context, Some("None"), "Accepted for MXNet compatibility (the result lives with `data`)."),
    param("axis", K::Int, Some("None"), "Only the length of this axis counts (None: the whole shape)."),
];

const SECOND_ORDER: &str = "second-order gradients of the interleaved attention products are not implemented";

/// A sequence operator's definition (shared fields).
#[allow(clippy::too_many_arguments)]
const fn seq_def(
    name: &'static str,
    npx: &'static [&'static str],
    params: &'static [ParamDef],
    doc: &'static str,
    infer: crate::opdef::InferFn,
    grad: crate::opdef::GradFn,
    kernel: KernelFn,
    example: Option<Example>,
) -> OpDef {
    OpDef {
        name,
        aliases: Aliases { nd: &[], np: &[], npx, fluent: false },
        inputs: SEQ_INPUTS,
        params,
        doc,
        infer: Some(infer),
        forward: forward_seq,
        grad: Grad::Fn(grad),
        cpu: KernelSlot::Call(kernel),
        example,
        graph: crate::opdef::GraphForm {
            inputs: Some(crate::opdef::inputs_with_used_lengths),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    }
}

const fn attn_def(
    name: &'static str,
    inputs: &'static [&'static str],
    doc: &'static str,
    kernel: KernelFn,
    example: Example,
) -> OpDef {
    OpDef {
        name,
        inputs,
        params: HEADS,
        doc,
        infer: Some(infer_attn),
        forward: forward_attn,
        grad: Grad::Fn(grad_attn),
        cpu: KernelSlot::Call(kernel),
        example: Some(example),
        ..OpDef::BASE
    }
}

const fn attn_bwd(name: &'static str, inputs: &'static [&'static str], kernel: KernelFn) -> OpDef {
    OpDef {
        name,
        inputs,
        params: HEADS,
        doc: "Gradient of an interleaved attention product (internal).",
        infer: Some(infer_attn_bwd),
        forward: forward_attn,
        grad: Grad::None(SECOND_ORDER),
        cpu: KernelSlot::Call(kernel),
        ..OpDef::BASE
    }
}

const R: (f64, f64) = (0.5, 1.5);

/// The sequence and attention operators.
pub static DEFS: &[OpDef] = &[
    seq_def(
        "SequenceMask",
        &["sequence_mask"],
        MASK_PARAMS,
        "Sets the steps at and after each sequence's length to `value`.",
        infer_same,
        grad_mask,
        cpu::sequence_mask,
        Some(Example { shapes: &[&[3, 2, 2]], attrs: "value=-1.0", range: R }),
    ),
    seq_def(
        "SequenceLast",
        &[],
        SEQ_PARAMS,
        "The last step of each sequence (at `sequence_length - 1`): the time axis is removed.",
        infer_last,
        grad_last,
        cpu::sequence_last,
        Some(Example { shapes: &[&[3, 2, 2]], attrs: "axis=1", range: R }),
    ),
    OpDef {
        name: "_backward_SequenceLast",
        inputs: &["out_grad", "sequence_length"],
        params: &[AXIS, param("steps", K::Int, Some("1"), "Length of the time axis of the data.")],
        doc: "Gradient of `SequenceLast` (internal): the output gradient at each last step, zero elsewhere.",
        infer: Some(infer_last_bwd),
        forward: |i| {
            let (g, axis, steps) = (i.x(0)?, i.i64("axis")?, i.i64("steps")?);
            let ins: Vec<&NDArray> = std::iter::once(g).chain(i.opt(1)).collect();
            apply(i.def, &ins, &[axis as f64], &infer_last_bwd_of(i.def, g, axis, steps)?)
        },
        grad: Grad::Fn(grad_last_bwd),
        cpu: KernelSlot::Call(cpu::sequence_last_backward),
        ..OpDef::BASE
    },
    seq_def(
        "SequenceReverse",
        &[],
        SEQ_PARAMS,
        "Reverses the first `sequence_length` steps of each sequence (time axis 0).",
        infer_same,
        grad_reverse,
        cpu::sequence_reverse,
        Some(Example { shapes: &[&[3, 2, 2]], attrs: "", range: R }),
    ),
    masked_def(
        "masked_softmax",
        &["masked_softmax"],
        "Softmax over `axis` of the elements where `mask` is non-zero (others 0).",
    ),
    masked_def(
        "masked_log_softmax",
        &["masked_log_softmax"],
        "Log-softmax over `axis` of the elements where `mask` is non-zero (others -inf).",
    ),
    OpDef {
        name: "_contrib_div_sqrt_dim",
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: false },
        inputs: &["data"],
        doc: "`data / sqrt(data.shape[-1])` (scaled dot-product attention).",
        infer: Some(infer_same),
        forward: |i| {
            let x = i.x(0)?;
            apply(i.def, &[x], &[], &[Meta::of(x)])
        },
        grad: Grad::Fn(|a| {
            Ok(vec![Some(apply(&DEFS[DIV_SQRT], &[&a.out_grads[0]], &[], &[Meta::of(&a.out_grads[0])])?.remove(0))])
        }),
        cpu: KernelSlot::Call(cpu::div_sqrt_dim),
        example: Some(Example { shapes: &[&[2, 4]], attrs: "", range: R }),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_arange_like",
        aliases: Aliases { nd: &[], np: &[], npx: &["arange_like"], fluent: false },
        inputs: &["data"],
        params: ARANGE_PARAMS,
        doc: "`start + step * (i // repeat)` in the shape of `data` (or of its `axis`).",
        infer: Some(infer_arange),
        forward: |i| {
            let x = i.x(0)?;
            let metas = infer_arange(i.def, i.attrs, &[Meta::of(x)])?;
            let repeat = i.i64("repeat")?;
            if repeat < 1 {
                return Err(Error::value(i.name(), format!("repeat must be positive, got {repeat}")));
            }
            apply(i.def, &[], &[i.f64("start")?, i.f64("step")?, repeat as f64], &metas)
        },
        grad: Grad::None("the result depends only on the input's shape"),
        cpu: KernelSlot::Call(cpu::arange_like),
        ..OpDef::BASE
    },
    attn_def(
        "_contrib_interleaved_matmul_selfatt_qk",
        &["queries_keys_values"],
        "Scaled `q · kᵀ` per head of interleaved (seq, batch, heads*3*dim) projections: (batch*heads, seq, seq).",
        cpu::selfatt_qk,
        Example { shapes: &[&[3, 2, 12]], attrs: "heads=2", range: R },
    ),
    attn_def(
        "_contrib_interleaved_matmul_selfatt_valatt",
        &["queries_keys_values", "attention"],
        "`attention · v` per head of interleaved projections: (seq, batch, heads*dim).",
        cpu::selfatt_valatt,
        Example { shapes: &[&[3, 2, 12], &[4, 3, 3]], attrs: "heads=2", range: R },
    ),
    attn_def(
        "_contrib_interleaved_matmul_encdec_qk",
        &["queries", "keys_values"],
        "Scaled `q · kᵀ` per head with interleaved (seq, batch, heads*2*dim) keys and values.",
        cpu::encdec_qk,
        Example { shapes: &[&[3, 2, 4], &[5, 2, 8]], attrs: "heads=2", range: R },
    ),
    attn_def(
        "_contrib_interleaved_matmul_encdec_valatt",
        &["keys_values", "attention"],
        "`attention · v` per head with interleaved keys and values: (query seq, batch, heads*dim).",
        cpu::encdec_valatt,
        Example { shapes: &[&[5, 2, 8], &[4, 3, 5]], attrs: "heads=2", range: R },
    ),
    attn_bwd("_backward_interleaved_matmul_selfatt_qk", &["queries_keys_values", "out_grad"], cpu::selfatt_qk_backward),
    attn_bwd(
        "_backward_interleaved_matmul_selfatt_valatt",
        &["queries_keys_values", "attention", "out_grad"],
        cpu::selfatt_valatt_backward,
    ),
    attn_bwd(
        "_backward_interleaved_matmul_encdec_qk",
        &["queries", "keys_values", "out_grad"],
        cpu::encdec_qk_backward,
    ),
    attn_bwd(
        "_backward_interleaved_matmul_encdec_valatt",
        &["keys_values", "attention", "out_grad"],
        cpu::encdec_valatt_backward,
    ),
    OpDef {
        name: "RNN",
        aliases: Aliases { nd: &[], np: &[], npx: &["rnn"], fluent: false },
        inputs: rnn::INPUTS,
        outputs: &["output", "state_output", "statecell_output"],
        params: rnn::PARAMS,
        doc: "Fused recurrent layers (rnn_relu, rnn_tanh, lstm, gru) over a (seq, batch, input) sequence with \
              MXNet's flat parameter vector; one fused kernel (`_rnn_fused`) in the common cases, else \
              composed of engine operators; differentiated through time.",
        infer: Some(rnn::infer),
        forward: rnn::forward,
        grad: Grad::Recorded,
        cpu: KernelSlot::Composite,
        graph: crate::opdef::GraphForm {
            inputs: Some(rnn::graph_inputs),
            visible: Some(rnn::visible_outputs),
            named_outputs: true,
            param_shapes: Some(rnn::param_shapes),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
    OpDef {
        name: "_rnn_fused",
        inputs: &["data", "parameters", "state", "state_cell"],
        outputs: &["out", "hy", "cy", "workspace"],
        params: rnn::PARAMS,
        doc: "The fused recurrent kernel of `RNN` (internal): all layers, directions and steps in one op; \
              outputs out, hy, [cy] and the workspace its backward reads.",
        infer: Some(rnn::infer_fused),
        forward: rnn::forward_fused,
        grad: Grad::Recorded,
        cpu: KernelSlot::Call(rnn_cpu::rnn_forward),
        ..OpDef::BASE
    },
    OpDef {
        name: "_backward_rnn_fused",
        inputs: &["data", "parameters", "state", "state_cell", "out", "workspace", "d_out", "d_hy", "d_cy"],
        params: rnn::PARAMS,
        doc: "Gradient of `_rnn_fused` over the whole sequence (internal).",
        infer: Some(rnn::infer_backward),
        forward: rnn::forward_backward,
        grad: Grad::None("second-order gradients of the fused RNN are not implemented"),
        cpu: KernelSlot::Call(rnn_cpu::rnn_backward),
        ..OpDef::BASE
    },
];

const fn masked_def(name: &'static str, npx: &'static [&'static str], doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: Aliases { nd: &[], np: &[], npx, fluent: false },
        inputs: &["data", "mask"],
        params: MSM_PARAMS,
        doc,
        infer: Some(infer_same),
        forward: forward_masked,
        grad: Grad::Fn(grad_masked),
        cpu: KernelSlot::Call(cpu::masked_softmax),
        example: Some(Example { shapes: &[&[2, 3], &[2, 3]], attrs: "temperature=2.0", range: R }),
        ..OpDef::BASE
    }
}

/// Allocates the outputs `metas`, pushes `def`'s kernel and records its gradient.
use crate::opdef::apply_table as apply;

// ---- the sequence operators ----

/// Checks a sequence operator's inputs; returns the time axis.
fn check_seq(def: &'static OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<usize> {
    let p = Invocation::params(def, attrs);
    let d = &ins[0];
    if d.shape.ndim() < 2 {
        return Err(Error::shape(def.name, &[&d.shape], "data must have at least 2 dimensions (time, batch, ...)"));
    }
    let axis = p.i64("axis")?;
    let max_axis = if def.name == "SequenceReverse" { 0 } else { 1 };
    if !(0..=max_axis).contains(&axis) {
        let allowed = if max_axis == 0 { "0" } else { "0 or 1" };
        return Err(Error::value(def.name, format!("axis must be {allowed}, got {axis}")));
    }
    if p.bool("use_sequence_length")? {
        let Some(l) = ins.get(1) else {
            return Err(Error::value(def.name, "use_sequence_length=True needs the sequence_length input"));
        };
        let batch = d.shape.dims()[1 - axis as usize];
        if l.shape.dims() != [batch] {
            return Err(Error::shape(
                def.name,
                &[&d.shape, &l.shape],
                format!("sequence_length must have shape ({batch},) (one length per sequence)"),
            ));
        }
    }
    Ok(axis as usize)
}

fn infer_same(def: &'static OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    if def.inputs.first() == Some(&"data") && def.inputs.get(1) == Some(&"sequence_length") {
        check_seq(def, attrs, ins)?;
    }
    Ok(vec![ins[0].clone()])
}

fn infer_last(def: &'static OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let axis = check_seq(def, attrs, ins)?;
    let mut d = ins[0].shape.dims().to_vec();
    d.remove(axis);
    Ok(vec![Meta { shape: Shape::new(&d), ..ins[0].clone() }])
}

fn infer_last_bwd(def: &'static OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let p = Invocation::params(def, attrs);
    let (axis, steps) = (p.i64("axis")? as usize, p.i64("steps")? as usize);
    let mut d = ins[0].shape.dims().to_vec();
    if axis > d.len() {
        return Err(Error::value(def.name, format!("axis {axis} out of range for {}", ins[0].shape)));
    }
    d.insert(axis, steps);
    Ok(vec![Meta { shape: Shape::new(&d), ..ins[0].clone() }])
}

fn infer_last_bwd_of(def: &'static OpDef, g: &NDArray, axis: i64, steps: i64) -> Result<Vec<Meta>> {
    let attrs =
        Attrs(vec![("axis".into(), crate::opdef::Attr::Int(axis)), ("steps".into(), crate::opdef::Attr::Int(steps))]);
    infer_last_bwd(def, &attrs, &[Meta::of(g)])
}

fn forward_seq(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let data = i.x(0)?;
    let use_len = i.bool("use_sequence_length")?;
    let len = if use_len { i.opt(1) } else { None };
    let mut metas = vec![Meta::of(data)];
    metas.extend(len.map(Meta::of));
    let outs = i.def.infer_meta(i.attrs, &metas)?;
    let ins: Vec<&NDArray> = std::iter::once(data).chain(len).collect();
    let axis = i.i64("axis")? as f64;
    let nums = match i.def.name {
        "SequenceMask" => vec![i.f64("value")?, axis],
        _ => vec![axis],
    };
    apply(i.def, &ins, &nums, &outs)
}

/// The inputs of a gradient call of a sequence operator: `g` and the lengths if any.
fn with_len<'a>(a: &'a GradArgs<'_>, g: &'a NDArray) -> Vec<&'a NDArray> {
    std::iter::once(g).chain(a.inputs.get(1)).collect()
}

fn grad_mask(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let g = &a.out_grads[0];
    let r = apply(&DEFS[MASK], &with_len(a, g), &[0.0, a.nums[1]], &[Meta::of(g)])?;
    Ok(vec![r.into_iter().next(), None])
}

fn grad_last(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let g = &a.out_grads[0];
    let meta = Meta { shape: a.inputs[0].shape().clone(), ..Meta::of(g) };
    let r = apply(&DEFS[LAST_BWD], &with_len(a, g), &[a.nums[0]], &[meta])?;
    Ok(vec![r.into_iter().next(), None])
}

fn grad_last_bwd(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let g = &a.out_grads[0];
    let mut d = g.dims().to_vec();
    d.remove(a.nums[0] as usize);
    let r = apply(&DEFS[LAST], &with_len(a, g), &[a.nums[0]], &[Meta { shape: Shape::new(&d), ..Meta::of(g) }])?;
    Ok(vec![r.into_iter().next(), None])
}

fn grad_reverse(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let g = &a.out_grads[0];
    let r = apply(&DEFS[REVERSE], &with_len(a, g), &[0.0], &[Meta::of(g)])?;
    Ok(vec![r.into_iter().next(), None])
}

// ---- masked softmax ----

fn forward_masked(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let (x, mask) = (i.x(0)?, i.x(1)?);
    ops::check_ctx(i.name(), x, mask)?;
    if x.ndim() == 0 {
        return Err(Error::shape(i.name(), &[x.shape()], "data must have at least one dimension"));
    }
    let axis = norm_axis(i.name(), i.i64("axis")?, x.ndim())?;
    let x = if x.dtype().is_float() { x.clone() } else { ops::astype(x, DType::F32)? };
    let mask = if mask.shape() == x.shape() {
        mask.clone()
    } else {
        let b = Shape::broadcast(i.name(), mask.shape(), x.shape())?;
        if &b != x.shape() {
            return Err(Error::shape(i.name(), &[x.shape(), mask.shape()], "mask must broadcast to the data's shape"));
        }
        ops::broadcast_to(mask, b)?
    };
    let log = i.name() == "masked_log_softmax";
    let nums = [axis as f64, i.f64("temperature")?, i.bool("normalize")? as u8 as f64, log as u8 as f64];
    apply(i.def, &[&x, &mask], &nums, &[Meta::of(&x)])
}

fn grad_masked(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let (y, g) = (&a.outputs[0], &a.out_grads[0]);
    let (ax, t, log) = (a.nums[0] as i64, a.nums[1], a.nums[3] != 0.0);
    let r = if log {
        // dx = keep * (g - softmax * sum(keep * g))
        let keep = ops::astype(&ops::scalar(BinOp::Ne, &a.inputs[1], 0.0)?, y.dtype())?;
        let kg = ops::mul(g, &keep)?;
        let s = ops::reduce(ReduceOp::Sum, &kg, Some(&[ax]), true, false)?;
        ops::sub(&kg, &ops::mul(&ops::mul(&ops::unary(ops::UnaryOp::Exp, y)?, &s)?, &keep)?)?
    } else {
        // dx = y * (g - sum(g * y)); y is 0 where masked
        let s = ops::reduce(ReduceOp::Sum, &ops::mul(g, y)?, Some(&[ax]), true, false)?;
        ops::mul(y, &ops::sub(g, &s)?)?
    };
    let r = if t != 1.0 { ops::scalar(BinOp::Div, &r, t)? } else { r };
    Ok(vec![Some(r), None])
}

// ---- arange_like ----

fn infer_arange(def: &'static OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let p = Invocation::params(def, attrs);
    let x = &ins[0];
    let shape = match p.opt_i64("axis")? {
        None => x.shape.clone(),
        Some(ax) => Shape::new(&[x.shape.dims()[norm_axis(def.name, ax, x.shape.ndim())?]]),
    };
    Ok(vec![Meta { shape, ..x.clone() }])
}

// ---- interleaved attention ----

/// Which of the four products a definition is (0..4), forward or backward.
fn attn_index(def: &OpDef) -> usize {
    ["selfatt_qk", "selfatt_valatt", "encdec_qk", "encdec_valatt"]
        .iter()
        .position(|s| def.name.ends_with(s))
        .unwrap_or(0)
}

/// Checks the inputs of product `w` (MXNet's shape rules); returns the output shape.
fn attn_shape(name: &str, w: usize, heads: i64, s: &[&Shape]) -> Result<Shape> {
    let bad = |msg: String| Err(Error::shape(name, s, msg));
    if heads < 1 {
        return Err(Error::value(name, format!("heads must be positive, got {heads}")));
    }
    let h = heads as usize;
    if s.iter().any(|x| x.ndim() != 3) {
        return bad("inputs must be 3-d".into());
    }
    let (a, b) = (s[0].dims(), s.get(1).map(|x| x.dims()).unwrap_or(&[]));
    let slots = [3, 3, 1, 2][w];
    if a[2] % (slots * h) != 0 {
        return bad(format!("the last axis of input 0 ({}) must be a multiple of {slots} * heads ({h})", a[2]));
    }
    match w {
        0 => Ok(Shape::new(&[h * a[1], a[0], a[0]])),
        1 => {
            if b != [h * a[1], a[0], a[0]] {
                return bad(format!("attention must have shape ({}, {}, {})", h * a[1], a[0], a[0]));
            }
            Ok(Shape::new(&[a[0], a[1], a[2] / 3]))
        }
        2 => {
            if b[2] != 2 * a[2] || b[1] != a[1] {
                return bad("keys_values must be (seq, batch, 2 * queries.shape[2])".into());
            }
            Ok(Shape::new(&[h * a[1], a[0], b[0]]))
        }
        _ => {
            if b[0] != h * a[1] || b[2] != a[0] {
                return bad(format!("attention must have shape ({}, query seq, {})", h * a[1], a[0]));
            }
            Ok(Shape::new(&[b[1], a[1], a[2] / 2]))
        }
    }
}

fn infer_attn(def: &'static OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let heads = Invocation::params(def, attrs).i64("heads")?;
    if ins.iter().any(|m| m.dtype != ins[0].dtype || !m.dtype.is_float()) {
        return Err(Error::dtype(def.name, "inputs must be float arrays of one dtype"));
    }
    let shapes: Vec<&Shape> = ins.iter().map(|m| &m.shape).collect();
    let shape = attn_shape(def.name, attn_index(def), heads, &shapes)?;
    Ok(vec![Meta { shape, ..ins[0].clone() }])
}

fn infer_attn_bwd(def: &'static OpDef, attrs: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let n = ins.len() - 1;
    let fwd = &DEFS[ATTN + attn_index(def)];
    let out = infer_attn(fwd, attrs, &ins[..n])?;
    if out[0].shape != ins[n].shape {
        return Err(Error::shape(def.name, &[&out[0].shape, &ins[n].shape], "out_grad must match the output"));
    }
    Ok(ins[..n].to_vec())
}

fn forward_attn(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let ins: Vec<&NDArray> = (0..i.def.inputs.len()).map(|k| i.x(k)).collect::<Result<_>>()?;
    for x in &ins[1..] {
        ops::check_ctx(i.name(), ins[0], x)?;
    }
    let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
    let outs = i.def.infer_meta(i.attrs, &metas)?;
    apply(i.def, &ins, &[i.i64("heads")? as f64], &outs)
}

fn grad_attn(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let bwd = &DEFS[ATTN + 4 + attn_index(a.def)];
    let mut ins: Vec<&NDArray> = a.inputs.iter().collect();
    ins.push(&a.out_grads[0]);
    let metas: Vec<Meta> = a.inputs.iter().map(Meta::of).collect();
    let r = apply(bwd, &ins, a.nums, &metas)?;
    Ok(r.into_iter().map(Some).collect())
}
