//! InstanceNorm, GroupNorm and LRN, composed of existing operators (reductions,
//! broadcasting arithmetic, `Convolution` for LRN's channel window), so their
//! forward and backward run on the engine and autograd differentiates them
//! through the recorded pieces.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::conv::{convolution, ConvParams};
use crate::ops::{self, BinOp, ReduceOp, UnaryOp};
use crate::shape::Shape;

fn check_float(name: &str, x: &NDArray) -> Result<()> {
    if !matches!(x.dtype(), DType::F32 | DType::F64) {
        return Err(Error::dtype(name, format!("supports float32 and float64, got {}", x.dtype())));
    }
    Ok(())
}

/// `(x - mean) / sqrt(var + eps)` over `axes` (biased variance), with the mean
/// and `sqrt(var + eps)`, all keeping dims.
fn moments(x: &NDArray, axes: &[i64], eps: f64) -> Result<(NDArray, NDArray, NDArray)> {
    let mean = ops::reduce(ReduceOp::Mean, x, Some(axes), true, false)?;
    let xc = ops::sub(x, &mean)?;
    let var = ops::reduce(ReduceOp::Mean, &ops::mul(&xc, &xc)?, Some(axes), true, false)?;
    let std = ops::unary(UnaryOp::Sqrt, &ops::scalar(BinOp::Add, &var, eps)?)?;
    Ok((ops::div(&xc, &std)?, mean, std))
}

/// `(x - mean) / sqrt(var + eps)` over `axes` (biased variance), keeping dims.
fn standardise(x: &NDArray, axes: &[i64], eps: f64) -> Result<NDArray> {
    let mean = ops::reduce(ReduceOp::Mean, x, Some(axes), true, false)?;
    let xc = ops::sub(x, &mean)?;
    let var = ops::reduce(ReduceOp::Mean, &ops::mul(&xc, &xc)?, Some(axes), true, false)?;
    ops::mul(&xc, &ops::unary(UnaryOp::Rsqrt, &ops::scalar(BinOp::Add, &var, eps)?)?)
}

/// A `(c,)` parameter shaped to broadcast along axis 1 of `nd`-d data.
fn per_channel(name: &str, what: &str, p: &NDArray, c: usize, nd: usize, x: &NDArray) -> Result<NDArray> {
    if p.dims() != [c] {
        return Err(Error::shape(name, &[x.shape(), p.shape()], format!("{what} must have shape ({c},)")));
    }
    let mut d = vec![1; nd];
    d[1] = c;
    ops::reshape_to(p, Shape::new(&d))
}

/// MXNet `InstanceNorm`: each (sample, channel) normalised over its spatial axes.
pub fn instance_norm(x: &NDArray, gamma: &NDArray, beta: &NDArray, eps: f64) -> Result<NDArray> {
    let name = "InstanceNorm";
    check_float(name, x)?;
    let nd = x.ndim();
    if nd < 3 {
        return Err(Error::shape(
            name,
            &[x.shape()],
            "data must have at least 3 dimensions (batch, channel, spatial...)",
        ));
    }
    let c = x.dims()[1];
    let (g, b) = (per_channel(name, "gamma", gamma, c, nd, x)?, per_channel(name, "beta", beta, c, nd, x)?);
    let axes: Vec<i64> = (2..nd as i64).collect();
    ops::add(&ops::mul(&standardise(x, &axes, eps)?, &g)?, &b)
}

/// MXNet `GroupNorm`: channels split into `groups` groups, each sample's group
/// normalised together; `gamma`, `beta` have one entry per group (MXNet 1.9.1).
/// Returns the output, then each (sample, group)'s mean and `sqrt(var + eps)`
/// (shape `(n, groups)`, MXNet's `output_mean_var` outputs).
pub fn group_norm(x: &NDArray, gamma: &NDArray, beta: &NDArray, groups: usize, eps: f64) -> Result<[NDArray; 3]> {
    let name = "GroupNorm";
    check_float(name, x)?;
    let nd = x.ndim();
    if nd < 2 || groups == 0 || !x.dims()[1].is_multiple_of(groups) {
        return Err(Error::shape(
            name,
            &[x.shape()],
            format!("the channels (axis 1) must split into num_groups={groups} groups"),
        ));
    }
    let n = x.dims()[0];
    let xg = ops::reshape_to(x, Shape::new(&[n, groups, x.size() / (n * groups).max(1)]))?;
    let (xn, mean, std) = moments(&xg, &[2], eps)?;
    let (g, b) = (per_channel(name, "gamma", gamma, groups, 3, x)?, per_channel(name, "beta", beta, groups, 3, x)?);
    let y = ops::add(&ops::mul(&xn, &g)?, &b)?;
    let stat = Shape::new(&[n, groups]);
    Ok([ops::reshape_to(&y, x.shape().clone())?, ops::reshape_to(&mean, stat.clone())?, ops::reshape_to(&std, stat)?])
}

/// MXNet `LRN`: `x / (knorm + alpha / nsize · Σ_window x²)^beta`, the window
/// `nsize` channels centred on each channel (zero beyond the edges).
pub fn lrn(x: &NDArray, alpha: f64, beta: f64, knorm: f64, nsize: usize) -> Result<NDArray> {
    let name = "LRN";
    check_float(name, x)?;
    if x.ndim() < 2 {
        return Err(Error::shape(name, &[x.shape()], "data must have a channel axis (axis 1)"));
    }
    if nsize == 0 || nsize.is_multiple_of(2) {
        return Err(Error::value(name, format!("nsize must be a positive odd number, got {nsize}")));
    }
    let (n, c) = (x.dims()[0], x.dims()[1]);
    let rest = x.size() / (n * c).max(1);
    let sq = ops::reshape_to(&ops::mul(x, x)?, Shape::new(&[n, 1, c, rest]))?;
    let w = ops::ones(Shape::new(&[1, 1, nsize, 1]), x.dtype(), x.ctx())?;
    let p = ConvParams {
        kernel: vec![nsize, 1],
        stride: vec![1, 1],
        dilate: vec![1, 1],
        pad: vec![(nsize - 1) / 2, 0],
        adj: vec![0, 0],
        target: vec![],
        num_filter: 1,
        groups: 1,
        no_bias: true,
        layout: None,
    };
    let window = ops::reshape_to(&convolution(&p, &sq, &w, None, false)?, x.shape().clone())?;
    let norm = ops::scalar(BinOp::Add, &ops::scalar(BinOp::Mul, &window, alpha / nsize as f64)?, knorm)?;
    ops::div(x, &ops::scalar(BinOp::Pow, &norm, beta)?)
}
