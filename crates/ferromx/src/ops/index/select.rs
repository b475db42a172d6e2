//! Selection by index arrays: take, pick, one_hot, where (frontends:
//! checks, push, gradients; kernels in `cpu.rs`).

use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall};
use crate::ops::{self, check_ctx, BinOp};
use crate::shape::{norm_axis, Shape};
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
    pub(super) fn fix(self, op: &str, i: i64, n: usize) -> std::result::Result<usize, OpFailure> {
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
    let out = NDArray::empty(Shape::new(&od), a.dtype(), a.ctx())?;
    if out.size() > 0 {
        let ints = [mode.code(), outer as i64, n as i64, inner as i64];
        push_call(OpCall::new(&DEFS[0], &[a, indices], &[&out]).with_ints(&ints))?;
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

pub(crate) fn take_grad(g: &NDArray, idx: &NDArray, a: &NDArray, ax: usize, mode: IndexMode) -> Result<NDArray> {
    backward_take(g, idx, a.shape().clone(), ax, mode)
}

/// `take`'s gradient (MXNet `_backward_take`): zeros of `shape` (the data's) with the rows
/// of `g` added at `idx` along axis `ax`, indices resolved by `mode` as the forward did.
/// Recorded like any operator, with `take` of the incoming gradient as its own gradient,
/// so gradients through `take` (and indexing) can be differentiated again.
pub fn backward_take(g: &NDArray, idx: &NDArray, shape: Shape, ax: usize, mode: IndexMode) -> Result<NDArray> {
    let name = "_backward_take";
    check_ctx(name, g, idx)?;
    if ax >= shape.ndim() {
        return Err(Error::value(name, format!("axis {ax} is out of range for shape {shape}")));
    }
    let mut want = shape.dims()[..ax].to_vec();
    want.extend_from_slice(idx.dims());
    want.extend_from_slice(&shape.dims()[ax + 1..]);
    if g.dims() != want.as_slice() {
        return Err(Error::shape(
            name,
            &[g.shape(), idx.shape(), &shape],
            format!("out_grad must have shape {} (take's output)", Shape::new(&want)),
        ));
    }
    let (outer, n, inner) = shape.around(ax);
    let out = NDArray::empty(shape, g.dtype(), g.ctx())?;
    if out.size() > 0 {
        let ints = [mode.code(), outer as i64, n as i64, inner as i64];
        push_call(OpCall::new(&DEFS[super::TAKE_BWD], &[g, idx], &[&out]).with_ints(&ints))?;
    }
    if needs_record(&[g]) {
        let ic = idx.clone();
        record(name, &[g, idx], &[&out], Box::new(move |gg| Ok(vec![Some(take(&gg[0], &ic, ax as i64, mode)?), None])));
    }
    Ok(out)
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
    if out.size() > 0 {
        let ints = [mode.code(), outer as i64, n as i64, inner as i64];
        push_call(OpCall::new(&DEFS[1], &[data, index], &[&out]).with_ints(&ints))?;
    }
    if needs_record(&[data]) {
        let (ds, ic) = (data.shape().clone(), index.clone());
        record(
            name,
            &[data, index],
            &[&out],
            Box::new(move |g| Ok(vec![Some(backward_pick(&g[0], &ic, ds.clone(), ax, keepdims, mode)?), None])),
        );
    }
    Ok(out)
}

/// `pick`'s gradient (MXNet `_backward_pick`): zeros of `shape` (the data's) with `g`'s
/// elements at the positions `index` picks along axis `ax`. Recorded, with `pick` of the
/// incoming gradient as its own gradient (second-order gradients through `pick`).
pub fn backward_pick(
    g: &NDArray,
    index: &NDArray,
    shape: Shape,
    ax: usize,
    keepdims: bool,
    mode: IndexMode,
) -> Result<NDArray> {
    let name = "_backward_pick";
    check_ctx(name, g, index)?;
    if ax >= shape.ndim() {
        return Err(Error::value(name, format!("axis {ax} is out of range for shape {shape}")));
    }
    let (outer, n, inner) = shape.around(ax);
    if g.size() != outer * inner || index.size() != outer * inner {
        return Err(Error::shape(
            name,
            &[g.shape(), index.shape(), &shape],
            format!("out_grad and index must have the shape of data without axis {ax}"),
        ));
    }
    let out = NDArray::empty(shape, g.dtype(), g.ctx())?;
    if out.size() > 0 {
        let ints = [mode.code(), outer as i64, n as i64, inner as i64];
        push_call(OpCall::new(&DEFS[super::PICK_BWD], &[g, index], &[&out]).with_ints(&ints))?;
    }
    if needs_record(&[g]) {
        let ic = index.clone();
        record(
            name,
            &[g, index],
            &[&out],
            Box::new(move |gg| Ok(vec![Some(pick(&gg[0], &ic, ax as i64, keepdims, mode)?), None])),
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
        push_call(OpCall::new(&DEFS[2], &[indices], &[&out]).with_ints(&[depth as i64]).with_nums(&[on, off]))?;
    }
    // MXNet records a zero gradient for the indices (so a graph through it has a backward)
    if crate::autograd::needs_record(&[indices]) {
        crate::ops::binary::record_zero_grad(&DEFS[2], &[indices], &out, &[]);
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
    let cond = if let Some(rows) = where_rows(cond.shape(), x.shape(), y.shape()) {
        cond_rows = cond.view_as(rows, 0);
        &cond_rows
    } else {
        cond
    };
    let s = where_shape(cond.shape(), x.shape(), y.shape())?;
    let y = if y.dtype() != x.dtype() { ops::astype(y, x.dtype())? } else { y.clone() };
    let out = NDArray::empty(s, x.dtype(), x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[3], &[cond, x, &y], &[&out]))?;
    }
    if needs_record(&[x, &y]) {
        let (c, xs, ys) = (cond.clone(), x.shape().clone(), y.shape().clone());
        record(
            name,
            &[x, &y],
            &[&out],
            Box::new(move |g| {
                let m = ops::scalar(BinOp::Ne, &ops::astype(&c, g[0].dtype())?, 0.0)?;
                let gx = ops::mul(&g[0], &m)?;
                let gy = ops::sub(&g[0], &gx)?;
                Ok(vec![Some(ops::sum_to(&gx, &xs)?), Some(ops::sum_to(&gy, &ys)?)])
            }),
        );
    }
    Ok(out)
}

/// The shape `where` gives: `cond`, `x` and `y` broadcast together.
pub(super) fn where_shape(c: &Shape, x: &Shape, y: &Shape) -> Result<Shape> {
    Shape::broadcast("where", &Shape::broadcast("where", c, x)?, y)
}

/// A 1-d `cond` selecting whole rows of `x` (MXNet), as a (n, 1, ...) shape.
pub(super) fn where_rows(c: &Shape, x: &Shape, y: &Shape) -> Option<Shape> {
    (c.ndim() == 1 && x.ndim() > 1 && c.size() == x.dims()[0] && x == y).then(|| {
        let mut d = vec![1usize; x.ndim()];
        d[0] = c.size();
        Shape::new(&d)
    })
}
