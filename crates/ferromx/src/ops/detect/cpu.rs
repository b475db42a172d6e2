//! The box kernels, in MXNet's CPU order of operations (anchors in float32 arithmetic
//! as MXNet computes them; matching on float32 overlaps).

use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::DType;
use num_traits::Float;

type KResult = std::result::Result<(), OpFailure>;

fn by_dtype(dt: DType, f32f: impl FnOnce() -> KResult, f64f: impl FnOnce() -> KResult) -> KResult {
    match dt {
        DType::F32 => f32f(),
        DType::F64 => f64f(),
        d => Err(OpFailure::new(ErrorKind::Runtime, format!("box kernels take float32/float64, got {d}"))),
    }
}

fn f32_of<T: Float>(x: T) -> f32 {
    num_traits::ToPrimitive::to_f32(&x).unwrap_or(f32::NAN)
}

fn cast<T: Float>(v: f64) -> T {
    T::from(v).unwrap_or_else(T::nan)
}

/// nums: clip, step y, step x, offset y, offset x, number of sizes, sizes..., ratios...;
/// ints: H, W.
pub(super) fn prior_kernel(call: &OpCall, k: &Kernel) -> KResult {
    by_dtype(k.out_dtype(0), || prior::<f32>(call, k), || prior::<f64>(call, k))
}

fn prior<T: Float + Elem>(call: &OpCall, k: &Kernel) -> KResult {
    let n = &call.nums;
    let (h, w) = (call.us(0), call.us(1));
    let ns = n[5] as usize;
    let sizes: Vec<f32> = n[6..6 + ns].iter().map(|&v| v as f32).collect();
    let ratios: Vec<f32> = n[6 + ns..].iter().map(|&v| v as f32).collect();
    let (mut sy, mut sx) = (n[1] as f32, n[2] as f32);
    if sy <= 0.0 || sx <= 0.0 {
        sy = 1.0 / h as f32;
        sx = 1.0 / w as f32;
    }
    let (oy, ox, clip) = (n[3] as f32, n[4] as f32, n[0] != 0.0);
    let out = k.output::<T>(0);
    let mut at = 0;
    let mut put = |cx: f32, cy: f32, bw: f32, bh: f32| {
        for v in [cx - bw, cy - bh, cx + bw, cy + bh] {
            out[at] = cast(f64::from(if clip { v.clamp(0.0, 1.0) } else { v }));
            at += 1;
        }
    };
    for r in 0..h {
        let cy = (r as f32 + oy) * sy;
        for c in 0..w {
            let cx = (c as f32 + ox) * sx;
            let ratio = ratios[0].sqrt();
            for &size in &sizes {
                put(cx, cy, size * h as f32 / w as f32 * ratio / 2.0, size / ratio / 2.0);
            }
            for &rt in &ratios[1..] {
                let ratio = rt.sqrt();
                put(cx, cy, sizes[0] * h as f32 / w as f32 * ratio / 2.0, sizes[0] / ratio / 2.0);
            }
        }
    }
    Ok(())
}

/// Intersection over union of two [xmin, ymin, xmax, ymax] boxes (0 for an empty union).
fn iou<T: Float>(a: &[T], b: &[T]) -> T {
    let z = T::zero();
    let w = z.max(a[2].min(b[2]) - a[0].max(b[0]));
    let h = z.max(a[3].min(b[3]) - a[1].max(b[1]));
    let i = w * h;
    let u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i;
    if u == z {
        z
    } else {
        i / u
    }
}

/// nums: overlap_threshold, ignore_label, negative_mining_ratio, negative_mining_thresh,
/// variances (4).
pub(super) fn target_kernel(call: &OpCall, k: &Kernel) -> KResult {
    by_dtype(k.in_dtype(0), || target::<f32>(call, k), || target::<f64>(call, k))
}

/// One batch image's matching state.
struct Matching {
    /// (best overlap, ground-truth index) per anchor; (-1, -1) when unset.
    best: Vec<(f32, i64)>,
    /// 1 positive, 0 negative, -1 ignored.
    flags: Vec<i8>,
    positives: usize,
}

/// The greedy bipartite match (each box takes its best free anchor, best pairs
/// first), then every other anchor's best box, positive above the threshold.
fn match_boxes(ov: &[f32], na: usize, ng: usize, nl: usize, thresh: f32) -> Matching {
    let mut m = Matching { best: vec![(-1.0, -1); na], flags: vec![-1; na], positives: 0 };
    let mut gt_done = vec![false; ng];
    while gt_done.iter().any(|d| !d) {
        let (mut ba, mut bg, mut bo) = (usize::MAX, usize::MAX, 1e-6f32);
        for j in 0..na {
            if m.flags[j] == 1 {
                continue;
            }
            for (g, done) in gt_done.iter().enumerate() {
                if !done && ov[j * nl + g] > bo {
                    (ba, bg, bo) = (j, g, ov[j * nl + g]);
                }
            }
        }
        if ba == usize::MAX {
            break;
        }
        m.best[ba] = (bo, bg as i64);
        m.positives += 1;
        gt_done[bg] = true;
        m.flags[ba] = 1;
    }
    if thresh > 0.0 {
        for j in 0..na {
            if m.flags[j] == 1 {
                continue;
            }
            if let Some((g, o)) = best_box(&ov[j * nl..j * nl + ng]) {
                m.best[j] = (o, g as i64);
                if o > thresh {
                    m.positives += 1;
                    m.flags[j] = 1;
                }
            }
        }
    }
    m
}

/// The first box of largest overlap, or `None` when there are no boxes.
fn best_box(ov: &[f32]) -> Option<(usize, f32)> {
    let mut best: Option<(usize, f32)> = None;
    for (g, &o) in ov.iter().enumerate() {
        if o > best.map_or(-1.0, |b| b.1) {
            best = Some((g, o));
        }
    }
    best
}

fn target<T: Float + Elem>(call: &OpCall, k: &Kernel) -> KResult {
    let n = &call.nums;
    let (thresh, ignore, ratio, neg_thresh) = (n[0] as f32, n[1], n[2] as f32, n[3] as f32);
    let var = [n[4] as f32, n[5] as f32, n[6] as f32, n[7] as f32];
    let (anchors, labels, preds) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
    let (ld, pd) = (k.in_shape(1).dims().to_vec(), k.in_shape(2).dims().to_vec());
    let (nb, nl, lw, nc) = (ld[0], ld[1], ld[2], pd[1]);
    let na = anchors.len() / 4;
    let (loc, mask, cls) = (k.output::<T>(0), k.output::<T>(1), k.output::<T>(2));
    loc.fill(T::zero());
    mask.fill(T::zero());
    cls.fill(cast(ignore));
    for b in 0..nb {
        let lab = &labels[b * nl * lw..(b + 1) * nl * lw];
        let mut ng = 0;
        while ng < nl && f32_of(lab[ng * lw]) != -1.0 {
            ng += 1;
        }
        if ng < nl && lab[ng * lw + 1..ng * lw + 5].iter().any(|&v| f32_of(v) != -1.0) {
            return Err(OpFailure::new(
                ErrorKind::Value,
                format!("image {b}: label row {ng} has class -1 (padding) but coordinates that are not all -1"),
            ));
        }
        if ng == 0 {
            continue;
        }
        let mut ov = vec![0f32; na * nl];
        for j in 0..na {
            for g in 0..nl {
                let v = iou(&anchors[j * 4..j * 4 + 4], &lab[g * lw + 1..g * lw + 5]);
                ov[j * nl + g] = f32_of(v);
            }
        }
        let mut m = match_boxes(&ov, na, ng, nl, thresh);
        if ratio > 0.0 {
            mine_negatives(&mut m, &ov, &preds[b * nc * na..(b + 1) * nc * na], (na, ng, nl, nc), ratio, neg_thresh)?;
        } else {
            for f in m.flags.iter_mut().filter(|f| **f != 1) {
                *f = 0;
            }
        }
        for j in 0..na {
            let o = b * na + j;
            match m.flags[j] {
                1 => {
                    let g = m.best[j].1 as usize;
                    cls[o] = lab[g * lw] + T::one();
                    mask[o * 4..o * 4 + 4].fill(T::one());
                    encode(&anchors[j * 4..j * 4 + 4], &lab[g * lw + 1..g * lw + 5], &var, &mut loc[o * 4..o * 4 + 4]);
                }
                0 => cls[o] = T::zero(),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Marks as negatives the unmatched anchors (overlap below `neg_thresh`) whose
/// background probability is lowest, `ratio` of them per positive.
fn mine_negatives<T: Float>(
    m: &mut Matching,
    ov: &[f32],
    preds: &[T],
    (na, ng, nl, nc): (usize, usize, usize, usize),
    ratio: f32,
    neg_thresh: f32,
) -> KResult {
    let want = ((m.positives as f32 * ratio) as usize).min(na - m.positives);
    if want == 0 {
        return Ok(());
    }
    let mut cand: Vec<(f32, usize)> = Vec::new();
    for j in 0..na {
        if m.flags[j] == 1 {
            continue;
        }
        if m.best[j].0 < 0.0 {
            if let Some((g, o)) = best_box(&ov[j * nl..j * nl + ng]) {
                m.best[j] = (o, g as i64);
            }
        }
        if m.best[j].0 < neg_thresh && m.flags[j] == -1 {
            let col = |c: usize| preds[j + na * c];
            let mx = (1..nc).fold(col(0), |a, c| if col(c) > a { col(c) } else { a });
            let sum = (0..nc).fold(T::zero(), |s, c| s + (col(c) - mx).exp());
            let prob = ((col(0) - mx).exp() / sum).to_f32().unwrap_or(0.0);
            cand.push((-prob, j));
        }
    }
    if cand.len() < want {
        return Err(OpFailure::new(
            ErrorKind::Value,
            format!(
                "negative mining needs {want} candidate anchors below negative_mining_thresh, found {}",
                cand.len()
            ),
        ));
    }
    // descending by -prob (lowest background probability first), stable
    cand.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal));
    for &(_, j) in &cand[..want] {
        m.flags[j] = 0;
    }
    Ok(())
}

/// The regression target of box `g` against anchor `a` (float32, as MXNet).
fn encode<T: Float>(a: &[T], g: &[T], v: &[f32; 4], dst: &mut [T]) {
    let f = |x: T| x.to_f32().unwrap_or(0.0);
    let (al, at, ar, ab) = (f(a[0]), f(a[1]), f(a[2]), f(a[3]));
    let (aw, ah, ax, ay) = (ar - al, ab - at, (al + ar) * 0.5, (at + ab) * 0.5);
    let (gl, gt, gr, gb) = (f(g[0]), f(g[1]), f(g[2]), f(g[3]));
    let (gw, gh, gx, gy) = (gr - gl, gb - gt, (gl + gr) * 0.5, (gt + gb) * 0.5);
    let vals = [(gx - ax) / aw / v[0], (gy - ay) / ah / v[1], (gw / aw).ln() / v[2], (gh / ah).ln() / v[3]];
    for (d, x) in dst.iter_mut().zip(vals) {
        *d = cast(f64::from(x));
    }
}

/// nums: clip, threshold, nms_threshold, force_suppress, nms_topk, variances (4).
pub(super) fn detection_kernel(call: &OpCall, k: &Kernel) -> KResult {
    by_dtype(k.in_dtype(0), || detection::<f32>(call, k), || detection::<f64>(call, k))
}

fn detection<T: Float + Elem>(call: &OpCall, k: &Kernel) -> KResult {
    let n = &call.nums;
    let (clip, thresh, nms, force, topk) = (n[0] != 0.0, cast::<T>(n[1]), n[2], n[3] != 0.0, n[4] as i64);
    let var: [T; 4] = [cast(n[5]), cast(n[6]), cast(n[7]), cast(n[8])];
    let (probs, locs, anchors) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
    let cd = k.in_shape(0).dims().to_vec();
    let (nb, nc, na) = (cd[0], cd[1], cd[2]);
    let out = k.output::<T>(0);
    out.fill(-T::one());
    let mut rows = vec![T::zero(); na * 6];
    for b in 0..nb {
        let p = &probs[b * nc * na..(b + 1) * nc * na];
        for i in 0..na {
            let (mut score, mut id) = (-T::one(), 0usize);
            for j in 1..nc {
                if p[j * na + i] > score {
                    (score, id) = (p[j * na + i], j);
                }
            }
            if id > 0 && score < thresh {
                id = 0;
            }
            let r = &mut rows[i * 6..i * 6 + 6];
            r[0] = cast::<T>(id as f64) - T::one();
            r[1] = score;
            decode(&anchors[i * 4..i * 4 + 4], &locs[(b * na + i) * 4..(b * na + i) * 4 + 4], clip, &var, &mut r[2..]);
        }
        let o = &mut out[b * na * 6..(b + 1) * na * 6];
        let valid: Vec<usize> = (0..na).filter(|&i| rows[i * 6] >= T::zero()).collect();
        for (v, &i) in valid.iter().enumerate() {
            o[v * 6..v * 6 + 6].copy_from_slice(&rows[i * 6..i * 6 + 6]);
        }
        if valid.is_empty() || nms <= 0.0 || nms > 1.0 {
            continue;
        }
        suppress(o, valid.len(), topk, cast(nms), force);
    }
    Ok(())
}

/// Sorts the first `count` rows by score (stable), keeps the best `topk`, and marks
/// rows overlapping a better one of the same class (any class with `force`) as -1.
fn suppress<T: Float>(o: &mut [T], count: usize, topk: i64, nms: T, force: bool) {
    let tmp: Vec<T> = o[..count * 6].to_vec();
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|&a, &b| tmp[b * 6 + 1].partial_cmp(&tmp[a * 6 + 1]).unwrap_or(std::cmp::Ordering::Equal));
    let mut keep = count;
    if topk > 0 && (topk as usize) < keep {
        keep = topk as usize;
        for i in keep..count {
            o[i * 6] = -T::one();
        }
    }
    for (i, &src) in order[..keep].iter().enumerate() {
        o[i * 6..i * 6 + 6].copy_from_slice(&tmp[src * 6..src * 6 + 6]);
    }
    for i in 0..keep {
        if o[i * 6] < T::zero() {
            continue;
        }
        for j in i + 1..keep {
            if o[j * 6] < T::zero() {
                continue;
            }
            if (force || o[i * 6] == o[j * 6]) && iou(&o[i * 6 + 2..i * 6 + 6], &o[j * 6 + 2..j * 6 + 6]) >= nms {
                o[j * 6] = -T::one();
            }
        }
    }
}

/// Box `p` (offsets) decoded against anchor `a`.
fn decode<T: Float>(a: &[T], p: &[T], clip: bool, v: &[T; 4], out: &mut [T]) {
    let two = T::one() + T::one();
    let (aw, ah) = (a[2] - a[0], a[3] - a[1]);
    let (ax, ay) = ((a[0] + a[2]) / two, (a[1] + a[3]) / two);
    let (ox, oy) = (p[0] * v[0] * aw + ax, p[1] * v[1] * ah + ay);
    let (ow, oh) = ((p[2] * v[2]).exp() * aw / two, (p[3] * v[3]).exp() * ah / two);
    for (d, x) in out.iter_mut().zip([ox - ow, oy - oh, ox + ow, oy + oh]) {
        *d = if clip { x.min(T::one()).max(T::zero()) } else { x };
    }
}
