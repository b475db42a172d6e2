//! CPU kernels of the int8 quantization operators.
//!
//! Conventions MXNet 1.9.1's oneDNN build follows, and so these kernels:
//! - a range input (`min_*`, `max_*`) is a one-element float array, read as float32;
//! - a float value `v` becomes a quantized one as `v · scale` computed in float32, rounded
//!   to the nearest integer with ties to even, then saturated to the type (a NaN gives 0):
//!   [`to_q`];
//! - the scale of a range is its largest magnitude over the type's span, where the span
//!   is 127 or 255 for the products' ranges and the requantization targets, and 127.5 or
//!   255.5 (`kInt8Range`, `kUint8Range`) for `quantize_v2` and `dequantize`.

use crate::dtype::{DType, Elem};
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::with_dtype;

pub(super) type KResult = Result<(), OpFailure>;

/// `kInt8Range` and `kUint8Range`: the spans `quantize_v2` and `dequantize` use.
pub(super) const INT8_SPAN: f32 = 127.5;
pub(super) const UINT8_SPAN: f32 = 255.5;
/// `float(INT32_MAX)`: the int32 span of products' ranges (rounds to 2^31 in float32).
pub(super) const INT32_SPAN: f32 = 2_147_483_648.0;

fn fail(c: &OpCall, msg: impl std::fmt::Display) -> OpFailure {
    OpFailure::new(ErrorKind::Value, format!("{}: {msg}", c.def.name))
}

/// Element 0 of input `i` (a range) as float32.
pub(super) fn scalar(k: &Kernel, i: usize) -> f32 {
    with_dtype!(k.in_dtype(i), T, k.input::<T>(i).first().map(|v| v.to_f64() as f32).unwrap_or(0.0))
}

/// The largest magnitude of a range.
pub(super) fn max_abs(lo: f32, hi: f32) -> f32 {
    lo.abs().max(hi.abs())
}

/// Writes `f(i)` for every element of output 0 (int8, uint8 or int32), rounded half to
/// even and saturated to the type (Rust's float-to-int conversion saturates, NaN to 0).
pub(super) fn store(k: &Kernel, n: usize, f: impl Fn(usize) -> f32) {
    match k.out_dtype(0) {
        DType::I8 => k.output::<i8>(0)[..n].iter_mut().enumerate().for_each(|(i, o)| *o = sat_i8(f(i))),
        DType::U8 => k.output::<u8>(0)[..n].iter_mut().enumerate().for_each(|(i, o)| *o = sat_u8(f(i))),
        _ => k.output::<i32>(0)[..n].iter_mut().enumerate().for_each(|(i, o)| *o = f(i).round_ties_even() as i32),
    }
}

/// `v` as int8: rounded half to even, saturated.
pub(super) fn sat_i8(v: f32) -> i8 {
    v.round_ties_even() as i8
}

/// `v` as uint8: rounded half to even, saturated.
pub(super) fn sat_u8(v: f32) -> u8 {
    v.round_ties_even() as u8
}

/// Input `i` as float32 values (a quantized or float array).
pub(super) fn values(k: &Kernel, i: usize) -> Vec<f32> {
    with_dtype!(k.in_dtype(i), T, k.input::<T>(i).iter().map(|v| v.to_f64() as f32).collect())
}

fn set_range(k: &Kernel, lo: f32, hi: f32) {
    k.output::<f32>(1)[0] = lo;
    k.output::<f32>(2)[0] = hi;
}

/// `quantize`: `nums` `[int8?]`. int8: scale 127/|range|, range ±|range|; uint8: scale
/// 255/|range|, the given range passed through (MXNet's oneDNN kernel, negatives to 0).
pub(super) fn quantize(c: &OpCall, k: &Kernel) -> KResult {
    let (lo, hi) = (scalar(k, 1), scalar(k, 2));
    let real = max_abs(lo, hi);
    let int8 = c.nums.first().copied().unwrap_or(0.0) != 0.0;
    let scale = if int8 { 127.0 / real } else { 255.0 / real };
    let x = values(k, 0);
    store(k, x.len(), |i| x[i] * scale);
    if int8 {
        set_range(k, -real, real);
    } else {
        set_range(k, lo, hi);
    }
    Ok(())
}

/// `quantize_v2`: `nums` `[uint8?, calibrated?, min_calib, max_calib]`. The range is the
/// calibrated one or the data's own; an int8 or uint8 input is copied as is.
pub(super) fn quantize_v2(c: &OpCall, k: &Kernel) -> KResult {
    let [uint8, calib, cmin, cmax] = nums4(c)?;
    let (uint8, calib) = (uint8 != 0.0, calib != 0.0);
    if matches!(k.in_dtype(0), DType::I8 | DType::U8) {
        with_dtype!(k.in_dtype(0), T, {
            let x = k.input::<T>(0);
            let o = k.output::<T>(0);
            o.copy_from_slice(x);
        });
        let (lo, hi) = match (calib, k.in_dtype(0)) {
            (true, _) => (cmin as f32, cmax as f32),
            (false, DType::U8) => (0.0, UINT8_SPAN),
            _ => (-INT8_SPAN, INT8_SPAN),
        };
        set_range(k, lo, hi);
        return Ok(());
    }
    let x = values(k, 0);
    let (lo, hi) = if calib {
        (cmin as f32, cmax as f32)
    } else {
        x.iter().fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)))
    };
    let real = max_abs(lo, hi);
    let span = if uint8 { UINT8_SPAN } else { INT8_SPAN };
    let scale = if real != 0.0 { span / real } else { i32::MAX as f32 };
    store(k, x.len(), |i| x[i] * scale);
    if uint8 {
        set_range(k, lo, hi);
    } else {
        set_range(k, -real, real);
    }
    Ok(())
}

fn nums4(c: &OpCall) -> Result<[f64; 4], OpFailure> {
    c.nums.get(..4).and_then(|s| s.try_into().ok()).ok_or_else(|| fail(c, "missing numeric parameters"))
}

/// `dequantize`: `q · |range| / span` (span 127.5 for int8, 255.5 for uint8).
pub(super) fn dequantize(_c: &OpCall, k: &Kernel) -> KResult {
    let real = max_abs(scalar(k, 1), scalar(k, 2));
    let span = if k.in_dtype(0) == DType::U8 { UINT8_SPAN } else { INT8_SPAN };
    let scale = real / span;
    let x = values(k, 0);
    for (o, v) in k.output::<f32>(0).iter_mut().zip(x) {
        *o = v * scale;
    }
    Ok(())
}

/// `requantize`: int32 to int8 (range ±real) or uint8 (range 0..real); `nums`
/// `[uint8?, calibrated?, min_calib, max_calib]`. Without calibration `real` is the
/// data's largest magnitude in the input's units.
pub(super) fn requantize(c: &OpCall, k: &Kernel) -> KResult {
    let [uint8, calib, cmin, cmax] = nums4(c)?;
    let x = k.input::<i32>(0);
    let in_real = max_abs(scalar(k, 1), scalar(k, 2));
    let real = if calib != 0.0 {
        max_abs(cmin as f32, cmax as f32)
    } else {
        // MXNet converts the largest magnitude back to int32 first, which overflows (and
        // gives a negative range) when it is 2^31 - 1; a float keeps it right
        let big = x.iter().fold(0f32, |m, &v| m.max((v as f32).abs()));
        big * in_real / INT32_SPAN
    };
    let first = in_real / INT32_SPAN;
    let (span, lo) = if uint8 != 0.0 { (255.0f32, 0.0) } else { (127.0f32, -real) };
    let scale = first * (span / real);
    store(k, x.len(), |i| x[i] as f32 * scale);
    set_range(k, lo, real);
    Ok(())
}

/// The finishing step of `quantized_fully_connected` and `quantized_conv`: input 0 is the
/// exact integer product (float64), then the bias if any, then the data, weight and bias
/// ranges. `nums` `[data span, weight span, bias mode (0 none, 1 rescaled, 2 raw), inner,
/// channels, data scale span]`: the bias of element `i` is `bias[(i / inner) % channels]`.
/// The output range is `±(|data range| / data span)·(|weight range| / weight span)·2^31`
/// (MXNet's `QuantizationRangeForMultiplication`); a rescaled bias (fully connected) is
/// `bias · (data scale · weight scale · |bias range| / 127.5)` truncated, the scales being
/// `data scale span / |data range|` and `127.5 / |weight range|`; a raw one (oneDNN's
/// convolution) is added as is.
pub(super) fn finish_product(c: &OpCall, k: &Kernel) -> KResult {
    let n = c.nums.get(..6).ok_or_else(|| fail(c, "missing numeric parameters"))?;
    let (mode, inner, channels) = (n[2] as usize, (n[3] as usize).max(1), (n[4] as usize).max(1));
    let r0 = if mode == 0 { 1 } else { 2 };
    let (md, mw) = (max_abs(scalar(k, r0), scalar(k, r0 + 1)), max_abs(scalar(k, r0 + 2), scalar(k, r0 + 3)));
    let hi = (md / n[0] as f32) * (mw / n[1] as f32) * INT32_SPAN;
    let bias: Vec<i32> = match mode {
        0 => Vec::new(),
        1 => {
            let mb = max_abs(scalar(k, r0 + 4), scalar(k, r0 + 5));
            let rescale = (n[5] as f32 / md) * (INT8_SPAN / mw) * mb / INT8_SPAN;
            values(k, 1).iter().map(|&b| (b * rescale) as i32).collect()
        }
        _ => values(k, 1).iter().map(|&b| b as i32).collect(),
    };
    let acc = k.input::<f64>(0);
    let o = k.output::<i32>(0);
    for (i, (o, &a)) in o.iter_mut().zip(acc).enumerate() {
        let b = if bias.is_empty() { 0 } else { bias[(i / inner) % channels] };
        *o = (a as i64 as i32).wrapping_add(b);
    }
    set_range(k, -hi, hi);
    Ok(())
}

/// `quantized_pooling`'s finishing step: the float32 pooled values back to the data's
/// type (rounded half to even; max pooling is exact), the range passed through.
pub(super) fn finish_pool(_c: &OpCall, k: &Kernel) -> KResult {
    let x = k.input::<f32>(0);
    store(k, x.len(), |i| x[i]);
    set_range(k, scalar(k, 1), scalar(k, 2));
    Ok(())
}

/// `quantized_act` (relu): `max(q, 0)` in the data's type, the range passed through.
pub(super) fn relu(_c: &OpCall, k: &Kernel) -> KResult {
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        for (o, &v) in o.iter_mut().zip(x) {
            *o = if v.to_f64() > 0.0 { v } else { T::default() };
        }
    });
    set_range(k, scalar(k, 1), scalar(k, 2));
    Ok(())
}

/// Copies each input to the output at the same position (`quantized_flatten`: data
/// reshaped, its range passed through).
pub(super) fn copy_all(_c: &OpCall, k: &Kernel) -> KResult {
    for i in 0..k.n_outputs().min(k.n_inputs()) {
        with_dtype!(k.in_dtype(i), T, k.output::<T>(i).copy_from_slice(k.input::<T>(i)));
    }
    Ok(())
}

/// `quantized_embedding`: rows of the int8 weight at the indices (clipped to the table, as
/// `Embedding`), the weight's range passed through.
pub(super) fn embedding(_c: &OpCall, k: &Kernel) -> KResult {
    let rows = k.in_shape(1).dims().first().copied().unwrap_or(0);
    let width = k.in_shape(1).dims().get(1).copied().unwrap_or(0);
    let idx = values(k, 0);
    with_dtype!(k.in_dtype(1), T, {
        let (w, o) = (k.input::<T>(1), k.output::<T>(0));
        for (j, &v) in idx.iter().enumerate() {
            let r = (v.max(0.0) as usize).min(rows.saturating_sub(1));
            o[j * width..(j + 1) * width].copy_from_slice(&w[r * width..(r + 1) * width]);
        }
    });
    set_range(k, scalar(k, 2), scalar(k, 3));
    Ok(())
}

/// `quantized_concat`: `ints` `[n, outer, out axis length]`; the inputs are the `n` data
/// arrays, then each one's minimum and maximum in turn. The output range spans zero and
/// every input's range; each input whose scale differs from the output's is requantized
/// into it (`x · so / si`, a scale being `span / |range|` with spans 127.5 and 255.5),
/// the others copied, and each is placed along the axis.
pub(super) fn concat(c: &OpCall, k: &Kernel) -> KResult {
    let (n, outer) = (c.us(0), c.us(1).max(1));
    let ranges: Vec<(f32, f32)> = (0..n).map(|i| (scalar(k, n + 2 * i), scalar(k, n + 2 * i + 1))).collect();
    let lo = ranges.iter().fold(0f32, |m, r| m.min(r.0));
    let hi = ranges.iter().fold(0f32, |m, r| m.max(r.1));
    let span = |d: DType| if d == DType::U8 { UINT8_SPAN } else { INT8_SPAN };
    let so = span(k.out_dtype(0)) / max_abs(lo, hi);
    let total = k.out_shape(0).size() / outer;
    let mut vals = vec![0f32; k.out_shape(0).size()];
    let mut off = 0;
    for (i, &(a, b)) in ranges.iter().enumerate() {
        let x = values(k, i);
        let si = span(k.in_dtype(i)) / max_abs(a, b);
        let w = x.len() / outer;
        for r in 0..outer {
            for j in 0..w {
                let v = x[r * w + j];
                vals[r * total + off + j] = if si == so { v } else { v * so / si };
            }
        }
        off += w;
    }
    store(k, vals.len(), |i| vals[i]);
    set_range(k, lo, hi);
    Ok(())
}
