//! `LayerNorm`: one kernel (statistics in float64) that also writes the mean
//! and reciprocal standard deviation the backward reads.

use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall};
use crate::ops::{self, ReduceOp};
use crate::shape::{norm_axis, Shape};

/// `LayerNorm`'s axis after checking `gamma` and `beta` against it.
pub(super) fn layer_norm_axis(x: &Shape, gamma: &Shape, beta: &Shape, axis: i64) -> Result<usize> {
    let ax = norm_axis("LayerNorm", axis, x.ndim())?;
    let n = x.dims()[ax];
    if gamma.dims() != [n] || beta.dims() != [n] {
        return Err(Error::shape("LayerNorm", &[x, gamma, beta], format!("gamma and beta must be ({n},)")));
    }
    Ok(ax)
}

/// Layer normalisation over `axis`, then `gamma * x + beta`.
pub fn layer_norm(x: &NDArray, gamma: &NDArray, beta: &NDArray, axis: i64, eps: f64) -> Result<NDArray> {
    let ax = layer_norm_axis(x.shape(), gamma.shape(), beta.shape(), axis)?;
    let dt = x.dtype();
    if !dt.is_float() || gamma.dtype() != dt || beta.dtype() != dt {
        return Err(Error::dtype("LayerNorm", "data, gamma and beta must share one float dtype"));
    }
    let d = x.dims();
    let (outer, n, inner) = (d[..ax].iter().product::<usize>(), d[ax], d[ax + 1..].iter().product::<usize>());
    let mut kd = d.to_vec();
    kd[ax] = 1;
    let out = x.empty_like()?;
    let mean = NDArray::empty(Shape::new(&kd), dt, x.ctx())?;
    let rstd = NDArray::empty(Shape::new(&kd), dt, x.ctx())?;
    if x.size() > 0 {
        let call = OpCall::new(&DEFS[8], &[x, gamma, beta], &[&out, &mean, &rstd]);
        push_call(call.with_ints(&[outer as i64, n as i64, inner as i64]).with_nums(&[eps]))?;
    }
    if needs_record(&[x, gamma, beta]) {
        let (xc, gc) = (x.clone(), gamma.clone());
        record(
            "LayerNorm",
            &[x, gamma, beta],
            &[&out],
            Box::new(move |g| {
                let (g, a) = (&g[0], [ax as i64]);
                let mut shp = vec![1usize; xc.ndim()];
                shp[ax] = n;
                let shp = Shape::new(&shp);
                let xhat = ops::mul(&ops::sub(&xc, &mean)?, &rstd)?;
                let dxhat = ops::mul(g, &ops::reshape_to(&gc, shp.clone())?)?;
                let m1 = ops::reduce(ReduceOp::Mean, &dxhat, Some(&a), true, false)?;
                let m2 = ops::reduce(ReduceOp::Mean, &ops::mul(&dxhat, &xhat)?, Some(&a), true, false)?;
                let dx = ops::mul(&rstd, &ops::sub(&ops::sub(&dxhat, &m1)?, &ops::mul(&xhat, &m2)?)?)?;
                let dg = ops::reshape_to(&ops::sum_to(&ops::mul(g, &xhat)?, &shp)?, Shape::new(&[n]))?;
                let db = ops::reshape_to(&ops::sum_to(g, &shp)?, Shape::new(&[n]))?;
                Ok(vec![Some(dx), Some(dg), Some(db)])
            }),
        );
    }
    Ok(out)
}
