//! `quantized_elemwise_add`, `quantized_elemwise_mul` and `quantized_batch_norm`: the
//! quantized layers that rescale per element rather than accumulate products.

use super::cpu::{max_abs, sat_i8, scalar, store, values, KResult, INT32_SPAN, INT8_SPAN, UINT8_SPAN};
use super::layers::range_shapes;
use super::{calib, check_ranges, need, push, range_meta, CALIB, NO_GRAD};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{param, Attrs, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind as K};
use crate::shape::Shape;
use crate::storage::Kernel;

const PAIR_INPUTS: &[&str] = &["lhs", "rhs", "lhs_min", "lhs_max", "rhs_min", "rhs_max"];
const OUTS: &[&str] = &["output", "min_output", "max_output"];

/// `quantized_elemwise_add`.
pub(super) const ADD: OpDef = OpDef {
    name: "_contrib_quantized_elemwise_add",
    inputs: PAIR_INPUTS,
    outputs: OUTS,
    params: &[CALIB[0], CALIB[1]],
    doc: "Sum of two int8/uint8 arrays in their ranges: int32 over the range ±(|lhs range| + \
          |rhs range|), or, calibrated, int8/uint8 over the calibrated range.",
    infer: Some(infer_add),
    forward: |i| pair_forward(i, &[]),
    grad: NO_GRAD,
    cpu: KernelSlot::Call(add),
    graph: GraphForm { param_shapes: Some(range_shapes), out_dtypes: Some(pair_dtypes), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `quantized_elemwise_mul`.
pub(super) const MUL: OpDef = OpDef {
    name: "_contrib_quantized_elemwise_mul",
    inputs: PAIR_INPUTS,
    outputs: OUTS,
    params: &[
        CALIB[0],
        CALIB[1],
        param("enable_float_output", K::Bool, Some("False"), "Give the float32 product (one output)."),
    ],
    doc: "Product of two int8 arrays: int32 `lhs · rhs` over ±step(lhs)·step(rhs)·2^31, or, \
          calibrated, int8 over the calibrated range, or float32 with `enable_float_output`.",
    infer: Some(infer_mul),
    forward: |i| {
        let float = i.bool("enable_float_output")?;
        pair_forward(i, &[f64::from(u8::from(float))])
    },
    grad: NO_GRAD,
    cpu: KernelSlot::Call(mul),
    graph: GraphForm {
        visible: Some(|i| Ok(if i.bool("enable_float_output")? { 1 } else { 3 })),
        param_shapes: Some(range_shapes),
        out_dtypes: Some(pair_dtypes),
        ..GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// `quantized_batch_norm`.
pub(super) const BATCH_NORM: OpDef = OpDef {
    name: "_contrib_quantized_batch_norm",
    inputs: &["data", "gamma", "beta", "moving_mean", "moving_var", "min_data", "max_data"],
    outputs: OUTS,
    params: &[
        param("eps", K::Float, Some("0.001"), "Added to the variance."),
        param("momentum", K::Float, Some("0.9"), "Accepted (inference uses the moving statistics)."),
        param("fix_gamma", K::Bool, Some("True"), "Accepted; gamma is used as given, as in MXNet's kernel."),
        param("use_global_stats", K::Bool, Some("False"), "Accepted (always the moving statistics)."),
        param("output_mean_var", K::Bool, Some("False"), "Accepted."),
        param("axis", K::Int, Some("1"), "The channel axis."),
        param("cudnn_off", K::Bool, Some("False"), "Accepted."),
        CALIB[0],
        CALIB[1],
    ],
    doc: "Batch normalization of int8/uint8 `data` with the moving statistics, to int8 over \
          the calibrated range (required).",
    infer: Some(infer_bn),
    forward: forward_bn,
    grad: NO_GRAD,
    cpu: KernelSlot::Call(batch_norm),
    graph: GraphForm {
        param_shapes: Some(bn_shapes),
        out_dtypes: Some(|_, _| Ok(vec![DType::I8, DType::F32, DType::F32])),
        ..GraphForm::PLAIN
    },
    ..OpDef::BASE
};

/// The per-channel statistics from the data's channel axis, and the data's range.
fn bn_shapes(i: &Invocation<'_>, data: Option<&Shape>) -> Result<Vec<(&'static str, Shape)>> {
    let mut out = match data {
        Some(d) => crate::opdef::per_channel(&["gamma", "beta", "moving_mean", "moving_var"], d, i.i64("axis")?),
        None => Vec::new(),
    };
    out.extend(range_shapes(i, data)?);
    Ok(out)
}

fn pair_dtypes(i: &Invocation<'_>, d: DType) -> Result<Vec<DType>> {
    let (lo, hi) = calib(i)?;
    let out = if i.name().ends_with("mul") && i.bool("enable_float_output")? {
        return Ok(vec![DType::F32]);
    } else if lo.is_some() && hi.is_some() {
        if i.name().ends_with("mul") {
            DType::I8
        } else {
            d
        }
    } else {
        DType::I32
    };
    Ok(vec![out, DType::F32, DType::F32])
}

fn check_pair(def: &'static OpDef, ins: &[Meta]) -> Result<()> {
    need(def, ins, 6)?;
    check_ranges(def, ins, 2..6)?;
    let (a, b) = (&ins[0], &ins[1]);
    if a.shape != b.shape {
        return Err(Error::shape(def.name, &[&a.shape, &b.shape], "lhs and rhs must have the same shape"));
    }
    Ok(())
}

fn infer_add(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_pair(def, ins)?;
    let (lo, hi) = calib(&Invocation::params(def, a))?;
    let d = if lo.is_none() || hi.is_none() {
        DType::I32
    } else if ins[0].dtype == ins[1].dtype {
        ins[0].dtype
    } else {
        DType::I8
    };
    let c = ins[0].ctx;
    Ok(vec![Meta { dtype: d, ..ins[0].clone() }, range_meta(c), range_meta(c)])
}

fn infer_mul(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    check_pair(def, ins)?;
    let p = Invocation::params(def, a);
    if p.bool("enable_float_output")? {
        return Ok(vec![Meta { dtype: DType::F32, ..ins[0].clone() }]);
    }
    let (lo, hi) = calib(&p)?;
    let d = if lo.is_some() && hi.is_some() { DType::I8 } else { DType::I32 };
    let c = ins[0].ctx;
    Ok(vec![Meta { dtype: d, ..ins[0].clone() }, range_meta(c), range_meta(c)])
}

/// One push with `nums` `[extra..., calibrated?, min_calib, max_calib]`.
fn pair_forward(i: &Invocation<'_>, extra: &[f64]) -> Result<Vec<NDArray>> {
    let given = i.all();
    let metas: Vec<Meta> = given.iter().map(Meta::of).collect();
    let out = super::infer_call(i, &metas)?;
    let (lo, hi) = calib(i)?;
    let mut nums = extra.to_vec();
    nums.extend([f64::from(u8::from(lo.is_some() && hi.is_some())), lo.unwrap_or(0.0), hi.unwrap_or(0.0)]);
    let refs: Vec<&NDArray> = given.iter().collect();
    push(i.def, &refs, &out, &nums, &[])
}

fn span(d: DType) -> f32 {
    if d == DType::U8 {
        UINT8_SPAN
    } else {
        INT8_SPAN
    }
}

fn out_span(d: DType) -> f32 {
    match d {
        DType::U8 => UINT8_SPAN,
        DType::I8 => INT8_SPAN,
        _ => INT32_SPAN,
    }
}

/// `nums` `[calibrated?, min, max]`: `kA·a + kB·b` in float32 (oneDNN's sum), `k` the
/// output scale over each input's.
fn add(c: &OpCall, k: &Kernel) -> KResult {
    let (ma, mb) = (max_abs(scalar(k, 2), scalar(k, 3)), max_abs(scalar(k, 4), scalar(k, 5)));
    let (ra, rb, ro) = (span(k.in_dtype(0)), span(k.in_dtype(1)), out_span(k.out_dtype(0)));
    let calibrated = c.nums.first().copied().unwrap_or(0.0) != 0.0;
    let (lo, hi, ka, kb) = if calibrated {
        let (lo, hi) = (c.nums[1] as f32, c.nums[2] as f32);
        let so = ro / max_abs(lo, hi);
        (lo, hi, so / (ra / ma), so / (rb / mb))
    } else {
        let sum = ma + mb;
        (-sum, sum, ma * ro / (sum * ra), mb * ro / (sum * rb))
    };
    let (a, b) = (values(k, 0), values(k, 1));
    store(k, a.len(), |i| kb * b[i] + ka * a[i]);
    k.output::<f32>(1)[0] = lo;
    k.output::<f32>(2)[0] = hi;
    Ok(())
}

/// `nums` `[float output?, calibrated?, min, max]`.
fn mul(c: &OpCall, k: &Kernel) -> KResult {
    let (sl, sr) = (INT8_SPAN / max_abs(scalar(k, 2), scalar(k, 3)), INT8_SPAN / max_abs(scalar(k, 4), scalar(k, 5)));
    let (a, b) = (k.input::<i8>(0), k.input::<i8>(1));
    let prod = a.iter().zip(b).map(|(&a, &b)| f32::from(a) * f32::from(b));
    if c.nums.first().copied().unwrap_or(0.0) != 0.0 {
        let os = ((1.0 / f64::from(sl)) / f64::from(sr)) as f32;
        k.output::<f32>(0).iter_mut().zip(prod).for_each(|(o, p)| *o = p * os);
        return Ok(());
    }
    if c.nums.get(1).copied().unwrap_or(0.0) != 0.0 {
        let (lo, hi) = (c.nums[2] as f32, c.nums[3] as f32);
        let os = INT8_SPAN / max_abs(lo, hi) / sl / sr;
        // MXNet truncates (and wraps past the type); truncated and saturated here
        k.output::<i8>(0).iter_mut().zip(prod).for_each(|(o, p)| *o = (p * os) as i8);
        k.output::<f32>(1)[0] = lo;
        k.output::<f32>(2)[0] = hi;
        return Ok(());
    }
    k.output::<i32>(0).iter_mut().zip(a.iter().zip(b)).for_each(|(o, (&a, &b))| *o = i32::from(a) * i32::from(b));
    let hi = (max_abs(scalar(k, 2), scalar(k, 3)) / 127.0) * (max_abs(scalar(k, 4), scalar(k, 5)) / 127.0) * INT32_SPAN;
    k.output::<f32>(1)[0] = -hi;
    k.output::<f32>(2)[0] = hi;
    Ok(())
}

fn infer_bn(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 7)?;
    check_ranges(def, ins, 5..7)?;
    let x = &ins[0];
    let p = Invocation::params(def, a);
    let ax = channel_axis(def, &p, x.shape.ndim())?;
    let c = x.shape.dims()[ax];
    for m in &ins[1..5] {
        if m.shape.size() != c || !m.dtype.is_float() {
            return Err(Error::shape(
                def.name,
                &[&x.shape, &m.shape],
                format!("gamma, beta, moving_mean and moving_var must be float with {c} elements (the channels)"),
            ));
        }
    }
    let (lo, hi) = calib(&p)?;
    if lo.is_none() || hi.is_none() {
        return Err(Error::value(
            def.name,
            "min_calib_range and max_calib_range are required (MXNet: quantized batch norm does not support calib_mode=None)",
        ));
    }
    Ok(vec![Meta { dtype: DType::I8, ..x.clone() }, range_meta(x.ctx), range_meta(x.ctx)])
}

fn channel_axis(def: &OpDef, p: &Invocation<'_>, nd: usize) -> Result<usize> {
    let a = p.i64("axis")?;
    let n = nd as i64;
    if a < -n || a >= n {
        return Err(Error::value(def.name, format!("axis {a} is out of range for {nd}-d data")));
    }
    Ok(a.rem_euclid(n.max(1)) as usize)
}

fn forward_bn(i: &Invocation<'_>) -> Result<Vec<NDArray>> {
    let given = i.all();
    let metas: Vec<Meta> = given.iter().map(Meta::of).collect();
    let out = super::infer_call(i, &metas)?;
    let x = &given[0];
    let ax = channel_axis(i.def, i, x.shape().ndim())?;
    let d = x.shape().dims();
    let inner: usize = d[ax + 1..].iter().product();
    let (lo, hi) = calib(i)?;
    let nums = [(i.f64("eps")? as f32) as f64, lo.unwrap_or(0.0), hi.unwrap_or(0.0), inner as f64, d[ax] as f64];
    let refs: Vec<&NDArray> = given.iter().collect();
    push(i.def, &refs, &out, &nums, &[])
}

/// `nums` `[eps, min_calib, max_calib, inner, channels]`. Per channel, MXNet folds the
/// statistics into a weight and a shift in the output's units, then runs oneDNN's batch
/// norm with mean 0 and variance 1 (and the same eps, so the weight is divided once more
/// by `sqrt(1 + eps)`); uint8 data is first converted to int8 steps.
fn batch_norm(c: &OpCall, k: &Kernel) -> KResult {
    let n = &c.nums;
    let (eps, mo) = (n[0], max_abs(n[1] as f32, n[2] as f32));
    let (inner, ch) = ((n[3] as usize).max(1), (n[4] as usize).max(1));
    let md = max_abs(scalar(k, 5), scalar(k, 6));
    let (g, b, m, v) = (values(k, 1), values(k, 2), values(k, 3), values(k, 4));
    let extra = (1.0f32 + eps as f32).sqrt();
    let (w, sh): (Vec<f32>, Vec<f32>) = (0..ch)
        .map(|j| {
            let invstd = (1.0 / (f64::from(v[j]) + eps).sqrt()) as f32;
            let w = g[j] * invstd * md / mo;
            let sh = (b[j] - m[j] * g[j] * invstd) * INT8_SPAN / mo;
            (w / extra, sh)
        })
        .unzip();
    let u8_to_i8 = (f64::from(INT8_SPAN) / f64::from(UINT8_SPAN)) as f32;
    let x = values(k, 0);
    let convert = k.in_dtype(0) == DType::U8;
    let o = k.output::<i8>(0);
    for (idx, (o, &q)) in o.iter_mut().zip(&x).enumerate() {
        let q = if convert { f32::from(sat_i8(q * u8_to_i8)) } else { q };
        let j = (idx / inner) % ch;
        *o = sat_i8(w[j] * q + sh[j]);
    }
    k.output::<f32>(1)[0] = n[1] as f32;
    k.output::<f32>(2)[0] = n[2] as f32;
    Ok(())
}
