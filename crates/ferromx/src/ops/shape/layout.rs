//! The shape operators' frontends (checks, allocation, push, record): reshape
//! codes, transpose, broadcast, concat/stack, slicing, clip. Kernels in `cpu.rs`.

use super::cpu::{self, strided_region};
use super::DEFS;
use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, OpCall, OpDef};
use crate::ops::{self, check_ctx, BinOp};
use crate::shape::{norm_axis, Shape};
use crate::storage::push_kernel;
use crate::with_dtype;

/// Reshapes to an explicit shape (a view; recorded for autograd).
pub fn reshape_to(x: &NDArray, shape: Shape) -> Result<NDArray> {
    if shape.size() != x.size() {
        return Err(Error::shape("reshape", &[x.shape(), &shape], "sizes differ"));
    }
    let out = x.view_as(shape, 0);
    if needs_record(&[x]) {
        let s = x.shape().clone();
        record("reshape", &[x], &[&out], Box::new(move |g| Ok(vec![Some(reshape_to(&g[0], s.clone())?)])));
        let dims: Vec<i64> = out.dims().iter().map(|&d| d as i64).collect();
        // A zero-size axis is a literal 0 only in `_np_reshape` (`Reshape` reads 0 as "copy").
        let (op, key) = if dims.contains(&0) { ("_np_reshape", "newshape") } else { ("reshape", "shape") };
        let attrs = crate::opdef::Attrs(vec![(key.into(), crate::opdef::Attr::Ints(dims))]);
        crate::autograd::annotate(op, &attrs, &[Some(x)], &[&out]);
    }
    Ok(out)
}

/// Infers a target shape from MXNet's reshape codes (0 copy, -1 infer,
/// -2 copy rest, -3 merge two, -4 split one into the next two), optionally
/// applied right to left (`reverse`).
pub fn infer_reshape(src: &[usize], spec: &[i64], reverse: bool) -> Result<Vec<usize>> {
    let err = |m: String| Error::value("reshape", format!("{m} (input shape {:?}, target {:?})", src, spec));
    let (src_v, spec_v): (Vec<usize>, Vec<i64>) = if reverse {
        (src.iter().rev().cloned().collect(), spec.iter().rev().cloned().collect())
    } else {
        (src.to_vec(), spec.to_vec())
    };
    let mut out: Vec<i64> = Vec::new();
    let mut i = 0usize; // index into src
    let mut j = 0usize;
    let mut infer_at: Option<usize> = None;
    while j < spec_v.len() {
        let c = spec_v[j];
        match c {
            0 => {
                let d = *src_v.get(i).ok_or_else(|| err("0 refers past the input's dims".into()))?;
                out.push(d as i64);
                i += 1;
            }
            -1 => {
                if infer_at.is_some() {
                    return Err(err("only one -1 allowed".into()));
                }
                infer_at = Some(out.len());
                out.push(1);
                i += 1;
            }
            -2 => {
                while i < src_v.len() {
                    out.push(src_v[i] as i64);
                    i += 1;
                }
            }
            -3 => {
                if i + 1 >= src_v.len() {
                    return Err(err("-3 needs two input dims".into()));
                }
                out.push((src_v[i] * src_v[i + 1]) as i64);
                i += 2;
            }
            -4 => {
                if j + 2 >= spec_v.len() || i >= src_v.len() {
                    return Err(err("-4 needs two following values".into()));
                }
                let d = src_v[i] as i64;
                let (mut a, mut b) = (spec_v[j + 1], spec_v[j + 2]);
                if a == -1 && b > 0 {
                    a = d / b;
                } else if b == -1 && a > 0 {
                    b = d / a;
                }
                if a * b != d {
                    return Err(err(format!("-4 split {a}x{b} does not match {d}")));
                }
                out.push(a);
                out.push(b);
                i += 1;
                j += 2;
            }
            c if c > 0 => {
                out.push(c);
                i += 1;
            }
            _ => return Err(err(format!("invalid reshape code {c}"))),
        }
        j += 1;
    }
    let total: usize = src.iter().product();
    if let Some(k) = infer_at {
        let known: i64 = out.iter().enumerate().filter(|(p, _)| *p != k).map(|(_, v)| *v).product();
        if known == 0 || total as i64 % known != 0 {
            return Err(err("cannot infer -1".into()));
        }
        out[k] = total as i64 / known;
    }
    let mut res: Vec<usize> = out.into_iter().map(|v| v as usize).collect();
    if reverse {
        res.reverse();
    }
    if res.iter().product::<usize>() != total {
        return Err(err("sizes differ".into()));
    }
    Ok(res)
}

/// MXNet `reshape` with special codes.
pub fn reshape(x: &NDArray, spec: &[i64], reverse: bool) -> Result<NDArray> {
    let s = infer_reshape(x.dims(), spec, reverse)?;
    reshape_to(x, Shape::new(&s))
}

/// Flattens to (d0, prod(rest)).
pub fn flatten(x: &NDArray) -> Result<NDArray> {
    reshape_to(x, Shape::new(&flatten_dims(x.dims())))
}

/// The shape `flatten` gives: `(d0, d1*d2*...)`, `(1, 1)` for a 0-d array.
pub fn flatten_dims(d: &[usize]) -> Vec<usize> {
    match d.split_first() {
        None => vec![1, 1],
        Some((d0, rest)) => vec![*d0, rest.iter().product()],
    }
}

/// Inserts a size-1 axis.
pub fn expand_dims(x: &NDArray, axis: i64) -> Result<NDArray> {
    reshape_to(x, Shape::new(&expand_dims_dims(x.dims(), axis)?))
}

/// The shape `expand_dims` gives.
pub fn expand_dims_dims(d: &[usize], axis: i64) -> Result<Vec<usize>> {
    let ax = norm_axis("expand_dims", axis, d.len() + 1)?;
    let mut d = d.to_vec();
    d.insert(ax, 1);
    Ok(d)
}

/// Removes size-1 axes (all, or the given ones).
pub fn squeeze(x: &NDArray, axes: Option<&[i64]>) -> Result<NDArray> {
    reshape_to(x, Shape::new(&squeeze_dims(x.dims(), axes)?))
}

/// The shape `squeeze` gives.
pub fn squeeze_dims(d: &[usize], axes: Option<&[i64]>) -> Result<Vec<usize>> {
    Ok(match axes {
        None => d.iter().cloned().filter(|&v| v != 1).collect(),
        Some(a) => {
            let ax = ops::resolve_axes("squeeze", d.len(), Some(a), false)?;
            for &i in &ax {
                if d[i] != 1 {
                    return Err(Error::value("squeeze", format!("cannot select an axis to squeeze out which has size not equal to one (axis {i} of shape {})", Shape::new(d))));
                }
            }
            d.iter().enumerate().filter(|(i, _)| !ax.contains(i)).map(|(_, v)| *v).collect()
        }
    })
}

/// Broadcasts to `shape` (a copy).
pub fn broadcast_to(x: &NDArray, shape: Shape) -> Result<NDArray> {
    broadcast_to_as(&DEFS[5], x, shape)
}

/// Broadcasts to `shape` as a call of `def` (one of the broadcast operators).
pub(crate) fn broadcast_to_as(def: &'static OpDef, x: &NDArray, shape: Shape) -> Result<NDArray> {
    let b = Shape::broadcast(def.name, x.shape(), &shape)?;
    if b != shape {
        return Err(Error::shape(def.name, &[x.shape(), &shape], "cannot broadcast"));
    }
    let out = NDArray::empty(shape, x.dtype(), x.ctx())?;
    if out.size() > 0 {
        push_call(OpCall::new(def, &[x], &[&out]))?;
    }
    if needs_record(&[x]) {
        let s = x.shape().clone();
        record(def.name, &[x], &[&out], Box::new(move |g| Ok(vec![Some(ops::sum_to(&g[0], &s)?)])));
    }
    Ok(out)
}

/// MXNet `broadcast_to`: a 0 in the target keeps the input's dim there.
pub fn broadcast_to_mx(x: &NDArray, shape: Shape) -> Result<NDArray> {
    broadcast_to(x, Shape::new(&broadcast_mx_dims(x.dims(), shape.dims())))
}

/// MXNet's `broadcast_to` target: its 0 entries replaced by the input's dims.
pub fn broadcast_mx_dims(x: &[usize], target: &[usize]) -> Vec<usize> {
    let mut t = target.to_vec();
    let off = t.len().saturating_sub(x.len());
    for (i, v) in t.iter_mut().enumerate() {
        if *v == 0 && i >= off {
            *v = x[i - off];
        }
    }
    t
}

/// Permutes axes (default: reverse them).
pub fn transpose(x: &NDArray, axes: Option<&[i64]>) -> Result<NDArray> {
    let perm = transpose_perm(x.ndim(), axes)?;
    transpose_as(&DEFS[8], x, perm)
}

/// The permutation `transpose` applies: `axes` checked, or the axes reversed.
pub(super) fn transpose_perm(nd: usize, axes: Option<&[i64]>) -> Result<Vec<usize>> {
    let perm: Vec<usize> = match axes {
        None => (0..nd).rev().collect(),
        Some([]) => (0..nd).rev().collect(),
        Some(a) => {
            if a.len() != nd {
                return Err(Error::value("transpose", format!("axes {:?} do not match array of dimension {nd}", a)));
            }
            let p: Vec<usize> = a.iter().map(|&v| norm_axis("transpose", v, nd)).collect::<Result<_>>()?;
            let mut seen = vec![false; nd];
            for &v in &p {
                if seen[v] {
                    return Err(Error::value("transpose", "repeated axis in transpose"));
                }
                seen[v] = true;
            }
            p
        }
    };
    Ok(perm)
}

/// `x` with its axes permuted by `perm`, as a call of `def` (`transpose` or `swapaxes`).
pub(crate) fn transpose_as(def: &'static OpDef, x: &NDArray, perm: Vec<usize>) -> Result<NDArray> {
    let nd = x.ndim();
    let od: Vec<usize> = perm.iter().map(|&p| x.dims()[p]).collect();
    let out = NDArray::empty(Shape::new(&od), x.dtype(), x.ctx())?;
    if out.size() > 0 {
        let ints: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        push_call(OpCall::new(def, &[x], &[&out]).with_ints(&ints))?;
    }
    if needs_record(&[x]) {
        let mut inv = vec![0i64; nd];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i as i64;
        }
        record("transpose", &[x], &[&out], Box::new(move |g| Ok(vec![Some(transpose(&g[0], Some(&inv))?)])));
    }
    Ok(out)
}

/// Swaps two axes.
pub fn swapaxes(x: &NDArray, a: i64, b: i64) -> Result<NDArray> {
    let nd = x.ndim();
    let (a, b) = (norm_axis("swapaxes", a, nd)?, norm_axis("swapaxes", b, nd)?);
    let mut p: Vec<usize> = (0..nd).collect();
    p.swap(a, b);
    transpose_as(&DEFS[9], x, p)
}

/// Joins arrays along an existing axis.
pub fn concat(xs: &[NDArray], axis: i64) -> Result<NDArray> {
    concat_as(&DEFS[10], xs, axis)
}

/// Joins arrays along an existing axis as a call of `def` (`concat` or `stack`).
fn concat_as(def: &'static OpDef, xs: &[NDArray], axis: i64) -> Result<NDArray> {
    let name = def.name;
    let first = xs.first().ok_or_else(|| Error::value(name, "need at least one array"))?;
    let nd = first.ndim();
    if nd == 0 {
        return Err(Error::value(name, "zero-dimensional arrays cannot be concatenated"));
    }
    let ax = norm_axis(name, axis, nd)?;
    let mut od = first.dims().to_vec();
    od[ax] = 0;
    for x in xs {
        check_ctx(name, first, x)?;
        if x.ndim() != nd || x.dims().iter().enumerate().any(|(i, &d)| i != ax && d != first.dims()[i]) {
            return Err(Error::shape(
                name,
                &[first.shape(), x.shape()],
                format!("all dims except axis {ax} must match"),
            ));
        }
        if x.dtype() != first.dtype() {
            return Err(Error::dtype(name, format!("dtypes differ: {} and {}", first.dtype(), x.dtype())));
        }
        od[ax] += x.dims()[ax];
    }
    let out = NDArray::empty(Shape::new(&od), first.dtype(), first.ctx())?;
    let refs: Vec<&NDArray> = xs.iter().collect();
    if out.size() > 0 {
        push_call(OpCall::new(def, &refs, &[&out]).with_ints(&[ax as i64]))?;
    }
    if needs_record(&refs) {
        let sizes: Vec<usize> = xs.iter().map(|x| x.dims()[ax]).collect();
        record(
            name,
            &refs,
            &[&out],
            Box::new(move |g| {
                let mut res = Vec::new();
                let mut b = 0;
                for &s in &sizes {
                    res.push(Some(slice_axis(&g[0], ax as i64, b as i64, Some((b + s) as i64))?));
                    b += s;
                }
                Ok(res)
            }),
        );
    }
    Ok(out)
}

/// Joins arrays along a new axis.
pub fn stack(xs: &[NDArray], axis: i64) -> Result<NDArray> {
    let first = xs.first().ok_or_else(|| Error::value("stack", "need at least one array"))?;
    let ax = norm_axis("stack", axis, first.ndim() + 1)?;
    for x in xs {
        if x.shape() != first.shape() {
            return Err(Error::shape(
                "stack",
                &[first.shape(), x.shape()],
                "all input arrays must have the same shape",
            ));
        }
        if x.dtype() != first.dtype() {
            return Err(Error::dtype("stack", format!("dtypes differ: {} and {}", first.dtype(), x.dtype())));
        }
    }
    let ex: Vec<NDArray> = xs.iter().map(|x| expand_dims(x, ax as i64)).collect::<Result<_>>()?;
    concat_as(&DEFS[11], &ex, ax as i64)
}

/// Elements `[begin, end)` along `axis` (a view when `axis` is 0, otherwise a copy).
pub fn slice_axis(x: &NDArray, axis: i64, begin: i64, end: Option<i64>) -> Result<NDArray> {
    let (ax, b, e) = slice_axis_range(x.dims(), axis, begin, end)?;
    slice_steps_as(&DEFS[13], x, &[(ax, b, e, 1)])
}

/// `slice_axis`'s axis and resolved `[begin, end)` on an array of dims `d`.
pub fn slice_axis_range(d: &[usize], axis: i64, begin: i64, end: Option<i64>) -> Result<(usize, usize, usize)> {
    let ax = norm_axis("slice_axis", axis, d.len())?;
    let n = d[ax] as i64;
    let fix = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let (b, e) = (fix(begin), fix(end.unwrap_or(n)));
    if b > e {
        let end_s = end.map_or("None".to_string(), |e| e.to_string());
        return Err(Error::index(
            "slice_axis",
            format!("begin {begin} > end {end_s} on axis {ax} of shape {}", Shape::new(d)),
        ));
    }
    Ok((ax, b as usize, e as usize))
}

/// General strided slicing: `(axis, begin, end, step)` per sliced axis (positive steps
/// with begin ≤ end, or negative steps with begin ≥ end, exclusive end as in Python).
pub fn slice_steps(x: &NDArray, spec: &[(usize, usize, usize, i64)]) -> Result<NDArray> {
    slice_steps_as(crate::ops::index::slice_def(), x, spec)
}

/// Strided slicing as a call of `def` (`slice` or `slice_axis`).
fn slice_steps_as(def: &'static OpDef, x: &NDArray, spec: &[(usize, usize, usize, i64)]) -> Result<NDArray> {
    let (oshape, base, signed) = strided_region(x.shape(), spec);
    // first-axis contiguous slice: a view
    if spec.len() == 1 && spec[0].0 == 0 && spec[0].3 == 1 && !needs_record(&[x]) {
        return Ok(x.view_as(oshape, base as usize));
    }
    let out = NDArray::empty(oshape.clone(), x.dtype(), x.ctx())?;
    if out.size() > 0 {
        let ints = crate::ops::index::affine_ints(base, oshape.dims(), &signed);
        push_call(OpCall::new(def, &[x], &[&out]).with_ints(&ints))?;
    }
    if needs_record(&[x]) {
        // The gradient is the recorded `_backward_slice` call (differentiable again).
        let (xshape, od) = (x.shape().clone(), oshape.dims().to_vec());
        record(
            def.name,
            &[x],
            &[&out],
            Box::new(move |g| {
                Ok(vec![Some(ops::index::scatter_affine_rec(&g[0], xshape.clone(), od.clone(), base, signed.clone())?)])
            }),
        );
        annotate_slice(x, spec, &out);
    }
    Ok(out)
}

/// Annotates a recorded slice as MXNet's `slice(begin, end, step)` over the leading axes
/// up to the last sliced one (for `autograd.get_symbol`); negative steps stay unannotated.
fn annotate_slice(x: &NDArray, spec: &[(usize, usize, usize, i64)], out: &NDArray) {
    let Some(last) = spec.iter().map(|s| s.0).max() else { return };
    if spec.iter().any(|s| s.3 < 0) {
        return;
    }
    let mut begin: Vec<i64> = vec![0; last + 1];
    let mut end: Vec<i64> = x.dims()[..=last].iter().map(|&d| d as i64).collect();
    let mut step: Vec<i64> = vec![1; last + 1];
    for &(ax, b, e, st) in spec {
        (begin[ax], end[ax], step[ax]) = (b as i64, e as i64, st);
    }
    use crate::opdef::{Attr, Attrs};
    let attrs = Attrs(vec![
        ("begin".into(), Attr::Ints(begin)),
        ("end".into(), Attr::Ints(end)),
        ("step".into(), Attr::Ints(step)),
    ]);
    crate::autograd::annotate("slice", &attrs, &[Some(x)], &[out]);
}

/// Writes `v` (broadcast) into the strided region of `dst` described by `spec`, in place.
pub fn slice_assign(dst: &NDArray, spec: &[(usize, usize, usize, i64)], v: &NDArray) -> Result<()> {
    let (rshape, base, signed) = strided_region(dst.shape(), spec);
    let vb = Shape::broadcast("_slice_assign", &rshape, v.shape())?;
    if vb != rshape {
        return Err(Error::shape(
            "_slice_assign",
            &[&rshape, v.shape()],
            "value cannot be broadcast to the selected region",
        ));
    }
    let v = if v.dtype() != dst.dtype() { ops::astype(v, dst.dtype())? } else { v.clone() };
    let v = if v.shares_storage(dst) { ops::copy(&v)? } else { v };
    if rshape.size() == 0 {
        return Ok(());
    }
    let vs = v.shape().broadcast_strides(&rshape);
    let dt = dst.dtype();
    // `x[:] = v`, `v.copyto(x)`, `x[a:b] = v` with `v` of the region's shape: the region is
    // one contiguous run, so the copy is a memcpy (the general path costs ~30x more)
    let first_axis = spec.is_empty() || (spec.len() == 1 && spec[0].0 == 0 && spec[0].3 == 1);
    let contiguous = (first_axis && v.shape() == &rshape).then_some(base.max(0) as usize);
    // An in-place update inside indexing, not a table operator: an engine closure.
    push_kernel("_slice_assign", vec![v.view()], vec![dst.view()], move |k| {
        with_dtype!(dt, T, {
            let (src, o) = (k.input::<T>(0), k.output::<T>(0));
            if let Some(start) = contiguous {
                o[start..start + src.len()].copy_from_slice(src);
                return Ok(());
            }
            let mut q = vec![0usize; rshape.size()];
            crate::shape::for_each_strided(&rshape, &vs, 0, q.len(), |n, si| q[n] = si);
            cpu::for_each_region(rshape.dims(), base, &signed, |n, p| o[p] = src[q[n]]);
        });
        Ok(())
    });
    Ok(())
}

/// Clips into `[lo, hi]`.
pub fn clip(x: &NDArray, lo: f64, hi: f64) -> Result<NDArray> {
    // Integer arrays: bounds outside the dtype's range mean "no bound" (they
    // must not be cast, which would wrap them: -1 -> 255 for uint8).
    let (lo, hi) = match x.dtype() {
        DType::U8 => (lo.max(0.0), hi.min(255.0)),
        DType::I8 => (lo.max(-128.0), hi.min(127.0)),
        DType::I32 => (lo.max(i32::MIN as f64), hi.min(i32::MAX as f64)),
        DType::I64 => (lo.max(-9.2e18), hi.min(9.2e18)),
        _ => (lo, hi),
    };
    let out = x.empty_like()?;
    if out.size() > 0 {
        push_call(OpCall::new(&DEFS[14], &[x], &[&out]).with_nums(&[lo, hi]))?;
    }
    if needs_record(&[x]) {
        let xc = x.clone();
        record(
            "clip",
            &[x],
            &[&out],
            Box::new(move |g| {
                let m = ops::mul(&ops::scalar(BinOp::Ge, &xc, lo)?, &ops::scalar(BinOp::Le, &xc, hi)?)?;
                // Under `create_graph` the mask is tied to `x` with derivative zero
                // (the comparisons do not record), so the second derivative is zeros.
                let m = if needs_record(&[&xc]) { ops::add(&m, &ops::const_like_rec(&xc, 0.0)?)? } else { m };
                Ok(vec![Some(ops::mul(&g[0], &m)?)])
            }),
        );
    }
    Ok(out)
}

/// MXNet `reshape_like`: `lhs` reshaped so that its dims `[lhs_begin, lhs_end)`
/// are replaced by `rhs`'s dims `[rhs_begin, rhs_end)` (`None`: the whole
/// range; negative values count from the end).
pub fn reshape_like(l: &NDArray, r: &NDArray, lhs: [Option<i64>; 2], rhs: [Option<i64>; 2]) -> Result<NDArray> {
    reshape_to(l, Shape::new(&reshape_like_dims(l.shape(), r.shape(), lhs, rhs)?))
}

/// The shape `reshape_like` gives.
pub fn reshape_like_dims(l: &Shape, r: &Shape, lhs: [Option<i64>; 2], rhs: [Option<i64>; 2]) -> Result<Vec<usize>> {
    let name = "reshape_like";
    let span = |nd: usize, [b, e]: [Option<i64>; 2], side: &str| -> Result<(usize, usize)> {
        let fix = |v: Option<i64>, d: usize, what: &str| -> Result<usize> {
            let Some(v) = v else { return Ok(d) };
            let u = if v < 0 { v + nd as i64 } else { v };
            if u < 0 || u > nd as i64 {
                return Err(Error::value(name, format!("{side}_{what} value {v} is out of range for rank {nd}")));
            }
            Ok(u as usize)
        };
        let (bb, ee) = (fix(b, 0, "begin")?, fix(e, nd, "end")?);
        if bb > ee {
            return Err(Error::value(name, format!("{side}_begin ({bb}) is after {side}_end ({ee})")));
        }
        Ok((bb, ee))
    };
    let (lb, le) = span(l.ndim(), lhs, "lhs")?;
    let (rb, re) = span(r.ndim(), rhs, "rhs")?;
    let mut d = l.dims()[..lb].to_vec();
    d.extend_from_slice(&r.dims()[rb..re]);
    d.extend_from_slice(&l.dims()[le..]);
    let target = Shape::new(&d);
    if target.size() != l.size() {
        return Err(Error::shape(name, &[l, r], format!("cannot reshape to {target}: sizes differ")));
    }
    Ok(d)
}

/// MXNet `broadcast_like`: `l` broadcast to `r`'s shape, or with `lhs_axes` /
/// `rhs_axes` only `l`'s listed axes to the sizes of `r`'s listed axes.
pub fn broadcast_like(l: &NDArray, r: &NDArray, lhs_axes: Option<&[i64]>, rhs_axes: Option<&[i64]>) -> Result<NDArray> {
    let d = broadcast_like_dims(l.shape(), r.shape(), lhs_axes, rhs_axes)?;
    broadcast_to_as(&DEFS[6], l, Shape::new(&d))
}

/// The shape `broadcast_like` gives (checked: `l` broadcasts to it).
pub fn broadcast_like_dims(
    l: &Shape,
    r: &Shape,
    lhs_axes: Option<&[i64]>,
    rhs_axes: Option<&[i64]>,
) -> Result<Vec<usize>> {
    let name = "broadcast_like";
    let (d, why) = match (lhs_axes, rhs_axes) {
        (None, None) => (r.dims().to_vec(), "operands could not be broadcast together".to_string()),
        // MXNet 1.9.1 refuses `lhs_axes=()`: "Empty axes tuple is not allowed"
        (Some([]), Some(_)) => return Err(Error::value(name, "empty axes tuple is not allowed (lhs_axes=())")),
        (Some(la), Some(ra)) if la.len() == ra.len() => {
            let mut d = l.dims().to_vec();
            for (&i, &j) in la.iter().zip(ra) {
                d[l.axis(name, i)?] = r.dims()[r.axis(name, j)?];
            }
            (d, format!("cannot broadcast lhs axes {la:?} to rhs axes {ra:?}"))
        }
        _ => return Err(Error::value(name, "lhs_axes and rhs_axes must both be given, with the same length")),
    };
    let t = Shape::new(&d);
    match Shape::broadcast(name, l, &t) {
        Ok(b) if b == t => Ok(d),
        _ => Err(Error::shape(name, &[l, r], why)),
    }
}

/// MXNet `broadcast_axis`: broadcasts the size-1 `axes` of `x` to `sizes`.
pub fn broadcast_axis(x: &NDArray, axes: &[i64], sizes: &[i64]) -> Result<NDArray> {
    let od = broadcast_axis_dims(x.shape(), axes, sizes)?;
    if od.contains(&0) {
        // An empty result needs no kernel.
        return NDArray::empty(Shape::new(&od), x.dtype(), x.ctx());
    }
    broadcast_to_as(&DEFS[7], x, Shape::new(&od))
}

/// The shape `broadcast_axis` gives.
pub fn broadcast_axis_dims(x: &Shape, axes: &[i64], sizes: &[i64]) -> Result<Vec<usize>> {
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
                &[x],
                format!("broadcasting axis {ax} must have size 1, got {}", x.dims()[ax]),
            ));
        }
        if s < 0 {
            return Err(Error::value(name, format!("size must be non-negative, got {s}")));
        }
        od[ax] = s as usize;
    }
    Ok(od)
}
