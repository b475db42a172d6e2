//! Calibration: `calibrate_entropy` (the KL-divergence threshold search MXNet's
//! quantization tool runs on a histogram of a layer's outputs) and `quantize_asym` (uint8
//! with a scale and a shift, for data that is not centred on zero).

use super::cpu::{values, KResult};
use super::{need, NO_GRAD};
use crate::dtype::DType;
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::opdef::{param, Attrs, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind as K};
use crate::shape::Shape;
use crate::storage::Kernel;

/// `calibrate_entropy`.
pub(super) const CALIBRATE_ENTROPY: OpDef = OpDef {
    name: "_contrib_calibrate_entropy",
    inputs: &["hist", "hist_edges"],
    outputs: &["threshold", "divergence"],
    params: &[param("num_quantized_bins", K::Int, Some("255"), "Number of quantized bins (odd).")],
    doc: "The clipping threshold whose quantized histogram (`num_quantized_bins` bins) is \
          closest in KL divergence to the float32 histogram `hist` (edges `hist_edges`, \
          symmetric around zero), and that divergence.",
    infer: Some(infer_calibrate),
    forward: |i| super::run(i, &[0, 1], &[i.i64("num_quantized_bins")? as f64]),
    grad: NO_GRAD,
    cpu: KernelSlot::Call(calibrate_entropy),
    graph: GraphForm { out_dtypes: Some(|_, _| Ok(vec![DType::F32, DType::F32])), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `quantize_asym`.
pub(super) const QUANTIZE_ASYM: OpDef = OpDef {
    name: "_contrib_quantize_asym",
    inputs: &["data"],
    outputs: &["output", "scale", "shift"],
    params: &[super::CALIB[0], super::CALIB[1]],
    doc: "float32 `data` to uint8 as `data · scale + shift` (rounded half to even, saturated), \
          `scale = 255 / (max - min)` and `shift = 255 - max · scale` over the calibrated range \
          or the data's own.",
    infer: Some(infer_asym),
    forward: |i| {
        let (lo, hi) = super::calib(i)?;
        let c = matches!((lo, hi), (Some(_), Some(_)));
        super::run(i, &[0], &[f64::from(u8::from(c)), lo.unwrap_or(0.0), hi.unwrap_or(0.0)])
    },
    grad: NO_GRAD,
    cpu: KernelSlot::Call(quantize_asym),
    graph: GraphForm { out_dtypes: Some(|_, _| Ok(vec![DType::U8, DType::F32, DType::F32])), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

fn infer_calibrate(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 2)?;
    let (h, e) = (&ins[0], &ins[1]);
    if h.dtype != DType::F32 || e.dtype != DType::F32 {
        return Err(Error::dtype(
            def.name,
            format!("hist and hist_edges must be float32, got {} and {}", h.dtype, e.dtype),
        ));
    }
    let nq = Invocation::params(def, a).i64("num_quantized_bins")?;
    if h.shape.ndim() != 1 || e.shape.size() != h.shape.size() + 1 || nq < 1 || nq as usize > h.shape.size() {
        return Err(Error::shape(
            def.name,
            &[&h.shape, &e.shape],
            format!("hist must be 1-d with num_quantized_bins={nq} or more bins and hist_edges one more"),
        ));
    }
    let one = Meta { shape: Shape::new(&[1]), dtype: DType::F32, ctx: h.ctx };
    Ok(vec![one.clone(), one])
}

fn infer_asym(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    need(def, ins, 1)?;
    let x = &ins[0];
    if x.dtype != DType::F32 {
        return Err(Error::dtype(def.name, format!("data must be float32, got {}", x.dtype)));
    }
    let one = Meta { shape: Shape::new(&[1]), dtype: DType::F32, ctx: x.ctx };
    Ok(vec![Meta { dtype: DType::U8, ..x.clone() }, one.clone(), one])
}

/// `nums` `[calibrated?, min, max]`.
fn quantize_asym(c: &OpCall, k: &Kernel) -> KResult {
    let x = values(k, 0);
    let (lo, hi) = if c.nums.first().copied().unwrap_or(0.0) != 0.0 {
        (c.nums[1] as f32, c.nums[2] as f32)
    } else {
        x.iter().fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)))
    };
    let scale = 255.0 / (hi - lo);
    let shift = 255.0 - hi * scale;
    let o = k.output::<u8>(0);
    for (o, &v) in o.iter_mut().zip(&x) {
        *o = (v * scale + shift).round_ties_even() as u8;
    }
    k.output::<f32>(1)[0] = scale;
    k.output::<f32>(2)[0] = shift;
    Ok(())
}

/// MXNet's smoothing: zero entries become `eps`, the others lose their share of it
/// (`None`: all zero, or the share is not below one).
fn smooth(p: &[f32]) -> Option<Vec<f32>> {
    const EPS: f32 = 1e-4;
    let zeros = p.iter().filter(|&&v| v == 0.0).count();
    let nonzeros = p.len() - zeros;
    if nonzeros == 0 {
        return None;
    }
    let eps1 = EPS * zeros as f32 / nonzeros as f32;
    if eps1 >= 1.0 {
        return None;
    }
    Some(p.iter().map(|&v| if v == 0.0 { v + EPS } else { v - eps1 }).collect())
}

/// KL(p || q) of the normalised distributions, in float32 (`None`: an entry not positive).
fn entropy(mut p: Vec<f32>, mut q: Vec<f32>) -> Option<f32> {
    let (ps, qs) = (p.iter().sum::<f32>(), q.iter().sum::<f32>());
    p.iter_mut().for_each(|v| *v /= ps);
    q.iter_mut().for_each(|v| *v /= qs);
    let mut kl = 0f32;
    for (&a, &b) in p.iter().zip(&q) {
        if a <= 0.0 || b <= 0.0 || a.is_nan() || b.is_nan() {
            return None;
        }
        kl += a * (a / b).ln();
    }
    Some(kl)
}

/// The divergence of clipping `hist` at `2i + 1` bins around the centre `z`.
fn divergence_at(hist: &[f32], z: usize, i: usize, nq: usize) -> std::result::Result<f32, String> {
    let (start, stop) = (z - i, z + i + 1);
    let len = stop - start;
    let mut p = vec![0f32; len];
    let mut sliced = vec![0u64; len];
    for (j, &h) in hist.iter().enumerate() {
        if j <= start {
            p[0] += h;
        } else if j >= stop {
            p[len - 1] += h;
        } else {
            sliced[j - start] = h as u64;
            p[j - start] = h;
        }
    }
    let merged = len / nq;
    // MXNet sums the integer counts in an int and stores them as floats
    let sum = |a: usize, b: usize| sliced[a..b].iter().fold(0i32, |s, &v| s.wrapping_add(v as i32)) as f32;
    let mut bins: Vec<f32> = (0..nq).map(|j| sum(j * merged, (j + 1) * merged)).collect();
    bins[nq - 1] += sum(nq * merged, len);
    let mut q = vec![0f32; len];
    for (j, &b) in bins.iter().enumerate() {
        let (a, e) = (j * merged, if j == nq - 1 { len } else { (j + 1) * merged });
        let norm = sliced[a..e].iter().filter(|&&v| v != 0).count() as i32;
        if norm != 0 {
            for k in a..e {
                if p[k] != 0.0 {
                    q[k] = b / norm as f32;
                }
            }
        }
    }
    let p = smooth(&p).ok_or("the histogram is all zero")?;
    match smooth(&q) {
        None => Ok(f32::INFINITY),
        Some(q) => entropy(p, q).ok_or_else(|| "a smoothed distribution has an entry that is not positive".into()),
    }
}

/// `nums` `[num_quantized_bins]`: every threshold from `num_quantized_bins / 2` bins on
/// each side of the centre to the whole histogram; the first with the least divergence.
fn calibrate_entropy(c: &OpCall, k: &Kernel) -> KResult {
    let hist = k.input::<f32>(0);
    let edges = values(k, 1);
    let nq = (c.nums.first().copied().unwrap_or(255.0) as usize).clamp(1, hist.len().max(1));
    let z = hist.len() / 2;
    let mut best = (f32::MAX, nq / 2);
    for i in nq / 2..=z {
        let d = divergence_at(hist, z, i, nq)
            .map_err(|m| OpFailure::new(ErrorKind::Value, format!("{}: {m}", c.def.name)))?;
        if d < best.0 {
            best = (d, i);
        }
    }
    k.output::<f32>(0)[0] = edges[z + best.1 + 1];
    k.output::<f32>(1)[0] = best.0;
    Ok(())
}
