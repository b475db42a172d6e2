//! CPU kernels of the image operators. Layout numbers come in `OpCall::nums`
//! (see each kernel); images are interleaved HWC.

use crate::dtype::{DType, Elem};
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::opdef::OpCall;
use crate::ops::random::Rng;
use crate::storage::Kernel;
use crate::with_dtype;

type KResult = std::result::Result<(), OpFailure>;

fn usz(c: &OpCall, i: usize) -> usize {
    c.nums[i] as usize
}

/// `to_tensor`: nums = [batch, plane (h*w), channels].
pub fn to_tensor_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (n, plane, ch) = (usz(c, 0), usz(c, 1), usz(c, 2));
    let o = k.output::<f32>(0);
    with_dtype!(k.in_dtype(0), T, {
        let x = k.input::<T>(0);
        let img = plane * ch;
        crate::ops::par::chunked(o, img.max(1), |start, oc| {
            let b0 = start / img.max(1);
            for (bi, ob) in oc.chunks_mut(img.max(1)).enumerate() {
                let xb = &x[(b0 + bi) * img..(b0 + bi + 1) * img];
                for (cc, op) in ob.chunks_mut(plane.max(1)).enumerate() {
                    for (i, v) in op.iter_mut().enumerate() {
                        *v = xb[i * ch + cc].to_f32() / 255.0;
                    }
                }
            }
        });
    });
    let _ = n;
    Ok(())
}

/// `normalize`: nums = [batch, channels, plane, mean.., std..].
pub fn normalize_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (ch, plane) = (usz(c, 1), usz(c, 2));
    let (mean, std) = (&c.nums[3..3 + ch], &c.nums[3 + ch..3 + 2 * ch]);
    let wide = k.in_dtype(0) == DType::F64;
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        for (j, (oc, xc)) in o.chunks_mut(plane.max(1)).zip(x.chunks(plane.max(1))).enumerate() {
            let (m, s) = (mean[j % ch], std[j % ch]);
            for (v, &xv) in oc.iter_mut().zip(xc) {
                *v = if wide {
                    T::from_f64((xv.to_f64() - m) / s)
                } else {
                    T::from_f32((xv.to_f32() - m as f32) / s as f32)
                };
            }
        }
    });
    Ok(())
}

fn flip_into<T: Copy>(x: &[T], o: &mut [T], mid: usize, tail: usize) {
    let block = mid * tail;
    for (ob, xb) in o.chunks_mut(block.max(1)).zip(x.chunks(block.max(1))) {
        for j in 0..mid {
            let src = &xb[(mid - 1 - j) * tail..(mid - j) * tail];
            ob[j * tail..(j + 1) * tail].copy_from_slice(src);
        }
    }
}

/// Flips: nums = [head, mid, tail] around the flipped axis.
pub fn flip_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (mid, tail) = (usz(c, 1), usz(c, 2));
    with_dtype!(k.in_dtype(0), T, flip_into(k.input::<T>(0), k.output::<T>(0), mid, tail));
    Ok(())
}

/// Random flips: nums = [head, mid, tail, seed]; flips with probability 1/2.
pub fn random_flip_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let mut rng = Rng::new(c.nums[3] as u64);
    let (mid, tail) = (usz(c, 1), usz(c, 2));
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        if rng.uniform() < 0.5 {
            flip_into(x, o, mid, tail)
        } else {
            o.copy_from_slice(x)
        }
    });
    Ok(())
}

/// Crop: nums = [n, h, w, c, x, y, width, height].
pub fn crop_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let [_, h, w, ch, x0, y0, cw, chh] = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| usz(c, i));
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        let (img, oimg, row) = (h * w * ch, chh * cw * ch, cw * ch);
        for (ob, xb) in o.chunks_mut(oimg.max(1)).zip(x.chunks(img.max(1))) {
            for r in 0..chh {
                let s = ((y0 + r) * w + x0) * ch;
                ob[r * row..(r + 1) * row].copy_from_slice(&xb[s..s + row]);
            }
        }
    });
    Ok(())
}

/// Crop gradient: the same nums; input 0 is the crop's gradient.
pub fn crop_backward_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let [_, h, w, ch, x0, y0, cw, chh] = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| usz(c, i));
    with_dtype!(k.in_dtype(0), T, {
        let (g, o) = (k.input::<T>(0), k.output::<T>(0));
        o.fill(T::default());
        let (img, gimg, row) = (h * w * ch, chh * cw * ch, cw * ch);
        for (ob, gb) in o.chunks_mut(img.max(1)).zip(g.chunks(gimg.max(1))) {
            for r in 0..chh {
                let s = ((y0 + r) * w + x0) * ch;
                ob[s..s + row].copy_from_slice(&gb[r * row..(r + 1) * row]);
            }
        }
    });
    Ok(())
}

// ------------------------------------------------------------------ colour

/// MXNet's `saturate_cast`: uint8 clamps to [0, 255] and truncates; others cast.
#[inline]
fn sat<T: Elem>(v: f32) -> T {
    if T::DTYPE == DType::U8 {
        T::from_f64(v.clamp(0.0, 255.0) as f64)
    } else {
        T::from_f32(v)
    }
}

const GRAY: [f32; 3] = [0.299, 0.587, 0.114];

fn brightness<T: Elem>(px: &mut [T], alpha: f32) {
    for v in px.iter_mut() {
        *v = sat(v.to_f32() * alpha);
    }
}

fn contrast<T: Elem>(px: &mut [T], ch: usize, alpha: f32) {
    let n = px.len() / ch.max(1);
    let sum: f32 = if ch == 3 {
        px.chunks_exact(3).map(|p| p[0].to_f32() * GRAY[0] + p[1].to_f32() * GRAY[1] + p[2].to_f32() * GRAY[2]).sum()
    } else {
        px.iter().map(|v| v.to_f32()).sum()
    };
    let beta = (1.0 - alpha) * sum / n.max(1) as f32;
    for v in px.iter_mut() {
        *v = sat(v.to_f32() * alpha + beta);
    }
}

fn saturation<T: Elem>(px: &mut [T], ch: usize, alpha: f32) {
    if ch != 3 {
        return;
    }
    for p in px.chunks_exact_mut(3) {
        let gray = (p[0].to_f32() * GRAY[0] + p[1].to_f32() * GRAY[1] + p[2].to_f32() * GRAY[2]) * (1.0 - alpha);
        for v in p.iter_mut() {
            *v = sat(gray + v.to_f32() * alpha);
        }
    }
}

fn rgb_to_hls(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
    let (r, g, b) = (r / 255.0, g / 255.0, b / 255.0);
    let (vmax, vmin) = (r.max(g).max(b), r.min(g).min(b));
    let diff = vmax - vmin;
    let l = (vmax + vmin) * 0.5;
    if diff <= f32::EPSILON {
        return (0.0, l, 0.0);
    }
    let s = if l < 0.5 { diff / (vmax + vmin) } else { diff / (2.0 - vmax - vmin) };
    let d = 60.0 / diff;
    let mut h = if vmax == r {
        (g - b) * d
    } else if vmax == g {
        (b - r) * d + 120.0
    } else {
        (r - g) * d + 240.0
    };
    if h < 0.0 {
        h += 360.0;
    }
    (h, l, s)
}

fn hls_to_rgb(h: f32, l: f32, s: f32) -> (f32, f32, f32) {
    const SECTOR: [[usize; 3]; 6] = [[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]];
    if s == 0.0 {
        return (l * 255.0, l * 255.0, l * 255.0);
    }
    let p2 = if l <= 0.5 { l * (1.0 + s) } else { l + s - l * s };
    let p1 = 2.0 * l - p2;
    let mut h = h / 60.0;
    h = h.rem_euclid(6.0);
    let sector = (h as usize).min(5);
    h -= sector as f32;
    let tab = [p2, p1, p1 + (p2 - p1) * (1.0 - h), p1 + (p2 - p1) * h];
    let [bi, gi, ri] = SECTOR[sector];
    (tab[ri] * 255.0, tab[gi] * 255.0, tab[bi] * 255.0)
}

fn hue<T: Elem>(px: &mut [T], ch: usize, alpha: f32) {
    if ch != 3 {
        return;
    }
    for p in px.chunks_exact_mut(3) {
        let (h, l, s) = rgb_to_hls(p[0].to_f32(), p[1].to_f32(), p[2].to_f32());
        let (r, g, b) = hls_to_rgb(h + alpha * 360.0, l, s);
        p[0] = sat(r);
        p[1] = sat(g);
        p[2] = sat(b);
    }
}

fn uniform(rng: &mut Rng, lo: f64, hi: f64) -> f32 {
    (lo + (hi - lo) * rng.uniform()) as f32
}

/// Random enhancement: nums = [plane, channels, min_factor, max_factor, seed];
/// the operator's name picks brightness, contrast, saturation or hue.
pub fn enhance_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let ch = usz(c, 1);
    let mut rng = Rng::new(c.nums[4] as u64);
    let alpha = uniform(&mut rng, c.nums[2], c.nums[3]);
    let kind = c.def.name.rsplit('_').next().unwrap_or("");
    with_dtype!(k.in_dtype(0), T, {
        let o = k.output::<T>(0);
        o.copy_from_slice(k.input::<T>(0));
        match kind {
            "brightness" => brightness(o, alpha),
            "contrast" => contrast(o, ch, alpha),
            "saturation" => saturation(o, ch, alpha),
            _ => hue(o, ch, alpha),
        }
    });
    Ok(())
}

/// Colour jitter: nums = [plane, channels, brightness, contrast, saturation, hue, seed].
pub fn jitter_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let ch = usz(c, 1);
    let mut rng = Rng::new(c.nums[6] as u64);
    let mut order = [0usize, 1, 2, 3];
    for i in (1..4).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    with_dtype!(k.in_dtype(0), T, {
        let o = k.output::<T>(0);
        o.copy_from_slice(k.input::<T>(0));
        for &j in &order {
            let p = c.nums[2 + j];
            if p <= 0.0 {
                continue;
            }
            let a = uniform(&mut rng, -p, p);
            match j {
                0 => brightness(o, 1.0 + a),
                1 => contrast(o, ch, 1.0 + a),
                2 => saturation(o, ch, 1.0 + a),
                _ => hue(o, ch, a),
            }
        }
    });
    Ok(())
}

const EIG: [[f32; 3]; 3] = [
    [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
    [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
    [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
];

fn lighting<T: Elem>(x: &[T], o: &mut [T], ch: usize, a: [f32; 3]) {
    if ch != 3 {
        o.copy_from_slice(x);
        return;
    }
    let pca: [f32; 3] = std::array::from_fn(|r| EIG[r][0] * a[0] + EIG[r][1] * a[1] + EIG[r][2] * a[2]);
    for (op, xp) in o.chunks_exact_mut(3).zip(x.chunks_exact(3)) {
        for i in 0..3 {
            op[i] = sat(xp[i].to_f32() + pca[i]);
        }
    }
}

/// Lighting: nums = [channels, alpha_r, alpha_g, alpha_b].
pub fn lighting_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let a = [c.nums[1] as f32, c.nums[2] as f32, c.nums[3] as f32];
    with_dtype!(k.in_dtype(0), T, lighting(k.input::<T>(0), k.output::<T>(0), usz(c, 0), a));
    Ok(())
}

/// Random lighting: nums = [channels, alpha_std, seed].
pub fn random_lighting_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let mut rng = Rng::new(c.nums[2] as u64);
    let sd = c.nums[1];
    let a: [f32; 3] = std::array::from_fn(|_| (rng.normal() * sd) as f32);
    with_dtype!(k.in_dtype(0), T, lighting(k.input::<T>(0), k.output::<T>(0), usz(c, 0), a));
    Ok(())
}

// ------------------------------------------------------------------ resize

/// OpenCV interpolation methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interp {
    /// `INTER_NEAREST` (0).
    Nearest,
    /// `INTER_LINEAR` (1).
    Linear,
    /// `INTER_CUBIC` (2).
    Cubic,
    /// `INTER_AREA` (3).
    Area,
}

impl Interp {
    /// From OpenCV's code.
    pub fn from_code(op: &str, code: i64) -> Result<Interp> {
        match code {
            0 => Ok(Interp::Nearest),
            1 => Ok(Interp::Linear),
            2 => Ok(Interp::Cubic),
            3 => Ok(Interp::Area),
            4 => Err(Error::value(op, "interp=4 (Lanczos) is not supported; use 0 to 3")),
            c => Err(Error::value(op, format!("unknown interpolation {c} (0 nearest, 1 bilinear, 2 bicubic, 3 area)"))),
        }
    }
}

/// Per-output-coordinate source taps: `k` indices and weights each.
struct Taps {
    k: usize,
    idx: Vec<usize>,
    w: Vec<f64>,
}

fn cubic_coeffs(x: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let c0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let c1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [c0, c1, c2, 1.0 - c0 - c1 - c2]
}

/// OpenCV's interpolation taps (`computeResizeCoeffs`) for one axis.
fn interp_taps(src: usize, dst: usize, mode: Interp) -> Taps {
    let scale = src as f64 / dst as f64;
    let k = match mode {
        Interp::Nearest => 1,
        Interp::Cubic => 4,
        _ => 2,
    };
    let mut t = Taps { k, idx: Vec::with_capacity(dst * k), w: Vec::with_capacity(dst * k) };
    let last = src as i64 - 1;
    for d in 0..dst {
        if mode == Interp::Nearest {
            t.idx.push(((d as f64 * scale).floor() as usize).min(src - 1));
            t.w.push(1.0);
            continue;
        }
        let (sx, fx) = if mode == Interp::Area {
            let sx = (d as f64 * scale).floor();
            let f = ((d as f64 + 1.0) - (sx + 1.0) / scale) as f32 as f64;
            (sx as i64, if f <= 0.0 { 0.0 } else { f - f.floor() })
        } else {
            let f = ((d as f64 + 0.5) * scale - 0.5) as f32 as f64;
            let sx = f.floor();
            (sx as i64, f - sx)
        };
        if mode == Interp::Cubic {
            for (j, w) in cubic_coeffs(fx).into_iter().enumerate() {
                t.idx.push((sx - 1 + j as i64).clamp(0, last) as usize);
                t.w.push(w);
            }
            continue;
        }
        let (sx, fx) = if sx < 0 {
            (0, 0.0)
        } else if sx >= last {
            (last, 0.0)
        } else {
            (sx, fx)
        };
        t.idx.extend([sx as usize, (sx + 1).min(last) as usize]);
        t.w.extend([1.0 - fx, fx]);
    }
    t
}

/// OpenCV's pixel-area taps for downscaling (`computeResizeAreaTab`).
fn area_taps(src: usize, dst: usize) -> Taps {
    let scale = src as f64 / dst as f64;
    let mut rows: Vec<Vec<(usize, f64)>> = Vec::with_capacity(dst);
    for d in 0..dst {
        let fsx1 = d as f64 * scale;
        let fsx2 = fsx1 + scale;
        let cell = scale.min(src as f64 - fsx1);
        let sx2 = (fsx2.floor() as usize).min(src - 1);
        let sx1 = (fsx1.ceil() as usize).min(sx2);
        let mut r = Vec::new();
        if sx1 as f64 - fsx1 > 1e-3 {
            r.push((sx1 - 1, (sx1 as f64 - fsx1) / cell));
        }
        for s in sx1..sx2 {
            r.push((s, 1.0 / cell));
        }
        if fsx2 - sx2 as f64 > 1e-3 {
            r.push((sx2, (fsx2 - sx2 as f64).min(1.0).min(cell) / cell));
        }
        rows.push(r);
    }
    let k = rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let mut t = Taps { k, idx: Vec::with_capacity(dst * k), w: Vec::with_capacity(dst * k) };
    for r in rows {
        let pad = k - r.len();
        for (i, w) in r.into_iter().chain(std::iter::repeat_n((0, 0.0), pad)) {
            t.idx.push(i);
            t.w.push(w);
        }
    }
    t
}

/// Separable resampling of one HWC image; uint8 uses OpenCV's 11-bit fixed point.
fn separable<T: Elem>(x: &[T], [h, w, ch]: [usize; 3], o: &mut [T], tx: &Taps, ty: &Taps, fixed: bool) {
    let ow = tx.idx.len() / tx.k;
    let row_len = ow * ch;
    let mut rows: Vec<f64> = vec![0.0; h * row_len];
    let q = |v: f64| if fixed { ((v as f32) * 2048.0).round_ties_even() as f64 } else { v };
    for r in 0..h {
        let src = &x[r * w * ch..(r + 1) * w * ch];
        let dst = &mut rows[r * row_len..(r + 1) * row_len];
        for d in 0..ow {
            for cc in 0..ch {
                let mut s = 0.0;
                for j in 0..tx.k {
                    s += src[tx.idx[d * tx.k + j] * ch + cc].to_f64() * q(tx.w[d * tx.k + j]);
                }
                dst[d * ch + cc] = s;
            }
        }
    }
    for (d, orow) in o.chunks_mut(row_len).enumerate() {
        for (i, v) in orow.iter_mut().enumerate() {
            let mut s = 0.0;
            for j in 0..ty.k {
                s += rows[ty.idx[d * ty.k + j] * row_len + i] * q(ty.w[d * ty.k + j]);
            }
            *v = if fixed && ty.k == 2 {
                // OpenCV's SIMD vertical pass: 16-bit high products, then (.. + 2) >> 2.
                let (i0, i1) = (ty.idx[d * 2] * row_len + i, ty.idx[d * 2 + 1] * row_len + i);
                let (b0, b1) = (q(ty.w[d * 2]) as i64, q(ty.w[d * 2 + 1]) as i64);
                let hi = |sv: f64, b: i64| (((sv as i64) >> 4).clamp(-32768, 32767) * b) >> 16;
                T::from_f64(((hi(rows[i0], b0) + hi(rows[i1], b1) + 2) >> 2).clamp(0, 255) as f64)
            } else if fixed {
                T::from_f64((((s as i64) + (1 << 21)) >> 22).clamp(0, 255) as f64)
            } else {
                store(s)
            };
        }
    }
}

/// [`separable`]'s uint8 fixed-point path in integers (the same arithmetic, bit for bit):
/// 11-bit weights quantised once, only the source rows some output row reads. The
/// horizontal sums fit `i32` (at most 255 * 4 taps * ~2.5k); the two-tap (bilinear) passes
/// have their own loops, the vertical sum of more taps is taken in `i64`.
fn separable_u8(x: &[u8], [h, w, ch]: [usize; 3], o: &mut [u8], tx: &Taps, ty: &Taps) {
    let ow = tx.idx.len() / tx.k;
    let row_len = ow * ch;
    let q = |v: f64| ((v as f32) * 2048.0).round_ties_even() as i32;
    let wx: Vec<i32> = tx.w.iter().map(|&v| q(v)).collect();
    let wy: Vec<i32> = ty.w.iter().map(|&v| q(v)).collect();
    let offs: Vec<usize> = tx.idx.iter().map(|&i| i * ch).collect();
    let mut needed = vec![false; h];
    for &r in &ty.idx {
        needed[r] = true;
    }
    let mut rows: Vec<i32> = vec![0; h * row_len];
    for r in (0..h).filter(|&r| needed[r]) {
        let src = &x[r * w * ch..(r + 1) * w * ch];
        let dst = &mut rows[r * row_len..(r + 1) * row_len];
        if tx.k == 2 {
            for ((px, t), wt) in dst.chunks_exact_mut(ch).zip(offs.chunks_exact(2)).zip(wx.chunks_exact(2)) {
                let (a, b) = (&src[t[0]..t[0] + ch], &src[t[1]..t[1] + ch]);
                for ((v, &p0), &p1) in px.iter_mut().zip(a).zip(b) {
                    *v = p0 as i32 * wt[0] + p1 as i32 * wt[1];
                }
            }
            continue;
        }
        for d in 0..ow {
            let (taps, ws) = (&offs[d * tx.k..(d + 1) * tx.k], &wx[d * tx.k..(d + 1) * tx.k]);
            for cc in 0..ch {
                dst[d * ch + cc] = taps.iter().zip(ws).map(|(&t, &wt)| src[t + cc] as i32 * wt).sum();
            }
        }
    }
    let hi = |sv: i32, b: i32| ((sv >> 4).clamp(-32768, 32767) * b) >> 16;
    for (d, orow) in o.chunks_mut(row_len).enumerate() {
        if ty.k == 2 {
            let (r0, r1) = (ty.idx[d * 2] * row_len, ty.idx[d * 2 + 1] * row_len);
            let (b0, b1) = (wy[d * 2], wy[d * 2 + 1]);
            let (s0, s1) = (&rows[r0..r0 + row_len], &rows[r1..r1 + row_len]);
            for ((v, &a), &b) in orow.iter_mut().zip(s0).zip(s1) {
                *v = ((hi(a, b0) + hi(b, b1) + 2) >> 2).clamp(0, 255) as u8;
            }
        } else {
            for (i, v) in orow.iter_mut().enumerate() {
                let s: i64 =
                    (0..ty.k).map(|j| rows[ty.idx[d * ty.k + j] * row_len + i] as i64 * wy[d * ty.k + j] as i64).sum();
                *v = ((s + (1 << 21)) >> 22).clamp(0, 255) as u8;
            }
        }
    }
}

/// [`resize_image`] for uint8 images: the fixed-point interpolations take the integer path.
pub fn resize_image_u8(x: &[u8], [h, w, ch]: [usize; 3], o: &mut [u8], [oh, ow]: [usize; 2], mode: Interp) {
    let (scale_x, scale_y) = (w as f64 / ow as f64, h as f64 / oh as f64);
    let fast = (scale_x - scale_x.round()).abs() < f64::EPSILON && (scale_y - scale_y.round()).abs() < f64::EPSILON;
    let area_like =
        mode == Interp::Area || (mode == Interp::Linear && fast && scale_x.round() == 2.0 && scale_y.round() == 2.0);
    if mode == Interp::Nearest || (area_like && scale_x >= 1.0 && scale_y >= 1.0) || mode == Interp::Area {
        resize_image(x, [h, w, ch], o, [oh, ow], mode);
        return;
    }
    separable_u8(x, [h, w, ch], o, &interp_taps(w, ow, mode), &interp_taps(h, oh, mode));
}

/// A float result stored as `T`: ints round half to even and saturate (OpenCV).
fn store<T: Elem>(s: f64) -> T {
    match T::DTYPE {
        DType::U8 => T::from_f64(s.round_ties_even().clamp(0.0, 255.0)),
        DType::I32 => T::from_f64(s.round_ties_even().clamp(i32::MIN as f64, i32::MAX as f64)),
        _ => T::from_f64(s),
    }
}

/// Integer-factor box average (OpenCV's fast area path).
fn area_fast<T: Elem>(x: &[T], [w, ch]: [usize; 2], o: &mut [T], [oh, ow]: [usize; 2], [sy, sx]: [usize; 2]) {
    let area = (sx * sy) as f64;
    for r in 0..oh {
        for d in 0..ow {
            for cc in 0..ch {
                let mut s = 0.0;
                for yy in 0..sy {
                    for xx in 0..sx {
                        s += x[((r * sy + yy) * w + d * sx + xx) * ch + cc].to_f64();
                    }
                }
                o[(r * ow + d) * ch + cc] = if T::DTYPE == DType::U8 && sx == 2 && sy == 2 {
                    T::from_f64(((s as i64 + 2) >> 2) as f64)
                } else {
                    store(s * (1.0 / area as f32) as f64)
                };
            }
        }
    }
}

/// Resizes one HWC image `x` (`h x w x ch`) into `o` (`oh x ow x ch`) as
/// OpenCV's `cv::resize` with interpolation `mode`.
pub fn resize_image<T: Elem>(x: &[T], [h, w, ch]: [usize; 3], o: &mut [T], [oh, ow]: [usize; 2], mode: Interp) {
    let (scale_x, scale_y) = (w as f64 / ow as f64, h as f64 / oh as f64);
    let (ix, iy) = (scale_x.round(), scale_y.round());
    let fast = (scale_x - ix).abs() < f64::EPSILON && (scale_y - iy).abs() < f64::EPSILON;
    let mut mode = mode;
    if mode == Interp::Linear && fast && ix == 2.0 && iy == 2.0 {
        mode = Interp::Area;
    }
    if mode == Interp::Area && scale_x >= 1.0 && scale_y >= 1.0 {
        if fast {
            area_fast(x, [w, ch], o, [oh, ow], [iy as usize, ix as usize]);
        } else {
            separable(x, [h, w, ch], o, &area_taps(w, ow), &area_taps(h, oh), false);
        }
        return;
    }
    let fixed = T::DTYPE == DType::U8 && mode != Interp::Nearest;
    separable(x, [h, w, ch], o, &interp_taps(w, ow, mode), &interp_taps(h, oh, mode), fixed);
}

/// Resize: nums = [n, h, w, c, oh, ow, interp].
pub fn resize_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let [_, h, w, ch, oh, ow] = [0, 1, 2, 3, 4, 5].map(|i| usz(c, i));
    let mode =
        Interp::from_code(c.def.name, c.nums[6] as i64).map_err(|e| OpFailure::new(ErrorKind::Value, e.to_string()))?;
    let (img, oimg) = (h * w * ch, oh * ow * ch);
    if k.in_dtype(0) == DType::U8 {
        let (x, o) = (k.input::<u8>(0), k.output::<u8>(0));
        crate::ops::par::chunked(o, oimg.max(1), |start, oc| {
            let b0 = start / oimg.max(1);
            for (bi, ob) in oc.chunks_mut(oimg.max(1)).enumerate() {
                let b = b0 + bi;
                resize_image_u8(&x[b * img..(b + 1) * img], [h, w, ch], ob, [oh, ow], mode);
            }
        });
        return Ok(());
    }
    with_dtype!(k.in_dtype(0), T, {
        let (x, o) = (k.input::<T>(0), k.output::<T>(0));
        crate::ops::par::chunked(o, oimg.max(1), |start, oc| {
            let b0 = start / oimg.max(1);
            for (bi, ob) in oc.chunks_mut(oimg.max(1)).enumerate() {
                let b = b0 + bi;
                resize_image(&x[b * img..(b + 1) * img], [h, w, ch], ob, [oh, ow], mode);
            }
        });
    });
    Ok(())
}
