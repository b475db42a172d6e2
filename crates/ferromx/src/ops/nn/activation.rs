//! Activation, LeakyReLU family, Dropout, LayerNorm, Embedding.

use crate::autograd::is_training;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, random, BinOp, IndexMode, ReduceOp, UnaryOp};
use crate::shape::norm_axis;

/// MXNet `Activation` (relu, sigmoid, tanh, softrelu, softsign).
pub fn activation(x: &NDArray, act_type: &str) -> Result<NDArray> {
    let op = match act_type {
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
    };
    ops::unary(op, x)
}

/// MXNet `LeakyReLU` (leaky, elu, selu, gelu, prelu).
pub fn leaky_relu(x: &NDArray, act_type: &str, slope: f64, gamma: Option<&NDArray>) -> Result<NDArray> {
    let pos = ops::scalar(BinOp::Gt, x, 0.0)?;
    let neg = ops::scalar_r(BinOp::Sub, &pos, 1.0)?;
    match act_type {
        "leaky" => ops::add(&ops::mul(x, &pos)?, &ops::scalar(BinOp::Mul, &ops::mul(x, &neg)?, slope)?),
        "elu" => {
            let e = ops::scalar(BinOp::Mul, &ops::unary(UnaryOp::Expm1, &ops::scalar(BinOp::Min, x, 0.0)?)?, slope)?;
            ops::add(&ops::mul(x, &pos)?, &ops::mul(&e, &neg)?)
        }
        "selu" => {
            let (alpha, lambda) = (1.673_263_242_354_377_3, 1.050_700_987_355_480_5);
            let e = ops::scalar(BinOp::Mul, &ops::unary(UnaryOp::Expm1, &ops::scalar(BinOp::Min, x, 0.0)?)?, alpha)?;
            ops::scalar(BinOp::Mul, &ops::add(&ops::mul(x, &pos)?, &ops::mul(&e, &neg)?)?, lambda)
        }
        "gelu" => {
            let c = ops::unary(UnaryOp::Erf, &ops::scalar(BinOp::Mul, x, std::f64::consts::FRAC_1_SQRT_2)?)?;
            ops::mul(x, &ops::scalar(BinOp::Mul, &ops::scalar(BinOp::Add, &c, 1.0)?, 0.5)?)
        }
        "prelu" => {
            let g = gamma.ok_or_else(|| Error::value("LeakyReLU", "prelu needs gamma"))?;
            let gb = if x.ndim() >= 2 && g.ndim() == 1 && g.size() == x.dims()[1] {
                let mut d = vec![1usize; x.ndim()];
                d[1] = g.size();
                ops::reshape_to(g, crate::Shape::new(&d))?
            } else {
                g.clone()
            };
            ops::add(&ops::mul(x, &pos)?, &ops::mul(&ops::mul(x, &neg)?, &gb)?)
        }
        _ => Err(Error::value("LeakyReLU", format!("unknown act_type '{act_type}'"))),
    }
}

/// Inverted dropout: active only in training mode (or `mode='always'`).
pub fn dropout(x: &NDArray, p: f64, always: bool) -> Result<NDArray> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::value("Dropout", format!("p must be in [0, 1), got {p}")));
    }
    if (!is_training() && !always) || p == 0.0 {
        return ops::copy(x);
    }
    let u = random::uniform(0.0, 1.0, x.shape().clone(), x.dtype(), x.ctx())?;
    let mask = ops::scalar(BinOp::Mul, &ops::scalar(BinOp::Ge, &u, p)?, 1.0 / (1.0 - p))?;
    ops::mul(x, &mask)
}

/// Layer normalisation over `axis`.
pub fn layer_norm(x: &NDArray, gamma: &NDArray, beta: &NDArray, axis: i64, eps: f64) -> Result<NDArray> {
    let ax = norm_axis("LayerNorm", axis, x.ndim())?;
    let n = x.dims()[ax];
    if gamma.dims() != [n] || beta.dims() != [n] {
        return Err(Error::shape(
            "LayerNorm",
            &[x.shape(), gamma.shape(), beta.shape()],
            format!("gamma and beta must be ({n},)"),
        ));
    }
    let mean = ops::reduce(ReduceOp::Mean, x, Some(&[ax as i64]), true, false)?;
    let xc = ops::sub(x, &mean)?;
    let var = ops::reduce(ReduceOp::Mean, &ops::unary(UnaryOp::Square, &xc)?, Some(&[ax as i64]), true, false)?;
    let inv = ops::unary(UnaryOp::Rsqrt, &ops::scalar(BinOp::Add, &var, eps)?)?;
    let mut shp = vec![1usize; x.ndim()];
    shp[ax] = n;
    let g = ops::reshape_to(gamma, crate::Shape::new(&shp))?;
    let b = ops::reshape_to(beta, crate::Shape::new(&shp))?;
    ops::add(&ops::mul(&ops::mul(&xc, &inv)?, &g)?, &b)
}

/// Embedding lookup: rows of `weight` (input_dim, output_dim) at integer `data`.
pub fn embedding(data: &NDArray, weight: &NDArray) -> Result<NDArray> {
    if weight.ndim() != 2 {
        return Err(Error::shape("Embedding", &[data.shape(), weight.shape()], "weight must be 2-d"));
    }
    ops::take(weight, data, 0, IndexMode::Clip)
}
