//! Faster R-CNN's region proposal layer: `contrib.Proposal` (one image) and
//! `contrib.MultiProposal` (a batch). Per image: anchors of every ratio and scale at
//! every feature-map cell, shifted by the predicted deltas and clipped to the image;
//! cells outside the real image (`im_info` height, width) and boxes smaller than
//! `rpn_min_size · scale` get score -1 (the small ones are also enlarged, as MXNet
//! does); then a stable sort by score, the best `rpn_pre_nms_top_n`, greedy
//! suppression at `threshold` (areas with MXNet's `+1` pixel convention), and
//! `rpn_post_nms_top_n` rows `[image, x1, y1, x2, y2]`, the kept boxes repeated
//! cyclically to fill the rows. The arithmetic follows MXNet's CPU operator, including
//! its float/double mix, so values agree; the gradients are zeros, as MXNet's.

use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{
    param, push_call, Attrs, Grad, GraphForm, Invocation, KernelSlot, Meta, OpCall, OpDef, OutputCount, ParamDef,
    ParamKind as K,
};
use crate::shape::Shape;
use crate::storage::Kernel;
use crate::DType;
use ferromx_engine::{ErrorKind, OpFailure};

const PARAMS: &[ParamDef] = &[
    param("rpn_pre_nms_top_n", K::Int, Some("6000"), "Boxes kept before suppression (≤ 0: all)."),
    param("rpn_post_nms_top_n", K::Int, Some("300"), "Rows of output per image."),
    param("threshold", K::Float, Some("0.7"), "IoU above which the lower-scored box is suppressed."),
    param("rpn_min_size", K::Int, Some("16"), "Smallest box side, in pixels of the original image."),
    param("scales", K::Floats, Some("(4.0, 8.0, 16.0, 32.0)"), "Anchor scales."),
    param("ratios", K::Floats, Some("(0.5, 1.0, 2.0)"), "Anchor aspect ratios."),
    param("feature_stride", K::Int, Some("16"), "Image pixels per feature-map cell."),
    param("output_score", K::Bool, Some("False"), "Also return each row's score."),
    param("iou_loss", K::Bool, Some("False"), "Deltas are corner offsets (IoU loss), not centre/size."),
];

const DOC: &str = "Region proposals from RPN outputs: `cls_prob` (B, 2·A, H, W) (background then \
                   foreground scores), `bbox_pred` (B, 4·A, H, W), `im_info` (B, 3) rows [height, \
                   width, scale]; rows [image, x1, y1, x2, y2] (B·rpn_post_nms_top_n, 5), and with \
                   `output_score` the scores (B·rpn_post_nms_top_n, 1). Not differentiable (zero \
                   gradients, as MXNet).";

macro_rules! proposal_def {
    ($name:literal, $multi:literal) => {
        OpDef {
            name: $name,
            inputs: &["cls_prob", "bbox_pred", "im_info"],
            outputs: &["output", "score"],
            params: PARAMS,
            doc: DOC,
            infer: Some(infer),
            forward: |i| forward(i, $multi),
            grad: Grad::Recorded,
            cpu: KernelSlot::Call(kernel),
            graph: GraphForm { visible: Some(visible), total: OutputCount::Fixed(2), ..GraphForm::PLAIN },
            ..OpDef::BASE
        }
    };
}

/// `_contrib_Proposal`.
pub(super) const PROPOSAL: OpDef = proposal_def!("_contrib_Proposal", false);
/// `_contrib_MultiProposal`.
pub(super) const MULTI_PROPOSAL: OpDef = proposal_def!("_contrib_MultiProposal", true);

fn visible(i: &Invocation<'_>) -> Result<usize> {
    Ok(if i.bool("output_score")? { 2 } else { 1 })
}

/// (images, anchors, height, width, post_nms rows).
fn dims(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<(usize, usize, usize, usize, usize)> {
    let [c, b, info] = ins else { return Err(Error::value(def.name, "needs cls_prob, bbox_pred and im_info")) };
    let p = Invocation::params(def, a);
    let (cd, bd, id) = (c.shape.dims(), b.shape.dims(), info.shape.dims());
    let &[n, c2, h, w] = cd else {
        return Err(Error::shape(def.name, &[&c.shape], "cls_prob must be (B, 2·anchors, H, W)"));
    };
    let anchors = p.floats("scales")?.unwrap_or_default().len() * p.floats("ratios")?.unwrap_or_default().len();
    if c2 != 2 * anchors || bd != [n, 4 * anchors, h, w] || id != [n, 3] {
        return Err(Error::shape(
            def.name,
            &[&c.shape, &b.shape, &info.shape],
            format!("with {anchors} anchors (scales × ratios) cls_prob must be (B, {}, H, W), bbox_pred (B, {}, H, W) and im_info (B, 3)", 2 * anchors, 4 * anchors),
        ));
    }
    if def.name == PROPOSAL.name && n != 1 {
        return Err(Error::shape(
            def.name,
            &[&c.shape],
            "takes one image (MXNet's Proposal); use MultiProposal for a batch",
        ));
    }
    if [c.dtype, b.dtype, info.dtype].iter().any(|d| *d != DType::F32) {
        return Err(Error::dtype(def.name, "takes float32 inputs (as MXNet's real_t)"));
    }
    let post = p.i64("rpn_post_nms_top_n")?;
    if post < 1 || p.i64("feature_stride")? < 1 {
        return Err(Error::value(def.name, "rpn_post_nms_top_n and feature_stride must be positive"));
    }
    Ok((n, anchors, h, w, post as usize))
}

fn infer(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (n, _, _, _, post) = dims(def, a, ins)?;
    let m = |cols: usize| Meta { shape: Shape::new(&[n * post, cols]), ..ins[0].clone() };
    let mut v = vec![m(5)];
    if Invocation::params(def, a).bool("output_score")? {
        v.push(m(1));
    }
    Ok(v)
}

fn forward(i: &Invocation<'_>, _multi: bool) -> Result<Vec<NDArray>> {
    let ins = [i.x(0)?, i.x(1)?, i.x(2)?];
    let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
    let (n, _, _, _, post) = dims(i.def, i.attrs, &metas)?;
    let ctx = ins[0].ctx();
    let out = NDArray::empty(Shape::new(&[n * post, 5]), DType::F32, ctx)?;
    let score = NDArray::empty(Shape::new(&[n * post, 1]), DType::F32, ctx)?;
    let mut nums = vec![
        i.i64("rpn_pre_nms_top_n")? as f64,
        post as f64,
        i.f64("threshold")?,
        i.i64("rpn_min_size")? as f64,
        i.i64("feature_stride")? as f64,
        f64::from(u8::from(i.bool("iou_loss")?)),
    ];
    let (scales, ratios) = (i.floats("scales")?.unwrap_or_default(), i.floats("ratios")?.unwrap_or_default());
    nums.push(scales.len() as f64);
    nums.extend(scales);
    nums.extend(ratios);
    if out.size() > 0 {
        push_call(OpCall::new(i.def, &ins, &[&out, &score]).with_nums(&nums))?;
    }
    let mut outs = vec![out];
    if i.bool("output_score")? {
        outs.push(score);
    }
    super::recorded(i, &ins, outs)
}

/// MXNet's anchors for a `stride`-pixel cell: every ratio, then every scale, as
/// `[x1, y1, x2, y2]` around the cell's centre.
fn anchors(stride: f32, ratios: &[f64], scales: &[f64]) -> Vec<[f32; 4]> {
    let (w, h) = (stride, stride);
    let (xc, yc) = ((0.5 * (f64::from(w) - 1.0)) as f32, (0.5 * (f64::from(h) - 1.0)) as f32);
    let mut v = Vec::new();
    for &r in ratios {
        for &s in scales {
            let (r, s) = (r as f32, s as f32);
            let size_ratios = (w * h / r).floor();
            let nw = (size_ratios.sqrt() + 0.5).floor() * s;
            let nh = (nw / s * r + 0.5).floor() * s;
            v.push([xc - 0.5 * (nw - 1.0), yc - 0.5 * (nh - 1.0), xc + 0.5 * (nw - 1.0), yc + 0.5 * (nh - 1.0)]);
        }
    }
    v
}

/// nums: pre_nms, post_nms, threshold, min_size, stride, iou_loss, #scales, scales…, ratios….
fn kernel(call: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let nv = &call.nums;
    let bad = || OpFailure::new(ErrorKind::Runtime, "Proposal: malformed call");
    let ns = *nv.get(6).ok_or_else(bad)? as usize;
    let (scales, ratios) = (nv.get(7..7 + ns).ok_or_else(bad)?, nv.get(7 + ns..).ok_or_else(bad)?);
    let d = k.in_shape(0).dims().to_vec();
    let (n, a, h, w) = (d[0], d[1] / 2, d[2], d[3]);
    let (cls, deltas, info) = (k.input::<f32>(0), k.input::<f32>(1), k.input::<f32>(2));
    let post = nv[1] as usize;
    let count = a * h * w;
    let pre = if nv[0] > 0.0 { (nv[0] as usize).min(count) } else { count };
    let stride = nv[4] as f32;
    let base = anchors(stride, ratios, scales);
    let (out, score) = (k.output::<f32>(0), k.output::<f32>(1));
    for b in 0..n {
        let (ih, iw, isc) = (info[b * 3], info[b * 3 + 1], info[b * 3 + 2]);
        let (real_h, real_w) = ((ih / stride) as i64, (iw / stride) as i64);
        if (h as i64) < real_h || (w as i64) < real_w {
            return Err(OpFailure::new(
                ErrorKind::Value,
                format!("Proposal: im_info ({ih}, {iw}) is larger than the {h}×{w} feature map at stride {stride}"),
            ));
        }
        let mut boxes = vec![[0f32; 5]; count];
        let plane = h * w;
        for (ai, an) in base.iter().enumerate() {
            for y in 0..h {
                for x in 0..w {
                    let idx = y * w * a + x * a + ai;
                    let (sx, sy) = (x as f32 * stride, y as f32 * stride);
                    let anchor = [an[0] + sx, an[1] + sy, an[2] + sx, an[3] + sy];
                    let dl = |c: usize| deltas[((b * 4 * a) + ai * 4 + c) * plane + y * w + x];
                    let mut bx = if nv[5] != 0.0 {
                        [anchor[0] + dl(0), anchor[1] + dl(1), anchor[2] + dl(2), anchor[3] + dl(3)]
                    } else {
                        let bw = anchor[2] - anchor[0] + 1.0;
                        let bh = anchor[3] - anchor[1] + 1.0;
                        let cx = (f64::from(anchor[0]) + 0.5 * (f64::from(bw) - 1.0)) as f32;
                        let cy = (f64::from(anchor[1]) + 0.5 * (f64::from(bh) - 1.0)) as f32;
                        let (pcx, pcy) = (dl(0) * bw + cx, dl(1) * bh + cy);
                        let (pw, ph) = (dl(2).exp() * bw, dl(3).exp() * bh);
                        let half = |v: f32| 0.5 * (f64::from(v) - 1.0);
                        [
                            (f64::from(pcx) - half(pw)) as f32,
                            (f64::from(pcy) - half(ph)) as f32,
                            (f64::from(pcx) + half(pw)) as f32,
                            (f64::from(pcy) + half(ph)) as f32,
                        ]
                    };
                    let clip = |v: f32, hi: f32| v.min(hi - 1.0).max(0.0);
                    bx = [clip(bx[0], iw), clip(bx[1], ih), clip(bx[2], iw), clip(bx[3], ih)];
                    let mut s = cls[((b * 2 * a) + a + ai) * plane + y * w + x];
                    if y as i64 >= real_h || x as i64 >= real_w {
                        s = -1.0;
                    }
                    boxes[idx] = [bx[0], bx[1], bx[2], bx[3], s];
                }
            }
        }
        let min_size = nv[3] as f32 * isc;
        for bx in boxes.iter_mut() {
            if bx[2] - bx[0] + 1.0 < min_size || bx[3] - bx[1] + 1.0 < min_size {
                bx[0] -= min_size / 2.0;
                bx[1] -= min_size / 2.0;
                bx[2] += min_size / 2.0;
                bx[3] += min_size / 2.0;
                bx[4] = -1.0;
            }
        }
        let mut order: Vec<usize> = (0..count).collect();
        order.sort_by(|&p, &q| boxes[q][4].partial_cmp(&boxes[p][4]).unwrap_or(std::cmp::Ordering::Equal));
        let dets: Vec<[f32; 5]> = order[..pre].iter().map(|&o| boxes[o]).collect();
        let keep = suppress(&dets, nv[2] as f32, post.min(pre));
        for r in 0..post {
            let row = b * post + r;
            out[row * 5] = b as f32;
            match keep.get(if keep.is_empty() { 0 } else { r % keep.len() }) {
                Some(&kk) => {
                    out[row * 5 + 1..row * 5 + 5].copy_from_slice(&dets[kk][..4]);
                    score[row] = dets[kk][4];
                }
                None => {
                    out[row * 5 + 1..row * 5 + 5].fill(0.0);
                    score[row] = 0.0;
                }
            }
        }
    }
    Ok(())
}

/// Greedy suppression in score order; at most `limit` kept indices.
fn suppress(dets: &[[f32; 5]], thresh: f32, limit: usize) -> Vec<usize> {
    let area: Vec<f32> = dets.iter().map(|d| (d[2] - d[0] + 1.0) * (d[3] - d[1] + 1.0)).collect();
    let mut gone = vec![false; dets.len()];
    let mut keep = Vec::new();
    for i in 0..dets.len() {
        if keep.len() >= limit {
            break;
        }
        if gone[i] {
            continue;
        }
        keep.push(i);
        let di = dets[i];
        for j in i + 1..dets.len() {
            if gone[j] {
                continue;
            }
            let dj = dets[j];
            let iw = (di[2].min(dj[2]) - di[0].max(dj[0]) + 1.0).max(0.0);
            let ih = (di[3].min(dj[3]) - di[1].max(dj[1]) + 1.0).max(0.0);
            let inter = iw * ih;
            if inter / (area[i] + area[j] - inter) > thresh {
                gone[j] = true;
            }
        }
    }
    keep
}
