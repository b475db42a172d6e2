//! Index and layout operators: `tile`, `repeat`, `flip`/`reverse`, `moveaxis`,
//! `gather_nd`, `scatter_nd`, MXNet `slice` (with steps and `None` entries),
//! `slice_like`, `broadcast_axis` and `diag`.
//!
//! Most of them are "affine gathers": every output element reads the input at
//! `base + Σ idx[d] · stride[d]` for some (possibly negative or zero) strides
//! over an iteration shape. One kernel ([`gather_affine`]) and its adjoint
//! ([`scatter_affine`]) serve them all.

use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, check_ctx, par, ReduceOp};
use crate::shape::{norm_axis, Shape};
use crate::storage::{push_kernel, Kernel};
use crate::with_dtype;
use ferromx_engine::{ErrorKind, OpFailure};

/// Marks a `None` entry in the `begin`/`end`/`step` tuples of [`slice()`].
///
/// `Attr::Ints` cannot hold Python's `None`, so frontends pass `None` entries
/// of those tuples as `i64::MIN`.
pub const NONE_INDEX: i64 = i64::MIN;

/// Calls `f(i, base + Σ idx[d]·strides[d])` for the output positions
/// `start..start+len` (row-major over `dims`), `i` counting from 0.
fn walk_affine(
    dims: &[usize],
    strides: &[isize],
    base: isize,
    start: usize,
    len: usize,
    mut f: impl FnMut(usize, usize),
) {
    let n = dims.len();
    if len == 0 {
        return;
    }
    if n == 0 {
        f(0, base as usize);
        return;
    }
    let mut idx = vec![0usize; n];
    let mut rem = start;
    for d in (0..n).rev() {
        idx[d] = rem % dims[d];
        rem /= dims[d];
    }
    let mut pos: isize = base + idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum::<isize>();
    let (inner, is) = (dims[n - 1], strides[n - 1]);
    let mut o = 0;
    while o < len {
        let run = (inner - idx[n - 1]).min(len - o);
        let mut p = pos;
        for k in 0..run {
            f(o + k, p as usize);
            p += is;
        }
        o += run;
        pos += run as isize * is;
        idx[n - 1] += run;
        let mut d = n - 1;
        while d > 0 && idx[d] == dims[d] {
            pos -= dims[d] as isize * strides[d];
            idx[d] = 0;
            d -= 1;
            idx[d] += 1;
            pos += strides[d];
        }
    }
}

/// A new array of `oshape` whose elements, in row-major order over `iter_dims`
/// (same element count), are `x[base + Σ idx[d]·strides[d]]`.
///
/// The caller guarantees every address is in bounds (checked at the call by
/// each operator's shape inference); not recorded for autograd.
pub(crate) fn gather_affine(
    name: &'static str,
    x: &NDArray,
    oshape: Shape,
    iter_dims: Vec<usize>,
    base: isize,
    strides: Vec<isize>,
) -> Result<NDArray> {
    debug_assert_eq!(iter_dims.iter().product::<usize>(), oshape.size());
    let out = NDArray::empty(oshape, x.dtype(), x.ctx())?;
    let dt = x.dtype();
    if out.size() > 0 {
        push_kernel(name, vec![x.view()], vec![out.view()], move |k| {
            with_dtype!(dt, T, {
                let (src, o) = (k.input::<T>(0), k.output::<T>(0));
                par::chunked(o, 1 << 15, |start, c| {
                    walk_affine(&iter_dims, &strides, base, start, c.len(), |i, p| c[i] = src[p]);
                });
            });
            Ok(())
        });
    }
    Ok(out)
}

/// The adjoint of [`gather_affine`]: zeros of `shape` with `g`'s elements (in
/// row-major order over `iter_dims`) written at `base + Σ idx[d]·strides[d]`.
/// Addresses must be distinct (true for slices, flips and diagonals).
pub(crate) fn scatter_affine(
    name: &'static str,
    g: &NDArray,
    shape: Shape,
    iter_dims: Vec<usize>,
    base: isize,
    strides: Vec<isize>,
) -> Result<NDArray> {
    debug_assert_eq!(iter_dims.iter().product::<usize>(), g.size());
    let out = NDArray::empty(shape, g.dtype(), g.ctx())?;
    let dt = g.dtype();
    if out.size() > 0 {
        let n = g.size();
        push_kernel(name, vec![g.view()], vec![out.view()], move |k| {
            with_dtype!(dt, T, {
                let (src, o) = (k.input::<T>(0), k.output::<T>(0));
                o.fill(T::default());
                walk_affine(&iter_dims, &strides, base, 0, n, |i, p| o[p] = src[i]);
            });
            Ok(())
        });
    }
    Ok(out)
}

fn signed_strides(s: &Shape) -> Vec<isize> {
    s.strides().iter().map(|&v| v as isize).collect()
}

/// Tiles `x` `reps` times per axis (NumPy `tile`: a shorter `reps` is padded
/// with leading ones, a shorter shape with leading size-1 axes).
pub fn tile(x: &NDArray, reps: &[i64]) -> Result<NDArray> {
    let name = "tile";
    if let Some(r) = reps.iter().find(|&&r| r < 0) {
        return Err(Error::value(name, format!("reps must be non-negative, got {r} in {reps:?}")));
    }
    let nd = x.ndim().max(reps.len());
    let mut xd = vec![1usize; nd - x.ndim()];
    xd.extend_from_slice(x.dims());
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
    let out = gather_affine(name, x, Shape::new(&od), iter.clone(), 0, strides)?;
    if needs_record(&[x]) {
        let xs = x.shape().clone();
        record(
            name,
            &[x],
            &[&out],
            Box::new(move |g| {
                let g = ops::reshape_to(&g[0], Shape::new(&iter))?;
                let axes: Vec<i64> = (0..nd as i64).map(|d| 2 * d).collect();
                let s = ops::reduce(ReduceOp::Sum, &g, Some(&axes), false, false)?;
                Ok(vec![Some(ops::reshape_to(&s, xs.clone())?)])
            }),
        );
    }
    Ok(out)
}

/// Repeats each element `repeats` times along `axis` (`None`: of the flattened array).
pub fn repeat(x: &NDArray, repeats: i64, axis: Option<i64>) -> Result<NDArray> {
    let name = "repeat";
    if repeats < 0 {
        return Err(Error::value(name, format!("repeats must be non-negative, got {repeats}")));
    }
    let rep = repeats as usize;
    let (sd, ax): (Vec<usize>, usize) = match axis {
        None => (vec![x.size()], 0),
        Some(a) => (x.dims().to_vec(), norm_axis(name, a, x.ndim())?),
    };
    let outer: usize = sd[..ax].iter().product();
    let n = sd[ax];
    let inner: usize = sd[ax + 1..].iter().product();
    let mut od = sd.clone();
    od[ax] = n * rep;
    let iter = vec![outer, n, rep, inner];
    let strides = vec![(n * inner) as isize, inner as isize, 0, 1];
    let out = gather_affine(name, x, Shape::new(&od), iter.clone(), 0, strides)?;
    if needs_record(&[x]) {
        let xs = x.shape().clone();
        record(
            name,
            &[x],
            &[&out],
            Box::new(move |g| {
                let g = ops::reshape_to(&g[0], Shape::new(&iter))?;
                let s = ops::reduce(ReduceOp::Sum, &g, Some(&[2]), false, false)?;
                Ok(vec![Some(ops::reshape_to(&s, xs.clone())?)])
            }),
        );
    }
    Ok(out)
}

/// Reverses the order of elements along `axes` (MXNet `flip` / `reverse`).
pub fn flip(x: &NDArray, axes: &[i64]) -> Result<NDArray> {
    let name = "flip";
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
    let out = gather_affine(name, x, x.shape().clone(), x.dims().to_vec(), base, strides)?;
    if needs_record(&[x]) {
        let axes = axes.to_vec();
        record(name, &[x], &[&out], Box::new(move |g| Ok(vec![Some(flip(&g[0], &axes)?)])));
    }
    Ok(out)
}

/// MXNet's name for [`flip`].
pub fn reverse(x: &NDArray, axes: &[i64]) -> Result<NDArray> {
    flip(x, axes)
}

/// Moves axes `source` to positions `destination`, keeping the other axes in order (NumPy `moveaxis`).
pub fn moveaxis(x: &NDArray, source: &[i64], destination: &[i64]) -> Result<NDArray> {
    let name = "moveaxis";
    if source.len() != destination.len() {
        return Err(Error::value(
            name,
            format!("source {source:?} and destination {destination:?} must have the same number of elements"),
        ));
    }
    let nd = x.ndim();
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
    let perm: Vec<i64> = order.into_iter().map(|v| v as i64).collect();
    ops::transpose(x, Some(&perm))
}

/// Reads index input `i` as i64 (floats truncated toward zero, like MXNet's cast).
fn read_index_input(k: &Kernel, i: usize) -> Vec<i64> {
    let dt = k.in_dtype(i);
    with_dtype!(dt, T, k.input::<T>(i).iter().map(|v| v.to_i64()).collect())
}

/// Element offsets (in units of the trailing block) selected by each column of
/// an (M, Y) index matrix into the leading M dims `dims` (row-major strides `st`).
fn nd_offsets(ids: &[i64], dims: &[usize], st: &[usize], y: usize) -> std::result::Result<Vec<usize>, OpFailure> {
    let mut offs = vec![0usize; y];
    for (j, (&n, &s)) in dims.iter().zip(st).enumerate() {
        let n = n as i64;
        for (c, off) in offs.iter_mut().enumerate() {
            let i = ids[j * y + c];
            if i < -n || i >= n {
                return Err(OpFailure::new(
                    ErrorKind::Index,
                    format!("index {i} is out of bounds for axis {j} with size {n}"),
                ));
            }
            let i = if i < 0 { i + n } else { i };
            *off += i as usize * s;
        }
    }
    Ok(offs)
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
    let y: usize = indices.dims()[1..].iter().product();
    let inner: usize = data.dims()[m..].iter().product();
    let mut od = indices.dims()[1..].to_vec();
    od.extend_from_slice(&data.dims()[m..]);
    let out = NDArray::empty(Shape::new(&od), data.dtype(), data.ctx())?;
    let dt = data.dtype();
    if out.size() > 0 {
        let lead = data.dims()[..m].to_vec();
        let st: Vec<usize> = data.shape().strides()[..m].to_vec();
        push_kernel(name, vec![data.view(), indices.view()], vec![out.view()], move |k| {
            let offs = nd_offsets(&read_index_input(k, 1), &lead, &st, y)?;
            with_dtype!(dt, T, {
                let (src, o) = (k.input::<T>(0), k.output::<T>(0));
                for (c, &off) in offs.iter().enumerate() {
                    o[c * inner..(c + 1) * inner].copy_from_slice(&src[off..off + inner]);
                }
            });
            Ok(())
        });
    }
    if needs_record(&[data]) {
        let (ic, ds) = (indices.clone(), data.shape().clone());
        record(
            name,
            &[data, indices],
            &[&out],
            Box::new(move |g| {
                Ok(vec![Some(scatter_nd_impl("_backward_gather_nd", &g[0], &ic, ds.clone(), true)?), None])
            }),
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
    let y: usize = indices.dims()[1..].iter().product();
    let inner: usize = shape.dims()[m..].iter().product();
    let lead = shape.dims()[..m].to_vec();
    let st: Vec<usize> = shape.strides()[..m].to_vec();
    let out = NDArray::empty(shape, data.dtype(), data.ctx())?;
    let dt = data.dtype();
    if out.size() > 0 {
        push_kernel(name, vec![data.view(), indices.view()], vec![out.view()], move |k| {
            let offs = if y > 0 { nd_offsets(&read_index_input(k, 1), &lead, &st, y)? } else { vec![] };
            with_dtype!(dt, T, {
                let (src, o) = (k.input::<T>(0), k.output::<T>(0));
                o.fill(T::default());
                for (c, &off) in offs.iter().enumerate() {
                    let (dst, s) = (&mut o[off..off + inner], &src[c * inner..(c + 1) * inner]);
                    if accumulate {
                        for (d, v) in dst.iter_mut().zip(s) {
                            *d = T::from_f64(d.to_f64() + v.to_f64());
                        }
                    } else {
                        dst.copy_from_slice(s);
                    }
                }
            });
            Ok(())
        });
    }
    Ok(out)
}

/// MXNet `scatter_nd`: a zeros array of `shape` with
/// `out[indices[:, y]..., :] = data[y, ...]`. `data` must have shape
/// `indices.shape[1:] + shape[M:]`. Duplicate indices: the last write wins.
/// Indices are checked like [`gather_nd`]'s.
pub fn scatter_nd(data: &NDArray, indices: &NDArray, shape: Shape) -> Result<NDArray> {
    let out = scatter_nd_impl("scatter_nd", data, indices, shape, false)?;
    if needs_record(&[data]) {
        let ic = indices.clone();
        record(
            "scatter_nd",
            &[data, indices],
            &[&out],
            Box::new(move |g| Ok(vec![Some(gather_nd(&g[0], &ic)?), None])),
        );
    }
    Ok(out)
}

/// Resolved slicing of one axis: first index, output length, step.
#[derive(Clone, Copy, Debug)]
struct AxisSlice {
    begin: usize,
    len: usize,
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

/// Gathers a resolved per-axis slice (shared by `slice` and `slice_like`).
fn slice_resolved(name: &'static str, x: &NDArray, spec: &[AxisSlice]) -> Result<NDArray> {
    let st = signed_strides(x.shape());
    let od: Vec<usize> = spec.iter().map(|s| s.len).collect();
    let mut base = 0isize;
    let mut strides = Vec::with_capacity(spec.len());
    for (d, s) in spec.iter().enumerate() {
        if s.len > 0 {
            base += s.begin as isize * st[d];
        }
        strides.push(st[d] * s.step as isize);
    }
    let out = gather_affine(name, x, Shape::new(&od), od.clone(), base, strides.clone())?;
    if needs_record(&[x]) {
        let xs = x.shape().clone();
        record(
            name,
            &[x],
            &[&out],
            Box::new(move |g| {
                Ok(vec![Some(scatter_affine("_backward_slice", &g[0], xs.clone(), od.clone(), base, strides.clone())?)])
            }),
        );
    }
    Ok(out)
}

/// MXNet `slice`: `begin`/`end`/`step` tuples over the leading axes, where an
/// entry equal to [`NONE_INDEX`] (`i64::MIN`, how frontends pass Python's
/// `None`) takes the default (`0`/`len` for a positive step, `len-1`/"before
/// the start" for a negative one; step 1). `step` may be empty (all ones).
/// Negative begin/end count from the end; out-of-range values are clipped
/// as in MXNet, so an empty range gives a zero-size axis. Always a copy.
pub fn slice(x: &NDArray, begin: &[i64], end: &[i64], step: &[i64]) -> Result<NDArray> {
    let name = "slice";
    if x.ndim() == 0 {
        return Err(Error::shape(name, &[x.shape()], "cannot slice a 0-d array"));
    }
    if begin.len() != end.len() {
        return Err(Error::value(
            name,
            format!("begin {} and end {} must have the same length", fmt_idx(begin), fmt_idx(end)),
        ));
    }
    if begin.len() > x.ndim() {
        return Err(Error::value(
            name,
            format!("slicing {} axes exceeds the data's rank (shape {})", begin.len(), x.shape()),
        ));
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
    slice_resolved(name, x, &spec)
}

fn fmt_idx(v: &[i64]) -> String {
    let parts: Vec<String> = v.iter().map(|&i| if i == NONE_INDEX { "None".into() } else { i.to_string() }).collect();
    format!("({})", parts.join(", "))
}

/// MXNet `slice_like`: slices `x` to `like`'s extent on `axes` (all axes when
/// empty, which then requires equal ranks), starting at 0. No gradient flows
/// to `like`.
pub fn slice_like(x: &NDArray, like: &NDArray, axes: &[i64]) -> Result<NDArray> {
    let name = "slice_like";
    let nd = x.ndim();
    let ax: Vec<usize> = if axes.is_empty() {
        if like.ndim() != nd {
            return Err(Error::shape(
                name,
                &[x.shape(), like.shape()],
                "slicing on all axes (axes=()) needs inputs of the same rank",
            ));
        }
        (0..nd).collect()
    } else {
        axes.iter().map(|&a| norm_axis(name, a, nd)).collect::<Result<_>>()?
    };
    let mut spec: Vec<AxisSlice> = x.dims().iter().map(|&len| AxisSlice { begin: 0, len, step: 1 }).collect();
    for a in ax {
        if a >= like.ndim() {
            return Err(Error::shape(
                name,
                &[x.shape(), like.shape()],
                format!("axis {a} is out of range for shape_like"),
            ));
        }
        if like.dims()[a] > x.dims()[a] {
            return Err(Error::shape(
                name,
                &[x.shape(), like.shape()],
                format!("axis {a}: size {} of shape_like exceeds the data's size {}", like.dims()[a], x.dims()[a]),
            ));
        }
        spec[a].len = like.dims()[a];
    }
    slice_resolved(name, x, &spec)
}

/// MXNet `broadcast_axis`: broadcasts the size-1 `axes` of `x` to `sizes`.
pub fn broadcast_axis(x: &NDArray, axes: &[i64], sizes: &[i64]) -> Result<NDArray> {
    let name = "broadcast_axis";
    if axes.len() != sizes.len() {
        return Err(Error::value(name, format!("axis {axes:?} and size {sizes:?} must have the same length")));
    }
    let mut od = x.dims().to_vec();
    for (&a, &s) in axes.iter().zip(sizes) {
        let ax = norm_axis(name, a, x.ndim())?;
        if x.dims()[ax] != 1 {
            return Err(Error::shape(
                name,
                &[x.shape()],
                format!("broadcasting axis {ax} must have size 1, got {}", x.dims()[ax]),
            ));
        }
        if s < 0 {
            return Err(Error::value(name, format!("size must be non-negative, got {s}")));
        }
        od[ax] = s as usize;
    }
    if od.contains(&0) {
        // broadcast_to reads 0 as "keep"; an empty result needs no kernel.
        return NDArray::empty(Shape::new(&od), x.dtype(), x.ctx());
    }
    ops::broadcast_to(x, Shape::new(&od))
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
            let out = scatter_affine(name, x, Shape::new(&[m, m]), vec![n], base, vec![m as isize + 1])?;
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
            let out = gather_affine(name, x, Shape::new(&iter), iter.clone(), base, strides.clone())?;
            if needs_record(&[x]) {
                let xs = x.shape().clone();
                record(
                    name,
                    &[x],
                    &[&out],
                    Box::new(move |g| {
                        Ok(vec![Some(scatter_affine(
                            "_backward_diag",
                            &g[0],
                            xs.clone(),
                            iter.clone(),
                            base,
                            strides.clone(),
                        )?)])
                    }),
                );
            }
            Ok(out)
        }
    }
}
