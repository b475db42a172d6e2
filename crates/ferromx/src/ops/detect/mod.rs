//! SSD's box operators (MXNet's `contrib.MultiBoxPrior`, `MultiBoxTarget`,
//! `MultiBoxDetection`, also `npx.multibox_*`): anchors for a feature map, training
//! targets that match anchors to ground-truth boxes, and decoded detections after
//! non-maximum suppression; and GluonCV's `contrib.box_iou` and `contrib.bipartite_matching`
//! (`boxes.rs`), `contrib.box_encode`/`box_decode` (`codec.rs`), `contrib.box_nms`
//! (`nms.rs`) and Faster R-CNN's `contrib.Proposal`/`MultiProposal` (`proposal.rs`).
//!
//! Why kernels: matching and suppression are greedy, data-dependent loops over boxes,
//! not array expressions. The kernels follow MXNet's CPU code step for step (the greedy
//! bipartite match, then threshold matches, then hard-negative mining by background
//! probability; a stable sort before suppression), so results agree with MXNet 1.9.1.
//! None of the three is differentiable in MXNet (their gradients are zeros); the
//! recorded backward gives zeros too, so they can sit inside a recorded network.

mod boxes;
mod codec;
mod cpu;
mod nms;
mod proposal;
#[cfg(test)]
mod tests;

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Aliases, Attrs, Invocation, KernelSlot, Meta, OpCall, OpDef, ParamDef, ParamKind as K,
};
use crate::shape::Shape;

const VARIANCES: ParamDef =
    param("variances", K::Floats, Some("(0.1, 0.1, 0.2, 0.2)"), "Variances of the box encoding (x, y, w, h).");

/// The family's operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_MultiBoxPrior",
        aliases: Aliases { nd: &[], np: &[], npx: &["multibox_prior"], fluent: false },
        inputs: &["data"],
        params: &[
            param("sizes", K::Floats, Some("(1.0,)"), "Box sizes relative to the image."),
            param("ratios", K::Floats, Some("(1.0,)"), "Aspect ratios (width / height)."),
            param("clip", K::Bool, Some("False"), "Clip the boxes to [0, 1]."),
            param("steps", K::Floats, Some("(-1.0, -1.0)"), "Centre steps (y, x); -1: one cell of the feature map."),
            param("offsets", K::Floats, Some("(0.5, 0.5)"), "Centre offsets (y, x) within a cell, in [0, 1]."),
        ],
        doc: "Anchor boxes (1, H·W·(sizes + ratios - 1), 4) as [xmin, ymin, xmax, ymax] for a feature \
              map `data` (N, C, H, W): per cell, every size at the first ratio, then the first size at \
              every other ratio.",
        infer: Some(infer_prior),
        forward: |i| {
            let x = i.x(0)?;
            let p = Prior::read(i, x.dims())?;
            recorded(i, &[x], vec![prior_call(i.def, x, &p)?])
        },
        cpu: KernelSlot::Call(cpu::prior_kernel),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_MultiBoxTarget",
        aliases: Aliases { nd: &[], np: &[], npx: &["multibox_target"], fluent: false },
        inputs: &["anchor", "label", "cls_pred"],
        outputs: &["loc_target", "loc_mask", "cls_target"],
        params: &[
            param("overlap_threshold", K::Float, Some("0.5"), "IoU above which an anchor matches a box."),
            param("ignore_label", K::Float, Some("-1.0"), "Class target of anchors left out of the loss."),
            param("negative_mining_ratio", K::Float, Some("-1.0"), "Negatives per positive (-1: no mining)."),
            param("negative_mining_thresh", K::Float, Some("0.5"), "IoU below which an anchor may be a negative."),
            param("minimum_negative_samples", K::Int, Some("0"), "Minimum negatives (accepted, unused as in MXNet)."),
            VARIANCES,
        ],
        doc: "Training targets for SSD: `anchor` (1, A, 4), `label` (B, L, ≥5) rows [class, xmin, ymin, \
              xmax, ymax] padded with -1, `cls_pred` (B, classes, A). Returns the box offsets (B, A·4), \
              their mask (B, A·4) and the class targets (B, A): class + 1, 0 for background, \
              `ignore_label` for anchors left out.",
        infer: Some(infer_target),
        forward: |i| {
            let (a, l, p) = (i.x(0)?, i.x(1)?, i.x(2)?);
            let metas = [Meta::of(a), Meta::of(l), Meta::of(p)];
            let outs = infer_target(i.def, i.attrs, &metas)?;
            let nums = target_nums(i)?;
            let arrs: Vec<NDArray> =
                outs.into_iter().map(|m| NDArray::empty(m.shape, m.dtype, m.ctx)).collect::<Result<_>>()?;
            let refs: Vec<&NDArray> = arrs.iter().collect();
            push_call(OpCall::new(i.def, &[a, l, p], &refs).with_nums(&nums))?;
            recorded(i, &[a, l, p], arrs)
        },
        cpu: KernelSlot::Call(cpu::target_kernel),
        ..OpDef::BASE
    },
    OpDef {
        name: "_contrib_MultiBoxDetection",
        aliases: Aliases { nd: &[], np: &[], npx: &["multibox_detection"], fluent: false },
        inputs: &["cls_prob", "loc_pred", "anchor"],
        params: &[
            param("clip", K::Bool, Some("True"), "Clip the boxes to [0, 1]."),
            param("threshold", K::Float, Some("0.01"), "Lowest score of a detection."),
            param(
                "background_id",
                K::Int,
                Some("0"),
                "Background class (accepted; class 0 is the background, as in MXNet).",
            ),
            param("nms_threshold", K::Float, Some("0.5"), "IoU at which a lower-scored box is suppressed."),
            param("force_suppress", K::Bool, Some("False"), "Suppress across classes too."),
            VARIANCES,
            param("nms_topk", K::Int, Some("-1"), "Keep the best k before suppression (-1: all)."),
        ],
        doc: "Decodes SSD predictions: `cls_prob` (B, classes, A), `loc_pred` (B, A·4), `anchor` (1, A, 4) \
              to (B, A, 6) rows [class, score, xmin, ymin, xmax, ymax], best first; suppressed and \
              empty rows have class -1.",
        infer: Some(infer_detection),
        forward: |i| {
            let (c, l, a) = (i.x(0)?, i.x(1)?, i.x(2)?);
            let m = infer_detection(i.def, i.attrs, &[Meta::of(c), Meta::of(l), Meta::of(a)])?.remove(0);
            let out = NDArray::empty(m.shape, m.dtype, m.ctx)?;
            let nums = detection_nums(i)?;
            push_call(OpCall::new(i.def, &[c, l, a], &[&out]).with_nums(&nums))?;
            recorded(i, &[c, l, a], vec![out])
        },
        cpu: KernelSlot::Call(cpu::detection_kernel),
        ..OpDef::BASE
    },
    boxes::BOX_IOU,
    boxes::BIPARTITE,
    codec::BOX_ENCODE,
    codec::BOX_DECODE,
    nms::BOX_NMS,
    nms::BOX_NMS_BACKWARD,
    proposal::PROPOSAL,
    proposal::MULTI_PROPOSAL,
];

/// Records zero gradients for every input (MXNet's backward of these operators).
pub(super) fn recorded(i: &Invocation<'_>, ins: &[&NDArray], outs: Vec<NDArray>) -> Result<Vec<NDArray>> {
    if needs_record(ins) {
        let shapes: Vec<NDArray> = ins.iter().map(|x| (*x).clone()).collect();
        let orefs: Vec<&NDArray> = outs.iter().collect();
        record(
            i.name(),
            ins,
            &orefs,
            Box::new(move |_| shapes.iter().map(|x| crate::ops::zeros_like(x).map(Some)).collect()),
        );
    }
    Ok(outs)
}

fn check_float(name: &str, dt: DType) -> Result<()> {
    if matches!(dt, DType::F32 | DType::F64) {
        Ok(())
    } else {
        Err(Error::dtype(name, format!("takes float32 or float64, got {dt}")))
    }
}

/// `MultiBoxPrior`'s settings for a feature map of height `h` and width `w`.
struct Prior {
    sizes: Vec<f64>,
    ratios: Vec<f64>,
    clip: bool,
    steps: [f64; 2],
    offsets: [f64; 2],
    h: usize,
    w: usize,
}

impl Prior {
    fn read(i: &Invocation<'_>, dims: &[usize]) -> Result<Prior> {
        let name = i.name();
        if dims.len() < 4 {
            return Err(Error::shape(name, &[&Shape::new(dims)], "data must be (N, C, H, W)"));
        }
        let list = |k: &str| -> Result<Vec<f64>> { Ok(i.floats(k)?.unwrap_or_default()) };
        let (sizes, ratios, steps, offsets) = (list("sizes")?, list("ratios")?, list("steps")?, list("offsets")?);
        if sizes.is_empty() || ratios.is_empty() {
            return Err(Error::value(name, "sizes and ratios must not be empty"));
        }
        if ratios.iter().any(|&r| r <= 0.0) {
            return Err(Error::value(name, format!("ratios must be positive, got {ratios:?}")));
        }
        let (&[sy, sx], &[oy, ox]) = (steps.as_slice(), offsets.as_slice()) else {
            return Err(Error::value(name, "steps and offsets must each be (y, x)"));
        };
        if !(0.0..=1.0).contains(&oy) || !(0.0..=1.0).contains(&ox) {
            return Err(Error::value(name, format!("offsets must be in [0, 1], got {offsets:?}")));
        }
        if sy * sx < 0.0 {
            return Err(Error::value(name, "give both steps (y and x) or neither"));
        }
        let (h, w) = (dims[2], dims[3]);
        Ok(Prior { sizes, ratios, clip: i.bool("clip")?, steps: [sy, sx], offsets: [oy, ox], h, w })
    }
    fn anchors(&self) -> usize {
        self.h * self.w * (self.sizes.len() + self.ratios.len() - 1)
    }
}

fn infer_prior(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let x = ins.first().ok_or_else(|| Error::value(def.name, "needs data"))?;
    let p = Prior::read(&Invocation::params(def, a), x.shape.dims())?;
    check_float(def.name, x.dtype)?;
    Ok(vec![Meta { shape: Shape::new(&[1, p.anchors(), 4]), ..x.clone() }])
}

/// nums: clip, step y, step x, offset y, offset x, number of sizes, sizes..., ratios...;
/// ints: H, W.
fn prior_call(def: &'static OpDef, x: &NDArray, p: &Prior) -> Result<NDArray> {
    check_float(def.name, x.dtype())?;
    let out = NDArray::empty(Shape::new(&[1, p.anchors(), 4]), x.dtype(), x.ctx())?;
    let mut nums = vec![f64::from(u8::from(p.clip)), p.steps[0], p.steps[1], p.offsets[0], p.offsets[1]];
    nums.push(p.sizes.len() as f64);
    nums.extend(&p.sizes);
    nums.extend(&p.ratios);
    if out.size() > 0 {
        push_call(OpCall::new(def, &[], &[&out]).with_nums(&nums).with_ints(&[p.h as i64, p.w as i64]))?;
    }
    Ok(out)
}

fn variances(i: &Invocation<'_>) -> Result<[f64; 4]> {
    let v = i.floats("variances")?.unwrap_or_default();
    let &[a, b, c, d] = v.as_slice() else {
        return Err(Error::value(i.name(), format!("variances must have 4 values, got {v:?}")));
    };
    Ok([a, b, c, d])
}

/// nums: overlap_threshold, ignore_label, negative_mining_ratio, negative_mining_thresh, variances.
fn target_nums(i: &Invocation<'_>) -> Result<Vec<f64>> {
    let mut v = vec![
        i.f64("overlap_threshold")?,
        i.f64("ignore_label")?,
        i.f64("negative_mining_ratio")?,
        i.f64("negative_mining_thresh")?,
    ];
    if v[2] > 0.0 && v[3] <= 0.0 {
        return Err(Error::value(i.name(), "negative_mining_thresh must be positive when mining negatives"));
    }
    v.extend(variances(i)?);
    Ok(v)
}

fn infer_target(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [an, l, p] = ins else { return Err(Error::value(def.name, "needs anchor, label and cls_pred")) };
    let (ad, ld, pd) = (an.shape.dims(), l.shape.dims(), p.shape.dims());
    let ok = matches!(ad, [1, n, 4] if *n > 0)
        && matches!(ld, [_, nl, w] if *nl > 0 && *w >= 5)
        && matches!(pd, [b, _, n] if *n == ad[1] && *b == ld[0]);
    if !ok {
        return Err(Error::shape(
            def.name,
            &[&an.shape, &l.shape, &p.shape],
            "anchor must be (1, A, 4), label (B, L, ≥5) and cls_pred (B, classes, A)",
        ));
    }
    check_float(def.name, an.dtype)?;
    if l.dtype != an.dtype || p.dtype != an.dtype {
        return Err(Error::dtype(def.name, "anchor, label and cls_pred must share one dtype"));
    }
    Invocation::params(def, a).f64("overlap_threshold")?;
    let (b, n) = (ld[0], ad[1]);
    let m = |s: &[usize]| Meta { shape: Shape::new(s), ..an.clone() };
    Ok(vec![m(&[b, n * 4]), m(&[b, n * 4]), m(&[b, n])])
}

/// nums: clip, threshold, nms_threshold, force_suppress, nms_topk, variances.
fn detection_nums(i: &Invocation<'_>) -> Result<Vec<f64>> {
    let b = |v: bool| f64::from(u8::from(v));
    let mut v = vec![
        b(i.bool("clip")?),
        i.f64("threshold")?,
        i.f64("nms_threshold")?,
        b(i.bool("force_suppress")?),
        i.i64("nms_topk")? as f64,
    ];
    v.extend(variances(i)?);
    Ok(v)
}

fn infer_detection(def: &'static OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let [c, l, a] = ins else { return Err(Error::value(def.name, "needs cls_prob, loc_pred and anchor")) };
    let (cd, ld, ad) = (c.shape.dims(), l.shape.dims(), a.shape.dims());
    let ok = matches!(cd, [b, k, n] if *k >= 1 && ld == [*b, n * 4] && ad.len() == 3 && ad[1] == *n && ad[2] == 4);
    if !ok {
        return Err(Error::shape(
            def.name,
            &[&c.shape, &l.shape, &a.shape],
            "cls_prob must be (B, classes, A), loc_pred (B, A·4) and anchor (1, A, 4)",
        ));
    }
    check_float(def.name, c.dtype)?;
    if l.dtype != c.dtype || a.dtype != c.dtype {
        return Err(Error::dtype(def.name, "cls_prob, loc_pred and anchor must share one dtype"));
    }
    Ok(vec![Meta { shape: Shape::new(&[cd[0], cd[2], 6]), ..c.clone() }])
}
