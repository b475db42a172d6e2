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

/// `softmax` and `log_softmax` over the middle axis of `(outer, n, inner)`.
pub(super) fn softmax_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (outer, n, inner, t) = (c.us(0), c.us(1), c.us(2), c.nums[0]);
    let log = c.def.name == "log_softmax";
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
pub(super) fn softmax_ce_kernel(c: &OpCall, k: &Kernel) -> KResult {
    use rayon::prelude::*;
    let name = c.def.name;
    let total = name == "softmax_cross_entropy";
    let (n, cl) = (k.in_shape(0).dims()[0], k.in_shape(0).dims()[1]);
    let labels: Vec<f64> = with_dtype!(k.in_dtype(1), L, k.input::<L>(1).iter().map(|v| v.to_f64()).collect());
    if let Some(&l) = labels.iter().take(n).find(|&&l| l < 0.0 || l as usize >= cl || l.fract() != 0.0) {
        return Err(OpFailure::new(ErrorKind::Index, format!("{name}: label {l} out of range for {cl} classes")));
    }
    with_float_dtype!(
        k.in_dtype(0),
        T,
        {
            let (x, o, p) = (k.input::<T>(0), k.output::<T>(0), k.output::<T>(1));
            // Rows in parallel; one exp per element (the exponentials are stored, then scaled).
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
                    -pr[l as usize].to_f64().max(1e-30).ln()
                })
                .collect();
            if total {
                o[0] = T::from_f64(losses.iter().sum());
            } else {
                for (o, l) in o.iter_mut().zip(&losses) {
                    *o = T::from_f64(*l);
                }
            }
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
