//! `contrib.box_nms` (also `box_non_maximum_suppression`): greedy non-maximum
//! suppression of scored boxes, with MXNet's backward that carries each kept box's
//! gradient back to where the box came from.
//!
//! The kernel follows MXNet 1.9.1's CPU operator step for step, so results agree:
//! candidates are the boxes scoring above `valid_thresh` (and not of `background_id`),
//! stably sorted by score, best first; only the first `topk` take part; a box is
//! suppressed by a kept better one of the same class (any class under
//! `force_suppress`) whose IoU with it is above `overlap_thresh`. Kept boxes fill the
//! output in order, the rest of it is -1. A hidden second output records, per output
//! row, the input row it came from (-1 for none): the backward reads it. Two MXNet
//! quirks are kept: with `topk = 0` the input is passed through unchanged (no
//! filtering, no format change), and the format conversion skips a row whose first
//! coordinate is negative (MXNet's marker of an empty row).

use super::boxes::check_float;
use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Attrs, Grad, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, OutputCount, ParamKind as K,
};
use crate::shape::Shape;
use crate::storage::Kernel;
use num_traits::Float;

type KResult = std::result::Result<(), OpFailure>;

/// `_contrib_box_nms`.
pub(super) const BOX_NMS: OpDef = OpDef {
    name: "_contrib_box_nms",
    aliases: crate::opdef::Aliases { nd: &["_contrib_box_non_maximum_suppression"], np: &[], npx: &[], fluent: false },
    inputs: &["data"],
    params: &[
        param("overlap_thresh", K::Float, Some("0.5"), "IoU above which the lower-scored box is suppressed."),
        param("valid_thresh", K::Float, Some("0.0"), "Only boxes scoring above this are candidates."),
        param("topk", K::Int, Some("-1"), "Only the best k candidates take part (-1: all)."),
        param("coord_start", K::Int, Some("2"), "Index of the first of the 4 coordinates in a row."),
        param("score_index", K::Int, Some("1"), "Index of the score in a row."),
        param("id_index", K::Int, Some("-1"), "Index of the class id in a row (-1: no class)."),
        param("background_id", K::Int, Some("-1"), "Class id of background boxes, left out (with id_index)."),
        param("force_suppress", K::Bool, Some("False"), "Suppress across classes too."),
        param("in_format", K::Str, Some("'corner'"), "'corner' [xmin, ymin, xmax, ymax] or 'center' [x, y, w, h]."),
        param("out_format", K::Str, Some("'corner'"), "The output's box format."),
    ],
    doc: "Non-maximum suppression of boxes `data` (..., n, width), rows like [id, score, xmin, ymin, xmax, \
          ymax, ...]: the kept boxes best first, then rows of -1. The gradient goes back to each kept \
          box's input row.",
    infer: Some(infer_nms),
    forward: |i| {
        let x = i.x(0)?;
        let m = infer_nms(i.def, i.attrs, &[Meta::of(x)])?.remove(0);
        let d = x.dims();
        let mut rd = d.to_vec();
        *rd.last_mut().unwrap_or(&mut 0) = 1;
        let out = NDArray::empty(m.shape, m.dtype, m.ctx)?;
        let rec = NDArray::empty(Shape::new(&rd), m.dtype, m.ctx)?;
        if x.size() > 0 {
            let (ints, nums) = nms_args(i, d)?;
            push_call(OpCall::new(i.def, &[x], &[&out, &rec]).with_ints(&ints).with_nums(&nums))?;
        }
        if needs_record(&[x]) {
            let rec = rec.clone();
            record(i.name(), &[x], &[&out], Box::new(move |g| Ok(vec![Some(backward_nms(&g[0], &rec)?)])));
        }
        Ok(vec![out])
    },
    grad: Grad::Recorded,
    cpu: KernelSlot::Call(nms_kernel),
    // MXNet's node has the record of kept rows as a hidden output
    graph: GraphForm { total: OutputCount::Fixed(2), ..GraphForm::PLAIN },
    ..OpDef::BASE
};

/// `_backward_contrib_box_nms`.
pub(super) const BOX_NMS_BACKWARD: OpDef = OpDef {
    name: "_backward_contrib_box_nms",
    inputs: &["out_grad", "record"],
    doc: "Gradient of `box_nms` (internal): each output row's gradient at the input row it came \
          from, zeros for suppressed rows.",
    infer: Some(infer_nms_backward),
    forward: |i| Ok(vec![backward_nms(i.x(0)?, i.x(1)?)?]),
    grad: Grad::None("a gradient operator"),
    cpu: KernelSlot::Call(nms_backward_kernel),
    ..OpDef::BASE
};

fn backward_nms(g: &NDArray, rec: &NDArray) -> Result<NDArray> {
    let m = infer_nms_backward(&BOX_NMS_BACKWARD, &Attrs::default(), &[Meta::of(g), Meta::of(rec)])?.remove(0);
    let out = NDArray::empty(m.shape, m.dtype, m.ctx)?;
    if out.size() > 0 {
        let def = crate::opdef::find(BOX_NMS_BACKWARD.name).unwrap_or(&BOX_NMS_BACKWARD);
        push_call(OpCall::new(def, &[g, rec], &[&out]))?;
    }
    Ok(out)
}

fn format_code(i: &Invocation<'_>, key: &str) -> Result<i64> {
    match i.str(key)?.trim_matches('\'') {
        "corner" => Ok(0),
        "center" => Ok(1),
        f => Err(Error::value(i.name(), format!("{key} must be 'corner' or 'center', got '{f}'"))),
    }
}

/// Checks the row layout against the width, as MXNet's shape function does.
fn check_layout(i: &Invocation<'_>, width: usize) -> Result<()> {
    let (cs, si, id) = (i.i64("coord_start")?, i.i64("score_index")?, i.i64("id_index")?);
    let w = width as i64;
    let need = if id >= 0 { 6 } else { 5 };
    let bad = |m: String| Err(Error::value(i.name(), m));
    if w < need {
        return bad(format!(
            "the last axis must have at least {need} elements (score, 4 coordinates{}), got {w}",
            if id >= 0 { ", id" } else { "" }
        ));
    }
    if !(0..w).contains(&si) || (cs..=cs + 3).contains(&si) {
        return bad(format!(
            "score_index {si} is out of range (0, {w}) or overlaps the coordinates ({cs}, {})",
            cs + 3
        ));
    }
    if cs < 0 || cs + 3 >= w {
        return bad(format!("coordinates ({cs}, {}) are out of range (0, {w})", cs + 3));
    }
    if id >= 0 && (id >= w || (cs..=cs + 3).contains(&id) || id == si) {
        return bad(format!("id_index {id} is out of range (0, {w}) or overlaps the score or the coordinates"));
    }
    format_code(i, "in_format")?;
    format_code(i, "out_format")?;
    Ok(())
}

fn infer_nms(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    let d = x.shape.dims();
    if d.len() < 2 {
        return Err(Error::shape(def.name, &[&x.shape], "data must have at least 2 axes (..., boxes, width)"));
    }
    check_float(def.name, x.dtype)?;
    check_layout(&Invocation::params(def, a), d[d.len() - 1])?;
    Ok(vec![x.clone()])
}

fn infer_nms_backward(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [g, r] = ins else { return Err(Error::value(def.name, "needs out_grad and record")) };
    let (gd, rd) = (g.shape.dims(), r.shape.dims());
    if gd.len() < 2 || rd.len() != gd.len() || rd[..gd.len() - 1] != gd[..gd.len() - 1] {
        return Err(Error::shape(
            def.name,
            &[&g.shape, &r.shape],
            "record must be out_grad's shape with a last axis of 1",
        ));
    }
    Ok(vec![g.clone()])
}

/// ints: batches, boxes, width, topk, coord_start, score_index, id_index, background_id,
/// force_suppress, in_format, out_format; nums: overlap_thresh, valid_thresh.
fn nms_args(i: &Invocation<'_>, d: &[usize]) -> Result<(Vec<i64>, Vec<f64>)> {
    let (n, w) = (d[d.len() - 2], d[d.len() - 1]);
    let batches: usize = d[..d.len() - 2].iter().product();
    let ints = vec![
        batches as i64,
        n as i64,
        w as i64,
        i.i64("topk")?,
        i.i64("coord_start")?,
        i.i64("score_index")?,
        i.i64("id_index")?,
        i.i64("background_id")?,
        i64::from(i.bool("force_suppress")?),
        format_code(i, "in_format")?,
        format_code(i, "out_format")?,
    ];
    Ok((ints, vec![i.f64("overlap_thresh")?, i.f64("valid_thresh")?]))
}

fn nms_kernel(call: &OpCall, k: &Kernel) -> KResult {
    match k.in_dtype(0) {
        DType::F32 => nms_typed::<f32>(call, k),
        DType::F64 => nms_typed::<f64>(call, k),
        DType::F16 => nms_typed::<half::f16>(call, k),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("box_nms takes float16/32/64, got {d}"))),
    }
}

/// One axis's overlap of two boxes (MXNet's `Intersect`), in the data's type.
fn intersect<T: Float>(a: &[T], b: &[T], center: bool) -> T {
    let (l, r) = if center {
        let two = T::one() + T::one();
        let (aw, bw) = (a[2] / two, b[2] / two);
        let (al, ar, bl, br) = (a[0] - aw, a[0] + aw, b[0] - bw, b[0] + bw);
        (if bl > al { bl } else { al }, if br < ar { br } else { ar })
    } else {
        (if a[0] > b[0] { a[0] } else { b[0] }, if a[2] < b[2] { a[2] } else { b[2] })
    };
    let w = r - l;
    if w > T::zero() {
        w
    } else {
        T::zero()
    }
}

fn area<T: Float>(b: &[T], center: bool) -> T {
    let (w, h) = if center { (b[2], b[3]) } else { (b[2] - b[0], b[3] - b[1]) };
    if w < T::zero() || h < T::zero() {
        T::zero()
    } else {
        w * h
    }
}

/// The settings a kernel call carries.
struct Nms {
    n: usize,
    w: usize,
    topk: usize,
    cs: usize,
    si: usize,
    id: Option<usize>,
    bg: i64,
    force: bool,
    center_in: bool,
    center_out: bool,
    thresh: f64,
    valid: f64,
}

impl Nms {
    fn read(c: &OpCall) -> Nms {
        let n = c.us(1);
        Nms {
            n,
            w: c.us(2),
            topk: if c.ints[3] < 0 { n } else { (c.ints[3] as usize).min(n) },
            cs: c.us(4),
            si: c.us(5),
            id: (c.ints[6] >= 0).then(|| c.us(6)),
            bg: c.ints[7],
            force: c.ints[8] != 0,
            center_in: c.ints[9] != 0,
            center_out: c.ints[10] != 0,
            thresh: c.nums[0],
            valid: c.nums[1],
        }
    }

    /// The kept rows of one batch `x` (n × w), best first (indices into the batch).
    fn keep<T: Float + Elem>(&self, x: &[T]) -> Vec<usize> {
        let row = |i: usize| &x[i * self.w..(i + 1) * self.w];
        let (valid, bg) = (T::from(self.valid).unwrap_or_else(T::zero), T::from(self.bg).unwrap_or_else(T::zero));
        let mut cand: Vec<usize> =
            (0..self.n).filter(|&i| row(i)[self.si] > valid && self.id.is_none_or(|id| row(i)[id] != bg)).collect();
        // stable: equal scores keep their input order, as MXNet's stable key sort
        cand.sort_by(|&p, &q| row(q)[self.si].partial_cmp(&row(p)[self.si]).unwrap_or(std::cmp::Ordering::Equal));
        cand.truncate(self.topk);
        let areas: Vec<T> = cand.iter().map(|&i| area(&row(i)[self.cs..self.cs + 4], self.center_in)).collect();
        let thresh = T::from(self.thresh).unwrap_or_else(T::zero);
        let mut alive = vec![true; cand.len()];
        for r in 0..cand.len() {
            if !alive[r] {
                continue;
            }
            let rb = &row(cand[r])[self.cs..self.cs + 4];
            for p in r + 1..cand.len() {
                if !alive[p] {
                    continue;
                }
                if let (false, Some(id)) = (self.force, self.id) {
                    if Elem::to_f64(row(cand[r])[id]) as i64 != Elem::to_f64(row(cand[p])[id]) as i64 {
                        continue;
                    }
                }
                let pb = &row(cand[p])[self.cs..self.cs + 4];
                let inter = intersect(rb, pb, self.center_in) * intersect(&rb[1..], &pb[1..], self.center_in);
                if inter / (areas[r] + areas[p] - inter) > thresh {
                    alive[p] = false;
                }
            }
        }
        cand.into_iter().zip(alive).filter_map(|(c, a)| a.then_some(c)).collect()
    }
}

fn nms_typed<T: Float + Elem>(call: &OpCall, k: &Kernel) -> KResult {
    let s = Nms::read(call);
    let (x, out, rec) = (k.input::<T>(0), k.output::<T>(0), k.output::<T>(1));
    let neg = -T::one();
    if s.topk == 0 {
        out.copy_from_slice(x);
        for (j, r) in rec.iter_mut().enumerate() {
            *r = T::from(j).unwrap_or_else(T::nan);
        }
        return Ok(());
    }
    out.fill(neg);
    rec.fill(neg);
    let per = s.n * s.w;
    for b in 0..call.us(0) {
        let kept = s.keep(&x[b * per..(b + 1) * per]);
        for (slot, &i) in kept.iter().enumerate() {
            let (o, src) = ((b * s.n + slot) * s.w, (b * s.n + i) * s.w);
            out[o..o + s.w].copy_from_slice(&x[src..src + s.w]);
            rec[b * s.n + slot] = T::from(b * s.n + i).unwrap_or_else(T::nan);
        }
    }
    if s.center_in != s.center_out {
        for r in out.chunks_mut(s.w) {
            convert(&mut r[s.cs..s.cs + 4], s.center_out);
        }
    }
    Ok(())
}

/// Corner ⇄ center in place; a row whose first value is negative is left as is (MXNet).
fn convert<T: Float>(b: &mut [T], to_center: bool) {
    if b[0] < T::zero() {
        return;
    }
    let two = T::one() + T::one();
    let (p, q, r, s) = (b[0], b[1], b[2], b[3]);
    if to_center {
        b.copy_from_slice(&[(p + r) / two, (q + s) / two, r - p, s - q]);
    } else {
        let (hw, hh) = (r / two, s / two);
        b.copy_from_slice(&[p - hw, q - hh, p + hw, q + hh]);
    }
}

fn nms_backward_kernel(_call: &OpCall, k: &Kernel) -> KResult {
    let width = k.in_shape(0).dims().last().copied().unwrap_or(1).max(1);
    crate::with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (g, rec, o) = (k.input::<T>(0), k.input::<T>(1), k.output::<T>(0));
            o.fill(<T as Elem>::from_f64(0.0));
            let total = o.len() / width;
            for (i, r) in rec.iter().enumerate() {
                let idx = Elem::to_f64(*r);
                if idx < 0.0 {
                    continue;
                }
                let idx = idx as usize;
                if idx >= total {
                    return Err(OpFailure::new(
                        ErrorKind::Index,
                        format!("box_nms backward: record {idx} out of range"),
                    ));
                }
                o[idx * width..(idx + 1) * width].copy_from_slice(&g[i * width..(i + 1) * width]);
            }
        },
        return Err(OpFailure::new(ErrorKind::Runtime, "box_nms backward takes float16/32/64"))
    );
    Ok(())
}
