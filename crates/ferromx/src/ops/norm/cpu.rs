//! CPU kernels of the normalisation operators. Data is viewed as
//! `(outer, channels, inner)` around the normalised axis.

use super::BnDims;
use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::ops::conv::cpu::{with_conv_dtype, ConvElem};
use crate::ops::par::chunked;
use crate::storage::Kernel;
use crate::DType;

/// Per-channel sums of `f(channel, x)` in f64.
fn channel_sums<T: ConvElem>(d: &BnDims, x: &[T], f: impl Fn(usize, f64) -> f64) -> Vec<f64> {
    let mut s = vec![0.0f64; d.c];
    for o in 0..d.outer {
        for (c, acc) in s.iter_mut().enumerate() {
            let base = (o * d.c + c) * d.inner;
            *acc += x[base..base + d.inner].iter().map(|&v| f(c, Elem::to_f64(v))).sum::<f64>();
        }
    }
    s
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
        let mu: Vec<f64> = channel_sums(d, x, |_, v| v).iter().map(|s| s / m).collect();
        let var: Vec<f64> = channel_sums(d, x, |c, v| (v - mu[c]) * (v - mu[c])).iter().map(|s| s / m).collect();
        for c in 0..d.c {
            mean[c] = t(mu[c]);
            invstd[c] = t(1.0 / (var[c] + d.eps).sqrt());
        }
    } else {
        for c in 0..d.c {
            mean[c] = mm[c];
            invstd[c] = t(1.0 / (f(mv[c]) + d.eps).sqrt());
        }
    }
    let (mean, invstd) = (&*mean, &*invstd);
    let scale: Vec<T> = (0..d.c).map(|c| if d.fix_gamma { invstd[c] } else { gamma[c] * invstd[c] }).collect();
    chunked(out, 1 << 15, |s, o| {
        for (j, v) in o.iter_mut().enumerate() {
            let i = s + j;
            let c = (i / d.inner) % d.c;
            *v = (x[i] - mean[c]) * scale[c] + beta[c];
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
    let mut sdy = vec![0.0f64; d.c];
    let mut sdyx = vec![0.0f64; d.c];
    for o in 0..d.outer {
        for c in 0..d.c {
            let base = (o * d.c + c) * d.inner;
            let (mu, is) = (f(mean[c]), f(invstd[c]));
            for i in base..base + d.inner {
                let g = f(dy[i]);
                sdy[c] += g;
                sdyx[c] += g * (f(x[i]) - mu) * is;
            }
        }
    }
    let m = (d.outer * d.inner).max(1) as f64;
    let k: Vec<(T, T, T, T)> = (0..d.c)
        .map(|c| {
            let g = if d.fix_gamma { 1.0 } else { f(gamma[c]) };
            let a = g * f(invstd[c]);
            if d.use_batch {
                (t(a), t(sdy[c] / m), t(sdyx[c] / m), invstd[c])
            } else {
                (t(a), T::zero(), T::zero(), invstd[c])
            }
        })
        .collect();
    chunked(dx, 1 << 15, |s, o| {
        for (j, v) in o.iter_mut().enumerate() {
            let i = s + j;
            let c = (i / d.inner) % d.c;
            let (a, mdy, mdyx, is) = k[c];
            let xhat = (x[i] - mean[c]) * is;
            *v = a * (dy[i] - mdy - xhat * mdyx);
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
