//! Index and layout operators: `tile`, `repeat`, `flip`/`reverse`, `moveaxis`,
//! `gather_nd`, `scatter_nd`, MXNet `slice` (with steps and `None` entries),
//! `slice_like` and `diag` (frontends: checks, push, gradients).
//!
//! Most of them are "affine gathers": every output element reads the input at
//! `base + Σ idx[d] · stride[d]` for some (possibly negative or zero) strides
//! over an iteration shape. One kernel (`cpu::gather_kernel`) and its adjoint
//! (`cpu::scatter_run`) serve them all.

use super::cpu::affine_ints;
use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall, OpDef};
use crate::ops::{self, check_ctx, ReduceOp};
use crate::shape::{norm_axis, Shape};

/// Marks a `None` entry in the `begin`/`end`/`step` tuples of [`slice()`].
///
/// `Attr::Ints` cannot hold Python's `None`, so frontends pass `None` entries
/// of those tuples as `i64::MIN`.
pub const NONE_INDEX: i64 = i64::MIN;

/// A new array of `oshape` whose elements, in row-major order over `iter_dims`
/// (same element count), are `x[base + Σ idx[d]·strides[d]]`.
///
/// The caller guarantees every address is in bounds (checked at the call by
/// each operator's shape inference); not recorded for autograd.
pub(crate) fn gather_affine(
    def: &'static OpDef,
    x: &NDArray,
    oshape: Shape,
    iter_dims: Vec<usize>,
    base: isize,
    strides: Vec<isize>,
) -> Result<NDArray> {
    debug_assert_eq!(iter_dims.iter().product::<usize>(), oshape.size());
    let out = NDArray::empty(oshape, x.dtype(), x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[x], &[&out]).with_ints(&affine_ints(base, &iter_dims, &strides)))?;
    }
    Ok(out)
}

/// [`gather_affine`] as a call of `def`, recorded with [`scatter_affine_rec`] (the
/// `_backward_slice` call) as its gradient, which records this gather as its own: a
/// slice's gradient is differentiable again, to any order.
pub(crate) fn gather_affine_rec(
    def: &'static OpDef,
    x: &NDArray,
    iter_dims: Vec<usize>,
    base: isize,
    strides: Vec<isize>,
) -> Result<NDArray> {
    let out = gather_affine(def, x, Shape::new(&iter_dims), iter_dims.clone(), base, strides.clone())?;
    if needs_record(&[x]) {
        let xs = x.shape().clone();
        record(
            def.name,
            &[x],
            &[&out],
            Box::new(move |g| {
                Ok(vec![Some(scatter_affine_rec(&g[0], xs.clone(), iter_dims.clone(), base, strides.clone())?)])
            }),
        );
    }
    Ok(out)
}

/// The adjoint of an affine gather as a call of the table operator `_backward_slice`:
/// zeros of `shape` with `g` (of dims `iter_dims`) written at `base + Σ idx[d]·strides[d]`
/// (distinct addresses). Recorded, with the gather (a `slice`) as its gradient.
pub(crate) fn scatter_affine_rec(
    g: &NDArray,
    shape: Shape,
    iter_dims: Vec<usize>,
    base: isize,
    strides: Vec<isize>,
) -> Result<NDArray> {
    let def = &DEFS[super::SLICE_BWD];
    if g.dims() != iter_dims.as_slice() {
        return Err(Error::shape(
            def.name,
            &[g.shape(), &shape],
            format!("out_grad must have the sliced region's shape {}", Shape::new(&iter_dims)),
        ));
    }
    let out = NDArray::empty(shape, g.dtype(), g.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[g], &[&out]).with_ints(&affine_ints(base, &iter_dims, &strides)))?;
    }
    if needs_record(&[g]) {
        record(
            def.name,
            &[g],
            &[&out],
            Box::new(move |gg| {
                let slice = super::slice_def();
                Ok(vec![Some(gather_affine_rec(slice, &gg[0], iter_dims.clone(), base, strides.clone())?)])
            }),
        );
    }
    Ok(out)
}

/// MXNet `_backward_slice`: the gradient of `slice(data, begin, end, step)` for data of
/// `shape`: zeros with `g` written into the sliced region.
pub fn backward_slice(g: &NDArray, shape: Shape, begin: &[i64], end: &[i64], step: &[i64]) -> Result<NDArray> {
    let spec = slice_spec(&shape, begin, end, step)?;
    let (od, base, strides) = spec_affine(&shape, &spec);
    scatter_affine_rec(g, shape, od, base, strides)
}

fn signed_strides(s: &Shape) -> Vec<isize> {
    s.strides().iter().map(|&v| v as isize).collect()
}

/// Tiles `x` `reps` times per axis (NumPy `tile`: a shorter `reps` is padded
/// with leading ones, a shorter shape with leading size-1 axes).
pub fn tile(x: &NDArray, reps: &[i64]) -> Result<NDArray> {
    let name = "tile";
    let (od, iter, strides) = tile_plan(x.dims(), reps)?;
    let nd = od.len();
    let out = gather_affine(&DEFS[4], x, Shape::new(&od), iter.clone(), 0, strides)?;
    record_sum_back(name, x, &out, iter, (0..nd as i64).map(|d| 2 * d).collect());
    Ok(out)
}

/// Records the gradient of a gather that read each element of `x` several
/// times: the output gradient seen with dims `iter`, summed over `axes`.
fn record_sum_back(name: &'static str, x: &NDArray, out: &NDArray, iter: Vec<usize>, axes: Vec<i64>) {
    if needs_record(&[x]) {
        let xs = x.shape().clone();
        record(
            name,
            &[x],
            &[out],
            Box::new(move |g| {
                let g = ops::reshape_to(&g[0], Shape::new(&iter))?;
                let s = ops::reduce(ReduceOp::Sum, &g, Some(&axes), false, false)?;
                Ok(vec![Some(ops::reshape_to(&s, xs.clone())?)])
            }),
        );
    }
}

/// An affine walk: output dims, iteration dims, strides.
type Plan = (Vec<usize>, Vec<usize>, Vec<isize>);

/// `tile`'s output dims and walk over an input of dims `x`.
pub(super) fn tile_plan(x: &[usize], reps: &[i64]) -> Result<Plan> {
    if let Some(r) = reps.iter().find(|&&r| r < 0) {
        return Err(Error::value("tile", format!("reps must be non-negative, got {r} in {reps:?}")));
    }
    let nd = x.len().max(reps.len());
    let mut xd = vec![1usize; nd - x.len()];
    xd.extend_from_slice(x);
    let mut r = vec![1usize; nd - reps.len()];
    r.extend(reps.iter().map(|&v| v as usize));
    let xst = Shape::new(&xd).strides();
    let mut iter = Vec::with_capacity(2 * nd);
    let mut strides = Vec::with_capacity(2 * nd);
    let mut od = Vec::with_capacity(nd);
    for d in 0..nd {
        iter.extend([r[d], xd[d]]);
        strides.extend([0, xst[d] as isize]);
        od.push(r[d] * xd[d]);
    }
    Ok((od, iter, strides))
}

/// Repeats each element `repeats` times along `axis` (`None`: of the flattened array).
pub fn repeat(x: &NDArray, repeats: i64, axis: Option<i64>) -> Result<NDArray> {
    let name = "repeat";
    let (od, iter, strides) = repeat_plan(x.dims(), repeats, axis)?;
    let out = gather_affine(&DEFS[5], x, Shape::new(&od), iter.clone(), 0, strides)?;
    record_sum_back(name, x, &out, iter, vec![2]);
    Ok(out)
}

/// `repeat`'s output dims and walk over an input of dims `x`.
pub(super) fn repeat_plan(x: &[usize], repeats: i64, axis: Option<i64>) -> Result<Plan> {
    let name = "repeat";
    if repeats < 0 {
        return Err(Error::value(name, format!("repeats must be non-negative, got {repeats}")));
    }
    let rep = repeats as usize;
    let (sd, ax): (Vec<usize>, usize) = match axis {
        None => (vec![x.iter().product()], 0),
        Some(a) => (x.to_vec(), norm_axis(name, a, x.len())?),
    };
    let outer: usize = sd[..ax].iter().product();
    let n = sd[ax];
    let inner: usize = sd[ax + 1..].iter().product();
    let mut od = sd.clone();
    od[ax] = n * rep;
    let iter = vec![outer, n, rep, inner];
    let strides = vec![(n * inner) as isize, inner as isize, 0, 1];
    Ok((od, iter, strides))
}

/// Reverses the order of elements along `axes` (MXNet `flip` / `reverse`).
pub fn flip(x: &NDArray, axes: &[i64]) -> Result<NDArray> {
    flip_as(&DEFS[6], x, axes)
}

/// [`flip`] as a call of `def` (`flip` or `reverse`).
fn flip_as(def: &'static OpDef, x: &NDArray, axes: &[i64]) -> Result<NDArray> {
    let name = def.name;
    let ax = ops::resolve_axes(name, x.ndim(), Some(axes), false)?;
    let mut strides = signed_strides(x.shape());
    let mut base = 0isize;
    for &a in &ax {
        let d = x.dims()[a];
        if d > 0 {
            base += (d as isize - 1) * strides[a];
        }
        strides[a] = -strides[a];
    }
    let out = gather_affine(def, x, x.shape().clone(), x.dims().to_vec(), base, strides)?;
    if needs_record(&[x]) {
        let axes = axes.to_vec();
        record(name, &[x], &[&out], Box::new(move |g| Ok(vec![Some(flip_as(def, &g[0], &axes)?)])));
    }
    Ok(out)
}

/// MXNet's name for [`flip`].
pub fn reverse(x: &NDArray, axes: &[i64]) -> Result<NDArray> {
    flip_as(&DEFS[7], x, axes)
}

/// Moves axes `source` to positions `destination`, keeping the other axes in order (NumPy `moveaxis`).
pub fn moveaxis(x: &NDArray, source: &[i64], destination: &[i64]) -> Result<NDArray> {
    ops::shape::transpose_as(&DEFS[8], x, moveaxis_perm(x.ndim(), source, destination)?)
}

/// The permutation `moveaxis` applies to an array of rank `nd`.
pub(super) fn moveaxis_perm(nd: usize, source: &[i64], destination: &[i64]) -> Result<Vec<usize>> {
    let name = "moveaxis";
    if source.len() != destination.len() {
        return Err(Error::value(
            name,
            format!("source {source:?} and destination {destination:?} must have the same number of elements"),
        ));
    }
    let norm = |v: &[i64]| -> Result<Vec<usize>> {
        let r: Vec<usize> = v.iter().map(|&a| norm_axis(name, a, nd)).collect::<Result<_>>()?;
        for (i, a) in r.iter().enumerate() {
            if r[..i].contains(a) {
                return Err(Error::value(name, format!("repeated axis in {v:?}")));
            }
        }
        Ok(r)
    };
    let (src, dst) = (norm(source)?, norm(destination)?);
    let mut order: Vec<usize> = (0..nd).filter(|a| !src.contains(a)).collect();
    let mut pairs: Vec<(usize, usize)> = dst.into_iter().zip(src).collect();
    pairs.sort_unstable();
    for (d, s) in pairs {
        order.insert(d, s);
    }
    Ok(order)
}

fn check_indices(op: &str, indices: &NDArray) -> Result<usize> {
    if indices.ndim() == 0 {
        return Err(Error::shape(op, &[indices.shape()], "indices must have at least one dimension (M, ...)"));
    }
    if indices.dtype() == DType::Bool {
        return Err(Error::dtype(op, "indices must be numeric, got bool"));
    }
    Ok(indices.dims()[0])
}

/// MXNet `gather_nd`: `indices` of shape (M, Y...) select along the first M
/// dims of `data`; the output has shape `Y... + data.shape[M:]`.
///
/// Negative indices count from the end; an index outside `[-n, n)` fails the
/// operation on the engine with an index error (raised at the next read).
pub fn gather_nd(data: &NDArray, indices: &NDArray) -> Result<NDArray> {
    let name = "gather_nd";
    check_ctx(name, data, indices)?;
    let m = check_indices(name, indices)?;
    if m > data.ndim() {
        return Err(Error::shape(
            name,
            &[data.shape(), indices.shape()],
            format!("indices.shape[0] = {m} exceeds the data's rank"),
        ));
    }
    let mut od = indices.dims()[1..].to_vec();
    od.extend_from_slice(&data.dims()[m..]);
    let out = NDArray::empty(Shape::new(&od), data.dtype(), data.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[9], &[data, indices], &[&out]).with_ints(&[m as i64]))?;
    }
    if needs_record(&[data]) {
        let (ic, ds) = (indices.clone(), data.shape().clone());
        record(
            name,
            &[data, indices],
            &[&out],
            Box::new(move |g| Ok(vec![Some(backward_gather_nd(&g[0], &ic, ds.clone())?), None])),
        );
    }
    Ok(out)
}

fn scatter_nd_impl(
    name: &'static str,
    data: &NDArray,
    indices: &NDArray,
    shape: Shape,
    accumulate: bool,
) -> Result<NDArray> {
    check_ctx(name, data, indices)?;
    let m = check_indices(name, indices)?;
    if m > shape.ndim() {
        return Err(Error::shape(
            name,
            &[&shape, indices.shape()],
            format!("indices.shape[0] = {m} exceeds the output's rank"),
        ));
    }
    let mut want = indices.dims()[1..].to_vec();
    want.extend_from_slice(&shape.dims()[m..]);
    if data.dims() != want.as_slice() {
        return Err(Error::shape(
            name,
            &[data.shape(), indices.shape(), &shape],
            format!("data must have shape indices.shape[1:] + shape[{m}:] = {}", Shape::new(&want)),
        ));
    }
    let out = NDArray::empty(shape, data.dtype(), data.ctx())?;
    if out.size() > 0 {
        let ints = [m as i64, accumulate as i64];
        let def = if accumulate { &DEFS[super::GATHER_ND_BWD] } else { &DEFS[10] };
        push_call(OpCall::new(def, &[data, indices], &[&out]).with_ints(&ints))?;
    }
    Ok(out)
}

/// MXNet `_backward_gather_nd`: zeros of `shape` with `data`'s blocks added at the
/// coordinates in `indices` (duplicates accumulate): `gather_nd`'s gradient. Recorded,
/// with `gather_nd` of the incoming gradient as its own gradient.
pub fn backward_gather_nd(data: &NDArray, indices: &NDArray, shape: Shape) -> Result<NDArray> {
    scatter_recorded("_backward_gather_nd", data, indices, shape, true)
}

/// A scatter of `data` into zeros of `shape`, recorded with `gather_nd` of
/// the incoming gradient as its gradient (for both the accumulating and the
/// last-write-wins form).
fn scatter_recorded(name: &'static str, data: &NDArray, indices: &NDArray, shape: Shape, acc: bool) -> Result<NDArray> {
    let out = scatter_nd_impl(name, data, indices, shape, acc)?;
    if needs_record(&[data]) {
        let ic = indices.clone();
        record(name, &[data, indices], &[&out], Box::new(move |g| Ok(vec![Some(gather_nd(&g[0], &ic)?), None])));
    }
    Ok(out)
}

/// MXNet `scatter_nd`: a zeros array of `shape` with
/// `out[indices[:, y]..., :] = data[y, ...]`. `data` must have shape
/// `indices.shape[1:] + shape[M:]`. Duplicate indices: the last write wins.
/// Indices are checked like [`gather_nd`]'s.
pub fn scatter_nd(data: &NDArray, indices: &NDArray, shape: Shape) -> Result<NDArray> {
    scatter_recorded("scatter_nd", data, indices, shape, false)
}

/// Resolved slicing of one axis: first index, output length, step.
#[derive(Clone, Copy, Debug)]
pub(super) struct AxisSlice {
    begin: usize,
    pub(super) len: usize,
    step: i64,
}

/// MXNet's `GetIndexRange` + `SetSliceOpOutputDimSize` for one axis.
fn slice_axis_range(len: usize, begin: Option<i64>, end: Option<i64>, step: i64) -> AxisSlice {
    let n = len as i64;
    if n == 0 {
        return AxisSlice { begin: 0, len: 0, step };
    }
    let mut b = begin.unwrap_or(if step < 0 { n - 1 } else { 0 });
    let mut e = end.unwrap_or(if step < 0 { -1 } else { n });
    if b < 0 {
        b += n;
    }
    if e < 0 && end.is_some() {
        e += n;
    }
    if b < 0 && step > 0 {
        b = 0;
    }
    if b > n - 1 && step < 0 {
        b = n - 1;
    }
    if b < 0 || b > n - 1 {
        b = -1;
    }
    e = e.clamp(-1, n);
    let size = if e != b && b >= 0 {
        if step > 0 {
            if e > b {
                (e - b - 1) / step + 1
            } else {
                0
            }
        } else if e < b {
            (b - e - 1) / (-step) + 1
        } else {
            0
        }
    } else {
        0
    };
    AxisSlice { begin: b.max(0) as usize, len: size as usize, step }
}

/// The affine walk of a resolved per-axis slice of an array of shape `x`: output dims,
/// base offset, strides.
fn spec_affine(x: &Shape, spec: &[AxisSlice]) -> (Vec<usize>, isize, Vec<isize>) {
    let st = signed_strides(x);
    let od: Vec<usize> = spec.iter().map(|s| s.len).collect();
    let mut base = 0isize;
    let mut strides = Vec::with_capacity(spec.len());
    for (d, s) in spec.iter().enumerate() {
        if s.len > 0 {
            base += s.begin as isize * st[d];
        }
        strides.push(st[d] * s.step as isize);
    }
    (od, base, strides)
}

/// Gathers a resolved per-axis slice (shared by `slice` and `slice_like`).
fn slice_resolved(def: &'static OpDef, x: &NDArray, spec: &[AxisSlice]) -> Result<NDArray> {
    let (od, base, strides) = spec_affine(x.shape(), spec);
    gather_affine_rec(def, x, od, base, strides)
}

/// MXNet `slice`: `begin`/`end`/`step` tuples over the leading axes, where an
/// entry equal to [`NONE_INDEX`] (`i64::MIN`, how frontends pass Python's
/// `None`) takes the default (`0`/`len` for a positive step, `len-1`/"before
/// the start" for a negative one; step 1). `step` may be empty (all ones).
/// Negative begin/end count from the end; out-of-range values are clipped
/// as in MXNet, so an empty range gives a zero-size axis. Always a copy.
pub fn slice(x: &NDArray, begin: &[i64], end: &[i64], step: &[i64]) -> Result<NDArray> {
    let spec = slice_spec(x.shape(), begin, end, step)?;
    slice_resolved(&DEFS[11], x, &spec)
}

/// `slice`'s per-axis ranges on an array of shape `x`.
pub(super) fn slice_spec(x: &Shape, begin: &[i64], end: &[i64], step: &[i64]) -> Result<Vec<AxisSlice>> {
    let name = "slice";
    if x.ndim() == 0 {
        return Err(Error::shape(name, &[x], "cannot slice a 0-d array"));
    }
    if begin.len() != end.len() {
        return Err(Error::value(
            name,
            format!("begin {} and end {} must have the same length", fmt_idx(begin), fmt_idx(end)),
        ));
    }
    if begin.len() > x.ndim() {
        return Err(Error::value(name, format!("slicing {} axes exceeds the data's rank (shape {x})", begin.len())));
    }
    if !step.is_empty() && step.len() != begin.len() {
        return Err(Error::value(
            name,
            format!("step {} and begin {} must have the same length", fmt_idx(step), fmt_idx(begin)),
        ));
    }
    let opt = |v: i64| if v == NONE_INDEX { None } else { Some(v) };
    let mut spec = Vec::with_capacity(x.ndim());
    for (d, &len) in x.dims().iter().enumerate() {
        if d < begin.len() {
            let s = step.get(d).copied().and_then(opt).unwrap_or(1);
            if s == 0 {
                return Err(Error::value(name, format!("step[{d}] cannot be 0")));
            }
            spec.push(slice_axis_range(len, opt(begin[d]), opt(end[d]), s));
        } else {
            spec.push(AxisSlice { begin: 0, len, step: 1 });
        }
    }
    Ok(spec)
}

fn fmt_idx(v: &[i64]) -> String {
    let parts: Vec<String> = v.iter().map(|&i| if i == NONE_INDEX { "None".into() } else { i.to_string() }).collect();
    format!("({})", parts.join(", "))
}

/// MXNet `slice_like`: slices `x` to `like`'s extent on `axes` (all axes when
/// empty, which then requires equal ranks), starting at 0. No gradient flows
/// to `like`.
pub fn slice_like(x: &NDArray, like: &NDArray, axes: &[i64]) -> Result<NDArray> {
    let spec = slice_like_spec(x.shape(), like.shape(), axes)?;
    slice_resolved(&DEFS[12], x, &spec)
}

/// `slice_like`'s per-axis ranges.
pub(super) fn slice_like_spec(x: &Shape, like: &Shape, axes: &[i64]) -> Result<Vec<AxisSlice>> {
    let name = "slice_like";
    let nd = x.ndim();
    let ax: Vec<usize> = if axes.is_empty() {
        if like.ndim() != nd {
            return Err(Error::shape(name, &[x, like], "slicing on all axes (axes=()) needs inputs of the same rank"));
        }
        (0..nd).collect()
    } else {
        axes.iter().map(|&a| norm_axis(name, a, nd)).collect::<Result<_>>()?
    };
    let mut spec: Vec<AxisSlice> = x.dims().iter().map(|&len| AxisSlice { begin: 0, len, step: 1 }).collect();
    for a in ax {
        if a >= like.ndim() {
            return Err(Error::shape(name, &[x, like], format!("axis {a} is out of range for shape_like")));
        }
        if like.dims()[a] > x.dims()[a] {
            return Err(Error::shape(
                name,
                &[x, like],
                format!("axis {a}: size {} of shape_like exceeds the data's size {}", like.dims()[a], x.dims()[a]),
            ));
        }
        spec[a].len = like.dims()[a];
    }
    Ok(spec)
}

/// MXNet `diag`: of a 1-d array, the square matrix with it on diagonal `k`;
/// of an N-d array, diagonal `k` of the (`axis1`, `axis2`) planes, appended as
/// the last axis.
pub fn diag(x: &NDArray, k: i64, axis1: i64, axis2: i64) -> Result<NDArray> {
    let name = "diag";
    match x.ndim() {
        0 => Err(Error::shape(name, &[x.shape()], "input must have at least one dimension")),
        1 => {
            let n = x.size();
            let m = n + k.unsigned_abs() as usize;
            let base = if k >= 0 { k as isize } else { -k as isize * m as isize };
            let out = NDArray::empty(Shape::new(&[m, m]), x.dtype(), x.ctx())?;
            if out.size() > 0 {
                let ints = affine_ints(base, &[n], &[m as isize + 1]);
                push_call(OpCall::new(&DEFS[13], &[x], &[&out]).with_ints(&ints))?;
            }
            if needs_record(&[x]) {
                record(name, &[x], &[&out], Box::new(move |g| Ok(vec![Some(diag(&g[0], k, 0, 1)?)])));
            }
            Ok(out)
        }
        nd => {
            let (a1, a2) = (norm_axis(name, axis1, nd)?, norm_axis(name, axis2, nd)?);
            if a1 == a2 {
                return Err(Error::value(name, format!("axis1 and axis2 cannot refer to the same axis {a1}")));
            }
            let (d1, d2) = (x.dims()[a1] as i64, x.dims()[a2] as i64);
            let len = if k >= 0 { d1.min(d2 - k) } else { (d1 + k).min(d2) }.max(0) as usize;
            let st = signed_strides(x.shape());
            let base = if len == 0 {
                0
            } else if k >= 0 {
                k as isize * st[a2]
            } else {
                -k as isize * st[a1]
            };
            let mut iter = Vec::with_capacity(nd - 1);
            let mut strides = Vec::with_capacity(nd - 1);
            for d in (0..nd).filter(|&d| d != a1 && d != a2) {
                iter.push(x.dims()[d]);
                strides.push(st[d]);
            }
            iter.push(len);
            strides.push(st[a1] + st[a2]);
            let out = gather_affine(&DEFS[13], x, Shape::new(&iter), iter.clone(), base, strides.clone())?;
            if needs_record(&[x]) {
                let xs = x.shape().clone();
                record(
                    name,
                    &[x],
                    &[&out],
                    Box::new(move |g| {
                        Ok(vec![Some(scatter_affine_rec(&g[0], xs.clone(), iter.clone(), base, strides.clone())?)])
                    }),
                );
            }
            Ok(out)
        }
    }
}
