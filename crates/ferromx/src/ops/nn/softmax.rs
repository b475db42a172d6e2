//! softmax, log_softmax and the fused sparse softmax cross-entropy loss
//! (frontends: checks, push, gradients; kernels in `cpu.rs`).

use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall};
use crate::ops::{self, BinOp, ReduceOp};
use crate::shape::{norm_axis, Shape};
use crate::storage::push_kernel;

fn softmax_impl(x: &NDArray, axis: i64, temperature: Option<f64>, log: bool) -> Result<NDArray> {
    let name = if log { "log_softmax" } else { "softmax" };
    if x.ndim() == 0 {
        return Err(Error::shape(name, &[x.shape()], "input must have at least one dimension"));
    }
    let ax = norm_axis(name, axis, x.ndim())?;
    let x = if x.dtype().is_float() { x.clone() } else { ops::astype(x, crate::DType::F32)? };
    let (outer, n, inner) = x.shape().around(ax);
    let t = temperature.unwrap_or(1.0);
    let out = x.empty_like()?;
    if out.size() > 0 {
        let def = &DEFS[if log { 4 } else { 3 }];
        push_call(OpCall::new(def, &[&x], &[&out]).with_ints(&[outer as i64, n as i64, inner as i64]).with_nums(&[t]))?;
    }
    if needs_record(&[&x]) {
        let ys = crate::autograd::save_output(&out);
        record(
            name,
            &[&x],
            &[&out],
            Box::new(move |g| {
                let (g, y) = (&g[0], ys.get());
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
    softmax_ce_as(5, pred, label)
}

/// `softmax_cross_entropy`: the sum over the batch of [`softmax_ce_loss`], shape (1,).
pub fn softmax_cross_entropy(pred: &NDArray, label: &NDArray) -> Result<NDArray> {
    softmax_ce_as(6, pred, label)
}

/// The fused loss as a call of `DEFS[which]` (5: per sample, 6: summed).
fn softmax_ce_as(which: usize, pred: &NDArray, label: &NDArray) -> Result<NDArray> {
    let (def, name) = (&DEFS[which], DEFS[which].name);
    if pred.ndim() != 2 {
        return Err(Error::shape(name, &[pred.shape(), label.shape()], "pred must be (batch, classes)"));
    }
    let n = pred.dims()[0];
    if label.size() != n {
        return Err(Error::shape(name, &[pred.shape(), label.shape()], "label must have one entry per sample"));
    }
    let pred = if pred.dtype().is_float() { pred.clone() } else { ops::astype(pred, crate::DType::F32)? };
    let dt = pred.dtype();
    let out = NDArray::empty(Shape::new(&[if which == 6 { 1 } else { n }]), dt, pred.ctx())?;
    let prob = NDArray::empty(pred.shape().clone(), dt, pred.ctx())?;
    if n > 0 {
        push_call(OpCall::new(def, &[&pred, label], &[&out, &prob]))?;
    } else if which == 6 {
        ops::assign(&out, &ops::zeros(Shape::new(&[1]), dt, pred.ctx())?)?;
    }
    if needs_record(&[&pred]) {
        let (pr, lb) = (prob.clone(), label.clone());
        record(
            name,
            &[&pred, label],
            &[&out],
            Box::new(move |g| {
                // d/dx = (softmax - onehot) * g, in one pass (`softmax_ce_backward`).
                let gg = &g[0];
                if gg.dtype() != dt || gg.size() != if which == 6 { 1 } else { n } {
                    return Err(Error::shape(name, &[gg.shape(), pr.shape()], "head gradient does not match the loss"));
                }
                let dx = NDArray::empty(pr.shape().clone(), dt, pr.ctx())?;
                if dx.size() > 0 {
                    push_kernel(
                        "_backward_softmax_ce",
                        vec![pr.view(), lb.view(), gg.view()],
                        vec![dx.view()],
                        move |k| super::cpu::softmax_ce_backward(k, name),
                    );
                }
                Ok(vec![Some(dx), None])
            }),
        );
    }
    Ok(out)
}
