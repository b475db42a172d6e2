//! Random kernels over [`OpCall`]s: each call carries the seed drawn at push
//! time in `ints[0]`.

use super::{Dist, Rng};
use crate::dtype::Elem;
use crate::opdef::OpCall;
use crate::storage::Kernel;
use crate::with_dtype;

type KResult = std::result::Result<(), ferromx_engine::OpFailure>;

/// The kernel of the `_random_*` samplers: ints `[seed]` (`_random_randint`:
/// `[seed, low, high]`), nums the distribution's two parameters.
pub(super) fn sample_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (dist, mut rng) = (Dist::of_call(c), Rng::new(c.ints[0] as u64));
    if let Some(msg) = dist.invalid() {
        return Err(ferromx_engine::OpFailure::new(ferromx_engine::ErrorKind::Value, msg));
    }
    with_dtype!(k.out_dtype(0), T, {
        for v in k.output::<T>(0).iter_mut() {
            let x = match dist {
                Dist::Uniform(l, h) => l + (h - l) * rng.uniform(),
                Dist::Normal(m, s) => m + s * rng.normal(),
                Dist::RandInt(l, h) => (l + (rng.next_u64() % (h - l) as u64) as i64) as f64,
                Dist::Exponential(lam) => -(1.0 - rng.uniform()).ln() / lam,
                Dist::Gamma(a, b) => rng.gamma(a) * b,
                Dist::Poisson(l) => rng.poisson(l),
                Dist::NegBinomial(k, p) => rng.neg_binomial(k, p),
                Dist::GenNegBinomial(mu, alpha) => rng.gen_neg_binomial(mu, alpha),
            };
            *v = T::from_f64(x);
        }
    });
    Ok(())
}

/// The kernel of `_shuffle`: ints `[seed]`; rows of the first axis permuted.
pub(super) fn shuffle_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let d = k.in_shape(0).dims();
    let n = d.first().copied().unwrap_or(1);
    let inner = d.iter().product::<usize>() / n.max(1);
    let mut rng = Rng::new(c.ints[0] as u64);
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        perm.swap(i, j);
    }
    with_dtype!(k.in_dtype(0), T, {
        let (s, o) = (k.input::<T>(0), k.output::<T>(0));
        for (i, &p) in perm.iter().enumerate() {
            o[i * inner..(i + 1) * inner].copy_from_slice(&s[p * inner..(p + 1) * inner]);
        }
    });
    Ok(())
}

/// The kernel of `_sample_multinomial`: ints `[seed, num]`; `num` draws per
/// row of the last axis of input 0.
pub(super) fn multinomial_kernel(c: &OpCall, kk: &Kernel) -> KResult {
    let (num, mut rng) = (c.us(1), Rng::new(c.ints[0] as u64));
    let k = kk.in_shape(0).dims().last().copied().unwrap_or(1);
    let rows = kk.in_shape(0).size() / k.max(1);
    let probs: Vec<f64> = with_dtype!(kk.in_dtype(0), T, kk.input::<T>(0).iter().map(|v| v.to_f64()).collect());
    with_dtype!(kk.out_dtype(0), T, {
        let o = kk.output::<T>(0);
        for r in 0..rows {
            let row = &probs[r * k..(r + 1) * k];
            for s in 0..num {
                let u = rng.uniform() * row.iter().sum::<f64>();
                let mut acc = 0.0;
                let mut pick = k - 1;
                for (i, &pv) in row.iter().enumerate() {
                    acc += pv;
                    if u < acc {
                        pick = i;
                        break;
                    }
                }
                o[r * num + s] = T::from_f64(pick as f64);
            }
        }
    });
    Ok(())
}

/// The kernel of `_sample_per_element`: ints `[seed, kind]` (gamma, poisson,
/// negative_binomial, generalized_negative_binomial); row `i` of the output
/// draws from the parameters at flat position `i` of the inputs.
pub(super) fn per_element_kernel(c: &OpCall, k: &Kernel) -> KResult {
    let (mut rng, kind) = (Rng::new(c.ints[0] as u64), c.ints[1]);
    let np = k.n_inputs();
    let rows = k.in_shape(0).size();
    let per = k.out_shape(0).size() / rows.max(1);
    let read =
        |i: usize| -> Vec<f64> { with_dtype!(k.in_dtype(i), T, k.input::<T>(i).iter().map(|v| v.to_f64()).collect()) };
    let ps: Vec<Vec<f64>> = (0..np).map(read).collect();
    let bad = |msg: String| ferromx_engine::OpFailure::new(ferromx_engine::ErrorKind::Value, msg);
    with_dtype!(k.out_dtype(0), T, {
        let o = k.output::<T>(0);
        for r in 0..rows {
            let (a, b) = (ps[0][r], if np > 1 { ps[1][r] } else { 0.0 });
            for j in 0..per {
                let x = match kind {
                    0 => {
                        if !(a.is_finite() && b.is_finite() && a > 0.0 && b > 0.0) {
                            return Err(bad(format!("alpha and beta must be positive, got {a} and {b} at {r}")));
                        }
                        rng.gamma(a) * b
                    }
                    1 => {
                        if !(a.is_finite() && a >= 0.0) {
                            return Err(bad(format!("lam must be non-negative, got {a} at {r}")));
                        }
                        rng.poisson(a)
                    }
                    2 => {
                        if !(a.is_finite() && a > 0.0 && b > 0.0 && b <= 1.0) {
                            return Err(bad(format!("need k > 0 and 0 < p <= 1, got {a} and {b} at {r}")));
                        }
                        rng.neg_binomial(a, b)
                    }
                    _ => {
                        if !(a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0) {
                            return Err(bad(format!("need mu >= 0 and alpha >= 0, got {a} and {b} at {r}")));
                        }
                        rng.gen_neg_binomial(a, b)
                    }
                };
                o[r * per + j] = T::from_f64(x);
            }
        }
    });
    Ok(())
}
