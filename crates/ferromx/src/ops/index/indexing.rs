//! NumPy-style indexing in the Rust API: `x.index(&[...])` and
//! `x.index_assign(&[...], value)`.
//!
//! Basic entries (integers, slices with any step, `NewAxis`, `Ellipsis`) and
//! one advanced entry (an integer array, or a boolean mask over one or more
//! axes) per expression. Integer-array indices are checked on the engine (an
//! out-of-range index fails the result at its next read, like `take` with
//! `mode='raise'`); a boolean mask's `True` positions decide the result's
//! shape, so a mask is read (the call waits for it), as in NumPy.

use crate::dtype::{DType, Elem};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, IndexMode};
use crate::shape::Shape;
use crate::storage::push_kernel;
use crate::with_dtype;
use ferromx_engine::{ErrorKind, OpFailure};

/// One entry of an index expression.
#[derive(Clone, Debug)]
pub enum Idx {
    /// A single position (negative counts from the end); removes the axis.
    Int(i64),
    /// `start:stop:step` with Python's defaults and clipping.
    Slice {
        /// First position (None: start of the axis in the step's direction).
        start: Option<i64>,
        /// End, exclusive (None: through the end in the step's direction).
        stop: Option<i64>,
        /// Step, non-zero (None: 1).
        step: Option<i64>,
    },
    /// Inserts a size-1 axis.
    NewAxis,
    /// Stands for as many full slices as needed.
    Ellipsis,
    /// Integer positions along one axis (any integer-valued dtype).
    Array(NDArray),
    /// Boolean (or 0/1) mask over the next `mask.ndim()` axes.
    Mask(NDArray),
}

impl Idx {
    /// `..` (a full slice).
    pub fn full() -> Idx {
        Idx::Slice { start: None, stop: None, step: None }
    }
    /// `start..stop` with step 1.
    pub fn range(start: i64, stop: i64) -> Idx {
        Idx::Slice { start: Some(start), stop: Some(stop), step: None }
    }
}

/// Python's `slice.indices`: (start, stop, step) normalised for an axis of length `n`.
fn slice_indices(start: Option<i64>, stop: Option<i64>, step: Option<i64>, n: i64) -> Result<(i64, i64, i64)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(Error::value("index", "slice step cannot be zero"));
    }
    let fix = |v: i64, lo: i64, hi: i64| {
        let v = if v < 0 { v + n } else { v };
        v.clamp(lo, hi)
    };
    let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let s = start.map_or(if step > 0 { 0 } else { n - 1 }, |v| fix(v, lo, hi));
    let e = stop.map_or(if step > 0 { n } else { -1 }, |v| fix(v, lo, hi));
    Ok((s, e, step))
}

/// Per-axis plan of a basic index: positions taken along each input axis.
enum AxisPlan {
    Keep,
    Int(usize),
    Range(i64, i64, i64),
}

struct Plan {
    axes: Vec<AxisPlan>,
    /// Output dims in order, with `None` for a NewAxis (size 1) and `Some(axis)` for kept axes.
    out: Vec<Option<usize>>,
    /// The single advanced entry: (first input axis, number of axes, entry).
    advanced: Option<(usize, usize, Idx)>,
    /// Position in `out` where the advanced result dims go.
    adv_out_pos: usize,
    /// NumPy's rule: when integers and the array entry (all "advanced" together)
    /// are not adjacent in the key, the advanced dims go first in the result.
    adv_front: bool,
}

fn plan(x: &NDArray, idx: &[Idx]) -> Result<Plan> {
    let nd = x.ndim();
    let consumed: usize = idx
        .iter()
        .map(|i| match i {
            Idx::Int(_) | Idx::Slice { .. } | Idx::Array(_) => 1,
            Idx::Mask(m) => m.ndim().max(1),
            Idx::NewAxis | Idx::Ellipsis => 0,
        })
        .sum();
    if consumed > nd {
        return Err(Error::index("index", format!("too many indices for array of shape {}", x.shape())));
    }
    if idx.iter().filter(|i| matches!(i, Idx::Ellipsis)).count() > 1 {
        return Err(Error::index("index", "an index can only have a single ellipsis"));
    }
    let mut axes: Vec<AxisPlan> = Vec::with_capacity(nd);
    let mut out = Vec::new();
    let mut advanced = None;
    let mut adv_out_pos = 0;
    let mut ax = 0usize;
    let mut expanded: Vec<Idx> = Vec::new();
    for i in idx {
        if matches!(i, Idx::Ellipsis) {
            expanded.extend(std::iter::repeat_n(Idx::full(), nd - consumed));
        } else {
            expanded.push(i.clone());
        }
    }
    if !idx.iter().any(|i| matches!(i, Idx::Ellipsis)) {
        expanded.extend(std::iter::repeat_n(Idx::full(), nd - consumed));
    }
    let adv_pos: Vec<usize> = expanded
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, Idx::Int(_) | Idx::Array(_) | Idx::Mask(_)))
        .map(|(k, _)| k)
        .collect();
    let has_array = expanded.iter().any(|i| matches!(i, Idx::Array(_) | Idx::Mask(_)));
    let adv_front = has_array && adv_pos.last().is_some_and(|&l| l + 1 - adv_pos[0] != adv_pos.len());
    for i in expanded {
        match i {
            Idx::NewAxis => out.push(None),
            Idx::Int(v) => {
                let n = x.dims()[ax] as i64;
                let j = if v < 0 { v + n } else { v };
                if j < 0 || j >= n {
                    return Err(Error::index(
                        "index",
                        format!("index {v} is out of bounds for axis {ax} with size {n} (shape {})", x.shape()),
                    ));
                }
                axes.push(AxisPlan::Int(j as usize));
                ax += 1;
            }
            Idx::Slice { start, stop, step } => {
                let (s, e, st) = slice_indices(start, stop, step, x.dims()[ax] as i64)?;
                if (s, e, st) == (0, x.dims()[ax] as i64, 1) {
                    axes.push(AxisPlan::Keep);
                } else {
                    axes.push(AxisPlan::Range(s, e, st));
                }
                out.push(Some(ax));
                ax += 1;
            }
            Idx::Array(_) | Idx::Mask(_) => {
                if advanced.is_some() {
                    return Err(Error::index(
                        "index",
                        "only one integer-array or mask entry per index expression (use gather_nd for more)",
                    ));
                }
                let k = if let Idx::Mask(m) = &i { m.ndim().max(1) } else { 1 };
                if let Idx::Mask(m) = &i {
                    if m.dims() != &x.dims()[ax..ax + k] {
                        return Err(Error::index(
                            "index",
                            format!(
                                "boolean index of shape {} does not match the indexed dims of {}",
                                m.shape(),
                                x.shape()
                            ),
                        ));
                    }
                }
                advanced = Some((ax, k, i));
                adv_out_pos = out.len();
                for _ in 0..k {
                    axes.push(AxisPlan::Keep);
                }
                ax += k;
            }
            Idx::Ellipsis => unreachable!("expanded above"),
        }
    }
    Ok(Plan { axes, out, advanced, adv_out_pos, adv_front })
}

/// Applies the basic part: slices with positive steps in one strided copy (or a
/// view), negative steps by gathering, integers kept as size-1 axes.
fn apply_basic(x: &NDArray, p: &Plan) -> Result<NDArray> {
    let mut spec = Vec::new();
    let mut neg = Vec::new();
    for (ax, a) in p.axes.iter().enumerate() {
        match *a {
            AxisPlan::Keep => {}
            AxisPlan::Int(j) => spec.push((ax, j, j + 1, 1)),
            AxisPlan::Range(s, e, st) if st > 0 => spec.push((ax, s as usize, e.max(s) as usize, st)),
            AxisPlan::Range(s, e, st) => neg.push((ax, s, e, st)),
        }
    }
    let mut r = if spec.is_empty() { x.clone() } else { ops::slice_steps(x, &spec)? };
    for (ax, s, e, st) in neg {
        let pos: Vec<i64> = (0..).map(|k| s + k * st).take_while(|&v| v > e).collect();
        let ids = NDArray::from_vec(pos.clone(), [pos.len()], x.ctx())?;
        r = ops::take(&r, &ids, ax as i64, IndexMode::Clip)?;
    }
    Ok(r)
}

/// The final shape after the basic part: integer axes dropped, new axes inserted,
/// the advanced result (`adv_dims`) placed where its entry stood.
fn final_dims(p: &Plan, basic: &NDArray, adv_dims: &[usize]) -> Vec<usize> {
    let mut d = Vec::new();
    for (k, o) in p.out.iter().enumerate() {
        if k == p.adv_out_pos && p.advanced.is_some() {
            d.extend_from_slice(adv_dims);
        }
        match o {
            None => d.push(1),
            Some(ax) => d.push(basic.dims()[*ax]),
        }
    }
    if p.advanced.is_some() && p.adv_out_pos == p.out.len() {
        d.extend_from_slice(adv_dims);
    }
    d
}

/// Reads a mask and returns the flat positions of its true entries.
fn mask_positions(m: &NDArray) -> Result<Vec<i64>> {
    let v: Vec<f64> = m.to_vec()?;
    Ok(v.iter().enumerate().filter(|(_, b)| **b != 0.0).map(|(i, _)| i as i64).collect())
}

/// Merges axes `[ax, ax+k)` of `x` into one (a view).
fn merge_axes(x: &NDArray, ax: usize, k: usize) -> Result<NDArray> {
    let mut d = x.dims()[..ax].to_vec();
    d.push(x.dims()[ax..ax + k].iter().product());
    d.extend_from_slice(&x.dims()[ax + k..]);
    ops::reshape_to(x, Shape::new(&d))
}

impl NDArray {
    /// NumPy-style `x[idx]` (see the module docs for what is supported).
    pub fn index(&self, idx: &[Idx]) -> Result<NDArray> {
        let p = plan(self, idx)?;
        let basic = apply_basic(self, &p)?;
        let (gathered, adv_dims) = match &p.advanced {
            None => (basic.clone(), vec![]),
            Some((ax, _, Idx::Array(ids))) => {
                let g = ops::take(&basic, ids, *ax as i64, IndexMode::Raise)?;
                (g, ids.dims().to_vec())
            }
            Some((ax, k, Idx::Mask(m))) => {
                let pos = mask_positions(m)?;
                let merged = merge_axes(&basic, *ax, *k)?;
                let ids = NDArray::from_vec(pos.clone(), [pos.len()], self.ctx())?;
                (ops::take(&merged, &ids, *ax as i64, IndexMode::Clip)?, vec![pos.len()])
            }
            Some(_) => unreachable!("only arrays and masks are advanced"),
        };
        let dims = final_dims(&p, &basic, &adv_dims);
        let r = ops::reshape_to(&gathered, Shape::new(&dims))?;
        let r = if !p.adv_front || p.adv_out_pos == 0 {
            r
        } else {
            // Move the advanced block (at `adv_out_pos`, `adv_dims.len()` long) to the front.
            let (q, m) = (p.adv_out_pos as i64, adv_dims.len() as i64);
            let perm: Vec<i64> = (q..q + m).chain(0..q).chain(q + m..dims.len() as i64).collect();
            ops::transpose(&r, Some(&perm))?
        };
        if matches!(p.advanced, Some((_, _, Idx::Array(_)))) && p.out.iter().all(Option::is_some) {
            // MXNet computes `x[key]` with an integer array as one `gather_nd` of `x` at an
            // index array it builds from the key (a `null` input of the graph). With new
            // axes MXNet adds a Reshape that one annotation cannot show: left unannotated.
            use crate::autograd::{annotate_args, SymArg};
            annotate_args("gather_nd", &crate::opdef::Attrs::default(), &[SymArg::Array(self), SymArg::Hidden], &[&r]);
        }
        Ok(r)
    }

    /// NumPy-style `x[idx] = value` (value broadcast to the selected region), in place.
    pub fn index_assign(&self, idx: &[Idx], value: &NDArray) -> Result<()> {
        let p = plan(self, idx)?;
        match &p.advanced {
            None => {
                let neg = p.axes.iter().any(|a| matches!(a, AxisPlan::Range(_, _, st) if *st < 0));
                let mut spec = Vec::new();
                let mut region: Vec<usize> = self.dims().to_vec();
                let mut value = value.clone();
                let sel = self.index(idx)?; // shape of the selection, for lining the value up
                if neg {
                    // Write the reversed range forwards with the value flipped on those axes.
                    let mut flip_axes = Vec::new();
                    let vb = ops::broadcast_to(&value, sel.shape().clone())?;
                    let mut out_ax = 0;
                    for a in &p.axes {
                        match *a {
                            AxisPlan::Int(_) => {}
                            AxisPlan::Range(_, _, st) if st < 0 => {
                                flip_axes.push(out_ax as i64);
                                out_ax += 1;
                            }
                            _ => out_ax += 1,
                        }
                    }
                    value = ops::flip(&vb, &flip_axes)?;
                }
                for (ax, a) in p.axes.iter().enumerate() {
                    match *a {
                        AxisPlan::Keep => {}
                        AxisPlan::Int(j) => {
                            spec.push((ax, j, j + 1, 1));
                            region[ax] = 1;
                        }
                        AxisPlan::Range(s, e, st) if st > 0 => {
                            spec.push((ax, s as usize, e.max(s) as usize, st));
                            region[ax] = (s..e.max(s)).step_by(st as usize).count();
                        }
                        AxisPlan::Range(s, e, st) => {
                            let n = (0..).map(|k| s + k * st).take_while(|&v| v > e).count() as i64;
                            let lo = s + (n - 1) * st;
                            spec.push((ax, lo.max(0) as usize, (s + 1) as usize, -st));
                            region[ax] = n as usize;
                        }
                    }
                }
                if value.shape() == sel.shape() && sel.ndim() != region.len() {
                    let d: Vec<usize> = p
                        .axes
                        .iter()
                        .enumerate()
                        .map(|(ax, a)| if matches!(a, AxisPlan::Int(_)) { 1 } else { region[ax] })
                        .collect();
                    value = ops::reshape_to(&value, Shape::new(&d))?;
                }
                ops::slice_assign(self, &spec, &value)
            }
            Some((ax, k, entry)) => {
                if p.axes.iter().any(|a| !matches!(a, AxisPlan::Keep)) || p.out.iter().any(|o| o.is_none()) {
                    return Err(Error::index(
                        "index_assign",
                        "an integer-array or mask assignment can only be combined with full slices",
                    ));
                }
                let (target, ids) = match entry {
                    Idx::Array(ids) => (self.clone(), ids.clone()),
                    Idx::Mask(m) => {
                        let pos = mask_positions(m)?;
                        let n = pos.len();
                        (merge_axes(self, *ax, *k)?.detach(), NDArray::from_vec(pos, [n], self.ctx())?)
                    }
                    _ => unreachable!("only arrays and masks are advanced"),
                };
                let target = target.detach();
                let sel_shape = {
                    let mut d = target.dims()[..*ax].to_vec();
                    d.extend_from_slice(ids.dims());
                    d.extend_from_slice(&target.dims()[*ax + 1..]);
                    Shape::new(&d)
                };
                let v = if value.dtype() != self.dtype() { ops::astype(value, self.dtype())? } else { value.clone() };
                let v = ops::broadcast_to(&v, sel_shape)?;
                index_put(&target, *ax, &ids, &v)
            }
        }
    }
}

/// `dst[..., ids[j], ...] = v[..., j, ...]` along `axis`, in place on the engine.
fn index_put(dst: &NDArray, axis: usize, ids: &NDArray, v: &NDArray) -> Result<()> {
    let n = dst.dims()[axis];
    let outer: usize = dst.dims()[..axis].iter().product();
    let inner: usize = dst.dims()[axis + 1..].iter().product();
    let m = ids.size();
    let dt = dst.dtype();
    let idt = ids.dtype();
    if idt.is_float() && idt != DType::F32 && idt != DType::F64 {
        return Err(Error::dtype("index_assign", format!("indices must be integers, got {idt}")));
    }
    if dst.size() == 0 || m == 0 {
        return Ok(());
    }
    push_kernel("_index_put", vec![v.view(), ids.view()], vec![dst.view()], move |k| {
        let pos: Vec<usize> = with_dtype!(idt, I, {
            k.input::<I>(1)
                .iter()
                .map(|p| {
                    let i = p.to_f64() as i64;
                    let j = if i < 0 { i + n as i64 } else { i };
                    if j < 0 || j >= n as i64 {
                        Err(OpFailure::new(
                            ErrorKind::Index,
                            format!("index {i} is out of bounds for axis {axis} with size {n}"),
                        ))
                    } else {
                        Ok(j as usize)
                    }
                })
                .collect::<std::result::Result<Vec<usize>, OpFailure>>()?
        });
        with_dtype!(dt, T, {
            let (src, o) = (k.input::<T>(0), k.output::<T>(0));
            for r in 0..outer {
                for (j, &pj) in pos.iter().enumerate() {
                    let s = (r * m + j) * inner;
                    let d = (r * n + pj) * inner;
                    o[d..d + inner].copy_from_slice(&src[s..s + inner]);
                }
            }
        });
        Ok(())
    });
    Ok(())
}
