//! CPU kernels of the normalisation operators. Data is viewed as
//! `(outer, channels, inner)` around the normalised axis.

use super::BnDims;
use crate::dtype::Elem;
use crate::engine::OpFailure;
use crate::opdef::OpCall;
use crate::ops::conv::cpu::{with_conv_dtype, ConvElem};
use crate::ops::par::{chunked, PAR_MIN};
use crate::storage::Kernel;

/// `Σ f(a[i], b[i])` over two equally long rows: 8 lanes of `T` per
/// 4096-element block (vectorisable), the blocks added in f64.
#[inline]
fn row_sum<T: ConvElem>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> f64 {
    let mut s = 0.0;
    for (ab, bb) in a.chunks(4096).zip(b.chunks(4096)) {
        let mut acc = [T::zero(); 8];
        let (ca, cb) = (ab.chunks_exact(8), bb.chunks_exact(8));
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (xa, xb) in ca.zip(cb) {
            for ((acc, &u), &v) in acc.iter_mut().zip(xa).zip(xb) {
                *acc += f(u, v);
            }
        }
        let mut t = T::zero();
        for (&u, &v) in ra.iter().zip(rb) {
            t += f(u, v);
        }
        for v in acc {
            t += v;
        }
        s += Elem::to_f64(t);
    }
    s
}

/// Per-channel pairs of sums `f(c, base)` over the rows `base = (o·C + c)·inner`;
/// channels split over the cores when the data is large.
fn per_channel(d: &BnDims, f: impl Fn(usize, usize) -> [f64; 2] + Sync + Send) -> Vec<[f64; 2]> {
    let mut s = vec![[0.0f64; 2]; d.c];
    let grain = if d.outer * d.c * d.inner >= PAR_MIN { 1 } else { d.c + 1 };
    chunked(&mut s, grain, |c0, part| {
        for (j, acc) in part.iter_mut().enumerate() {
            let c = c0 + j;
            for o in 0..d.outer {
                let [a, b] = f(c, (o * d.c + c) * d.inner);
                acc[0] += a;
                acc[1] += b;
            }
        }
    });
    s
}

/// `out[i] = f(c, i, segment)` over row segments: each call gets one piece of
/// one channel's row (`c`) starting at flat index `i`.
fn rows_map<T: Send>(d: &BnDims, out: &mut [T], f: impl Fn(usize, usize, &mut [T]) + Sync + Send) {
    let inner = d.inner.max(1);
    chunked(out, 1 << 15, |s, o| {
        let mut i = 0;
        while i < o.len() {
            let g = s + i;
            let row = g / inner;
            let end = ((row + 1) * inner - s).min(o.len());
            f(row % d.c.max(1), g, &mut o[i..end]);
            i = end;
        }
    });
}

/// `out = (x - mean) * invstd * gamma + beta`, with the statistics of the
/// batch (`use_batch`) or the moving ones; writes mean and invstd.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bn_forward<T: ConvElem>(
    d: &BnDims,
    x: &[T],
    gamma: &[T],
    beta: &[T],
    mm: &[T],
    mv: &[T],
    out: &mut [T],
    mean: &mut [T],
    invstd: &mut [T],
) {
    let f = |v: T| Elem::to_f64(v);
    let t = |v: f64| <T as Elem>::from_f64(v);
    if d.use_batch {
        let m = (d.outer * d.inner).max(1) as f64;
        let inner = d.inner;
        let mu: Vec<f64> = per_channel(d, |_, b| {
            let r = &x[b..b + inner];
            [row_sum(r, r, |v, _| v), 0.0]
        })
        .iter()
        .map(|s| s[0] / m)
        .collect();
        let var = per_channel(d, |c, b| {
            let mc = t(mu[c]);
            let r = &x[b..b + inner];
            [row_sum(r, r, |v, _| (v - mc) * (v - mc)), 0.0]
        });
        for c in 0..d.c {
            mean[c] = t(mu[c]);
            invstd[c] = t(1.0 / (var[c][0] / m + d.eps).sqrt());
        }
    } else {
        for c in 0..d.c {
            mean[c] = mm[c];
            invstd[c] = t(1.0 / (f(mv[c]) + d.eps).sqrt());
        }
    }
    let (mean, invstd) = (&*mean, &*invstd);
    let scale: Vec<T> = (0..d.c).map(|c| if d.fix_gamma { invstd[c] } else { gamma[c] * invstd[c] }).collect();
    rows_map(d, out, |c, g, seg| {
        let (mu, sc, b) = (mean[c], scale[c], beta[c]);
        let n = seg.len();
        for (v, &xv) in seg.iter_mut().zip(&x[g..g + n]) {
            *v = (xv - mu) * sc + b;
        }
    });
}

/// Data, gamma and beta gradients; with `update`, the moving statistics too.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bn_backward<T: ConvElem>(
    d: &BnDims,
    dy: &[T],
    x: &[T],
    gamma: &[T],
    mean: &[T],
    invstd: &[T],
    dx: &mut [T],
    dgamma: &mut [T],
    dbeta: &mut [T],
) {
    let f = |v: T| Elem::to_f64(v);
    let t = |v: f64| <T as Elem>::from_f64(v);
    let inner = d.inner;
    let sums = per_channel(d, |c, b| {
        let mu = mean[c];
        let (r, xr) = (&dy[b..b + inner], &x[b..b + inner]);
        [row_sum(r, r, |g, _| g), row_sum(r, xr, |g, v| g * (v - mu))]
    });
    let sdy: Vec<f64> = sums.iter().map(|s| s[0]).collect();
    let sdyx: Vec<f64> = sums.iter().zip(invstd).map(|(s, &is)| s[1] * f(is)).collect();
    let m = (d.outer * d.inner).max(1) as f64;
    // dx = a·(dy - mean(dy) - xhat·mean(dy·xhat)) = a·dy + q·(x - mu) - a·mean(dy).
    let k: Vec<(T, T, T, T)> = (0..d.c)
        .map(|c| {
            let g = if d.fix_gamma { 1.0 } else { f(gamma[c]) };
            let a = g * f(invstd[c]);
            if d.use_batch {
                let q = -a * f(invstd[c]) * sdyx[c] / m;
                (t(a), t(q), t(-a * sdy[c] / m), mean[c])
            } else {
                (t(a), T::zero(), T::zero(), mean[c])
            }
        })
        .collect();
    rows_map(d, dx, |c, g, seg| {
        let (a, q, r, mu) = k[c];
        let n = seg.len();
        for ((v, &gv), &xv) in seg.iter_mut().zip(&dy[g..g + n]).zip(&x[g..g + n]) {
            *v = a * gv + q * (xv - mu) + r;
        }
    });
    for c in 0..d.c {
        dgamma[c] = if d.fix_gamma { T::zero() } else { t(sdyx[c]) };
        dbeta[c] = t(sdy[c]);
    }
}

/// `moving = moving * momentum + batch * (1 - momentum)` for mean and (biased) variance.
pub(crate) fn bn_update<T: ConvElem>(d: &BnDims, mean: &[T], invstd: &[T], mm: &mut [T], mv: &mut [T]) {
    let f = |v: T| Elem::to_f64(v);
    let t = |v: f64| <T as Elem>::from_f64(v);
    let mo = d.momentum;
    for c in 0..d.c {
        let is = f(invstd[c]);
        let var = 1.0 / (is * is) - d.eps;
        mm[c] = t(f(mm[c]) * mo + f(mean[c]) * (1.0 - mo));
        mv[c] = t(f(mv[c]) * mo + var * (1.0 - mo));
    }
}

/// `BatchNorm`: inputs data, gamma, beta, moving_mean, moving_var; outputs out, mean, invstd.
pub(crate) fn bn_fwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let d = BnDims::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let ins: Vec<&[T]> = (0..5).map(|i| k.input::<T>(i)).collect();
        bn_forward::<T>(&d, ins[0], ins[1], ins[2], ins[3], ins[4], k.output(0), k.output(1), k.output(2));
    });
    Ok(())
}

/// `_backward_BatchNorm`: inputs out_grad, data, gamma, mean, invstd; outputs
/// the data, gamma and beta gradients and, when updating, moving_mean and moving_var (in place).
pub(crate) fn bn_bwd(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let d = BnDims::from_nums(&call.nums);
    with_conv_dtype!(k.in_dtype(0), T, {
        let ins: Vec<&[T]> = (0..5).map(|i| k.input::<T>(i)).collect();
        bn_backward::<T>(&d, ins[0], ins[1], ins[2], ins[3], ins[4], k.output(0), k.output(1), k.output(2));
        if d.update {
            bn_update::<T>(&d, ins[3], ins[4], k.output(3), k.output(4));
        }
    });
    Ok(())
}
