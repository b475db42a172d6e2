//! `contrib.box_iou` (pairwise intersection over union) and `contrib.bipartite_matching`
//! (greedy one-to-one matching on a score matrix), GluonCV's box helpers.

use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{param, push_call, Attrs, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamKind as K};
use crate::shape::Shape;
use crate::storage::Kernel;
use crate::DType;
use num_traits::Float;

/// `_contrib_box_iou`.
pub(super) const BOX_IOU: OpDef = OpDef {
    name: "_contrib_box_iou",
    inputs: &["lhs", "rhs"],
    params: &[param(
        "format",
        K::Str,
        Some("'corner'"),
        "'corner': [xmin, ymin, xmax, ymax]; 'center': [x, y, width, height].",
    )],
    doc: "Intersection over union of every box of `lhs` (..., 4) with every box of `rhs` (..., 4): \
          shape lhs.shape[:-1] + rhs.shape[:-1]. Not differentiable (zero gradients, as MXNet).",
    infer: Some(infer_iou),
    forward: |i| {
        let (l, r) = (i.x(0)?, i.x(1)?);
        let m = infer_iou(i.def, i.attrs, &[Meta::of(l), Meta::of(r)])?.remove(0);
        crate::ops::check_ctx(i.name(), l, r)?;
        let out = NDArray::empty(m.shape, m.dtype, m.ctx)?;
        if out.size() > 0 {
            push_call(OpCall::new(i.def, &[l, r], &[&out]).with_ints(&[i64::from(center(i)?)]))?;
        }
        super::recorded(i, &[l, r], vec![out])
    },
    cpu: KernelSlot::Call(iou_kernel),
    ..OpDef::BASE
};

/// `_contrib_bipartite_matching`.
pub(super) const BIPARTITE: OpDef = OpDef {
    name: "_contrib_bipartite_matching",
    inputs: &["data"],
    outputs: &["row_marker", "col_marker"],
    params: &[
        param("is_ascend", K::Bool, Some("False"), "Match the lowest scores first."),
        param("threshold", K::Float, None, "Stop at a score not above (not below, ascending) this."),
        param("topk", K::Int, Some("-1"), "Match at most this many pairs (-1: no limit)."),
    ],
    doc: "Greedy bipartite matching of a score matrix `data` (..., rows, cols), best score first: \
          each row's matched column and each column's matched row, -1 where unmatched.",
    infer: Some(infer_matching),
    forward: |i| {
        let x = i.x(0)?;
        let ms = infer_matching(i.def, i.attrs, &[Meta::of(x)])?;
        let outs: Vec<NDArray> =
            ms.into_iter().map(|m| NDArray::empty(m.shape, m.dtype, m.ctx)).collect::<Result<_>>()?;
        let d = x.dims();
        let (rows, cols) = (d[d.len() - 2], d[d.len() - 1]);
        let ints = [i64::from(i.bool("is_ascend")?), i.i64("topk")?, rows as i64, cols as i64];
        if x.size() > 0 {
            push_call(
                OpCall::new(i.def, &[x], &[&outs[0], &outs[1]]).with_ints(&ints).with_nums(&[i.f64("threshold")?]),
            )?;
        }
        super::recorded(i, &[x], outs)
    },
    cpu: KernelSlot::Call(matching_kernel),
    ..OpDef::BASE
};

/// MXNet's real types (these kernels only compare and divide, so float16 is exact enough).
pub(super) fn check_float(name: &str, dt: DType) -> Result<()> {
    if matches!(dt, DType::F16 | DType::F32 | DType::F64) {
        Ok(())
    } else {
        Err(Error::dtype(name, format!("takes float16, float32 or float64, got {dt}")))
    }
}

fn center(i: &Invocation<'_>) -> Result<bool> {
    match i.str("format")?.trim_matches('\'') {
        "corner" => Ok(false),
        "center" => Ok(true),
        f => Err(Error::value(i.name(), format!("format must be 'corner' or 'center', got '{f}'"))),
    }
}

fn infer_iou(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [l, r] = ins else { return Err(Error::value(def.name, "needs lhs and rhs")) };
    center(&Invocation::params(def, a))?;
    let (ld, rd) = (l.shape.dims(), r.shape.dims());
    if ld.len() < 2 || rd.len() < 2 || ld[ld.len() - 1] != 4 || rd[rd.len() - 1] != 4 {
        return Err(Error::shape(def.name, &[&l.shape, &r.shape], "lhs and rhs must be (..., 4) with at least 2 axes"));
    }
    check_float(def.name, l.dtype)?;
    if r.dtype != l.dtype {
        return Err(Error::dtype(def.name, format!("lhs and rhs differ in dtype: {} and {}", l.dtype, r.dtype)));
    }
    let mut d = ld[..ld.len() - 1].to_vec();
    d.extend(&rd[..rd.len() - 1]);
    Ok(vec![Meta { shape: Shape::new(&d), ..l.clone() }])
}

fn infer_matching(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    Invocation::params(def, a).f64("threshold")?;
    let d = x.shape.dims();
    if d.len() < 2 {
        return Err(Error::shape(def.name, &[&x.shape], "the score matrix must have at least 2 axes (rows, cols)"));
    }
    check_float(def.name, x.dtype)?;
    let rows = Shape::new(&d[..d.len() - 1]);
    let mut c = d[..d.len() - 1].to_vec();
    *c.last_mut().unwrap_or(&mut 0) = d[d.len() - 1];
    Ok(vec![Meta { shape: rows, ..x.clone() }, Meta { shape: Shape::new(&c), ..x.clone() }])
}

/// One side's extent on an axis: (low, high) of coordinates `a` (x or y) and `b`
/// (the far corner, or the size for 'center').
fn span<T: Float>(a: T, b: T, center: bool) -> (T, T) {
    if center {
        let h = b / (T::one() + T::one());
        (a - h, a + h)
    } else {
        (a, b)
    }
}

fn overlap<T: Float>(p: &[T], q: &[T], center: bool) -> T {
    let axis = |k: usize| {
        let ((pl, ph), (ql, qh)) = (span(p[k], p[k + 2], center), span(q[k], q[k + 2], center));
        let w = if ph < qh { ph } else { qh } - if pl > ql { pl } else { ql };
        if w > T::zero() {
            w
        } else {
            T::zero()
        }
    };
    let inter = axis(0) * axis(1);
    if inter <= T::zero() {
        return T::zero();
    }
    let area = |b: &[T]| {
        let (w, h) = if center { (b[2], b[3]) } else { (b[2] - b[0], b[3] - b[1]) };
        if w < T::zero() || h < T::zero() {
            T::zero()
        } else {
            w * h
        }
    };
    inter / (area(p) + area(q) - inter)
}

/// ints: 1 for 'center'.
fn iou_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let c = call.ints[0] != 0;
    match k.in_dtype(0) {
        DType::F32 => iou_typed::<f32>(k, c),
        DType::F64 => iou_typed::<f64>(k, c),
        DType::F16 => iou_typed::<half::f16>(k, c),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("box_iou takes float16/32/64, got {d}"))),
    }
}

fn iou_typed<T: Float + crate::dtype::Elem>(k: &Kernel, center: bool) -> std::result::Result<(), OpFailure> {
    let (l, r, out) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
    let nr = r.len() / 4;
    crate::ops::par::chunked(out, 1 << 14, |start, o| {
        for (j, v) in o.iter_mut().enumerate() {
            let (a, b) = ((start + j) / nr, (start + j) % nr);
            *v = overlap(&l[a * 4..a * 4 + 4], &r[b * 4..b * 4 + 4], center);
        }
    });
    Ok(())
}

/// ints: is_ascend, topk, rows, cols; nums: threshold.
fn matching_kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    match k.in_dtype(0) {
        DType::F32 => matching_typed::<f32>(call, k),
        DType::F64 => matching_typed::<f64>(call, k),
        DType::F16 => matching_typed::<half::f16>(call, k),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("bipartite_matching takes float16/32/64, got {d}"))),
    }
}

fn matching_typed<T: Float + crate::dtype::Elem>(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (asc, topk, rows, cols) = (call.ints[0] != 0, call.ints[1], call.us(2), call.us(3));
    let thresh = T::from(call.nums[0]).unwrap_or_else(T::nan);
    let (x, rm, cm) = (k.input::<T>(0), k.output::<T>(0), k.output::<T>(1));
    rm.fill(-T::one());
    cm.fill(-T::one());
    let stride = rows * cols;
    for b in 0..x.len() / stride.max(1) {
        let s = &x[b * stride..(b + 1) * stride];
        let mut order: Vec<usize> = (0..stride).collect();
        // stable: equal scores keep their row-major order, as MXNet's stable key sort
        order.sort_by(|&p, &q| {
            let o = s[p].partial_cmp(&s[q]).unwrap_or(std::cmp::Ordering::Equal);
            if asc {
                o
            } else {
                o.reverse()
            }
        });
        let (rmk, cmk) = (&mut rm[b * rows..(b + 1) * rows], &mut cm[b * cols..(b + 1) * cols]);
        let mut count = 0i64;
        for idx in order {
            let (r, c) = (idx / cols, idx % cols);
            if rmk[r] != -T::one() || cmk[c] != -T::one() {
                continue;
            }
            let good = if asc { s[idx] < thresh } else { s[idx] > thresh };
            if !good || (topk > 0 && count >= topk) {
                break;
            }
            rmk[r] = T::from(c).unwrap_or_else(T::nan);
            cmk[c] = T::from(r).unwrap_or_else(T::nan);
            count += 1;
        }
    }
    Ok(())
}
