//! The CTC kernel: log-space forward (alpha) and backward (beta) recursions per
//! sample, the loss, and the gradient with respect to the unnormalised activations.

use crate::dtype::Elem;
use crate::engine::{ErrorKind, OpFailure};
use crate::opdef::OpCall;
use crate::ops::par::chunked;
use crate::storage::Kernel;
use crate::{with_dtype, with_float_dtype};

/// `ln(e^a + e^b)` with `-inf` as log 0.
fn lse(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Input `i` as f64 values, whatever its dtype.
fn as_f64(k: &Kernel, i: usize) -> Vec<f64> {
    let dt = k.in_dtype(i);
    with_dtype!(dt, T, k.input::<T>(i).iter().map(|v| v.to_f64()).collect())
}

fn fail(msg: String) -> OpFailure {
    OpFailure::new(ErrorKind::Value, msg)
}

/// One sample's problem: log-probabilities `lp` (T × C, row-major) and its labels.
pub(super) struct Sample<'a> {
    pub lp: &'a [f64],
    pub classes: usize,
    pub steps: usize,
    pub labels: &'a [usize],
    pub blank: usize,
}

/// `(loss, d loss / d activations)` of one sample (the gradient as T × C, zero-padded by
/// the caller past `steps`). An impossible alignment (too few steps) gives an infinite
/// loss and a zero gradient.
pub(super) fn sample_loss(s: &Sample<'_>) -> (f64, Vec<f64>) {
    let (c, t_n, blank) = (s.classes, s.steps, s.blank);
    let ext: Vec<usize> =
        (0..2 * s.labels.len() + 1).map(|j| if j % 2 == 0 { blank } else { s.labels[j / 2] }).collect();
    let n_s = ext.len();
    let ninf = f64::NEG_INFINITY;
    let mut grad = vec![0.0; t_n * c];
    if t_n == 0 {
        return (if s.labels.is_empty() { 0.0 } else { f64::INFINITY }, grad);
    }
    let emit = |t: usize, j: usize| s.lp[t * c + ext[j]];
    // the skip from j-2 to j: into a label (odd j) that differs from the label before it.
    // By position, not by value: a label equal to the blank's class is an ordinary label
    // here, as in MXNet's kernel (which does not reject it).
    let skip = |j: usize| j >= 3 && j % 2 == 1 && ext[j] != ext[j - 2];
    let mut alpha = vec![ninf; t_n * n_s];
    alpha[0] = emit(0, 0);
    if n_s > 1 {
        alpha[1] = emit(0, 1);
    }
    for t in 1..t_n {
        for j in 0..n_s {
            let p = &alpha[(t - 1) * n_s..t * n_s];
            let mut a = p[j];
            if j >= 1 {
                a = lse(a, p[j - 1]);
            }
            if skip(j) {
                a = lse(a, p[j - 2]);
            }
            alpha[t * n_s + j] = if a == ninf { ninf } else { a + emit(t, j) };
        }
    }
    let last = &alpha[(t_n - 1) * n_s..];
    let log_z = if n_s > 1 { lse(last[n_s - 1], last[n_s - 2]) } else { last[0] };
    if log_z == ninf {
        return (f64::INFINITY, grad);
    }
    let mut beta = vec![ninf; t_n * n_s];
    beta[(t_n - 1) * n_s + n_s - 1] = emit(t_n - 1, n_s - 1);
    if n_s > 1 {
        beta[(t_n - 1) * n_s + n_s - 2] = emit(t_n - 1, n_s - 2);
    }
    for t in (0..t_n - 1).rev() {
        for j in 0..n_s {
            let nx = &beta[(t + 1) * n_s..(t + 2) * n_s];
            let mut b = nx[j];
            if j + 1 < n_s {
                b = lse(b, nx[j + 1]);
            }
            if j + 2 < n_s && skip(j + 2) {
                b = lse(b, nx[j + 2]);
            }
            beta[t * n_s + j] = if b == ninf { ninf } else { b + emit(t, j) };
        }
    }
    // d(-log Z)/d u[t, k] = softmax[t, k] - (1/Z) Σ_{j: ext[j]=k} α_t(j) β_t(j) / y_t(k)
    let mut occ = vec![ninf; c];
    for t in 0..t_n {
        occ.iter_mut().for_each(|o| *o = ninf);
        for j in 0..n_s {
            let ab = alpha[t * n_s + j] + beta[t * n_s + j];
            if ab != ninf {
                occ[ext[j]] = lse(occ[ext[j]], ab - emit(t, j));
            }
        }
        for k in 0..c {
            let y = s.lp[t * c + k].exp();
            let post = if occ[k] == ninf { 0.0 } else { (occ[k] - log_z).exp() };
            grad[t * c + k] = y - post;
        }
    }
    (-log_z, grad)
}

/// Labels of sample `n` (`row`): `len` given, or up to the first padding value.
fn sample_labels(row: &[f64], len: Option<f64>, pad: f64, classes: usize) -> Result<Vec<usize>, OpFailure> {
    let n_lab = match len {
        Some(l) => {
            if l < 0.0 || l > row.len() as f64 || l.fract() != 0.0 {
                return Err(fail(format!("label_lengths {l} is not in [0, {}]", row.len())));
            }
            l as usize
        }
        None => row.iter().position(|&v| v == pad).unwrap_or(row.len()),
    };
    row[..n_lab]
        .iter()
        .map(|&v| {
            if v >= 0.0 && v.fract() == 0.0 && (v as usize) < classes {
                Ok(v as usize)
            } else {
                Err(fail(format!("label {v} is not a class in [0, {classes})")))
            }
        })
        .collect()
}

/// One sample's steps, loss and gradient (T × C), or its input error.
type Solved = Result<(usize, f64, Vec<f64>), OpFailure>;

/// ints: use_data_lengths, use_label_lengths, blank first, then T, N, C and the label
/// length L. Outputs: loss (N,), grad (T, N, C).
pub(super) fn ctc_kernel(call: &OpCall, k: &Kernel) -> Result<(), OpFailure> {
    let (use_data, use_label, blank_first) = (call.ints[0] != 0, call.ints[1] != 0, call.ints[2] != 0);
    let [t_max, n, c, l_max] = [3, 4, 5, 6].map(|i| call.ints[i] as usize);
    let data = as_f64(k, 0);
    let label = as_f64(k, 1);
    let data_len = use_data.then(|| as_f64(k, 2));
    let label_len = use_label.then(|| as_f64(k, 2 + usize::from(use_data)));
    let (blank, pad) = if blank_first { (0, 0.0) } else { (c - 1, -1.0) };
    // One sample's (steps, loss, gradient), samples split over the cores.
    let solve = |b: usize| -> Solved {
        let steps = match &data_len {
            Some(d) => {
                let v = d[b];
                if v < 0.0 || v > t_max as f64 || v.fract() != 0.0 {
                    return Err(fail(format!("data_lengths {v} is not in [0, {t_max}]")));
                }
                v as usize
            }
            None => t_max,
        };
        let labels = sample_labels(&label[b * l_max..(b + 1) * l_max], label_len.as_ref().map(|l| l[b]), pad, c)?;
        let mut lp = vec![0.0; steps * c];
        for t in 0..steps {
            let row = &data[(t * n + b) * c..(t * n + b + 1) * c];
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let z = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
            for (o, v) in lp[t * c..(t + 1) * c].iter_mut().zip(row) {
                *o = v - z;
            }
        }
        let (loss, g) = sample_loss(&Sample { lp: &lp, classes: c, steps, labels: &labels, blank });
        Ok((steps, loss, g))
    };
    let mut per: Vec<Option<Solved>> = (0..n).map(|_| None).collect();
    // grain 1: a sample is T·S·C work, worth a thread of its own
    chunked(&mut per, 1, |start, chunk| {
        for (j, slot) in chunk.iter_mut().enumerate() {
            *slot = Some(solve(start + j));
        }
    });
    let mut losses = vec![0.0; n];
    let mut grads = vec![0.0; t_max * n * c];
    for (b, r) in per.into_iter().enumerate() {
        let (steps, loss, g) = r.unwrap_or_else(|| Err(fail("sample not computed".into())))?;
        losses[b] = loss;
        for t in 0..steps {
            grads[(t * n + b) * c..(t * n + b + 1) * c].copy_from_slice(&g[t * c..(t + 1) * c]);
        }
    }
    with_float_dtype!(
        k.out_dtype(0),
        T,
        {
            for (o, v) in k.output::<T>(0).iter_mut().zip(&losses) {
                *o = T::from_f64(*v);
            }
            for (o, v) in k.output::<T>(1).iter_mut().zip(&grads) {
                *o = T::from_f64(*v);
            }
        },
        return Err(fail("data must be a float array".into()))
    );
    Ok(())
}
