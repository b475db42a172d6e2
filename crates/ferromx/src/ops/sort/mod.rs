//! Ordering operators: `sort`, `argsort`, `topk` (MXNet 1.9.1 semantics).
//!
//! * `axis = None` works on the flattened array (outputs are 1-d, except
//!   `topk`'s mask, which has the input's shape).
//! * Sorting is stable: equal keys keep their original order, in ascending
//!   and in descending order alike (MXNet's CPU kernel uses an unstable sort;
//!   stability makes results deterministic).
//! * NaN is ordered as in NumPy, above every number: ascending sorts put NaNs
//!   last, descending sorts (and `topk`'s default largest-first) put them first.
//! * Indices are float32 by default, as in MXNet's `nd` (`dtype` selects
//!   another type; it must represent every index exactly).
//!
//! Gradients: the values of `sort` and `topk` scatter the output gradient back
//! to the positions the values came from; indices, masks and `argsort` get a
//! zero gradient, as in MXNet.

use crate::autograd::{needs_record, record};
use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops;
use crate::shape::{norm_axis, Shape};
use crate::storage::push_kernel;
use crate::with_dtype;
use rayon::prelude::*;
use std::cmp::Ordering;

/// What `topk` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopKRet {
    /// The k values.
    Value,
    /// Their indices (default).
    Indices,
    /// `[values, indices]`.
    Both,
    /// An array of the input's shape and dtype, 1 at the selected positions, 0 elsewhere.
    Mask,
}

impl TopKRet {
    /// Parses `value|indices|both|mask`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "value" => Ok(TopKRet::Value),
            "indices" => Ok(TopKRet::Indices),
            "both" => Ok(TopKRet::Both),
            "mask" => Ok(TopKRet::Mask),
            _ => Err(Error::value("topk", format!("ret_typ must be value, indices, both or mask, got '{s}'"))),
        }
    }
}

/// NumPy's order: NaN above everything, NaNs equal to each other.
#[inline]
fn nan_last_cmp<T: Elem>(a: T, b: T) -> Ordering {
    match a.partial_cmp(&b) {
        Some(o) => o,
        None => {
            let a_nan = a.partial_cmp(&a).is_none();
            let b_nan = b.partial_cmp(&b).is_none();
            a_nan.cmp(&b_nan)
        }
    }
}

/// The first `k` positions (along a strided row) in sorted order, into `out`.
#[allow(clippy::too_many_arguments)]
fn row_topk<T: Elem>(
    xs: &[T],
    base: usize,
    n: usize,
    inner: usize,
    k: usize,
    asc: bool,
    buf: &mut Vec<usize>,
    out: &mut [usize],
) {
    buf.clear();
    buf.extend(0..n);
    let key = |j: usize| xs[base + j * inner];
    // Ties broken by position: a total order, so the unstable sorts below
    // give exactly the stable result.
    let cmp = |a: &usize, b: &usize| {
        let o = nan_last_cmp(key(*a), key(*b));
        let o = if asc { o } else { o.reverse() };
        o.then(a.cmp(b))
    };
    if k == 0 {
        return;
    }
    if k < n {
        buf.select_nth_unstable_by(k - 1, cmp);
        buf[..k].sort_unstable_by(cmp);
    } else {
        buf.sort_unstable_by(cmp);
    }
    out.copy_from_slice(&buf[..k]);
}

/// Largest index a dtype represents exactly (with every smaller one).
fn max_exact_index(dt: DType) -> Option<u64> {
    Some(match dt {
        DType::F16 => 1 << 11,
        DType::BF16 => 1 << 8,
        DType::F32 => 1 << 24,
        DType::F64 => 1 << 53,
        DType::U8 => u8::MAX as u64,
        DType::I8 => i8::MAX as u64,
        DType::I32 => i32::MAX as u64,
        DType::I64 => i64::MAX as u64,
        DType::Bool => return None,
    })
}

struct Plan {
    /// The input, flattened when `axis` is None.
    src: NDArray,
    outer: usize,
    n: usize,
    inner: usize,
    /// Shape of a k-wide output (src's shape with the axis set to k).
    kshape: Shape,
}

fn plan(name: &str, x: &NDArray, axis: Option<i64>, k: usize) -> Result<Plan> {
    let (src, ax) = match axis {
        None => (x.view_as(Shape::new(&[x.size()]), 0), 0usize),
        Some(a) => {
            if x.ndim() == 0 {
                return Err(Error::Axis { op: name.into(), axis: a, ndim: 0 });
            }
            (x.detach(), norm_axis(name, a, x.ndim())?)
        }
    };
    let d = src.dims().to_vec();
    let mut kd = d.clone();
    kd[ax] = k;
    Ok(Plan {
        outer: d[..ax].iter().product(),
        n: d[ax],
        inner: d[ax + 1..].iter().product(),
        kshape: Shape::new(&kd),
        src,
    })
}

/// What one ordering kernel computes.
struct Outputs {
    values: Option<NDArray>,
    indices: Option<NDArray>,
    mask: Option<NDArray>,
    /// Internal i64 positions (kshape), kept for the gradient.
    perm: Option<NDArray>,
}

#[allow(clippy::too_many_arguments)]
fn run(
    name: &'static str,
    x: &NDArray,
    p: &Plan,
    k: usize,
    asc: bool,
    values: bool,
    indices: Option<DType>,
    mask: bool,
    perm: bool,
) -> Result<Outputs> {
    let ctx = x.ctx();
    let dt = x.dtype();
    let o = Outputs {
        values: values.then(|| NDArray::empty(p.kshape.clone(), dt, ctx)).transpose()?,
        indices: indices.map(|it| NDArray::empty(p.kshape.clone(), it, ctx)).transpose()?,
        mask: mask.then(|| NDArray::empty(x.shape().clone(), dt, ctx)).transpose()?,
        perm: perm.then(|| NDArray::empty(p.kshape.clone(), DType::I64, ctx)).transpose()?,
    };
    let all = [&o.values, &o.indices, &o.mask, &o.perm];
    let mut views = Vec::new();
    let mut slot = [usize::MAX; 4];
    for (i, a) in all.iter().enumerate() {
        if let Some(a) = a {
            slot[i] = views.len();
            views.push(a.view());
        }
    }
    let any_out = all.iter().any(|a| a.as_ref().is_some_and(|a| a.size() > 0));
    if !any_out {
        return Ok(o);
    }
    let (outer, n, inner) = (p.outer, p.n, p.inner);
    let idt = indices.unwrap_or(DType::I64);
    push_kernel(name, vec![p.src.view()], views, move |kk| {
        let rows = outer * inner;
        let mut pos = vec![0usize; rows * k];
        with_dtype!(dt, T, {
            let xs = kk.input::<T>(0);
            let row = |r: usize, buf: &mut Vec<usize>, out: &mut [usize]| {
                let (ro, ri) = (r / inner, r % inner);
                row_topk(xs, ro * n * inner + ri, n, inner, k, asc, buf, out);
            };
            if k > 0 {
                if rows > 1 && rows * n >= 1 << 15 {
                    pos.par_chunks_mut(k).enumerate().for_each_init(Vec::new, |buf, (r, out)| row(r, buf, out));
                } else {
                    let mut buf = Vec::with_capacity(n);
                    for (r, out) in pos.chunks_mut(k).enumerate() {
                        row(r, &mut buf, out);
                    }
                }
            }
            // (row r, rank j) -> output offset in the k-wide layout, and source offset.
            let kat = |r: usize, j: usize| ((r / inner) * k + j) * inner + r % inner;
            let sat = |r: usize, j: usize| ((r / inner) * n + pos[r * k + j]) * inner + r % inner;
            if slot[0] != usize::MAX {
                let v = kk.output::<T>(slot[0]);
                for r in 0..rows {
                    for j in 0..k {
                        v[kat(r, j)] = xs[sat(r, j)];
                    }
                }
            }
            if slot[2] != usize::MAX {
                let m = kk.output::<T>(slot[2]);
                m.fill(T::from_f64(0.0));
                for r in 0..rows {
                    for j in 0..k {
                        m[sat(r, j)] = T::from_f64(1.0);
                    }
                }
            }
        });
        let kat = |r: usize, j: usize| ((r / inner) * k + j) * inner + r % inner;
        if slot[1] != usize::MAX {
            with_dtype!(idt, I, {
                let v = kk.output::<I>(slot[1]);
                for r in 0..rows {
                    for j in 0..k {
                        v[kat(r, j)] = I::from_i64(pos[r * k + j] as i64);
                    }
                }
            });
        }
        if slot[3] != usize::MAX {
            let v = kk.output::<i64>(slot[3]);
            for r in 0..rows {
                for j in 0..k {
                    v[kat(r, j)] = pos[r * k + j] as i64;
                }
            }
        }
        Ok(())
    });
    Ok(o)
}

/// Gradient of a values output: `g` (kshape) scattered to the positions in
/// `perm` of a zeros array shaped like the flattened-or-not source.
fn scatter_back(
    g: &NDArray,
    perm: &NDArray,
    xshape: &Shape,
    outer: usize,
    n: usize,
    inner: usize,
    k: usize,
) -> Result<NDArray> {
    let out = NDArray::empty(xshape.clone(), g.dtype(), g.ctx())?;
    let dt = g.dtype();
    if out.size() > 0 {
        push_kernel("_backward_topk", vec![g.view(), perm.view()], vec![out.view()], move |kk| {
            let pm = kk.input::<i64>(1);
            with_dtype!(dt, T, {
                let (gs, o) = (kk.input::<T>(0), kk.output::<T>(0));
                o.fill(T::default());
                for a in 0..outer {
                    for j in 0..k {
                        for i in 0..inner {
                            let kat = (a * k + j) * inner + i;
                            o[(a * n + pm[kat] as usize) * inner + i] = gs[kat];
                        }
                    }
                }
            });
            Ok(())
        });
    }
    Ok(out)
}

fn check_index_dtype(name: &str, dtype: DType, n: usize) -> Result<()> {
    match max_exact_index(dtype) {
        None => Err(Error::dtype(name, "indices cannot be bool")),
        Some(m) if n > 0 && (n - 1) as u64 > m => {
            Err(Error::dtype(name, format!("{dtype} cannot represent every index of an axis of size {n} exactly")))
        }
        _ => Ok(()),
    }
}

/// Records a zero gradient for outputs that are not differentiable (indices, masks).
fn record_zero(name: &'static str, x: &NDArray, outs: &[&NDArray]) {
    if needs_record(&[x]) {
        let xc = x.clone();
        record(name, &[x], outs, Box::new(move |_| Ok(vec![Some(ops::zeros_like(&xc)?)])));
    }
}

/// Records the scatter gradient of a values output (`outs[0]`).
fn record_values(name: &'static str, x: &NDArray, outs: &[&NDArray], perm: NDArray, p: &Plan, k: usize) {
    let (outer, n, inner) = (p.outer, p.n, p.inner);
    let (sshape, xshape) = (p.src.shape().clone(), x.shape().clone());
    record(
        name,
        &[x],
        outs,
        Box::new(move |g| {
            let r = scatter_back(&g[0], &perm, &sshape, outer, n, inner, k)?;
            Ok(vec![Some(r.view_as(xshape.clone(), 0))])
        }),
    );
}

/// Sorts along `axis` (`None`: the flattened array), ascending unless `is_ascend` is false.
pub fn sort(x: &NDArray, axis: Option<i64>, is_ascend: bool) -> Result<NDArray> {
    let name = "sort";
    let p = plan(name, x, axis, 0)?;
    let p = plan(name, x, axis, p.n)?;
    let rec = needs_record(&[x]);
    let o = run(name, x, &p, p.n, is_ascend, true, None, false, rec)?;
    let v = o.values.expect("values requested");
    if let Some(perm) = o.perm {
        record_values(name, x, &[&v], perm, &p, p.n);
    }
    Ok(v)
}

/// Indices that sort `x` along `axis` (`None`: flattened), in `dtype` (MXNet default float32).
pub fn argsort(x: &NDArray, axis: Option<i64>, is_ascend: bool, dtype: DType) -> Result<NDArray> {
    let name = "argsort";
    let p = plan(name, x, axis, 0)?;
    check_index_dtype(name, dtype, p.n)?;
    let p = plan(name, x, axis, p.n)?;
    let o = run(name, x, &p, p.n, is_ascend, false, Some(dtype), false, false)?;
    let i = o.indices.expect("indices requested");
    record_zero(name, x, &[&i]);
    Ok(i)
}

/// MXNet `topk`: the `k` largest (or, with `is_ascend`, smallest) entries along
/// `axis` (`None`: flattened). `k <= 0` selects the whole axis; `k` larger
/// than the axis is an error. Returns one array, or `[values, indices]` for
/// [`TopKRet::Both`].
pub fn topk(
    x: &NDArray,
    axis: Option<i64>,
    k: i64,
    ret: TopKRet,
    is_ascend: bool,
    dtype: DType,
) -> Result<Vec<NDArray>> {
    let name = "topk";
    let n = plan(name, x, axis, 0)?.n;
    let k = if k <= 0 { n } else { k as usize };
    if k > n || (k == 0 && x.size() > 0) {
        return Err(Error::value(
            name,
            format!("k must be in [1, {n}] for an axis of size {n}, got k = {k} (shape {})", x.shape()),
        ));
    }
    if matches!(ret, TopKRet::Indices | TopKRet::Both) {
        check_index_dtype(name, dtype, n)?;
    }
    let p = plan(name, x, axis, k)?;
    let rec = needs_record(&[x]);
    Ok(match ret {
        TopKRet::Value => {
            let o = run(name, x, &p, k, is_ascend, true, None, false, rec)?;
            let v = o.values.expect("values requested");
            if let Some(perm) = o.perm {
                record_values(name, x, &[&v], perm, &p, k);
            }
            vec![v]
        }
        TopKRet::Both => {
            let o = run(name, x, &p, k, is_ascend, true, Some(dtype), false, rec)?;
            let (v, i) = (o.values.expect("values requested"), o.indices.expect("indices requested"));
            if let Some(perm) = o.perm {
                record_values(name, x, &[&v, &i], perm, &p, k);
            }
            vec![v, i]
        }
        TopKRet::Indices => {
            let i =
                run(name, x, &p, k, is_ascend, false, Some(dtype), false, false)?.indices.expect("indices requested");
            record_zero(name, x, &[&i]);
            vec![i]
        }
        TopKRet::Mask => {
            let m = run(name, x, &p, k, is_ascend, false, None, true, false)?.mask.expect("mask requested");
            record_zero(name, x, &[&m]);
            vec![m]
        }
    })
}

use crate::opdef::{param, Aliases, Grad, Invocation, OpDef, ParamKind as K};

/// The sorting operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "sort",
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[
            param("axis", K::Int, Some("-1"), "Axis to sort along; None: the flattened array."),
            param("is_ascend", K::Bool, Some("True"), "Ascending (True) or descending order."),
        ],
        doc: "Sorted copy along `axis`.",
        forward: |i| crate::opdef::one(sort(i.x(0)?, i.i64_or_none("axis")?, i.bool("is_ascend")?)),
        ..OpDef::BASE
    },
    OpDef {
        name: "argsort",
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[
            param("axis", K::Int, Some("-1"), "Axis to sort along; None: the flattened array."),
            param("is_ascend", K::Bool, Some("True"), "Ascending (True) or descending order."),
            param("dtype", K::DType, Some("'float32'"), "Element type of the indices."),
        ],
        doc: "Indices that sort `data` along `axis`.",
        forward: |i| {
            let dt = i.dtype("dtype", DType::F32)?;
            crate::opdef::one(argsort(i.x(0)?, i.i64_or_none("axis")?, i.bool("is_ascend")?, dt))
        },
        grad: Grad::None("indices are piecewise constant"),
        ..OpDef::BASE
    },
    OpDef {
        name: "topk",
        aliases: Aliases { nd: &[], np: &[], npx: &["topk"], fluent: true },
        inputs: &["data"],
        outputs: &["output", "indices"],
        params: &[
            param("axis", K::Int, Some("-1"), "Axis to search along; None: the flattened array."),
            param("k", K::Int, Some("1"), "Number of elements to return."),
            param("ret_typ", K::Str, Some("'indices'"), "'value', 'indices', 'both' or 'mask'."),
            param("is_ascend", K::Bool, Some("False"), "Return the k smallest (True) or largest."),
            param("dtype", K::DType, Some("'float32'"), "Element type of the indices."),
        ],
        doc: "The top k elements or their indices along `axis`.",
        forward: |i: &Invocation<'_>| {
            topk(
                i.x(0)?,
                i.i64_or_none("axis")?,
                i.i64("k")?,
                TopKRet::parse(&i.str("ret_typ")?)?,
                i.bool("is_ascend")?,
                i.dtype("dtype", DType::F32)?,
            )
        },
        ..OpDef::BASE
    },
];
