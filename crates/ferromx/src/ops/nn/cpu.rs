//! Neural-network kernels over [`OpCall`]s.
//!
//! Layouts in [`OpCall::ints`] / `nums`:
//! - `FullyConnected`: ints `[rows, num_hidden, in, has_bias]`;
//! - `Activation`: ints `[UnaryOp code]` (the unary kernel of that function);
//! - `LeakyReLU`: ints `[act code]` ([`LeakyAct`]), nums `[slope]`; `prelu` reads
//!   `gamma` (input 1) broadcast to the data's shape;
//! - `softmax`, `log_softmax`: ints `[outer, n, inner]`, nums `[temperature]`;
//! - `softmax_ce_loss`, `softmax_cross_entropy`: none; they write a hidden
//!   second output, the probabilities the backward reads (MXNet's hidden
//!   outputs);
//! - `Dropout`: ints `[seed]`, nums `[p]`; hidden second output: the scaled mask;
//! - `LayerNorm`: ints `[outer, n, inner]`, nums `[eps]`; hidden outputs: the
//!   mean and the reciprocal standard deviation (keepdims shape);
//! - `Embedding`: none (rows of input 1 at the indices in input 0).

use crate::dtype::{DType, Elem};
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::ops::par::map1;
use crate::ops::random::Rng;
use crate::storage::{matmul, Kernel};
use crate::{with_dtype, with_float_dtype};

type KResult = std::result::Result<(), OpFailure>;

/// `out = x · wᵀ (+ bias)`: one gemm into the bias rows.
pub(super) fn fc_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (rows, nh, inp, has_bias) = (c.us(0), c.us(1), c.us(2), c.ints[3] != 0);
    macro_rules! run {
        ($t:ty) => {{
            let (x, w, o) = (k.input::<$t>(0), k.input::<$t>(1), k.output::<$t>(0));
            if has_bias {
                let b = k.input::<$t>(2);
                for r in 0..rows {
                    o[r * nh..(r + 1) * nh].copy_from_slice(b);
                }
            }
            matmul::<$t>(rows, nh, inp, o, x, false, w, true, has_bias);
        }};
    }
    match k.out_dtype(0) {
        DType::F64 => run!(f64),
        _ => run!(f32),
    }
    Ok(())
}

/// The `LeakyReLU` variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LeakyAct {
    Leaky,
    Elu,
    Selu,
    Gelu,
    Prelu,
}

impl LeakyAct {
    pub(super) fn parse(s: &str) -> Option<LeakyAct> {
        Some(match s {
            "leaky" => LeakyAct::Leaky,
            "elu" => LeakyAct::Elu,
            "selu" => LeakyAct::Selu,
            "gelu" => LeakyAct::Gelu,
            "prelu" => LeakyAct::Prelu,
            _ => return None,
        })
    }
    fn from_code(c: i64) -> LeakyAct {
        [LeakyAct::Leaky, LeakyAct::Elu, LeakyAct::Selu, LeakyAct::Gelu, LeakyAct::Prelu][c.clamp(0, 4) as usize]
    }
}

pub(super) const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
pub(super) const SELU_LAMBDA: f64 = 1.050_700_987_355_480_5;

/// `LeakyReLU` of one value (computed in f64).
fn leaky(act: LeakyAct, v: f64, slope: f64) -> f64 {
    match act {
        LeakyAct::Leaky | LeakyAct::Prelu => {
            if v > 0.0 {
                v
            } else {
                v * slope
            }
        }
        LeakyAct::Elu => {
            if v > 0.0 {
                v
            } else {
                slope * v.exp_m1()
            }
        }
        LeakyAct::Selu => SELU_LAMBDA * if v > 0.0 { v } else { SELU_ALPHA * v.exp_m1() },
        LeakyAct::Gelu => 0.5 * v * (1.0 + libm::erf(v * std::f64::consts::FRAC_1_SQRT_2)),
    }
}

/// The `LeakyReLU` family, elementwise (prelu: slope from `gamma`, broadcast).
pub(super) fn leaky_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (act, slope) = (LeakyAct::from_code(c.ints[0]), c.nums[0]);
    with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (x, o) = (k.input::<T>(0), k.output::<T>(0));
            if act == LeakyAct::Prelu {
                let oshape = k.out_shape(0).clone();
                let gs = k.in_shape(1).broadcast_strides(&oshape);
                let g = k.input::<T>(1);
                crate::shape::for_each_strided(&oshape, &gs, 0, o.len(), |i, gi| {
                    o[i] = T::from_f64(leaky(act, x[i].to_f64(), g[gi].to_f64()));
                });
            } else {
                map1(x, o, move |v: T| T::from_f64(leaky(act, v.to_f64(), slope)));
            }
        },
        unreachable!("cast to float before the push")
    );
    Ok(())
}

/// Softmax (or log-softmax) of one row `x[base + j*inner]`, written to `o`.
pub(super) fn softmax_row<T: Elem>(x: &[T], o: &mut [T], base: usize, n: usize, inner: usize, temp: f64, log: bool) {
    let mut mx = f64::NEG_INFINITY;
    for j in 0..n {
        mx = mx.max(x[base + j * inner].to_f64() / temp);
    }
    let mut sum = 0.0;
    for j in 0..n {
        sum += (x[base + j * inner].to_f64() / temp - mx).exp();
    }
    let lse = sum.ln();
    for j in 0..n {
        let z = x[base + j * inner].to_f64() / temp - mx;
        o[base + j * inner] = T::from_f64(if log { z - lse } else { (z - lse).exp() });
    }
}

/// The max of a float32 row, in eight lanes (NaN-ignoring, as `f32::max`).
fn row_max_f32(xr: &[f32]) -> f32 {
    const L: usize = 8;
    let mut m = [f32::NEG_INFINITY; L];
    let xc = xr.chunks_exact(L);
    let tail = xc.remainder();
    for c in xc {
        for i in 0..L {
            m[i] = m[i].max(c[i]);
        }
    }
    tail.iter().fold(m.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)), |a, &b| a.max(b))
}

/// `o = exp(scale * x - mx)` over a float32 row, returning the sum (eight
/// f32 lanes, added in f64), with the vectorising `exp` of the unary kernels.
fn row_exp_sum_f32(xr: &[f32], o: &mut [f32], scale: f32, mx: f32) -> f64 {
    const L: usize = 8;
    let mut s = [0.0f32; L];
    let mut oc = o.chunks_exact_mut(L);
    let xc = xr.chunks_exact(L);
    let tail = xc.remainder();
    for (po, xi) in (&mut oc).zip(xc) {
        for i in 0..L {
            let e = crate::ops::unary::exp_f32(xi[i] * scale - mx);
            po[i] = e;
            s[i] += e;
        }
    }
    let mut sum: f64 = s.iter().map(|&v| v as f64).sum();
    for (po, &xi) in oc.into_remainder().iter_mut().zip(tail) {
        let e = crate::ops::unary::exp_f32(xi * scale - mx);
        *po = e;
        sum += e as f64;
    }
    sum
}

/// Softmax (or log-softmax) of one contiguous float32 row at temperature `t`.
fn softmax_row_f32(xr: &[f32], o: &mut [f32], t: f32, log: bool) {
    let scale = 1.0 / t;
    let mx = if t == 1.0 { row_max_f32(xr) } else { xr.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b * scale)) };
    let sum = row_exp_sum_f32(xr, o, scale, mx);
    if log {
        let lse = sum.ln() as f32;
        for (po, &xi) in o.iter_mut().zip(xr) {
            *po = (xi * scale - mx) - lse;
        }
    } else {
        let inv = (1.0 / sum) as f32;
        for po in o.iter_mut() {
            *po *= inv;
        }
    }
}

/// `softmax` and `log_softmax` over the middle axis of `(outer, n, inner)`.
pub(super) fn softmax_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (outer, n, inner, t) = (c.us(0), c.us(1), c.us(2), c.nums[0]);
    let log = c.def.name == "log_softmax";
    if k.in_dtype(0) == DType::F32 && inner == 1 && n > 0 {
        use rayon::prelude::*;
        let (xs, o) = (k.input::<f32>(0), k.output::<f32>(0));
        let rows = |(xr, or): (&[f32], &mut [f32])| softmax_row_f32(xr, or, t as f32, log);
        if outer >= 64 && outer * n >= 1 << 15 {
            xs.par_chunks(n).zip(o.par_chunks_mut(n)).for_each(rows);
        } else {
            xs.chunks(n).zip(o.chunks_mut(n)).for_each(rows);
        }
        return Ok(());
    }
    with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (xs, o) = (k.input::<T>(0), k.output::<T>(0));
            let run = |o: &mut [T], start_outer: usize| {
                let rows = o.len() / (n * inner);
                let xb = &xs[start_outer * n * inner..];
                for r in 0..rows {
                    for i in 0..inner {
                        softmax_row(xb, o, r * n * inner + i, n, inner, t, log);
                    }
                }
            };
            if outer >= 64 && outer * n * inner >= 1 << 15 {
                use rayon::prelude::*;
                let rows_per = outer.div_ceil(rayon::current_num_threads() * 4).max(1);
                o.par_chunks_mut(rows_per * n * inner).enumerate().for_each(|(c, oc)| run(oc, c * rows_per));
            } else {
                run(o, 0);
            }
        },
        unreachable!("cast to float before the push")
    );
    Ok(())
}

/// The fused softmax cross-entropy: per-sample losses (`softmax_ce_loss`) or
/// their sum (`softmax_cross_entropy`), and the probabilities (output 1).
///
/// The loss of a row is `log(sum(exp(x - max))) - (x[label] - max)`, which is
/// `-log_softmax(x)[label]` as MXNet's Gluon loss computes it (no clamp of
/// tiny probabilities).
pub(super) fn softmax_ce_kernel(c: &OpCall, k: &Kernel) -> KResult {
    use rayon::prelude::*;
    let name = c.def.name;
    let total = name == "softmax_cross_entropy";
    let (n, cl) = (k.in_shape(0).dims()[0], k.in_shape(0).dims()[1]);
    let labels = ce_labels(name, k, 1, n, cl)?;
    let write = |losses: Vec<f64>, o: &mut dyn FnMut(usize, f64)| {
        if total {
            o(0, losses.iter().sum());
        } else {
            for (i, l) in losses.into_iter().enumerate() {
                o(i, l);
            }
        }
    };
    if k.in_dtype(0) == DType::F32 {
        let (x, o, p) = (k.input::<f32>(0), k.output::<f32>(0), k.output::<f32>(1));
        let losses: Vec<f64> = p
            .par_chunks_mut(cl.max(1))
            .zip(x.par_chunks(cl.max(1)))
            .zip(labels.par_iter())
            .map(|((pr, xr), &l)| ce_row_f32(xr, pr, l))
            .collect();
        write(losses, &mut |i, v| o[i] = v as f32);
        return Ok(());
    }
    with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (x, o, p) = (k.input::<T>(0), k.output::<T>(0), k.output::<T>(1));
            // Rows in parallel; one exp per element (stored, then scaled).
            let losses: Vec<f64> = p
                .par_chunks_mut(cl.max(1))
                .zip(x.par_chunks(cl.max(1)))
                .zip(labels.par_iter())
                .map(|((pr, xr), &l)| {
                    let mx = xr.iter().fold(f64::NEG_INFINITY, |m, v| m.max(v.to_f64()));
                    let mut sum = 0.0;
                    for (o, v) in pr.iter_mut().zip(xr) {
                        let e = (v.to_f64() - mx).exp();
                        sum += e;
                        *o = T::from_f64(e);
                    }
                    let inv = 1.0 / sum;
                    for o in pr.iter_mut() {
                        *o = T::from_f64(o.to_f64() * inv);
                    }
                    sum.ln() - (xr[l].to_f64() - mx)
                })
                .collect();
            write(losses, &mut |i, v| o[i] = T::from_f64(v));
        },
        unreachable!("cast to float before the push")
    );
    Ok(())
}

/// The labels of a softmax cross-entropy (input `at`) as row indices,
/// failing the op on one that is not an integer class in `0..cl`.
fn ce_labels(name: &str, k: &Kernel, at: usize, n: usize, cl: usize) -> std::result::Result<Vec<usize>, OpFailure> {
    let labels: Vec<f64> =
        with_dtype!(k.in_dtype(at), L, k.input::<L>(at).iter().take(n).map(|v| v.to_f64()).collect());
    labels
        .iter()
        .map(|&l| {
            if l < 0.0 || l as usize >= cl || l.fract() != 0.0 || l.is_nan() {
                Err(OpFailure::new(ErrorKind::Index, format!("{name}: label {l} out of range for {cl} classes")))
            } else {
                Ok(l as usize)
            }
        })
        .collect()
}

/// One float32 row of the fused softmax cross-entropy: writes the
/// probabilities, returns the loss. Eight lanes for the max and the sum, and
/// the vectorising `exp` of the unary kernels, so the row runs at memory speed
/// rather than at f64 `exp`'s.
fn ce_row_f32(xr: &[f32], pr: &mut [f32], l: usize) -> f64 {
    let mx = row_max_f32(xr);
    let sum = row_exp_sum_f32(xr, pr, 1.0, mx);
    let inv = (1.0 / sum) as f32;
    for po in pr.iter_mut() {
        *po *= inv;
    }
    sum.ln() - (xr[l] - mx) as f64
}

/// The gradient of the fused softmax cross-entropy in one pass:
/// `dx = (prob - onehot(label)) * g`, with `g` per row (`softmax_ce_loss`)
/// or one value (`softmax_cross_entropy`). Inputs: prob, label, g; output dx.
/// Rounds as the unfused `(prob - onehot) * g` does (a subtract, then a
/// multiply, each in the element type).
pub(super) fn softmax_ce_backward(k: &Kernel, name: &str) -> KResult {
    use rayon::prelude::*;
    let (n, cl) = (k.in_shape(0).dims()[0], k.in_shape(0).dims()[1]);
    let labels = ce_labels(name, k, 1, n, cl)?;
    with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (p, g, d) = (k.input::<T>(0), k.input::<T>(2), k.output::<T>(0));
            let per_row = g.len() == n;
            d.par_chunks_mut(cl.max(1)).zip(p.par_chunks(cl.max(1))).enumerate().for_each(|(r, (dr, pr))| {
                let gr = g[if per_row { r } else { 0 }].to_f64();
                for (o, &v) in dr.iter_mut().zip(pr) {
                    *o = T::from_f64(v.to_f64() * gr);
                }
                let l = labels[r];
                dr[l] = T::from_f64(T::from_f64(pr[l].to_f64() - 1.0).to_f64() * gr);
            });
        },
        unreachable!("cast to float before the push")
    );
    Ok(())
}

/// Inverted dropout: output 1 is the mask (`1/(1-p)` kept, 0 dropped, drawn
/// from the call's seed), output 0 the input times the mask.
pub(super) fn dropout_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (seed, p) = (c.ints[0] as u64, c.nums[0]);
    let mut rng = Rng::new(seed);
    with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (x, o, m) = (k.input::<T>(0), k.output::<T>(0), k.output::<T>(1));
            let (pt, scale, zero) = (T::from_f64(p), T::from_f64(1.0 / (1.0 - p)), T::from_f64(0.0));
            for ((ov, mv), &xv) in o.iter_mut().zip(m.iter_mut()).zip(x) {
                *mv = if T::from_f64(rng.uniform()) >= pt { scale } else { zero };
                *ov = T::from_f64(xv.to_f64() * mv.to_f64());
            }
        },
        unreachable!("float inputs only")
    );
    Ok(())
}

/// Layer normalisation over the middle axis of `(outer, n, inner)`, with the
/// mean and the reciprocal standard deviation as hidden outputs 1 and 2.
pub(super) fn layer_norm_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (outer, n, inner, eps) = (c.us(0), c.us(1), c.us(2), c.nums[0]);
    with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (x, g, b) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2));
            let (o, mo, ro) = (k.output::<T>(0), k.output::<T>(1), k.output::<T>(2));
            for r in 0..outer {
                for i in 0..inner {
                    let at = |j: usize| (r * n + j) * inner + i;
                    let mean = (0..n).map(|j| x[at(j)].to_f64()).sum::<f64>() / n as f64;
                    let var = (0..n).map(|j| (x[at(j)].to_f64() - mean).powi(2)).sum::<f64>() / n as f64;
                    let rstd = 1.0 / (var + eps).sqrt();
                    for j in 0..n {
                        let v = (x[at(j)].to_f64() - mean) * rstd;
                        o[at(j)] = T::from_f64(v * g[j].to_f64() + b[j].to_f64());
                    }
                    mo[r * inner + i] = T::from_f64(mean);
                    ro[r * inner + i] = T::from_f64(rstd);
                }
            }
        },
        unreachable!("float inputs only")
    );
    Ok(())
}

/// `Embedding`: rows of the table (input 1) at the indices in input 0 (clipped).
pub(super) fn embedding_kernel(_c: &OpCall, k: &Kernel) -> KResult {
    let (rows, dim) = (k.in_shape(1).dims()[0], k.in_shape(1).dims()[1]);
    let ids: Vec<usize> = with_dtype!(k.in_dtype(0), I, {
        k.input::<I>(0).iter().map(|v| (v.to_f64().trunc() as i64).clamp(0, rows.max(1) as i64 - 1) as usize).collect()
    });
    with_dtype!(k.in_dtype(1), T, {
        let (w, o) = (k.input::<T>(1), k.output::<T>(0));
        for (r, &i) in ids.iter().enumerate() {
            o[r * dim..(r + 1) * dim].copy_from_slice(&w[i * dim..(i + 1) * dim]);
        }
    });
    Ok(())
}
