//! `hawkesll`: the log likelihood of a marked self-exciting (Hawkes) process with
//! exponential kernels, per sample of a batch, as MXNet's `_contrib_hawkesll`; and its
//! backward. Why here: one sequential scan per sample (the state of each mark decays and
//! jumps at each event), so the kernels loop over events and split samples over cores.
//!
//! Shapes: `mu` (N, K) background intensities, `alpha` (K,) branching ratios, `beta` (K,)
//! decays, `state` (N, K) initial states, `lags` (N, T) inter-arrival times, `marks` (N, T)
//! integer marks, `valid_length` (N,) events per sample, `max_time` (N,) end of the
//! observation window. Outputs: the log likelihood (N,) and the final states (N, K).
//! MXNet's gradient flows to `mu`, `alpha` and `beta` from the log likelihood only.

use super::{apply, DEFS};
use crate::dtype::DType;
use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{Attrs, GradArgs, Meta, OpCall, OpDef};
use crate::shape::Shape;
use crate::storage::Kernel;
use crate::with_dtype;

/// Index of the backward operator in [`DEFS`].
pub(super) const BACKWARD_HAWKESLL: usize = 8;

/// Checks the eight operands; returns `(N, K)`.
fn dims(def: &OpDef, ins: &[Meta]) -> Result<(usize, usize)> {
    let [mu, alpha, beta, state, lags, marks, valid, max_time] = ins else {
        return Err(Error::value(def.name, "needs mu, alpha, beta, state, lags, marks, valid_length, max_time"));
    };
    let shapes =
        [&mu.shape, &alpha.shape, &beta.shape, &state.shape, &lags.shape, &marks.shape, &valid.shape, &max_time.shape];
    let bad = |m: &str| Err(Error::shape(def.name, &shapes, m));
    let (md, ld) = (mu.shape.dims(), lags.shape.dims());
    if md.len() != 2 || ld.len() != 2 {
        return bad("mu must be (N, K) and lags (N, T)");
    }
    let (n, k, t) = (ld[0], md[1], ld[1]);
    let ok = md[0] == n
        && alpha.shape.dims() == [k]
        && beta.shape.dims() == [k]
        && state.shape.dims() == [n, k]
        && marks.shape.dims() == [n, t]
        && valid.shape.dims() == [n]
        && max_time.shape.dims() == [n];
    if !ok {
        return bad("expected alpha, beta (K,), state (N, K), marks (N, T), valid_length and max_time (N,)");
    }
    if !mu.dtype.is_float() || [alpha, beta, state, lags, valid, max_time].iter().any(|m| m.dtype != mu.dtype) {
        return Err(Error::dtype(
            def.name,
            "mu, alpha, beta, state, lags, valid_length and max_time must share one float dtype",
        ));
    }
    if marks.dtype.is_float() || marks.dtype == DType::Bool {
        return Err(Error::dtype(def.name, format!("marks must be integers (MXNet: int32), got {}", marks.dtype)));
    }
    Ok((n, k))
}

pub(super) fn infer(def: &OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (n, k) = dims(def, ins)?;
    let m = &ins[0];
    Ok(vec![
        Meta { shape: Shape::new(&[n]), dtype: m.dtype, ctx: m.ctx },
        Meta { shape: Shape::new(&[n, k]), dtype: m.dtype, ctx: m.ctx },
    ])
}

/// The backward's inputs: the log likelihood's head gradient, then the eight operands.
pub(super) fn infer_backward(def: &OpDef, _: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let (n, k) = dims(def, ins.get(1..).unwrap_or_default())?;
    let m = &ins[1];
    let g = &ins[0];
    if g.shape.dims() != [n] {
        return Err(Error::shape(def.name, &[&g.shape, &m.shape], "the head gradient must be (N,)"));
    }
    Ok(vec![
        m.clone(),
        Meta { shape: Shape::new(&[k]), dtype: m.dtype, ctx: m.ctx },
        Meta { shape: Shape::new(&[k]), dtype: m.dtype, ctx: m.ctx },
    ])
}

pub(super) fn forward(def: &'static OpDef, xs: &[&NDArray]) -> Result<Vec<NDArray>> {
    let metas: Vec<Meta> = xs.iter().map(|x| Meta::of(x)).collect();
    let m = infer(def, &Attrs::default(), &metas)?;
    apply(def, xs, &[], &m)
}

pub(super) fn grad(a: &GradArgs<'_>) -> Result<Vec<Option<NDArray>>> {
    let mut ins: Vec<&NDArray> = vec![&a.out_grads[0]];
    ins.extend(a.inputs.iter());
    let metas: Vec<Meta> = ins.iter().map(|x| Meta::of(x)).collect();
    let def = &DEFS[BACKWARD_HAWKESLL];
    let mut g = apply(def, &ins, &[], &infer_backward(def, &Attrs::default(), &metas)?)?;
    let (gb, ga, gm) = (g.pop(), g.pop(), g.pop());
    Ok(vec![gm, ga, gb, None, None, None, None, None])
}

/// One sample's operands, read as f64 (marks as indices).
struct Sample {
    mu: Vec<f64>,
    state: Vec<f64>,
    lags: Vec<f64>,
    marks: Vec<usize>,
    max_time: f64,
}

/// The operands of a call: the shared `alpha` and `beta`, and each sample's.
type Operands = (Vec<f64>, Vec<f64>, Vec<Sample>);

/// All operands as f64, checked: `(alpha, beta, samples)`. `first` is the position of `mu`.
fn read(c: &OpCall, k: &Kernel, first: usize) -> std::result::Result<Operands, OpFailure> {
    let f =
        |i: usize| -> Vec<f64> { with_dtype!(k.in_dtype(i), T, k.input::<T>(i).iter().map(|v| v.to_f64()).collect()) };
    let (mu, alpha, beta, state, lags) = (f(first), f(first + 1), f(first + 2), f(first + 3), f(first + 4));
    let (marks, valid, max_time) = (f(first + 5), f(first + 6), f(first + 7));
    let (kk, n) = (alpha.len(), valid.len());
    let t = lags.len() / n.max(1);
    let fail = |m: String| OpFailure::new(ErrorKind::Value, format!("{}: {m}", c.def.name));
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let len = valid[i].trunc();
        if !(0.0..=t as f64).contains(&len) {
            return Err(fail(format!("valid_length[{i}] = {} is outside [0, {t}]", valid[i])));
        }
        let len = len as usize;
        let mut ms = Vec::with_capacity(len);
        for &m in &marks[i * t..i * t + len] {
            if !(m >= 0.0 && m < kk as f64) {
                return Err(fail(format!("mark {m} of sample {i} is outside [0, {kk})")));
            }
            ms.push(m as usize);
        }
        samples.push(Sample {
            mu: mu[i * kk..(i + 1) * kk].to_vec(),
            state: state[i * kk..(i + 1) * kk].to_vec(),
            lags: lags[i * t..i * t + len].to_vec(),
            marks: ms,
            max_time: max_time[i],
        });
    }
    Ok((alpha, beta, samples))
}

/// Log likelihood and final states of one sample.
fn sample_ll(s: &Sample, alpha: &[f64], beta: &[f64]) -> (f64, Vec<f64>) {
    let k = alpha.len();
    let (mut state, mut last, mut ll, mut t) = (s.state.clone(), vec![0.0; k], 0.0, 0.0);
    for (&lag, &c) in s.lags.iter().zip(&s.marks) {
        t += lag;
        let d = t - last[c];
        let ed = (-beta[c] * d).exp();
        let lda = s.mu[c] + alpha[c] * beta[c] * state[c] * ed;
        ll += lda.ln() - (s.mu[c] * d + alpha[c] * state[c] * (1.0 - ed));
        state[c] = 1.0 + state[c] * ed;
        last[c] = t;
    }
    for m in 0..k {
        let d = s.max_time - last[m];
        let ed = (-beta[m] * d).exp();
        ll -= s.mu[m] * d + alpha[m] * state[m] * (1.0 - ed);
        state[m] *= ed;
    }
    (ll, state)
}

/// Forward kernel: outputs the log likelihood (N,) and the final states (N, K).
pub(super) fn hawkesll(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (alpha, beta, samples) = read(c, k, 0)?;
    let res: Vec<(f64, Vec<f64>)> = samples.iter().map(|s| sample_ll(s, &alpha, &beta)).collect();
    with_dtype!(k.out_dtype(0), T, {
        let ll = k.output::<T>(0);
        for (o, (v, _)) in ll.iter_mut().zip(&res) {
            *o = T::from_f64(*v);
        }
        let st = k.output::<T>(1);
        for (row, (_, s)) in st.chunks_mut(alpha.len().max(1)).zip(&res) {
            for (o, &v) in row.iter_mut().zip(s) {
                *o = T::from_f64(v);
            }
        }
    });
    Ok(())
}

/// Gradients of one sample's log likelihood: `(d mu, d alpha, d beta)`, each (K,).
fn sample_grad(s: &Sample, alpha: &[f64], beta: &[f64]) -> [Vec<f64>; 3] {
    let k = alpha.len();
    let (mut phi, mut dphi, mut last, mut t) = (s.state.clone(), vec![0.0; k], vec![0.0; k], 0.0);
    let (mut gm, mut ga, mut gb) = (vec![0.0; k], vec![0.0; k], vec![0.0; k]);
    for (&lag, &c) in s.lags.iter().zip(&s.marks) {
        t += lag;
        let d = t - last[c];
        let ed = (-beta[c] * d).exp();
        let lda = s.mu[c] + alpha[c] * beta[c] * phi[c] * ed;
        gm[c] += 1.0 / lda - d;
        ga[c] += beta[c] * phi[c] * ed / lda - phi[c] * (1.0 - ed);
        gb[c] += alpha[c] * ed * (phi[c] * (1.0 - beta[c] * d) + beta[c] * dphi[c]) / lda
            - alpha[c] * (dphi[c] * (1.0 - ed) + phi[c] * d * ed);
        dphi[c] = ed * (dphi[c] - d * phi[c]);
        phi[c] = 1.0 + phi[c] * ed;
        last[c] = t;
    }
    for m in 0..k {
        let d = s.max_time - last[m];
        let ed = (-beta[m] * d).exp();
        gm[m] -= d;
        ga[m] -= phi[m] * (1.0 - ed);
        gb[m] -= alpha[m] * (dphi[m] * (1.0 - ed) + phi[m] * d * ed);
    }
    [gm, ga, gb]
}

/// Backward kernel: inputs the head gradient (N,) then the operands; outputs the
/// gradients of `mu` (N, K), `alpha` (K,) and `beta` (K,).
pub(super) fn backward_hawkesll(c: &OpCall, k: &Kernel) -> std::result::Result<(), OpFailure> {
    let (alpha, beta, samples) = read(c, k, 1)?;
    let head: Vec<f64> = with_dtype!(k.in_dtype(0), T, k.input::<T>(0).iter().map(|v| v.to_f64()).collect());
    let kk = alpha.len();
    let (mut gmu, mut galpha, mut gbeta) = (Vec::with_capacity(samples.len() * kk), vec![0.0; kk], vec![0.0; kk]);
    for (s, &h) in samples.iter().zip(&head) {
        let [gm, ga, gb] = sample_grad(s, &alpha, &beta);
        gmu.extend(gm.iter().map(|v| v * h));
        for m in 0..kk {
            galpha[m] += ga[m] * h;
            gbeta[m] += gb[m] * h;
        }
    }
    with_dtype!(k.out_dtype(0), T, {
        for (out, vals) in [(0, &gmu), (1, &galpha), (2, &gbeta)] {
            for (o, &v) in k.output::<T>(out).iter_mut().zip(vals.iter()) {
                *o = T::from_f64(v);
            }
        }
    });
    Ok(())
}
