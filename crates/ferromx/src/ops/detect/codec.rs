//! `contrib.box_encode` and `contrib.box_decode`: GluonCV's box regression coding
//! (centre offsets over the anchor size and log size ratios, normalised by means and
//! standard deviations), in MXNet's order of operations.

use super::boxes::check_float;
use super::recorded;
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{param, push_call, Attrs, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind as K};
use crate::storage::Kernel;
use crate::DType;
use num_traits::Float;

/// `_contrib_box_encode`.
pub(super) const BOX_ENCODE: OpDef = OpDef {
    name: "_contrib_box_encode",
    inputs: &["samples", "matches", "anchors", "refs", "means", "stds"],
    outputs: &["targets", "masks"],
    doc: "Regression targets of matched boxes: `samples` (B, N) (positive where > 0.5), `matches` \
          (B, N) indices into `refs` (B, M, 4), `anchors` (B, N, 4) corners, `means` and `stds` (4,). \
          Returns targets and masks (B, N, 4); zero where not positive.",
    infer: Some(infer_encode),
    forward: |i| {
        let ins: Vec<&NDArray> = (0..6).map(|k| i.x(k)).collect::<Result<_>>()?;
        let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
        let ms = infer_encode(i.def, i.attrs, &metas)?;
        let outs: Vec<NDArray> =
            ms.into_iter().map(|m| NDArray::empty(m.shape, m.dtype, m.ctx)).collect::<Result<_>>()?;
        if outs[0].size() > 0 {
            push_call(OpCall::new(i.def, &ins, &[&outs[0], &outs[1]]))?;
        }
        recorded(i, &ins, outs)
    },
    cpu: KernelSlot::Call(encode_kernel),
    ..OpDef::BASE
};

/// `_contrib_box_decode`.
pub(super) const BOX_DECODE: OpDef = OpDef {
    name: "_contrib_box_decode",
    inputs: &["data", "anchors"],
    params: &[
        param("std0", K::Float, Some("1.0"), "Scale of the first encoded value."),
        param("std1", K::Float, Some("1.0"), "Scale of the second encoded value."),
        param("std2", K::Float, Some("1.0"), "Scale of the third encoded value."),
        param("std3", K::Float, Some("1.0"), "Scale of the fourth encoded value."),
        param("clip", K::Float, Some("-1.0"), "Upper bound of the scaled log sizes when positive."),
        param("format", K::Str, Some("'center'"), "The anchors' encoding: 'corner' or 'center'."),
    ],
    doc: "Boxes (B, N, 4) as [xmin, ymin, xmax, ymax] decoded from regression outputs `data` (B, N, 4) \
          against `anchors` (1, N, 4).",
    infer: Some(infer_decode),
    forward: |i| {
        let (x, a) = (i.x(0)?, i.x(1)?);
        let m = infer_decode(i.def, i.attrs, &[Meta::of(x), Meta::of(a)])?.remove(0);
        let out = NDArray::empty(m.shape, m.dtype, m.ctx)?;
        let corner = match i.str("format")?.trim_matches('\'') {
            "corner" => 1.0,
            "center" => 0.0,
            f => return Err(Error::value(i.name(), format!("format must be 'corner' or 'center', got '{f}'"))),
        };
        let nums = [i.f64("std0")?, i.f64("std1")?, i.f64("std2")?, i.f64("std3")?, i.f64("clip")?, corner];
        if out.size() > 0 {
            push_call(OpCall::new(i.def, &[x, a], &[&out]).with_nums(&nums))?;
        }
        recorded(i, &[x, a], vec![out])
    },
    cpu: KernelSlot::Call(decode_kernel),
    ..OpDef::BASE
};

fn infer_encode(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [s, m, a, r, mean, std] = ins else {
        return Err(Error::value(def.name, "needs samples, matches, anchors, refs, means and stds"));
    };
    let (sd, ad, rd) = (s.shape.dims(), a.shape.dims(), r.shape.dims());
    let ok = matches!(ad, [b, n, 4] if sd == [*b, *n] && m.shape.dims() == sd)
        && matches!(rd, [rb, _, 4] if *rb == ad[0])
        && mean.shape.dims() == [4]
        && std.shape.dims() == [4];
    if !ok {
        return Err(Error::shape(
            def.name,
            &[&s.shape, &m.shape, &a.shape, &r.shape],
            "samples and matches must be (B, N), anchors (B, N, 4), refs (B, M, 4), means and stds (4,)",
        ));
    }
    check_float(def.name, a.dtype)?;
    if ins.iter().any(|x| x.dtype != a.dtype) {
        return Err(Error::dtype(def.name, "every input must have the anchors' dtype"));
    }
    Ok(vec![a.clone(), a.clone()])
}

fn infer_decode(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [x, an] = ins else { return Err(Error::value(def.name, "needs data and anchors")) };
    Invocation::params(def, a).str("format")?;
    let (xd, ad) = (x.shape.dims(), an.shape.dims());
    if !matches!(xd, [_, n, 4] if ad.len() == 3 && ad[1] == *n && ad[2] == 4) {
        return Err(Error::shape(def.name, &[&x.shape, &an.shape], "data must be (B, N, 4) and anchors (1, N, 4)"));
    }
    check_float(def.name, x.dtype)?;
    if an.dtype != x.dtype {
        return Err(Error::dtype(def.name, "data and anchors must share one dtype"));
    }
    Ok(vec![x.clone()])
}

fn encode_kernel(_: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    match k.in_dtype(2) {
        DType::F32 => encode::<f32>(k),
        DType::F64 => encode::<f64>(k),
        DType::F16 => encode::<half::f16>(k),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("box_encode takes float16/32/64, got {d}"))),
    }
}

fn encode<T: Float + crate::dtype::Elem>(k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (s, m, a, r) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2), k.input::<T>(3));
    let (mean, std) = (k.input::<T>(4), k.input::<T>(5));
    let (tg, mk) = (k.output::<T>(0), k.output::<T>(1));
    let n = k.in_shape(0).dims()[1];
    let nm = k.in_shape(3).dims()[1];
    let half = T::from(0.5).unwrap_or_else(T::nan);
    let centre = |b: &[T]| {
        let (w, h) = (b[2] - b[0], b[3] - b[1]);
        (b[0] + w * half, b[1] + h * half, w, h)
    };
    for i in 0..s.len() {
        let valid = s[i] > half;
        let v = if valid { T::one() } else { T::zero() };
        mk[i * 4..i * 4 + 4].fill(v);
        if !valid {
            tg[i * 4..i * 4 + 4].fill(T::zero());
            continue;
        }
        let mi = num_traits::ToPrimitive::to_i64(&m[i]).unwrap_or(-1);
        if mi < 0 || mi as usize >= nm {
            return Err(OpFailure::new(ErrorKind::Value, format!("matches[{i}] = {mi} is outside refs' {nm} boxes")));
        }
        let ri = ((i / n) * nm + mi as usize) * 4;
        let (rx, ry, rw, rh) = centre(&r[ri..ri + 4]);
        let (ax, ay, aw, ah) = centre(&a[i * 4..i * 4 + 4]);
        let vals = [(rx - ax) / aw, (ry - ay) / ah, (rw / aw).ln(), (rh / ah).ln()];
        for j in 0..4 {
            tg[i * 4 + j] = (vals[j] - mean[j]) / std[j];
        }
    }
    Ok(())
}

/// nums: std0..std3, clip, 1 for 'corner' anchors.
fn decode_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    match k.in_dtype(0) {
        DType::F32 => decode::<f32>(call, k),
        DType::F64 => decode::<f64>(call, k),
        DType::F16 => decode::<half::f16>(call, k),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("box_decode takes float16/32/64, got {d}"))),
    }
}

fn decode<T: Float + crate::dtype::Elem>(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let c = |v: f64| T::from(v).unwrap_or_else(T::nan);
    let nums = &call.nums;
    let std = [c(nums[0]), c(nums[1]), c(nums[2]), c(nums[3])];
    let (clip, has_clip, corner) = (c(nums[4]), nums[4] > 0.0, nums[5] != 0.0);
    let (x, a, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
    let n = a.len() / 4;
    let half = c(0.5);
    for i in 0..x.len() / 4 {
        let q = &a[(i % n) * 4..(i % n) * 4 + 4];
        let (mut ax, mut ay, mut aw, mut ah) = (q[0], q[1], q[2], q[3]);
        if corner {
            aw = aw - ax;
            ah = ah - ay;
            ax = ax + aw * half;
            ay = ay + ah * half;
        }
        let p = &x[i * 4..i * 4 + 4];
        let (ox, oy) = (p[0] * std[0] * aw + ax, p[1] * std[1] * ah + ay);
        let (mut dw, mut dh) = (p[2] * std[2], p[3] * std[3]);
        if has_clip {
            dw = if dw < clip { dw } else { clip };
            dh = if dh < clip { dh } else { clip };
        }
        let (ow, oh) = (dw.exp() * aw * half, dh.exp() * ah * half);
        out[i * 4..i * 4 + 4].copy_from_slice(&[ox - ow, oy - oh, ox + ow, oy + oh]);
    }
    Ok(())
}
