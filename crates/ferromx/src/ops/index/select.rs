//! Selection by index arrays: take, pick, one_hot, where (inference,
//! kernels and gradients written together; `Inline` definitions).

use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, broadcast_to, check_ctx, BinOp};
use crate::shape::{norm_axis, Shape};
use crate::storage::push_kernel;
use crate::with_dtype;
use ferromx_engine::{ErrorKind, OpFailure};

/// Index handling mode of `take`/`pick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexMode {
    /// Clamp into range.
    Clip,
    /// Wrap around.
    Wrap,
    /// Fail (an engine error on the outputs, raised at the next read).
    Raise,
}

impl IndexMode {
    /// Parses `clip|wrap|raise`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "clip" => Ok(IndexMode::Clip),
            "wrap" => Ok(IndexMode::Wrap),
            "raise" => Ok(IndexMode::Raise),
            _ => Err(Error::value("take", format!("mode must be clip, wrap or raise, got '{s}'"))),
        }
    }
    fn fix(self, op: &str, i: i64, n: usize) -> std::result::Result<usize, OpFailure> {
        let n = n as i64;
        match self {
            IndexMode::Clip => Ok(i.clamp(0, (n - 1).max(0)) as usize),
            IndexMode::Wrap => Ok(i.rem_euclid(n.max(1)) as usize),
            IndexMode::Raise => {
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    Err(OpFailure::new(
                        ErrorKind::Index,
                        format!("index {i} is out of bounds for axis with size {n} (mode='raise' in {op})"),
                    ))
                } else {
                    Ok(j as usize)
                }
            }
        }
    }
}

fn read_indices(k: &crate::storage::Kernel, i: usize) -> Vec<i64> {
    let dt = k.in_dtype(i);
    with_dtype!(dt, T, k.input::<T>(i).iter().map(|v| v.to_f64().trunc() as i64).collect())
}

/// Gathers slices of `a` along `axis` at `indices`.
pub fn take(a: &NDArray, indices: &NDArray, axis: i64, mode: IndexMode) -> Result<NDArray> {
    let name = "take";
    check_ctx(name, a, indices)?;
    let ax = norm_axis(name, axis, a.ndim())?;
    let n = a.dims()[ax];
    if n == 0 && indices.size() > 0 {
        return Err(Error::index(name, format!("cannot take from an empty axis of shape {}", a.shape())));
    }
    let mut od = a.dims()[..ax].to_vec();
    od.extend_from_slice(indices.dims());
    od.extend_from_slice(&a.dims()[ax + 1..]);
    let outer: usize = a.dims()[..ax].iter().product();
    let inner: usize = a.dims()[ax + 1..].iter().product();
    let ni = indices.size();
    let out = NDArray::empty(Shape::new(&od), a.dtype(), a.ctx())?;
    let dt = a.dtype();
    if out.size() > 0 {
        push_kernel(name, vec![a.view(), indices.view()], vec![out.view()], move |k| {
            let idx = read_indices(k, 1);
            let fixed: Vec<usize> = idx.iter().map(|&i| mode.fix(name, i, n)).collect::<std::result::Result<_, _>>()?;
            with_dtype!(dt, T, {
                let (src, o) = (k.input::<T>(0), k.output::<T>(0));
                let body = |r: usize, orow: &mut [T]| {
                    for (j, &f) in fixed.iter().enumerate() {
                        let s = (r * n + f) * inner;
                        orow[j * inner..(j + 1) * inner].copy_from_slice(&src[s..s + inner]);
                    }
                };
                if outer * ni * inner >= 1 << 16 && outer > 1 {
                    use rayon::prelude::*;
                    o.par_chunks_mut(ni * inner).enumerate().for_each(|(r, c)| body(r, c));
                } else {
                    for (r, c) in o.chunks_mut((ni * inner).max(1)).enumerate() {
                        body(r, c);
                    }
                }
            });
            Ok(())
        });
    }
    if needs_record(&[a]) {
        let (ac, ic) = (a.clone(), indices.clone());
        record(
            name,
            &[a, indices],
            &[&out],
            Box::new(move |g| Ok(vec![Some(take_grad(&g[0], &ic, &ac, ax, mode)?), None])),
        );
    }
    Ok(out)
}

fn take_grad(g: &NDArray, idx: &NDArray, a: &NDArray, ax: usize, mode: IndexMode) -> Result<NDArray> {
    let z = ops::zeros(a.shape().clone(), g.dtype(), g.ctx())?;
    let n = a.dims()[ax];
    let outer: usize = a.dims()[..ax].iter().product();
    let inner: usize = a.dims()[ax + 1..].iter().product();
    let ni = idx.size();
    let dt = g.dtype();
    if z.size() > 0 && g.size() > 0 {
        push_kernel("_backward_take", vec![g.view(), idx.view()], vec![z.view()], move |k| {
            let ids = read_indices(k, 1);
            let fixed: Vec<usize> =
                ids.iter().map(|&i| mode.fix("take", i, n)).collect::<std::result::Result<_, _>>()?;
            with_dtype!(dt, T, {
                let (src, o) = (k.input::<T>(0), k.output::<T>(0));
                for r in 0..outer {
                    for (j, &f) in fixed.iter().enumerate() {
                        let s = (r * ni + j) * inner;
                        let d = (r * n + f) * inner;
                        for t in 0..inner {
                            o[d + t] = T::from_f64(o[d + t].to_f64() + src[s + t].to_f64());
                        }
                    }
                }
            });
            Ok(())
        });
    }
    Ok(z)
}

/// Picks one element per position along `axis` at `index` (MXNet `pick`).
pub fn pick(data: &NDArray, index: &NDArray, axis: i64, keepdims: bool, mode: IndexMode) -> Result<NDArray> {
    let name = "pick";
    let ax = norm_axis(name, axis, data.ndim())?;
    let mut kd = data.dims().to_vec();
    kd[ax] = 1;
    let mut rd = data.dims().to_vec();
    rd.remove(ax);
    if index.size() != kd.iter().product::<usize>() {
        return Err(Error::shape(
            name,
            &[data.shape(), index.shape()],
            format!("index must have the shape of data without axis {ax}"),
        ));
    }
    let outer: usize = data.dims()[..ax].iter().product();
    let n = data.dims()[ax];
    let inner: usize = data.dims()[ax + 1..].iter().product();
    let out = NDArray::empty(Shape::new(if keepdims { &kd } else { &rd }), data.dtype(), data.ctx())?;
    let dt = data.dtype();
    if out.size() > 0 {
        push_kernel(name, vec![data.view(), index.view()], vec![out.view()], move |k| {
            let ids = read_indices(k, 1);
            with_dtype!(dt, T, {
                let (src, o) = (k.input::<T>(0), k.output::<T>(0));
                for r in 0..outer {
                    for t in 0..inner {
                        let f = mode.fix(name, ids[r * inner + t], n)?;
                        o[r * inner + t] = src[(r * n + f) * inner + t];
                    }
                }
            });
            Ok(())
        });
    }
    if needs_record(&[data]) {
        let (dc, ic) = (data.clone(), index.clone());
        record(
            name,
            &[data, index],
            &[&out],
            Box::new(move |g| {
                // Scatter g to the picked positions, resolving indices exactly as
                // the forward pass did (clip / wrap).
                let z = ops::zeros(dc.shape().clone(), g[0].dtype(), g[0].ctx())?;
                let gdt = g[0].dtype();
                push_kernel("_backward_pick", vec![g[0].view(), ic.view()], vec![z.view()], move |k| {
                    let ids = read_indices(k, 1);
                    with_dtype!(gdt, T, {
                        let (gs, o) = (k.input::<T>(0), k.output::<T>(0));
                        for r in 0..outer {
                            for t in 0..inner {
                                let f = mode.fix(name, ids[r * inner + t], n)?;
                                o[(r * n + f) * inner + t] = gs[r * inner + t];
                            }
                        }
                    });
                    Ok(())
                });
                Ok(vec![Some(z), None])
            }),
        );
    }
    Ok(out)
}

/// One-hot encoding: output shape `indices.shape + (depth,)`.
pub fn one_hot(indices: &NDArray, depth: usize, on: f64, off: f64, dtype: DType) -> Result<NDArray> {
    let mut od = indices.dims().to_vec();
    od.push(depth);
    let out = NDArray::empty(Shape::new(&od), dtype, indices.ctx())?;
    if out.size() > 0 {
        push_kernel("one_hot", vec![indices.view()], vec![out.view()], move |k| {
            let ids = read_indices(k, 0);
            with_dtype!(dtype, T, {
                let o = k.output::<T>(0);
                o.fill(T::from_f64(off));
                for (r, &i) in ids.iter().enumerate() {
                    if i >= 0 && (i as usize) < depth {
                        o[r * depth + i as usize] = T::from_f64(on);
                    }
                }
            });
            Ok(())
        });
    }
    Ok(out)
}

/// `cond ? x : y`, broadcasting all three.
///
/// As in MXNet, a 1-d `cond` whose length is `x`'s first dimension selects
/// whole rows.
pub fn where_(cond: &NDArray, x: &NDArray, y: &NDArray) -> Result<NDArray> {
    let name = "where";
    let cond_rows;
    let cond = if cond.ndim() == 1 && x.ndim() > 1 && cond.size() == x.dims()[0] && x.shape() == y.shape() {
        let mut d = vec![1usize; x.ndim()];
        d[0] = cond.size();
        cond_rows = cond.view_as(Shape::new(&d), 0);
        &cond_rows
    } else {
        cond
    };
    let s = Shape::broadcast(name, &Shape::broadcast(name, cond.shape(), x.shape())?, y.shape())?;
    let c = ops::scalar(BinOp::Ne, &ops::astype(cond, x.dtype())?, 0.0)?;
    let cb = broadcast_to(&c.detach(), s.clone())?;
    let notc = ops::scalar_r(BinOp::Sub, &cb, 1.0)?;
    let xb = ops::mul(&broadcast_to(x, s.clone())?, &cb)?;
    let y = if y.dtype() != x.dtype() { ops::astype(y, x.dtype())? } else { y.clone() };
    let yb = ops::mul(&broadcast_to(&y, s)?, &notc)?;
    // select rather than add, so inf/nan in the unselected branch do not leak
    let out = NDArray::empty(xb.shape().clone(), xb.dtype(), xb.ctx())?;
    let dt = out.dtype();
    push_kernel(name, vec![cb.view(), xb.view(), yb.view()], vec![out.view()], move |k| {
        with_dtype!(dt, T, {
            let (c, a, b, o) = (k.input::<T>(0), k.input::<T>(1), k.input::<T>(2), k.output::<T>(0));
            for i in 0..o.len() {
                o[i] = if c[i].to_f64() != 0.0 { a[i] } else { b[i] };
            }
        });
        Ok(())
    });
    if needs_record(&[&xb, &yb]) {
        record(name, &[&xb, &yb], &[&out], Box::new(|g| Ok(vec![Some(g[0].clone()), Some(g[0].clone())])));
    }
    Ok(out)
}
