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
//!
//! Definitions, inference, frontends and gradients here; the kernel in `cpu.rs`.

use crate::autograd::{needs_record, record};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::opdef::{push_call, Attrs, KernelSlot, Meta, OpCall};
use crate::ops;
use crate::shape::{norm_axis, Shape};
use crate::storage::push_kernel;
use crate::with_dtype;

mod cpu;
#[cfg(test)]
mod tests;

/// The definition of one of this family's operators (`sort`, `argsort`, `topk`).
fn def_of(name: &str) -> &'static OpDef {
    match name {
        "sort" => &DEFS[0],
        "argsort" => &DEFS[1],
        _ => &DEFS[2],
    }
}

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
    def: &'static OpDef,
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
    let mut slot = [usize::MAX; 4];
    let mut next = 0;
    for (i, a) in all.iter().enumerate() {
        if a.is_some() {
            slot[i] = next;
            next += 1;
        }
    }
    let any_out = all.iter().any(|a| a.as_ref().is_some_and(|a| a.size() > 0));
    if !any_out {
        return Ok(o);
    }
    let outs: Vec<&NDArray> = all.iter().filter_map(|a| a.as_ref()).collect();
    let slots = slot.map(|v| if v == usize::MAX { -1 } else { v as i64 });
    let ints =
        [p.outer as i64, p.n as i64, p.inner as i64, k as i64, asc as i64, slots[0], slots[1], slots[2], slots[3]];
    push_call(OpCall::new(def, &[&p.src], &outs).with_ints(&ints))?;
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
            Ok(vec![Some(crate::ops::reshape_to(&r, xshape.clone())?)])
        }),
    );
}

/// Sorts along `axis` (`None`: the flattened array), ascending unless `is_ascend` is false.
pub fn sort(x: &NDArray, axis: Option<i64>, is_ascend: bool) -> Result<NDArray> {
    let name = "sort";
    let p = plan(name, x, axis, 0)?;
    let p = plan(name, x, axis, p.n)?;
    let rec = needs_record(&[x]);
    let o = run(def_of(name), x, &p, p.n, is_ascend, true, None, false, rec)?;
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
    let o = run(def_of(name), x, &p, p.n, is_ascend, false, Some(dtype), false, false)?;
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
            let o = run(def_of(name), x, &p, k, is_ascend, true, None, false, rec)?;
            let v = o.values.expect("values requested");
            if let Some(perm) = o.perm {
                record_values(name, x, &[&v], perm, &p, k);
            }
            vec![v]
        }
        TopKRet::Both => {
            let o = run(def_of(name), x, &p, k, is_ascend, true, Some(dtype), false, rec)?;
            let (v, i) = (o.values.expect("values requested"), o.indices.expect("indices requested"));
            if let Some(perm) = o.perm {
                record_values(name, x, &[&v, &i], perm, &p, k);
            }
            vec![v, i]
        }
        TopKRet::Indices => {
            let i = run(def_of(name), x, &p, k, is_ascend, false, Some(dtype), false, false)?
                .indices
                .expect("indices requested");
            record_zero(name, x, &[&i]);
            vec![i]
        }
        TopKRet::Mask => {
            let m = run(def_of(name), x, &p, k, is_ascend, false, None, true, false)?.mask.expect("mask requested");
            record_zero(name, x, &[&m]);
            vec![m]
        }
    })
}

use crate::opdef::{param, Aliases, Grad, Invocation, OpDef, ParamDef, ParamKind as K};

/// The input's shape along the sorted axis, flattened when `axis` is None; and that axis.
fn sorted_shape(name: &str, x: &Shape, axis: Option<i64>) -> Result<(Shape, usize)> {
    match axis {
        None => Ok((Shape::new(&[x.size()]), 0)),
        Some(a) if x.ndim() == 0 => Err(Error::Axis { op: name.into(), axis: a, ndim: 0 }),
        Some(a) => Ok((x.clone(), norm_axis(name, a, x.ndim())?)),
    }
}

fn infer_sort(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let (s, _) = sorted_shape(def.name, &ins[0].shape, i.i64_or_none("axis")?)?;
    let dtype = if def.name == "argsort" { i.dtype("dtype", DType::F32)? } else { ins[0].dtype };
    Ok(vec![Meta { shape: s, dtype, ctx: ins[0].ctx }])
}

/// topk's output dtypes from the data's: values and masks in the data's dtype, indices in
/// the `dtype` attribute's.
fn topk_dtypes(i: &Invocation<'_>, data: DType) -> Result<Vec<DType>> {
    let idx = i.dtype("dtype", DType::F32)?;
    Ok(match TopKRet::parse(&i.str("ret_typ")?)? {
        TopKRet::Value | TopKRet::Mask => vec![data],
        TopKRet::Indices => vec![idx],
        TopKRet::Both => vec![data, idx],
    })
}

fn infer_topk(def: &'static OpDef, a: &Attrs, ins: &[Meta]) -> Result<Vec<Meta>> {
    let i = Invocation::params(def, a);
    let x = &ins[0];
    let (s, ax) = sorted_shape(def.name, &x.shape, i.i64_or_none("axis")?)?;
    let n = s.dims()[ax];
    let k = i.i64("k")?;
    let k = if k <= 0 { n } else { k as usize };
    if k > n {
        return Err(Error::value(def.name, format!("k must be in [1, {n}] for an axis of size {n}, got k = {k}")));
    }
    let mut kd = s.dims().to_vec();
    kd[ax] = k;
    let (v, idx) = (
        Meta { shape: Shape::new(&kd), ..x.clone() },
        Meta { dtype: i.dtype("dtype", DType::F32)?, shape: Shape::new(&kd), ctx: x.ctx },
    );
    Ok(match TopKRet::parse(&i.str("ret_typ")?)? {
        TopKRet::Value => vec![v],
        TopKRet::Indices => vec![idx],
        TopKRet::Both => vec![v, idx],
        TopKRet::Mask => vec![x.clone()],
    })
}

const SORT_AXIS: ParamDef = param("axis", K::Int, Some("-1"), "Axis to sort along; None: the flattened array.");
const IS_ASCEND: ParamDef = param("is_ascend", K::Bool, Some("True"), "Ascending (True) or descending order.");

/// The sorting operators.
pub static DEFS: &[OpDef] = &[
    OpDef {
        name: "sort",
        cpu: KernelSlot::Call(cpu::order_kernel),
        infer: Some(infer_sort),
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[SORT_AXIS, IS_ASCEND],
        doc: "Sorted copy along `axis`.",
        forward: |i| crate::opdef::one(sort(i.x(0)?, i.i64_or_none("axis")?, i.bool("is_ascend")?)),
        graph: crate::opdef::GraphForm { same_shape: true, ..crate::opdef::GraphForm::PLAIN },
        ..OpDef::BASE
    },
    OpDef {
        name: "argsort",
        cpu: KernelSlot::Call(cpu::order_kernel),
        infer: Some(infer_sort),
        aliases: Aliases { nd: &[], np: &[], npx: &[], fluent: true },
        inputs: &["data"],
        params: &[SORT_AXIS, IS_ASCEND, param("dtype", K::DType, Some("'float32'"), "Element type of the indices.")],
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
        cpu: KernelSlot::Call(cpu::order_kernel),
        infer: Some(infer_topk),
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
        graph: crate::opdef::GraphForm {
            out_dtypes: Some(topk_dtypes),
            visible: Some(|i| Ok(if i.str("ret_typ")? == "both" { 2 } else { 1 })),
            // the values beside the indices, hidden unless both are returned
            total: crate::opdef::OutputCount::Rule(|i| {
                Ok(if matches!(i.str("ret_typ")?.as_str(), "both" | "value") { 2 } else { 1 })
            }),
            ..crate::opdef::GraphForm::PLAIN
        },
        ..OpDef::BASE
    },
];
