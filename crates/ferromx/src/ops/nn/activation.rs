//! `Activation` (a unary function by name) and the `LeakyReLU` family
//! (frontends: checks, push, gradients; kernels in `cpu.rs`).

use super::cpu::{LeakyAct, SELU_ALPHA, SELU_LAMBDA};
use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall};
use crate::ops::{self, BinOp, UnaryOp};
use crate::{DType, Shape};

/// The unary function `Activation` applies for `act_type`.
pub(super) fn activation_op(act_type: &str) -> Result<UnaryOp> {
    Ok(match act_type {
        "relu" => UnaryOp::Relu,
        "sigmoid" => UnaryOp::Sigmoid,
        "tanh" => UnaryOp::Tanh,
        "softrelu" => UnaryOp::Softrelu,
        "softsign" => UnaryOp::Softsign,
        _ => {
            return Err(Error::value(
                "Activation",
                format!("unknown act_type '{act_type}' (relu, sigmoid, tanh, softrelu, softsign)"),
            ))
        }
    })
}

/// MXNet `Activation` (relu, sigmoid, tanh, softrelu, softsign).
pub fn activation(x: &NDArray, act_type: &str) -> Result<NDArray> {
    ops::unary::unary_as(&DEFS[1], activation_op(act_type)?, x)
}

/// `LeakyReLU`'s variant, checked.
pub(super) fn leaky_act(act_type: &str) -> Result<LeakyAct> {
    LeakyAct::parse(act_type).ok_or_else(|| {
        Error::value("LeakyReLU", format!("unknown act_type '{act_type}' (leaky, elu, selu, gelu, prelu)"))
    })
}

/// `gamma` shaped to broadcast against `x` (per channel, axis 1, when 1-d).
fn prelu_gamma(x: &Shape, g: &NDArray) -> Result<NDArray> {
    if x.ndim() >= 2 && g.ndim() == 1 && g.size() == x.dims()[1] {
        let mut d = vec![1usize; x.ndim()];
        d[1] = g.size();
        return ops::reshape_to(g, Shape::new(&d));
    }
    Ok(g.clone())
}

/// MXNet `LeakyReLU` (leaky, elu, selu, gelu, prelu), one elementwise kernel.
pub fn leaky_relu(x: &NDArray, act_type: &str, slope: f64, gamma: Option<&NDArray>) -> Result<NDArray> {
    let act = leaky_act(act_type)?;
    let x = if x.dtype().is_float() { x.clone() } else { ops::astype(x, DType::F32)? };
    let out = x.empty_like()?;
    let gb = match (act, gamma) {
        (LeakyAct::Prelu, None) => return Err(Error::value("LeakyReLU", "prelu needs gamma")),
        (LeakyAct::Prelu, Some(g)) => {
            let gb = prelu_gamma(x.shape(), g)?;
            if Shape::broadcast("LeakyReLU", x.shape(), gb.shape())? != *x.shape() {
                return Err(Error::shape("LeakyReLU", &[x.shape(), g.shape()], "gamma must broadcast to the data"));
            }
            let gb = if gb.dtype() != x.dtype() { ops::astype(&gb, x.dtype())? } else { gb };
            Some(gb)
        }
        _ => None,
    };
    if out.size() > 0 {
        let mut ins = vec![&x];
        ins.extend(gb.as_ref());
        push_call(OpCall::new(&DEFS[2], &ins, &[&out]).with_ints(&[act as i64]).with_nums(&[slope]))?;
    }
    let mut inputs = vec![&x];
    inputs.extend(gb.as_ref());
    if needs_record(&inputs) {
        let (xc, ys, gc) = (x.clone(), crate::autograd::save_output(&out), gb.clone());
        record(
            "LeakyReLU",
            &inputs,
            &[&out],
            Box::new(move |g| {
                let yc = ys.get();
                let (x, y, g) = (&xc, &yc, &g[0]);
                let pos = ops::scalar(BinOp::Gt, x, 0.0)?;
                let neg = ops::scalar_r(BinOp::Sub, &pos, 1.0)?;
                let d = match act {
                    LeakyAct::Leaky => ops::add(&pos, &ops::scalar(BinOp::Mul, &neg, slope)?)?,
                    LeakyAct::Elu => ops::add(&pos, &ops::mul(&neg, &ops::scalar(BinOp::Add, y, slope)?)?)?,
                    LeakyAct::Selu => {
                        let n = ops::mul(&neg, &ops::scalar(BinOp::Add, y, SELU_LAMBDA * SELU_ALPHA)?)?;
                        ops::add(&ops::scalar(BinOp::Mul, &pos, SELU_LAMBDA)?, &n)?
                    }
                    LeakyAct::Gelu => {
                        let c =
                            ops::unary(UnaryOp::Erf, &ops::scalar(BinOp::Mul, x, std::f64::consts::FRAC_1_SQRT_2)?)?;
                        let cdf = ops::scalar(BinOp::Mul, &ops::scalar(BinOp::Add, &c, 1.0)?, 0.5)?;
                        let x2 = ops::scalar(BinOp::Mul, &ops::mul(x, x)?, -0.5)?;
                        let pdf = ops::scalar(BinOp::Mul, &ops::unary(UnaryOp::Exp, &x2)?, 0.398_942_280_401_432_7)?;
                        ops::add(&cdf, &ops::mul(x, &pdf)?)?
                    }
                    LeakyAct::Prelu => {
                        let gm = gc.as_ref().ok_or_else(|| Error::value("LeakyReLU", "prelu needs gamma"))?;
                        let dx = ops::mul(g, &ops::add(&pos, &ops::mul(&neg, gm)?)?)?;
                        let dg = ops::sum_to(&ops::mul(g, &ops::mul(x, &neg)?)?, gm.shape())?;
                        return Ok(vec![Some(dx), Some(dg)]);
                    }
                };
                Ok(vec![Some(ops::mul(g, &d)?)])
            }),
        );
    }
    Ok(out)
}
