//! softmax, log_softmax and the fused sparse softmax cross-entropy loss.

use crate::autograd::{needs_record, record};
use crate::dtype::Elem;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, BinOp, ReduceOp};
use crate::shape::{norm_axis, Shape};
use crate::storage::push_kernel;
use crate::with_float_dtype;

fn layout(x: &NDArray, ax: usize) -> (usize, usize, usize) {
    let d = x.dims();
    (d[..ax].iter().product(), d[ax], d[ax + 1..].iter().product())
}

/// Softmax (or log-softmax) of one row `x[j*inner]`, written to `o`.
fn softmax_row<T: Elem>(x: &[T], o: &mut [T], base: usize, n: usize, inner: usize, temp: f64, log: bool) {
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

fn softmax_impl(x: &NDArray, axis: i64, temperature: Option<f64>, log: bool) -> Result<NDArray> {
    let name = if log { "log_softmax" } else { "softmax" };
    if x.ndim() == 0 {
        return Err(Error::shape(name, &[x.shape()], "input must have at least one dimension"));
    }
    let ax = norm_axis(name, axis, x.ndim())?;
    let x = if x.dtype().is_float() { x.clone() } else { ops::astype(x, crate::DType::F32)? };
    let (outer, n, inner) = layout(&x, ax);
    let t = temperature.unwrap_or(1.0);
    let out = x.empty_like()?;
    let dt = x.dtype();
    if out.size() > 0 {
        push_kernel(name, vec![x.view()], vec![out.view()], move |k| {
            with_float_dtype!(
                dt,
                T,
                {
                    let (xs, o) = (k.input::<T>(0), k.output::<T>(0));
                    let run = |o: &mut [T], start_outer: usize| {
                        let rows = o.len() / (n * inner);
                        for r in 0..rows {
                            for i in 0..inner {
                                let base = r * n * inner + i;
                                let xb = &xs[(start_outer) * n * inner..];
                                softmax_row(xb, o, base, n, inner, t, log);
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
                unreachable!("cast to float above")
            );
            Ok(())
        });
    }
    if needs_record(&[&x]) {
        let y = out.clone();
        record(
            name,
            &[&x],
            &[&out],
            Box::new(move |g| {
                let g = &g[0];
                let r = if log {
                    // dx = g - softmax * sum(g)
                    let s = ops::reduce(ReduceOp::Sum, g, Some(&[ax as i64]), true, false)?;
                    ops::sub(g, &ops::mul(&ops::unary(ops::UnaryOp::Exp, &y)?, &s)?)?
                } else {
                    // dx = y * (g - sum(g*y))
                    let s = ops::reduce(ReduceOp::Sum, &ops::mul(g, &y)?, Some(&[ax as i64]), true, false)?;
                    ops::mul(&y, &ops::sub(g, &s)?)?
                };
                let r = if t != 1.0 { ops::scalar(BinOp::Div, &r, t)? } else { r };
                Ok(vec![Some(r)])
            }),
        );
    }
    Ok(out)
}

/// Softmax along `axis`.
pub fn softmax(x: &NDArray, axis: i64, temperature: Option<f64>) -> Result<NDArray> {
    softmax_impl(x, axis, temperature, false)
}

/// Log-softmax along `axis`.
pub fn log_softmax(x: &NDArray, axis: i64, temperature: Option<f64>) -> Result<NDArray> {
    softmax_impl(x, axis, temperature, true)
}

/// Per-sample `-log softmax(pred)[label]` along the last axis of a 2-d `pred`
/// (N, C) with integer-valued `label` (N,): one fused kernel forward and backward.
/// Labels out of range fail the op (an engine error at the next read).
pub fn softmax_ce_loss(pred: &NDArray, label: &NDArray) -> Result<NDArray> {
    let name = "softmax_ce_loss";
    if pred.ndim() != 2 {
        return Err(Error::shape(name, &[pred.shape(), label.shape()], "pred must be (batch, classes)"));
    }
    let (n, c) = (pred.dims()[0], pred.dims()[1]);
    if label.size() != n {
        return Err(Error::shape(name, &[pred.shape(), label.shape()], "label must have one entry per sample"));
    }
    let pred = if pred.dtype().is_float() { pred.clone() } else { ops::astype(pred, crate::DType::F32)? };
    let dt = pred.dtype();
    let out = NDArray::empty(Shape::new(&[n]), dt, pred.ctx())?;
    let prob = NDArray::empty(pred.shape().clone(), dt, pred.ctx())?;
    let ldt = label.dtype();
    if n > 0 {
        push_kernel(name, vec![pred.view(), label.view()], vec![out.view(), prob.view()], move |k| {
            let labels: Vec<f64> = crate::with_dtype!(ldt, L, k.input::<L>(1).iter().map(|v| v.to_f64()).collect());
            with_float_dtype!(
                dt,
                T,
                {
                    let (x, o, p) = (k.input::<T>(0), k.output::<T>(0), k.output::<T>(1));
                    for r in 0..n {
                        softmax_row(&x[r * c..(r + 1) * c], &mut p[r * c..(r + 1) * c], 0, c, 1, 1.0, false);
                        let l = labels[r];
                        if l < 0.0 || l as usize >= c || l.fract() != 0.0 {
                            return Err(ferromx_engine::OpFailure::new(
                                ferromx_engine::ErrorKind::Index,
                                format!("{name}: label {l} out of range for {c} classes"),
                            ));
                        }
                        let pv = p[r * c + l as usize].to_f64().max(1e-30);
                        o[r] = T::from_f64(-pv.ln());
                    }
                },
                unreachable!("float")
            );
            Ok(())
        });
    }
    if needs_record(&[&pred]) {
        let (pr, lb) = (prob.clone(), label.clone());
        record(
            name,
            &[&pred, label],
            &[&out],
            Box::new(move |g| {
                // d/dx = (softmax - onehot) * g
                let oh = ops::one_hot(&lb, c, 1.0, 0.0, dt)?;
                let d = ops::sub(&pr, &oh)?;
                let gg = g[0].view_as(Shape::new(&[n, 1]), 0);
                Ok(vec![Some(ops::mul(&d, &gg)?), None])
            }),
        );
    }
    Ok(out)
}
