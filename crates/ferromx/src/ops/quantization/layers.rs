//! The quantized layers: `quantized_fully_connected`, `quantized_conv`,
//! `quantized_pooling`, `quantized_act`, `quantized_flatten`, `quantized_embedding` and
//! `quantized_concat`.
//!
//! Fully connected and convolution run the float operator on the integers converted to
//! float64 (every product sum below 2^53 is exact, so the result is the int32 accumulator
//! MXNet computes), then [`cpu::finish_product`] adds the bias and writes the int32 output
//! and its range. Pooling runs `Pooling` on float32 values and rounds back.

use super::{check_ranges, check_ranges_named, cpu, need, push, range_meta, NO_GRAD};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{invoke, param, Attr, Attrs, GraphForm, Invocation, KernelSlot, Meta, OpDef, ParamKind as K};
use crate::ops::astype;
use crate::shape::Shape;

const PRODUCT_OUT: &[&str] = &["output", "min_output", "max_output"];
const BIAS_NAMES: [&str; 3] = ["bias", "min_bias", "max_bias"];

/// `quantized_fully_connected`.
pub(super) const FULLY_CONNECTED: OpDef = OpDef {
    name: "_contrib_quantized_fully_connected",
    inputs: &["data", "weight", "bias", "min_data", "max_data", "min_weight", "max_weight", "min_bias", "max_bias"],
    outputs: PRODUCT_OUT,
    params: &[
        param("num_hidden", K::Int, None, "Number of output units."),
        param("no_bias", K::Bool, Some("False"), "Leave the bias (and its range) out."),
        param("flatten", K::Bool, Some("True"), "Flatten the data to 2-d first."),
    ],
    doc: "int8/uint8 `data` times int8 `weight` transposed, as int32, plus the int8 `bias` \
          brought into the output's units; the output range is ±step(data)·step(weight)·2^31 \
          (a step is |range|/127, or /255 for uint8 data).",
    infer: Some(infer_fc),
    forward: forward_fc,
    grad: NO_GRAD,
    cpu: KernelSlot::Call(cpu::finish_product),
    graph: GraphForm {
        inputs: Some(inputs_unless_no_bias),
        param_shapes: Some(fc_shapes),
        out_dtypes: Some(|_, _| Ok(vec![DType::I32, DType::F32, DType::F32])),
        ..GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `quantized_conv`.
pub(super) const CONV: OpDef = OpDef {
    name: "_contrib_quantized_conv",
    inputs: &["data", "weight", "bias", "min_data", "max_data", "min_weight", "max_weight", "min_bias", "max_bias"],
    outputs: PRODUCT_OUT,
    params: crate::ops::conv::CONV_PARAMS,
    doc: "Convolution of int8/uint8 `data` with int8 `weight` as int32, plus the int8 `bias` \
          value per channel (as MXNet's oneDNN kernel adds it); output range \
          ±(|data range|/127)·(|weight range|/127)·2^31.",
    infer: Some(infer_conv),
    forward: forward_conv,
    grad: NO_GRAD,
    cpu: KernelSlot::Call(cpu::finish_product),
    graph: GraphForm {
        inputs: Some(inputs_unless_no_bias),
        param_shapes: Some(conv_shapes),
        out_dtypes: Some(|_, _| Ok(vec![DType::I32, DType::F32, DType::F32])),
        ..GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `quantized_pooling`.
pub(super) const POOLING: OpDef = OpDef {
    name: "_contrib_quantized_pooling",
    inputs: &["data", "min_data", "max_data"],
    outputs: PRODUCT_OUT,
    params: crate::ops::pool::POOL_PARAMS,
    doc: "Max or average pooling of int8/uint8 `data` (averages rounded half to even), the \
          range passed through.",
    infer: Some(infer_pool),
    forward: forward_pool,
    grad: NO_GRAD,
    cpu: KernelSlot::Call(cpu::finish_pool),
    graph: GraphForm { param_shapes: Some(range_shapes), out_dtypes: Some(same_then_ranges), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `quantized_act`.
pub(super) const ACT: OpDef = OpDef {
    name: "_contrib_quantized_act",
    inputs: &["data", "min_data", "max_data"],
    outputs: PRODUCT_OUT,
    params: &[param("act_type", K::Str, None, "'relu' (the only quantized activation).")],
    doc: "ReLU of int8/uint8 `data`, the range passed through.",
    infer: Some(infer_act),
    forward: |i| super::run(i, &[0, 1, 2], &[]),
    grad: NO_GRAD,
    cpu: KernelSlot::Call(cpu::relu),
    graph: GraphForm { param_shapes: Some(range_shapes), out_dtypes: Some(same_then_ranges), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `quantized_flatten`.
pub(super) const FLATTEN: OpDef = OpDef {
    name: "_contrib_quantized_flatten",
    inputs: &["data", "min_data", "max_data"],
    outputs: PRODUCT_OUT,
    doc: "`data` reshaped to (N, rest), the range passed through.",
    infer: Some(infer_flatten),
    forward: |i| super::run(i, &[0, 1, 2], &[]),
    grad: NO_GRAD,
    cpu: KernelSlot::Call(cpu::copy_all),
    graph: GraphForm { param_shapes: Some(range_shapes), out_dtypes: Some(same_then_ranges), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `quantized_embedding`.
pub(super) const EMBEDDING: OpDef = OpDef {
    name: "_contrib_quantized_embedding",
    inputs: &["data", "weight", "min_weight", "max_weight"],
    outputs: PRODUCT_OUT,
    params: &[
        param("input_dim", K::Int, None, "Vocabulary size."),
        param("output_dim", K::Int, None, "Embedding size."),
        param("dtype", K::DType, Some("'float32'"), "The float layer's dtype (accepted; the output is int8)."),
        param("sparse_grad", K::Bool, Some("False"), "Accepted (no gradient)."),
    ],
    doc: "Rows of the int8 `weight` at the indices in `data` (clipped to the table), the \
          weight's range passed through.",
    infer: Some(infer_embedding),
    forward: |i| super::run(i, &[0, 1, 2, 3], &[]),
    grad: NO_GRAD,
    cpu: KernelSlot::Call(cpu::embedding),
    graph: GraphForm {
        param_shapes: Some(embedding_shapes),
        out_dtypes: Some(|_, _| Ok(vec![DType::I8, DType::F32, DType::F32])),
        ..GraphForm::PLAIN
    },
    ..OpDef::BASE
};

fn embedding_shapes(i: &Invocation<'_>, _: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let (v, w) = (i.i64("input_dim")?.max(0) as usize, i.i64("output_dim")?.max(0) as usize);
    let mut out = vec![("weight", Shape::new(&[v, w]))];
    out.extend(ranges_of(i)?);
    Ok(out)
}

/// `quantized_concat`.
pub(super) const CONCAT: OpDef = OpDef {
    name: "_contrib_quantized_concat",
    inputs: &["*data"],
    outputs: PRODUCT_OUT,
    params: &[
        param("num_args", K::Int, None, "Number of data arrays."),
        param("dim", K::Int, Some("1"), "The axis to join along."),
    ],
    doc: "Joins `num_args` int8/uint8 arrays (given as the arrays, then each one's minimum \
          and maximum in turn) along `dim`, each requantized into a range spanning zero and \
          all of theirs; uint8 when every input is uint8, else int8.",
    infer: Some(infer_concat),
    forward: forward_concat,
    grad: NO_GRAD,
    cpu: KernelSlot::Call(cpu::concat),
    graph: GraphForm { out_dtypes: Some(|_, d| Ok(vec![d, DType::F32, DType::F32])), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

fn same_then_ranges(_: &Invocation<'_>, d: DType) -> Result<Vec<DType>> {
    Ok(vec![d, DType::F32, DType::F32])
}

/// The given inputs without the bias and its range when `no_bias` is set.
fn inputs_unless_no_bias(i: &Invocation<'_>) -> Result<Vec<&'static str>> {
    let no_bias = i.bool("no_bias")?;
    Ok(i.def.inputs.iter().copied().filter(|n| !(no_bias && BIAS_NAMES.contains(n))).collect())
}

/// Every value-range input (`min_*`/`max_*`, `*_min`/`*_max`) is one element.
pub(super) fn ranges_of(i: &Invocation<'_>) -> Result<Vec<(&'static str, Shape)>> {
    let names = if i.def.params.iter().any(|p| p.name == "no_bias") {
        inputs_unless_no_bias(i)?
    } else {
        i.def.inputs.to_vec()
    };
    Ok(names
        .into_iter()
        .filter(|n| n.starts_with("min_") || n.starts_with("max_") || n.ends_with("_min") || n.ends_with("_max"))
        .map(|n| (n, Shape::new(&[1])))
        .collect())
}

pub(super) fn range_shapes(i: &Invocation<'_>, _: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    ranges_of(i)
}

fn fc_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let mut v = crate::ops::nn::fc_param_shapes(i, data)?;
    v.extend(ranges_of(i)?);
    Ok(v)
}

fn conv_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let mut v = crate::ops::conv::param_shapes(i, data)?;
    v.extend(ranges_of(i)?);
    Ok(v)
}

/// The data, weight and bias of a product layer, checked: int8/uint8 data, int8 weight
/// and bias, and one-element ranges.
fn check_product(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<bool> {
    let no_bias = Invocation::params(def, a).bool("no_bias")?;
    let n = if no_bias { 6 } else { 9 };
    need(def, ins, n)?;
    if ins.len() != n {
        return Err(Error::value(def.name, format!("expects {n} inputs with no_bias={no_bias}, got {}", ins.len())));
    }
    let nw = if no_bias { 2 } else { 3 };
    let names: Vec<&str> = def.inputs.iter().copied().filter(|nm| !(no_bias && BIAS_NAMES.contains(nm))).collect();
    check_ranges_named(def, ins, nw..n, &names)?;
    Ok(no_bias)
}

fn fc_attrs(p: &Invocation<'_>) -> Result<Attrs> {
    Ok(Attrs(vec![
        ("num_hidden".into(), Attr::Int(p.i64("num_hidden")?)),
        ("no_bias".into(), Attr::Bool(true)),
        ("flatten".into(), Attr::Bool(p.bool("flatten")?)),
    ]))
}

/// `a` without `drop`, with `no_bias=True` (the float layer runs without the bias).
fn float_attrs(a: &Attrs, drop: &[&str]) -> Attrs {
    let mut v: Vec<(String, Attr)> =
        a.0.iter().filter(|(k, _)| !drop.contains(&k.as_str()) && k != "no_bias").cloned().collect();
    v.push(("no_bias".into(), Attr::Bool(true)));
    Attrs(v)
}

fn product_out(def: &'static OpDef, float_name: &str, fa: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let fdef = crate::opdef::find(float_name).ok_or_else(|| Error::value(def.name, "float layer missing"))?;
    let metas = [Meta { dtype: DType::F64, ..ins[0].clone() }, Meta { dtype: DType::F64, ..ins[1].clone() }];
    let out = fdef.infer_meta(fa, &metas).map_err(|e| {
        Error::shape(def.name, &[&ins[0].shape, &ins[1].shape], format!("data and weight do not fit ({e})"))
    })?;
    let m = &out[0];
    Ok(vec![Meta { dtype: DType::I32, ..m.clone() }, range_meta(m.ctx), range_meta(m.ctx)])
}

fn infer_fc(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_product(def, a, ins)?;
    let out = product_out(def, "FullyConnected", &fc_attrs(&Invocation::params(def, a))?, ins)?;
    let nh = Invocation::params(def, a).i64("num_hidden")?;
    if ins[1].shape.dims().first().copied() != Some(nh.max(0) as usize) {
        return Err(Error::shape(def.name, &[&ins[1].shape], format!("weight must have num_hidden={nh} rows")));
    }
    Ok(out)
}

fn infer_conv(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_product(def, a, ins)?;
    product_out(def, "Convolution", &float_attrs(a, &[]), ins)
}

/// Runs the float layer on the integers as float64, then the finishing kernel.
fn forward_product(
    i: &Invocation<'_>,
    float_name: &str,
    fa: &Attrs,
    spans: [f64; 2],
    raw_bias: bool,
) -> Result<Vec<NDArray>> {
    let given = i.all();
    let metas: Vec<Meta> = given.iter().map(Meta::of).collect();
    let out = super::infer_call(i, &metas)?; // (its inference checked the inputs)
    let no_bias = i.bool("no_bias")?;
    let (x, w) = (&given[0], &given[1]);
    let acc = invoke(float_name, &[Some(astype(x, DType::F64)?), Some(astype(w, DType::F64)?)], fa)?.remove(0);
    let od = out[0].shape.dims();
    let (inner, channels) = if float_name == "Convolution" {
        let cl = fa.get("layout").is_some_and(|l| matches!(l, Attr::Str(s) if s.ends_with('C')));
        let c = if cl { od.last().copied().unwrap_or(1) } else { od.get(1).copied().unwrap_or(1) };
        (if cl { 1 } else { od[2.min(od.len())..].iter().product() }, c)
    } else {
        (1, od.last().copied().unwrap_or(1))
    };
    let mode = if no_bias {
        0.0
    } else if raw_bias {
        2.0
    } else {
        1.0
    };
    // the accumulator, then the bias (if any) and the ranges as given
    let mut ins: Vec<&NDArray> = vec![&acc];
    ins.extend(given.iter().skip(2));
    let scale_span = if x.dtype() == DType::U8 { 255.5 } else { 127.5 };
    push(i.def, &ins, &out, &[spans[0], spans[1], mode, inner as f64, channels as f64, scale_span], &[])
}

fn forward_fc(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    // MXNet's range for uint8 data is its S8U8 rule with the operands' spans swapped:
    // 127 for the data, 255 for the weight
    let spans = if i.x(0)?.dtype() == DType::U8 { [127.0, 255.0] } else { [127.0, 127.0] };
    forward_product(i, "FullyConnected", &fc_attrs(i)?, spans, false)
}

fn forward_conv(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    // oneDNN's quantized convolution takes both data types' step over 127 and adds the
    // int8 bias values as they are
    forward_product(i, "Convolution", &float_attrs(i.attrs, &[]), [127.0, 127.0], true)
}

fn check_data(def: &OpDef, ins: &[Meta]) -> Result<()> {
    need(def, ins, 3)?;
    check_ranges(def, ins, 1..3)
}

fn with_ranges(m: Meta) -> Vec<Meta> {
    let c = m.ctx;
    vec![m, range_meta(c), range_meta(c)]
}

fn infer_pool(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_data(def, ins)?;
    let t = Invocation::params(def, a).str("pool_type")?;
    if t != "max" && t != "avg" {
        return Err(Error::value(def.name, format!("pool_type must be 'max' or 'avg', got '{t}'")));
    }
    let pdef = crate::opdef::find("Pooling").ok_or_else(|| Error::value(def.name, "Pooling missing"))?;
    let out = pdef.infer_meta(a, &[Meta { dtype: DType::F32, ..ins[0].clone() }]).map_err(|e| e.in_op(def.name))?;
    Ok(with_ranges(Meta { dtype: ins[0].dtype, ..out[0].clone() }))
}

fn forward_pool(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let given = i.all();
    let metas: Vec<Meta> = given.iter().map(Meta::of).collect();
    let out = super::infer_call(i, &metas)?;
    let pooled = invoke("Pooling", &[Some(astype(&given[0], DType::F32)?)], i.attrs)?.remove(0);
    push(i.def, &[&pooled, &given[1], &given[2]], &out, &[], &[])
}

fn infer_act(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_data(def, ins)?;
    let t = Invocation::params(def, a).str("act_type")?;
    if t != "relu" {
        return Err(Error::value(def.name, format!("only act_type='relu' is quantized, got '{t}'")));
    }
    Ok(with_ranges(ins[0].clone()))
}

fn infer_flatten(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_data(def, ins)?;
    let d = ins[0].shape.dims();
    let n = d.first().copied().unwrap_or(1);
    let rest: usize = d.iter().skip(1).product();
    Ok(with_ranges(Meta { shape: Shape::new(&[n, rest]), ..ins[0].clone() }))
}

fn infer_embedding(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 4)?;
    check_ranges(def, ins, 2..4)?;
    let p = Invocation::params(def, a);
    let (vocab, width) = (p.i64("input_dim")?.max(0) as usize, p.i64("output_dim")?.max(0) as usize);
    let w = &ins[1];
    if w.shape.dims() != [vocab, width] {
        return Err(Error::shape(
            def.name,
            &[&ins[0].shape, &w.shape],
            format!("weight must be ({vocab}, {width}), got {}", w.shape),
        ));
    }
    let mut d = ins[0].shape.dims().to_vec();
    d.push(width);
    Ok(with_ranges(Meta { shape: Shape::new(&d), dtype: DType::I8, ctx: w.ctx }))
}

/// The data arrays' common layout: (outer extent, output shape).
fn concat_layout(def: &'static OpDef, a: &Attrs, data: &[Meta]) -> Result<(usize, Shape)> {
    let p = Invocation::params(def, a);
    let first = data.first().ok_or_else(|| Error::value(def.name, "needs at least one array"))?;
    let nd = first.shape.ndim() as i64;
    let dim = p.i64("dim")?;
    if dim < -nd || dim >= nd {
        return Err(Error::value(def.name, format!("dim {dim} is out of range for {nd}-d data")));
    }
    let ax = dim.rem_euclid(nd.max(1)) as usize;
    let mut od = first.shape.dims().to_vec();
    od[ax] = 0;
    for m in data {
        let d = m.shape.dims();
        let same = d.len() == od.len() && d.iter().zip(&od).enumerate().all(|(k, (a, b))| k == ax || a == b);
        if !same {
            let shapes: Vec<&Shape> = data.iter().map(|m| &m.shape).collect();
            return Err(Error::shape(def.name, &shapes, format!("arrays must agree except along axis {ax}")));
        }
        od[ax] += d[ax];
    }
    Ok((od[..ax].iter().product(), Shape::new(&od)))
}

fn infer_concat(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let n = Invocation::params(def, a).i64("num_args")?.max(0) as usize;
    if n == 0 || ins.len() != 3 * n {
        return Err(Error::value(
            def.name,
            format!(
                "expects num_args={n} arrays, then a minimum and maximum for each ({} inputs), got {}",
                3 * n,
                ins.len()
            ),
        ));
    }
    check_ranges(def, ins, n..3 * n)?;
    let (_, shape) = concat_layout(def, a, &ins[..n])?;
    let q = if ins[..n].iter().all(|m| m.dtype == DType::U8) { DType::U8 } else { DType::I8 };
    Ok(with_ranges(Meta { shape, dtype: q, ctx: ins[0].ctx }))
}

fn forward_concat(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let given = i.all();
    let metas: Vec<Meta> = given.iter().map(Meta::of).collect();
    let out = super::infer_call(i, &metas)?;
    let n = given.len() / 3;
    let (outer, _) = concat_layout(i.def, i.attrs, &metas[..n])?;
    let total = out[0].shape.size() / outer.max(1);
    let refs: Vec<&NDArray> = given.iter().collect();
    push(i.def, &refs, &out, &[], &[n as i64, outer as i64, total as i64])
}

/// `quantized_rnn`.
pub(super) const RNN: OpDef = OpDef {
    name: "_contrib_quantized_rnn",
    // MXNet names the last two `min_data`/`max_data`; they hold the data's scale and shift
    inputs: &["data", "parameters", "state", "state_cell", "min_data", "max_data"],
    outputs: &["output", "state_output", "statecell_output"],
    params: crate::ops::sequence::RNN_PARAMS,
    doc: "An LSTM over uint8 `data` quantized with a scale and a shift (the last two inputs): \
          the data is restored as `(data - shift) / scale` and run through `RNN` with the \
          float32 parameters and states (MXNet quantizes the weights inside oneDNN too).",
    infer: Some(infer_rnn),
    forward: forward_rnn,
    grad: NO_GRAD,
    cpu: KernelSlot::Composite,
    graph: GraphForm {
        visible: Some(|i| Ok(if i.bool("state_outputs")? { 3 } else { 1 })),
        named_outputs: true,
        param_shapes: Some(rnn_shapes),
        out_dtypes: Some(|_, _| Ok(vec![DType::F32; 3])),
        ..GraphForm::PLAIN
    },
    ..OpDef::BASE
};

fn rnn_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let mut v = crate::ops::sequence::rnn_param_shapes(i, data)?;
    v.extend(ranges_of(i)?);
    Ok(v)
}

fn infer_rnn(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 6)?;
    check_ranges(def, ins, 4..6)?;
    let mode = Invocation::params(def, a).str("mode")?;
    if mode != "lstm" {
        return Err(Error::value(def.name, format!("only mode='lstm' is quantized, got '{mode}'")));
    }
    let rnn = crate::opdef::find("RNN").ok_or_else(|| Error::value(def.name, "RNN missing"))?;
    let mut metas = vec![Meta { dtype: DType::F32, ..ins[0].clone() }];
    metas.extend(ins[1..4].iter().cloned());
    rnn.infer_meta(a, &metas).map_err(|e| e.in_op(def.name))
}

fn forward_rnn(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let given = i.all();
    let metas: Vec<Meta> = given.iter().map(Meta::of).collect();
    super::infer_call(i, &metas)?;
    let ones = Shape::new(&vec![1; given[0].shape().ndim()]);
    let scale = crate::ops::shape::reshape_to(&given[4], ones.clone())?;
    let shift = crate::ops::shape::reshape_to(&given[5], ones)?;
    let x = astype(&given[0], DType::F32)?;
    let x = invoke("broadcast_sub", &[Some(x), Some(astype(&shift, DType::F32)?)], &Attrs::default())?.remove(0);
    let x = invoke("broadcast_div", &[Some(x), Some(astype(&scale, DType::F32)?)], &Attrs::default())?.remove(0);
    let rest = given[1..4].iter().cloned().map(Some);
    let ins: Vec<Option<NDArray>> = std::iter::once(Some(x)).chain(rest).collect();
    invoke("RNN", &ins, i.attrs)
}
