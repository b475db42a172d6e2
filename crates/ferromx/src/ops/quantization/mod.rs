//! MXNet's int8 quantization operators (`nd.contrib.quantize*`, `dequantize`,
//! `requantize` and the `quantized_*` layers), as MXNet 1.9.1's oneDNN build runs them.
//!
//! Why a family: every operator here carries a value range beside its data (one-element
//! `min_*`/`max_*` float arrays) and converts between float and int8/uint8/int32 by the
//! same rules (`cpu.rs`). The layers whose arithmetic is a float operator's on integers
//! (fully connected, convolution, pooling) run that operator on exact integer values
//! (float64 products, float32 windows) and finish with their own kernel, which adds the
//! bias and writes the integer result and its range; so a quantized layer gives exactly
//! the integers MXNet's does, without a second convolution implementation.
//!
//! These operators are inference-only, as in MXNet: they have no gradient.

mod calibrate;
mod cpu;
mod elemwise;
mod layers;
#[cfg(test)]
mod tests;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Attrs, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::shape::Shape;

const NO_GRAD: crate::opdef::Grad =
    crate::opdef::Grad::None("quantized operators are inference-only (MXNet has no gradient)");
const CALIB: [ParamDef; 2] = [
    param("min_calib_range", K::Float, Some("None"), "The calibrated minimum (None: from the data)."),
    param("max_calib_range", K::Float, Some("None"), "The calibrated maximum (None: from the data)."),
];
const RANGE_OUT: &[&str] = &["output", "min_output", "max_output"];

/// The family's operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_quantize",
        inputs: &["data", "min_range", "max_range"],
        outputs: RANGE_OUT,
        params: &[param("out_type", K::Str, Some("'uint8'"), "'int8' or 'uint8'.")],
        doc: "Quantizes float32 `data` over [`min_range`, `max_range`] to int8 (scale \
              127/|range|, output range ±|range|) or uint8 (scale 255/|range|, range passed \
              through), rounding half to even and saturating, as MXNet's oneDNN kernel.",
        infer: Some(infer_quantize),
        forward: |i| run(i, &[0, 1, 2], &[f64::from(u8::from(i.str("out_type")? == "int8"))]),
        grad: NO_GRAD,
        cpu: KernelSlot::Call(cpu::quantize),
        graph: GraphForm { out_dtypes: Some(dtypes_quantize), ..GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_quantize_v2",
        inputs: &["data"],
        outputs: RANGE_OUT,
        params: &[
            param(
                "out_type",
                K::Str,
                Some("'int8'"),
                "'auto', 'int8' or 'uint8' ('auto': uint8 when \
                   the calibrated minimum is >= 0, else int8).",
            ),
            CALIB[0],
            CALIB[1],
        ],
        doc: "Quantizes float32 `data` to int8 (scale 127.5/|range|, range ±|range|) or uint8 \
              (scale 255.5/|range|, range [min, max]) over the calibrated range or the data's \
              own; int8 or uint8 data is passed through.",
        infer: Some(infer_quantize_v2),
        forward: |i| run(i, &[0], &calibrated_nums(i)?),
        grad: NO_GRAD,
        cpu: KernelSlot::Call(cpu::quantize_v2),
        graph: GraphForm { out_dtypes: Some(dtypes_quantize), ..GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_dequantize",
        inputs: &["data", "min_range", "max_range"],
        params: &[param("out_type", K::Str, Some("'float32'"), "'float32'.")],
        doc: "int8 or uint8 `data` back to float32: `data · |range| / 127.5` (int8) or \
              `/ 255.5` (uint8), MXNet's oneDNN spans.",
        infer: Some(infer_dequantize),
        forward: |i| run(i, &[0, 1, 2], &[]),
        grad: NO_GRAD,
        cpu: KernelSlot::Call(cpu::dequantize),
        graph: GraphForm { out_dtypes: Some(|_, _| Ok(vec![DType::F32])), ..GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_requantize",
        inputs: &["data", "min_range", "max_range"],
        outputs: RANGE_OUT,
        params: &[param("out_type", K::Str, Some("'int8'"), "'auto', 'int8' or 'uint8'."), CALIB[0], CALIB[1]],
        doc: "int32 `data` (a product's accumulator, range [min_range, max_range] over 2^31) to \
              int8 (range ±r) or uint8 (range [0, r]), `r` the calibrated range's magnitude or \
              the data's own largest value.",
        infer: Some(infer_requantize),
        forward: |i| run(i, &[0, 1, 2], &calibrated_nums(i)?),
        grad: NO_GRAD,
        cpu: KernelSlot::Call(cpu::requantize),
        graph: GraphForm { out_dtypes: Some(dtypes_quantize), ..GraphForm::PLAIN },
        ..OpDef::BASE
    },
    layers::FULLY_CONNECTED,
    layers::CONV,
    layers::POOLING,
    layers::ACT,
    layers::FLATTEN,
    layers::EMBEDDING,
    layers::CONCAT,
    layers::RNN,
    elemwise::ADD,
    elemwise::MUL,
    elemwise::BATCH_NORM,
    calibrate::CALIBRATE_ENTROPY,
    calibrate::QUANTIZE_ASYM,
];

/// The calibrated range, if given.
fn calib(i: &Invocation<'_>) -> Result<(Option<f64>, Option<f64>)> {
    Ok((i.opt_f64("min_calib_range")?, i.opt_f64("max_calib_range")?))
}

/// `[uint8 output?, calibrated?, min_calib, max_calib]`: what the kernels of
/// `quantize_v2` and `requantize` read.
fn calibrated_nums(i: &Invocation<'_>) -> Result<[f64; 4]> {
    let (lo, hi) = calib(i)?;
    let calibrated = lo.is_some() && hi.is_some();
    let uint8 = out_kind(i)? == DType::U8;
    Ok([f64::from(u8::from(uint8)), f64::from(u8::from(calibrated)), lo.unwrap_or(0.0), hi.unwrap_or(0.0)])
}

/// The output type of `quantize_v2`/`requantize` (MXNet's `GetQuantizeOutputType`).
fn out_kind(i: &Invocation<'_>) -> Result<DType> {
    match i.str("out_type")?.as_str() {
        "int8" => Ok(DType::I8),
        "uint8" => Ok(DType::U8),
        "auto" => {
            let (lo, hi) = calib(i)?;
            Ok(if matches!((lo, hi), (Some(l), Some(_)) if l >= 0.0) { DType::U8 } else { DType::I8 })
        }
        other => Err(Error::value(i.name(), format!("out_type must be 'auto', 'int8' or 'uint8', got '{other}'"))),
    }
}

fn dtypes_quantize(i: &Invocation<'_>, _: DType) -> Result<Vec<DType>> {
    let q = if i.name() == "_contrib_quantize" {
        if i.str("out_type")? == "int8" {
            DType::I8
        } else {
            DType::U8
        }
    } else {
        out_kind(i)?
    };
    Ok(vec![q, DType::F32, DType::F32])
}

/// Metadata of a one-element float32 range output on `ctx`.
fn range_meta(ctx: crate::Context) -> Meta {
    Meta { shape: Shape::new(&[1]), dtype: DType::F32, ctx }
}

/// Checks that inputs `idx` are one-element float ranges.
fn check_ranges(def: &OpDef, ins: &[Meta], idx: std::ops::Range<usize>) -> Result<()> {
    check_ranges_named(def, ins, idx, def.inputs)
}

/// [`check_ranges`] where the inputs given are `names` (a layer without its bias).
fn check_ranges_named(def: &OpDef, ins: &[Meta], idx: std::ops::Range<usize>, names: &[&str]) -> Result<()> {
    for j in idx {
        let m = ins.get(j).ok_or_else(|| Error::value(def.name, format!("missing input {j}")))?;
        if m.shape.size() != 1 || !m.dtype.is_float() {
            let nm = names.get(j).copied().unwrap_or("range");
            return Err(Error::shape(
                def.name,
                &[&m.shape],
                format!("'{nm}' must be a one-element float array (a range), got {} {}", m.dtype, m.shape),
            ));
        }
    }
    Ok(())
}

fn need(def: &OpDef, ins: &[Meta], n: usize) -> Result<()> {
    if ins.len() < n {
        return Err(Error::value(def.name, format!("needs {n} inputs ({}), got {}", def.inputs.join(", "), ins.len())));
    }
    Ok(())
}

fn infer_quantize(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 3)?;
    check_ranges(def, ins, 1..3)?;
    let x = &ins[0];
    if x.dtype != DType::F32 {
        return Err(Error::dtype(def.name, format!("data must be float32, got {}", x.dtype)));
    }
    let q = match Invocation::params(def, a).str("out_type")?.as_str() {
        "int8" => DType::I8,
        "uint8" => DType::U8,
        other => return Err(Error::value(def.name, format!("out_type must be 'int8' or 'uint8', got '{other}'"))),
    };
    Ok(vec![Meta { dtype: q, ..x.clone() }, range_meta(x.ctx), range_meta(x.ctx)])
}

fn infer_quantize_v2(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 1)?;
    let x = &ins[0];
    if !matches!(x.dtype, DType::F32 | DType::I8 | DType::U8) {
        return Err(Error::dtype(def.name, format!("data must be float32, int8 or uint8, got {}", x.dtype)));
    }
    let p = Invocation::params(def, a);
    // int8/uint8 data is copied as is, so its bytes keep their type
    let q = if matches!(x.dtype, DType::I8 | DType::U8) { x.dtype } else { out_kind(&p)? };
    Ok(vec![Meta { dtype: q, ..x.clone() }, range_meta(x.ctx), range_meta(x.ctx)])
}

fn infer_dequantize(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 3)?;
    check_ranges(def, ins, 1..3)?;
    let x = &ins[0];
    let t = Invocation::params(def, a).str("out_type")?;
    if t != "float32" {
        return Err(Error::value(def.name, format!("out_type must be 'float32', got '{t}'")));
    }
    Ok(vec![Meta { dtype: DType::F32, ..x.clone() }])
}

fn infer_requantize(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 3)?;
    check_ranges(def, ins, 1..3)?;
    let x = &ins[0];
    let q = out_kind(&Invocation::params(def, a))?;
    Ok(vec![Meta { dtype: q, ..x.clone() }, range_meta(x.ctx), range_meta(x.ctx)])
}

/// Inputs `idx` of the call (the compacted given inputs when some are left out), metadata
/// from `def`'s inference, one push of `def`'s kernel with `nums`.
fn run(i: &Invocation<'_>, idx: &[usize], nums: &[f64]) -> Result<Vec<NDArray>> {
    let given = i.all();
    let ins: Vec<&NDArray> = idx
        .iter()
        .map(|&j| given.get(j).ok_or_else(|| Error::value(i.name(), format!("missing input {j}"))))
        .collect::<Result<_>>()?;
    let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
    let out = infer_call(i, &metas)?;
    push(i.def, &ins, &out, nums, &[])
}

/// Inference for a call on arrays: the operator's inference, then its integer dtype rules.
///
/// Why apart: graph inference runs before the variables' dtypes are known (they read as
/// float32), so the definitions' inference checks shapes only, and the dtypes are checked
/// here, where the arrays exist.
pub(super) fn infer_call(i: &Invocation<'_>, metas: &[Meta]) -> Result<Vec<Meta>> {
    let out = i.def.infer_meta(i.attrs, metas)?;
    check_int_types(i, metas)?;
    Ok(out)
}

fn check_int_types(i: &Invocation<'_>, ins: &[Meta]) -> Result<()> {
    use DType::{I32, I8, U8};
    let q8: &[DType] = &[I8, U8];
    let name = i.name().trim_start_matches("_contrib_");
    // (input positions, the dtypes allowed, what to say)
    let rules: Vec<(Vec<usize>, &[DType], &str)> = match name {
        "dequantize" | "quantized_pooling" | "quantized_act" | "quantized_flatten" | "quantized_batch_norm" => {
            vec![(vec![0], q8, "int8 or uint8")]
        }
        "requantize" => vec![(vec![0], &[I32], "int32")],
        "quantized_fully_connected" | "quantized_conv" => {
            let nw = if i.bool("no_bias")? { 2 } else { 3 };
            vec![(vec![0], q8, "int8 or uint8"), ((1..nw).collect(), &[I8], "int8")]
        }
        "quantized_embedding" => vec![(vec![1], &[I8], "int8")],
        "quantized_concat" => vec![((0..ins.len() / 3).collect(), q8, "int8 or uint8")],
        "quantized_elemwise_add" => vec![(vec![0, 1], q8, "int8 or uint8")],
        "quantized_elemwise_mul" => vec![(vec![0, 1], &[I8], "int8")],
        "quantized_rnn" => vec![(vec![0], &[U8], "uint8")],
        _ => Vec::new(),
    };
    for (pos, ok, what) in rules {
        for j in pos {
            if let Some(m) = ins.get(j).filter(|m| !ok.contains(&m.dtype)) {
                let nm = i.def.inputs.get(j).copied().unwrap_or("data").trim_start_matches('*');
                return Err(Error::dtype(
                    i.name(),
                    format!("{nm} must be {what}, got {} (shape {})", m.dtype, m.shape),
                ));
            }
        }
    }
    Ok(())
}

/// Allocates `metas` and pushes one call of `def`'s kernel.
fn push(def: &'static OpDef, ins: &[&NDArray], metas: &[Meta], nums: &[f64], ints: &[i64]) -> Result<Vec<NDArray>> {
    let outs = metas.iter().map(|m| NDArray::empty(m.shape.clone(), m.dtype, m.ctx)).collect::<Result<Vec<_>>>()?;
    let orefs: Vec<&NDArray> = outs.iter().collect();
    push_call(OpCall::new(def, ins, &orefs).with_nums(nums).with_ints(ints))?;
    Ok(outs)
}
